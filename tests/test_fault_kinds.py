"""Fault kinds as modules: every registered kind has every part, and a kind from outside
(one file, tests/plugins/pause_fault_kind.py, in a temporary package named by
MPIBENCH_FAULT_KINDS) is validated, read from TOML, drawn by the sweep, carried out by the
communicator wrapper and logged, on the simulated engine and on MPI."""
from __future__ import annotations

import csv
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from mpibench.faults import kinds, toml_io
from mpibench.faults.random_schedule import random_schedule
from mpibench.faults.schedule import Delay, Kill, Partition, Schedule, validate
from mpirun import mpi_env, run_mpi

ROOT = Path(__file__).resolve().parent.parent
PLUGIN = Path(__file__).parent / "plugins" / "pause_fault_kind.py"
SCHEDULE = """\
name = "pause-one"
[[pause]]
rank = 1
step = 2
seconds = 0.05
"""


# ------------------------------------------------------------------ the contract
def test_every_registered_kind_has_every_part():
    assert [k.NAME for k in kinds.BUILTIN] == ["kill", "delay", "partition"]
    for kind in kinds.KINDS:
        assert kinds.missing_parts(kind) == [], kind.__name__
        assert kind.EVENT.kind == kind.NAME
        assert isinstance(kind.GLYPH, str) and kind.GLYPH and kind.COLOUR.startswith("#")
        assert set(kind.TOML_FIELDS) and f"[[{kind.NAME}]]" in kind.TOML_DOC
        assert callable(kind.on_mark) or kind.on_mark is None
        assert callable(kind.log_row) or kind.log_row is None


EXAMPLES = [Kill(2, 3, "mid_reduction", 2), Delay(1, (2, 4), 0.2, "send"), Partition(((0, 1), (2, 3)), 2, 5)]


@pytest.mark.parametrize("event", EXAMPLES, ids=lambda e: e.kind)
def test_each_kind_round_trips_toml_and_shrinks_smaller(event):
    kind = kinds.of(event)
    schedule = validate(Schedule("one", 4, (event,)))
    assert toml_io.loads(toml_io.dump(schedule), 4, "one") == schedule
    assert kind.acts_at(event)
    moves = list(kind.shrink_moves(event))
    assert moves, "every example can be made smaller"
    for smaller in moves:  # no move makes the event last longer or act later
        assert kind.last_step(smaller) <= kind.last_step(event)
        assert smaller != event
    moved = kind.shifted(event, -1)
    assert kind.first_step(moved) == kind.first_step(event) - 1


def test_an_event_of_no_registered_kind_is_refused():
    class Flood:
        kind = "flood"

    with pytest.raises(ValueError, match="unknown event"):
        validate(Schedule("x", 2, (Flood(),)))


def test_an_incomplete_kind_is_refused(tmp_path):
    import types

    module = types.ModuleType("half_kind")
    module.NAME = "half"
    with pytest.raises(ValueError, match="half_kind.* lacks EVENT"):
        kinds.register(module)
    assert "half" not in kinds.names()


# ------------------------------------------------------------------ a kind from outside
@pytest.fixture(scope="module")
def outside(tmp_path_factory):
    """A temporary package holding the pause kind, and the environment that registers it."""
    work = tmp_path_factory.mktemp("outside_kind")
    package = work / "outside_kinds"
    package.mkdir()
    (package / "__init__.py").write_text("")
    shutil.copy(PLUGIN, package / "pause.py")
    (work / "pause.toml").write_text(SCHEDULE)
    env = mpi_env()
    env["PYTHONPATH"] = os.pathsep.join([str(work), str(ROOT), env.get("PYTHONPATH", "")])
    env["MPIBENCH_FAULT_KINDS"] = "outside_kinds.pause"
    return work, env


def _cli(env, *args, timeout_s=240):
    return subprocess.run([sys.executable, "-m", "mpibench", *args], capture_output=True, text=True,
                          env=env, timeout=timeout_s, stdin=subprocess.DEVNULL)


def _python(env, code: str):
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)


def _rows(path: Path) -> list[dict]:
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


def test_without_the_variable_the_kind_is_unknown(outside, tmp_path):
    work, env = outside
    bare = dict(env, MPIBENCH_FAULT_KINDS="")
    proc = _cli(bare, "run", "--engine", "sim", "--ranks", "3", "--strategy", "ring",
                "--scenario", str(work / "pause.toml"), "--steps", "4", "--out", str(tmp_path / "run"))
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "unknown key or event kind 'pause'" in proc.stdout + proc.stderr


@pytest.mark.parametrize("named, said", [("no_such_kind_module", "cannot import fault kind module 'no_such_kind_module'"),
                                         ("json", "fault kind module 'json' lacks NAME, EVENT")])
