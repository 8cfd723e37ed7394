#!/usr/bin/env bash
# Builds the libFuzzer targets (bazel --config=asan: clang, ASan + UBSan, the
# tree tools/test.sh builds: Note [One sanitized tree] in .bazelrc) and
# runs each for a bounded time over its seeds (tests/fuzz/corpus; any other
# NAME_fuzzer with a tests/fuzz/NAME_corpus: that, e.g. the command ring's
# ring_corpus and the parsers' cma_hello, metrics_head, tokens and
# listen_address corpora).
#
#   tools/fuzz.sh                            # each target 30 s (tools/test.sh)
#   tools/fuzz.sh --time=3600 --jobs=2       # a long run: two processes per target
#   tools/fuzz.sh --parallel=2               # two targets at a time (tools/test.sh)
#   tools/fuzz.sh --time=600 structured_fuzzer
#
# New corpus entries and crash artifacts go to $TENSORD_FUZZ_DIR (default
# /tmp/tensord-fuzz/TARGET/{corpus,artifacts}); the repository's corpus is
# only read. A crash fails the script and names its artifact: fix the bug,
# then add the artifact to tests/fuzz/regressions/ (replayed by
# //tests/fuzz:corpus_test in every config).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

time_s=30
jobs=1
parallel=1
runs=-1
targets=()
for arg in "$@"; do
  case "$arg" in
    --time=*) time_s="${arg#--time=}" ;;
    --jobs=*) jobs="${arg#--jobs=}" ;;
    --parallel=*) parallel="${arg#--parallel=}" ;;
    --runs=*) runs="${arg#--runs=}" ;;
    -h|--help) sed -n '2,17p' "$0"; exit 0 ;;
    *) targets+=("$arg") ;;
  esac
done
[ ${#targets[@]} -eq 0 ] && targets=(frames_fuzzer structured_fuzzer ring_fuzzer
  cma_hello_fuzzer metrics_head_fuzzer tokens_fuzzer listen_address_fuzzer)

bazel_flags=(--config=asan)
[ -n "${TENSORD_BAZEL_JOBS:-}" ] && bazel_flags+=(--jobs="$TENSORD_BAZEL_JOBS")
labels=()
for t in "${targets[@]}"; do labels+=("//tests/fuzz:$t"); done
work="${TENSORD_FUZZ_DIR:-${TMPDIR:-/tmp}/tensord-fuzz}"
mkdir -p "$work"
echo "== building ${labels[*]} (--config=asan; log: $work/build.log)"
if ! bazel build "${bazel_flags[@]}" "${labels[@]}" >"$work/build.log" 2>&1; then
  grep -v 'ld.gold: warning' "$work/build.log" | tail -n 40 >&2
  exit 1
fi
bin="$(bazel info "${bazel_flags[@]}" bazel-bin 2>/dev/null)"

export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
# One target's run; its summary and any crash report go to stdout, its exit status to
# $work/TARGET/rc.
fuzz_one() {
  local t=$1 rc=0 seeds own
  mkdir -p "$work/$t/corpus" "$work/$t/artifacts"
  echo "== fuzzing $t for ${time_s} s (jobs: $jobs)"
  local fuzz_args=(-max_total_time="$time_s" -runs="$runs" -timeout=60
    -rss_limit_mb=4096 -max_len=65536 -print_final_stats=1
    -artifact_prefix="$work/$t/artifacts/")
  if [ "$jobs" -gt 1 ]; then
    fuzz_args+=(-jobs="$jobs" -workers="$jobs")
  fi
  # In its work dir: with --jobs, libFuzzer writes fuzz-N.log files there.
  seeds="$root/tests/fuzz/corpus"  # ClientFrame sequences (Note [Fuzz input])
  own="$root/tests/fuzz/${t%_fuzzer}_corpus"  # ring images, a parser's inputs
  [ -d "$own" ] && seeds="$own"
  (cd "$work/$t" && "$bin/tests/fuzz/$t" "${fuzz_args[@]}" "$work/$t/corpus" \
      "$seeds" >"$work/$t/log" 2>&1) || rc=$?
  grep -hE '^(#[0-9]+ *(DONE|pulse)|stat::(number_of_executed_units|peak_rss_mb|new_units_added))' \
    "$work/$t/log" | tail -n 4 || true
  if [ $rc -ne 0 ]; then
    echo "!! $t failed (exit $rc); log: $work/$t/log"
    grep -hE -A30 '==[0-9]+==ERROR|runtime error|oracle failed' \
      "$work/$t/log" "$work/$t"/fuzz-*.log 2>/dev/null | head -n 60 || true
    echo "artifacts:"
    ls -1 "$work/$t/artifacts"
  fi
  echo "$rc" >"$work/$t/rc"
}

# --parallel=N: N targets fuzz at once, each for its full time (one core each); their reports
# print in the targets' order once all are done.
for t in "${targets[@]}"; do
  while [ "$(jobs -rp | wc -l)" -ge "$parallel" ]; do wait -n || true; done
  rm -f "$work/$t/rc"
  fuzz_one "$t" >"$work/$t.report" 2>&1 &
done
wait
status=0
for t in "${targets[@]}"; do
  cat "$work/$t.report"
  [ "$(cat "$work/$t/rc" 2>/dev/null)" = 0 ] || status=1
done
exit $status
