"""How a wait that cannot complete ends, on both engines alike (mpibench.sync.comm).

Outside strategies in a temporary package (the plugin path a user's code takes): one whose rank 0
waits for a message nobody sends while the others enter an all-reduce, one where two ranks each
wait to receive from the other, and one that receives one element fewer than was sent. Each run
must end as a run that cannot be judged (exit 3) with verdict.json and the page written, and say
in words which rank waited for what, or which lengths disagreed: the same on MPI and simulated."""
from __future__ import annotations

import json
import os
import sys
import textwrap

import pytest

from tests.mpirun import mpi_env, mpirun_command, run_command

PLUGIN = textwrap.dedent('''
    from mpibench.sync.base import Reduction, SyncStrategy


    class WaitForNobody(SyncStrategy):
        name = "wait-for-nobody"
        summary = "rank 0 waits for a receive from rank 1 that is never sent; the rest all-reduce"

        def reduce(self, buf):
            comm = self.comm
            if comm.rank == 0:
                box = self.backend.empty(len(buf))
                comm.wait([comm.irecv(box, 1, 99)], (1,))
            else:
                comm.allreduce(buf.copy(), buf)
            return Reduction(comm.worker_ids, [(0, len(buf))], len(buf))


    class BothReceive(SyncStrategy):
        name = "both-receive"
        summary = "ranks 0 and 1 each wait to receive from the other first"

        def reduce(self, buf):
            comm = self.comm
            box = self.backend.empty(len(buf))
            if comm.rank < 2:
                comm.recv(box, 1 - comm.rank, 97)
            comm.allreduce(buf.copy(), buf)
            return Reduction(comm.worker_ids, [(0, len(buf))], len(buf))


    class ShortReceive(SyncStrategy):
        name = "short-receive"
        summary = "rank 1 receives one element fewer than rank 0 sends"

        def reduce(self, buf):
            comm = self.comm
            if comm.rank == 0:
                comm.wait([comm.isend(buf, 1, 98)], (1,))
            elif comm.rank == 1:
                box = self.backend.empty(len(buf) - 1)
                comm.wait([comm.irecv(box, 0, 98)], (0,))
            comm.allreduce(buf.copy(), buf)
            return Reduction(comm.worker_ids, [(0, len(buf))], len(buf))
''')


@pytest.fixture
def plugin_env(tmp_path):
    package = tmp_path / "plugins" / "late_strategies"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text(PLUGIN)
    env = mpi_env()
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(tmp_path / "plugins"), env.get("PYTHONPATH")]))
    return env


def launch(engine: str, ranks: int, strategy: str, out, env, deadline_s: float = 5):
    args = ["run", "--strategy", f"late_strategies:{strategy}", "--steps", "3", "--deadline-s", str(deadline_s),
            "--out", str(out)]
    if engine == "sim":
        cmd = [sys.executable, "-m", "mpibench", *args, "--engine", "sim", "--ranks", str(ranks)]
    else:
        cmd = [*mpirun_command(), "-n", str(ranks), sys.executable, "-m", "mpibench", *args]
    return run_command(cmd, timeout=120, out=out, env=env)


def judged_unknown(out) -> dict:
    verdict = json.loads((out / "verdict.json").read_text())
    assert verdict["verdict"] == "unknown", verdict
    assert (out / "report.html").stat().st_size > 0
    return verdict


@pytest.mark.mpi
@pytest.mark.parametrize("engine", ["sim", "mpi"])
def test_a_wait_for_nobody_beside_a_collective_ends_late_naming_the_rank_that_waited(engine, tmp_path, plugin_env):
    out = tmp_path / "run"
    job = launch(engine, 4, "WaitForNobody", out, plugin_env)
    assert job.returncode == 3, job.text[-3000:]
    judged_unknown(out)
    last = [line for line in job.stdout.splitlines() if line.strip() and not line.startswith("engine sim")][-1]
    assert last.startswith("mpibench: PeerLate: no answer within 5 s: rank 0 waited for a receive from rank 1"), last
    assert "MPI_ERR_REQUEST" not in job.text and "stuck:" not in job.text


@pytest.mark.mpi
@pytest.mark.parametrize("engine", ["sim", "mpi"])
def test_two_ranks_waiting_on_each_other_end_late_naming_a_receive(engine, tmp_path, plugin_env):
    out = tmp_path / "run"
    job = launch(engine, 3, "BothReceive", out, plugin_env, deadline_s=3)
    assert job.returncode == 3, job.text[-3000:]
    judged_unknown(out)
    assert "PeerLate: no answer within 3 s: rank " in job.stdout and "waited for a receive from rank" in job.stdout


@pytest.mark.mpi
@pytest.mark.parametrize("engine", ["sim", "mpi"])
def test_a_short_receive_is_named_as_a_length_mismatch(engine, tmp_path, plugin_env):
    out = tmp_path / "run"
    job = launch(engine, 2, "ShortReceive", out, plugin_env)
    assert job.returncode == 3, job.text[-3000:]
    verdict = judged_unknown(out)
    words = "rank 1 received 676 elements where its send had 677 (MPI_ERR_TRUNCATE: message truncated)"
    assert words in job.stdout and words in json.dumps(verdict), job.stdout[-2000:]
    assert "MPI_ERR_IN_STATUS" not in job.text
