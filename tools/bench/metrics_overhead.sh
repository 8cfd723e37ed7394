#!/usr/bin/env bash
# Tiny-op throughput with the daemon's metrics off and on (BENCHMARKS.md, "Metrics on vs off").
# Alternates daemons without and with --metrics_listen (scraped every 0.5 s, twenty times
# Prometheus's usual rate, while it runs), ROUNDS times, and prints each run's tiny_ops_per_s
# (tools/bench/tiny_ops_bench: dependent adds on a 1-element tensor, median of its reps) and the
# medians. Needs: bazel build //server:tensord //tools/bench:tiny_ops_bench
#
#   tools/bench/metrics_overhead.sh [ROUNDS=5]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
rounds="${1:-5}"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

# Starts a daemon with "$@"; sets $pid and $port (and $mport with metrics on).
start() {
  rm -f "$tmp/port" "$tmp/mport"
  "$root/bazel-bin/server/tensord" --listen=127.0.0.1:0 --insecure --port_file="$tmp/port" \
    --log_level=warn "$@" >"$tmp/log" 2>&1 &
  pid=$!
  for _ in $(seq 300); do [ -s "$tmp/port" ] && break; sleep 0.02; done  # start-up poll
  port="$(cat "$tmp/port")"
}

run_once() {  # prints tiny_ops_per_s
  "$root/bazel-bin/tools/bench/tiny_ops_bench" --address="127.0.0.1:$port" --ops=100000 \
    --reps=5 --sync_iters=200 --transfer=none |
    /usr/bin/python3 -c 'import json,sys; print(int(json.load(sys.stdin)["tiny_ops_per_s"]))'
}

off=() on=()
for r in $(seq "$rounds"); do
  start
  off+=("$(run_once)")
  kill "$pid"; wait "$pid" || true
  start --metrics_listen=127.0.0.1:0 --metrics_port_file="$tmp/mport"
  for _ in $(seq 300); do [ -s "$tmp/mport" ] && break; sleep 0.02; done
  mport="$(cat "$tmp/mport")"
  ( while curl -sf "http://127.0.0.1:$mport/metrics" >/dev/null; do sleep 0.5; done ) &
  scraper=$!
  on+=("$(run_once)")
  kill "$pid"; wait "$pid" || true
  kill "$scraper" 2>/dev/null; wait "$scraper" 2>/dev/null || true
  echo "round $r: off ${off[-1]} ops/s, on ${on[-1]} ops/s"
done
/usr/bin/python3 - "${off[*]}" "${on[*]}" <<'PY'
import statistics, sys
off = [int(x) for x in sys.argv[1].split()]
on = [int(x) for x in sys.argv[2].split()]
a, b = statistics.median(off), statistics.median(on)
print(f"median off {a:,.0f} ops/s, on {b:,.0f} ops/s: on/off {b / a:.3f}")
PY
