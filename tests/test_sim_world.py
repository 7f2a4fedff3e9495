"""The simulated MPI library's semantics, one small world each (mpibench.sim.world, .handles, .process).

Each is a fact the real code relies on and DESIGN.md records for Open MPI 5
with ULFM: a receive from a dead peer fails with ERR_PROC_FAILED (75), a
revoke releases a blocked receive with ERR_REVOKED (77), Agree fails until
the failure is acknowledged and then returns the AND over the survivors,
Shrink leaves the survivors, Spawn + Merge adds a process, a Spawn with no
slot fails with ERR_SPAWN, and a hang is detected instead of waited for.
"""
from __future__ import annotations

import pytest

from simrun import run_driver


@pytest.fixture(scope="module")
def found() -> dict:
    return run_driver("sim_semantics.py")


def test_ring_of_three_passes_each_rank_its_left_neighbours_value(found):
    assert found["ring"] == {"0": 2.0, "1": 0.0, "2": 1.0}


def test_a_receive_from_a_killed_peer_fails_with_proc_failed(found):
    assert found["dead_peer"] == {"0": 75}
    assert found["dead_peer_codes"] == {"0": 0, "1": -9}  # the killed one ends as by SIGKILL


def test_revoke_releases_a_receive_that_nobody_will_answer(found):
    assert found["revoked"] == {"0": "revoker", "1": 77}


def test_agree_fails_until_acknowledged_then_ands_the_survivors_and_shrink_leaves_them(found):
    # rank 0 agrees 0, rank 1 agrees 1: the AND is 0; the shrunk world holds the two survivors
    assert found["agree_shrink"] == {"0": [75, 0, 2, [0, 1]], "1": [75, 0, 2, [0, 1]]}


def test_a_hang_is_detected_and_the_stuck_process_ended(found):
    assert found["stuck"] == {"1": "left"}
    assert found["stuck_deadlocked"] == [0]


def test_spawn_and_merge_add_a_process_and_no_slot_refuses_it(found):
    assert found["spawned_count"] == 1
    assert found["spawned"]["0"] == found["spawned"]["1"] and len(found["spawned"]["0"]) == 3
    assert found["spawn_refused"] == {"0": 50, "1": 50}


def test_a_received_message_lands_only_when_the_receiver_sees_it_done(found):
    # rank 0 posted its receive into buf[1:3] before sending buf[0:2]: the send carries its own
    # buf[1] (a real library writes the receive as rank 0 progresses, after the send was posted)
    assert found["overlap"]["1"] == [0.0, 1.0]
    assert found["overlap"]["0"] == [0.0, 10.0, 11.0]


def test_virtual_time_is_the_same_every_time(found):
    first, second = found["virtual_times"]
    assert first == second and first > 0


def test_spawned_survivors_are_not_told_when_the_launched_job_dies_at_once(found):
    # repro/ulfm_lost_failure.py on Open MPI 5: two originals die together, the spawned one waits
    assert found["lost_apart_False"]["deadlocked"] == [2]
    # the launched job's last process dying alone is reported (the main job's kills on real MPI)
    assert found["lost_apart_True"]["deadlocked"] == [] and found["lost_apart_True"]["codes"]["2"] == 7


def test_polling_a_receive_ends_as_waiting_for_it_does_when_a_revoke_and_its_message_cross(found):
    # sweep --engine sim hung here: the poll took the revoke's time as due while the receive
    # was done only later, and tested again at the same instant for ever
    polled, waited = found["revoke_landing_polled"], found["revoke_landing_waited"]
    assert not polled["over"] and not waited["over"], (polled, waited)
    assert polled["got"] == waited["got"], (polled, waited)


def test_a_process_that_never_blocks_is_ended_at_the_wall_bound(found):
    spin = found["spin"]
    assert spin["over"] and spin["deadlocked"] == [0, 1], spin
    assert spin["got"] == {} and set(spin["codes"].values()) == {1}, spin
