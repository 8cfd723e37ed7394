#!/usr/bin/env bash
# Builds the Python client's optional C extension (client/python/tensord/_speedups.c, the
# per-op hot path) in place, next to the sources, for the interpreter that runs the client
# from the checkout (PYTHON, default Debian's /usr/bin/python3). Without a C compiler or the
# interpreter's headers (python3-dev) it says so and the client runs its pure-Python path.
# Usage: tools/build_python_ext.sh
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
py="${PYTHON:-/usr/bin/python3}"
pkg="$root/client/python/tensord"
include="$("$py" -c 'import sysconfig; print(sysconfig.get_paths()["include"])')"
suffix="$("$py" -c 'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX"))')"
cc="${CC:-cc}"
if ! command -v "$cc" >/dev/null || [ ! -f "$include/Python.h" ]; then
  echo "tensord: no C compiler or no $include/Python.h: the Python client runs without" \
       "its C speedups (install python3-dev for them)" >&2
  exit 0
fi
out="$pkg/_speedups$suffix"
if [ "$out" -nt "$pkg/_speedups.c" ]; then exit 0; fi
"$cc" -O2 -g -fPIC -shared -Wall -Wextra -Wno-unused-parameter -Wno-missing-field-initializers \
  -fno-strict-aliasing -I"$include" "$pkg/_speedups.c" -o "$out.tmp"
mv "$out.tmp" "$out"
