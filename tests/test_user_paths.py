"""The paths a user runs, end to end, and what they then see: the exit status, verdict.json and
the first screen of report.html in headless Chromium must all say the same thing.

Paths: ``make run`` (the Makefile's own command line), the main job under ``mpirun``
directly, ``run``, ``sweep`` and ``selftest``; a passing run, a planted failing run (the
self-test's unweighted mutant) and a run killed mid-way. Every printed replay command is run
as pasted from another folder with ``PATH=/usr/bin:/bin`` and gives the recorded rows.
"""
from __future__ import annotations

import json
import os
import re
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from mpirun import (LAUNCHER_RETRY_PAUSES_S, launcher_never_started, mpi_env, mpirun_command,
                    again_if_never_started, processes_tagged, reap_survivors, run_cli, run_command,
                    run_mpi, tagged)
from test_report_browser import FIRST_SCREEN, browser  # noqa: F401 - the fixture

ROOT = Path(__file__).resolve().parent.parent
WORDS = {"pass": "PASS", "fail": "FAIL", "unknown": "UNKNOWN", "unjudged": "NOT JUDGED YET"}
EXIT = {"pass": 0, "fail": 1, "unknown": 3}
QUICK = {"MPIBENCH_NO_BENCH": "1", "MPIBENCH_NO_SWEEP": "1", "MPIBENCH_STRATEGIES": "ring,ps"}


def first_screen(browser, page: Path) -> dict:
    """What the top of the page shows: the banner's verdict, its word and counts, and whether
    the whole banner is on the first screen."""
    browser.call("Emulation.setDeviceMetricsOverride", width=FIRST_SCREEN[0], height=FIRST_SCREEN[1],
                 deviceScaleFactor=1, mobile=False)
    browser.open(page.as_uri())
    return browser.evaluate(
        "(() => { const b = document.querySelector('#verdict'); if (!b) return null;"
        " const r = b.getBoundingClientRect();"
        " return {verdict: b.dataset.verdict, word: b.querySelector('.word').textContent,"
        " text: b.textContent, top: r.top, bottom: r.bottom}; })()")


def assert_page_reads(browser, out: Path, status: int) -> dict:
    """The page's first screen, verdict.json and the exit status agree."""
    doc = json.loads((out / "verdict.json").read_text())
    screen = first_screen(browser, out / "report.html")
    assert screen is not None, "no verdict banner on the page"
    assert 0 <= screen["top"] and screen["bottom"] <= FIRST_SCREEN[1], screen
    assert screen["verdict"] == doc["verdict"] and screen["word"] == WORDS[doc["verdict"]], (screen, doc["verdict"])
    assert status == doc["exit_status"] == EXIT[doc["verdict"]], (status, doc)
    assert f"{doc['checks']:,} checks" in screen["text"], screen["text"]
    return doc


def env_with(extra: dict) -> dict:
    env = mpi_env()
    env.update(extra)
    return env


def launch(cmd: list[str], extra: dict, timeout: float = 240, cwd: Path | None = None) -> subprocess.CompletedProcess:
    """``cmd`` run to its end; started again (up to twice more) when the MPI launcher failed before it
    started anything (``launcher_never_started``: Open MPI's, now and then, under load)."""
    return again_if_never_started(lambda: subprocess.run(
        cmd, env=env_with(extra), capture_output=True, text=True, timeout=timeout,
        stdin=subprocess.DEVNULL, cwd=cwd, start_new_session=True))


def pasted(command: str, cwd: Path, timeout: float = 180) -> subprocess.CompletedProcess:
    """A printed command run as a user pastes it: another folder, a bare PATH and a home,
    no Open MPI variables (root's permission must come from the command itself)."""
    env = {"PATH": "/usr/bin:/bin", "HOME": os.environ.get("HOME", "/root")}
    return again_if_never_started(lambda: subprocess.run(
        ["/bin/sh", "-c", command], env=env, cwd=cwd, capture_output=True, text=True,
        timeout=timeout, stdin=subprocess.DEVNULL, start_new_session=True))


def deterministic(frame: pd.DataFrame) -> pd.DataFrame:
    return frame[[c for c in frame.columns if not c.endswith("_s")]].reset_index(drop=True)


