"""bench --anchor: the tool's table read, its launch environment, and a whole run with c_anchor.c."""
from __future__ import annotations

import shlex

import pytest

from mpibench.job.bench import anchor, cfloor
from mpirun import mpirun_command, run_cli, run_mpi

OSU_FULL = """
# OSU MPI Allreduce Latency Test v7.0
# Size       Avg Latency(us)   Min Latency(us)   Max Latency(us)  Iterations
4096                     4.10              3.90              4.30        1000
1048576                150.90            149.00            152.50         100
"""
OSU_SHORT = "# OSU MPI Allreduce Latency Test v5.3\n# Size       Avg Latency(us)\n65536   11.02\n"
IMB = """
#----------------------------------------------------------------
# Benchmarking Allreduce
# #processes = 2
#----------------------------------------------------------------
       #bytes #repetitions  t_min[usec]  t_max[usec]  t_avg[usec]
         4096           50         3.98         4.02         4.00
      4194304           50       620.10       624.90       622.50


# All processes entering MPI_Finalize
"""


def test_osu_table_gives_avg_min_max_in_seconds():
    rows = anchor.parse_table("osu", OSU_FULL)
    assert sorted(rows) == [4096, 1 << 20]
    assert rows[1 << 20].t_avg == pytest.approx(150.9e-6) and rows[1 << 20].t_min == pytest.approx(149e-6)
    assert rows[1 << 20].t_max == pytest.approx(152.5e-6)
    short = anchor.parse_table("osu", OSU_SHORT)[65536]
    assert short.t_min == short.t_avg == short.t_max == pytest.approx(11.02e-6)


def test_imb_table_takes_t_min_t_avg_t_max_by_column():
    rows = anchor.parse_table("imb", IMB)
    assert sorted(rows) == [4096, 4 << 20]
    got = rows[4 << 20]
    assert (got.t_min, got.t_avg, got.t_max) == pytest.approx((620.1e-6, 622.5e-6, 624.9e-6))
    assert anchor.parse_table("imb", "no table here\n") == {}


@pytest.mark.parametrize("n_bytes", [4, 4096, 3 << 20])
def test_tool_arguments_time_exactly_the_size_and_calls(tmp_path, n_bytes):
    lengths = tmp_path / "lengths"
    imb = anchor.tool_args("/opt/IMB-MPI1", n_bytes, 2, 50, 5, str(lengths))
    assert imb[1] == "Allreduce" and imb[imb.index("-iter") + 1] == "50" and "-iter_policy" in imb
    assert lengths.read_text() == f"{n_bytes}\n" and imb[imb.index("-npmin") + 1] == "2"
    low, high = imb[imb.index("-msglog") + 1].split(":")
    assert int(low) < int(high) and 2 ** int(high) >= n_bytes  # IMB's cap on the length is above it
    osu = anchor.tool_args("/opt/osu_allreduce", n_bytes, 2, 50, 0, str(tmp_path / "unused"))
    assert osu[1:] == ["-m", f"{n_bytes}:{n_bytes}", "-i", "50", "-x", "1", "-f"]


def test_launch_environment_drops_what_the_launcher_injected(monkeypatch):
    monkeypatch.setenv("PMIX_RANK", "0")
    monkeypatch.setenv("OMPI_COMM_WORLD_SIZE", "2")
    monkeypatch.setenv("OMPI_MCA_num_procs", "2")
    monkeypatch.setenv("OMPI_MCA_btl", "self,sm")
    monkeypatch.setenv("OMPI_ALLOW_RUN_AS_ROOT", "1")
    env = anchor.launch_env()
    assert "PMIX_RANK" not in env and "OMPI_COMM_WORLD_SIZE" not in env and "OMPI_MCA_num_procs" not in env
    assert env["OMPI_MCA_btl"] == "self,sm" and env["OMPI_ALLOW_RUN_AS_ROOT"] == "1"


@pytest.fixture(scope="module")
def c_anchor(tmp_path_factory):
    import os

    os.environ["MPIBENCH_CACHE"] = str(tmp_path_factory.mktemp("cache"))
    mpicc = cfloor.find_mpicc()
    assert mpicc is not None, "the embedded-mpi extra ships mpicc"
    return str(cfloor.build(mpicc, cfloor.ANCHOR_SOURCE))


