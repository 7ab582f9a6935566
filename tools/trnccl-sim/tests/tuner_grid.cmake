# The tuner checked against the simulator on a small grid (docs/SIMULATOR.md, "The tuner"):
# for each built-in topology and rank count below, at sizes 8 B to 1 GiB, the tuner's pick must
# be within 10 % of the fastest algorithm the simulator finds. cmake -DSIM=... -P tuner_grid.cmake
set(cases
  "trn1.32xlarge --ranks 32"
  "trn1.32xlarge --instances 4"
  "trn2.48xlarge-lnc2 --ranks 64"
  "trn2-ultraserver --ranks 128"
  "trn3-ultraserver-gen1 --ranks 64"
  "trn3-ultraserver-gen2 --instances 4")
set(failed "")
foreach(case ${cases})
  separate_arguments(args UNIX_COMMAND "${case}")
  foreach(coll allreduce allgather reducescatter)
    execute_process(
      COMMAND ${SIM} ${args} --coll ${coll} -b 8 -e 1G -f 64 --algo all --max-excess 0.10 -j 1
      RESULT_VARIABLE rc OUTPUT_QUIET ERROR_VARIABLE err TIMEOUT 300)
    if(NOT rc EQUAL 0)
      string(APPEND failed "${case} ${coll}:\n${err}")
    endif()
  endforeach()
endforeach()
if(failed)
  message(FATAL_ERROR "the tuner's pick is off:\n${failed}")
endif()
