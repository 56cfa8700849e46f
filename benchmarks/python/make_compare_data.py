#!/usr/bin/env python3
"""Writes the inputs of `gpufeed-bench compare` on HDF5 and images (never committed):

  OUT/contiguous.h5   images uint8 [N, 64, 64, 3] and labels int64 [N], contiguous
  OUT/chunked.h5      the same, chunked (CHUNK rows per chunk) and gzip-compressed
  OUT/images/<class>/<i>.jpg   a few thousand small JPEGs over 10 classes

Images are smooth gradients plus a class pattern and a little noise, so that gzip and JPEG
compress them about as they compress photographs (random bytes would not compress at all).

Usage: /usr/bin/python3 benchmarks/python/make_compare_data.py [--out /tmp/gpufeed-compare]
       [--samples 20000] [--chunk 64] [--images 2000] [--image-side 256]
"""

import argparse
import os

import numpy as np


def smooth_images(rng, count, side, labels):
    y, x = np.mgrid[0:side, 0:side].astype(np.float32) / side
    out = np.empty((count, side, side, 3), dtype=np.uint8)
    for i in range(count):
        a, b, c = rng.random(3)
        k = labels[i] + 1
        base = np.stack([a * x + b * y, np.sin(k * 3.1 * x) * 0.5 + 0.5, c * (1 - y)], axis=-1)
        noise = rng.normal(0.0, 0.015, base.shape).astype(np.float32)
        out[i] = np.clip((base + noise) * 255.0, 0, 255).astype(np.uint8)
    return out


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--out", default="/tmp/gpufeed-compare")
    p.add_argument("--samples", type=int, default=20000)
    p.add_argument("--side", type=int, default=64)
    p.add_argument("--chunk", type=int, default=64)
    p.add_argument("--gzip-level", type=int, default=4)
    p.add_argument("--images", type=int, default=2000)
    p.add_argument("--image-side", type=int, default=256)
    p.add_argument("--classes", type=int, default=10)
    a = p.parse_args()
    rng = np.random.default_rng(7)
    os.makedirs(a.out, exist_ok=True)

    import h5py

    labels = rng.integers(0, a.classes, a.samples).astype(np.int64)
    images = smooth_images(rng, a.samples, a.side, labels)
    with h5py.File(os.path.join(a.out, "contiguous.h5"), "w") as f:
        f.create_dataset("images", data=images)
        f.create_dataset("labels", data=labels)
    with h5py.File(os.path.join(a.out, "chunked.h5"), "w") as f:
        f.create_dataset("images", data=images, chunks=(a.chunk, a.side, a.side, 3),
                         compression="gzip", compression_opts=a.gzip_level)
        f.create_dataset("labels", data=labels, chunks=(a.chunk,), compression="gzip",
                         compression_opts=a.gzip_level)

    from PIL import Image

    image_labels = np.arange(a.images) % a.classes
    for c in range(a.classes):
        os.makedirs(os.path.join(a.out, "images", f"class{c:02d}"), exist_ok=True)
    for start in range(0, a.images, 100):
        batch = smooth_images(rng, min(100, a.images - start), a.image_side,
                              image_labels[start:start + 100])
        for j, pixels in enumerate(batch):
            i = start + j
            path = os.path.join(a.out, "images", f"class{image_labels[i]:02d}", f"{i:05d}.jpg")
            Image.fromarray(pixels).save(path, quality=90)
    print(f"wrote {a.out}: contiguous.h5, chunked.h5 ({a.samples} x {a.side}x{a.side}x3), "
          f"images/ ({a.images} JPEGs of {a.image_side}x{a.image_side})")


if __name__ == "__main__":
    main()
