#!/usr/bin/python3
"""A CIFAR-shaped small CNN (conv-bn-relu-pool x2, linear) trained on synthetic data through
tensord.

    tools/start.sh                                   # or any running daemon
    PYTHONPATH=client/python /usr/bin/python3 examples/python/cifar_cnn.py --steps 20

Like ``mnist_mlp.py``, the model and loop are written over ``lib`` (``tensord`` or ``torch``)
so tests train the same network in both from the same weights. Synthetic data: 3x32x32 inputs,
labels from a fixed random teacher on 4x4-average-pooled inputs.
"""

from typing import Any, List, Tuple

import numpy as np

from mnist_mlp import copy_weights, make_optimizer, train, run_cli  # noqa: F401 (re-exported)

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
    run_cli(__doc__, build_model, synthetic_data, steps=20, batch_size=32)


if __name__ == "__main__":
    main()
