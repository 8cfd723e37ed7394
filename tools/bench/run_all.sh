#!/bin/bash
# One command for every tensord benchmark, side by side with local PyTorch:
#
#   tools/bench/run_all.sh [--quick] [--threads N] [--daemon_args="..."]
#                          [--only tiny,sync,transfer,train,train_gpt,sharing,alloc]
#                          [--debian_torch]
#
# Builds the daemon and the C++ bench binaries with `bazel build -c opt` (no
# convenience symlinks, so bazel-bin/ keeps pointing at the default build),
# then tools/bench/run_all.py starts its own daemon on 127.0.0.1:0 and prints
# one table of ratios. The tensord clients run on Debian's /usr/bin/python3; the
# reference is current PyTorch from PyPI in .venv-torch (tools/install_deps.sh),
# with the same thread count (--debian_torch adds Debian's 1.13 as a second
# column). Record results in BENCHMARKS.md.
set -euo pipefail
cd "$(dirname "$0")/../.."

targets=(//server:tensord //tools/bench:tiny_ops_bench //tools/bench:alloc_bench
         //tools/bench:grpc_pingpong)
bazel build -c opt --symlink_prefix=/ "${targets[@]}" >&2
bin="$(bazel info -c opt bazel-bin 2>/dev/null)"

tools/build_python_ext.sh >&2  # the Python client's per-op C path (no-op when up to date)
# The Python client's generated protobuf modules (again when a .proto changed).
gen=client/python/tensord/_proto/tensord_pb2.py
if [[ ! -f $gen || -n "$(find proto -name '*.proto' -newer "$gen")" ]]; then
  tools/gen_python_proto.sh >&2
fi

if [[ ! -x .venv-torch/bin/python && -z ${TENSORD_TORCH_PYTHON:-} ]]; then
  echo "run_all.sh: no .venv-torch (the PyTorch reference): run tools/install_deps.sh" >&2
  exit 1
fi
exec /usr/bin/python3 tools/bench/run_all.py --bin "$bin" "$@"
