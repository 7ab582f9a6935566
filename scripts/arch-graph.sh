#!/usr/bin/env bash
# Regenerates the layer picture of docs/ARCHITECTURE.md from the CMake targets themselves:
# configures a scratch build (library only) with `cmake --graphviz`, keeps the layer targets
# (cmake/Layers.cmake) and libtrnrt, names each layer's folder, and renders it with Graphviz's
# dot. Writes docs/layers.dot (reviewable text) and docs/layers.svg. `make arch-graph` runs it.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v dot >/dev/null || { echo "arch-graph: needs Graphviz (apt-get install graphviz)" >&2; exit 1; }
src=$(pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# What cmake --graphviz leaves out: libraries of other projects, the shared libtrnccl that bundles
# every layer, the warning flags, and the programs (tests, perf and examples are not configured).
cat >"$tmp/CMakeGraphVizOptions.cmake" <<'OPTIONS'
set(GRAPHVIZ_GRAPH_NAME "trnccl layers")
set(GRAPHVIZ_EXTERNAL_LIBS FALSE)
set(GRAPHVIZ_EXECUTABLES FALSE)
set(GRAPHVIZ_GENERATE_PER_TARGET FALSE)
set(GRAPHVIZ_GENERATE_DEPENDERS FALSE)
set(GRAPHVIZ_IGNORE_TARGETS "^trnccl$" "^trnccl_warnings$")
OPTIONS
cmake -S . -B "$tmp" -DTRNCCL_BUILD_TESTS=OFF -DTRNCCL_BUILD_PERF=OFF \
  -DTRNCCL_BUILD_EXAMPLES=OFF --graphviz="$tmp/layers.dot" >"$tmp/configure.log" ||
  { cat "$tmp/configure.log" >&2; exit 1; }

# Each layer's include root (build/layers/<target>/<prefix>) links to its folder: label with it.
labels=()
for root in "$tmp"/layers/*; do
  target=$(basename "$root")
  folder=$(readlink "$(find "$root" -type l | head -1)")
  labels+=(-e "s|label = \"$target\"|label = \"$target\\\\n${folder#"$src"/}\"|")
done
# CMake's legend explains every kind of target; docs/ARCHITECTURE.md explains the three used.
sed -e '/^subgraph clusterLegend {/,/^}/d' \
  -e 's|^digraph "\(.*\)" {|digraph "\1" {\n  graph [ rankdir = TB, ranksep = 0.4 ];|' \
  -e 's|shape = octagon|shape = box|; s|shape = pentagon|shape = box, style = rounded|' \
  -e 's|label = "trnrt", shape = doubleoctagon|label = "trnrt\\nlibtrnrt.so (common + device)", shape = box, style = bold|' \
  "${labels[@]}" "$tmp/layers.dot" >docs/layers.dot
dot -Tsvg docs/layers.dot -o docs/layers.svg
echo "arch-graph: wrote docs/layers.dot and docs/layers.svg ($(grep -c 'label =' docs/layers.dot) targets)"
