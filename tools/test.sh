#!/usr/bin/env bash
# Quick start, command 2: installs what is missing and runs the whole test
# suite: every C++ test (unit and real-daemon integration), the Python client
# suite against a real daemon with PyTorch as the reference (with the client's
# C speedups, then without them), the C++ suites and the Python suite's C
# speedups under AddressSanitizer + UBSan, the in-process concurrency suites
# (tag "tsan": session core, allocator, CPU pool) under ThreadSanitizer, and
# the libFuzzer targets for a bounded time (tools/fuzz.sh). Also the Python package as a user
# installs it: a wheel and an sdist into fresh venvs (PyPI's grpcio, protobuf, numpy), the
# examples run from outside the checkout (tests/package/test_install.sh).
#
#   tools/test.sh             # everything (what .ci/run runs)
#   TENSORD_SKIP_ASAN=1 TENSORD_SKIP_TSAN=1 TENSORD_SKIP_FUZZ=1 tools/test.sh
#   TENSORD_FUZZ_SECONDS=300 tools/test.sh
#   TENSORD_SKIP_PACKAGE=1 tools/test.sh   # no PyPI in reach
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
# Debian's interpreter: it owns python3-torch, -grpcio, -numpy (see README).
PYTHON=/usr/bin/python3

# Each section's header carries the time since the start: where a cold run spends it.
section() { printf '== %s  [%dm%02ds]\n' "$1" $((SECONDS / 60)) $((SECONDS % 60)); }

tools/install_deps.sh
jobs_flag=()
[ -n "${TENSORD_BAZEL_JOBS:-}" ] && jobs_flag=(--jobs="$TENSORD_BAZEL_JOBS")

section "C++ tests (bazel test //...)"
bazel test "${jobs_flag[@]}" //...

section "Python client tests (pytest, real daemon, PyTorch reference)"
bazel build "${jobs_flag[@]}" //server:tensord
tools/gen_python_proto.sh
tools/build_python_ext.sh
PYTHONPATH="$root/client/python" "$PYTHON" -m pytest -q -rs tests/python  # -rs: every skip with its reason
section "Python client tests again without its C extensions (TENSORD_PURE_PYTHON=1)"
TENSORD_PURE_PYTHON=1 PYTHONPATH="$root/client/python" "$PYTHON" -m pytest -q tests/python
# The tensord PyTorch device runs under PyPI's current torch, in the venv install_deps.sh made;
# without that venv (TENSORD_SKIP_TORCH_VENV=1) the suite runs on Debian's and skips, saying why.
section "PyTorch device tests (tensord.torch, .venv-torch's PyTorch, real daemon)"
TORCH_PYTHON="$root/.venv-torch/bin/python"
[ -x "$TORCH_PYTHON" ] || TORCH_PYTHON="$PYTHON"
PYTHONPATH="$root/client/python" "$TORCH_PYTHON" -m pytest -q -rs tests/python_torch
# Skips, saying why, when that interpreter's PyTorch has no trace_plot/segment_plot.
section "Memory history drawn by PyTorch's own torch.cuda._memory_viz (.venv-torch, real daemon)"
PYTHONPATH="$root/client/python" "$TORCH_PYTHON" -m pytest -q -rs tests/memory_viz
section "PyTorch device tests again on the production path (no meta check per op)"
TENSORD_TORCH_CHECK=0 PYTHONPATH="$root/client/python" "$TORCH_PYTHON" -m pytest -q tests/python_torch
section "metrics scraped by a real Prometheus, tensorctl users and kill --reason (tests/metrics)"
bazel build "${jobs_flag[@]}" //tools:tensorctl
PYTHONPATH="$root/client/python" "$PYTHON" -m pytest -q -rs tests/metrics
if [ -z "${TENSORD_SKIP_ASAN:-}" ]; then
  # The plain daemon, bazel-bin/server/tensord: the sanitizer configs build into trees of their
  # own (.bazelrc, Note [Sanitizer output trees]), so this step may run in any order.
  section "Python client tests with its C speedups under AddressSanitizer + UBSan"
  asan_client="$(mktemp -d)"
  tools/build_python_ext.sh --asan "$asan_client"
  # The interpreter is not instrumented: the runtimes are preloaded; Python's own allocations
  # live until exit by design, so leak checking is off.
  LD_PRELOAD="$(gcc -print-file-name=libasan.so):$(gcc -print-file-name=libubsan.so)" \
    ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 \
    UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 TENSORD_PYTHON_CLIENT="$asan_client" \
    "$PYTHON" -m pytest -q tests/python
  rm -rf "$asan_client"
fi

if [ -z "${TENSORD_SKIP_PACKAGE:-}" ]; then
  section "Python package: wheel and sdist into fresh venvs, examples from outside the checkout"
  tests/package/test_install.sh
fi

if [ -z "${TENSORD_SKIP_ASAN:-}" ]; then
  section "C++ tests under AddressSanitizer + UBSan (bazel test --config=asan)"
  bazel test "${jobs_flag[@]}" --config=asan //...
fi

if [ -z "${TENSORD_SKIP_TSAN:-}" ]; then
  section "concurrency suites under ThreadSanitizer (bazel test --config=tsan; docs/reliability.md)"
  bazel test "${jobs_flag[@]}" --config=tsan //...
fi

if [ -z "${TENSORD_SKIP_FUZZ:-}" ]; then
  section "fuzzing the session core (clang libFuzzer, ASan + UBSan; docs/reliability.md)"
  tools/fuzz.sh --time="${TENSORD_FUZZ_SECONDS:-30}"
fi
section "all tensord tests passed"
