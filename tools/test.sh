#!/usr/bin/env bash
# Quick start, command 2: installs what is missing and runs the whole test
# suite. The code is compiled once, under clang's AddressSanitizer + UBSan
# (Note [Where the C++ tests run]), and everything runs from that tree: every
# C++ test (unit and real-daemon integration), the libFuzzer targets for a
# bounded time (tools/fuzz.sh), and the daemon and tensorctl that the Python
# suites drive: the Python client suite with PyTorch as the reference (with
# the client's C speedups under ASan + UBSan, then without them), the
# PyTorch device's suites (PyPI's torch), the metrics and
# memory-history suites, and the Python package as a user installs it (a
# wheel and an sdist into fresh venvs, PyPI's grpcio, protobuf and numpy, the
# examples run from outside the checkout: tests/package/test_install.sh).
# The in-process concurrency suites (tag "tsan": session core, allocator, CPU
# pool) run under ThreadSanitizer. The C++, TSan and fuzz suites run
# alongside the Python suites (Note [Overlapped suites]), which run on
# pytest-xdist workers.
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

# Each section's header carries the time since the start: where a cold run spends it. The
# headers are repeated together as the run's last lines (a CI log's tail shows them all).
timeline="$(mktemp -t tensord-timeline.XXXXXX)"
section() {
  local line
  line="$(printf '== %s  [%dm%02ds]' "$1" $((SECONDS / 60)) $((SECONDS % 60)))"
  echo "$line"
  echo "$line" >>"$timeline"
}
print_timeline() {
  echo "== the run's sections as they started (the C++, TSan and fuzz ones beside the Python suites):"
  sed 's/^== /   /' "$timeline"
  rm -f "$timeline"
}

tools/install_deps.sh packages
# The PyTorch venv (PyPI's torch, ~5 GB: network and disk more than CPU) is made alongside the
# build; the suites that need it wait for it.
venv_log="$(mktemp -t tensord-venv.XXXXXX)"
tools/install_deps.sh torch-venv >"$venv_log" 2>&1 &
venv_pid=$!
trap 'kill -TERM "$venv_pid" 2>/dev/null; print_timeline' EXIT
jobs_flag=()
[ -n "${TENSORD_BAZEL_JOBS:-}" ] && jobs_flag=(--jobs="$TENSORD_BAZEL_JOBS")
# pytest-xdist workers per Python suite, each with a daemon of its own. The PyTorch device's
# suites keep about one core busy per worker (PyTorch's meta functions and the OpInfo samples on
# the client): as many workers as cores, up to 4. The Python client's suite waits on its
# daemon's round trips (and on real time: resumes, grace periods) more than it computes: twice
# as many, up to 8 (its -n 2 / 3 / 4 / 6 on the 2-vCPU VM with the -O2 daemon, otherwise idle:
# 134 / 111 / 104 / 118 s; the device's suite at -n 4 took 174 s, at -n 2 124 s).
# TENSORD_TEST_WORKERS sets both.
workers="${TENSORD_TEST_WORKERS:-$(( $(nproc) < 4 ? $(nproc) : 4 ))}"
client_workers="${TENSORD_TEST_WORKERS:-$(( $(nproc) < 4 ? 2 * $(nproc) : 8 ))}"
pytest_par=()
[ "$workers" -gt 1 ] && pytest_par=(-n "$workers")
client_par=()
[ "$client_workers" -gt 1 ] && client_par=(-n "$client_workers")
# A suite whose daemon is missing, or a test whose C module of the client is (outside
# TENSORD_PURE_PYTHON=1), fails here instead of skipping (tests/python/daemon_launcher.py,
# tests/python/c_modules.py).
export TENSORD_REQUIRE_DAEMON=1

