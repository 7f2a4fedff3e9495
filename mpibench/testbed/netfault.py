"""A real network partition on a seeded schedule, applied from outside the job.

The communicator wrapper cannot cut a network: a real partition is nftables
rules in the hosts' namespaces (:mod:`.cut`), put in place by the process that
launched the job when the job reaches the scheduled step, and lifted
``hold_s`` seconds later.

Landing the cut at the same point of every run is what makes a replay give the
same rows. The job's own schedule (a TOML file the driver writes) delays the
first worker of the cut-off side by ``gate_s`` before it computes step
``at_step``; the driver cuts as soon as ``steps.csv`` shows step ``at_step - 1``
committed, i.e. while that worker sleeps and before any message of step
``at_step`` has left it. The delay is an ordinary, recorded fault; everything
else about the partition is in ``netfaults.csv`` beside the run's records,
apart from the emulated partitions of ``faults.csv``.
"""
from __future__ import annotations

import csv
import io
import os
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from . import cut
from .netns import Testbed

SEED_PURPOSE = 0x6E6574  # "net": keeps this draw apart from the run's own streams
GATE_S = 1.0
NETFAULT_COLUMNS = ["scenario", "strategy", "step", "kind", "hosts", "workers", "detail",
                    "at_s"]


@dataclass(frozen=True)
class NetPartition:
    """Cut ``sides`` (host indices) apart before step ``at_step``; heal ``hold_s`` later."""

    sides: tuple[tuple[int, ...], ...]
    at_step: int
    hold_s: float
    gate_s: float = GATE_S

    def text(self) -> str:
        sides = " | ".join(" ".join(f"h{h}" for h in side) for side in self.sides)
        return f"network partition [{sides}] before step {self.at_step}, healed after {self.hold_s:g} s"

    def workers(self, side: int, ranks_per_host: int) -> tuple[int, ...]:
        return tuple(h * ranks_per_host + r for h in self.sides[side] for r in range(ranks_per_host))


def draw(seed: int, hosts: int, steps: int, hold_s: float) -> NetPartition:
    """A seeded cut: a minority of hosts (never host 0, whose worker 0 records) at a step
    in the first half of the run."""
    if hosts < 2:
        raise ValueError("a network partition needs at least 2 hosts")
    if steps < 3:
        raise ValueError("a network partition needs at least 3 steps")
    rng = np.random.default_rng(np.random.SeedSequence([seed, SEED_PURPOSE]))
    size = int(rng.integers(1, max(1, (hosts - 1) // 2) + 1))
    minority = tuple(sorted(int(h) for h in rng.choice(np.arange(1, hosts), size, replace=False)))
    majority = tuple(h for h in range(hosts) if h not in minority)
    at_step = int(rng.integers(1, max(2, steps // 2)))
    return NetPartition((majority, minority), at_step, hold_s)


def gate_toml(partition: NetPartition, ranks_per_host: int, name: str) -> str:
    """The job's own schedule: the gate delay that holds the cut-off side at the step."""
    gate_worker = partition.workers(1, ranks_per_host)[0]
    return (f'name = "{name}"\n[[delay]]\nrank = {gate_worker}\nsteps = [{partition.at_step}]\n'
            f'seconds = {partition.gate_s:g}\nwhere = "compute"\n')


@dataclass
class Timeline:
    """What the driver did and when (seconds since launch)."""

    events: list[tuple[str, float, int]] = field(default_factory=list)  # (what, at_s, steps seen)
    dropped: dict[str, int] = field(default_factory=dict)
    problem: str = ""

    def at(self, what: str) -> float | None:
        return next((t for w, t, _ in self.events if w == what), None)


class CutDriver(threading.Thread):
    """Follows ``out/steps.csv``; cuts when ``at_step - 1`` is committed, heals ``hold_s`` later.

    Always heals: when the job ends first, when ``stop()`` is called, and on errors.
    """

    def __init__(self, testbed: Testbed, partition: NetPartition, out: Path, started_s: float):
        super().__init__(daemon=True)
        self.testbed, self.partition, self.out = testbed, partition, Path(out)
        self.started_s = started_s
        self.timeline = Timeline()
        self._halt = threading.Event()

    def stop(self) -> None:
        self._halt.set()
        self.join(timeout=30)

    def run(self) -> None:
        try:
            self._follow()
        except Exception as exc:  # the job goes on; the verdict reports the driver's problem
            self.timeline.problem = f"cut driver failed: {exc}"
        finally:
            if self.timeline.at("cut") is not None and self.timeline.at("heal") is None:
                self._heal()

    def _note(self, what: str, committed: int | None = None) -> None:
        seen = self._committed() if committed is None else committed
        self.timeline.events.append((what, time.monotonic() - self.started_s, seen))

    def _follow(self) -> None:
        before = self.partition.at_step - 1
        while not self._halt.is_set():
            if committed_steps(self.out) and max(committed_steps(self.out)) >= before:
                break
            self._halt.wait(0.01)
        else:
            return
        self._note("seen")
        cut.cut(self.testbed, self.partition.sides)
        self._note("cut")
        seen, done = self.timeline.at("seen"), self.timeline.at("cut")
        if done - seen > self.partition.gate_s:
            self.timeline.problem = (f"the cut took {done - seen:.2f} s, longer than the "
                                     f"{self.partition.gate_s:g} s gate: it may have landed late")
        self._halt.wait(self.partition.hold_s)
        self._heal()

    def _heal(self) -> None:
        committed = self._committed()  # counted before the heal lets anything through
        self.timeline.dropped = cut.dropped_packets(self.testbed)
        cut.heal(self.testbed)
        self._note("heal", committed)

    def _committed(self) -> int:
        steps = committed_steps(self.out)
        return len(steps)


def committed_steps(out: Path) -> list[int]:
    """Steps in ``out/steps.csv`` so far (rows are flushed as they are committed)."""
    # Read once, then parse: a DictReader over the growing file could read an empty header
    # and then a row written meanwhile (zip over no field names: a TypeError in CI).
    try:
        text = (Path(out) / "steps.csv").read_text()
    except OSError:
        return []
    return [int(row["step"]) for row in csv.DictReader(io.StringIO(text))
            if (row.get("step") or "").isdigit()]


def write_netfaults(out: Path, scenario: str, strategy: str, partition: NetPartition,
                    ranks_per_host: int, timeline: Timeline) -> Path:
    """``netfaults.csv``: the cut and the heal, with the hosts and workers on each side."""
    path = Path(out) / "netfaults.csv"
    hosts = " | ".join(" ".join(f"h{h}" for h in side) for side in partition.sides)
    workers = " | ".join(" ".join(map(str, partition.workers(i, ranks_per_host)))
                         for i in range(len(partition.sides)))
    rows = []
    for what, at_s, _ in timeline.events:
        if what == "cut":
            rows.append([scenario, strategy, partition.at_step, "network-partition", hosts, workers,
                         "all traffic between the sides dropped (nftables, input)", f"{at_s:.3f}"])
        elif what == "heal":
            rows.append([scenario, strategy, partition.at_step, "network-heal", hosts, workers,
                         f"rules removed after {partition.hold_s:g} s", f"{at_s:.3f}"])
    with open(path, "w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(NETFAULT_COLUMNS)
        writer.writerows(rows)
    os.chmod(path, 0o644)
    return path
