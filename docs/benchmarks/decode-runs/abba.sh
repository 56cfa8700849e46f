#!/bin/bash
# A decode round's ABBA runs: in FOLDER, which holds the binaries bench-<name>, each name of
# GENERATED in turn runs `gpufeed-bench decode --check-whole-file both --repeats 5 --batches 25`
# on the generated 320x256 set, then each of PHOTOS on the photographs
# (build/bench-python-data/images, 400-500 px), writing <set>-<run>-<name>.json and .log;
# order.txt records each run's start and the load. issue14i/summarize.py reads the JSON.
# Usage: abba.sh FOLDER "main new new main ..." "main new new main ..."
set -euo pipefail
folder=$1 generated=$2 photos=$3
photo_folder=/work/main/build/bench-python-data/images
cd "$folder"
rm -f order.txt
run() {  # set, run number, binary name, extra arguments
  local set=$1 n=$2 b=$3
  shift 3
  echo "$set run $n $b start $(date -u +%T) load $(cut -d' ' -f1 /proc/loadavg)" >> order.txt
  "./bench-$b" decode --check-whole-file both --repeats 5 --batches 25 "$@" \
    --json "$set-$n-$b.json" > "$set-$n-$b.log" 2>&1
}
n=0
for b in $generated; do
  n=$((n + 1))
  run generated "$n" "$b"
done
n=0
for b in $photos; do
  n=$((n + 1))
  run photos "$n" "$b" --folder "$photo_folder"
done
echo "end $(date -u +%T) load $(cut -d' ' -f1 /proc/loadavg)" >> order.txt
