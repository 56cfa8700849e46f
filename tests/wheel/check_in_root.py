"""The check scripts/wheel-check runs in a minimal Debian root that has Python, pip, numpy and
the gpufeed wheel, and none of gpufeed's C and C++ libraries: it fails when the wheel lacks one.

Reads, each checked value by value: a Python dataset on worker processes, an HDF5 file
(deflate, shuffle, szip), a folder of JPEGs and one of PNGs with every augmentation; then prints
the versions and parts as a user sees them (``python -m gpufeed``).

Usage: python check_in_root.py FOLDER      (FOLDER: what make_data.py wrote)
"""

import os
import platform
import sys
from pathlib import Path

import numpy as np

import gpufeed
from gpufeed import datasets

ROWS = 96
COLOURS = ((200, 40, 10), (20, 90, 230))


class Squares:
    """A map-style dataset of the user's own: each sample says which process read it."""

    def __len__(self) -> int:
        return 64

    def __getitem__(self, index: int) -> dict[str, object]:
        return {"square": np.full(3, index * index, dtype=np.int64), "pid": os.getpid(),
                "index": index}


def check(condition: bool, what: str) -> None:
    if not condition:
        raise SystemExit(f"check_in_root: FAILED: {what}")


def python_dataset() -> None:
    loader = gpufeed.DataLoader(Squares(), batch_size=8, shuffle=True, num_workers=2)
    seen: list[int] = []
    pids: set[int] = set()
    for batch in loader:
        indices = np.asarray(batch["index"]).tolist()
        squares = np.asarray(batch["square"])
        check(squares.shape == (len(indices), 3), f"square's shape {squares.shape}")
        check(all((squares[k] == i * i).all() for k, i in enumerate(indices)), "square values")
        seen += indices
        pids.update(np.asarray(batch["pid"]).tolist())
    check(sorted(seen) == list(range(64)), f"the epoch's samples: {sorted(seen)}")
    check(os.getpid() not in pids and len(pids) >= 1, f"read in worker processes: {pids}")
    print(f"check_in_root: Python dataset: 64 samples on worker processes {sorted(pids)}")


def hdf5(folder: Path) -> None:
    dataset = datasets.HDF5(folder / "points.h5", ["x", "y", "z"])
    rows: list[int] = []
    for batch in gpufeed.DataLoader(dataset, batch_size=10, num_workers=2):
        x, y, z = np.asarray(batch["x"]), np.asarray(batch["y"]), np.asarray(batch["z"])
        for k in range(len(y)):
            row = int(y[k]) // 3
            check(int(y[k]) == row * 3, f"y[{row}]")
            check((x[k] == row * 10 + np.arange(8, dtype=np.float32)).all(), f"x[{row}]")
            check(int(z[k]) == row * 7, f"z[{row}] (szip)")
            rows.append(row)
    check(sorted(rows) == list(range(ROWS)), "every row of the HDF5 file once")
    print(f"check_in_root: HDF5: {ROWS} rows (deflate, shuffle, szip)")


def images(folder: Path, kind: str, tolerance: int) -> None:
    # Every augmentation: random resized crop, flip, colour jitter with hue; then a centre crop
    # without jitter, whose flat colours are known.
    augmented = datasets.ImageFolder(folder / kind, size=24, resize="random_resized_crop",
                                     horizontal_flip=True,
                                     jitter={"brightness": 0.4, "contrast": 0.4,
                                             "saturation": 0.4, "hue": 0.1})
    count = 0
    for batch in gpufeed.DataLoader(augmented, batch_size=4, shuffle=True, num_workers=2):
        image, label = (np.asarray(part) for part in batch)  # torchvision's (image, label)
        check(image.shape[1:] == (24, 24, 3) and image.dtype == np.uint8,
              f"{kind} image {image.shape} {image.dtype}")
        check(set(label.tolist()) <= {0, 1}, f"{kind} labels {label}")
        count += len(label)
    check(count == 6, f"{kind}: {count} images, not 6")
    plain = datasets.ImageFolder(folder / kind, size=(16, 20))
    for batch in gpufeed.DataLoader(plain, batch_size=6):
        image, label = (np.asarray(part) for part in batch)
        check(image.shape[1:] == (16, 20, 3), f"{kind} image {image.shape}")
        for k in range(len(label)):
            colour = np.array(COLOURS[int(label[k])])
            error = np.abs(image[k].astype(int) - colour).max()
            check(error <= tolerance, f"{kind} image {k}: off its colour by {error}")
    print(f"check_in_root: {kind}: 6 images, augmented and plain")


def main() -> None:
    folder = Path(sys.argv[1])
    python_dataset()
    hdf5(folder)
    images(folder, "jpeg", tolerance=4)  # JPEG's colour conversion rounds
    images(folder, "png", tolerance=0)
    info = gpufeed.build_info()
    check(info["hdf5"].built and info["images"].built and info["cuda"].built,
          f"the wheel lacks a part: {info}")
    print(f"check_in_root: glibc {platform.libc_ver()[1]}; python -m gpufeed:")
    # What a user runs to see the versions and parts: the module entry point itself.
    sys.stdout.flush()
    if os.spawnv(os.P_WAIT, sys.executable, [sys.executable, "-m", "gpufeed"]) != 0:
        raise SystemExit("check_in_root: FAILED: python -m gpufeed")
    print("check_in_root: passed")


if __name__ == "__main__":
    main()
