"""The fault layer points down: it never imports the job layer (runner, suite)."""
import ast
import pickle
from pathlib import Path

import numpy as np
import pytest

from mpibench.base.config import RunConfig
from mpibench.job.continuation import BetweenScenarios, MainJob, MainJobAt, SingleRun
from mpibench.engine.data import Cursor

FAULTS = Path(__file__).resolve().parent.parent / "mpibench" / "faults"
JOB_LAYER = ("mpibench.job", "mpibench.drive", "mpibench.cli")  # and every module inside them


@pytest.mark.parametrize("module", sorted(p.name for p in FAULTS.glob("*.py")))
def test_fault_modules_do_not_import_the_job_layer(module):
    tree = ast.parse((FAULTS / module).read_text())
    imported = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            imported.add(node.module)
            imported |= {f"{node.module}.{a.name}" for a in node.names}
    above = {name for name in imported if any(name == top or name.startswith(top + ".") for top in JOB_LAYER)}
    assert not above, above


@pytest.mark.parametrize("module", sorted(p.name for p in FAULTS.glob("*.py")))
def test_fault_modules_stay_small(module):
    assert len((FAULTS / module).read_text().splitlines()) <= 300


def test_continuations_are_frozen_and_survive_pickling():
    job = MainJob((RunConfig(scenario="none"),), 4, "/tmp/x", RunConfig(), None, 0.0)
    for c in (SingleRun("/tmp/x"), MainJobAt(job, 2), BetweenScenarios(job, 3)):
        assert pickle.loads(pickle.dumps(c)) == c
        assert c.out == "/tmp/x"
        with pytest.raises(AttributeError):
            c.index = 5


def test_resume_carries_the_job_continuation_unread():
    from mpibench.faults.recovery import RecoveryState
    from mpibench.faults.respawn import Resume

    after = SingleRun("/tmp/out")
    r = Resume(RunConfig(), None, 3, 2, (0, 1, 2), (2,), np.zeros(3, np.float32), {2: Cursor(0, 16)},
               {0: 1}, RecoveryState(stalled={1}), after)
    back = pickle.loads(pickle.dumps(r))
    assert back.after == after and back.state.stalled == {1} and back.cursors[2] == Cursor(0, 16)
