#!/bin/bash
# ABBA: main (68141a5's library: the bench-main of ../run.sh) vs new (a5947c9: a copy decodes
# only the chroma context its upsampling reads), `gpufeed-bench decode --cases center`, 8 runs
# on each of the generated set as 4:4:4, 4:2:2 (../other-sets/reencode.cpp, copied to
# /tmp/gen444 and /tmp/gen422) and as generated (4:2:0, /tmp/gen320). Run in a folder holding
# bench-main and bench-new.
set -euo pipefail
rm -f order.txt
for s in 444 422 320; do
  n=0
  for b in main new new main main new new main; do
    n=$((n + 1))
    echo "$s run $n $b start $(date -u +%T) load $(cut -d' ' -f1 /proc/loadavg)" >> order.txt
    "./bench-$b" decode --cases center --check-whole-file both --repeats 5 --batches 25 \
      --folder "/tmp/gen$s" --json "s$s-$n-$b.json" > "s$s-$n-$b.log" 2>&1
  done
done
echo "end $(date -u +%T)" >> order.txt
