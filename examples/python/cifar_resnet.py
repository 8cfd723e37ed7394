#!/usr/bin/python3
"""A small CIFAR-shaped ResNet (conv-bn-relu stem, residual basic blocks with strided
downsampling, global average pool, linear) trained on synthetic data through tensord.

    tools/start.sh                                   # or any running daemon
    PYTHONPATH=client/python /usr/bin/python3 examples/python/cifar_resnet.py --steps 10

Like ``cifar_cnn.py``, the model is written over ``lib`` (``tensord`` or ``torch``): the same
code builds both, so tests and ``tools/bench/py_bench.py --bench train --model resnet`` run it
in each library from the same weights. Residual connections are plain ``+`` on tensors.
"""

import argparse
import time
from typing import Any

from cifar_cnn import CLASSES, synthetic_data  # noqa: F401 (re-exported)
from mnist_mlp import copy_weights, make_optimizer, train  # noqa: F401 (re-exported)

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
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--address", default=None, help="daemon address (default $TENSORD_ADDRESS)")
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--optimizer", choices=["sgd", "adam"], default="sgd")
    p.add_argument("--lr", type=float, default=None, help="default: 0.05 (sgd), 1e-3 (adam)")
    p.add_argument("--device", default=None, help="e.g. cuda:0 (default: the daemon's)")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args()
    lr = args.lr if args.lr is not None else (0.05 if args.optimizer == "sgd" else 1e-3)

    import tensord as td
    with td.connect(args.address):
        td.manual_seed(args.seed)
        model = build_model(td)
        if args.device:
            model.to(args.device)
        opt = make_optimizer(td, model, args.optimizer, lr)
        data = synthetic_data(args.steps, args.batch_size, args.seed)
        t0 = time.perf_counter()
        losses = train(td, model, opt, data, device=args.device, log=True)
        dt = time.perf_counter() - t0
        print(f"{len(losses)} steps in {dt:.2f} s ({dt / max(len(losses), 1) * 1e3:.1f} "
              f"ms/step); loss {losses[0]:.4f} -> {losses[-1]:.4f}")


if __name__ == "__main__":
    main()
