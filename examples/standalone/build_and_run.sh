#!/usr/bin/env bash
# Installs a built trnccl tree into a temporary prefix, builds examples/standalone against it
# with find_package(trnccl) as a user would, and runs train_sgd (CTest example.train_sgd).
#   examples/standalone/build_and_run.sh BUILD_DIR [ranks]
set -euo pipefail
build=$(cd "$1" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cmake --install "$build" --prefix "$tmp/prefix" > "$tmp/install.log"
cmake -S "$here" -B "$tmp/build" -DCMAKE_PREFIX_PATH="$tmp/prefix" -DCMAKE_BUILD_TYPE=Release \
  > "$tmp/configure.log" || { cat "$tmp/configure.log"; exit 1; }
cmake --build "$tmp/build" > "$tmp/build.log" || { cat "$tmp/build.log"; exit 1; }
"$tmp/build/train_sgd" "${2:-4}"
