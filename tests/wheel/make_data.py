"""Writes the files tests/wheel/check_in_root.py reads: an HDF5 file with the filters users'
files carry (deflate, shuffle, szip), and folders of JPEGs and PNGs (two classes each, one flat
colour per class, so that every crop, resize and flip of them has known pixels). Runs beside the
project (h5py and Pillow), not in the root the check runs in, which has neither.

Usage: python make_data.py FOLDER
"""

import sys
from pathlib import Path

import h5py
import numpy as np
from PIL import Image

ROWS = 96
COLOURS = ((200, 40, 10), (20, 90, 230))  # class 0, class 1


def write_hdf5(path: Path) -> None:
    rows = np.arange(ROWS, dtype=np.float32)
    with h5py.File(path, "w") as f:
        # deflate with shuffle, in chunks of 16 rows: what h5py users write.
        f.create_dataset("x", data=np.stack([rows * 10 + k for k in range(8)], axis=1),
                         chunks=(16, 8), compression="gzip", shuffle=True)
        f.create_dataset("y", data=np.arange(ROWS, dtype=np.int64) * 3, chunks=(32,),
                         compression="gzip")
        # szip (libaec), the filter of many instrument and climate files.
        f.create_dataset("z", data=np.arange(ROWS, dtype=np.int32) * 7, chunks=(32,),
                         compression="szip")


def write_images(folder: Path, fmt: str, sizes: tuple[tuple[int, int], ...]) -> None:
    for label, colour in enumerate(COLOURS):
        target = folder / f"class{label}"
        target.mkdir(parents=True, exist_ok=True)
        for n, (width, height) in enumerate(sizes):
            image = Image.new("RGB", (width, height), colour)
            suffix = "jpg" if fmt == "JPEG" else "png"
            image.save(target / f"{n}.{suffix}", fmt, **({"quality": 95} if fmt == "JPEG" else {}))


def main() -> None:
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    write_hdf5(out / "points.h5")
    sizes = ((64, 48), (50, 80), (33, 33))
    write_images(out / "jpeg", "JPEG", sizes)
    write_images(out / "png", "PNG", sizes)
    print(f"make_data: {out}: points.h5 ({ROWS} rows), jpeg/ and png/ ({2 * len(sizes)} each)")


if __name__ == "__main__":
    main()