@pytest.mark.mpi
def test_bench_times_the_anchor_as_its_own_row(tmp_path, monkeypatch, c_anchor):
    monkeypatch.setenv("MPIBENCH_MPIEXEC", shlex.join(mpirun_command()))
    job = run_mpi(2, ["bench", "--sizes", "4K,64K", "--strategies", "c_floor", "--anchor", c_anchor,
                      "--iterations", "3", "--rounds", "2", "--warmup", "1", "--no-model"], out=tmp_path, timeout=240)
    assert job.returncode == 0, job.text[-3000:]
    rows = job.csv("bench.csv")
    got = rows[rows.strategy == "anchor"]
    assert sorted(got.bytes) == [4096, 65536] and (got.time_avg_s.astype(float) > 0).all()
    assert (got.errors == "").all() and got.note.str.contains("checked by the tool").all()
    assert got.label.str.contains(c_anchor).all() and "launched by rank 0" in job.stdout
    assert (rows[rows.strategy != "anchor"].errors.astype(int) == 0).all()



@pytest.mark.mpi
@pytest.mark.parametrize("largest_bytes", [4, 4096, 65536, 1 << 20])
def test_the_c_anchor_starts_both_buffers_16_bytes_into_a_page(c_anchor, largest_bytes):
    """Below glibc's mmap threshold two mallocs in a row start 16 bytes apart modulo 4096 (the
    layout that stalls a reduction on 4K aliasing); the anchor's buffers start where bench's do,
    whatever the largest size it allocates for."""
    from mpirun import mpi_env, run_command

    job = run_command(mpirun_command() + ["-n", "2", c_anchor, "-m", f"4:{largest_bytes}", "-i", "2", "-x", "1"],
                      timeout=120, env=mpi_env())
    assert job.returncode == 0, job.text
    assert "# buffers start 16 and 16 bytes into a page (send, receive)" in job.stdout, job.stdout
    assert anchor.parse_table("osu", job.stdout)[largest_bytes].t_avg > 0

@pytest.mark.mpi
def test_an_anchor_that_fails_could_not_run(tmp_path, monkeypatch):
    broken = tmp_path / "osu_allreduce"
    broken.write_text("#!/bin/sh\necho no table\nexit 1\n")
    broken.chmod(0o755)
    monkeypatch.setenv("MPIBENCH_MPIEXEC", shlex.join(mpirun_command()))
    job = run_mpi(2, ["bench", "--sizes", "4K", "--strategies", "c_floor", "--anchor", str(broken),
                      "--iterations", "1", "--rounds", "1", "--no-model"], out=tmp_path / "out", timeout=180)
    assert job.returncode == 3, job.text[-3000:]
    assert "could not run" in job.stdout and "the anchor did not run" in job.stdout


@pytest.mark.parametrize("args", [["--anchor", "/nonexistent/IMB-MPI1"],
                                  ["--anchor", __file__], ["--anchor", "/bin/true", "--dtype", "float64"]])
def test_bad_anchor_exits_2_with_one_line(args):
    job = run_cli(["bench", "--sizes", "4K", *args])
    assert job.returncode == 2, job.text[-2000:]
    assert len(job.stderr.strip().splitlines()) == 1 and "--anchor" in job.stderr


NEVER_STARTED = "mpirun ... exited 213 without a figure for 4096 B: The PMIx server's listener thread failed to start."


@pytest.mark.parametrize("failures, tries, ok", [
    ([], 1, True),
    (["exited 1: no table"], 2, True),                      # any failure: once more
    (["exited 1: no table", "exited 1: no table"], 2, False),
    ([NEVER_STARTED, NEVER_STARTED], 3, True),              # never started twice: a third try
    (["exited 1: no table", NEVER_STARTED], 3, True),
    ([NEVER_STARTED, "exited 1: no table"], 2, False),     # the second failure was the tool's own
    ([NEVER_STARTED] * 3, 3, False),
])
def test_an_anchor_launch_is_tried_again_as_its_failure_allows(monkeypatch, failures, tries, ok):
    from mpibench.job.bench.rounds import RoundTimes

    made, slept = [], []

    def launch(*args):
        made.append(args)
        if len(made) <= len(failures):
            raise anchor.AnchorFailed(failures[len(made) - 1])
        return RoundTimes(1e-6, 2e-6, 3e-6)

    monkeypatch.setattr(anchor, "_launch", launch)
    monkeypatch.setattr(anchor.time, "sleep", slept.append)
    if ok:
        assert anchor.run_once("IMB-MPI1", 4096, 2, 10, 1).t_avg == 2e-6
    else:
        with pytest.raises(anchor.AnchorFailed):
            anchor.run_once("IMB-MPI1", 4096, 2, 10, 1)
    assert len(made) == tries
    assert slept == list(anchor.RETRY_PAUSES_S[:tries - 1])
