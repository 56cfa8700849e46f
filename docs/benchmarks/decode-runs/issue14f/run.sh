#!/bin/bash
# ABBA: main (a646922's resize = b17152c's) vs new (6861e60: four turned rows per store), the
# generated 320x256 set then the photo folder; then the resize micro-benchmark, ABBA.
cd /tmp/e14f
for set in generated photos; do
  extra=""; [ $set = photos ] && extra="--folder /work/main/build/bench-python-data/images"
  n=0
  for b in main new new main main new new main; do
    n=$((n+1))
    echo "$set run $n $b start $(date -u +%T) load $(cut -d' ' -f1 /proc/loadavg)" >> order.txt
    ./gpufeed-bench-$b decode --check-whole-file both --repeats 5 --batches 25 $extra --json $set-$n-$b.json > $set-$n-$b.log 2>&1
  done
done
n=0
for b in main new new main main new new main; do
  n=$((n+1))
  echo "micro run $n $b start $(date -u +%T) load $(cut -d' ' -f1 /proc/loadavg)" >> order.txt
  ./microbench-$b --benchmark_filter=resize --benchmark_repetitions=3 --benchmark_report_aggregates_only=true --benchmark_format=json > micro-$n-$b.json 2>/dev/null
done
echo "end $(date -u +%T) load $(cut -d' ' -f1 /proc/loadavg)" >> order.txt
