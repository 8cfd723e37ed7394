#!/usr/bin/env bash
# Builds a relocatable bundle of tensord for a GPU box that has the NVIDIA
# driver and the CUDA libraries but no Bazel and no gRPC/protobuf/Abseil
# packages:
#
#   tools/make_bundle.sh [OUT_DIR]        # default: dist/tensord-bundle
#
# Layout (OUT_DIR, also packed as OUT_DIR.tar.xz: ~35 MB, half the gzip's, as
# oneDNN and OpenBLAS are most of it):
#   bin/<name>         the real executables (tensord, tensorctl, every cc_test,
#                      tools/bench/gpu:cuda_bench)
#   lib/               the non-system shared libraries they need (from ldd)
#   <name>             wrappers: LD_LIBRARY_PATH=$ORIGIN/lib exec bin/<name>
#   client/python/     the Python client with its generated protobuf modules
#   tests/python/, tests/python_torch/, examples/python/, examples/torch/,
#   tools/bench/*.py|sh, proto/, tools/gen_python_proto.sh
#                      as in the repository, so the Python suite and
#                      tools/bench/run_gpu.sh run from the bundle's root
#   runfiles/tensord/  what the tests find through Bazel's runfiles: links to
#                      tensord, tensorctl, fault_client; the fuzz corpora
#   run_tests.sh       runs every bundled test binary as `bazel test` would
#                      (runfiles cwd, the rule's env and args), then the Python
#                      suite against the bundled daemon (GPU tests skip, saying
#                      why, when no GPU is visible); docs/gpu.md
# The Python side needs an interpreter with grpcio, protobuf, numpy, pytest
# and torch ($TENSORD_PYTHON, default python3). The shipped stubs come from
# this machine's protoc (3.21); protobuf's Python runtime loads them up to
# at least 7.x (checked with 5.x and 7.x). Should a runtime refuse them:
# `pip install grpcio-tools` there, delete client/python/tensord/_proto and
# run `PYTHON=python3 tools/gen_python_proto.sh` in the bundle.
# Left out on purpose: glibc, libstdc++/libgcc, and the NVIDIA driver/CUDA
# libraries (libcuda, libcudart, cuBLAS, cuDNN, ...), which the GPU box
# provides (CUDA 13 runtime, cuBLAS 13, cuDNN 9: found through the build's
# rpath /usr/local/cuda/lib64, or LD_LIBRARY_PATH); bundling them would
# fight its driver. Without /usr/local/cuda the wrappers fall back to the
# CUDA libraries of pip's torch (site-packages/nvidia/*) when one is missing.
# When patchelf is present,
# the binaries also get an rpath of $ORIGIN/../lib, so bin/<name> runs
# directly too.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
out="${1:-dist/tensord-bundle}"
mode="${TENSORD_BUNDLE_MODE:-opt}"

echo "== building (-c $mode)"
tests=$(bazel query 'kind(cc_test, //...)' 2>/dev/null)
# Programs the tests run through their runfiles (tensord, tensorctl, fault_client).
helpers=$(bazel query 'kind(cc_binary, labels(data, kind(cc_test, //...)))' 2>/dev/null)
# shellcheck disable=SC2086
bazel build -c "$mode" //server:tensord //tools:tensorctl //tools/bench/gpu:cuda_bench \
  $tests $helpers
bin_dir="$(bazel info -c "$mode" bazel-bin 2>/dev/null)"
# The Python client's stubs (gitignored, generated).
if [[ ! -f client/python/tensord/_proto/tensord_pb2.py ]]; then
  tools/gen_python_proto.sh
fi

rm -rf "$out"
mkdir -p "$out/bin" "$out/lib"

# Libraries the GPU box supplies (system C/C++ runtime, NVIDIA driver, CUDA).
is_system_lib() {
  case "$1" in
    linux-vdso*|ld-linux*|libc.so*|libm.so*|libdl.so*|libpthread.so*|\
    librt.so*|libutil.so*|libresolv.so*|libstdc++.so*|libgcc_s.so*|\
    libcuda.so*|libnvidia*|libcudart.so*|libcublas*|libcublasLt*|libcudnn*|\
    libcufft*|libcurand*|libcusolver*|libcusparse*|libnccl*|libnvrtc*|\
    libnvJitLink*)
      return 0 ;;
  esac
  return 1
}

