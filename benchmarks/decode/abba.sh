#!/usr/bin/env bash
# Paired before/after runs of `gpufeed-bench decode` for two builds, alternated (A B B A ...) so
# that drift in the machine's load falls on both, then their summary (abba_summary.py).
#
#   benchmarks/decode/abba.sh DIR "A B B A ..." ["A B B A ..."]
#
# DIR holds the builds to compare as DIR/bench-A and DIR/bench-B (copies of build/bin/gpufeed-bench
# made at each commit). The first order runs on the generated 320x256 set, the second (optional)
# on the photographs in $PHOTOS (default build/bench-python-data/images, which scripts/bench-python
# writes). Each run is `decode $DECODE_ARGS` (default: --check-whole-file both --repeats 5
# --batches 25) into DIR/<set>-<run>-<name>.json and .log; DIR/order.txt has each run's start and
# load. docs/benchmarks/decode/README.md says how to read the summary.
set -euo pipefail
if (($# < 2)); then
  echo 'usage: abba.sh DIR "A B B A ..." ["A B B A ..."]' >&2
  exit 2
fi
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
folder=$1 generated=$2 photos=${3:-}
photo_folder=${PHOTOS:-$root/build/bench-python-data/images}
read -r -a decode_args <<< "${DECODE_ARGS:---check-whole-file both --repeats 5 --batches 25}"
cd "$folder"
rm -f order.txt
run() {  # set, run number, build name, extra arguments
  local set=$1 n=$2 b=$3
  shift 3
  echo "$set run $n $b start $(date -u +%T) load $(cut -d' ' -f1 /proc/loadavg)" >> order.txt
  "./bench-$b" decode "${decode_args[@]}" "$@" --json "$set-$n-$b.json" > "$set-$n-$b.log" 2>&1
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
names=$(printf '%s\n' $generated $photos | sort -u | tr '\n' ' ')
# shellcheck disable=SC2086  # the two names, as words
/usr/bin/python3 "$here/abba_summary.py" . $names
