#!/usr/bin/env bash
# Quick start, command 2: installs what is missing and runs the whole test
# suite: every C++ test (unit and real-daemon integration) under
# AddressSanitizer + UBSan (Note [Where the C++ tests run]), the in-process
# concurrency suites (tag "tsan": session core, allocator, CPU pool) under
# ThreadSanitizer, the libFuzzer targets for a bounded time (tools/fuzz.sh);
# the Python client suite against a real daemon with PyTorch as the reference
# (with the client's C speedups, then without them, then with the speedups
# under ASan + UBSan), the PyTorch device's suites (PyPI's torch); and the
# Python package as a user installs it: a wheel and an sdist into fresh venvs
# (PyPI's grpcio, protobuf, numpy), the examples run from outside the checkout
# (tests/package/test_install.sh). The sanitizer and fuzz suites run alongside
# the Python suites (Note [Overlapped suites]), which run on pytest-xdist
# workers.
#
#   tools/test.sh             # everything (what .ci/run runs)
#   TENSORD_SKIP_ASAN=1 TENSORD_SKIP_TSAN=1 TENSORD_SKIP_FUZZ=1 tools/test.sh
#   TENSORD_FUZZ_SECONDS=300 tools/test.sh
#   TENSORD_SKIP_PACKAGE=1 tools/test.sh   # no PyPI in reach
#   TENSORD_TEST_WORKERS=1 tools/test.sh   # one pytest process per suite
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
# pytest-xdist workers per Python suite, each with a daemon of its own: one test keeps about one
# core busy between the client and its daemon (Note [Overlapped suites]).
workers="${TENSORD_TEST_WORKERS:-$(( $(nproc) < 4 ? $(nproc) : 4 ))}"
pytest_par=()
[ "$workers" -gt 1 ] && pytest_par=(-n "$workers")
# A suite whose daemon is missing fails here instead of skipping (tests/python/daemon_launcher.py).
export TENSORD_REQUIRE_DAEMON=1

# Note [Where the C++ tests run]: a cold run's time is compiling (each translation unit is
# ~100-200K lines after preprocessing, ~20-30 s of a core at -O2; a third of them are tests),
# and the plain and ASan trees used to compile every test each. Every C++ test now runs in the
# ASan + UBSan tree below (the stricter run); the plain tree builds everything but the tests
# (the daemon and tools the Python suites and users run, the benchmarks, the CUDA kernels) and
# runs the tests that need its CUDA build (tag "gpu"; without a GPU they check what they can
# and skip the rest, saying so). With TENSORD_SKIP_ASAN=1 the plain tree runs them all.
section "plain build: everything but the tests (bazel build), and the CUDA build's tests (tag gpu)"
bazel query --noshow_progress 'attr(testonly, 0, //...)' >"${TMPDIR:-/tmp}/tensord-plain-targets"
bazel build "${jobs_flag[@]}" -- $(cat "${TMPDIR:-/tmp}/tensord-plain-targets")
rm -f "${TMPDIR:-/tmp}/tensord-plain-targets"
if [ -n "${TENSORD_SKIP_ASAN:-}" ]; then
  section "C++ tests (bazel test //...; TENSORD_SKIP_ASAN=1: in the plain tree)"
  bazel test "${jobs_flag[@]}" //...
else
  bazel test "${jobs_flag[@]}" --build_tests_only --test_tag_filters=gpu //...
fi
tools/gen_python_proto.sh
tools/build_python_ext.sh

# Note [Overlapped suites]: the Python suites wait on round trips to their daemons more than
# they compute, so the sanitizer and fuzz builds run alongside them instead of after them (a
# cold run spent most of its time compiling those trees one after the other). They run in the
# background in this order, each in its own output tree (.bazelrc, Note [Sanitizer output
# trees]), so bazel-bin/ (the plain daemon the Python suites run) is never touched; their
# output is printed after the Python suites, and either side failing fails the run.
sanitizer_suites() {
  if [ -z "${TENSORD_SKIP_ASAN:-}" ]; then
    section "C++ tests, every one, under AddressSanitizer + UBSan (bazel test --config=asan; Note [Where the C++ tests run])"
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
}
sanitizer_log="$(mktemp -t tensord-sanitizers.XXXXXX)"
(set -e; sanitizer_suites) >"$sanitizer_log" 2>&1 &
sanitizer_pid=$!
# If a Python suite fails, the script stops here: stop the background builds with it (the
# bazel client cancels its command on SIGTERM).
# Children first: once the subshell is gone they belong to init and -P finds none.
trap 'pkill -TERM -P "$sanitizer_pid" 2>/dev/null; kill -TERM "$sanitizer_pid" 2>/dev/null; true' EXIT