copy_deps() {
  local binary="$1" name arrow path _
  # "libfoo.so.1 => /path/libfoo.so.1 (0x...)"; unresolved deps are errors.
  while read -r name arrow path _; do
    [ "$arrow" = "=>" ] || continue
    is_system_lib "$name" && continue
    if [ "$path" = "not" ]; then
      echo "error: $binary needs $name, which ldd cannot find" >&2
      exit 1
    fi
    [ -e "$out/lib/$name" ] || cp -L "$path" "$out/lib/$name"
  done < <(ldd "$binary")
}

add_binary() {
  local src="$1" name="$2"
  cp -L "$src" "$out/bin/$name"
  chmod u+w "$out/bin/$name"
  copy_deps "$src"  # in bazel-bin, where its relative rpaths resolve
  cat >"$out/$name" <<'WRAP'
#!/usr/bin/env bash
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
export LD_LIBRARY_PATH="$here/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
WRAP
  echo "bin=\"\$here/bin/$name\"" >>"$out/$name"
  cat >>"$out/$name" <<'WRAP'
# No CUDA toolkit in /usr/local/cuda: use the CUDA 13 libraries of pip's torch
# (the nvidia-* wheels) when $TENSORD_PYTHON (default python3) has them.
if ldd "$bin" 2>/dev/null | grep -q "not found"; then
  pip_cuda="$("${TENSORD_PYTHON:-python3}" -c '
import os, nvidia
print(":".join(sorted({d for p in nvidia.__path__ for d, _, fs in os.walk(p)
                       if any(".so" in f for f in fs)})))' 2>/dev/null)" || true
  [ -n "$pip_cuda" ] && export LD_LIBRARY_PATH="$LD_LIBRARY_PATH:$pip_cuda"
fi
exec "$bin" "$@"
WRAP
  chmod +x "$out/$name"
}

add_binary "$bin_dir/server/tensord" tensord
add_binary "$bin_dir/tools/tensorctl" tensorctl
add_binary "$bin_dir/tools/bench/gpu/cuda_bench" tools_bench_gpu_cuda_bench
# How `bazel test` would run a test: its `env` and `args` attributes as a
# shell prefix and suffix (e.g. parallel_test's TENSORD_NUM_THREADS=4, the
# corpus test's corpus directories).
test_invocation() {
  bazel query --output=build "$1" 2>/dev/null | /usr/bin/python3 tools/bazel_test_invocation.py
}
test_names=()
test_envs=()
test_args=()
for t in $tests; do
  pkg="${t#//}"; pkg="${pkg%%:*}"; name="${t##*:}"
  flat="${pkg//\//_}_$name"
  add_binary "$bin_dir/$pkg/$name" "$flat"
  test_names+=("$flat")
  IFS=$'\x1f' read -r t_env t_args < <(test_invocation "$t")
  test_envs+=("$t_env")
  test_args+=("$t_args")
done

