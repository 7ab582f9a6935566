# Calibrates a `host` description for 2 ranks and simulates one all-reduce on it: the YAML must
# load, name its measured rates, the shm transport's in-place size and the rates per working set
# (link `bands` and device `hbm_bands`, 64 KiB to 32 MiB, for 2 ranks on this machine's CPUs), and
# give a table row with a positive time. Its links and HBM take the rates of local copies and
# sums; --neighbour-out writes the same description with the rates of copying and summing a
# neighbour's fresh data. The library's own ring step (trnccl-sim-calibrate-step: 2 processes, the
# public API) must have been timed at every size, its fitted cost per message through the FIFO
# written as the link's latency (the token's hand-off, at most that cost) and the device's
# message_us (the rest), what a round read in place costs more as its in_place_fresh_us, and the
# call's own cost (calls of one step against calls of eight) as its call_us. Each may be 0.
# The host threads' CPU time taken off each step is printed and written: 0 with a CPU per
# process (2 processes on 2 or more CPUs), at least 0 on one (library_step.cc).
# Each run of the step program is judged against the copy rate (step_check.h) and printed with
# what machine_probe.h saw around each of its repetitions; the output and the description say
# which run was kept (one run at least, three at most).
# cmake -DCALIBRATE=... -DSIM=... -DDIR=... -P calibrate.cmake
file(REMOVE_RECURSE ${DIR})
file(MAKE_DIRECTORY ${DIR})
execute_process(COMMAND ${CALIBRATE} --chips 2 --repeat 1 --out ${DIR}/host.yaml
  --neighbour-out ${DIR}/neighbour.yaml
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 200)
if(NOT rc EQUAL 0 OR NOT out MATCHES "copy [0-9.]+ GB/s per rank, a neighbour's data [0-9.]+, reduce [0-9.]+, a neighbour's data [0-9.]+, hand-off [0-9.]+ us")
  message(FATAL_ERROR "calibration failed (${rc}): ${out}${err}")
endif()
if(NOT out MATCHES "\nstep -?[0-9.]+ us [^\n]* \\(fresh: ([0-9.]+) us more\\): latency ([0-9.]+) us, message ([0-9.]+) us, call ([0-9.]+) us \\(-?[0-9.]+--?[0-9.]+; a ring step of the library: 8 B -?[0-9.]+,[^\n]* 131072 B -?[0-9.]+ us\\)")
  message(FATAL_ERROR "the library's step was not timed, or its costs not printed: ${out}")
endif()
set(fresh "${CMAKE_MATCH_1}")
set(latency "${CMAKE_MATCH_2}")
set(measured "${CMAKE_MATCH_3}")
set(call "${CMAKE_MATCH_4}")
file(READ ${DIR}/neighbour.yaml neighbour)
if(NOT neighbour MATCHES "rates of a neighbour's data")
  message(FATAL_ERROR "--neighbour-out wrote no neighbour's description: ${neighbour}")
endif()
file(READ ${DIR}/host.yaml yaml)
if(NOT yaml MATCHES "rates of local data")
  message(FATAL_ERROR "the description's links do not take the local copy rate: ${yaml}")
endif()
if(NOT yaml MATCHES "\n +message_us: ${measured}, in_place_fresh_us: ${fresh}, call_us: ${call}, hbm_bands"
   OR NOT neighbour MATCHES "message_us: ${measured}, in_place_fresh_us: ${fresh}, call_us: ${call},")
  message(FATAL_ERROR "the description lacks the measured message cost ${measured} or call cost ${call}: ${yaml}")
endif()
if(NOT yaml MATCHES "bandwidth_gbps: [0-9.]+, latency_us: ${latency}, in_place_bytes: [1-9][0-9]*")
  message(FATAL_ERROR "the description lacks the measured link: ${yaml}")
endif()
if(NOT out MATCHES "131072 B -?[0-9.]+ us\\); host threads ([0-9.]+) us a round taken off \\([0-9.]+-[0-9.]+\\)")
  message(FATAL_ERROR "the host threads' share of a step was not printed: ${out}")
endif()
set(host "${CMAKE_MATCH_1}")
if(NOT out MATCHES "step program attempt 1: (consistent|INCONSISTENT) \\(FIFO slope [0-9.]+x two copies, in place [0-9.]+x a copy\\)\n  run: [0-9.]+ s, CPU-to-CPU line [0-9.]+/[0-9.]+ us, steal [0-9]+, iowait [0-9]+, idle [0-9]+ of [0-9]+ jiffies")
  message(FATAL_ERROR "the step program's run was not judged, or its repetition's probe not printed: ${out}")
endif()
if(NOT out MATCHES "\nstep program: attempt ([1-3]) of ([1-3]) kept")
  message(FATAL_ERROR "the calibration does not say which run of the step program it kept: ${out}")
endif()
if(NOT yaml MATCHES "# The step program: attempt ${CMAKE_MATCH_1} of ${CMAKE_MATCH_2} kept")
  message(FATAL_ERROR "the description does not say which run of the step program it took: ${yaml}")
endif()
if(NOT yaml MATCHES "Each step is less ${host} \\[")
  message(FATAL_ERROR "the description does not say the host threads' share ${host}: ${yaml}")
endif()
set(gbps "gbps: [0-9.]*[1-9][0-9.]*")
set(band "\\{bytes: [0-9]+, ${gbps}\\}")
# 64 KiB to 32 MiB measured, each written for 2 ranks on this machine's CPUs (refit.h,
# bandBytes: halved on one CPU).
string(REGEX MATCH "band bytes for 2 ranks on\n?#? ?([0-9]+) CPUs" marker "${yaml}")
if(NOT marker)
  message(FATAL_ERROR "the description does not say for how many CPUs its bands are: ${yaml}")
endif()
if(NOT CMAKE_MATCH_1 EQUAL 1 AND NOT host STREQUAL "0.00")
  message(FATAL_ERROR "2 processes on ${CMAKE_MATCH_1} CPUs share none, yet ${host} us was taken off a step")
endif()
if(CMAKE_MATCH_1 EQUAL 1)
  set(bands "\\[\\{bytes: 32768, ${gbps}\\}(, ${band})*, \\{bytes: 16777216, ${gbps}\\}\\]")
else()
  set(bands "\\[\\{bytes: 65536, ${gbps}\\}(, ${band})*, \\{bytes: 33554432, ${gbps}\\}\\]")
endif()
if(NOT yaml MATCHES "in_place_bytes: [0-9]+,[ \n]*bands: ${bands}"
   OR NOT yaml MATCHES "hbm_bands: ${bands}")
  message(FATAL_ERROR "the description lacks the rates per working set: ${yaml}")
endif()
execute_process(COMMAND ${SIM} ${DIR}/host.yaml --ranks 2 --coll allreduce -b 64K -e 64K
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 200)
if(NOT rc EQUAL 0 OR NOT out MATCHES "\n +65536 +16384 +float +sum +-1 +[0-9]*[1-9][0-9.]* ")
  message(FATAL_ERROR "trnccl-sim on the calibrated description failed (${rc}): ${out}${err}")
endif()
message(STATUS "calibrate ok: ${yaml}")
