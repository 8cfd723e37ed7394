"""Compiles the Python client's C speedups (client/python/tensord/_speedups.c) for the running
interpreter, in place, when they are missing for it: a bundle (tools/make_bundle.sh) carries the
build machine's (Debian's Python 3.11), and a GPU box's Python is often another version.

    python3 tools/build_speedups.py [CLIENT_DIR]     # default: client/python beside tools/

Needs a C compiler (`cc`, or $CC) and the interpreter's headers; without them it says so and
exits 0 (the client then runs its pure-Python path, which tests/python/test_speedups.py holds to
the same results). Exits 1 only when a compile was attempted and failed.
"""

import os
import shutil
import subprocess
import sys
import sysconfig


def main() -> int:
    here = os.path.dirname(os.path.abspath(__file__))
    client = sys.argv[1] if len(sys.argv) > 1 else os.path.join(here, "..", "client", "python")
    pkg = os.path.join(client, "tensord")
    src = os.path.join(pkg, "_speedups.c")
    out = os.path.join(pkg, "_speedups" + sysconfig.get_config_var("EXT_SUFFIX"))
    if os.path.exists(out) and os.path.getmtime(out) >= os.path.getmtime(src):
        return 0
    include = sysconfig.get_paths()["include"]
    cc = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    if cc is None or not os.path.exists(os.path.join(include, "Python.h")):
        print(f"build_speedups: no C compiler or no Python.h in {include}: the client runs its "
              "pure-Python path", file=sys.stderr)
        return 0
    cmd = [cc, "-O2", "-shared", "-fPIC", f"-I{include}", src, "-o", out]
    if subprocess.run(cmd).returncode != 0:
        print(f"build_speedups: {' '.join(cmd)} failed", file=sys.stderr)
        return 1
    print(f"build_speedups: built {os.path.relpath(out)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