def test_make_run_prints_one_verdict_and_where_the_page_is_and_the_page_reads_it(browser, tmp_path):
    out = tmp_path / "made"
    done = launch(["make", "-s", "run", "NP=2", f"OUT={out}"],
                  {"MPIBENCH_SCENARIOS": "none,kill-mid-reduction", "MPIBENCH_STRATEGIES": "ring",
                   "MPIBENCH_JOB_SWEEP_S": "4"}, cwd=ROOT, timeout=400)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    main_verdicts = [line for line in done.stdout.splitlines() if line.startswith("verdict: pass (2 case(s)")]
    assert len(main_verdicts) == 1, done.stdout[-3000:]  # the job's; make's check confirms it silently
    assert "verdict time" not in done.stdout
    assert f"report: {out / 'report.html'}" in done.stdout
    doc = assert_page_reads(browser, out, done.returncode)
    assert doc["phases"]["planned"][-4:] == ["sweep", "bench", "scaling", "report"]
    assert sorted(p.stem for p in (out / "phases").glob("*.json")) == sorted(doc["phases"]["planned"])
    assert re.search(r"\[2/2, \d+ s so far, about \d+ s left at this pace\]", done.stdout), done.stdout[:2000]
    sweep = pd.read_csv(out / "sweep.csv", keep_default_na=False)  # the job's own sweep: its replays as pasted
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    first = sweep.iloc[0]
    replay = pasted(first.replay, elsewhere)
    assert replay.returncode == 0, replay.stdout[-2000:] + replay.stderr[-2000:]
    args = shlex.split(first.replay)
    again = json.loads((Path(args[args.index("--out") + 1]) / "verdict.json").read_text())
    assert (again["checks"], again["violations"]) == (int(first.checks), int(first.violations))


def test_direct_mpirun_main_job_and_its_replays_as_pasted(browser, tmp_path):
    out = tmp_path / "direct"
    job = launch(mpirun_command() + ["-n", "2", sys.executable, "-m", "mpibench", "--steps", "4", "--out", str(out)],
                 {**QUICK, "MPIBENCH_SCENARIOS": "none,kill-mid-reduction"})
    assert job.returncode == 0, job.stdout[-3000:] + job.stderr[-3000:]
    doc = assert_page_reads(browser, out, job.returncode)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    invariants = pd.read_csv(out / "invariants.csv", keep_default_na=False)
    case = next(c for c in doc["cases"] if c["scenario"] == "kill-mid-reduction")
    program = [w for w in shlex.split(case["replay"]) if "=" not in w][0]  # past the environment it names
    assert os.path.isabs(program) and f" {sys.executable} -m mpibench run " in case["replay"]
    for attempt in range(2):  # twice: each replay gets a fresh folder, no --force needed
        replay = pasted(case["replay"], elsewhere)
        assert replay.returncode == 0, replay.stdout[-2000:] + replay.stderr[-2000:]
    runs = sorted(p for p in (elsewhere / "mpibench-out").iterdir() if p.name != "latest")
    assert len(runs) == 2
    mine = invariants[(invariants.scenario == case["scenario"]) & (invariants.strategy == case["strategy"])]
    steps = pd.read_csv(out / "steps.csv", keep_default_na=False)
    my_steps = steps[(steps.scenario == case["scenario"]) & (steps.strategy == case["strategy"])]
    for run in runs:
        again = pd.read_csv(run / "invariants.csv", keep_default_na=False)
        pd.testing.assert_frame_equal(deterministic(again), deterministic(mine))
        # every bit of the losses too: the command carries the variables that choose BLAS kernels
        again_steps = pd.read_csv(run / "steps.csv", keep_default_na=False)
        pd.testing.assert_frame_equal(deterministic(again_steps), deterministic(my_steps))


def test_run_with_a_planted_failure_reads_fail_everywhere(browser, tmp_path):
    out = tmp_path / "planted"
    job = run_mpi(2, ["run", "--run-parts", "mpibench.selftest.variants:unweighted", "--scenario", "short-epochs",
                      "--steps", "6"], out)
    assert job.returncode == 1, job.text[-3000:]
    built = run_cli(["report", str(out)])
    assert built.returncode == 0, built.text
    doc = assert_page_reads(browser, out, job.returncode)
    assert doc["verdict"] == "fail" and doc["first_violation"]["invariant"]


