#!/usr/bin/env bash
# Installs, with apt, whatever tensord's build and tests need and this Debian 12
# machine lacks. Idempotent; quiet when everything is present. Needs root (or
# sudo) only when something is missing.
set -euo pipefail

PACKAGES=(
  bazel-bootstrap g++ pkg-config
  libgrpc++-dev libprotobuf-dev protobuf-compiler protobuf-compiler-grpc
  libabsl-dev libspdlog-dev libgtest-dev libgmock-dev libbenchmark-dev
  libopenblas-dev
  # libFuzzer targets (tools/fuzz.sh): clang 14 and its sanitizer runtimes.
  clang libclang-rt-14-dev
  # The Python client and its reference tests run on Debian's /usr/bin/python3.
  python3 python3-grpcio python3-grpc-tools python3-protobuf python3-numpy
  python3-pytest python3-torch
  # Headers for the Python client's C speedups (tools/build_python_ext.sh).
  python3-dev
  openssl procps
)

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "tensord: installing missing packages: ${missing[*]}" >&2
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q
$SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
