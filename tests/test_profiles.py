"""Gradient profiles of real architectures and the frameworks' bucketing (mpibench.profiles).

The profiles are checked against the parameter counts their reference implementations report
(torchvision, Hugging Face), an independent figure the shapes were not fitted to; the
bucketing policies against the rules their frameworks document, on random tensor lists."""
from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st

from mpibench.profiles import BUILTIN, ProfileError, Tensor, profile, read_profile
from mpibench.profiles.buckets import ddp_buckets, horovod_buckets
from mpibench.profiles.transformer import llama7b_tensor_parallel_slice

# (profile, parameters, parameter tensors) as the reference implementations count them:
# sum(p.numel() for p in model.parameters()) and len(list(model.parameters())).
PUBLISHED = [
    ("resnet50", 25_557_032, 161),     # torchvision.models.resnet50
    ("resnet101", 44_549_160, 314),    # torchvision.models.resnet101
    ("vgg16", 138_357_544, 32),        # torchvision.models.vgg16
    ("bert-large", 335_141_888, 391),  # transformers BertModel(bert-large-uncased)
    ("gpt2", 124_439_808, 148),        # transformers GPT2LMHeadModel(gpt2), head tied
    ("gpt2-medium", 354_823_168, 292),
]
LLAMA_7B_PARAMETERS = 6_738_415_616  # transformers LlamaForCausalLM(llama-7b)


@pytest.mark.parametrize("name, parameters, tensors", PUBLISHED)
def test_each_profile_has_its_reference_implementations_parameter_count(name, parameters, tensors):
    p = profile(name)
    assert (p.parameters, len(p.tensors)) == (parameters, tensors)
    assert p.nbytes == 4 * parameters  # float32 gradients
    assert len({t.name for t in p.tensors}) == len(p.tensors)


def test_the_7b_slices_add_up_to_the_whole_model():
    whole = llama7b_tensor_parallel_slice(degree=1)
    assert whole.parameters == LLAMA_7B_PARAMETERS
    for degree in (2, 4, 8):
        part = llama7b_tensor_parallel_slice(degree=degree)
        replicated = sum(t.elements for t in part.tensors if "norm" in t.name)
        assert degree * (part.parameters - replicated) + replicated == LLAMA_7B_PARAMETERS
    with pytest.raises(ValueError, match="does not divide"):
        llama7b_tensor_parallel_slice(degree=3)


def test_forward_work_matches_the_published_figures():
    # torchvision lists ResNet-50, ResNet-101 and VGG-16 at 4.09, 7.80 and 15.47 G multiply-adds
    # per 224x224 image (2 flops each); batch norm adds about 1 %.
    assert profile("resnet50").forward_flops_per_sample == pytest.approx(2 * 4.09e9, rel=0.02)
    assert profile("resnet101").forward_flops_per_sample == pytest.approx(2 * 7.80e9, rel=0.02)
    assert profile("vgg16").forward_flops_per_sample == pytest.approx(2 * 15.47e9, rel=0.01)  # no norms
    # Kaplan et al. 2020: 2 N flops per token for N non-embedding parameters, plus attention
    # (2 n_layer n_ctx d per token) and the output head (2 d vocab).
    gpt = profile("gpt2")
    non_embedding = gpt.parameters - 50257 * 768 - 1024 * 768
    per_token = 2 * non_embedding + 2 * 12 * 1024 * 768 * 2 + 2 * 768 * 50257
    assert gpt.forward_flops_per_sample == pytest.approx(1024 * per_token, rel=0.02)


def tensor_lists(dtypes=("float32",)):
    return st.lists(st.builds(lambda i, n, d: Tensor(f"t{i}", (n,), d), st.integers(0, 10**6),
                              st.integers(0, 3 * 2**20), st.sampled_from(dtypes)), max_size=60)


