"""The history writer's lines: what the checker's own reader gets back, field for field."""
import json

import numpy as np
import pytest

from mpibench.check.history import full_params, read_worker_file
from mpibench.check.history import params_digest as checker_digest
from mpibench.engine.history import AttemptRecord, DigestCache, History, params_b64, params_b64_bytes, params_digest


def record(step: int, params: np.ndarray, losses: np.ndarray | None, **changes) -> AttemptRecord:
    fields = dict(step=step, attempt=0, role="contribute", members=[0, 1], group=[0, 1], shard=0,
                  cursor_before=[0, step], cursor_after=[0, step + 1], batch=list(range(0 if losses is None else len(losses))),
                  params_before=params_digest(params), params_after=params_digest(params), contributing=[0, 1],
                  effective_batch=4, pieces=[[0, params.size]], total_length=params.size, loss_mean=0.5,
                  loss_var=0.25, error=None, full_after=params_b64_bytes(params),
                  losses=params_b64_bytes(losses) if losses is not None else None)
    return AttemptRecord(**{**fields, **changes})


@pytest.mark.parametrize("size", [0, 1, 3, 5000])
@pytest.mark.parametrize("seed", [0, 1])
def test_an_attempt_line_reads_back_as_the_encoder_would_write_it(tmp_path, size, seed):
    rng = np.random.default_rng(seed)
    params = rng.standard_normal(size).astype(np.float32)
    losses = rng.random(min(size, 7)).astype(np.float32)
    history = History(str(tmp_path), 0)
    history.attempt(record(0, params, losses, error='a "quoted" \\ error\n'))
    history.attempt(record(1, params, None, full_after=None))  # a copy left out: null, not text
    history.decision(1, 0, "commit")
    history.close(2)
    lines = (tmp_path / "worker-0.jsonl").read_text().splitlines()
    written = json.loads(lines[1])
    expected = {**vars(record(0, params, losses, error='a "quoted" \\ error\n')),
                "full_after": params_b64(params), "losses": params_b64(losses)}
    assert written == {"kind": "attempt", **expected}
    assert json.loads(lines[2])["full_after"] is None and json.loads(lines[2])["losses"] is None
    attempts = read_worker_file(str(tmp_path / "worker-0.jsonl")).attempts
    assert np.array_equal(full_params(attempts[0].full_after), params)
    assert attempts[0].params_after == checker_digest(params)


def test_text_that_is_not_the_writers_base64_goes_through_the_encoder(tmp_path):
    params = np.ones(2, dtype=np.float32)
    history = History(str(tmp_path), 0)
    history.attempt(record(0, params, None, full_after='not "base64"'))  # e.g. a planted lie
    history.close(1)
    assert json.loads((tmp_path / "worker-0.jsonl").read_text().splitlines()[1])["full_after"] == 'not "base64"'


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
