#!/usr/bin/env bash
# The Python client as a user installs it: from a clean copy of the checkout (tracked and
# unignored files only, as a fresh clone has them), builds a wheel and an sdist, installs each
# into a fresh venv (Debian's /usr/bin/python3 -m venv; grpcio, protobuf and numpy from PyPI,
# as the package's metadata asks), and runs tests/package/check_install.py and the Python
# examples (few steps) from a temp directory, with no PYTHONPATH, against a real daemon.
#   wheel: `pip wheel` of client/python, as `pip install ./client/python` builds it; the C
#          extensions must be in it when a compiler and Python's headers are here.
#   sdist: built from the same copy; must carry the generated stubs (it is built into a wheel
#          with no proto sources in reach) and build with no C compiler at all (CC=false: the
#          extensions are optional), then run pure Python.
# Fails on the first thing wrong. ~1-2 min warm; pip's own cache keeps the downloads.
#
#   tests/package/test_install.sh       # needs bazel-bin/server/tensord (TENSORD_BINARY)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
daemon="${TENSORD_BINARY:-$root/bazel-bin/server/tensord}"
[ -x "$daemon" ] || { echo "test_install: no daemon at $daemon (bazel build //server:tensord)" >&2; exit 1; }
daemon_version="$("$daemon" --version | sed -n 's/^tensord //p')"  # Note [Version], server/BUILD
[ -n "$daemon_version" ] || { echo "test_install: $daemon --version named no version" >&2; exit 1; }

work="$(mktemp -d /tmp/tensord-package.XXXXXX)"
daemon_pid=""
cleanup() {
  [ -n "$daemon_pid" ] && kill -TERM "$daemon_pid" 2>/dev/null && wait "$daemon_pid" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT
step() { echo "-- test_install: $* ($SECONDS s)"; }

# What a fresh clone holds: no build/, egg-info, generated stubs or in-place extensions.
mkdir -p "$work/src" "$work/examples" "$work/run" "$work/dist" "$work/sdist-wheel"
(cd "$root" && git ls-files -co --exclude-standard -- client/python proto examples/python |
   tar -cf - -T -) | tar -xf - -C "$work/src"
cp "$work"/src/examples/python/*.py "$work/examples/"

step "daemon"
"$daemon" --listen=127.0.0.1:0 --insecure --port_file="$work/port" >"$work/daemon.log" 2>&1 &
daemon_pid=$!
for _ in $(seq 1 300); do
  [ -s "$work/port" ] && break
  kill -0 "$daemon_pid" 2>/dev/null || { cat "$work/daemon.log" >&2; exit 1; }
  sleep 0.1
done
[ -s "$work/port" ] || { echo "test_install: the daemon wrote no port" >&2; cat "$work/daemon.log" >&2; exit 1; }
address="127.0.0.1:$(cat "$work/port")"

# venv NAME: a fresh venv of Debian's interpreter; nothing from the system's site-packages.
venv() { /usr/bin/python3 -m venv "$work/$1" && echo "$work/$1/bin/python"; }

# run_installed PYTHON SPEEDUPS: the checks and every example, cwd outside the checkout.
run_installed() {
  local py="$1" speedups="$2"
  (cd "$work/run" && env -u PYTHONPATH -u PYTHONHOME PYTHONNOUSERSITE=1 bash -euo pipefail -c '
    py="$1"; address="$2"; ex="$3"
    "$py" "$4" "$address" "$5" "$6"
    "$py" "$ex/quickstart.py" | tee out.txt; grep -q "^loss=" out.txt
    "$py" "$ex/mnist_mlp.py" --address "$address" --steps 3 --batch-size 16 | tee out.txt
    grep -q "^3 steps in" out.txt
    "$py" "$ex/cifar_cnn.py" --address "$address" --steps 2 --batch-size 8 --optimizer adam |
      tee out.txt; grep -q "^2 steps in" out.txt
    "$py" "$ex/cifar_resnet.py" --address "$address" --steps 1 --batch-size 4 | tee out.txt
    grep -q "^1 steps in" out.txt
  ' _ "$py" "$address" "$work/examples" "$root/tests/package/check_install.py" \
      "$daemon_version" "$speedups")
}
export TENSORD_ADDRESS="$address"  # quickstart.py's td.connect() reads it

cc_ok=without-speedups
if command -v "${CC:-cc}" >/dev/null &&
   /usr/bin/python3 -c 'import os, sysconfig, sys; sys.exit(not os.path.exists(
       os.path.join(sysconfig.get_paths()["include"], "Python.h")))'; then
  cc_ok=with-speedups
fi

step "wheel: build (pip wheel client/python)"
py="$(venv venv-wheel)"
"$py" -m pip wheel -q --no-deps -w "$work/dist" "$work/src/client/python"
wheel="$(ls "$work"/dist/tensord-*.whl)"
# Every package of the tree (the generated _proto included) is in the wheel: the bug this test
# was written for was tensord.optim missing from a hand-kept list.
want="$(cd "$work/src/client/python" && find tensord -name __init__.py | sort)"
have="$(/usr/bin/python3 -m zipfile -l "$wheel" | awk '{print $1}' | grep '/__init__\.py$' | sort)"
[ "$want" = "$have" ] || { echo "test_install: the wheel's packages differ from the tree's:" >&2
                           diff <(echo "$want") <(echo "$have") >&2; exit 1; }
step "wheel: install $(basename "$wheel") with its dependencies"
"$py" -m pip install -q "$wheel"
step "wheel: checks and examples ($cc_ok)"
run_installed "$py" "$cc_ok"

step "sdist: build"
(cd "$work/src/client/python" &&
   "$py" -c 'import sys; from setuptools import build_meta as b; b.build_sdist(sys.argv[1])' \
     "$work/dist" >"$work/sdist.log" 2>&1) || { cat "$work/sdist.log" >&2; exit 1; }
sdist="$(ls "$work"/dist/tensord-*.tar.gz)"
tar -tzf "$sdist" >"$work/sdist.txt"
for f in gen_proto.py pyproject.toml tensord/_version.py tensord/_proto/tensord_pb2.py \
         tensord/_proto/admin_pb2_grpc.py tensord/optim/__init__.py tensord/_speedups.c \
         tensord/_speedups_call.h; do
  grep -q "^tensord-[^/]*/$f\$" "$work/sdist.txt" || {
    echo "test_install: the sdist lacks $f" >&2; exit 1; }
done
step "sdist: build a wheel from $(basename "$sdist") with no proto sources and no C compiler"
py="$(venv venv-sdist)"
# --no-cache-dir: pip would cache this wheel under the sdist's name and version and reuse it.
CC=false TENSORD_PROTO_DIR="$work/no-such-dir" \
  "$py" -m pip wheel -q --no-deps --no-cache-dir -w "$work/sdist-wheel" "$sdist"
"$py" -m pip install -q "$work"/sdist-wheel/tensord-*.whl
step "sdist: checks and examples (pure Python)"
run_installed "$py" without-speedups

step "daemon: still serving, then a clean exit on SIGTERM"
kill -0 "$daemon_pid" || { echo "test_install: the daemon died" >&2; cat "$work/daemon.log" >&2; exit 1; }
kill -TERM "$daemon_pid"
rc=0; wait "$daemon_pid" || rc=$?
daemon_pid=""
[ "$rc" -eq 0 ] || { echo "test_install: the daemon exited $rc" >&2; cat "$work/daemon.log" >&2; exit 1; }
step "passed"