@settings(max_examples=200, deadline=None)
@given(tensor_lists(("float32", "float16")), st.integers(1, 8 * 2**20), st.integers(1, 8 * 2**20))
def test_ddp_buckets_follow_ddps_rules(tensors, cap, first):
    buckets = ddp_buckets(tensors, bucket_cap_bytes=cap, first_bucket_bytes=first)
    packed = [i for b in buckets for i in b.tensors]
    assert sorted(packed) == list(range(len(tensors)))  # every gradient exactly once
    seen: dict[str, int] = {}
    for b in buckets:
        assert {tensors[i].dtype for i in b.tensors} == {b.dtype}
        assert list(b.tensors) == sorted(b.tensors, reverse=True)  # reverse registration order
        assert b.nbytes == sum(tensors[i].nbytes for i in b.tensors)
        limit = first if seen.get(b.dtype, 0) == 0 else cap
        seen[b.dtype] = seen.get(b.dtype, 0) + 1
        # closed as soon as it reached its limit: without its last tensor it was below
        assert b.nbytes - tensors[b.tensors[-1]].nbytes < limit
    for dtype in seen:
        mine = [b for b in buckets if b.dtype == dtype]
        assert all(b.nbytes >= (first if k == 0 else cap) for k, b in enumerate(mine[:-1]))


def test_ddp_defaults_on_resnet50():
    p = profile("resnet50")
    buckets = ddp_buckets(p.tensors)
    assert buckets[0].tensors[0] == len(p.tensors) - 1  # fc.bias, the first gradient the backward makes
    assert 2**20 <= buckets[0].nbytes < 2**20 + 8 * 2**20
    assert sum(b.nbytes for b in buckets) == p.nbytes
    assert len(buckets) == 5  # 97.5 MiB: 1 MiB-ish first, then ~25 MiB each


@settings(max_examples=200, deadline=None)
@given(st.data(), tensor_lists(("float32", "bfloat16")), st.integers(0, 8 * 2**20),
       st.sampled_from([1e-3, 5e-3]))
def test_horovod_fusion_follows_its_rules(data, tensors, threshold, cycle):
    ready = data.draw(st.lists(st.floats(0, 0.05), min_size=len(tensors), max_size=len(tensors)))
    started = horovod_buckets(tensors, ready, threshold_bytes=threshold, cycle_time_s=cycle)
    assert sorted(i for _, b in started for i in b.tensors) == list(range(len(tensors)))
    for start_s, b in started:
        assert {tensors[i].dtype for i in b.tensors} == {b.dtype}
        assert b.nbytes <= threshold or len(b.tensors) == 1
        for i in b.tensors:  # negotiated at the first cycle at or after it was ready
            assert ready[i] - 1e-9 <= start_s < ready[i] + cycle + 1e-9
    if threshold == 0:
        assert all(len(b.tensors) == 1 for _, b in started)
    with pytest.raises(ValueError, match="ready times"):
        horovod_buckets(tensors, ready + [0.0], threshold_bytes=threshold, cycle_time_s=cycle)


def test_a_users_profile_file_is_read_and_its_mistakes_named(tmp_path):
    good = tmp_path / "mine.toml"
    good.write_text('name = "mine"\n[[tensor]]\nname = "w"\nshape = [4, 3]\nforward_flops_per_sample = 24\n'
                    '[[tensor]]\nname = "b"\nshape = [3]\ndtype = "bfloat16"\n')
    p = profile(str(good))
    assert (p.name, p.parameters, p.nbytes, p.forward_flops_per_sample) == ("mine", 15, 54, 24.0)
    cases = {'[[tensor]]\nname = "w"\nshape = [4, -1]\n': "shape must be",
             '[[tensor]]\nname = "w"\nshape = [4]\ndtype = "int8"\n': "dtype 'int8'",
             'name = "x"\n': "no \\[\\[tensor\\]\\]",
             '[[tensor]]\nshape = [4]\n': "needs a name",
             '[[tensor\n': "mine-bad"}
    for text, message in cases.items():
        bad = tmp_path / "mine-bad.toml"
        bad.write_text(text)
        with pytest.raises(ProfileError, match=message):
            read_profile(bad)
    with pytest.raises(ProfileError, match="unknown profile 'resnet51'"):
        profile("resnet51")
    assert set(BUILTIN) >= {"resnet50", "resnet101", "vgg16", "bert-large", "gpt2", "gpt2-medium", "llama7b-tp8"}
