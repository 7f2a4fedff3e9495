"""Exit statuses of one scenario launched many times: clean exits, alarms, hangs.

Launches ``mpirun -n N python -m mpibench run --scenario S --recovery R`` again
and again (each under ``timeout -k``, its own process group, stdin closed) and
counts the launcher's exit statuses, the runs that hung (killed by the
timeout), the processes whose MPI_Finalize was ended by a finalize watch
(a line ``MPI_Finalize did not return`` on stderr; exit 142, which the
launcher does not pass on under ``state_base_recoverable``: versions that
finalised under an alarm after a failure can be instrumented to print it),
the runs whose exit status differs from the verdict they printed, and the
wall time. The printed verdict is read from the summary table
(violations column) and from ``stuck:`` lines.

    python lab/soak/exit_statuses.py [--runs 50] [--ranks 3]
        [--scenario kill-mid-reduction] [--recovery respawn] [--timeout 90] [--run-args '...']
"""
from __future__ import annotations

import argparse
import collections
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests"))
from mpirun import mpi_env, mpirun_command  # noqa: E402


def printed_verdict(stdout: str) -> int | None:
    """1 when the run printed a violation or a stuck step, 0 when its table is clean, else None."""
    if "violation:" in stdout or "stuck:" in stdout:
        return 1
    lines = stdout.splitlines()
    for i, line in enumerate(lines):
        if line.startswith("scenario") and "violations" in line and i + 2 < len(lines):
            parts = lines[i + 2].split()
            return 1 if len(parts) >= 5 and parts[4].isdigit() and int(parts[4]) else 0
    return None


FINALIZE_HUNG = "MPI_Finalize did not return"


def launch(args, python: str) -> tuple[int, float, int | None, int, str]:
    with tempfile.TemporaryDirectory() as out:
        cmd = ["timeout", "-k", "10", str(args.timeout), *mpirun_command(), "-n", str(args.ranks),
               python, "-m", "mpibench", "run", "--strategy", args.strategy, "--scenario",
               args.scenario, "--recovery", args.recovery, "--steps", str(args.steps),
               *args.run_args.split(), "--out", out]
        start = time.perf_counter()
        proc = subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                              env=mpi_env(), start_new_session=True)
        wall_s = time.perf_counter() - start
    return (proc.returncode, wall_s, printed_verdict(proc.stdout), proc.stderr.count(FINALIZE_HUNG),
            proc.stdout[-600:] + proc.stderr[-1500:])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--ranks", type=int, default=3)
    parser.add_argument("--scenario", default="kill-mid-reduction")
    parser.add_argument("--recovery", default="respawn")
    parser.add_argument("--strategy", default="ring")
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--timeout", type=int, default=90)
    parser.add_argument("--run-args", default="", help="more run options, e.g. '--run-parts mpibench.selftest.variants:stale-rejoin'")
    parser.add_argument("--python", default=sys.executable, help="interpreter with mpibench installed")
    parser.add_argument("--show", type=int, default=2, help="print the output tail of this many odd runs")
    args = parser.parse_args()
    codes: collections.Counter = collections.Counter()
    walls, mismatched, shown, alarmed_runs, alarms = [], 0, 0, 0, 0
    for i in range(args.runs):
        code, wall_s, verdict, alarmed, tail = launch(args, args.python)
        hung = code in (124, 137)
        codes["hang" if hung else code] += 1
        walls.append(wall_s)
        alarms += alarmed
        alarmed_runs += int(alarmed > 0)
        odd = hung or verdict is None or code != verdict or alarmed > 0
        mismatched += int(hung or verdict is None or code != verdict)
        print(f"run {i + 1}: exit {code} verdict {verdict} finalize-alarms {alarmed} {wall_s:.1f} s"
              f"{'  <-- odd' if odd else ''}", flush=True)
        if odd and shown < args.show:
            shown += 1
            print("    " + tail.replace("\n", "\n    "), flush=True)
    print(f"{args.runs} runs of {args.scenario} --recovery {args.recovery} at -n {args.ranks}: "
          f"exit statuses {dict(sorted(codes.items(), key=str))}; runs with a process ended by the "
          f"finalize alarm (142) {alarmed_runs} ({alarms} processes); exit differs from the printed "
          f"verdict (or none printed) in {mismatched}; wall median {statistics.median(walls):.1f} s, "
          f"max {max(walls):.1f} s")


if __name__ == "__main__":
    main()
