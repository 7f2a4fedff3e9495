"""VGG-16 as its paper defines it (Simonyan & Zisserman, "Very Deep Convolutional Networks for
Large-Scale Image Recognition", ICLR 2015, Table 1, configuration D) and torchvision.models.vgg16
registers it: thirteen 3x3 convolutions with biases in five blocks (64, 128, 256, 512, 512
channels, each block ending in a 2x2 max pool), then fully connected layers of 4096, 4096 and
1000 with biases. Forward work is counted for one 224 x 224 image; the first fully connected
layer alone holds 103 million of its 138 million parameters."""
from __future__ import annotations

from .tensor import Profile, Tensor

IMAGE = 224
BLOCKS = ((64, 2), (128, 2), (256, 3), (512, 3), (512, 3))  # (channels, convolutions) per block
FULLY_CONNECTED = (4096, 4096, 1000)


def vgg16() -> Profile:
    tensors: list[Tensor] = []
    c_in, hw, index = 3, IMAGE, 0  # torchvision's features.N: convolutions, ReLUs and pools share N
    for channels, convs in BLOCKS:
        for _ in range(convs):
            flops = 2.0 * c_in * channels * 9 * hw * hw
            tensors.append(Tensor(f"features.{index}.weight", (channels, c_in, 3, 3), "float32", flops))
            tensors.append(Tensor(f"features.{index}.bias", (channels,), "float32"))
            c_in, index = channels, index + 2  # the convolution and its ReLU
        hw //= 2
        index += 1  # the max pool
    d_in = c_in * hw * hw  # 512 x 7 x 7
    for k, d_out in enumerate(FULLY_CONNECTED):
        name = f"classifier.{3 * k}"  # each linear layer followed by ReLU and dropout
        tensors.append(Tensor(f"{name}.weight", (d_out, d_in), "float32", 2.0 * d_in * d_out))
        tensors.append(Tensor(f"{name}.bias", (d_out,), "float32"))
        d_in = d_out
    return Profile("vgg16", "Simonyan & Zisserman 2015 (configuration D), torchvision vgg16",
                   f"one {IMAGE}x{IMAGE} image", tuple(tensors))
