#!/usr/bin/python3
"""A CIFAR-shaped small CNN (conv-bn-relu-pool x2, linear) trained on synthetic data through
tensord.

    tools/start.sh                                   # or any running daemon
    PYTHONPATH=client/python /usr/bin/python3 examples/python/cifar_cnn.py --steps 20

Like ``mnist_mlp.py``, the model and loop are written over ``lib`` (``tensord`` or ``torch``)
so tests train the same network in both from the same weights. Synthetic data: 3x32x32 inputs,
labels from a fixed random teacher on 4x4-average-pooled inputs.
"""

import argparse
import time
from typing import Any, List, Tuple

import numpy as np

from mnist_mlp import copy_weights, make_optimizer, train  # noqa: F401 (re-exported)

CLASSES = 10


def build_model(lib: Any, width: int = 16) -> Any:
    """The CNN, in ``lib`` (``tensord`` or ``torch``)."""
    nn = lib.nn
    return nn.Sequential(
        nn.Conv2d(3, width, 3, padding=1), nn.BatchNorm2d(width), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(width, 2 * width, 3, padding=1), nn.BatchNorm2d(2 * width), nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(2 * width * 8 * 8, CLASSES))


def synthetic_data(steps: int, batch_size: int, seed: int = 0
                   ) -> List[Tuple[np.ndarray, np.ndarray]]:
    """``steps`` batches of (images [B, 3, 32, 32] float32, labels [B] int64)."""
    rng = np.random.default_rng(seed)
    teacher = rng.standard_normal((3 * 8 * 8, CLASSES)).astype(np.float32)
    out = []
    for _ in range(steps):
        x = rng.standard_normal((batch_size, 3, 32, 32), dtype=np.float32)
        pooled = x.reshape(batch_size, 3, 8, 4, 8, 4).mean(axis=(3, 5)).reshape(batch_size, -1)
        out.append((x, (pooled @ teacher).argmax(axis=1).astype(np.int64)))
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--address", default=None, help="daemon address (default $TENSORD_ADDRESS)")
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--batch-size", type=int, default=32)
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
