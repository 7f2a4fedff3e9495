"""Launcher discovery and the could-not-run verdict of the drivers (sweep, selftest)."""
from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from mpibench.drive import launch, status_bound
from mpirun import run_command


def test_without_a_launcher_given_the_environments_mpirun_gets_the_makefile_flags(monkeypatch):
    monkeypatch.delenv("MPIBENCH_MPIEXEC", raising=False)
    argv = launch.launcher_argv(None)
    beside = Path(sys.executable).parent / "mpirun"
    if not beside.exists():
        pytest.skip("no mpirun beside this Python (the embedded-mpi extra is not installed)")
    assert argv == [str(beside), *launch.OPEN_MPI_FLAGS]


def test_a_given_launcher_is_used_as_given_by_its_absolute_path(monkeypatch, tmp_path):
    # The launcher's arguments as given; the program by its absolute path, so that every
    # printed command runs as pasted in a shell whose PATH lacks it.
    tool = tmp_path / "bin" / "site-launcher"
    tool.parent.mkdir()
    tool.write_text("#!/bin/sh\n")
    tool.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tool.parent}{os.pathsep}{os.environ.get('PATH', '')}")
    monkeypatch.setenv("MPIBENCH_MPIEXEC", "site-launcher --mpi=pmix")
    assert launch.launcher_argv(None) == [str(tool), "--mpi=pmix"]
    assert launch.launcher_argv("mpiexec -x FOO")[1:] == ["-x", "FOO"]
    assert launch.launcher_argv("no-such-launcher -n") == ["no-such-launcher", "-n"]  # preflight names it
    monkeypatch.chdir(tmp_path)
    assert launch.launcher_argv("bin/site-launcher") == [str(tool)]  # a relative path too


@pytest.mark.parametrize("launcher,needle", [("/no/such/mpirun", "no launcher"), ("false", "exited 1")])
def test_a_launcher_that_cannot_start_jobs_is_a_launch_error(launcher, needle):
    with pytest.raises(launch.LaunchError, match=needle):
        launch.preflight(launcher, 2, timeout_s=30)


def counting_launcher(tmp_path: Path, fails: int, words: str) -> str:
    """A launcher that fails its first ``fails`` calls with ``words`` (exit 213), then succeeds."""
    script = tmp_path / "counting-launcher"
    calls = tmp_path / "calls"
    script.write_text(f"#!/bin/sh\necho x >> {calls}\n"
                      f"if [ $(wc -l < {calls}) -le {fails} ]; then echo \"{words}\" >&2; exit 213; fi\necho ran\n")
    script.chmod(0o755)
    return str(script)


def calls_made(tmp_path: Path) -> int:
    return len((tmp_path / "calls").read_text().splitlines())


PMIX_WORDS = "The PMIx server's listener thread failed to start. We cannot continue."


@pytest.mark.parametrize("fails,words,calls,starts", [
    (1, PMIX_WORDS, 2, True),
    (2, PMIX_WORDS, 3, True),
    (3, PMIX_WORDS, 3, False),          # three tries in all
    (1, "not enough slots available", 1, False),  # a failure that would repeat is not retried
])
def test_preflight_tries_a_launcher_that_never_started_again(tmp_path, monkeypatch, fails, words, calls, starts):
    monkeypatch.setattr(launch, "LAUNCH_RETRY_PAUSES_S", (0.0, 0.0))
    launcher = counting_launcher(tmp_path, fails, words)
    if starts:
        assert launch.preflight(launcher, 2, timeout_s=30) == [launcher]
    else:
        with pytest.raises(launch.LaunchError, match="exited 213"):
            launch.preflight(launcher, 2, timeout_s=30)
    assert calls_made(tmp_path) == calls


@pytest.mark.parametrize("fails,calls,code", [(0, 1, 0), (2, 3, 0), (3, 3, 213)])
def test_a_job_that_never_began_runs_up_to_three_times_keeping_each_tries_output(tmp_path, monkeypatch,
                                                                                  fails, calls, code):
    monkeypatch.setattr(launch, "LAUNCH_RETRY_PAUSES_S", (0.0, 0.0))
    logs = tmp_path / "log"
    logs.mkdir()
    job = launch.run_job_again_if_unstarted([counting_launcher(tmp_path, fails, PMIX_WORDS)], logs, 30,
                                            started=lambda: False)
    assert job.returncode == code and calls_made(tmp_path) == calls
    kept = sorted(p.name for p in logs.glob("stderr.*-launch.txt"))
    assert kept == ["stderr.first-launch.txt", "stderr.second-launch.txt"][:calls - 1]
    assert all("listener thread" in (logs / name).read_text() for name in kept)


def test_a_job_that_began_is_never_run_again(tmp_path, monkeypatch):
    monkeypatch.setattr(launch, "LAUNCH_RETRY_PAUSES_S", (0.0, 0.0))
    logs = tmp_path / "log"
    logs.mkdir()
    job = launch.run_job_again_if_unstarted([counting_launcher(tmp_path, 1, PMIX_WORDS)], logs, 30,
                                            started=lambda: True)
    assert job.returncode == 213 and calls_made(tmp_path) == 1


@pytest.mark.mpi
def test_too_many_ranks_without_oversubscribe_names_the_fix():
    plain = str(Path(sys.executable).parent / "mpirun")
    if not Path(plain).exists():
        pytest.skip("no mpirun beside this Python")
    with pytest.raises(launch.LaunchError, match="add --oversubscribe"):
        launch.preflight(plain, (os.cpu_count() or 1) + 2, timeout_s=60)


