#!/usr/bin/env bash
# The Python benchmarks on a GPU machine in about 4 minutes, for scripts/device-check (which runs
# it when it exists, with PYTHONPATH on its build's Python package and OUT its results folder):
# bench_workers.py (gpufeed's worker processes against torch's DataLoader: a training loop, the
# loader alone, the fed step) and bench_peers.py (against torchdata and SPDL, each where it
# imports), --device cuda with 8 workers, shortened: 3 repeats, half the generated inputs, no
# memory runs. Each dataset is its own run under its own time limit, so that a slow or hung one
# costs its own result only: a step ends by its share of the budget, and what a step leaves
# unused goes to the next. Cases whose modules (torchvision, h5py) or gpufeed datasets (built
# without HDF5 or the image datasets) are missing are skipped, saying so.
#
#   PYTHONPATH=build-gpu/python OUT=build-gpu/out benchmarks/python/gpu_check.sh
#
# Environment: OUT (default build-gpu/out; the JSON go to $OUT/python-gpu/<step>/),
# PYTHON (python3), GPU_CHECK_SECONDS (the whole budget, 230), GPU_CHECK_DEVICE (cuda; cpu tries
# the script where there is no GPU), GPU_CHECK_WORKERS (8), GPU_CHECK_REPEATS (3),
# GPU_CHECK_DATA (the generated inputs, build-gpu/bench-python-data).
# Exit status: 0 when every step that ran wrote its JSON; the last line sums up.
set -uo pipefail
cd "$(dirname "$0")/../.."

out=${OUT:-build-gpu/out}/python-gpu
python=${PYTHON:-python3}
budget=${GPU_CHECK_SECONDS:-230}
device=${GPU_CHECK_DEVICE:-cuda}
workers=${GPU_CHECK_WORKERS:-8}
repeats=${GPU_CHECK_REPEATS:-3}
data=${GPU_CHECK_DATA:-build-gpu/bench-python-data}
mkdir -p "$out" "$data"
export OMP_NUM_THREADS=1 GPUFEED_LOG_LEVEL=warn
# Half the default inputs: making them is single-threaded (PIL, h5py) and counts against the
# budget; the loaders run on across epochs.
sizes=(--images 512 --h5-samples 8192 --data "$data")
common=(--repeats "$repeats" --device "$device" --workers "$workers" "${sizes[@]}")

started=$SECONDS
planned=0
ran=0
wrote=0
failed=0
notes=()
# step SHARE NAME JSON COMMAND...: runs COMMAND until SHARE more seconds of the budget have
# been planned (the step's deadline, from the script's start); a step whose deadline has passed
# does not start. The step is done when it wrote JSON (- for none: when it exits 0), even if
# the limit then cut its teardown. `timeout` puts the command in a process group of its own,
# which a limit on this script (device-check's) would not reach: the trap hands it on.
child=
trap '[[ -n $child ]] && kill -TERM "$child" 2>/dev/null; exit 143' TERM INT
step() {
  local share=$1 name=$2 json=$3
  shift 3
  planned=$((planned + share * budget / 230))
  local limit=$((planned - (SECONDS - started)))
  if ((limit < 10)); then
    notes+=("$name: not run, the budget was spent")
    echo "== $name: not run ($((SECONDS - started)) s of $budget spent)"
    return
  fi
  echo "== $name (limit ${limit} s, at $((SECONDS - started)) s)"
  ran=$((ran + 1))
  [[ $json == - ]] || rm -f "$json"
  timeout --kill-after=5 "$limit" "$@" &
  child=$!
  wait "$child"
  local rc=$?
  child=
  local why="exit $rc$( ((rc == 124 || rc == 137)) && echo ' (time limit)')"
  if ((rc == 0)) || [[ $json != - && -s $json ]]; then
    wrote=$((wrote + 1))
    ((rc == 0)) || notes+=("$name: wrote its JSON, then $why")
  else
    failed=$((failed + 1))
    notes+=("$name: $why")
  fi
}

