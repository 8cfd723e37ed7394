#!/usr/bin/env bash
# Tiny-op throughput with the daemon's metrics off and on (BENCHMARKS.md, "Metrics on vs off").
# Alternates daemons without and with --metrics_listen (scraped every 0.5 s, twenty times
# Prometheus's usual rate, while it runs), ROUNDS times, and prints each run's tiny_ops_per_s
# (tools/bench/tiny_ops_bench: dependent adds on a 1-element tensor, median of its reps), the
# daemon's CPU time per op over the whole run (user + system, from /proc: less sensitive than
# throughput to other load on the machine) and the medians of both. Needs: bazel build //server:tensord //tools/bench:tiny_ops_bench
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

cpu_ticks() { awk '{print $14 + $15}' "/proc/$pid/stat"; }

run_once() {  # prints "tiny_ops_per_s daemon_cpu_us_per_op"
  local before after ops
  before="$(cpu_ticks)"
  ops="$("$root/bazel-bin/tools/bench/tiny_ops_bench" --address="127.0.0.1:$port" \
    --ops=100000 --reps=5 --sync_iters=200 --transfer=none |
    /usr/bin/python3 -c 'import json,sys; print(int(json.load(sys.stdin)["tiny_ops_per_s"]))')"
  after="$(cpu_ticks)"
  # 6 x 100,000 ops (a warm-up and 5 reps) plus 6 x 200 item() calls; ticks of 10 ms.
  echo "$ops $(( (after - before) * 10000 * 1000 / 600000 ))"
}

off=() on=() off_cpu=() on_cpu=()
for r in $(seq "$rounds"); do
  start
  read -r ops cpu < <(run_once)
  off+=("$ops") off_cpu+=("$cpu")
  kill "$pid"; wait "$pid" || true
  start --metrics_listen=127.0.0.1:0 --metrics_port_file="$tmp/mport"
  for _ in $(seq 300); do [ -s "$tmp/mport" ] && break; sleep 0.02; done
  mport="$(cat "$tmp/mport")"
  ( while curl -sf "http://127.0.0.1:$mport/metrics" >/dev/null; do sleep 0.5; done ) &
  scraper=$!
  read -r ops cpu < <(run_once)
  on+=("$ops") on_cpu+=("$cpu")
  kill "$pid"; wait "$pid" || true
  kill "$scraper" 2>/dev/null; wait "$scraper" 2>/dev/null || true
  echo "round $r: off ${off[-1]} ops/s ${off_cpu[-1]} ns/op, on ${on[-1]} ops/s ${on_cpu[-1]} ns/op"
done
/usr/bin/python3 - "${off[*]}" "${on[*]}" "${off_cpu[*]}" "${on_cpu[*]}" <<'PY'
import statistics, sys
off, on, off_cpu, on_cpu = ([int(x) for x in a.split()] for a in sys.argv[1:5])
a, b = statistics.median(off), statistics.median(on)
c, d = statistics.median(off_cpu), statistics.median(on_cpu)
print(f"median off {a:,.0f} ops/s, on {b:,.0f} ops/s: on/off {b / a:.3f}")
print(f"daemon CPU per op: off {c:,.0f} ns, on {d:,.0f} ns: on/off {d / c:.3f}")
PY