# Note [Where the C++ tests run]: a cold run's time is compiling (a translation unit is ~100-200K
# lines after preprocessing, 10-50 s of a core), so the code is compiled once: in the clang
# ASan + UBSan tree (Note [One sanitized tree] in .bazelrc), which holds every C++ test, the
# daemon and tensorctl that the Python suites run (a memory error or undefined behaviour any
# client's traffic provokes in the daemon fails its suite: the launcher requires a clean exit),
# the benchmarks, the CUDA kernels and the libFuzzer targets. The plain -O2 tree is what
# tools/start.sh builds for users; with TENSORD_SKIP_ASAN=1 it is the tree built and run here.
build_flags=(--config=asan)
tree="the clang ASan + UBSan tree (--config=asan; Note [One sanitized tree] in .bazelrc)"
if [ -n "${TENSORD_SKIP_ASAN:-}" ]; then
  build_flags=()
  tree="the plain tree (TENSORD_SKIP_ASAN=1)"
fi
section "building everything once, in $tree"
bazel build "${jobs_flag[@]}" "${build_flags[@]}" //...
bin="$(bazel info "${build_flags[@]}" bazel-bin 2>/dev/null)"
export TENSORD_BINARY="$bin/server/tensord" TENSORCTL="$bin/tools/tensorctl"
# abort_on_error: a sanitizer report in a daemon ends it at once, failing the test that drove it;
# protect_shadow_gap=0 lets the CUDA driver map its memory on a GPU machine.
export ASAN_OPTIONS="${ASAN_OPTIONS:-abort_on_error=1:protect_shadow_gap=0}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}"
tools/gen_python_proto.sh
tools/build_python_ext.sh

# Note [Overlapped suites]: the Python suites wait on round trips to their daemons more than
# they compute, so the C++ tests, the TSan build and the fuzzers run alongside them instead of
# after them. The whole ASan tree is built first: starting the Python suites once the daemon
# was built (session 23) only moved the rest of the compile into their time (a cold run took
# 36 min instead of 30: the Python suites 2.3 min slower, the background 9 min later). They run in the background in this order, the TSan tree in an output tree of its
# own (.bazelrc, Note [Sanitizer output trees]), so nothing the Python suites run is rebuilt;
# their output is printed after the Python suites, and either side failing fails the run.
sanitizer_suites() {
  section "C++ tests, every one, in $tree (bazel test; Note [Where the C++ tests run])"
  bazel test "${jobs_flag[@]}" "${build_flags[@]}" //...
  if [ -z "${TENSORD_SKIP_TSAN:-}" ]; then
    section "concurrency suites under ThreadSanitizer (bazel test --config=tsan; docs/reliability.md)"
    bazel test "${jobs_flag[@]}" --config=tsan //...
  fi
  if [ -z "${TENSORD_SKIP_FUZZ:-}" ] && [ -z "${TENSORD_SKIP_ASAN:-}" ]; then
    section "fuzzing the session core and the parsers (libFuzzer, the ASan tree; docs/reliability.md)"
    # Side by side, one core each (as many targets at once as the Python suites' workers).
    tools/fuzz.sh --time="${TENSORD_FUZZ_SECONDS:-30}" --parallel="$workers"
  fi
}
sanitizer_log="$(mktemp -t tensord-sanitizers.XXXXXX)"
(set -e; sanitizer_suites) >"$sanitizer_log" 2>&1 &
sanitizer_pid=$!
# If a Python suite fails, the script stops here: stop the background builds with it (the
# bazel client cancels its command on SIGTERM).
# Children first: once the subshell is gone they belong to init and -P finds none.
trap 'kill -TERM "$venv_pid" 2>/dev/null; pkill -TERM -P "$sanitizer_pid" 2>/dev/null; kill -TERM "$sanitizer_pid" 2>/dev/null; print_timeline' EXIT

