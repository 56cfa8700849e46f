#!/bin/bash
# ABBA: main (f952559 image code = 0400342 binary) vs issue14e, generated set then the photo folder.
cd /tmp/e14r
for set in generated photos; do
  extra=""; [ $set = photos ] && extra="--folder /work/main/build/bench-python-data/images"
  n=0
  for b in main new new main main new new main; do
    n=$((n+1))
    echo "$set run $n $b start $(date -u +%T) load $(cut -d' ' -f1 /proc/loadavg)" >> order.txt
    ./gpufeed-bench-$b decode --check-whole-file both --repeats 5 --batches 25 $extra --json $set-$n-$b.json > $set-$n-$b.log 2>&1
  done
done
echo "end $(date -u +%T) load $(cut -d' ' -f1 /proc/loadavg)" >> order.txt
