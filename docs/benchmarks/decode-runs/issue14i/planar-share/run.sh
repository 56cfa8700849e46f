#!/bin/bash
# planar_min_share 0.5 (dc1fc36's), 0.65, 0.8, 1.01 (planar only for copies): random and whole,
# generated 320x256 set, rotated order; then the photographs.
cd /tmp/share
rm -f order.txt
n=0
for round in 1 2 3; do
  for v in 0.5 0.65 0.8 1.01 1.01 0.8 0.65 0.5; do
    n=$((n+1))
    echo "generated run $n $v start $(date -u +%T) load $(cut -d' ' -f1 /proc/loadavg)" >> order.txt
    ./bench-$v decode --cases random --check-whole-file both --repeats 5 --batches 25 --json generated-$n-$v.json > generated-$n-$v.log 2>&1
  done
done
n=0
for v in 0.5 0.65 0.8 1.01 1.01 0.8 0.65 0.5; do
  n=$((n+1))
  echo "photos run $n $v start $(date -u +%T) load $(cut -d' ' -f1 /proc/loadavg)" >> order.txt
  ./bench-$v decode --cases random --check-whole-file both --repeats 5 --batches 25 \
      --folder /work/main/build/bench-python-data/images --json photos-$n-$v.json > photos-$n-$v.log 2>&1
done
echo "end $(date -u +%T)" >> order.txt
