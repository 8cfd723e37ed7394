#!/usr/bin/env bash
# Builds a relocatable bundle of tensord for a GPU box that has the NVIDIA
# driver and the CUDA libraries but no Bazel and no gRPC/protobuf/Abseil
# packages:
#
#   tools/make_bundle.sh [OUT_DIR]        # default: dist/tensord-bundle
#
# Layout (OUT_DIR, also packed as OUT_DIR.tar.gz):
#   bin/<name>         the real executables (tensord, tensorctl, every cc_test)
#   lib/               the non-system shared libraries they need (from ldd)
#   <name>             wrappers: LD_LIBRARY_PATH=$ORIGIN/lib exec bin/<name>
#   run_tests.sh       runs every bundled test binary (GPU tests skip, saying
#                      why, when no GPU is visible)
# Left out on purpose: glibc, libstdc++/libgcc, and the NVIDIA driver/CUDA
# libraries (libcuda, libcudart, cuBLAS, cuDNN, ...), which the GPU box
# provides (CUDA 13 runtime, cuBLAS 13, cuDNN 9: found through the build's
# rpath /usr/local/cuda/lib64, or LD_LIBRARY_PATH); bundling them would
# fight its driver. When patchelf is present,
# the binaries also get an rpath of $ORIGIN/../lib, so bin/<name> runs
# directly too.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
out="${1:-dist/tensord-bundle}"
mode="${TENSORD_BUNDLE_MODE:-opt}"

echo "== building (-c $mode)"
tests=$(bazel query 'kind(cc_test, //...)' 2>/dev/null)
# shellcheck disable=SC2086
bazel build -c "$mode" //server:tensord //tools:tensorctl $tests
bin_dir="$(bazel info -c "$mode" bazel-bin 2>/dev/null)"

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
  echo "exec \"\$here/bin/$name\" \"\$@\"" >>"$out/$name"
  chmod +x "$out/$name"
}

add_binary "$bin_dir/server/tensord" tensord
add_binary "$bin_dir/tools/tensorctl" tensorctl
test_names=()
for t in $tests; do
  pkg="${t#//}"; pkg="${pkg%%:*}"; name="${t##*:}"
  flat="${pkg//\//_}_$name"
  add_binary "$bin_dir/$pkg/$name" "$flat"
  test_names+=("$flat")
done

# Libraries pulled in by the copied libraries themselves.
for lib in "$out"/lib/*; do LD_LIBRARY_PATH="$out/lib" copy_deps "$lib"; done

mkdir -p "$out/runfiles/tensord/server" "$out/runfiles/tensord/tools"
ln -s ../../../bin/tensord "$out/runfiles/tensord/server/tensord"
ln -s ../../../bin/tensorctl "$out/runfiles/tensord/tools/tensorctl"

if command -v patchelf >/dev/null; then
  for f in "$out"/bin/*; do patchelf --set-rpath '$ORIGIN/../lib' "$f"; done
fi

{
  echo '#!/usr/bin/env bash'
  echo '# Runs every bundled test; exits non-zero if any fails.'
  echo 'here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"; rc=0'
  echo 'export TEST_TMPDIR="${TEST_TMPDIR:-$(mktemp -d)}"'
  echo 'export LD_LIBRARY_PATH="$here/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"'
  echo '# The integration tests find the daemon as Bazel runfiles would have it.'
  echo 'export TEST_SRCDIR="$here/runfiles" TEST_WORKSPACE=tensord'
  for t in "${test_names[@]}"; do
    echo "echo \"== $t\"; \"\$here/$t\" || rc=1"
  done
  echo 'exit $rc'
} >"$out/run_tests.sh"
chmod +x "$out/run_tests.sh"

tar -C "$(dirname "$out")" -czf "$out.tar.gz" "$(basename "$out")"
echo "== bundle: $out ($(du -sh "$out" | cut -f1)), $out.tar.gz"
echo "   libraries: $(ls "$out/lib" | wc -l); binaries: $(ls "$out/bin" | wc -l)"
