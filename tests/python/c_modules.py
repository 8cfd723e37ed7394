"""Tests of the client's C modules (``_speedups``, ``_ring``, ``_mailbox``; built by
tools/build_python_ext.sh): the ``c_module`` mark and what a test so marked does when its
module is not loaded.

- ``TENSORD_PURE_PYTHON=1``: the client leaves every C module off on purpose (the Python
  reference path, which tools/test.sh runs once more): the test skips.
- ``TENSORD_REQUIRE_DAEMON=1`` (tools/test.sh's strict mode) otherwise: the test fails, so that
  a build regression of an extension cannot read as a skip.
- Otherwise (a checkout without a C compiler): the test skips, saying how to build the module.

Mark a test, a module (``pytestmark``) or a parameter with ``pytest.mark.c_module("_ring")``;
``conftest.py`` applies ``check`` before each marked test.
"""

from __future__ import annotations

import os
from typing import Callable, Dict

import pytest

from tensord import _command_ring, _fast, _options, _shm

# Whether the client loaded each module: what it reads itself before taking the C path.
LOADED: Dict[str, Callable[[], bool]] = {
    "_speedups": lambda: _fast.speedups is not None,
    "_ring": lambda: _command_ring.available,
    "_mailbox": lambda: _shm._mailbox is not None,
}


def check(item: pytest.Item) -> None:
    """Skips or fails ``item`` (module docstring) if a C module it is marked with is not loaded."""
    for mark in item.iter_markers("c_module"):
        name = mark.args[0]
        if LOADED[name]():
            continue
        if _options.pure_python():
            pytest.skip(f"TENSORD_PURE_PYTHON=1: the {name} C module is off on purpose")
        where = os.path.join(os.path.dirname(_options.__file__), f"{name}*.so")
        why = (f"the {name} C module is not loaded ({where} missing or failing to import): "
               "run tools/build_python_ext.sh")
        if os.environ.get("TENSORD_REQUIRE_DAEMON") == "1":
            pytest.fail(f"{why} (TENSORD_REQUIRE_DAEMON=1: a missing C module is a failure, "
                        "not a skip)", pytrace=False)
        pytest.skip(why)
