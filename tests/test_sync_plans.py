"""The logarithmic algorithms' pure plans: fold, recursive halving/doubling, binomial trees.

Checked for every p and length hypothesis draws, with no MPI: the plans are
simulated on plain integer vectors (a rank's "buffer" is the set of ranks
whose data it holds), so a wrong partner, an unmatched message or a block
summed twice shows up as a wrong set.
"""
from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from mpibench.base.aggregate import check_pieces
from mpibench.sync import plans
from mpibench.sync.segments import bucket_plan

ps = st.integers(1, 70)


@settings(deadline=None)
@given(p=ps)
def test_fold_maps_onto_a_power_of_two_core_exactly_once(p):
    fold = plans.Fold(p)
    q = fold.core
    assert q & (q - 1) == 0 and q <= p < 2 * q
    core = [fold.core_rank(r) for r in range(p)]
    assert sorted(c for c in core if c is not None) == list(range(q))
    for r in range(p):
        if core[r] is not None:
            assert fold.rank_of(core[r]) == r
        partner = fold.partner(r)
        if partner is not None:  # pairs are mutual and exactly one of them sits out
            assert fold.partner(partner) == r
            assert fold.folded_out(r) != fold.folded_out(partner)
        else:
            assert not fold.folded_out(r)
    assert sum(fold.folded_out(r) for r in range(p)) == fold.extra


def _simulate_halving_doubling(q: int) -> list[list[frozenset]]:
    """Each core rank's blocks after reduce-scatter by halving and all-gather by doubling.

    A block value is the set of ranks summed into it; a send carries a copy.
    """
    blocks = [[frozenset({v}) for _ in range(q)] for v in range(q)]
    steps = {v: plans.halving_steps(q, v) for v in range(q)}
    for k in range(len(steps[0])):
        sent = {v: {b: blocks[v][b] for b in range(*steps[v][k].send)} for v in range(q)}
        for v in range(q):
            step = steps[v][k]
            assert steps[step.partner][k].partner == v  # partners agree
            assert steps[step.partner][k].send == step.keep  # what arrives is what is kept
            for b in range(*step.keep):
                incoming = sent[step.partner][b]
                assert not (incoming & blocks[v][b]), "a rank's data summed twice"
                blocks[v][b] = blocks[v][b] | incoming
    for k in reversed(range(len(steps[0]))):
        sent = {v: {b: blocks[v][b] for b in range(*steps[v][k].keep)} for v in range(q)}
        for v in range(q):
            step = steps[v][k]
            for b in range(*step.send):
                blocks[v][b] = sent[step.partner][b]
    return blocks


@settings(max_examples=60, deadline=None)
@given(exponent=st.integers(0, 6))
def test_halving_then_doubling_gives_every_rank_every_block_fully_summed(exponent):
    q = 1 << exponent
    everyone = frozenset(range(q))
    for v, blocks in enumerate(_simulate_halving_doubling(q)):
        assert all(b == everyone for b in blocks), f"rank {v}: {blocks}"


@settings(deadline=None)
@given(exponent=st.integers(0, 7), data=st.data())
def test_halving_keeps_one_half_and_sends_the_other_ending_on_its_owned_block(exponent, data):
    q = 1 << exponent
    v = data.draw(st.integers(0, q - 1))
    lo, hi = 0, q
    for step in plans.halving_steps(q, v):
        halves = sorted([step.keep, step.send])
        assert halves[0][0] == lo and halves[0][1] == halves[1][0] and halves[1][1] == hi
        assert halves[0][1] - lo == hi - halves[1][0]  # halves of equal block count
        lo, hi = step.keep
    assert (lo, hi) == (plans.owned_block(q, v), plans.owned_block(q, v) + 1)


@settings(deadline=None)
@given(exponent=st.integers(0, 9))
def test_halving_goes_near_partners_first_and_every_block_has_one_owner(exponent):
    """Step k pairs v with v ^ 2**k (the largest halves stay between neighbours), and the
    owned blocks are a permutation of the q blocks."""
    q = 1 << exponent
    for v in range(q):
        assert [s.partner for s in plans.halving_steps(q, v)] == [v ^ (1 << k) for k in range(exponent)]
    assert sorted(plans.owned_block(q, v) for v in range(q)) == list(range(q))


@settings(max_examples=200, deadline=None)
@given(total=st.integers(0, 3000), cap=st.integers(1, 900), p=ps)
def test_recursive_halving_pieces_reassemble_the_vector_by_global_offset(total, cap, p):
    """The segment each core rank ends owning, over every bucket, covers the buffer exactly once."""
    q = plans.largest_power_of_two(p)
    plan = bucket_plan(total, cap, q)
    owned = []
    for v in range(q):
        first, end = plans.halving_steps(q, v)[-1].keep if q > 1 else (0, 1)
        assert end - first == 1
        for b in range(plan.buckets):
            owned.append((int(plan.offsets[b, first]), int(plan.widths[b, first])))
    assert check_pieces([o for o, _ in owned], [n for _, n in owned], total)


@settings(deadline=None)
@given(p=ps)
def test_recursive_doubling_reaches_everyone_in_log_rounds(p):
    fold = plans.Fold(p)
    q = fold.core
    held = [frozenset({v}) for v in range(q)]
    partners = [plans.doubling_partners(q, v) for v in range(q)]
    assert all(len(x) == q.bit_length() - 1 for x in partners)
    for k in range(q.bit_length() - 1):
        held = [held[v] | held[partners[v][k]] for v in range(q)]
    assert all(h == frozenset(range(q)) for h in held)


@settings(deadline=None)
@given(m=st.integers(1, 70))
def test_binomial_tree_reaches_every_rank_once_from_position_zero(m):
    parents = [plans.binomial_parent(i) for i in range(m)]
    assert parents[0] is None
    for i in range(1, m):
        assert 0 <= parents[i] < i
        assert i in plans.binomial_children(m, parents[i])
    children = [c for i in range(m) for c in plans.binomial_children(m, i)]
    assert sorted(children) == list(range(1, m))
    # A child's subtree is complete before it reports up: its own children are all above it.
    for i in range(m):
        assert all(c > i for c in plans.binomial_children(m, i))
