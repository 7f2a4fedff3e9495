"""A model's gradient as data: its parameter tensors in registration order, with the compute
each one's layer costs, so bucketing, overlap and prediction can reason about a real model
without the framework that defined it."""
from __future__ import annotations

import math
from dataclasses import dataclass

ITEM_BYTES = {"float16": 2, "bfloat16": 2, "float32": 4, "float64": 8}


@dataclass(frozen=True)
class Tensor:
    """One parameter (and so one gradient) tensor.

    ``forward_flops_per_sample`` is the floating-point work of the operation this parameter
    belongs to, for one sample, charged to one tensor of that operation (a layer's weight, never
    also its bias); the backward pass costs about twice it (the gradients of the inputs and of
    the weights)."""
    name: str
    shape: tuple[int, ...]
    dtype: str = "float32"
    forward_flops_per_sample: float = 0.0

    @property
    def elements(self) -> int:
        return math.prod(self.shape)

    @property
    def nbytes(self) -> int:
        return self.elements * ITEM_BYTES[self.dtype]


@dataclass(frozen=True)
class Profile:
    """The ordered gradient tensors of one architecture, as ``model.parameters()`` yields them
    (the order DDP buckets in reverse), and where the figures come from."""
    name: str
    source: str  # the published definition the shapes follow
    sample: str  # what one sample is (an image, a sequence of N tokens)
    tensors: tuple[Tensor, ...]

    @property
    def parameters(self) -> int:
        return sum(t.elements for t in self.tensors)

    @property
    def nbytes(self) -> int:
        return sum(t.nbytes for t in self.tensors)

    @property
    def forward_flops_per_sample(self) -> float:
        return sum(t.forward_flops_per_sample for t in self.tensors)

    def backward_flops_per_sample(self) -> float:
        return 2.0 * self.forward_flops_per_sample
