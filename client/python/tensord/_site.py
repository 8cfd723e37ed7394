"""Call-site capture: the user's ``file.py:line`` that issued an op.

Every command carries the site of the first stack frame outside the tensord package, so an error
raised much later (when a spoiled value is touched) still names the line that caused it. This
runs once per op, so it is kept cheap: ``sys._getframe`` and a dictionary lookup per frame (code
object -> basename, or "" inside the package). ``site_field`` goes further for ``Call``s: it
caches the encoded ``Call.site`` field per code object and bytecode offset, so a line that runs
again costs two dictionary lookups and no string formatting.
"""

from __future__ import annotations

import os
import sys
from typing import Any, Dict

from . import _wire

_getframe = sys._getframe
# Both spellings: co_filename keeps whatever path the module was imported by.
_PKG_DIRS = tuple({os.path.dirname(__file__) + os.sep,
                   os.path.dirname(os.path.abspath(__file__)) + os.sep})
# code object -> its file's basename, or "" for code inside the package
_outside: Dict[Any, str] = {}
# code object -> {f_lasti: encoded Call.site}; _INSIDE for code inside the package
_fields: Dict[Any, Dict[int, bytes]] = {}
_INSIDE: Dict[int, bytes] = {}
# encoded Call.site -> the site string (for the rare command that needs the string)
_strings: Dict[bytes, str] = {b"": ""}
_MAX_CODES = 65536


def add_library_dir(path: str) -> None:
    """Treats code under ``path`` as library code, like this package's own: call sites name the
    first frame outside both (``tensord.torch`` adds PyTorch's directory, so a daemon error
    names the program's line, not ``torch/nn/functional.py``)."""
    global _PKG_DIRS
    path = os.path.abspath(path) + os.sep
    if path not in _PKG_DIRS:
        _PKG_DIRS = _PKG_DIRS + (path,)
        _outside.clear()
        _fields.clear()


def _basename(code: Any) -> str:
    base = _outside.get(code)
    if base is None:
        fname = code.co_filename
        base = "" if fname.startswith(_PKG_DIRS) else os.path.basename(fname)
        if len(_outside) > _MAX_CODES:
            _outside.clear()
        _outside[code] = base
    return base


def call_site(depth: int = 1) -> str:
    """``"file.py:line"`` of the first frame outside tensord above the caller ("" if none)."""
    try:
        f = _getframe(depth)
    except ValueError:
        return ""
    while f is not None:
        base = _basename(f.f_code)
        if base:
            return f"{base}:{f.f_lineno}"
        f = f.f_back
    return ""


def site_field(depth: int = 1) -> bytes:
    """The encoded ``Call.site`` field, ``_wire.encode_site(call_site(depth))``: the first
    frame outside tensord from ``depth`` frames up on (1: the caller; tensord code that knows
    how many of its own frames are above it skips them)."""
    try:
        f = _getframe(depth)
    except ValueError:
        return b""
    while f is not None:
        code = f.f_code
        lines = _fields.get(code)
        if lines is None:
            lines = _INSIDE if not _basename(code) else {}
            if len(_fields) > _MAX_CODES:
                _fields.clear()
            _fields[code] = lines
        if lines is not _INSIDE:
            field = lines.get(f.f_lasti)
            if field is None:
                site = f"{_basename(code)}:{f.f_lineno}"
                field = lines[f.f_lasti] = _wire.encode_site(site)
                if len(_strings) > _MAX_CODES:
                    _strings.clear()
                    _strings[b""] = ""
                _strings[field] = site
            return field
        f = f.f_back
    return b""


def site_string(field: bytes) -> str:
    """The site string of a ``site_field()`` result."""
    s = _strings.get(field)
    if s is None:  # the table was cleared: decode tag, length varint, UTF-8
        i = 1
        while field[i] & 0x80:
            i += 1
        s = field[i + 1:].decode()
    return s
