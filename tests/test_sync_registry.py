"""The strategy registry: names, module:Class specs, refusals (one line, exit 2), cost lookup."""
from __future__ import annotations

import pytest

from mpibench.base.config import UsageError
from mpibench.sync import registry
from mpibench.sync.base import SyncStrategy
from mpirun import run_cli


class NotAStrategy:
    pass


class Abstract(SyncStrategy):
    name = "abstract"


class ReadsUnknownOption(SyncStrategy):
    option_names = ("no_such_option",)

    def reduce(self, buf):
        raise AssertionError


def test_builtins_and_checked_strategies():
    assert list(registry.BUILTIN) == ["native", "ring", "ps", "rd", "rabenseifner", "hier", "auto",
                                      "zero-ring", "zero-halving", "hsdp"]
    assert set(registry.SHARDED) <= set(registry.BUILTIN) and not set(registry.SHARDED) & set(registry.CHECKED)
    assert set(registry.CHECKED) <= set(registry.BUILTIN) and "native" not in registry.CHECKED
    for name in registry.BUILTIN:
        assert registry.lookup(name).source == "built-in"


@pytest.mark.parametrize("spec, message", [
    ("nope", "unknown strategy 'nope'"),
    ("test_sync_registry:NotAStrategy", "is not a SyncStrategy subclass"),
    ("test_sync_registry:Abstract", "does not implement reduce"),
    ("test_sync_registry:ReadsUnknownOption", "unknown option(s) no_such_option"),
    ("test_sync_registry:Missing", "has no 'Missing'"),
    ("no_such_module_here:X", "cannot import 'no_such_module_here'"),
])
def test_bad_names_are_refused_with_the_reason(spec, message):
    with pytest.raises(UsageError, match=message.replace("(", r"\(").replace(")", r"\)")):
        registry.validate([spec])


def test_empty_list_is_refused():
    with pytest.raises(UsageError, match="no strategy given"):
        registry.validate([])


def test_module_spec_resolves_to_the_class():
    entry = registry.lookup("mpibench.sync.rd:RecursiveDoubling")
    assert entry.cls is registry.BUILTIN["rd"] and entry.source.startswith("module")


def test_cost_functions_come_from_the_strategy_files():
    from mpibench.results.calibration import Calibration
    from mpibench.results import costmodel

    cal = Calibration(alpha_s=2e-6, beta_s_per_byte=1e-10, gamma_cache_s_per_byte=2e-10,
                      gamma_memory_s_per_byte=4e-10, compute_fixed_s=0, compute_per_sample_s=0,
                      cores=2, ranks_on_host=2, ranks=2)
    for name in ("rd", "rabenseifner", "hier", "auto"):
        assert costmodel.sync_s(cal, name, 8, 1 << 20) > 0
    # rd pays log2(p) whole-buffer rounds, rabenseifner 2(p-1)/p of it: rd wins small, loses large
    assert costmodel.sync_s(cal, "rd", 8, 1 << 10) < costmodel.sync_s(cal, "rabenseifner", 8, 1 << 10)
    assert costmodel.sync_s(cal, "rd", 8, 64 << 20) > costmodel.sync_s(cal, "rabenseifner", 8, 64 << 20)
    assert costmodel.sync_s(cal, "auto", 8, 64 << 20) == costmodel.sync_s(cal, "rabenseifner", 8, 64 << 20)
    # a non-power of two pays the fold on top of the power of two below it
    assert costmodel.sync_s(cal, "rd", 5, 1 << 10) > costmodel.sync_s(cal, "rd", 4, 1 << 10)
    with pytest.raises(ValueError):
        costmodel.sync_s(cal, "nope", 2, 1)


@pytest.mark.parametrize("args", [["run", "--strategy", "nope"], ["bench", "--strategies", "rd,nope"],
                                  ["sweep", "--strategies", "nope"], ["selftest", "--strategy", "nope"],
                                  ["run", "--strategy", "os.path:join"]])
def test_every_command_refuses_a_bad_strategy_in_one_line(args):
    job = run_cli(args)
    assert job.returncode == 2, job.text
    assert job.stderr.count("\n") == 1 and "Traceback" not in job.text