def test_a_main_job_killed_mid_way_is_not_judged_then_unknown(browser, tmp_path):
    out = tmp_path / "killed"
    cmd = mpirun_command() + ["-n", "2", sys.executable, "-m", "mpibench", "--steps", "6", "--out", str(out)]
    status, text, _ = kill_when(cmd, {**QUICK, "MPIBENCH_SCENARIOS": "none,straggler"}, "scenario straggler under ring")
    built = run_cli(["report", str(out)])
    assert built.returncode == 0, built.text
    screen = first_screen(browser, out / "report.html")
    assert screen["verdict"] == "unjudged" and screen["word"] == "NOT JUDGED YET", screen
    assert f"{sys.executable} -m mpibench check {out}" in screen["text"]
    judged = run_cli(["check", str(out)])
    assert judged.returncode == 3, judged.text
    assert run_cli(["report", str(out)]).returncode == 0
    doc = assert_page_reads(browser, out, judged.returncode)
    unfinished = doc["phases"]["unfinished"]
    assert unfinished and set(unfinished) <= {"002-straggler-ring-shrink", "003-straggler-ps-shrink"}, doc["phases"]
    assert unfinished[0] in judged.stdout


def test_sweep_page_and_replays_as_pasted(browser, tmp_path):
    out = tmp_path / "sweep"
    job = launch([sys.executable, "-m", "mpibench", "sweep", "--seeds", "2", "--workers", "2", "--strategies",
                  "ring", "--steps", "4", "--out", str(out)], {"MPIBENCH_MPIEXEC": shlex.join(mpirun_command())})
    assert job.returncode == 0, job.stdout[-3000:] + job.stderr[-3000:]
    assert run_cli(["report", str(out)]).returncode == 0
    screen = first_screen(browser, out / "report.html")
    assert screen["verdict"] == "pass" and "over 2 case(s)" in screen["text"], screen
    rows = pd.read_csv(out / "sweep.csv", keep_default_na=False)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    first = rows.iloc[0]
    for attempt in range(2):  # pasted twice: the second replaces the first replay, no surprise
        replay = pasted(first.replay, elsewhere)
        assert replay.returncode == 0, replay.stdout[-2000:] + replay.stderr[-2000:]
    args = shlex.split(first.replay)
    target = Path(args[args.index("--out") + 1])
    again = json.loads((target / "verdict.json").read_text())
    assert again["checks"] == int(first.checks) and again["violations"] == int(first.violations)


@pytest.mark.slow
def test_selftest_refuses_its_own_results_without_force(tmp_path):
    out = tmp_path / "selftest"
    env = {"MPIBENCH_MPIEXEC": shlex.join(mpirun_command())}
    first = launch([sys.executable, "-m", "mpibench", "selftest", "--out", str(out)], env, timeout=900)
    assert first.returncode == 0, first.stdout[-3000:]
    assert (out / "selftest.txt").read_text().strip().splitlines()[-1] == first.stdout.strip().splitlines()[-1]
    again = launch([sys.executable, "-m", "mpibench", "selftest", "--out", str(out)], env, timeout=120)
    assert again.returncode == 2 and "already holds results" in again.stderr


def kill_when(cmd: list[str], extra: dict, needle: str, delay_s: float = 0.0, timeout: float = 240):
    """Launch ``cmd``, SIGKILL its whole process group ``delay_s`` after ``needle`` appears in its
    output; returns (status, output so far, how many of its processes ran just before the kill).
    Every process of the job must be gone within seconds of the kill (the ranks, in process
    groups of their own, end themselves once their launcher is gone); any left are killed and
    the test fails. A launch whose launcher failed before it started anything is made again, up to
    twice more."""
    for pause_s in LAUNCHER_RETRY_PAUSES_S:
        try:
            return _kill_when_once(cmd, extra, needle, delay_s, timeout)
        except NeverStarted:
            time.sleep(pause_s)
    return _kill_when_once(cmd, extra, needle, delay_s, timeout)


class NeverStarted(AssertionError):
    """The launcher failed before it started any process of the job."""


