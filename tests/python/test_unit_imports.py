"""The ``tensord`` package has no import cycles (issue 27): its modules' module-level imports
form no cycle, and every module imports first in a fresh interpreter (``import
tensord.optim`` before ``import tensord``, ``import tensord.torch._aten_map_nn`` alone, ...;
the ``tensord.torch`` modules under an interpreter whose PyTorch the device supports). No
daemon needed.

The graph is read from the source (``ast``): imports inside functions and under ``if
TYPE_CHECKING:`` do not run when a module loads, and are left out; ``from . import name`` is an
edge to the module ``name`` where one exists, else to the package (the name comes from its
``__init__``); C extensions (``_speedups`` ...) are no part of it.
"""

from __future__ import annotations

import ast
import os
import pathlib
import subprocess
import sys
from typing import Dict, List, Optional, Set

import pytest

from conftest import CLIENT, REPO

ROOT = pathlib.Path(CLIENT)
PACKAGE = ROOT / "tensord"


def _modules() -> Dict[str, pathlib.Path]:
    out = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        if "_proto" in parts:
            continue  # generated protobuf stubs
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


MODULES = _modules()


def _load_time_imports(name: str, path: pathlib.Path) -> Set[str]:
    """The package's modules that ``name`` imports while it loads."""
    is_package = path.name == "__init__.py"
    here = name.split(".") if is_package else name.split(".")[:-1]
    deps: Set[str] = set()

    def add(module: str, names: List[str]) -> None:
        if module not in MODULES and not module.startswith("tensord"):
            return
        for n in names:
            sub = f"{module}.{n}"
            if sub in MODULES:
                deps.add(sub)
            elif not (ROOT / (sub.replace(".", os.sep) + ".c")).exists() and module in MODULES:
                deps.add(module)

    def walk(body: List[ast.stmt]) -> None:
        for node in body:
            if isinstance(node, ast.Import):
                for a in node.names:
                    if a.name in MODULES:
                        deps.add(a.name)
            elif isinstance(node, ast.ImportFrom):
                base = (".".join(here[:len(here) - node.level + 1] + ([node.module] if
                                                                      node.module else []))
                        if node.level else node.module or "")
                add(base, [a.name for a in node.names])
            elif isinstance(node, ast.If):
                if "TYPE_CHECKING" not in ast.dump(node.test):
                    walk(node.body)
                walk(node.orelse)
            elif isinstance(node, (ast.Try, ast.With, ast.ClassDef)):
                walk(node.body)
                for h in getattr(node, "handlers", []):
                    walk(h.body)
                walk(getattr(node, "orelse", []))
                walk(getattr(node, "finalbody", []))

    walk(ast.parse(path.read_text()).body)
    deps.discard(name)
    return deps


def _find_cycle(graph: Dict[str, Set[str]]) -> Optional[List[str]]:
    """One cycle of ``graph`` (its modules in import order, the first repeated), or None."""
    state: Dict[str, int] = {}  # 1: on the current path, 2: done
    path: List[str] = []

    def visit(v: str) -> Optional[List[str]]:
        state[v] = 1
        path.append(v)
        for w in sorted(graph[v]):
            if state.get(w) == 1:
                return path[path.index(w):] + [w]
            if w not in state:
                found = visit(w)
                if found:
                    return found
        path.pop()
        state[v] = 2
        return None

    for v in sorted(graph):
        if v not in state:
            found = visit(v)
            if found:
                return found
    return None


def test_the_graph_reader_sees_a_cycle():
    assert _find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}) == ["a", "b", "c", "a"]
    assert _find_cycle({"a": {"b"}, "b": set(), "c": {"a", "b"}}) is None
    # what the package's modules import is read as expected
    assert "tensord._calls" in _load_time_imports("tensord._tensor", MODULES["tensord._tensor"])
    assert _load_time_imports("tensord._context", MODULES["tensord._context"]) == {
        "tensord._errors"}  # Session only under TYPE_CHECKING


def test_no_import_cycles():
    graph = {name: _load_time_imports(name, path) for name, path in MODULES.items()}
    cycle = _find_cycle(graph)
    assert cycle is None, "an import cycle: " + " -> ".join(cycle)


def _torch_python() -> Optional[str]:
    """An interpreter whose PyTorch has Python PrivateUse1 backends (``tensord.torch``'s
    floor), or None: this one, ``$TENSORD_TORCH_PYTHON``, or the checkout's ``.venv-torch``."""
    for python in (sys.executable, os.environ.get("TENSORD_TORCH_PYTHON"),
                   os.path.join(REPO, ".venv-torch", "bin", "python")):
        if python and os.path.exists(python) and subprocess.run(
                [python, "-c", "import torch, sys; sys.exit(0 if hasattr(torch._C, '_acc') "
                 "else 1)"], capture_output=True).returncode == 0:
            return python
    return None


# Imports each module named in argv[1] in a child forked from this interpreter, which has
# imported the package's third-party dependencies (argv[2]) and none of its own modules: every
# child's import of its module is the package's first (a fresh interpreter per module, without
# paying NumPy's, grpcio's and PyTorch's import a hundred times). Prints the modules that failed.
_DRIVER = """
import importlib, os, sys, traceback
for dep in sys.argv[2].split(","):
    importlib.import_module(dep)
assert not [m for m in sys.modules if m == "tensord" or m.startswith("tensord.")]
failed = []
for name in sys.argv[1].split(","):
    pid = os.fork()
    if pid == 0:
        try:
            importlib.import_module(name)
            os._exit(0)
        except BaseException:
            traceback.print_exc()
            os._exit(1)
    if os.waitpid(pid, 0)[1] != 0:
        failed.append(name)
print(",".join(failed))
"""


def _import_each(python: str, names: List[str], deps: List[str]) -> List[str]:
    """The modules of ``names`` that fail to import first under ``python``, with their
    tracebacks."""
    # Import order is the same with the client's plain C modules: the children run the
    # checkout's package without the sanitizer runtime a test run may preload (tools/test.sh's
    # first pass), which doubled this test's time (23 -> 46 s, mostly fork and exit under ASan).
    env = {k: v for k, v in os.environ.items() if k not in ("LD_PRELOAD", "ASAN_OPTIONS")}
    env["PYTHONPATH"] = os.path.join(REPO, "client", "python")
    r = subprocess.run([python, "-c", _DRIVER, ",".join(names), ",".join(deps)], env=env,
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    failed = [n for n in r.stdout.strip().split(",") if n]
    return [f"import {n} first failed:\n{r.stderr[-3000:]}" for n in failed]


def test_every_module_imports_first_in_a_fresh_interpreter():
    deps = ["numpy", "grpc", "google.protobuf"]
    plain = [n for n in MODULES if not n.startswith("tensord.torch")]
    torch_modules = [n for n in MODULES if n.startswith("tensord.torch")]
    failures = _import_each(sys.executable, plain, deps)
    torch_python = _torch_python()
    if torch_python is not None:
        failures += _import_each(torch_python, torch_modules, deps + ["torch"])
    assert not failures, "\n\n".join(failures)
    if torch_python is None:
        pytest.skip(f"{len(torch_modules)} tensord.torch modules need a PyTorch with Python "
                    "PrivateUse1 backends (2.9+; tools/install_deps.sh makes .venv-torch)")
