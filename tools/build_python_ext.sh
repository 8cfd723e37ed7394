#!/usr/bin/env bash
# Builds the Python client's optional C extensions (client/python/tensord/_speedups.c, the
# per-op hot path, _mailbox.c, the region mailbox's wait, and _ring.c, the command ring) in
# place, next to the sources, for the interpreter that runs the client from the checkout
# (PYTHON, default Debian's /usr/bin/python3; a bundle's run_tests.sh and run_gpu.sh pass
# theirs). Without a C compiler or the interpreter's headers (python3-dev) it says so and the
# client runs its pure-Python path.
#
#   tools/build_python_ext.sh              # in place (a no-op when up to date)
#   tools/build_python_ext.sh --asan DIR   # a copy of the package in DIR/tensord whose
#                                          # extension has AddressSanitizer + UBSan; run it
#                                          # with the runtimes preloaded (tools/test.sh)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
py="${PYTHON:-/usr/bin/python3}"
pkg="$root/client/python/tensord"
modules=(_speedups _mailbox _ring)
include="$("$py" -c 'import sysconfig; print(sysconfig.get_paths()["include"])')"
suffix="$("$py" -c 'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX"))')"
cc="${CC:-cc}"
if ! command -v "$cc" >/dev/null || [ ! -f "$include/Python.h" ]; then
  echo "tensord: no C compiler or no $include/Python.h: the Python client runs without" \
       "its C speedups (install python3-dev for them)" >&2
  exit 0
fi
flags=(-fPIC -shared -Wall -Wextra -Wno-unused-parameter -Wno-missing-field-initializers
       -fno-strict-aliasing -I"$include")
if [ "${1:-}" = "--asan" ]; then
  dir="${2:?usage: tools/build_python_ext.sh --asan DIR}"
  rm -rf "$dir/tensord"
  mkdir -p "$dir"
  cp -r "$root/client/python/tensord" "$dir/tensord"
  for m in "${modules[@]}"; do
    rm -f "$dir"/tensord/"$m"*.so
    "$cc" -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined "${flags[@]}" \
      "$pkg/$m.c" -o "$dir/tensord/$m$suffix"
  done
  exit 0
fi
# Up to date: the module is newer than its source and every header in the package (the
# sources include only their own headers: _speedups_*.h).
up_to_date() {
  local out="$1" src
  for src in "$pkg/$2.c" "$pkg"/*.h; do
    [ -e "$src" ] || continue
    [ "$out" -nt "$src" ] || return 1
  done
}
for m in "${modules[@]}"; do
  out="$pkg/$m$suffix"
  if up_to_date "$out" "$m"; then continue; fi
  "$cc" -O2 -g "${flags[@]}" "$pkg/$m.c" -o "$out.tmp"
  mv "$out.tmp" "$out"
done
