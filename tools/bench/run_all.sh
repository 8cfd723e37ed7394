#!/bin/bash
# One command for every tensord benchmark, side by side with local PyTorch:
#
#   tools/bench/run_all.sh [--quick] [--threads N] [--daemon_args="..."]
#
# Builds the daemon and the C++ bench binaries with `bazel build -c opt` (no
# convenience symlinks, so bazel-bin/ keeps pointing at the default build),
# then tools/bench/run_all.py starts its own daemon on 127.0.0.1:0 and prints
# one table of ratios. Uses Debian's /usr/bin/python3 (python3-torch is the
# reference). Record results in BENCHMARKS.md.
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

exec /usr/bin/python3 tools/bench/run_all.py --bin "$bin" "$@"
