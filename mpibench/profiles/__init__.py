"""Gradient profiles of real architectures: their ordered parameter tensors and layer work,
and how frameworks bucket them (:mod:`.buckets`). ``profile(NAME)`` gives a built-in one;
``read_profile(PATH)`` reads a user's own from a small TOML file (see :func:`read_profile`)."""
from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Callable

from .resnet import resnet50, resnet101
from .tensor import ITEM_BYTES, Profile, Tensor
from .transformer import bert_large, gpt2, gpt2_medium, llama7b_tensor_parallel_slice
from .vgg import vgg16

BUILTIN: dict[str, Callable[[], Profile]] = {
    "resnet50": resnet50,
    "resnet101": resnet101,
    "vgg16": vgg16,
    "bert-large": bert_large,
    "gpt2": gpt2,
    "gpt2-medium": gpt2_medium,
    "llama7b-tp8": llama7b_tensor_parallel_slice,
}


class ProfileError(ValueError):
    """A profile that cannot be read or does not exist; the message is one line for the user."""


def profile(name_or_path: str) -> Profile:
    """A built-in profile by name, else a TOML file by path."""
    if name_or_path in BUILTIN:
        return BUILTIN[name_or_path]()
    path = Path(name_or_path)
    if path.suffix == ".toml" or path.exists():
        return read_profile(path)
    raise ProfileError(f"unknown profile {name_or_path!r}: one of {', '.join(BUILTIN)}, or a .toml file")


def read_profile(path: Path) -> Profile:
    """A profile file::

        name = "my-model"
        source = "where the shapes come from"
        sample = "one sequence of 128 tokens"
        [[tensor]]                 # in registration order (model.parameters())
        name = "encoder.weight"
        shape = [512, 256]
        dtype = "float32"          # float16, bfloat16, float32 or float64; default float32
        forward_flops_per_sample = 33554432   # optional, default 0
    """
    try:
        data = tomllib.loads(Path(path).read_text())
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ProfileError(f"{path}: {exc}") from None
    entries = data.get("tensor")
    if not isinstance(entries, list) or not entries:
        raise ProfileError(f"{path}: no [[tensor]] entries")
    return Profile(str(data.get("name", Path(path).stem)), str(data.get("source", str(path))),
                   str(data.get("sample", "one sample")),
                   tuple(_tensor(path, i, e) for i, e in enumerate(entries, start=1)))


def _tensor(path, i: int, entry: dict) -> Tensor:
    where = f"{path}: tensor {i}"
    shape = entry.get("shape")
    if not isinstance(entry.get("name"), str) or not entry["name"]:
        raise ProfileError(f"{where}: needs a name")
    if not isinstance(shape, list) or not all(isinstance(n, int) and not isinstance(n, bool) and n >= 0
                                              for n in shape):
        raise ProfileError(f"{where} ({entry['name']}): shape must be a list of whole numbers >= 0")
    dtype = entry.get("dtype", "float32")
    if dtype not in ITEM_BYTES:
        raise ProfileError(f"{where} ({entry['name']}): dtype {dtype!r} is not one of {', '.join(ITEM_BYTES)}")
    flops = entry.get("forward_flops_per_sample", 0)
    if isinstance(flops, bool) or not isinstance(flops, (int, float)) or not flops >= 0:
        raise ProfileError(f"{where} ({entry['name']}): forward_flops_per_sample must be a number >= 0")
    return Tensor(entry["name"], tuple(shape), dtype, float(flops))


__all__ = ["BUILTIN", "Profile", "ProfileError", "Tensor", "profile", "read_profile"]
