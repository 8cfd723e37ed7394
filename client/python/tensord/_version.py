"""The client package's version: the one place it is written.

``pyproject.toml`` reads it (``[tool.setuptools.dynamic]``, statically: building the package
imports nothing), ``tensord.__version__`` re-exports it, and the Hello's ``client_name``
carries it (``tensord-python/<version>``), so ``tensorctl sessions`` shows which client a
session runs. The daemon's version is made from this line too (Note [Version], server/BUILD:
``kServerVersion`` in the generated server/version.h), so keep it one ``__version__ = "X.Y.Z"``
line; tests/metrics/test_version.py checks every surface that shows it.
"""

__version__ = "0.1.0"