def _kill_when_once(cmd: list[str], extra: dict, needle: str, delay_s: float, timeout: float):
    env, tag = tagged(env_with({**extra, "PYTHONUNBUFFERED": "1"}))
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, stdin=subprocess.DEVNULL, start_new_session=True)
    running = 0
    seen, start = [], time.monotonic()
    try:
        for line in proc.stdout:
            seen.append(line)
            if needle in line:
                time.sleep(delay_s)
                break
            assert time.monotonic() - start < timeout, "".join(seen)[-3000:]
        else:
            proc.wait(timeout=60)
            text = "".join(seen)
            never = NeverStarted if launcher_never_started(proc.returncode, text) else AssertionError
            raise never(f"the job ended before {needle!r}:\n" + text[-3000:])
    finally:
        running = len(processes_tagged(tag))
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait(timeout=60)
        proc.stdout.close()
        left = reap_survivors(tag)
    assert not left, f"outlived the kill of their launcher (now killed): {left}"
    return proc.returncode, "".join(seen), running


# Moments spread over the main job's phases: (a line of its output, seconds after it).
KILL_MOMENTS = [("calibrating", 0.0), ("scenario none under ring", 0.0),
                ("scenario kill-mid-reduction under ring", 0.3), ("fault: worker", 0.0), ("respawning", 0.0),
                ("case s0-", 0.0), ("benchmarks (", 0.5), ("scaling: native, strong", 0.0),
                ("scaling: ring, weak", 0.0), ("wall time", 0.0)]


def killed_then_checked(tmp_path: Path, index: int, needle: str, delay_s: float) -> tuple[int, str, dict, int]:
    out = tmp_path / f"kill-{index}"
    cmd = mpirun_command() + ["-n", "2", sys.executable, "-m", "mpibench", "--steps", "4", "--out", str(out)]
    _, _, running = kill_when(cmd, {"MPIBENCH_SCENARIOS": "none,kill-mid-reduction", "MPIBENCH_STRATEGIES": "ring",
                    "MPIBENCH_JOB_SWEEP_S": "3"}, needle, delay_s)
    judged = run_cli(["check", str(out)])
    path = out / "verdict.json"
    return (judged.returncode, judged.stdout + judged.stderr, json.loads(path.read_text()) if path.exists() else {},
            running)


# Ten launches of the whole job with its benchmarks, two at a time: 44 s on a quiet 2-core
# machine (load 1-3), 77-128 s while five other engineers' tests ran beside it (load 15-17).
def test_a_main_job_killed_at_ten_moments_is_never_judged_a_pass(tmp_path):
    """SIGKILL of the launcher's whole process group at each moment: ``check`` exits 3 and
    names the first part that did not finish (run.json itself when the kill came before it);
    no process of the job outlives the kill by more than seconds (``kill_when``)."""
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=2) as pool:
        found = list(pool.map(lambda m: killed_then_checked(tmp_path, m[0], *m[1]), enumerate(KILL_MOMENTS)))
    # the tag reached the ranks: more than the launcher carried it at most kills (a kill just as
    # a rank was killed or the job was ending can find fewer)
    assert sum(running > 2 for *_, running in found) >= len(KILL_MOMENTS) // 2, [f[3] for f in found]
    for (needle, _), (status, text, doc, _) in zip(KILL_MOMENTS, found):
        assert status == 3, (needle, text)
        unfinished = doc.get("phases", {}).get("unfinished") or []
        named = unfinished[0] if unfinished else "run.json"
        assert named in text, (needle, named, text)


@pytest.mark.parametrize("late", ["1", "0,1", "0,1,2"])
def test_a_deadline_no_recovery_absorbs_ends_the_job_with_one_stuck_line(late):
    driver = ROOT / "tests" / "drivers" / "stuck_driver.py"
    job = run_command(mpirun_command() + ["-n", "3", sys.executable, str(driver), late], timeout=120)
    assert job.returncode == 1, job.text[-3000:]
    # Open MPI's output forwarding can put a NUL byte before a line; the line is still the one line.
    stuck = [line for line in job.text.splitlines() if line.lstrip("\x00").startswith("stuck:")]
    assert len(stuck) == 1, job.text[-3000:]
    assert "Traceback" not in job.text
