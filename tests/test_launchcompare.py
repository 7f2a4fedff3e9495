"""compare over launches: B over A with a rank-test interval, on synthetic launches and through the CLI."""
from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mpibench.base.records import BENCH_COLUMNS
from mpibench.results.launchcompare import compare_launches
from mpirun import run_cli

rng = np.random.default_rng(20161)


def noisy(n: int, scale: float, spread: float) -> list[float]:
    return list(scale * np.exp(rng.normal(0.0, spread, n)))


def test_a_known_doubling_is_slower_and_its_inverse_faster():
    a, b = noisy(6, 1e-3, 0.03), noisy(6, 2e-3, 0.03)
    slow, fast = compare_launches(a, b, 0.1), compare_launches(b, a, 0.1)
    assert slow.verdict == "slower" and 1.8 < slow.ratio < 2.2 and slow.low > 1.1
    assert fast.verdict == "faster" and fast.high < 1 / 1.1


def test_a_shift_inside_the_margin_with_little_noise_is_indistinguishable():
    got = compare_launches(noisy(8, 1e-3, 0.005), noisy(8, 1.02e-3, 0.005), 0.1)
    assert got.verdict == "indistinguishable" and 1 / 1.1 <= got.low <= got.high <= 1.1


def test_noise_wider_than_the_margin_cannot_tell():
    # Launch states 4x apart on both sides: no claim either way.
    states = [1e-3, 4e-3, 1e-3, 4e-3, 1e-3, 4e-3]
    got = compare_launches(states, list(reversed(states)), 0.1)
    assert got.verdict == "cannot tell" and got.low < 1 < got.high


def test_one_launch_on_a_side_never_decides():
    got = compare_launches([1e-3], [5e-3], 0.1)
    assert got.verdict == "cannot tell" and got.a_launches == 1


def inverse(x: float) -> float:
    return math.inf if x == 0 else 1 / x


@settings(max_examples=20, deadline=None)
@given(st.lists(st.floats(1e-6, 1.0), min_size=1, max_size=6), st.lists(st.floats(1e-6, 1.0), min_size=1, max_size=6))
def test_swapping_the_sides_inverts_the_ratio_and_the_verdict(a, b):
    ab, ba = compare_launches(a, b, 0.1), compare_launches(b, a, 0.1)
    assert ab.ratio == pytest.approx(1 / ba.ratio)
    assert ab.low == pytest.approx(inverse(ba.high)) and ab.high == pytest.approx(inverse(ba.low))
    mirror = {"slower": "faster", "faster": "slower"}
    assert ba.verdict == mirror.get(ab.verdict, ab.verdict)


def launches(root, times_by_launch: list[float]):
    """A bench --launches folder: one launch-NN/bench.csv per time (one ring row at 4 KiB)."""
    for n, t in enumerate(times_by_launch, start=1):
        folder = root / f"launch-{n:02d}"
        folder.mkdir(parents=True)
        row = dict.fromkeys(BENCH_COLUMNS, "")
        row.update(strategy="ring", ranks=2, bytes=4096, time_max_s=t, tag="measured", dtype="float32",
                   in_place="true")
        pd.DataFrame([row]).to_csv(folder / "bench.csv", index=False)
    return root


def test_the_command_exits_1_only_on_a_regression_over_launches(tmp_path):
    a = launches(tmp_path / "a", noisy(6, 1e-3, 0.02))
    b = launches(tmp_path / "b", noisy(6, 2e-3, 0.02))
    slow = run_cli(["compare", str(a), str(b), "--threshold", "0.1", "--out", str(tmp_path / "t.csv")])
    assert slow.returncode == 1 and "slower" in slow.stdout, slow.text
    table = pd.read_csv(tmp_path / "t.csv")
    assert list(table.verdict) == ["slower"] and list(table.a_launches) == [6]
    back = run_cli(["compare", str(b), str(a), "--threshold", "0.1"])
    assert back.returncode == 0 and "faster" in back.stdout, back.text


def test_one_launch_against_launches_cannot_tell(tmp_path):
    a = launches(tmp_path / "a", noisy(6, 1e-3, 0.02))
    one = launches(tmp_path / "one", [3e-3])
    job = run_cli(["compare", str(a), str(one / "launch-01" / "bench.csv")])
    assert job.returncode == 0 and "cannot tell" in job.stdout, job.text


def _said(root, pages: str, settings: str, threads: str = "multiple (provided multiple)") -> None:
    """What each launch's header says it ran under (its stdout.txt)."""
    for folder in sorted(root.glob("launch-*")):
        (folder / "stdout.txt").write_text(f"# p=2  dtype float32\n# pages: {pages}\n"
                                           f"# MPI settings from the environment: {settings}\n"
                                           f"# MPI thread level: {threads}\nstrategy ...\n")


def test_compare_says_when_the_two_runs_ran_under_other_conditions(tmp_path):
    a = launches(tmp_path / "a", noisy(6, 1e-3, 0.02))
    b = launches(tmp_path / "b", noisy(6, 1e-3, 0.02))
    _said(a, "every buffer on 4 KiB pages", "OMPI_MCA_mpi_yield_when_idle=1")
    _said(b, "every buffer on 4 KiB pages", "OMPI_MCA_mpi_yield_when_idle=1 OMPI_MCA_smsc=^cma")
    job = run_cli(["compare", str(a), str(b)])
    assert job.returncode == 0, job.text
    assert "A and B ran under different conditions" in job.stdout
    assert "MPI settings: A OMPI_MCA_mpi_yield_when_idle=1; B OMPI_MCA_mpi_yield_when_idle=1 OMPI_MCA_smsc=^cma" \
        in job.stdout and "pages:" not in job.stdout
    _said(b, "every buffer on 4 KiB pages", "OMPI_MCA_mpi_yield_when_idle=1")
    same = run_cli(["compare", str(a), str(b)])
    assert "different conditions" not in same.stdout, same.text  # quiet when they agree
    _said(b, "every buffer on 4 KiB pages", "OMPI_MCA_mpi_yield_when_idle=1", "single (provided single)")
    threads = run_cli(["compare", str(a), str(b)])
    assert "MPI thread level: A multiple (provided multiple); B single (provided single)" in threads.stdout
    assert "MPI settings:" not in threads.stdout, threads.text
