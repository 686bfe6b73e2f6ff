#!/usr/bin/env bash
# Installs what Vigil needs to build and test, from Debian 12's packages only.
set -euo pipefail
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
PKGS=(build-essential cmake pkg-config git
      libfmt-dev nlohmann-json3-dev libcli11-dev zlib1g-dev libre2-dev
      libarchive-dev  # vigil diagnose reads logs.zip, plog.tar.gz
      libssl-dev  # libcrypto: HMAC-SHA256 of the job-key check
      libgtest-dev libgmock-dev googletest libbenchmark-dev
      iproute2 procps python3
      nftables  # packet loss between network-namespace hosts (tests/noalarm)
      libopenmpi-dev openmpi-bin  # mpirun for the hccl_test programs (tests/hccl_programs)
      python3-torch libtorch-dev python3-pybind11 pybind11-dev
      chromium  # headless, for the test of vigil diagnose's HTML report
      clang-16 libclang-rt-16-dev  # libFuzzer targets (tests/fuzz; clang 14 lacks source_location)
      llvm)  # llvm-symbolizer: function names and lines in the fuzz targets' sanitizer reports
missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
