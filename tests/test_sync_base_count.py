"""The reduced count as recorded: an int while it is one, the float it holds otherwise (NaN, inf,
a fraction), so a poisoned buffer is written into the history and judged instead of raising."""
import math

import numpy as np
import pytest

from mpibench.engine.history import count_value
from mpibench.kernels import select_backend
from mpibench.sync.base import Reduction, SyncStrategy


class Held(SyncStrategy):
    def reduce(self, buf):
        return Reduction((0,), [(0, len(buf))], len(buf))


@pytest.mark.parametrize("slot,expected", [(48.0, 48), (0.0, 0), (math.nan, math.nan), (math.inf, math.inf),
                                           (-math.inf, -math.inf), (2.5, 2.5)])
def test_total_count_keeps_what_the_slot_holds(slot, expected):
    strategy = Held(None, select_backend("cpu"), 3)
    strategy.buffer[-1] = np.float32(slot)
    got = strategy.total_count()
    if math.isnan(expected):
        assert math.isnan(got)
    else:
        assert got == expected and type(got) is type(expected)
    assert (math.isnan(count_value(slot)) if math.isnan(slot) else count_value(slot) == expected)
