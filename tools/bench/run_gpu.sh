#!/usr/bin/env bash
# The GPU benchmarks against local PyTorch on the same GPU, in one run, as one table:
#
#   tools/bench/run_gpu.sh [--quick] [--threads N] [--daemon_args="..."] [--require_gpu]
#
# Works from a checkout (builds tensord and cuda_bench with `bazel build -c opt`, no
# convenience symlinks) and from a bundle made by tools/make_bundle.sh (uses its wrappers:
# no Bazel needed). tools/bench/run_gpu.py then runs cuda_bench, starts its own daemon on
# 127.0.0.1:0 and runs py_bench.py --device cuda for tensord and PyTorch. Without a GPU it
# prints "SKIP run_gpu: ..." with the reason and exits 0 (1 with --require_gpu).
#
# The interpreter: $TENSORD_PYTHON if set, else the first of `python3` and /usr/bin/python3
# that imports grpc, google.protobuf, numpy and torch (a GPU box's python3 with pip's torch;
# Debian's /usr/bin/python3 with python3-torch here). docs/gpu.md has the whole procedure.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"

if [[ -n "${TENSORD_PYTHON:-}" ]]; then
  py="$TENSORD_PYTHON"
  if ! "$py" -c 'import grpc, google.protobuf, numpy, torch'; then
    echo "run_gpu: TENSORD_PYTHON=$py cannot import grpc, google.protobuf, numpy and torch" >&2
    exit 1
  fi
else
  py=""
  for c in python3 /usr/bin/python3; do
    if command -v "$c" >/dev/null &&
       "$c" -c 'import grpc, google.protobuf, numpy, torch' 2>/dev/null; then
      py="$c"; break
    fi
  done
  if [[ -z "$py" ]]; then
    echo "run_gpu: no Python with grpcio, protobuf, numpy and torch (tried python3 and" \
         "/usr/bin/python3): install them or set TENSORD_PYTHON" >&2
    exit 1
  fi
fi
export TENSORD_PYTHON="$py"

if [[ -x "$root/bin/tensord" && ! -f "$root/WORKSPACE" ]]; then
  # A bundle (tools/make_bundle.sh): the wrappers set LD_LIBRARY_PATH to its lib/.
  daemon="$root/tensord"
  cuda_bench="$root/tools_bench_gpu_cuda_bench"
else
  bazel build -c opt --symlink_prefix=/ //server:tensord //tools/bench/gpu:cuda_bench >&2
  bin="$(bazel info -c opt bazel-bin 2>/dev/null)"
  daemon="$bin/server/tensord"
  cuda_bench="$bin/tools/bench/gpu/cuda_bench"
fi

# The Python client's generated protobuf modules, made by this interpreter's protobuf when
# missing (tools/gen_python_proto.sh picks a protoc its runtime can load).
if [[ ! -f client/python/tensord/_proto/tensord_pb2.py ]]; then
  PYTHON="$py" tools/gen_python_proto.sh >&2
fi

# The client's C speedups for this interpreter (a bundle carries the build machine's).
PYTHON="$py" tools/build_python_ext.sh >&2 || true

exec "$py" tools/bench/run_gpu.py --daemon "$daemon" --cuda_bench "$cuda_bench" "$@"
