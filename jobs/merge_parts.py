"""Merge one CSV from several part folders (array-task slices, scaling runs) into one.

    python jobs/merge_parts.py --name sweep.csv --out DIR PART_DIR...

Rows keep their columns; a ``part`` column names the folder each row came from.
A part folder that lacks the CSV, or whose ``exit_status`` file says its task
failed, is reported. Exit status: 0 when every part is present and succeeded
and (with ``--fail-column C``) no row has a non-zero ``C``; 1 otherwise; 2 for
bad usage. Uses only the standard library, so it runs before any install.
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


def merge(name: str, parts: list[Path], out: Path) -> tuple[list[dict], list[str]]:
    """Concatenate ``part/name`` for every part into ``out/name``; return rows and problems."""
    columns: list[str] = ["part"]
    rows: list[dict] = []
    problems: list[str] = []
    for part in parts:
        status = part_status(part)
        if status not in (None, 0):
            problems.append(f"{part.name}: its job exited with status {status}")
        path = part / name
        if not path.exists():
            problems.append(f"{part.name}: no {name}")
            continue
        fields, part_rows = read_rows(path)
        columns += [c for c in fields if c not in columns]
        rows += [{"part": part.name, **row} for row in part_rows]
    out.mkdir(parents=True, exist_ok=True)
    with (out / name).open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=columns, restval="")
        writer.writeheader()
        writer.writerows(rows)
    return rows, problems


def flagged(rows: list[dict], column: str) -> list[dict]:
    """Rows whose ``column`` is neither empty nor zero."""
    return [r for r in rows if r.get(column, "").strip() not in ("", "0", "0.0")]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--name", required=True, help="CSV file name inside each part folder")
    ap.add_argument("--out", required=True, type=Path, help="folder for the merged CSV")
    ap.add_argument("--fail-column", help="fail when a row has a non-zero value here")
    ap.add_argument("--show-column", help="print this column for each failing row")
    ap.add_argument("--expect", type=int, help="number of parts there must be")
    ap.add_argument("parts", nargs="*", type=Path)
    args = ap.parse_args(argv)
    rows, problems = merge(args.name, args.parts, args.out)
    if args.expect is not None and len(args.parts) != args.expect:
        problems.append(f"{len(args.parts)} parts found, {args.expect} expected")
    bad = flagged(rows, args.fail_column) if args.fail_column else []
    print(f"{args.out / args.name}: {len(rows)} rows from {len(args.parts)} parts")
    for row in bad:
        detail = row.get(args.show_column, "") if args.show_column else ""
        print(f"  {row['part']}: {args.fail_column}={row[args.fail_column]} {detail}".rstrip())
    for problem in problems:
        print(f"  problem: {problem}", file=sys.stderr)
    return 1 if bad or problems else 0


if __name__ == "__main__":
    sys.exit(main())
