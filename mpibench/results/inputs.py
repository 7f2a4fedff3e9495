"""The files a report is built from, read once and checked for belonging to one run.

A folder holds one run (see :mod:`mpibench.job.outdir`); the report still checks
that ``run.json`` and the CSVs tell the same story (plan, rank count) and says
so on the page when they do not. A folder without any result file, or with a
file that cannot be read as what its name says, is a ReportInputError: the
command line turns it into one line and exit status 2.
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass, field

import pandas as pd

CSV_FILES = ("steps.csv", "invariants.csv", "faults.csv", "bench.csv", "scaling.csv", "comparison.csv",
             "sweep.csv", "findings.csv")
# The columns each reader relies on; a file without them is not what its name says.
REQUIRED_COLUMNS = {
    "steps.csv": ("scenario", "strategy", "step", "effective_batch", "loss_mean"),
    "invariants.csv": ("scenario", "strategy", "step", "invariant", "passed"),
    "faults.csv": ("scenario", "strategy", "step", "kind"),
    "bench.csv": ("strategy", "ranks", "bytes", "time_max_s", "tag"),
    "scaling.csv": ("strategy", "mode", "ranks", "step_time_s", "tag"),
    "comparison.csv": ("kind", "strategy", "ranks", "measured_s", "modelled_s", "within"),
    "sweep.csv": ("case", "violations"),
    "findings.csv": ("case",),
}
# A main job's sweep may sit in a sub-folder of the run's folder.
SWEEP_FOLDERS = ("", "sweep")


class ReportInputError(ValueError):
    """The folder holds no results, or a file in it cannot be read."""


@dataclass
class RunFiles:
    """Everything read from one output folder; a missing file is None."""

    out_dir: str
    info: dict = field(default_factory=dict)
    verdict: dict | None = None
    sweep_json: dict | None = None
    frames: dict[str, pd.DataFrame | None] = field(default_factory=dict)

    def __getitem__(self, name: str) -> pd.DataFrame | None:
        return self.frames.get(name)

    def rows(self, name: str) -> int:
        frame = self.frames.get(name)
        return 0 if frame is None else len(frame)


def read_csv(path: str, name: str) -> pd.DataFrame | None:
    if not os.path.exists(path) or os.path.getsize(path) == 0:
        return None
    try:
        frame = pd.read_csv(path, keep_default_na=False, na_values=[""])
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError, ValueError) as exc:
        raise ReportInputError(f"{path}: not a readable CSV ({first_line(exc)})") from None
    absent = [c for c in REQUIRED_COLUMNS.get(name, ()) if c not in frame.columns]
    if absent:
        raise ReportInputError(f"{path}: not an mpibench {name} (no column {', '.join(absent)})")
    return frame


def read_json(path: str) -> dict | None:
    if not os.path.exists(path):
        return None
    try:
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
    except (OSError, ValueError, UnicodeDecodeError) as exc:
        raise ReportInputError(f"{path}: not readable JSON ({first_line(exc)})") from None
    if not isinstance(data, dict):
        raise ReportInputError(f"{path}: expected a JSON object")
    return data


def first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0][:160] if text else type(exc).__name__


def load(out_dir: str) -> RunFiles:
    """Read every result file in ``out_dir``; ReportInputError when there is none or one is broken."""
    files = RunFiles(out_dir)
    files.info = read_json(os.path.join(out_dir, "run.json")) or {}
    files.verdict = read_json(os.path.join(out_dir, "verdict.json"))
    for name in CSV_FILES:
        if name in ("sweep.csv", "findings.csv"):
            continue
        files.frames[name] = read_csv(os.path.join(out_dir, name), name)
    for sub in SWEEP_FOLDERS:
        folder = os.path.join(out_dir, sub)
        sweep = read_csv(os.path.join(folder, "sweep.csv"), "sweep.csv")
        if sweep is not None or os.path.exists(os.path.join(folder, "sweep.json")):
            files.frames["sweep.csv"] = sweep
            files.frames["findings.csv"] = read_csv(os.path.join(folder, "findings.csv"), "findings.csv")
            files.sweep_json = read_json(os.path.join(folder, "sweep.json"))
            break
    if not files.info and files.verdict is None and files.sweep_json is None \
            and all(f is None for f in files.frames.values()):
        raise ReportInputError(f"{out_dir} holds no mpibench results (no run.json, verdict.json or CSVs)")
    return files


# ----------------------------------------------------------------------------- one run or two
def plan_pairs(files: RunFiles) -> list[tuple[str, str]]:
    """(scenario, strategy) in plan order: run.json's plan, else the order rows first appear."""
    plan = files.info.get("plan")
    pairs: list[tuple[str, str]] = []
    if isinstance(plan, list):
        pairs = [tuple(str(p).split("/", 1)) for p in plan if "/" in str(p)]
    for name in ("steps.csv", "invariants.csv"):
        frame = files[name]
        if frame is not None:
            for pair in zip(frame.scenario.astype(str), frame.strategy.astype(str)):
                if pair not in pairs:
                    pairs.append(pair)
    return pairs


def disagreements(files: RunFiles) -> list[str]:
    """Where run.json and the CSVs disagree: signs of a folder holding more than one run."""
    found = []
    info, steps = files.info, files["steps.csv"]
    plan = info.get("plan")
    seen = set()
    for name in ("steps.csv", "invariants.csv"):
        frame = files[name]
        if frame is not None:
            seen |= set(zip(frame.scenario.astype(str), frame.strategy.astype(str)))
    if isinstance(plan, list):
        planned = {tuple(str(p).split("/", 1)) for p in plan}
        extra = sorted(seen - planned)
        if extra:
            found.append(f"the CSVs hold {len(extra)} scenario/strategy pair(s) that run.json's plan does not name "
                         f"(first: {'/'.join(extra[0])})")
    elif info.get("config") and seen:
        config = info["config"]
        if isinstance(config.get("scenario"), str) and isinstance(config.get("strategy"), str):
            others = sorted(p for p in seen if p != (config["scenario"], config["strategy"])
                            and not str(config["scenario"]).endswith(".toml"))
            if others:
                found.append(f"run.json describes a run of {config['scenario']}/{config['strategy']} but the CSVs "
                             f"also hold {'/'.join(others[0])}")
    ranks = info.get("ranks")
    if isinstance(ranks, int) and steps is not None and "members" in steps.columns and not steps.empty:
        largest = int(steps.members.astype(str).str.split().map(len).max())
        if largest > ranks:
            found.append(f"steps.csv has {largest} members in a step but run.json says {ranks} ranks")
    return found
