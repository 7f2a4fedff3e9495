"""The bottleneck ResNets as torchvision defines them (He et al., "Deep Residual Learning for
Image Recognition", CVPR 2016, Table 1: 50, 101 and 152 layers; torchvision.models.resnet50 and
resnet101, the "v1.5" variant that strides in the 3x3 convolution of a bottleneck):
convolutions without bias, each followed by a batch norm (weight and bias are parameters;
running statistics are buffers, never synchronised as gradients), a 1000-way classifier.
Forward work is counted for one 224 x 224 image."""
from __future__ import annotations

from .tensor import Profile, Tensor

IMAGE = 224
BLOCKS = {50: (3, 4, 6, 3), 101: (3, 4, 23, 3), 152: (3, 8, 36, 3)}  # bottlenecks per stage (Table 1)
WIDTHS = (64, 128, 256, 512)
EXPANSION = 4
CLASSES = 1000


class _Builder:
    def __init__(self):
        self.tensors: list[Tensor] = []

    def conv(self, name: str, c_in: int, c_out: int, k: int, out_hw: int) -> None:
        flops = 2.0 * c_in * c_out * k * k * out_hw * out_hw
        self.tensors.append(Tensor(f"{name}.weight", (c_out, c_in, k, k), "float32", flops))

    def norm(self, name: str, c: int, hw: int) -> None:
        # normalise, scale and shift: a few operations per element, charged to the weight
        self.tensors.append(Tensor(f"{name}.weight", (c,), "float32", 4.0 * c * hw * hw))
        self.tensors.append(Tensor(f"{name}.bias", (c,), "float32"))


def resnet(depth: int) -> Profile:
    if depth not in BLOCKS:
        raise ValueError(f"no bottleneck ResNet of depth {depth}: one of {', '.join(map(str, BLOCKS))}")
    b = _Builder()
    hw = IMAGE // 2
    b.conv("conv1", 3, 64, 7, hw)
    b.norm("bn1", 64, hw)
    hw //= 2  # the 3x3 max pool
    c_in = 64
    for stage, (blocks, width) in enumerate(zip(BLOCKS[depth], WIDTHS), start=1):
        for block in range(blocks):
            stride = 2 if stage > 1 and block == 0 else 1
            name, out_hw = f"layer{stage}.{block}", hw // stride
            b.conv(f"{name}.conv1", c_in, width, 1, hw)
            b.norm(f"{name}.bn1", width, hw)
            b.conv(f"{name}.conv2", width, width, 3, out_hw)
            b.norm(f"{name}.bn2", width, out_hw)
            b.conv(f"{name}.conv3", width, width * EXPANSION, 1, out_hw)
            b.norm(f"{name}.bn3", width * EXPANSION, out_hw)
            if block == 0:
                b.conv(f"{name}.downsample.0", c_in, width * EXPANSION, 1, out_hw)
                b.norm(f"{name}.downsample.1", width * EXPANSION, out_hw)
            c_in, hw = width * EXPANSION, out_hw
    b.tensors.append(Tensor("fc.weight", (CLASSES, c_in), "float32", 2.0 * CLASSES * c_in))
    b.tensors.append(Tensor("fc.bias", (CLASSES,), "float32"))
    return Profile(f"resnet{depth}", f"He et al. 2016, torchvision resnet{depth} (v1.5)",
                   f"one {IMAGE}x{IMAGE} image", tuple(b.tensors))


def resnet50() -> Profile:
    return resnet(50)


def resnet101() -> Profile:
    return resnet(101)
