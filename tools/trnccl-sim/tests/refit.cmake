# trnccl-sim-calibrate --refit converts a description of an earlier calibration to the current
# rules (calibrate/refit.h, step_cost.h) from the step times it recorded, measuring nothing. The
# step times below are worked out by hand: through the FIFO (8 B to 16 KiB) 1.00, 1.10, 1.40,
# 2.60 us, the line 1 + 0.1 us/KiB (least squares: 0.9997 + 0.1000 us/KiB, the 8 B round
# 0.0008 us off it); read in place (32 to 128 KiB) 6.0, 8.0, 7.0 us, the least 6.0: fresh
# 6.0 - 0.9997 = 5.00 us (the median, 7.0, until the sixteenth session). The token's hop, the old latency_us: 3.0 us, above the fixed cost, so
# the latency is the fixed cost (1.00) and message_us 0.00; with a hop of 0.4 us, the latency
# is 0.40 and message_us 0.60. The rest of the description (rates, bands, call_us) is kept, and
# trnccl-sim loads the result. The bands' bytes (refit.h, bandBytes): 2 ranks on 2 CPUs keep
# theirs (65536); 4 ranks on 2 CPUs halve them (65536 -> 32768), once: the converted
# description says so, and refitting it again keeps 32768.
# cmake -DCALIBRATE=... -DSIM=... -DDIR=... -P refit.cmake
file(REMOVE_RECURSE ${DIR})
file(MAKE_DIRECTORY ${DIR})
foreach(case IN ITEMS "3.0,1.00,0.00,2,65536" "0.4,0.40,0.60,2,65536" "0.4,0.40,0.60,4,32768")
  # hop, latency, message, ranks, band bytes on 2 CPUs
  string(REPLACE "," ";" case "${case}")
  list(GET case 0 hop)
  list(GET case 1 latency)
  list(GET case 2 message)
  list(GET case 3 ranks)
  list(GET case 4 band)
  file(WRITE ${DIR}/old.yaml "# A ring step of the library itself (trnccl-sim-calibrate-step, medians) took  8 B 1.00, 1024 B 1.10, 4096 B 1.40, 16384 B 2.60, 32768 B 6.00, 65536 B 8.00, 131072 B 7.00us;
# fitted: 3.10 us + 0.0100 us/KiB (copied), 0.0200 us/KiB (in place).
name: host
description: \"${ranks} ranks of this machine over shared memory (measured)\"
instances: 1
chips_per_instance: ${ranks}
lnc: 1
device:
  {kind: host, cores_per_chip: 1, hbm_gib_per_chip: 1, hbm_bandwidth_gbps: 16.43,
   message_us: 0.10, call_us: 0.68, hbm_bands: [{bytes: 65536, gbps: 110.24}]}
fabric:
  kind: switch
  link:
    {class: pcie, bandwidth_gbps: 4.41, latency_us: ${hop}, in_place_bytes: 32768,
     bands: [{bytes: 65536, gbps: 25.88}]}
")
  foreach(pass IN ITEMS old new)  # the second refits the converted description
    execute_process(COMMAND ${CALIBRATE} --refit ${DIR}/${pass}.yaml --cpus 2 --out ${DIR}/out.yaml
      RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 60)
    if(NOT rc EQUAL 0)
      message(FATAL_ERROR "--refit failed (${rc}): ${out}${err}")
    endif()
    file(READ ${DIR}/out.yaml yaml)
    file(WRITE ${DIR}/new.yaml "${yaml}")
    if(NOT yaml MATCHES "message_us: ${message}, in_place_fresh_us: 5.00, call_us: 0.68, hbm_bands: \\[\\{bytes: ${band}, gbps: 110.24\\}\\]"
       OR NOT yaml MATCHES "bandwidth_gbps: 4.41, latency_us: ${latency}, in_place_bytes: 32768,[ \n]*bands: \\[\\{bytes: ${band}, gbps: 25.88\\}\\]"
       OR NOT yaml MATCHES "through the FIFO 1.00 us \\+ 0.1000 us/KiB, in place \\(fresh\n# data\\) 6.00 us a round"
       OR NOT yaml MATCHES "band bytes for ${ranks} ranks on 2 CPUs")
      message(FATAL_ERROR "hop ${hop}, ${ranks} ranks, ${pass}: not the fit worked out by hand: ${yaml}")
    endif()
  endforeach()
  execute_process(COMMAND ${SIM} ${DIR}/new.yaml --ranks ${ranks} --coll allreduce -b 64K -e 64K
    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 60)
  if(NOT rc EQUAL 0 OR NOT out MATCHES "\n +65536 +16384 +float +sum +-1 +[0-9]*[1-9][0-9.]* ")
    message(FATAL_ERROR "trnccl-sim on the refitted description failed (${rc}): ${out}${err}")
  endif()
endforeach()
# A description without step times is an error, not a guess.
file(WRITE ${DIR}/bare.yaml "name: host\n")
execute_process(COMMAND ${CALIBRATE} --refit ${DIR}/bare.yaml --out ${DIR}/bare.out.yaml
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 60)
if(rc EQUAL 0 OR NOT err MATCHES "no step times")
  message(FATAL_ERROR "--refit of a description without step times: ${rc} ${out}${err}")
endif()
message(STATUS "refit ok")
