# One CMake target per layer of the library (docs/ARCHITECTURE.md), so that the layering is
# physical: a layer's sources see only their own folder and the folders of the layers they
# declare as dependencies. A wrong-direction include does not compile.
#
# How: every layer gets an include root of its own in the build tree, holding one symbolic link
# named like the include prefix (e.g. layers/trnccl_shm/transports/shm -> transports/shm). A
# consumer's include path is the union of the roots of the layers it links, transitively, and
# nothing else of the source tree.

set(TRNCCL_LAYER_ROOTS ${PROJECT_BINARY_DIR}/layers)

# trnccl_layer_root(TARGET PREFIX DIR): the include root of TARGET, in which PREFIX (as used in
# #include "PREFIX/x.h") names the source folder DIR.
function(trnccl_layer_root target prefix dir)
  set(root ${TRNCCL_LAYER_ROOTS}/${target})
  get_filename_component(parent ${root}/${prefix} DIRECTORY)
  file(MAKE_DIRECTORY ${parent})
  file(CREATE_LINK ${PROJECT_SOURCE_DIR}/${dir} ${root}/${prefix} SYMBOLIC)
  set(TRNCCL_LAYER_ROOT ${root} PARENT_SCOPE)
endfunction()

# trnccl_layer(TARGET DIR [PREFIX prefix] [DEPS layer...] [PRIVATE_DEPS layer...]
#              [LIBS external...] [PUBLIC_LIBS external...])
# A static library of every .cc below DIR (recursively), compiled with -O3 and warnings as
# errors, whose public include root exposes DIR as PREFIX (default: DIR without "src/").
# DEPS are layers our headers use (so our users see them too); PRIVATE_DEPS layers only our
# sources use (our users do not see them); LIBS and PUBLIC_LIBS external libraries.
function(trnccl_layer target dir)
  cmake_parse_arguments(L "" "PREFIX" "DEPS;PRIVATE_DEPS;LIBS;PUBLIC_LIBS" ${ARGN})
  if(NOT L_PREFIX)
    string(REGEX REPLACE "^src/" "" L_PREFIX ${dir})
  endif()
  file(GLOB_RECURSE srcs CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/${dir}/*.cc)
  trnccl_layer_root(${target} ${L_PREFIX} ${dir})
  if(NOT srcs)  # headers only (so far)
    add_library(${target} INTERFACE)
    target_include_directories(${target} INTERFACE ${TRNCCL_LAYER_ROOT})
    target_link_libraries(${target} INTERFACE ${L_DEPS} ${L_PUBLIC_LIBS})
  else()
    add_library(${target} STATIC ${srcs})
    target_include_directories(${target} PUBLIC ${TRNCCL_LAYER_ROOT})
    target_link_libraries(${target} PUBLIC ${L_DEPS} ${L_PUBLIC_LIBS}
      PRIVATE ${L_PRIVATE_DEPS} ${L_LIBS} trnccl_warnings)
    target_compile_options(${target} PRIVATE -O3)
  endif()
  set_property(GLOBAL APPEND PROPERTY TRNCCL_LAYERS ${target})
endfunction()

# trnccl_header_layer(TARGET DIR [DEPS ...]): the include root of a layer whose code is compiled
# into another library (common and device live in libtrnrt), as an interface target.
function(trnccl_header_layer target dir)
  cmake_parse_arguments(L "" "" "DEPS" ${ARGN})
  string(REGEX REPLACE "^src/" "" prefix ${dir})
  add_library(${target} INTERFACE)
  trnccl_layer_root(${target} ${prefix} ${dir})
  target_include_directories(${target} INTERFACE ${TRNCCL_LAYER_ROOT})
  target_link_libraries(${target} INTERFACE ${L_DEPS})
endfunction()
