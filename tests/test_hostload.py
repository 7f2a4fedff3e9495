"""Each host's CPUs as the union of its ranks' affinity masks, whatever the binding
(gathered from real ranks in tests/test_launch_matrix.py)."""
from __future__ import annotations

import pytest

from mpibench.job.hostload import HostCores, busiest, oversubscription_note


@pytest.mark.parametrize("ranks,cores,per_rank,overlap,over,binding", [
    (2, 2, (1, 1), False, False, "disjoint: 1 CPU(s) per rank"),  # Open MPI's default at -n 2, --bind-to core
    (2, 2, (2, 2), True, False, "shared: each rank may use all 2 CPU(s)"),  # --bind-to none
    (4, 2, (2, 2, 2, 2), True, True, "shared: each rank may use all 2 CPU(s)"),  # -n 4 --oversubscribe
    (2, 1, (1, 1), True, True, "shared: each rank may use all 1 CPU(s)"),  # two ranks bound to one core
    (2, 8, (4, 4), False, False, "disjoint: 4 CPU(s) per rank"),  # Slurm --cpus-per-task=4
    (3, 3, (1, 2, 1), True, False, "overlapping masks: some ranks share CPUs"),
])
def test_binding_and_oversubscription(ranks, cores, per_rank, overlap, over, binding):
    host = HostCores("h", ranks, cores, per_rank, overlap)
    assert host.oversubscribed is over and host.binding == binding
    assert host.as_dict()["oversubscribed"] is over


def test_the_busiest_host_decides_the_note():
    quiet, crowded = HostCores("a", 2, 4, (2, 2), False), HostCores("b", 3, 2, (2, 2, 2), True)
    assert busiest([quiet, crowded]) is crowded
    assert oversubscription_note([quiet, crowded]) == "oversubscribed: 3 ranks time-share 2 CPU(s) on b; not a result"
    assert oversubscription_note([quiet]) == ""
