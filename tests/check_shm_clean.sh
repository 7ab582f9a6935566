#!/usr/bin/env bash
# Runs last in the suite (CTest fixture cleanup): nothing of trnccl's may be left in /dev/shm.
left=$(ls /dev/shm 2>/dev/null | grep '^trnccl' || true)
if [ -n "$left" ]; then
  echo "left in /dev/shm after the suite:"; echo "$left"; exit 1
fi
echo "/dev/shm holds nothing of trnccl's"