def test_strategies_command_lists_every_builtin():
    job = run_cli(["strategies"])
    assert job.returncode == 0
    names = [line.split()[0] for line in job.stdout.splitlines()]
    assert names[:len(registry.BUILTIN)] == list(registry.BUILTIN)


def test_the_options_builder_refuses_names_no_strategy_reads():
    from mpibench.sync.registry import OPTIONS, strategy_options

    assert strategy_options(4096, 2) == {"bucket_bytes": 4096, "ps_shards": 2}
    assert strategy_options(1, 0, ranks_per_node=2)["ranks_per_node"] == 2
    with pytest.raises(ValueError, match="straggler_deadline"):
        strategy_options(1, 0, straggler_deadline=1.0)
    assert "straggler_deadline" not in OPTIONS


def test_every_listed_option_is_read_by_a_built_in_strategy():
    """OPTIONS documents what strategies read: an entry nothing reads is a dead promise."""
    from pathlib import Path

    from mpibench.sync.registry import OPTIONS

    sources = "".join(p.read_text() for p in Path(__file__).resolve().parents[1].joinpath("mpibench", "sync")
                      .glob("*.py") if p.name != "registry.py")
    unread = [name for name in OPTIONS if f'options.get("{name}")' not in sources]
    assert unread == []


@pytest.mark.parametrize("name", list(registry.BUILTIN))
def test_every_builtin_record_carries_its_cost_model(name):
    """The cost model reads each strategy's own record: a time, a message size, the line printed
    beside its figures. A built-in missing one would fall back to another's model unnoticed."""
    from mpibench.results.calibration import Calibration

    cls = registry.BUILTIN[name]
    assert callable(getattr(cls, "cost_s", None)) and cls.cost_assumption.startswith(("PS" if name == "ps" else name) + ":")
    cal = Calibration(2e-6, 1e-9, 3e-10, 5e-10, 0.0, 0.0, 2, 2, 4)
    for p, n in [(1, 4096.0), (2, 0.0), (3, 1000.0), (8, float(1 << 20))]:
        t = cls.cost_s(cal, p, n, {})
        assert t >= 0 and (t == cal.call_overhead_s if p == 1 else t >= cal.alpha_s)
        assert 0 < registry.message_bytes(name, p, max(n, 1.0)) <= max(n, 1.0)
    assert cls.cost_assumption in registry.cost_assumptions()


def test_bench_rows_of_mpis_own_allreduce_are_priced_as_native():
    from mpibench.results.calibration import Calibration

    cal = Calibration(2e-6, 1e-9, 3e-10, 5e-10, 0.0, 0.0, 2, 2, 4)
    native = registry.cost_function("native")(cal, 4, 1e6)
    for row in ("blocking", "c_floor", "anchor"):
        assert registry.cost_function(row)(cal, 4, 1e6) == native
        assert registry.message_bytes(row, 4, 1e6) == registry.message_bytes("native", 4, 1e6)
    assert registry.cost_function("no-such-row") is None


def test_every_builtin_but_hsdp_gives_the_simulator_its_messages():
    """A strategy's rounds (or the strategies standing for it) live on its record; one without
    either cannot be predicted, which is known only of hsdp (its replica swap is not a pattern yet)."""
    import numpy as np

    unpriced = set()
    for name, cls in registry.BUILTIN.items():
        own = cls.message_rounds(4, 4096.0, [np.arange(4)])
        stand_ins = cls.modelled_as(4096.0)
        assert own is None or not stand_ins, name  # one or the other
        assert all(s in registry.BUILTIN and registry.BUILTIN[s].message_rounds(4, 1.0, [np.arange(4)])
                   for s in stand_ins), name
        if own is None and not stand_ins:
            unpriced.add(name)
    assert unpriced == {"hsdp"}


def test_runs_default_strategy_is_the_registrys_baseline():
    from mpibench.base.config import RunConfig

    assert RunConfig().strategy == registry.BASELINE and registry.BUILTIN[registry.BASELINE].baseline
