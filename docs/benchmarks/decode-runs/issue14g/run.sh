#!/bin/bash
# ABBA: main (5103d22) vs new (the planar copy: copy_ycc_to_rgb), the generated 320x256 set
# (the case the change is for: `center` is a copy of 224 x 224 there) twice over, then the photo
# folder (400-500 px: no centre crop is a copy there; a check that nothing else moved); then the
# new kernel's micro-benchmark.
cd /tmp/e14g
rm -f order.txt
n=0
for b in main new new main main new new main main new new main main new new main; do
  n=$((n+1))
  echo "generated run $n $b start $(date -u +%T) load $(cut -d' ' -f1 /proc/loadavg)" >> order.txt
  ./bench-$b decode --check-whole-file both --repeats 5 --batches 25 --json generated-$n-$b.json > generated-$n-$b.log 2>&1
done
n=0
for b in main new new main main new new main; do
  n=$((n+1))
  echo "photos run $n $b start $(date -u +%T) load $(cut -d' ' -f1 /proc/loadavg)" >> order.txt
  ./bench-$b decode --check-whole-file both --repeats 5 --batches 25 \
      --folder /work/main/build/bench-python-data/images --json photos-$n-$b.json > photos-$n-$b.log 2>&1
done
echo "micro start $(date -u +%T) load $(cut -d' ' -f1 /proc/loadavg)" >> order.txt
./microbench-new --benchmark_filter=ycc --benchmark_repetitions=5 \
    --benchmark_report_aggregates_only=true --benchmark_format=json > micro-new.json 2>/dev/null
echo "end $(date -u +%T) load $(cut -d' ' -f1 /proc/loadavg)" >> order.txt
