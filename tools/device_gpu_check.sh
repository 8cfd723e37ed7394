#!/usr/bin/env bash
# One call of this workplace's device tool on a GPU machine (docs/gpu.md, "With this
# workplace's device tool"): unpacks the bundle that tools/make_bundle.sh made and the lead
# copied to .gpu/, then runs, each step under its own time limit so that one slow step cannot
# cost the others:
#   cpp    every bundled C++ test binary, 14 at a time (PASS/FAIL per binary, the tail of each
#          failure)
#   py     tests/python's cuda and mailbox cases
#   torch  the PyTorch device's suite on cuda:0 (-v: a log cut by the limit still names each
#          failure)
#   bench  tools/bench/run_gpu.sh (its raw: line first)
# Logs land in $OUT (the device tool's return folder). Usage there, from the repository root,
# with .gpu (and .whl: an expecttest wheel for PyTorch's OpInfo database) carried:
#   [STEPS="cpp py torch bench"] bash tools/device_gpu_check.sh
# Session 18's timings on an H200: cpp 25 s, py 30 s, torch ~200 s, bench 80 s.
set -u
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out="${OUT:-/tmp/device_out}"
mkdir -p "$out"
cd "$repo/.gpu" && tar xJf tensord-bundle.tar.xz && cd tensord-bundle || exit 1
here="$PWD"
if compgen -G "$repo/.whl/*.whl" >/dev/null; then
  python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site "$repo"/.whl/*.whl
fi
nvidia-smi -L
python3 -c 'import torch; print("torch", torch.__version__, torch.cuda.get_device_name(0))'
export PYTHONUNBUFFERED=1 TENSORD_PYTHON=python3
export LD_LIBRARY_PATH="$here/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export TEST_SRCDIR="$here/runfiles" TEST_WORKSPACE=tensord here
steps=" ${STEPS:-cpp py torch bench} "
if [[ "$steps" == *" cpp "* ]]; then
  echo "=== C++ tests $(date +%T)"
  work="$(mktemp -d)"
  # run_tests.sh's lines, one per binary: `echo "== name"; (cd ... && env ... ./name args)`.
  grep '^  echo "== ' run_tests.sh | sed 's/ || { rc=1.*$//' >"$work/all"
  (cd "$work" && split -l 1 -a 3 all t_)
  # shellcheck disable=SC2016
  find "$work" -name 't_*' | timeout 90 xargs -P 14 -I{} bash -c '
    export TEST_TMPDIR="$(mktemp -d)"
    n="$(sed -n "s/^ *echo \"== \([^\"]*\)\".*/\1/p" {})"
    if bash {} >{}.log 2>&1; then echo "PASS $n"; else echo "FAIL $n"; tail -40 {}.log; fi' \
    >"$out/cpp.log" 2>&1
  echo "passed: $(grep -c '^PASS' "$out/cpp.log")"; grep '^FAIL' "$out/cpp.log"
fi
if [[ "$steps" == *" py "* ]]; then
  echo "=== tests/python -k 'cuda or mailbox' $(date +%T)"
  timeout 110 ./run_tests.sh --python -k "cuda or mailbox" -n 8 -p no:cacheprovider \
    >"$out/py.log" 2>&1
  tail -3 "$out/py.log"; grep -E "^(FAILED|ERROR)" "$out/py.log" | head -40
fi
if [[ "$steps" == *" torch "* ]]; then
  echo "=== tests/python_torch on cuda:0 $(date +%T)"
  TENSORD_DAEMON_FLAGS=--default_device=cuda:0 TENSORD_BINARY="$here/tensord" \
    PYTHONPATH="$here/client/python:/tmp/site" timeout 240 python3 -m pytest -v -rs -n 12 \
    -p no:cacheprovider tests/python_torch >"$out/torch.log" 2>&1
  echo "passed: $(grep -c ' PASSED ' "$out/torch.log")"; grep ' FAILED ' "$out/torch.log" | head -40
fi
if [[ "$steps" == *" bench "* ]]; then
  echo "=== run_gpu.sh $(date +%T)"
  timeout 160 tools/bench/run_gpu.sh >"$out/bench.log" 2>&1
  tail -20 "$out/bench.log"
fi
echo "=== end $(date +%T)"
