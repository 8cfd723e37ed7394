#!/usr/bin/python3
"""A small CIFAR-shaped ResNet (conv-bn-relu stem, residual basic blocks with strided
downsampling, global average pool, linear) trained on synthetic data through tensord.

    tools/start.sh                                   # or any running daemon
    PYTHONPATH=client/python /usr/bin/python3 examples/python/cifar_resnet.py --steps 10

Like ``cifar_cnn.py``, the model is written over ``lib`` (``tensord`` or ``torch``): the same
code builds both, so tests and ``tools/bench/py_bench.py --bench train --model resnet`` run it
in each library from the same weights. Residual connections are plain ``+`` on tensors.
"""

from typing import Any

from cifar_cnn import CLASSES, synthetic_data  # noqa: F401 (re-exported)
from mnist_mlp import copy_weights, make_optimizer, train, run_cli  # noqa: F401 (re-exported)

# (channels, stride) of each basic block after the stem: a ResNet-18 layout at CIFAR scale,
# one block per stage.
STAGES = ((1, 1), (2, 2), (4, 2), (8, 2))


def build_model(lib: Any, width: int = 16) -> Any:
    """The ResNet, in ``lib`` (``tensord`` or ``torch``)."""
    nn = lib.nn

    class BasicBlock(nn.Module):
        """conv3x3-bn-relu-conv3x3-bn, plus the input (1x1 conv-bn when the shape changes),
        then relu."""

        def __init__(self, cin: int, cout: int, stride: int) -> None:
            super().__init__()
            self.conv1 = nn.Conv2d(cin, cout, 3, stride=stride, padding=1, bias=False)
            self.bn1 = nn.BatchNorm2d(cout)
            self.conv2 = nn.Conv2d(cout, cout, 3, padding=1, bias=False)
            self.bn2 = nn.BatchNorm2d(cout)
            self.relu = nn.ReLU()
            self.downsample = None
            if stride != 1 or cin != cout:
                self.downsample = nn.Sequential(
                    nn.Conv2d(cin, cout, 1, stride=stride, bias=False), nn.BatchNorm2d(cout))

        def forward(self, x: Any) -> Any:
            out = self.relu(self.bn1(self.conv1(x)))
            out = self.bn2(self.conv2(out))
            identity = x if self.downsample is None else self.downsample(x)
            return self.relu(out + identity)

    layers = [nn.Conv2d(3, width, 3, padding=1, bias=False), nn.BatchNorm2d(width), nn.ReLU()]
    cin = width
    for mult, stride in STAGES:
        layers.append(BasicBlock(cin, width * mult, stride))
        cin = width * mult
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(cin, CLASSES)]
    return nn.Sequential(*layers)


def main() -> None:
    run_cli(__doc__, build_model, synthetic_data, steps=10, batch_size=64)


if __name__ == "__main__":
    main()
