#!/bin/sh
# Installs what pstrain needs from Debian 12's own packages, nothing else.
#   install-deps.sh          to build and run pstrain
#   install-deps.sh --test   also what the tests need
set -eu
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
# libjs-dygraphs: the charts of pstrain report and of the live dashboard,
# read at run time; libboost-dev: the dashboard's HTTP server (Boost.Beast).
packages="cmake g++ make libtorch-dev libasio-dev nlohmann-json3-dev libcli11-dev
  zlib1g-dev libssl-dev libopenblas0-pthread dataset-fashion-mnist
  libturbojpeg0-dev libpng-dev pkg-config fortunes libjs-dygraphs libboost-dev"
if [ "${1:-}" = "--test" ]; then
  # python3-torch: a test reads our checkpoints with Python's torch.load.
  # zsh, fish: syntax checks of the completions; mandoc, groff: of the man
  # pages; tmux: the progress bars on a real terminal; clang,
  # libclang-rt-14-dev: tests/fuzz/run.sh (libFuzzer, ASan, UBSan);
  # clang-format: every C++ file is formatted by the root .clang-format.
  # python3-torchvision, python3-pil: a test compares our image transforms
  # with torchvision's. chromium: headless, it runs the report's and the
  # dashboard's JavaScript and a test reads back what the charts drew.
  # iproute2: ip and tc build the hosts joined by shaped links that the
  # across-hosts tests run on (bench/hosts.sh). prometheus: a test scrapes
  # a running job's metrics with the real server. etcd-server: the
  # arbiter that names the master across hosts (--rdzv_backend etcd).
  packages="$packages libgtest-dev python3-torch zsh fish mandoc groff tmux clang libclang-rt-14-dev clang-format
    python3-torchvision python3-pil chromium iproute2 prometheus etcd-server"
fi
missing=""
for p in $packages; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing="$missing $p"
done
if [ -n "$missing" ]; then
  $SUDO apt-get update -q
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q $missing
fi
# Debian's libtorch runs linear layers through the system BLAS; make sure
# that is OpenBLAS rather than the slow reference BLAS.
blas=$(ls /usr/lib/*/openblas-pthread/libblas.so.3 2>/dev/null | head -n 1)
if [ -n "$blas" ]; then
  $SUDO update-alternatives --set "libblas.so.3-$(gcc -dumpmachine)" "$blas" >/dev/null
fi
