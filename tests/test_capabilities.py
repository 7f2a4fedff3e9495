"""The launch probe's pure parts: reading a launcher's command line and environment, and
what a case needs of a launch (no MPI job: the probe itself runs in the launch matrix)."""
from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mpibench.job.capabilities import NO_SLOT, WORKS, Capabilities, _without_out, mpi_family, plan_block
from mpibench.job.hostload import HostCores
from mpibench.job.launcher_seen import oversubscribing, param_value

FULL = ("prterun", "-n", "4", "--oversubscribe", "--with-ft", "ulfm", "--prtemca", "state_base_recoverable",
        "1", "python", "-m", "mpibench")


@pytest.mark.parametrize("argv,value", [
    (FULL, "1"),
    (("prterun", "--mca", "state_base_recoverable", "true", "x"), "true"),
    (("prterun", "--with-ft", "ulfm", "python"), None),
    (("prterun", "--prtemca", "state_base_recoverable"), None),  # a flag without its value
    (("python", "state_base_recoverable", "1"), None),  # a program argument, not a parameter
])
def test_recoverable_is_read_from_the_launcher_command(argv, value):
    assert param_value(argv, "state_base_recoverable") == value


@pytest.mark.parametrize("argv,env,expected", [
    (FULL, {}, True),
    (("prterun", "-n", "4", "--map-by", "core:OVERSUBSCRIBE"), {}, True),
    (("prterun", "-n", "4", "--map-by", "ppr:1:core"), {}, False),
    (("prterun", "-n", "4"), {"PRTE_MCA_rmaps_default_mapping_policy": ":oversubscribe"}, True),
    (("prterun", "-n", "4"), {"OMPI_MCA_rmaps_base_oversubscribe": "1"}, True),
    ((), {}, False),
])
def test_oversubscription_is_read_from_flags_and_environment(argv, env, expected):
    assert oversubscribing(argv, env) is expected


def caps(family="Open MPI", ft=True, recoverable=True, spawn=WORKS, revoke=True) -> Capabilities:
    return Capabilities(family, f"{family} 1.0", 4, ft, "test", recoverable, True, 4, spawn, revoke,
                        (HostCores("h", 4, 2, (2, 2, 2, 2), True),), ("prterun",))


@given(kills=st.booleans(), respawns=st.booleans(), interrupts=st.booleans())
def test_a_full_open_mpi_launch_runs_every_case(kills, respawns, interrupts):
    assert caps().lacking(kills, respawns, interrupts) == ""


@given(respawns=st.booleans(), interrupts=st.booleans())
def test_a_fault_free_case_runs_on_any_launch(respawns, interrupts):
    for launch in (caps(ft=False, recoverable=False, spawn="x"), caps("MPICH", ft=False, recoverable=False)):
        assert launch.lacking(False, respawns, False) == ""


@pytest.mark.parametrize("launch,kills,respawns,interrupts,needs", [
    (caps(ft=False), True, False, False, "--with-ft ulfm"),
    (caps(ft=False), False, False, True, "--with-ft ulfm"),
    (caps(recoverable=False), True, True, False, "--prtemca state_base_recoverable 1"),
    (caps(recoverable=False), True, False, False, ""),  # shrink only: nothing is spawned
    (caps(spawn=f"{NO_SLOT}: 2 rank(s) fill the 2 slot(s)"), True, True, False, "--oversubscribe"),
    (caps("MPICH", ft=False, recoverable=False, revoke=False), True, True, False, "process-fault tolerance"),
    (caps("MPICH", ft=False, recoverable=False, revoke=False), False, True, True, "MPI_Comm_revoke"),
])
def test_what_a_case_needs(launch, kills, respawns, interrupts, needs):
    found = launch.lacking(kills, respawns, interrupts)
    assert (found.startswith(needs) if needs else found == ""), found


def test_families():
    assert mpi_family("Open MPI v5.0.11, package: ...") == "Open MPI"
    assert mpi_family("MPICH Version:      5.0.2") == mpi_family("Intel(R) MPI Library 2021.12") == "MPICH"
    assert mpi_family("Something MPI 1.0") == "other"


def test_the_block_names_each_left_out_case_and_the_command_once():
    text = plan_block(caps(ft=False), ["none/ring", "kill/ring", "cut/ring"], {1: "--with-ft ulfm", 2: "--with-ft ulfm"},
                      ["--steps", "4", "--out", "old", "--force"])
    assert "runs 1 of 3 planned case(s); not run (2):" in text
    assert "  needs --with-ft ulfm: kill/ring, cut/ring" in text
    assert text.count("to run every case: ") == 1 and "--with-ft ulfm --prtemca state_base_recoverable 1" in text
    command = text.split("to run every case: ")[1]
    assert command.endswith("-m mpibench --steps 4") and "old" not in command
    assert plan_block(caps(), ["none/ring"], {}, []).endswith("runs all 1 planned case(s)")


@given(st.lists(st.sampled_from(["--out", "--force", "--steps", "4", "x", "--out=y"]), max_size=8))
def test_the_pasted_command_never_reuses_a_folder(args):
    kept = _without_out(args)
    assert "--force" not in kept and not any(a.startswith("--out") for a in kept)
