"""Shared by every test: the tests folder on the import path, a closing summary that
says, one line per reason, which tests did not run and why (a skip is never silent),
and which tests must share a pytest worker."""
import atexit
import os
import shutil
import sys
import tempfile
from pathlib import Path

import pytest
from hypothesis import settings

sys.path.insert(0, str(Path(__file__).parent))

# Hypothesis checks contracts here, not speed: its per-example deadline (200 ms) failed a
# plan test on a loaded 2-core machine while every example held.
settings.register_profile("mpibench", deadline=None)
settings.load_profile("mpibench")

SUMMARY_TITLE = "tests that did not run, and why"

# The suite never writes where real runs on this machine read (auto's record of choices in
# ~/.cache/mpibench, the compiled C floor beside it): every test process, and every job a test
# launches (they inherit the environment), uses one cache folder of this session's own, made
# by the first process (pytest-xdist's workers inherit its variable) and removed by it at exit.
SESSION_CACHE_VARIABLE = "MPIBENCH_TEST_SESSION_CACHE"


def _session_cache() -> str:
    given = os.environ.get(SESSION_CACHE_VARIABLE)
    if given:
        return given
    folder = tempfile.mkdtemp(prefix="mpibench-test-cache-")
    os.environ[SESSION_CACHE_VARIABLE] = folder
    atexit.register(shutil.rmtree, folder, True)
    return folder


os.environ["MPIBENCH_CACHE"] = _session_cache()
os.environ.pop("MPIBENCH_AUTO_CHOICES", None)


def skip_reason(report) -> str:
    longrepr = report.longrepr
    text = longrepr[2] if isinstance(longrepr, tuple) and len(longrepr) == 3 else str(longrepr)
    return text.removeprefix("Skipped: ")


def skip_lines(reports) -> list[str]:
    """One line per reason: how many tests, in which files, and the reason."""
    groups: dict[str, list[str]] = {}
    for report in reports:
        groups.setdefault(skip_reason(report), []).append(report.nodeid.split("::")[0])
    return [f"{len(files)} skipped ({', '.join(sorted(set(files)))}): {reason}"
            for reason, files in sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0]))]


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    reports = [r for r in terminalreporter.stats.get("skipped", []) if r.when in ("setup", "call")]
    if not reports:
        return
    terminalreporter.section(SUMMARY_TITLE)
    for line in skip_lines(reports):
        terminalreporter.write_line(line)
    terminalreporter.write_line("(make system-deps installs the system packages these need, as root)")


# `make test` spreads single tests over two workers (pytest-xdist --dist loadgroup), so no
# one long file bounds the run. A file with a fixture wider than one test (module, class or
# package scope: an expensive main job whose outputs several tests read, a Slurm cluster, a
# testbed of network namespaces, a browser) runs whole on one worker, as it did file by file:
# each worker would otherwise build the fixture again, and its other tests could meet it on
# the machine (fixed namespace names, one cluster) at the same time.
SHARED_SCOPES = ("module", "class", "package")


def shares_a_fixture(item) -> bool:
    info = getattr(item, "_fixtureinfo", None)
    if info is None:
        return False
    return any(defs and defs[-1].scope in SHARED_SCOPES for defs in info.name2fixturedefs.values())


# xdist hands out the groups first (most tests first), then single tests in collection order.
# Tests that start processes (an MPI job, a shell, a cluster) take seconds to minutes each and
# the rest milliseconds: their files go first, so that the two workers end together instead
# of one waiting on a long test that came last alphabetically. Only the order changes.
LAUNCH_MARKERS = ("mpi", "slurm", "multihost", "browser")
LAUNCH_HELPERS = ("mpirun", "tests.mpirun", "subprocess", "doc_commands")


def starts_processes(item) -> bool:
    if any(item.get_closest_marker(name) for name in LAUNCH_MARKERS):
        return True
    names = vars(getattr(item, "module", None) or object()).values()
    return any(getattr(obj, "__module__", getattr(obj, "__name__", "")) in LAUNCH_HELPERS for obj in names)


@pytest.hookimpl(tryfirst=True)  # before xdist's worker reads the groups into the test ids
def pytest_collection_modifyitems(config, items):
    together = {item.nodeid.split("::")[0] for item in items if shares_a_fixture(item)}
    for item in items:
        path = item.nodeid.split("::")[0]
        if path in together:
            item.add_marker(pytest.mark.xdist_group(path))
    launching = {item.nodeid.split("::")[0] for item in items if starts_processes(item)}
    items.sort(key=lambda item: item.nodeid.split("::")[0] not in launching)  # stable: files stay whole


def pytest_runtest_setup(item):
    """Under ``--dist loadgroup`` a grouped test's id must carry its group: pytest-xdist puts it
    there, and a pytest whose test ids xdist cannot extend leaves it out, which splits a file
    over both workers (its shared fixtures built twice, its testbeds side by side)."""
    if (item.config.getoption("loadgroup", default=False) and item.get_closest_marker("xdist_group")
            and "@" not in item.nodeid):
        pytest.fail("pytest-xdist did not keep this file on one worker (its group is missing from "
                    "the test id): setup.cfg's test extra pins a pytest that this xdist supports")
