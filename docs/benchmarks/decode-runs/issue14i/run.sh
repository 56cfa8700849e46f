#!/bin/bash
# ABBA: main (dc1fc36) vs new (the planes' filter passes write turned: no separate transposes),
# the generated 320x256 set, then the photo folder (400-500 px); then both micro-benchmarks.
cd /tmp/e14i
rm -f order.txt
n=0
for b in main new new main main new new main main new new main; do
  n=$((n+1))
  echo "generated run $n $b start $(date -u +%T) load $(cut -d' ' -f1 /proc/loadavg)" >> order.txt
  ./bench-$b decode --check-whole-file both --repeats 5 --batches 25 --json generated-$n-$b.json > generated-$n-$b.log 2>&1
done
n=0
for b in main new new main; do
  n=$((n+1))
  echo "photos run $n $b start $(date -u +%T) load $(cut -d' ' -f1 /proc/loadavg)" >> order.txt
  ./bench-$b decode --check-whole-file both --repeats 5 --batches 25 \
      --folder /work/main/build/bench-python-data/images --json photos-$n-$b.json > photos-$n-$b.log 2>&1
done
for b in main new new main; do
  echo "micro $b start $(date -u +%T) load $(cut -d' ' -f1 /proc/loadavg)" >> order.txt
  ./microbench-$b --benchmark_filter='resize|copy_ycc' --benchmark_repetitions=5 \
      --benchmark_report_aggregates_only=true --benchmark_format=json > micro-$b-$(date +%s).json 2>/dev/null
done
echo "end $(date -u +%T) load $(cut -d' ' -f1 /proc/loadavg)" >> order.txt
