"""Transformer encoders and decoders as their reference implementations register their
parameters, with the forward work of one sequence charged to each layer's weight.

* BERT-large (Devlin et al., "BERT", NAACL 2019; the Hugging Face ``BertModel`` of
  ``bert-large-uncased``, pooler included): 24 layers, hidden 1024, 16 heads, feed-forward
  4096, 30522 word pieces, 512 positions; one sequence of 512 tokens.
* GPT-2 small and medium (Radford et al., "Language Models are Unsupervised Multitask
  Learners", 2019; the Hugging Face ``GPT2LMHeadModel``, whose output head shares the token
  embedding, and whose ``Conv1D`` weights are stored input-major): 12 layers of 768 and 24 of
  1024, 50257 tokens, 1024 positions; one sequence of 1024 tokens.
* One tensor-parallel slice of a 7B-class decoder (LLaMA-7B: Touvron et al., "LLaMA", 2023: 32
  layers, hidden 4096, SwiGLU feed-forward 11008, 32000 tokens, RMSNorm, no biases, untied
  output head), cut as Megatron-LM cuts it (Shoeybi et al. 2019): the embedding and the head by
  vocabulary, query/key/value and the gate/up projections by output columns, the attention output
  and down projections by input rows, the norms whole on every rank. Data-parallel replicas of
  the same slice synchronise exactly these gradients; one sequence of 2048 tokens, bfloat16.
"""
from __future__ import annotations

from .tensor import Profile, Tensor


def _linear(name: str, d_in: int, d_out: int, tokens: int, dtype: str, bias: bool = True,
            input_major: bool = False, extra_flops: float = 0.0) -> list[Tensor]:
    shape = (d_in, d_out) if input_major else (d_out, d_in)
    weight = Tensor(f"{name}.weight", shape, dtype, 2.0 * d_in * d_out * tokens + extra_flops)
    return [weight] + ([Tensor(f"{name}.bias", (d_out,), dtype)] if bias else [])


def _norm(name: str, d: int, tokens: int, dtype: str, bias: bool = True) -> list[Tensor]:
    return [Tensor(f"{name}.weight", (d,), dtype, 5.0 * d * tokens)] + (
        [Tensor(f"{name}.bias", (d,), dtype)] if bias else [])


def _attention_flops(tokens: int, width: int) -> float:
    # scores (Q K^T) and their weighted sum of values: two tokens x tokens x width products
    return 4.0 * tokens * tokens * width


def bert_large(tokens: int = 512) -> Profile:
    d, ff, layers, vocab, dt = 1024, 4096, 24, 30522, "float32"
    ts = [Tensor("embeddings.word_embeddings.weight", (vocab, d), dt),
          Tensor("embeddings.position_embeddings.weight", (512, d), dt),
          Tensor("embeddings.token_type_embeddings.weight", (2, d), dt),
          *_norm("embeddings.LayerNorm", d, tokens, dt)]
    for i in range(layers):
        p = f"encoder.layer.{i}"
        for part in ("query", "key", "value"):
            ts += _linear(f"{p}.attention.self.{part}", d, d, tokens, dt)
        ts += _linear(f"{p}.attention.output.dense", d, d, tokens, dt, extra_flops=_attention_flops(tokens, d))
        ts += _norm(f"{p}.attention.output.LayerNorm", d, tokens, dt)
        ts += _linear(f"{p}.intermediate.dense", d, ff, tokens, dt)
        ts += _linear(f"{p}.output.dense", ff, d, tokens, dt)
        ts += _norm(f"{p}.output.LayerNorm", d, tokens, dt)
    ts += _linear("pooler.dense", d, d, 1, dt)
    return Profile("bert-large", "Devlin et al. 2019, Hugging Face BertModel (bert-large-uncased)",
                   f"one sequence of {tokens} tokens", tuple(ts))


def _gpt2(name: str, d: int, layers: int, tokens: int = 1024) -> Profile:
    vocab, dt = 50257, "float32"
    # the tied output head's logits are charged to the token embedding it shares
    ts = [Tensor("transformer.wte.weight", (vocab, d), dt, 2.0 * d * vocab * tokens),
          Tensor("transformer.wpe.weight", (1024, d), dt)]
    for i in range(layers):
        p = f"transformer.h.{i}"
        ts += _norm(f"{p}.ln_1", d, tokens, dt)
        ts += _linear(f"{p}.attn.c_attn", d, 3 * d, tokens, dt, input_major=True)
        ts += _linear(f"{p}.attn.c_proj", d, d, tokens, dt, input_major=True,
                      extra_flops=_attention_flops(tokens, d))
        ts += _norm(f"{p}.ln_2", d, tokens, dt)
        ts += _linear(f"{p}.mlp.c_fc", d, 4 * d, tokens, dt, input_major=True)
        ts += _linear(f"{p}.mlp.c_proj", 4 * d, d, tokens, dt, input_major=True)
    ts += _norm("transformer.ln_f", d, tokens, dt)
    return Profile(name, "Radford et al. 2019, Hugging Face GPT2LMHeadModel (tied head)",
                   f"one sequence of {tokens} tokens", tuple(ts))


def gpt2() -> Profile:
    return _gpt2("gpt2", 768, 12)


def gpt2_medium() -> Profile:
    return _gpt2("gpt2-medium", 1024, 24)


def llama7b_tensor_parallel_slice(degree: int = 8, tokens: int = 2048) -> Profile:
    d, ff, layers, vocab, dt = 4096, 11008, 32, 32000, "bfloat16"
    if d % degree or ff % degree or vocab % degree:
        raise ValueError(f"a tensor-parallel degree of {degree} does not divide the 7B model's widths")
    ts = [Tensor("model.embed_tokens.weight", (vocab // degree, d), dt)]
    for i in range(layers):
        p = f"model.layers.{i}"
        for part in ("q_proj", "k_proj", "v_proj"):
            ts += _linear(f"{p}.self_attn.{part}", d, d // degree, tokens, dt, bias=False)
        ts += _linear(f"{p}.self_attn.o_proj", d // degree, d, tokens, dt, bias=False,
                      extra_flops=_attention_flops(tokens, d // degree))
        ts += _linear(f"{p}.mlp.gate_proj", d, ff // degree, tokens, dt, bias=False)
        ts += _linear(f"{p}.mlp.up_proj", d, ff // degree, tokens, dt, bias=False)
        ts += _linear(f"{p}.mlp.down_proj", ff // degree, d, tokens, dt, bias=False)
        ts += _norm(f"{p}.input_layernorm", d, tokens, dt, bias=False)
        ts += _norm(f"{p}.post_attention_layernorm", d, tokens, dt, bias=False)
    ts += _norm("model.norm", d, tokens, dt, bias=False)
    ts += _linear("lm_head", d, vocab // degree, tokens, dt, bias=False)
    return Profile(f"llama7b-tp{degree}", f"Touvron et al. 2023 (LLaMA-7B), Megatron-LM tensor parallelism "
                   f"(Shoeybi et al. 2019), degree {degree}", f"one sequence of {tokens} tokens", tuple(ts))
