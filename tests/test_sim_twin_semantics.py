"""The MPI semantics mpibench relies on, asked of the simulated library and of the real one.

``tests/drivers/twin_semantics.py`` is one program for either library. What each rank must see
is what Open MPI 5.0.11 with ULFM gave on this machine (the slow tests ask it again): matching
in send order with no overtaking (a probe included), a send buffer owned by the library until
the send completes, a broadcast from a non-zero root, reductions and gathers, a revoke failing a
pending receive while agree and shrink still work; after a SIGKILL a small send to the dead
peer completing, a large one failing its wait with ERR_PROC_FAILED (75), a blocking send and a
receive failing at once, Testall and Waitall giving ERR_IN_STATUS (18) with 75 in the failed
request's status, agree failing until the failure is acknowledged and then returning the AND,
shrink leaving the survivors; Spawn and Merge adding a process. Each check fails on a library
that gets that one thing wrong.
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from mpirun import mpi_env, mpirun_command, run_command

DRIVER = Path(__file__).parent / "drivers" / "twin_semantics.py"
ROOT = Path(__file__).resolve().parents[1]

ORDER_ALL = {"bcast_root1": [10.0, 10.0, 10.0], "bcast_obj_root2": {"from": 2}, "allreduce_sum_max": [6.0, 3.0],
             "allgather": [0.0, 1.0, 2.0, 0, 1, 2], "agree_on_revoked": ["ok", 1], "shrink_of_revoked": 3}
EXPECTED = {
    "order": {
        "0": {**ORDER_ALL, "revoked_recv": "revoker"},
        "1": {**ORDER_ALL, "revoked_recv": 77, "first_probed_tag": 1, "any_tag_order": [1.0, 2.0, 1.0],
              "reused_buffer": [1.0, 7.0]},
        "2": {**ORDER_ALL, "revoked_recv": 77, "matching_order": [0.0, 1.0, 2.0, 9.0]}},
    "failure": {
        "0": {"small_isend_to_dead": ["ok", True], "large_isend_to_dead": 75, "blocking_send_to_dead": 75,
              "recv_from_dead": 75, "probe_dead": 75, "probe_any_source": 75, "testall_with_dead": 18,
              "waitall_with_dead": [18, [0, 75]], "agree_before_ack": 75, "failed_group": 1,
              "agree_after_ack": ["ok", 0], "agree_all_one": ["ok", 1], "shrunk": [2, [0, 1]]},
        "1": {"agree_before_ack": 75, "failed_group": 1, "agree_after_ack": ["ok", 0], "agree_all_one": ["ok", 1],
              "shrunk": [2, [0, 1]]}},
    "spawn": {"0": {"merged": [3, [0, 1, "child"]]}, "1": {"merged": [3, [0, 1, "child"]]}},
}
RANKS = {"order": 3, "failure": 3, "spawn": 2}


def seen_by_rank(stdout: str) -> dict:
    return {line.split()[1]: json.loads(line.split(" ", 2)[2]) for line in stdout.splitlines()
            if line.startswith("RANK ")}


def assert_as_open_mpi(group: str, seen: dict, output: str) -> None:
    assert seen.keys() == EXPECTED[group].keys(), output[-3000:]
    for rank, expected in EXPECTED[group].items():
        for name, value in expected.items():
            assert seen[rank].get(name) == value, f"rank {rank} {name}: {seen[rank].get(name)!r}, Open MPI gave {value!r}"


@pytest.mark.parametrize("group", sorted(EXPECTED))
def test_the_simulated_library_answers_as_open_mpi(group):
    proc = subprocess.run([sys.executable, str(DRIVER), "--sim", group], cwd=ROOT, capture_output=True,
                          text=True, timeout=120)
    assert_as_open_mpi(group, seen_by_rank(proc.stdout), proc.stdout + proc.stderr)


@pytest.mark.slow
@pytest.mark.parametrize("group", sorted(EXPECTED))
def test_the_real_library_still_answers_so(group):
    """The expectations above are Open MPI's: asked again of the installed library."""
    job = run_command([*mpirun_command(), "-n", str(RANKS[group]), sys.executable, str(DRIVER), group],
                      timeout=180, cwd=ROOT, env=mpi_env())
    assert_as_open_mpi(group, seen_by_rank(job.stdout), job.stdout + job.stderr)
