#!/usr/bin/python3
"""The README's example: one small program, run on tensord and (when installed) on PyTorch.

    tools/start.sh                                   # or any running daemon (TENSORD_ADDRESS)
    PYTHONPATH=client/python /usr/bin/python3 examples/python/quickstart.py
"""

import tensord as td


def program(lib):
    """Plain PyTorch-style code; ``lib`` is ``tensord`` or ``torch``."""
    x = lib.arange(12, dtype=lib.float32).reshape(3, 4) / 10
    w = lib.tensor([[0.5, -1.0], [1.5, 2.0], [-0.5, 0.25], [1.0, 1.0]])
    b = lib.tensor([0.1, -0.2])
    h = lib.nn.functional.relu(x @ w + b)
    err = h - 1
    loss = (err * err).mean()
    return h, h.sum(dim=0), loss.item()


def main():
    with td.connect():  # $TENSORD_ADDRESS / $TENSORD_TOKEN, else 127.0.0.1:50051
        h, col_sums, loss = program(td)
        print("tensord:", h, col_sums, f"loss={loss:.6f}", sep="\n")
    try:
        import torch
    except ImportError:
        return
    h, col_sums, loss = program(torch)
    print("torch:", h, col_sums, f"loss={loss:.6f}", sep="\n")


if __name__ == "__main__":
    main()
