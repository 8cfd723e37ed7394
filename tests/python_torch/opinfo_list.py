"""``opinfo_passing.txt``: the OpInfo cases that pass on the tensord device, read and written.

One line per entry for its base case (float32 samples as PyTorch generates them): ``name``, or
``name forward`` where only its values are held to PyTorch's (its gradients do not all match
yet). Then, for the other cases, one line per entry and dtype: ``name dtype variant ...``, each
variant (``opinfo_variants.VARIANTS``) that passes there, ``variant:forward`` for values only.
Read by ``test_opinfo.py``, rewritten by ``tools/op_coverage.py --update-list``.
"""

from __future__ import annotations

from typing import Dict, List, Tuple

import opinfo_variants as V

Case = Tuple[str, str, str]  # (entry, dtype, variant)
BASE_DTYPE = "float32"
HEADER = ("# OpInfo cases that pass on the tensord device (tests/python_torch/test_opinfo.py holds "
          "them to it):\n# 'name [forward]' is the float32 base case; 'name dtype variant"
          "[:forward] ...' the other\n# dtypes and variants (forward: values only). Regenerated "
          "by tools/op_coverage.py --update-list;\n# a case leaves this list only with a reason "
          "in the commit.\n")


def read(path: str) -> Dict[Case, bool]:
    """(entry, dtype, variant) -> whether its gradients are held to PyTorch's too."""
    out: Dict[Case, bool] = {}
    for line in open(path):
        words = line.split()
        if not words or words[0].startswith("#"):
            continue
        if len(words) == 1 or words[1:] == ["forward"]:
            out[(words[0], BASE_DTYPE, V.PLAIN)] = words[1:] != ["forward"]
            continue
        for v in words[2:]:
            variant, _, only = v.partition(":")
            if variant not in V.VARIANTS or only not in ("", "forward"):
                raise ValueError(f"{path}: {line.strip()!r}: {v!r} is not a variant")
            out[(words[0], words[1], variant)] = only != "forward"
    return out


def write(path: str, cases: Dict[Case, bool], order: List[str]) -> int:
    """Writes ``cases`` with the entries in ``order`` (the op_db's) first; the line count."""
    rank = {n: i for i, n in enumerate(order)}
    entries = sorted({c[0] for c in cases}, key=lambda n: (rank.get(n, len(rank)), n))
    lines = []
    for name in entries:
        base = cases.get((name, BASE_DTYPE, V.PLAIN))
        if base is not None:
            lines.append(name if base else f"{name} forward")
        dtypes = {c[1] for c in cases if c[0] == name}
        for dt in sorted(dtypes, key=lambda d: (d != BASE_DTYPE, d)):
            held = [v if cases[(name, dt, v)] else f"{v}:forward" for v in V.VARIANTS
                    if (name, dt, v) in cases and (dt, v) != (BASE_DTYPE, V.PLAIN)]
            if held:
                lines.append(f"{name} {dt} {' '.join(held)}")
    with open(path, "w") as f:
        f.write(HEADER + "\n".join(lines) + "\n")
    return len(lines)