echo "== probe"
probe=$("$python" - "$device" <<'EOF'
import importlib, sys


def ok(module):  # imported, not only found: a build for another torch fails on import
    try:
        importlib.import_module(module)
        return True
    except Exception:
        return False


import torch, gpufeed
from gpufeed import _gpufeed
if sys.argv[1] == "cuda" and not torch.cuda.is_available():
    sys.exit("torch sees no CUDA device")
gpu = torch.cuda.get_device_name() if torch.cuda.is_available() else "none"
print(f"python {sys.version.split()[0]}, torch {torch.__version__}, gpu {gpu}", file=sys.stderr)
print(" ".join(name for name, here in [
    ("torchvision", ok("torchvision") and ok("PIL")), ("h5py", ok("h5py")),
    ("torchdata", ok("torchdata.stateful_dataloader")), ("nodes", ok("torchdata.nodes")),
    ("spdl", ok("spdl.dataloader")), ("gpufeed_hdf5", _gpufeed.has_hdf5),
    ("gpufeed_images", _gpufeed.has_images)] if here))
EOF
) || { echo "gpu_check: not run: the probe failed (above)"; exit 1; }
has() { [[ " $probe " == *" $1 "* ]]; }
echo "available: ${probe:-none of torchvision, h5py, torchdata, spdl}"

# The inputs, made once before the timed steps (each bench would make them in its first case).
need=()
has torchvision && need+=(images)
has h5py && need+=(h5)
if ((${#need[@]})); then
  step 35 "inputs (${need[*]})" - "$python" -c '
import os, sys
sys.path.insert(0, "benchmarks/python")
import workloads
data, need = sys.argv[1], sys.argv[2:]
if "images" in need:
    workloads.make_images(os.path.join(data, "images"), 512, 8)
if "h5" in need:
    workloads.make_h5_files(os.path.join(data, "hdf5-8192"), 8192)
' "$data" "${need[@]}"
fi

peers=torch
for peer in torchdata nodes spdl; do
  if has "$peer"; then peers+=",$peer"; else notes+=("peers: $peer skipped, it does not import"); fi
done
with_peers=1
if [[ $peers == torch ]]; then
  with_peers=0
  notes+=("peers: not run, neither torchdata nor spdl imports")
fi
hdf5=0
has h5py && has gpufeed_hdf5 && hdf5=1
has torchvision || notes+=("folder, images: skipped, no torchvision or PIL")
has h5py || notes+=("h5py, hdf5 cases: skipped, no h5py")
has gpufeed_hdf5 || notes+=("hdf5 cases: skipped, gpufeed was built without HDF5")
has gpufeed_images || notes+=("images: skipped, gpufeed was built without the image datasets")
# bench_workers SHARE DATASET MODES, bench_peers SHARE CASES: one step of each benchmark, its
# JSON in $out/workers-DATASET/ or $out/peers-CASES/.
bench_workers() {
  step "$1" "workers $2" "$out/workers-$2/workers.json" "$python" \
    benchmarks/python/bench_workers.py "${common[@]}" --step-workers "$workers" \
    --datasets "$2" --modes "$3" --out "$out/workers-$2"
}
bench_peers() {
  step "$1" "peers ${2//,/ }" "$out/peers-${2//,/-}/peers.json" "$python" \
    benchmarks/python/bench_peers.py "${common[@]}" --peers "$peers" --cases "$2" \
    --out "$out/peers-${2//,/-}"
}

# First the decode-bound cases a 2-core machine could not settle (ImageFolder against torch and
# the best peer, chunked HDF5 against SPDL), then the rest: under device-check's own limit on
# this script the first ones finish.
if has torchvision; then
  bench_workers 40 folder train,loader
  ((with_peers)) && bench_peers 30 folder
fi
((with_peers && hdf5)) && bench_peers 25 hdf5_chunked
bench_workers 30 crop train,loader,step
has h5py && bench_workers 30 h5py train,loader,step
if ((with_peers)); then
  rest=crop
  ((hdf5)) && rest+=,hdf5_chunk_window
  has torchvision && has gpufeed_images && rest+=,images
  bench_peers 40 "$rest"
fi

echo
((${#notes[@]} == 0)) || printf '  %s\n' "${notes[@]}"
echo "python GPU benchmarks: $wrote of $ran steps done in $((SECONDS - started)) s" \
  "($device, $workers workers), JSON in $out"
((failed == 0))
