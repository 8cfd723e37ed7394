"""Call-site capture: the user's ``file.py:line`` that issued an op.

Every command carries the site of the first stack frame outside the tensord package, so an error
raised much later (when a spoiled value is touched) still names the line that caused it. This
runs once per op, so it is kept cheap: ``sys._getframe`` and a prefix test per frame, with the
basename cached per code object's file name.
"""

from __future__ import annotations

import os
import sys
from typing import Dict

# Both spellings: co_filename keeps whatever path the module was imported by.
_PKG_DIRS = tuple({os.path.dirname(__file__) + os.sep,
                   os.path.dirname(os.path.abspath(__file__)) + os.sep})
_basenames: Dict[str, str] = {}


def call_site(depth: int = 1) -> str:
    """``"file.py:line"`` of the first frame outside tensord above the caller ("" if none)."""
    try:
        f = sys._getframe(depth)
    except ValueError:
        return ""
    while f is not None:
        fname = f.f_code.co_filename
        if not fname.startswith(_PKG_DIRS):
            base = _basenames.get(fname)
            if base is None:
                base = _basenames.setdefault(fname, os.path.basename(fname))
            return f"{base}:{f.f_lineno}"
        f = f.f_back
    return ""
