"""mpibench.base.parsing: the one reader of comma lists and sizes."""
import pytest
from hypothesis import given, strategies as st

from mpibench.base.config import UsageError
from mpibench.base.parsing import parse_list, parse_size


@given(st.lists(st.integers(min_value=0, max_value=10**6), min_size=1, max_size=8),
       st.sampled_from([",", ", ", " ,", ",,"]))
def test_a_written_list_reads_back(values, separator):
    assert parse_list(separator.join(map(str, values)), "--workers", int) == tuple(values)


@pytest.mark.parametrize("text", ["", " ", ",", " , ,"])
def test_an_empty_list_is_refused_by_name(text):
    with pytest.raises(UsageError, match="--workers"):
        parse_list(text, "--workers", int)


def test_an_item_the_cast_refuses_is_one_message():
    with pytest.raises(UsageError, match="cannot read --workers '2,x'"):
        parse_list("2,x", "--workers", int)


def test_a_bad_size_inside_a_list_keeps_the_size_message():
    with pytest.raises(UsageError, match="size '12Q'"):
        parse_list("4K,12Q", "--sizes", parse_size)


@pytest.mark.parametrize("text,expected", [("0", 0), ("1", 1), ("512", 512), ("4K", 4096), ("4k", 4096),
                                           ("1M", 1 << 20), ("16MiB", 16 << 20), ("2G", 2 << 30),
                                           ("1.5K", 1536), (" 8KB ", 8192)])
def test_sizes_read_as_binary_multiples(text, expected):
    assert parse_size(text) == expected


@given(st.integers(min_value=0, max_value=1 << 40), st.sampled_from([("", 1), ("K", 1 << 10), ("M", 1 << 20)]))
def test_any_whole_size_reads_back(number, unit):
    suffix, scale = unit
    assert parse_size(f"{number}{suffix}") == number * scale


@pytest.mark.parametrize("text", ["", "Q", "12Q", "-1", "0.5", "1.1K", "nan", "inf", "K"])
def test_unreadable_or_fractional_sizes_are_refused(text):
    with pytest.raises(UsageError):
        parse_size(text)


@pytest.mark.parametrize("variable,function", [("MPIBENCH_STRATEGIES", "main_strategies"),
                                               ("MPIBENCH_SCENARIOS", "main_scenarios")])
def test_a_misspelt_name_in_the_environment_is_bad_input(monkeypatch, variable, function):
    from mpibench.job import suite

    monkeypatch.setenv(variable, "none,ring,no-such-name")
    call = getattr(suite, function)
    with pytest.raises(UsageError, match="no-such-name"):
        call(4) if function == "main_scenarios" else call()