# Libraries pulled in by the copied libraries themselves.
for lib in "$out"/lib/*; do LD_LIBRARY_PATH="$out/lib" copy_deps "$lib"; done

# Source files the tests read from their runfiles (the fuzz corpora).
for f in $(bazel query 'kind("source file", labels(data, kind(cc_test, //...)))' 2>/dev/null); do
  p="${f#//}"; p="${p/://}"; p="${p#/}"   # //tests/fuzz:corpus/x -> tests/fuzz/corpus/x
  mkdir -p "$out/runfiles/tensord/$(dirname "$p")"
  cp "$p" "$out/runfiles/tensord/$p"
done
# runfiles/tensord/<package>/<name> -> bin/<flat name>, as Bazel's runfiles.
for h in $helpers; do
  pkg="${h#//}"; pkg="${pkg%%:*}"; name="${h##*:}"
  flat="${pkg//\//_}_$name"
  case "$h" in
    //server:tensord) flat=tensord ;;
    //tools:tensorctl) flat=tensorctl ;;
    *) add_binary "$bin_dir/$pkg/$name" "$flat" ;;
  esac
  mkdir -p "$out/runfiles/tensord/$pkg"
  ln -s "$(realpath --relative-to="$out/runfiles/tensord/$pkg" "$out/bin/$flat")" \
    "$out/runfiles/tensord/$pkg/$name"
done

# The Python client, its tests, the examples they train and the benchmark
# scripts, in the repository's layout (no caches, no build outputs).
copy_tree() {
  mkdir -p "$out/$1"
  tar -C "$root/$1" --exclude=__pycache__ --exclude='*.pyc' --exclude=build \
      --exclude='*.egg-info' -cf - . | tar -C "$out/$1" -xf -
}
for d in client/python tests/python tests/python_torch examples/python examples/torch proto; do
  copy_tree "$d"
done
mkdir -p "$out/tools/bench"
cp tools/gen_python_proto.sh tools/build_python_ext.sh "$out/tools/"
cp tools/bench/py_bench.py tools/bench/py_bench_transfer.py tools/bench/run_all.py \
   tools/bench/run_gpu.py tools/bench/run_gpu.sh tools/bench/wan_proxy.py "$out/tools/bench/"

if command -v patchelf >/dev/null; then
  for f in "$out"/bin/*; do patchelf --set-rpath '$ORIGIN/../lib' "$f"; done
fi

{
  cat <<'HEAD'
#!/usr/bin/env bash
# Runs every bundled C++ test, then the Python suite (tests/python) against
# the bundled daemon; exits non-zero if any fails. GPU tests skip, saying why,
# without a GPU.
#   ./run_tests.sh [--cpp|--python] [pytest arguments...]
# The Python interpreter: $TENSORD_PYTHON (default python3), with grpcio,
# protobuf, numpy, pytest and torch.
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"; rc=0
cpp=1; python=1
case "${1:-}" in
  --cpp) python=0; shift ;;
  --python) cpp=0; shift ;;
esac
export TEST_TMPDIR="${TEST_TMPDIR:-$(mktemp -d)}"
export LD_LIBRARY_PATH="$here/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
# The integration tests find the daemon as Bazel runfiles would have it.
export TEST_SRCDIR="$here/runfiles" TEST_WORKSPACE=tensord
failed=()
HEAD
  echo 'if [ "$cpp" = 1 ]; then'
  echo '  # As under `bazel test`: the working directory is the runfiles root.'
  for i in "${!test_names[@]}"; do
    t="${test_names[$i]}"
    echo "  echo \"== $t\"; (cd \"\$here/runfiles/tensord\" &&" \
         "${test_envs[$i]:+env ${test_envs[$i]} }\"\$here/$t\" ${test_args[$i]})" \
         "|| { rc=1; failed+=($t); }"
  done
  echo 'fi'
  cat <<'TAIL'
if [ "$python" = 1 ]; then
  py="${TENSORD_PYTHON:-python3}"
  echo "== tests/python ($py)"
  if ! "$py" -c 'import grpc, google.protobuf, numpy, pytest, torch' 2>/dev/null; then
    echo "error: $py lacks one of grpcio, protobuf, numpy, pytest, torch:" \
         "pip install them or set TENSORD_PYTHON" >&2
    rc=1; failed+=(tests/python)
  elif ! PYTHON="$py" "$here/tools/build_python_ext.sh"; then
    rc=1; failed+=(build_python_ext)
  elif ! (cd "$here" && TENSORD_BINARY="$here/tensord" PYTHONPATH="$here/client/python" \
          "$py" -m pytest -q -rs tests/python "$@"); then
    rc=1; failed+=(tests/python)
  fi
fi
[ "$rc" = 0 ] && echo "== all passed" || echo "== failed: ${failed[*]}"
exit $rc
TAIL
} >"$out/run_tests.sh"
chmod +x "$out/run_tests.sh"

tar -C "$(dirname "$out")" -cf - "$(basename "$out")" | xz -T0 -6 >"$out.tar.xz"
echo "== bundle: $out ($(du -sh "$out" | cut -f1)), $out.tar.xz"
echo "   libraries: $(ls "$out/lib" | wc -l); binaries: $(ls "$out/bin" | wc -l)"
