"""The client package's version: the one place it is written.

``pyproject.toml`` reads it (``[tool.setuptools.dynamic]``, statically: building the package
imports nothing), ``tensord.__version__`` re-exports it, and the Hello's ``client_name``
carries it (``tensord-python/<version>``), so ``tensorctl sessions`` shows which client a
session runs. Kept equal to the daemon's ``kServerVersion`` (server/session_manager.h);
tests/package/test_install.sh checks both.
"""

__version__ = "0.1.0"
