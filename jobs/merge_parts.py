"""Merge one CSV from several part folders (array-task slices, scaling runs) into one.

    python jobs/merge_parts.py --name sweep.csv --out DIR PART_DIR...

Rows keep their columns; a last column, ``part``, names the folder each row came from.
A part folder that lacks the CSV (unless ``--allow-missing``), or whose
``exit_status`` file says its task failed, is a problem; so is a row that breaks
a ``--require COLUMN=VALUE`` (e.g. ``violations=0``, ``outcome=ok``). Exit
status: 0 without problems, 1 with any (each printed), 2 for bad usage. Uses
only the standard library, so it runs with any Python.
"""
from __future__ import annotations

import argparse
import csv
import sys
from pathlib import Path


def read_rows(path: Path) -> tuple[list[str], list[dict]]:
    with path.open(newline="") as f:
        reader = csv.DictReader(f)
        return list(reader.fieldnames or []), list(reader)


def part_status(part: Path) -> int | None:
    """The exit status the part's job recorded, or None when it recorded none."""
    status = part / "exit_status"
    text = status.read_text().strip() if status.exists() else ""
    return int(text) if text.lstrip("-").isdigit() else None


def merge(name: str, parts: list[Path], out: Path,
          allow_missing: bool = False) -> tuple[list[dict], list[str]]:
    """Concatenate ``part/name`` for every part into ``out/name``; return rows and problems."""
    columns: list[str] = []
    rows: list[dict] = []
    problems: list[str] = []
    for part in parts:
        status = part_status(part)
        if status not in (None, 0):
            problems.append(f"{part.name}: its job exited with status {status}")
        path = part / name
        if not path.exists():
            if not allow_missing:
                problems.append(f"{part.name}: no {name}")
            continue
        fields, part_rows = read_rows(path)
        columns += [c for c in fields if c not in columns]
        rows += [{**row, "part": part.name} for row in part_rows]
    if not columns:  # no part had the CSV: write nothing rather than an empty table
        return rows, problems
    out.mkdir(parents=True, exist_ok=True)
    with (out / name).open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=columns + ["part"], restval="")
        writer.writeheader()
        writer.writerows(rows)
    return rows, problems


def requirement(text: str) -> tuple[str, str]:
    column, sep, value = text.partition("=")
    if not sep or not column:
        raise argparse.ArgumentTypeError(f"expected COLUMN=VALUE, got {text!r}")
    return column, value


def breaks(row: dict, requirements: list[tuple[str, str]]) -> list[str]:
    """The requirements a row breaks (a column the CSV lacks is not checked)."""
    return [f"{c}={row[c]}" for c, v in requirements if c in row and row[c].strip() != v]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--name", required=True, help="CSV file name inside each part folder")
    ap.add_argument("--out", required=True, type=Path, help="folder for the merged CSV")
    ap.add_argument("--require", type=requirement, action="append", default=[],
                    metavar="COLUMN=VALUE", help="every row must have this value (repeatable)")
    ap.add_argument("--show-column", help="print this column for each row that breaks a --require")
    ap.add_argument("--allow-missing", action="store_true", help="a part without the CSV is fine")
    ap.add_argument("--expect", type=int, help="number of parts there must be")
    ap.add_argument("parts", nargs="*", type=Path)
    args = ap.parse_args(argv)
    rows, problems = merge(args.name, args.parts, args.out, args.allow_missing)
    if args.expect is not None and len(args.parts) != args.expect:
        problems.append(f"{len(args.parts)} parts found, {args.expect} expected")
    print(f"{args.out / args.name}: {len(rows)} rows from {len(args.parts)} parts")
    for row in rows:
        broken = breaks(row, args.require)
        if broken:
            name = next(iter(row.values()))  # the CSV's first column names its row
            detail = row.get(args.show_column, "") if args.show_column else ""
            problems.append(f"{row['part']} {name}: {', '.join(broken)}\n    {detail}".rstrip())
    for problem in problems:
        print(f"  problem: {problem}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
