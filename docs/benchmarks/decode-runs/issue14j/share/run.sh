#!/bin/bash
# planar_min_share 0.5 (as committed), 0.25 and 0 (the planar path for every YCbCr crop), now
# that the planar path decodes only the iMCUs under the crop: random and random_small, generated
# 320x256 set, rotated order; then the photographs.
cd /tmp/e15/share
rm -f order.txt
n=0
for round in 1 2; do
  for v in 0.5 0.25 0.0 0.0 0.25 0.5; do
    n=$((n+1))
    echo "generated run $n $v start $(date -u +%T) load $(cut -d' ' -f1 /proc/loadavg)" >> order.txt
    ./bench-$v decode --cases random,random_small --check-whole-file both --repeats 5 --batches 25 --json generated-$n-$v.json > generated-$n-$v.log 2>&1
  done
done
n=0
for v in 0.5 0.25 0.0 0.0 0.25 0.5; do
  n=$((n+1))
  echo "photos run $n $v start $(date -u +%T) load $(cut -d' ' -f1 /proc/loadavg)" >> order.txt
  ./bench-$v decode --cases random,random_small --check-whole-file both --repeats 5 --batches 25 \
      --folder /work/main/build/bench-python-data/images --json photos-$n-$v.json > photos-$n-$v.log 2>&1
done
echo "end $(date -u +%T)" >> order.txt
