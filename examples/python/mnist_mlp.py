#!/usr/bin/python3
"""An MNIST-shaped MLP (784-1024-1024-10) trained on synthetic data through tensord.

    tools/start.sh                                   # or any running daemon
    PYTHONPATH=client/python /usr/bin/python3 examples/python/mnist_mlp.py --steps 20

The model, data and loop are plain PyTorch-style code over ``lib`` (``tensord`` or ``torch``),
so tests import this file and train the same model in both, from the same initial weights
(``copy_weights``), comparing the losses step by step. Synthetic data: inputs uniform in
[0, 1) (28x28 "images"), labels from a fixed random linear teacher, so the loss can go down.
"""

import argparse
import time
from typing import Any, Callable, List, Tuple

import numpy as np

IN, HIDDEN, CLASSES = 784, 1024, 10


def build_model(lib: Any) -> Any:
    """The MLP, in ``lib`` (``tensord`` or ``torch``)."""
    nn = lib.nn
    return nn.Sequential(nn.Flatten(), nn.Linear(IN, HIDDEN), nn.ReLU(),
                         nn.Linear(HIDDEN, HIDDEN), nn.ReLU(), nn.Linear(HIDDEN, CLASSES))


def synthetic_data(steps: int, batch_size: int, seed: int = 0
                   ) -> List[Tuple[np.ndarray, np.ndarray]]:
    """``steps`` batches of (images [B, 1, 28, 28] float32, labels [B] int64)."""
    rng = np.random.default_rng(seed)
    teacher = rng.standard_normal((IN, CLASSES)).astype(np.float32)
    out = []
    for _ in range(steps):
        x = rng.random((batch_size, 1, 28, 28), dtype=np.float32)
        y = (x.reshape(batch_size, IN) - 0.5) @ teacher
        out.append((x, y.argmax(axis=1).astype(np.int64)))
    return out


def make_optimizer(lib: Any, model: Any, name: str, lr: float) -> Any:
    """SGD with momentum, or Adam."""
    if name == "sgd":
        return lib.optim.SGD(model.parameters(), lr=lr, momentum=0.9)
    if name == "adam":
        return lib.optim.Adam(model.parameters(), lr=lr)
    raise ValueError(f"unknown optimizer {name!r}")


def train(lib: Any, model: Any, optimizer: Any, data: List[Tuple[np.ndarray, np.ndarray]],
          device: Any = None, log: bool = False) -> List[float]:
    """One step per batch; returns the loss of each step."""
    loss_fn = lib.nn.CrossEntropyLoss()
    losses = []
    model.train()
    for step, (x, y) in enumerate(data):
        xs = lib.tensor(x, device=device)
        ys = lib.tensor(y, device=device)
        optimizer.zero_grad()
        loss = loss_fn(model(xs), ys)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
        if log:
            print(f"step {step:3d}  loss {losses[-1]:.4f}", flush=True)
    return losses


def copy_weights(src: Any, dst: Any) -> None:
    """Copies a model's state dict into another's (tensord <-> torch), through NumPy."""
    values = {k: np.array(v.detach().cpu().numpy()) for k, v in src.state_dict().items()}
    if type(dst).__module__.startswith("torch"):
        import torch
        values = {k: torch.from_numpy(v) for k, v in values.items()}
    dst.load_state_dict(values)


def run_cli(doc: str, build: Callable[[Any], Any],
            data_for: Callable[[int, int, int], List[Tuple[np.ndarray, np.ndarray]]],
            steps: int, batch_size: int) -> None:
    """The examples' command line: trains ``build(tensord)`` on ``data_for(steps, batch, seed)``
    against a daemon and prints the losses and the time per step."""
    p = argparse.ArgumentParser(description=doc.split("\n")[0])
    p.add_argument("--address", default=None, help="daemon address (default $TENSORD_ADDRESS)")
    p.add_argument("--steps", type=int, default=steps)
    p.add_argument("--batch-size", type=int, default=batch_size)
    p.add_argument("--optimizer", choices=["sgd", "adam"], default="sgd")
    p.add_argument("--lr", type=float, default=None, help="default: 0.05 (sgd), 1e-3 (adam)")
    p.add_argument("--device", default=None, help="e.g. cuda:0 (default: the daemon's)")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args()
    lr = args.lr if args.lr is not None else (0.05 if args.optimizer == "sgd" else 1e-3)

    import tensord as td
    with td.connect(args.address):
        td.manual_seed(args.seed)
        model = build(td)
        if args.device:
            model.to(args.device)
        opt = make_optimizer(td, model, args.optimizer, lr)
        data = data_for(args.steps, args.batch_size, args.seed)
        t0 = time.perf_counter()
        losses = train(td, model, opt, data, device=args.device, log=True)
        dt = time.perf_counter() - t0
        print(f"{len(losses)} steps in {dt:.2f} s ({dt / max(len(losses), 1) * 1e3:.1f} "
              f"ms/step); loss {losses[0]:.4f} -> {losses[-1]:.4f}")


def main() -> None:
    run_cli(__doc__, build_model, synthetic_data, steps=20, batch_size=64)


if __name__ == "__main__":
    main()
