"""Planted defects in the simulated MPI library, each of a semantic the code relies on.

``python tests/sim_mutations.py`` applies each mutation below to the source in place, runs the
engine's own tests on it, restores the file (also on Ctrl-C; the file's hash is checked after),
and reports whether the tests caught it with a clear failure (pytest exit 1: an assertion
failed), let it pass (exit 0: a gap in the tests), or crashed (any other exit: collection or
internal error, not a clear report). Exit 0 only when every mutation was caught.

It edits the working tree, so it runs alone: not inside pytest and not beside other tests.
"""
from __future__ import annotations

import argparse
import hashlib
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TESTS = ["tests/test_sim_twin_semantics.py", "tests/test_sim_world.py", "tests/test_sim_buffers.py"]


@dataclass(frozen=True)
class Mutation:
    name: str
    semantic: str
    path: str
    before: str
    after: str


MUTATIONS = [
    Mutation("overtaking", "non-overtaking: a probe may see a later message first", "mpibench/sim/p2p.py",
             "and msg.source not in passed:", ":"),
    Mutation("bcast-root-0", "a broadcast takes rank 0's buffer, whatever the root", "mpibench/sim/collectives.py",
             "data = np.array(coll.contribs[root][1][0], copy=True)",
             "data = np.array(coll.contribs[ranks[0]][1][0], copy=True)"),
    Mutation("lands-early", "a receive writes its buffer when matched, before the receiver sees it done",
             "mpibench/sim/p2p.py", "        req.msg = msg  # lands when",
             "        req.msg = msg\n        req.outcome(INF)  # lands when"),
    Mutation("dead-peer-send", "every send completes, also a large one to a dead peer", "mpibench/sim/p2p.py",
             "inline = nbytes <= self.world.options.inline_send_bytes if inline is None else inline",
             "inline = True"),
    Mutation("agree-or", "agree returns the OR of the flags, not the AND", "mpibench/sim/collectives.py",
             "value &= int(flag)", "value |= int(flag)"),
    Mutation("send-aliases", "a send keeps the caller's buffer, not a copy", "mpibench/sim/handles.py",
             "data = np.array(buf, copy=True) if isinstance(buf, np.ndarray) else message(buf).read()",
             "data = buf if isinstance(buf, np.ndarray) else message(buf).read()"),
    Mutation("spec-count", "a message specification's count and displacement are ignored (the whole buffer goes)",
             "mpibench/sim/buffers.py", "return Message(raw, datatype, int(count), int(displ), blocks, keep)",
             "return Message(raw, datatype, raw.size // extent // blocks, 0, blocks, keep)"),
]


def run_tests() -> tuple[int, str]:
    proc = subprocess.run([sys.executable, "-m", "pytest", *TESTS, "-q", "-p", "no:cacheprovider", "-m", "not slow"],
                          cwd=ROOT, capture_output=True, text=True, timeout=900)
    failed = [line for line in proc.stdout.splitlines() if line.startswith(("FAILED", "ERROR"))]
    return proc.returncode, "; ".join(failed)[:400] or proc.stdout.strip().splitlines()[-1:][0]


def apply_and_test(m: Mutation) -> tuple[str, str]:
    path = ROOT / m.path
    original = path.read_bytes()
    text = original.decode()
    if text.count(m.before) != 1:
        return "not applied", f"{m.before!r} is not in {m.path} exactly once"
    try:
        path.write_text(text.replace(m.before, m.after))
        code, detail = run_tests()
    finally:
        path.write_bytes(original)
    assert hashlib.sha256(path.read_bytes()).digest() == hashlib.sha256(original).digest()
    verdict = {0: "PASSED (not caught)", 1: "caught"}.get(code, f"crash (pytest exit {code})")
    return verdict, detail


def main(argv=None) -> int:
    argparse.ArgumentParser(description=__doc__.split("\n\n")[0], epilog="It takes no options.").parse_args(argv)
    code, detail = run_tests()
    if code != 0:
        print(f"the honest library does not pass its tests: {detail}")
        return 1
    caught = 0
    for m in MUTATIONS:
        start = time.perf_counter()
        verdict, detail = apply_and_test(m)
        caught += verdict == "caught"
        print(f"{m.name:16} {verdict:20} {time.perf_counter() - start:5.1f} s  {m.semantic}\n{'':16} {detail}",
              flush=True)
    print(f"{caught} of {len(MUTATIONS)} planted defects caught")
    return 0 if caught == len(MUTATIONS) else 1


if __name__ == "__main__":
    sys.exit(main())
