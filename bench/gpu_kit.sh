#!/bin/sh
# The kit bench/gpu_check.sh builds pstrain with on a machine that has a
# CUDA GPU and python3's PyTorch (its libtorch) but none of Debian's -dev
# packages pstrain needs and no network: those packages and Fashion-MNIST,
# as Debian 12 .debs, downloaded here by apt into KIT_DIR (default .gpukit,
# which git ignores). About 50 MB.
#   bench/gpu_kit.sh [KIT_DIR]
set -eu
kit=${1:-.gpukit}
mkdir -p "$kit"
# Each -dev package's shared library comes with it: its .so link points
# into the runtime package.
packages="libasio-dev libcli11-dev nlohmann-json3-dev libboost1.81-dev
  zlib1g-dev zlib1g libssl-dev libssl3 libturbojpeg0-dev libturbojpeg0
  libpng-dev libpng16-16 pkgconf pkgconf-bin libpkgconf3
  dataset-fashion-mnist"
cd "$kit"
# shellcheck disable=SC2086
apt-get download $packages
echo "$(ls -1 ./*.deb | wc -l) packages in $kit"