@pytest.mark.mpi
def test_the_discovered_launcher_starts_more_ranks_than_cores(monkeypatch):
    monkeypatch.delenv("MPIBENCH_MPIEXEC", raising=False)
    launch.preflight(None, (os.cpu_count() or 1) + 1, timeout_s=90)


@pytest.mark.parametrize("command", [["selftest", "--out", "st"],
                                     ["sweep", "--seeds", "1", "--workers", "2", "--out", "sw"]])
def test_drivers_that_cannot_launch_say_could_not_run_with_exit_3(tmp_path, command):
    job = run_command([sys.executable, "-m", "mpibench", *command, "--mpiexec", "false"], timeout=60, cwd=tmp_path)
    assert job.returncode == 3, job.text
    assert "could not run" in job.stderr and "Traceback" not in job.text
    assert "caught" not in job.text and "FAILED" not in job.text  # never reported as the checker's result
    assert not (tmp_path / "sw").exists()  # the sweep made no folder it could not fill


def test_selftest_jobs_that_never_started_are_could_not_run_not_misses(tmp_path, monkeypatch):
    import io

    monkeypatch.setattr(launch, "LAUNCH_RETRY_PAUSES_S", (0.0, 0.0))  # "false" never starts, however long the pause

    from mpibench.selftest.drive import run_selftest

    stream = io.StringIO()
    code = run_selftest(tmp_path, ["false"], jobs=1, stream=stream, only={"honest/native", "unweighted"})
    text = stream.getvalue()
    assert code == 3, text
    assert "selftest could not run: 2 of 2 jobs never began their run" in text and "caught" not in text.split("\n", 1)[1]


def test_a_driver_ends_a_job_that_outlives_the_status_it_wrote(tmp_path, monkeypatch):
    # A stand-in job writes its status into its run folder and then never ends; the driver
    # kills it once the status is older than the bound and reports the status it wrote.
    monkeypatch.setattr(status_bound, "LAUNCH_AFTER_STATUS_S", 1.0)
    run_dir = tmp_path / "run"
    job = [sys.executable, "-c", f"import json, os, time; os.makedirs({str(run_dir)!r}); "
           f"json.dump({{'exit_status': 4}}, open({str(run_dir / 'exit-status.json')!r}, 'w')); time.sleep(600)"]
    result = launch.run_job(job, tmp_path / "log", deadline_s=300, run_dir=run_dir)
    assert result.returncode == 4 and not result.hung, result
    assert "the launcher had not ended 1 s after its job wrote its status (4); ended it" in result.stderr_tail


def test_a_status_left_from_an_earlier_run_does_not_end_a_job(tmp_path, monkeypatch):
    monkeypatch.setattr(status_bound, "LAUNCH_AFTER_STATUS_S", 0.5)
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / "exit-status.json").write_text('{"exit_status": 1}')
    os.utime(run_dir / "exit-status.json", (1, 1))  # long before this launch
    result = launch.run_job([sys.executable, "-c", "import time; time.sleep(3)"], tmp_path / "log",
                            deadline_s=60, run_dir=run_dir)
    assert result.returncode == 0 and "had not ended" not in result.stderr_tail


@pytest.mark.parametrize("open_mpi_tool", ["ompi_info", "prterun", None])
@pytest.mark.parametrize("euid", [0, 1000])
def test_a_pasted_command_carries_open_mpis_root_permission_only_where_it_is_needed(
        monkeypatch, tmp_path, open_mpi_tool, euid):
    # Open MPI refuses to start as root without two variables a clean shell lacks; another
    # MPI's launcher, or a user who is not root, needs neither.
    from mpibench.base import launch_command

    folder = tmp_path / "bin"
    folder.mkdir()
    for name in ["mpirun", *([open_mpi_tool] if open_mpi_tool else [])]:
        (folder / name).write_text("#!/bin/sh\n")
        (folder / name).chmod(0o755)
    monkeypatch.setattr(os, "geteuid", lambda: euid)
    how = launch_command.Launch((str(folder / "mpirun"), "--oversubscribe"), sys.executable)
    text = launch_command.command_text(how, 2, ["run", "--steps", "3"])
    wanted = euid == 0 and open_mpi_tool is not None
    root_words = "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 "
    assert text.startswith(root_words) == wanted, text
    words = text.split()
    assert words[words.index(str(folder / "mpirun")) + 1] == "--oversubscribe", text


@pytest.mark.parametrize("given, pauses, said", [
    (None, (2.0, 6.0), False),
    ("0 0", (0.0, 0.0), False),
    ("1", (1.0,), False),
    ("2,6", (2.0, 6.0), True),   # not seconds separated by spaces: one line, the default kept
    ("-1 3", (2.0, 6.0), True),
])
def test_the_retry_pauses_come_from_the_environment_or_the_default(monkeypatch, capsys, given, pauses, said):
    from mpibench.base.launchflags import launch_retry_pauses_s

    if given is None:
        monkeypatch.delenv("MPIBENCH_LAUNCH_RETRY_PAUSES_S", raising=False)
    else:
        monkeypatch.setenv("MPIBENCH_LAUNCH_RETRY_PAUSES_S", given)
    assert launch_retry_pauses_s() == pauses
    err = capsys.readouterr().err
    assert (err.count("\n") == 1 and "MPIBENCH_LAUNCH_RETRY_PAUSES_S" in err) if said else err == ""
