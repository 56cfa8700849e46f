#!/bin/bash
# More pairs on the photographs (the first ABBA had two there): whole and random, ABBA x 3.
cd /tmp/e14i
n=0
for b in main new new main main new new main main new new main; do
  n=$((n+1))
  echo "photos2 run $n $b start $(date -u +%T) load $(cut -d' ' -f1 /proc/loadavg)" >> order.txt
  ./bench-$b decode --check-whole-file both --repeats 5 --batches 25 --cases whole,random \
      --folder /work/main/build/bench-python-data/images --json photos2-$n-$b.json > photos2-$n-$b.log 2>&1
done
echo "end2 $(date -u +%T) load $(cut -d' ' -f1 /proc/loadavg)" >> order.txt
