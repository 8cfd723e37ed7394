"""Run by test_install.sh with an installed tensord (a venv's python, cwd and sys.path outside
the checkout): the package came from site-packages, every module in it imports, the versions
agree, the C extensions are there or not as the build said, and a session against the daemon
works.

    python check_install.py ADDRESS DAEMON_VERSION {with-speedups|without-speedups}
"""

import importlib
import importlib.metadata
import importlib.util
import os
import pkgutil
import sys
import sysconfig


def fail(msg: str) -> None:
    print(f"check_install: FAIL: {msg}", file=sys.stderr)
    sys.exit(1)


def main() -> None:
    address, daemon_version, speedups = sys.argv[1:4]
    import tensord as td

    site = os.path.realpath(sysconfig.get_paths()["purelib"])
    where = os.path.realpath(td.__file__)
    if not where.startswith(site + os.sep):
        fail(f"tensord imported from {where}, not from the venv's {site}")
    for info in pkgutil.walk_packages(td.__path__, "tensord."):
        try:
            importlib.import_module(info.name)
        except ModuleNotFoundError as e:
            if e.name != "torch":  # tensord.torch needs the `torch` extra, not installed here
                fail(f"import {info.name}: {e!r}")
    dist_version = importlib.metadata.version("tensord")
    if not (td.__version__ == dist_version == daemon_version):
        fail(f"versions disagree: tensord.__version__ {td.__version__}, the installed "
             f"distribution {dist_version}, the daemon's kServerVersion {daemon_version}")
    found = [m for m in ("_speedups", "_mailbox", "_ring")
             if importlib.util.find_spec(f"tensord.{m}") is not None]
    if speedups == "with-speedups" and len(found) != 3:
        fail(f"the wheel was built with a C compiler but carries only {found}")
    if speedups == "without-speedups" and found:
        fail(f"built without a C compiler, yet {found} are installed")

    with td.connect(address) as session:
        if session.server_version != td.__version__:
            fail(f"the daemon says version {session.server_version}, the client {td.__version__}")
        y = (td.arange(6, dtype=td.float32).reshape(2, 3) * 2).sum(dim=1)
        if y.tolist() != [6.0, 24.0]:
            fail(f"(arange(6).reshape(2, 3) * 2).sum(1) gave {y.tolist()}")
    print(f"check_install: tensord {td.__version__} from {os.path.dirname(where)}, "
          f"C extensions {found or 'none'}, daemon {address} ok")


if __name__ == "__main__":
    main()
