"""Call-site capture: the user's ``file.py:line`` that issued an op.

Every command carries the site of the first stack frame outside the tensord package, so an error
raised much later (when a spoiled value is touched) still names the line that caused it. This
runs once per op, so it is kept cheap: ``sys._getframe`` and a dictionary lookup per frame (code
object -> basename, or "" inside the package).
"""

from __future__ import annotations

import os
import sys
from typing import Any, Dict

# Both spellings: co_filename keeps whatever path the module was imported by.
_PKG_DIRS = tuple({os.path.dirname(__file__) + os.sep,
                   os.path.dirname(os.path.abspath(__file__)) + os.sep})
# code object -> its file's basename, or "" for code inside the package
_outside: Dict[Any, str] = {}


def call_site(depth: int = 1) -> str:
    """``"file.py:line"`` of the first frame outside tensord above the caller ("" if none)."""
    try:
        f = sys._getframe(depth)
    except ValueError:
        return ""
    while f is not None:
        code = f.f_code
        base = _outside.get(code)
        if base is None:
            fname = code.co_filename
            base = "" if fname.startswith(_PKG_DIRS) else os.path.basename(fname)
            if len(_outside) > 65536:
                _outside.clear()
            _outside[code] = base
        if base:
            return f"{base}:{f.f_lineno}"
        f = f.f_back
    return ""
