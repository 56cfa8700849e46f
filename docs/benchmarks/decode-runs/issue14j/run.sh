#!/bin/bash
# ABBA: main (3b3d8f7) vs new (decode_planes transforms only the iMCUs under the crop, and
# baseline JPEGs take the planar path for every crop), the generated 320x256 set, then the
# photo folder (400-500 px).
cd /tmp/e15/final
rm -f order.txt
n=0
for b in main new new main main new new main main new new main; do
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
echo "end $(date -u +%T) load $(cut -d' ' -f1 /proc/loadavg)" >> order.txt
