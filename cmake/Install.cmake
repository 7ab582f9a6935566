# The install tree (`cmake --install build --prefix DIR`): libtrnccl, libtrnrt, the C headers,
# a CMake package (find_package(trnccl) -> trnccl::trnccl) and pkg-config's trnccl.pc. Nothing
# in it records the build tree or the prefix it was installed to: the CMake package and the .pc
# find the prefix from their own place, the libraries and programs find each other through
# $ORIGIN, and the topology descriptions are compiled in. tests/install builds and runs programs
# against a fresh, moved install (label install).
set(trnccl_cmake_dir ${CMAKE_INSTALL_LIBDIR}/cmake/trnccl)

# Programs get $ORIGIN/<bin to lib> (CMAKE_INSTALL_RPATH, top-level CMakeLists.txt); the
# libraries live side by side.
set_target_properties(trnrt trnccl PROPERTIES INSTALL_RPATH "$ORIGIN")
install(TARGETS trnrt trnccl EXPORT trncclTargets)
install(DIRECTORY include/trnccl DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(EXPORT trncclTargets NAMESPACE trnccl:: DESTINATION ${trnccl_cmake_dir})

include(CMakePackageConfigHelpers)
configure_package_config_file(cmake/trncclConfig.cmake.in
  ${PROJECT_BINARY_DIR}/trncclConfig.cmake INSTALL_DESTINATION ${trnccl_cmake_dir})
# 0.x: a minor version may change the API.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/trncclConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/trncclConfig.cmake
  ${PROJECT_BINARY_DIR}/trncclConfigVersion.cmake DESTINATION ${trnccl_cmake_dir})

# trnccl.pc: prefix=${pcfiledir}/../.. (as many levels as the libdir has, plus pkgconfig/), so
# pkg-config prints the directories of wherever the tree is, not the configure-time prefix.
file(RELATIVE_PATH TRNCCL_PC_UP /prefix/${CMAKE_INSTALL_LIBDIR}/pkgconfig /prefix)
string(REGEX REPLACE "/$" "" TRNCCL_PC_UP "${TRNCCL_PC_UP}")
foreach(dir LIBDIR INCLUDEDIR)
  if(IS_ABSOLUTE "${CMAKE_INSTALL_${dir}}")  # an absolute directory given by hand stays put
    set(TRNCCL_PC_${dir} "${CMAKE_INSTALL_${dir}}")
  else()
    set(TRNCCL_PC_${dir} "\${prefix}/${CMAKE_INSTALL_${dir}}")
  endif()
endforeach()
configure_file(cmake/trnccl.pc.in ${PROJECT_BINARY_DIR}/trnccl.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/trnccl.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
