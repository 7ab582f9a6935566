#!/usr/bin/env bash
# Install the Debian packages trnccl needs to build, test and benchmark.
# Idempotent: apt-get runs only when something is missing.
#   scripts/deps.sh        what make, make test and make demo need (PyTorch too: python/)
#   scripts/deps.sh fuzz   also clang and its libFuzzer runtime (make fuzz)
# iproute2, util-linux and iptables: the emulated hosts of tests/multihost and tests/netfault
# (network namespaces, and the faults' rules inside them; the tests make and remove both).
set -euo pipefail
pkgs=(build-essential cmake pkg-config ninja-build
      libfmt-dev libyaml-cpp-dev libboost-dev libgtest-dev libgmock-dev
      libfabric-dev libfabric-bin libopenmpi-dev openmpi-bin
      iproute2 util-linux iptables procps graphviz
      libgloo-dev gnuplot-nox clang-format libcli11-dev nlohmann-json3-dev
      python3-torch libtorch-dev pybind11-dev python3-pytest)
if [[ "${1:-}" == fuzz ]]; then pkgs+=(clang libclang-rt-14-dev); fi
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "deps: installing ${missing[*]}"
  sudo_cmd=""; [ "$(id -u)" -eq 0 ] || sudo_cmd="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $sudo_cmd apt-get update -qq
  $sudo_cmd apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
