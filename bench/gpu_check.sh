#!/bin/sh
# The GPU checks of share/doc/gpus.md as one script, for a machine with a
# CUDA GPU and python3's PyTorch but none of Debian's packages (and no
# network): it unpacks the kit of bench/gpu_kit.sh into a prefix of its
# own, builds pstrain against PyTorch's libtorch (cmake/python-torch), and
# runs the benches whose rows gpus.md gives, each under a deadline so that
# the whole stays within 10 minutes on 16 cores. Each result lands in
# OUT_DIR as soon as it is made.
#   bench/gpu_check.sh KIT_DIR OUT_DIR
set -u
kit=$(cd "$1" && pwd)
out=$2
mkdir -p "$out"
root=$(pwd)
prefix=/tmp/pstrain-kit
arch=x86_64-linux-gnu
log="$out/gpu_check.log"
say() { echo "gpu_check: $*" | tee -a "$log"; }

say "$(date -u +%FT%TZ) start"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader \
  >>"$log" 2>&1
python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda)' \
  >>"$log" 2>&1
rm -rf "$prefix" && mkdir -p "$prefix"
for deb in "$kit"/*.deb; do dpkg -x "$deb" "$prefix"; done
# A link to an absolute path (zlib's libz.so) points into the prefix.
find "$prefix" -type l | while read -r link; do
  target=$(readlink "$link")
  case $target in /*) ln -sfn "$prefix$target" "$link" ;; esac
done
export PKG_CONFIG_PATH="$prefix/usr/lib/$arch/pkgconfig:$prefix/usr/share/pkgconfig"
export PKG_CONFIG_SYSROOT_DIR="$prefix"
# The kit's pkgconf where the machine has no pkg-config; the kit's shared
# libraries reach pstrain through the build tree's RPATH, not the
# environment, so python3's own libraries stay as they are.
pkgconf=$(command -v pkg-config || true)
if [ -z "$pkgconf" ]; then
  pkgconf="$prefix/pkg-config"
  printf '#!/bin/sh\nLD_LIBRARY_PATH=%s exec %s "$@"\n' \
    "$prefix/usr/lib/$arch" "$prefix/usr/bin/pkgconf" >"$pkgconf"
  chmod +x "$pkgconf"
fi

build=${BUILD_DIR:-$root/build-gpu}
start=$(date +%s)
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release \
  -DTorch_DIR="${TORCH_DIR:-$root/cmake/python-torch}" -DPSTRAIN_BUILD_TESTS=OFF \
  -DCMAKE_PREFIX_PATH="$prefix/usr" -DPKG_CONFIG_EXECUTABLE="$pkgconf" \
  -DOPENSSL_ROOT_DIR="$prefix/usr" >>"$log" 2>&1 || { say "configure failed"; tail -30 "$log"; exit 1; }
[ -n "${CONFIGURE_ONLY:-}" ] && exit 0
cmake --build "$build" -j"$(nproc)" --target pstrain >>"$log" 2>&1 ||
  { say "build failed"; grep -m 20 -B2 -A8 "error" "$log"; exit 1; }
say "built in $(( $(date +%s) - start )) s"
pstrain="$build/bin/pstrain"
"$pstrain" --version >>"$log" 2>&1
data="$prefix/usr/share/datasets/fashion-mnist"

# NAME SECONDS ARGS...: one bench under a deadline, its JSON in
# OUT/NAME.json, what it says on stderr in the log.
run() {
  name=$1 secs=$2
  shift 2
  t0=$(date +%s)
  timeout "$secs" "$pstrain" "$@" --data_dir "$data" >"$out/$name.json" \
    2>>"$log"
  say "$name: exit $? in $(( $(date +%s) - t0 )) s"
}
cuda="--device cuda --num_gpus 1 --placement worker,server --transport tcp,shm"
# shellcheck disable=SC2086
run train_cuda_resnet50 200 bench train --model resnet50 $cuda \
  --modes single,sync,async --steps 100 --json
# shellcheck disable=SC2086
run train_cuda_net 120 bench train --model net $cuda \
  --modes single,sync,async --steps 900 --json
for t in tcp shm; do
  run "launch_cuda_$t" 45 launch --world_size 3 --device cuda --transport "$t" \
    --json
done
say "$(date -u +%FT%TZ) done"
