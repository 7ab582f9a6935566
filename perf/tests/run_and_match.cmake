# cmake -DCMD=<;-list> -DEXPECT=<text> -P run_and_match.cmake
# Runs CMD, echoes its output, fails unless it exits 0 and its stdout contains EXPECT.
execute_process(COMMAND ${CMD} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
message("${out}")
if(err)
  message("stderr:\n${err}")
endif()
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "exit status ${rc}")
endif()
string(FIND "${out}" "${EXPECT}" found)
if(found EQUAL -1)
  message(FATAL_ERROR "output lacks '${EXPECT}'")
endif()