# The client's C speedups run once, built with AddressSanitizer + UBSan in the sanitized run (the
# same source as the plain build users get, with its memory errors and undefined behaviour
# checked), plain with TENSORD_SKIP_ASAN=1.
client_env=(PYTHONPATH="$root/client/python")
client_kind="plain"
if [ -z "${TENSORD_SKIP_ASAN:-}" ]; then
  asan_client="$(mktemp -d)"
  tools/build_python_ext.sh --asan "$asan_client"
  # The interpreter is not instrumented: the runtimes are preloaded; Python's own allocations
  # live until exit by design, so leak checking is off.
  client_env=(LD_PRELOAD="$(gcc -print-file-name=libasan.so):$(gcc -print-file-name=libubsan.so)"
    ASAN_OPTIONS=detect_leaks=0:abort_on_error=1:protect_shadow_gap=0
    UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 TENSORD_PYTHON_CLIENT="$asan_client")
  client_kind="under AddressSanitizer + UBSan"
fi
section "Python client tests (pytest, real daemon, PyTorch reference; C speedups $client_kind)"
env "${client_env[@]}" "$PYTHON" -m pytest -q -rs "${client_par[@]}" tests/python  # -rs: every skip with its reason
if [ -n "${asan_client:-}" ]; then rm -rf "$asan_client"; fi
section "Python client tests again without its C extensions (TENSORD_PURE_PYTHON=1)"
TENSORD_PURE_PYTHON=1 PYTHONPATH="$root/client/python" "$PYTHON" -m pytest -q "${client_par[@]}" tests/python
# The tensord PyTorch device runs under PyPI's current torch, in the venv install_deps.sh made;
# without that venv (TENSORD_SKIP_TORCH_VENV=1) the suite runs on Debian's and skips, saying why.
# The PyTorch device's suite runs twice: once with every op's result checked against its meta
# function (TENSORD_TORCH_CHECK, the default in tests), once on the production path. The example
# programs (test_examples.py: each a subprocess run twice, 40% of the suite's time) run only on
# the production path, as users run them; the OpInfo conformance suite only with the check.
venv_status=0
wait "$venv_pid" || venv_status=$?
cat "$venv_log"
rm -f "$venv_log"
if [ "$venv_status" -ne 0 ]; then
  section "FAILED: making .venv-torch (tools/install_deps.sh torch-venv; its output is above)"
  exit "$venv_status"
fi
section "PyTorch device tests (tensord.torch, .venv-torch's PyTorch, real daemon; meta check per op)"
TORCH_PYTHON="$root/.venv-torch/bin/python"
[ -x "$TORCH_PYTHON" ] || TORCH_PYTHON="$PYTHON"
PYTHONPATH="$root/client/python" "$TORCH_PYTHON" -m pytest -q -rs "${pytest_par[@]}" tests/python_torch \
  --ignore=tests/python_torch/test_examples.py
# Skips, saying why, when that interpreter's PyTorch has no trace_plot/segment_plot.
section "Memory history drawn by PyTorch's own torch.cuda._memory_viz (.venv-torch, real daemon)"
PYTHONPATH="$root/client/python" "$TORCH_PYTHON" -m pytest -q -rs tests/memory_viz
section "PyTorch device tests and example programs on the production path (no meta check; not OpInfo)"
TENSORD_TORCH_CHECK=0 PYTHONPATH="$root/client/python" "$TORCH_PYTHON" -m pytest -q \
  "${pytest_par[@]}" tests/python_torch --ignore=tests/python_torch/test_opinfo.py
section "metrics scraped by a real Prometheus, tensorctl users and kill --reason (tests/metrics)"
PYTHONPATH="$root/client/python" "$PYTHON" -m pytest -q -rs tests/metrics

if [ -z "${TENSORD_SKIP_PACKAGE:-}" ]; then
  section "Python package: wheel and sdist into fresh venvs, examples from outside the checkout"
  tests/package/test_install.sh
fi

section "waiting for the C++ tests, the TSan suites and the fuzzers"
sanitizer_status=0
wait "$sanitizer_pid" || sanitizer_status=$?
trap print_timeline EXIT
cat "$sanitizer_log"
rm -f "$sanitizer_log"
if [ "$sanitizer_status" -ne 0 ]; then
  section "FAILED: a C++, TSan or fuzz suite (its output is above)"
  exit "$sanitizer_status"
fi
section "all tensord tests passed"