section "Python client tests (pytest, real daemon, PyTorch reference)"
PYTHONPATH="$root/client/python" "$PYTHON" -m pytest -q -rs "${pytest_par[@]}" tests/python  # -rs: every skip with its reason
section "Python client tests again without its C extensions (TENSORD_PURE_PYTHON=1)"
TENSORD_PURE_PYTHON=1 PYTHONPATH="$root/client/python" "$PYTHON" -m pytest -q "${pytest_par[@]}" tests/python
# The tensord PyTorch device runs under PyPI's current torch, in the venv install_deps.sh made;
# without that venv (TENSORD_SKIP_TORCH_VENV=1) the suite runs on Debian's and skips, saying why.
section "PyTorch device tests (tensord.torch, .venv-torch's PyTorch, real daemon)"
TORCH_PYTHON="$root/.venv-torch/bin/python"
[ -x "$TORCH_PYTHON" ] || TORCH_PYTHON="$PYTHON"
PYTHONPATH="$root/client/python" "$TORCH_PYTHON" -m pytest -q -rs "${pytest_par[@]}" tests/python_torch
# Skips, saying why, when that interpreter's PyTorch has no trace_plot/segment_plot.
section "Memory history drawn by PyTorch's own torch.cuda._memory_viz (.venv-torch, real daemon)"
PYTHONPATH="$root/client/python" "$TORCH_PYTHON" -m pytest -q -rs tests/memory_viz
# The OpInfo conformance suite ran above with every op's result checked against its meta
# function; this pass runs the programs and the device's own tests as users run them.
section "PyTorch device tests again on the production path (no meta check per op; not the OpInfo suite)"
TENSORD_TORCH_CHECK=0 PYTHONPATH="$root/client/python" "$TORCH_PYTHON" -m pytest -q \
  "${pytest_par[@]}" tests/python_torch --ignore=tests/python_torch/test_opinfo.py
section "metrics scraped by a real Prometheus, tensorctl users and kill --reason (tests/metrics)"
PYTHONPATH="$root/client/python" "$PYTHON" -m pytest -q -rs tests/metrics
if [ -z "${TENSORD_SKIP_ASAN:-}" ]; then
  section "Python client tests with its C speedups under AddressSanitizer + UBSan"
  asan_client="$(mktemp -d)"
  tools/build_python_ext.sh --asan "$asan_client"
  # The interpreter is not instrumented: the runtimes are preloaded; Python's own allocations
  # live until exit by design, so leak checking is off.
  LD_PRELOAD="$(gcc -print-file-name=libasan.so):$(gcc -print-file-name=libubsan.so)" \
    ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 \
    UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 TENSORD_PYTHON_CLIENT="$asan_client" \
    "$PYTHON" -m pytest -q "${pytest_par[@]}" tests/python
  rm -rf "$asan_client"
fi

if [ -z "${TENSORD_SKIP_PACKAGE:-}" ]; then
  section "Python package: wheel and sdist into fresh venvs, examples from outside the checkout"
  tests/package/test_install.sh
fi

section "waiting for the sanitizer and fuzz suites (started after the C++ tests)"
sanitizer_status=0
wait "$sanitizer_pid" || sanitizer_status=$?
trap - EXIT
grep -v 'linux-sandbox' "$sanitizer_log"
rm -f "$sanitizer_log"
if [ "$sanitizer_status" -ne 0 ]; then
  section "FAILED: a sanitizer or fuzz suite (its output is above)"
  exit "$sanitizer_status"
fi
section "all tensord tests passed"
