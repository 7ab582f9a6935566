#!/usr/bin/env bash
# The install tree, tried as a new user would (tests/install/CMakeLists.txt registers each step
# as a CTest entry, label install):
#   stage  WORK BUILD SOURCE   cmake --install into WORK/staged, then move it to WORK/prefix (so
#                              nothing may depend on the path it was installed to), and check
#                              that it names neither the build nor the source tree
#   programs WORK              the installed trnccl-topo and all_reduce_perf run
#   cmake  WORK CXX GEN SRC    find_package(trnccl) from tests/install/consumer: build and run
#   pkg-config WORK CC SRC     cc FILE $(pkg-config --cflags --libs trnccl): build and run
#   plain  WORK CXX SRC        c++ -I.../include FILE -L.../lib -ltrnccl -ltrnrt: build and run
# Nothing of the environment leads to the trees: LD_LIBRARY_PATH and TRNCCL_TOPOLOGY_PATH are
# cleared (the plain compiler line sets LD_LIBRARY_PATH, as such a user would), so programs find
# libraries through RUNPATH and topologies compiled in.
set -euo pipefail
unset LD_LIBRARY_PATH TRNCCL_TOPOLOGY_PATH TRNCCL_TOPOLOGY PKG_CONFIG_PATH CMAKE_PREFIX_PATH
step=$1
work=$2
prefix=$work/prefix
lib=$prefix/${INSTALL_LIBDIR:-lib}  # CMAKE_INSTALL_LIBDIR, from tests/install/CMakeLists.txt
fail() { echo "install_test $step: $*" >&2; exit 1; }

case $step in
stage)
  build=$3 source=$4
  rm -rf "$work" && mkdir -p "$work"
  cmake --install "$build" --prefix "$work/staged" >"$work/install.log"
  mv "$work/staged" "$prefix"
  # Text files (CMake package, .pc) must not name a tree; binaries carry no RUNPATH into them
  # and no compiled-in path to the source's topology descriptions (debug info may name sources).
  for tree in "$build" "$source" "$work/staged"; do
    if grep -rlF "$tree" "$prefix" --include='*.cmake' --include='*.pc'; then
      fail "the files above name $tree"
    fi
  done
  for f in "$lib"/lib*.so.*.* "$prefix"/bin/*; do
    runpath=$(readelf -d "$f" | sed -n 's/.*R\(UN\)\?PATH.*\[\(.*\)\]/\2/p')
    case $runpath in *'$ORIGIN'*) ;; *) fail "$f: RUNPATH '$runpath' is not relative" ;; esac
    case $runpath in *"$build"* | *"$source"*) fail "$f: RUNPATH '$runpath'" ;; esac
    if grep -qaF "$source/topology/descriptions" "$f"; then
      fail "$f looks for topology descriptions in the source tree"
    fi
  done
  echo "installed and moved to $prefix: $(find "$prefix" -type f | wc -l) files"
  ;;
programs)
  "$prefix/bin/trnccl-topo" --list | grep -qx trn1.32xlarge || fail "trnccl-topo --list"
  "$prefix/bin/trnccl-topo" trn1.32xlarge --neighbors | grep "device 0: 12 3 4 1"
  if [[ -x $prefix/bin/all_reduce_perf ]]; then
    "$prefix/bin/all_reduce_perf" -b 8 -e 64K -f 8 -g 2 -c 1 -n 1 -w 1 |
      grep -F "# Out of bounds values : 0 OK"
  fi
  ;;
cmake)
  cxx=$3 generator=$4 src=$5 version=$6
  cmake -S "$src" -B "$work/cmake-build" -G "$generator" -DCMAKE_CXX_COMPILER="$cxx" \
    -DCMAKE_PREFIX_PATH="$prefix" -DTRNCCL_WANT_VERSION="$version" >"$work/cmake-configure.log"
  grep -qx "trnccl_DIR:PATH=$lib/cmake/trnccl" "$work/cmake-build/CMakeCache.txt" ||
    fail "find_package found another trnccl: $(grep trnccl_DIR "$work/cmake-build/CMakeCache.txt")"
  cmake --build "$work/cmake-build" >"$work/cmake-build.log"
  "$work/cmake-build/two_ranks"
  ;;
pkg-config)
  cc=$3 src=$4
  export PKG_CONFIG_PATH=$lib/pkgconfig
  echo "pkg-config --cflags --libs trnccl: $(pkg-config --cflags --libs trnccl)"
  pkg-config --cflags trnccl | grep -qF -- "-I$prefix/" || fail "--cflags does not name $prefix"
  # As examples/allreduce_threads.c says, plus the run path a user adds to run it in place.
  # shellcheck disable=SC2046
  "$cc" "$src" $(pkg-config --cflags --libs trnccl) -lpthread \
    -Wl,-rpath,"$(pkg-config --variable=libdir trnccl)" -o "$work/allreduce_threads"
  "$work/allreduce_threads"
  ;;
plain)
  cxx=$3 src=$4
  "$cxx" -std=c++17 -Wall -Wextra -Werror -I"$prefix/include" "$src" -L"$lib" -ltrnccl -ltrnrt \
    -o "$work/two_ranks_plain"
  LD_LIBRARY_PATH=$lib "$work/two_ranks_plain"
  ;;
*)
  fail "unknown step"
  ;;
esac
