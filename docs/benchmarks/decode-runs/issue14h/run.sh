#!/bin/bash
# ABBA on one binary: the pipelines with the accurate inverse DCT (image_options' default) and
# with image_options::fast_dct (--pipeline-dct fast), the limit being tjbench -fastdct's in both;
# the generated 320x256 set twice over, then the photo folder.
cd /tmp/e14h
rm -f order.txt
n=0
for d in accurate fast fast accurate accurate fast fast accurate; do
  n=$((n+1))
  echo "generated run $n $d start $(date -u +%T) load $(cut -d' ' -f1 /proc/loadavg)" >> order.txt
  ./gpufeed-bench decode --check-whole-file both --repeats 5 --batches 25 --pipeline-dct $d \
      --json generated-$n-$d.json > generated-$n-$d.log 2>&1
done
n=0
for d in accurate fast fast accurate; do
  n=$((n+1))
  echo "photos run $n $d start $(date -u +%T) load $(cut -d' ' -f1 /proc/loadavg)" >> order.txt
  ./gpufeed-bench decode --check-whole-file both --repeats 5 --batches 25 --pipeline-dct $d \
      --folder /work/main/build/bench-python-data/images --json photos-$n-$d.json > photos-$n-$d.log 2>&1
done
echo "end $(date -u +%T) load $(cut -d' ' -f1 /proc/loadavg)" >> order.txt
