#!/usr/bin/env bash
# Quick start, command 1: installs what is missing, builds everything, and
# starts tensord in the background on 127.0.0.1:50051 (CPU, or the GPU where
# there is one). Local development mode: --insecure, loopback only.
#
#   tools/start.sh            # build + (re)start; logs in .run/tensord.log
#   tools/start.sh --stop     # stop the daemon started here
#   TENSORD_LISTEN=127.0.0.1:6000 tools/start.sh
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
mkdir -p .run
pidfile=.run/tensord.pid

stop() {
  if [ -f "$pidfile" ] && kill -0 "$(cat "$pidfile")" 2>/dev/null; then
    kill -TERM "$(cat "$pidfile")"
    while kill -0 "$(cat "$pidfile")" 2>/dev/null; do sleep 0.1; done
    echo "tensord stopped"
  fi
  rm -f "$pidfile"
}
if [ "${1:-}" = "--stop" ]; then stop; exit 0; fi

tools/install_deps.sh
bazel build //server:tensord //tools:tensorctl //client/... >&2
tools/gen_python_proto.sh
tools/build_python_ext.sh

stop
listen="${TENSORD_LISTEN:-127.0.0.1:50051}"
rm -f .run/port
setsid nohup bazel-bin/server/tensord --listen="$listen" --insecure \
  --port_file=.run/port >.run/tensord.log 2>&1 < /dev/null &
echo $! >"$pidfile"
for _ in $(seq 1 100); do
  [ -s .run/port ] && break
  kill -0 "$(cat "$pidfile")" 2>/dev/null || { cat .run/tensord.log; exit 1; }
  sleep 0.1
done
cat .run/tensord.log
echo "tensord is running (pid $(cat "$pidfile")) on ${listen%:*}:$(cat .run/port)."
echo "  try: bazel-bin/client/examples/hello_tensord"
echo "       bazel-bin/tools/tensorctl devices"
echo "       PYTHONPATH=client/python /usr/bin/python3 examples/python/quickstart.py"
echo "  stop: tools/start.sh --stop"
