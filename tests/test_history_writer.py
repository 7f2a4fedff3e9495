"""The history writer's lines and companion file: what the checker's own reader gets back."""
import json

import numpy as np
import pytest

from mpibench.check.history import CannotJudge, full_params, read_worker_file
from mpibench.check.history import form, params_digest as checker_digest
from mpibench.engine.history import AttemptRecord, DigestCache, History, params_b64, params_digest


def record(step: int, params, losses, **changes) -> AttemptRecord:
    fields = dict(step=step, attempt=0, role="contribute", members=[0, 1], group=[0, 1], shard=0,
                  cursor_before=[0, step], cursor_after=[0, step + 1],
                  batch=list(range(0 if losses is None else len(losses))),
                  params_before=params_digest(params), params_after=params_digest(params), contributing=[0, 1],
                  effective_batch=4, pieces=[[0, params.size]], total_length=params.size, loss_mean=0.5,
                  loss_var=0.25, error=None, full_after=params, losses=losses)
    return AttemptRecord(**{**fields, **changes})


def written(tmp_path, *records, close=True):
    history = History(str(tmp_path), 0)
    for r in records:
        history.attempt(r)
        history.decision(r.step, r.attempt, "commit")
    if close:
        history.close(len(records))
    return tmp_path / "worker-0.jsonl"


@pytest.mark.parametrize("size", [0, 1, 3, 5000])
@pytest.mark.parametrize("seed", [0, 1])
def test_the_checker_reads_back_every_copy_and_loss_bit_for_bit(tmp_path, size, seed):
    rng = np.random.default_rng(seed)
    steps = [(rng.standard_normal(size).astype(np.float32), rng.random(min(size, 7)).astype(np.float32))
             for _ in range(3)]
    path = written(tmp_path, *(record(i, p, l, error='a "quoted" \\ error\n' if i else None)
                               for i, (p, l) in enumerate(steps)))
    attempts = read_worker_file(str(path)).attempts
    assert [a.step for a in attempts] == [0, 1, 2] and attempts[1].error == 'a "quoted" \\ error\n'
    for a, (params, losses) in zip(attempts, steps):
        assert full_params(a.full_after).tobytes() == params.tobytes()
        assert full_params(a.losses).tobytes() == losses.tobytes()
        assert a.params_after == checker_digest(params, form(4))  # schema 4: xxh3, the checker's own
    first = json.loads(path.read_text().splitlines()[1])
    assert first["full_after"] == {"at": 0, "floats": size}  # its place in the companion, not the floats


def test_text_and_none_in_a_bulk_field_stay_in_the_line(tmp_path):
    params = np.ones(2, dtype=np.float32)
    path = written(tmp_path, record(0, params, None, full_after=params_b64(params)),
                   record(1, params, None, full_after=None))
    attempts = read_worker_file(str(path)).attempts
    assert attempts[0].full_after == params_b64(params) and attempts[1].full_after is None
    assert attempts[0].losses is None


def test_a_missing_or_short_companion_cannot_be_judged(tmp_path):
    params = np.arange(4, dtype=np.float32)
    path = written(tmp_path, record(0, params, params[:2]))
    companion = tmp_path / "worker-0.jsonl.bin"
    companion.write_bytes(companion.read_bytes()[:-1])
    with pytest.raises(CannotJudge, match="worker-0.jsonl.bin holds"):
        read_worker_file(str(path))
    companion.unlink()
    with pytest.raises(CannotJudge, match="worker-0.jsonl.bin unreadable"):
        read_worker_file(str(path))


def test_a_killed_writer_leaves_complete_lines_and_their_bytes(tmp_path):
    params = np.arange(3, dtype=np.float32)
    path = written(tmp_path, record(0, params, params), close=False)  # no close: the process was killed
    with open(path, "a") as f:
        f.write('{"kind":"attempt","step":1,')  # the next line, cut short
    [a] = read_worker_file(str(path)).attempts
    assert full_params(a.full_after).tobytes() == params.tobytes()


@pytest.mark.parametrize("change", ["none", "value", "negative zero", "nan", "shape"])
def test_the_digest_cache_returns_the_digest_of_the_bits_it_is_given(change):
    params = np.array([0.0, 1.5, -2.0], dtype=np.float32)
    cache = DigestCache()
    assert cache(params) == params_digest(params)
    other = {"none": params.copy(), "value": params + 1,
             "negative zero": np.array([-0.0, 1.5, -2.0], dtype=np.float32),
             "nan": np.array([np.nan, 1.5, -2.0], dtype=np.float32),
             "shape": np.zeros(4, dtype=np.float32)}[change]
    assert cache(other) == params_digest(other)
    assert cache(other) == params_digest(other)  # a hit after a miss
    assert cache(params) == params_digest(params)  # and back


def test_the_digest_forms_of_every_schema_are_read():
    # Schema 4 writes xxh3-128 behind its prefix; schemas 2 and 3 wrote bare blake2b-128 hex, which
    # the checker still reads; a digest of another form never matches.
    params = np.arange(5, dtype=np.float32)
    new, old = checker_digest(params, form(4)), checker_digest(params, form(3))
    assert new == params_digest(params) and new.startswith("xxh3:") and len(new) == 5 + 32
    assert len(old) == 32 and old != new[5:]
    assert checker_digest(params, "sha1:" + "0" * 40) == old  # an unknown form: compared as blake2b, differs
