# The one version source is include/trnccl/trnccl.h (TRNCCL_MAJOR/MINOR/PATCH, from which
# TRNCCL_VERSION_CODE and trncclGetVersion follow). This sets TRNCCL_VERSION from it for
# project(), the shared libraries' VERSION/SOVERSION and the package files, and stops the
# configure step when CHANGELOG.md's newest entry names another version.
set(TRNCCL_SOURCE_ROOT ${CMAKE_CURRENT_LIST_DIR}/..)
function(trnccl_read_version out)
  file(STRINGS ${TRNCCL_SOURCE_ROOT}/include/trnccl/trnccl.h defines
       REGEX "^#define TRNCCL_(MAJOR|MINOR|PATCH) +[0-9]+$")
  foreach(part MAJOR MINOR PATCH)
    set(value "")
    foreach(line ${defines})
      if(line MATCHES "^#define TRNCCL_${part} +([0-9]+)$")
        set(value ${CMAKE_MATCH_1})
      endif()
    endforeach()
    if(value STREQUAL "")
      message(FATAL_ERROR "include/trnccl/trnccl.h: no #define TRNCCL_${part}")
    endif()
    list(APPEND parts ${value})
  endforeach()
  list(JOIN parts "." version)
  # The newest entry is the first "## <version>" heading.
  file(STRINGS ${TRNCCL_SOURCE_ROOT}/CHANGELOG.md headings REGEX "^## ")
  list(GET headings 0 newest)
  if(NOT newest MATCHES "^## ${version}( |$)")
    message(FATAL_ERROR "CHANGELOG.md's newest entry is '${newest}', trnccl.h says ${version}: "
                        "add a '## ${version}' entry (or fix the header)")
  endif()
  set(${out} ${version} PARENT_SCOPE)
endfunction()
