#!/usr/bin/env bash
# Installs, with apt, whatever tensord's build and tests need and this Debian 12
# machine lacks. Idempotent; quiet when everything is present. Needs root (or
# sudo) only when something is missing.
#
#   tools/install_deps.sh               # both parts
#   tools/install_deps.sh packages      # Debian's packages only (what the build needs)
#   tools/install_deps.sh torch-venv    # the PyTorch venv only (tools/test.sh runs it
#                                       # alongside the build: it waits on PyPI, not a core)
set -euo pipefail
part="${1:-all}"
case "$part" in
  all | packages | torch-venv) ;;
  *) echo "usage: $0 [packages|torch-venv]" >&2; exit 2 ;;
esac

PACKAGES=(
  bazel-bootstrap g++ pkg-config
  libgrpc++-dev libprotobuf-dev protobuf-compiler protobuf-compiler-grpc
  libabsl-dev libspdlog-dev libgtest-dev libgmock-dev libbenchmark-dev
  libopenblas-dev
  # oneDNN: conv2d's CPU kernels (kernels/cpu/onednn_conv.h).
  libdnnl-dev
  # The daemon's metrics exporter; the real Prometheus its test scrapes with.
  prometheus-cpp-dev prometheus
  # The sanitized tree and the libFuzzer targets (tools/fuzz.sh): clang 14, its sanitizer
  # runtimes, and lld, which links that tree (.bazelrc).
  clang libclang-rt-14-dev lld
  # The Python client and its reference tests run on Debian's /usr/bin/python3.
  python3 python3-grpcio python3-grpc-tools python3-protobuf python3-numpy
  python3-pytest python3-pytest-xdist python3-torch
  # The venv of the PyTorch device's tests (below).
  python3-venv
  # Headers for the Python client's C speedups (tools/build_python_ext.sh).
  python3-dev
  openssl procps
)

missing=()
[ "$part" = torch-venv ] && PACKAGES=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -ne 0 ]; then
  echo "tensord: installing missing packages: ${missing[*]}" >&2
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -q
  $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

# The `tensord` PyTorch device (client/python/tensord/torch, tests/python_torch) needs a current
# PyTorch (>= 2.4; Debian's is 1.13): PyPI's newest, in the project's own venv at .venv-torch
# (git-ignored), built on Debian's interpreter. ~5 GB with its CUDA libraries. Skipped when the
# venv already imports torch; TENSORD_SKIP_TORCH_VENV=1 skips it altogether.
if [ -z "${TENSORD_SKIP_TORCH_VENV:-}" ] && [ "$part" != packages ]; then
  root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
  venv="$root/.venv-torch"
  if ! "$venv/bin/python" -c "import torch, grpc, google.protobuf, numpy, pytest, xdist, transformers, expecttest" \
      2>/dev/null; then
    echo "tensord: creating $venv with PyTorch from PyPI (a few minutes)" >&2
    /usr/bin/python3 -m venv "$venv"
    "$venv/bin/python" -m pip install -q --upgrade pip
    # transformers: tests/python_torch/test_transformers.py (a tiny random GPT-2, no downloads).
    # expecttest: torch.testing._internal (the OpInfo suite, tests/python_torch/test_opinfo.py).
    # pytest-xdist: tools/test.sh runs each suite on several workers.
    "$venv/bin/python" -m pip install -q torch grpcio protobuf numpy pytest pytest-xdist transformers expecttest
  fi
fi