def test_a_bad_outside_kind_is_one_line_and_exit_2(outside, tmp_path, named, said):
    work, env = outside
    proc = _cli(dict(env, MPIBENCH_FAULT_KINDS=named), "run", "--engine", "sim", "--steps", "2",
                "--out", str(tmp_path / "run"))
    assert proc.returncode == 2, proc.stdout + proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"mpibench: error: MPIBENCH_FAULT_KINDS: {said}"), lines


def test_outside_kind_joins_the_registry_after_the_builtins_and_leaves_their_draws(outside):
    work, env = outside
    code = ("import json; from mpibench.faults import kinds; from mpibench.faults.random_schedule import "
            "random_schedule as r; print(json.dumps([kinds.names(), [[e.text() for e in r(s, 4, 8).events "
            "if e.kind != 'pause'] for s in range(30)], sum(any(e.kind == 'pause' for e in r(s, 4, 8).events) "
            "for s in range(30))]))")
    proc = _python(env, code)
    assert proc.returncode == 0, proc.stderr
    names, builtin_events, with_pause = json.loads(proc.stdout)
    assert names == ["kill", "delay", "partition", "pause"]
    # The built-in kinds draw first from the one generator: their events are as without the kind.
    assert builtin_events == [[e.text() for e in random_schedule(s, 4, 8).events] for s in range(30)]
    assert with_pause >= 10


def test_outside_kind_has_its_mark_on_the_page(outside):
    work, env = outside
    code = ("import pandas as pd; from mpibench.results import scenario_svg as s; from mpibench.results.svgaxes "
            "import Scale; f = pd.DataFrame([{'step': 2, 'kind': 'pause', 'rank': 1, 'phase': 'after_reduce'}]); "
            "print(s.fault_marks(f, Scale(0, 4, s.PLOT_X0, s.PLOT_X1))); print(s.legend(['ring']))")
    proc = _python(env, code)
    assert proc.returncode == 0, proc.stderr
    assert 'class="fault fault-pause"' in proc.stdout and "⏸" in proc.stdout
    assert '<span style="color:#16a085">⏸</span> pause' in proc.stdout


def test_outside_kind_runs_on_the_simulated_engine_and_is_judged(outside, tmp_path):
    work, env = outside
    out = tmp_path / "run"
    proc = _cli(env, "run", "--engine", "sim", "--ranks", "4", "--strategy", "ring",
                "--scenario", str(work / "pause.toml"), "--steps", "5", "--out", str(out))
    text = proc.stdout + proc.stderr
    assert proc.returncode == 0, text
    assert "pause: worker 1 sleeps 0.05 s at step 2" in text  # the wrapper called the kind's effect
    assert json.loads((out / "verdict.json").read_text())["verdict"] == "pass"
    rows = [r for r in _rows(out / "faults.csv") if r["kind"] == "pause"]
    assert [(r["step"], r["rank"], r["phase"]) for r in rows] == [("2", "1", "after_reduce")]


def test_outside_kind_is_drawn_and_judged_by_the_simulated_sweep(outside, tmp_path):
    work, env = outside
    out = tmp_path / "sweep"
    proc = _cli(env, "sweep", "--engine", "sim", "--seeds", "4", "--workers", "3", "--strategies", "ring",
                "--steps", "6", "--out", str(out))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    cases = _rows(out / "sweep.csv")
    assert len(cases) == 4 and all(c["outcome"] == "ok" for c in cases)
    paused = [c for c in cases if "pause " in c["faults"]]
    assert paused, [c["faults"] for c in cases]
    # The case's own schedule file carries the kind's table, and its faults.csv the kind's rows.
    case = out / "cases" / paused[0]["case"]
    assert "[[pause]]" in (case / "schedule.toml").read_text()
    logged = [r for f in case.rglob("faults.csv") for r in _rows(f) if r["kind"] == "pause"]
    assert logged, sorted(str(p) for p in case.rglob("*"))


@pytest.mark.mpi
def test_outside_kind_runs_on_mpi(outside, tmp_path, monkeypatch):
    work, env = outside
    for key in ("PYTHONPATH", "MPIBENCH_FAULT_KINDS"):
        monkeypatch.setenv(key, env[key])  # run_mpi launches with this process's environment
    job = run_mpi(2, ["run", "--strategy", "ring", "--scenario", str(work / "pause.toml"), "--steps", "4"],
                  out=tmp_path / "mpi", timeout=240)
    assert job.returncode == 0, job.text[-3000:]
    assert "pause: worker 1 sleeps 0.05 s at step 2" in job.text
    rows = [r for r in _rows(tmp_path / "mpi" / "faults.csv") if r["kind"] == "pause"]
    assert [(r["step"], r["rank"]) for r in rows] == [("2", "1")]
