"""The example's data: JPEGs of ten kinds of texture in ImageFolder's layout (one directory per
class), written once into a cache folder, never downloaded.

The same ten classes, sizes and look as the C++ demo's (examples/train_classifier/
synthetic_images.cpp), drawn here with numpy and PIL: a class's texture in two random colours,
under a slope of light, over coloured 1/f noise, with sensor grain. Not the same pixels as the
C++ demo's (its random numbers are OpenCV's), so the two caches are kept apart. Every image is a
pure function of its index and the seed, so a set is the same on every machine and whatever the
number of processes that write it.
"""

import math
import multiprocessing
import os
import shutil
import time
from pathlib import Path

import numpy as np
from PIL import Image

CLASS_NAMES = ["stripes-across", "stripes-down", "crosshatch", "checkerboard", "dots", "rings",
               "clouds", "mosaic", "blocks", "waves"]
DATA_SEED = 20241124
_ASPECTS = (4 / 3, 3 / 2, 1.0, 3 / 4)  # as cameras take them, landscape mostly


def default_cache_dir():
    """``$XDG_CACHE_HOME/gpufeed/train_classifier-py-v1``, else under ``~/.cache``."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "gpufeed" / "train_classifier-py-v1"


def _resize(plane, width, height, resample=Image.BICUBIC):
    """A float32 2-D array scaled to height x width."""
    return np.asarray(Image.fromarray(plane.astype(np.float32), mode="F").resize(
        (width, height), resample))


def _octave_noise(width, height, channels, finest, rng):
    """Noise with structure at every scale (the 1/f spectrum of natural images): random grids,
    each twice as fine and 0.6 times as strong as the last; [height, width, channels]."""
    total = np.zeros((height, width, channels), np.float32)
    amplitude = 1.0
    cells = 2
    while cells <= finest:
        rows = max(2, cells * height // width)
        for c in range(channels):
            coarse = rng.normal(0.0, amplitude, (rows, cells))
            total[:, :, c] += _resize(coarse, width, height)
        cells *= 2
        amplitude *= 0.6
    return total


def _smooth_step(x):
    return 1.0 / (1.0 + np.exp(-x))


def _texture(label, w, h, period, rng):
    """Class `label`'s pattern in [0, 1], h x w, with periods of `period` pixels."""
    phase, phase2 = rng.uniform(0, 2 * math.pi, 2)
    k = 2 * math.pi / period
    y, x = np.mgrid[0:h, 0:w].astype(np.float32)
    if label == 0:  # stripes across, gently bent
        return 0.5 + 0.5 * np.sin(k * y + phase + 0.6 * np.sin(k * x / 5 + phase2))
    if label == 1:  # stripes down, gently bent
        return 0.5 + 0.5 * np.sin(k * x + phase + 0.6 * np.sin(k * y / 5 + phase2))
    if label == 2:  # both diagonals (a mirror image is still one)
        a = np.sin(k * (x + y) / math.sqrt(2) + phase)
        b = np.sin(k * (x - y) / math.sqrt(2) + phase2)
        return 0.5 + 0.5 * np.maximum(a, b)
    if label == 3:  # checkerboard
        return _smooth_step(6 * np.sin(k * x / 2 + phase) * np.sin(k * y / 2 + phase2))
    if label == 4:  # dots on a lattice
        spacing = 1.5 * period
        dx = np.remainder(x + phase * spacing, spacing) - spacing / 2
        dy = np.remainder(y + phase2 * spacing, spacing) - spacing / 2
        return np.clip((0.3 * spacing - np.hypot(dx, dy)) / 1.5 + 0.5, 0, 1)
    if label == 5:  # rings around a point, on the picture or off it
        cx, cy = rng.uniform(-0.5, 1.5) * w, rng.uniform(-0.5, 1.5) * h
        return 0.5 + 0.5 * np.sin(k * np.hypot(x - cx, y - cy) + phase)
    if label == 6:  # clouds: soft blotches, no period
        return _smooth_step(2.5 * _octave_noise(w, h, 1, 16, rng)[:, :, 0])
    if label == 7:  # mosaic: a regular grid of tiles, each its own shade
        cells_x = max(2, int(w / (0.7 * period)))
        cells_y = max(2, int(h / (0.7 * period)))
        return _resize(rng.uniform(0, 1, (cells_y, cells_x)), w, h, Image.NEAREST)
    if label == 8:  # blocks: overlapping rectangles of every size
        p = np.full((h, w), rng.uniform(0, 1), np.float32)
        for _ in range(40):
            bw = int(rng.integers(w // 20, w // 3))
            bh = int(rng.integers(h // 20, h // 3))
            x0, y0 = int(rng.integers(-bw // 2, w)), int(rng.integers(-bh // 2, h))
            p[max(0, y0):max(0, y0 + bh), max(0, x0):max(0, x0 + bw)] = rng.uniform(0, 1)
        return p
    # waves: stripes across, strongly bent
    return 0.5 + 0.5 * np.sin(k * y + phase + 2.5 * np.sin(k * x / 3 + phase2))


def _random_colour(rng):
    return rng.uniform(0, 255, 3).astype(np.float32)


def draw(label, width, height, rng):
    """One picture of class `label`, uint8 [height, width, 3]: drawn at half size and scaled up
    (softly, as a lens does), grain at full size."""
    w, h = (width + 1) // 2, (height + 1) // 2
    period = rng.uniform(12, 24)
    p = _texture(label, w, h, period, rng)[:, :, None]
    dark = _random_colour(rng)
    light = _random_colour(rng)
    while np.abs(light - dark).sum() < 150:
        light = _random_colour(rng)
    noise = _octave_noise(w, h, 3, 64, rng)
    slope_x, slope_y = rng.uniform(-0.4, 0.4, 2)
    y, x = np.mgrid[0:h, 0:w].astype(np.float32)
    light_here = (1 + slope_x * (x / w - 0.5) + slope_y * (y / h - 0.5))[:, :, None]
    half = (dark * (1 - p) + light * p) * light_here + noise * 18.0
    full = np.stack([_resize(half[:, :, c], width, height) for c in range(3)], axis=2)
    full += rng.normal(0.0, 5.0, full.shape).astype(np.float32)
    return np.clip(full, 0, 255).astype(np.uint8)


def _size_of(rng, min_side, max_side):
    long_side = int(rng.integers(min_side, max_side + 1))
    aspect = _ASPECTS[int(rng.integers(0, len(_ASPECTS)))]
    if aspect >= 1:
        return long_side, int(round(long_side / aspect))
    return int(round(long_side * aspect)), long_side


def _write_one(job):
    folder, index, label, min_side, max_side = job
    rng = np.random.default_rng([DATA_SEED, index])
    width, height = _size_of(rng, min_side, max_side)
    image = draw(label, width, height, rng)
    path = Path(folder) / CLASS_NAMES[label] / f"{index:06d}.jpg"
    Image.fromarray(image).save(path, quality=90)
    return path.stat().st_size


def _write_split(folder, count, first, min_side, max_side, pool):
    for name in CLASS_NAMES:
        (folder / name).mkdir(parents=True, exist_ok=True)
    jobs = [(str(folder), first + i, i % len(CLASS_NAMES), min_side, max_side)
            for i in range(count)]
    return sum(pool.imap_unordered(_write_one, jobs, chunksize=8))


def _bytes_under(root):
    return sum(p.stat().st_size for p in Path(root).rglob("*.jpg"))


def ensure_images(cache_dir, train_images, min_side, max_side, processes=None, say=print):
    """The set for these options, written first if the cache does not hold it. Returns a dict:
    root, train, val (ImageFolder roots), train_images, val_images, bytes, write_seconds (0 when
    cached). Written into a temporary folder and renamed into place when complete, so an
    interrupted run leaves no partial set and concurrent runs do not collide."""
    val_images = max(train_images // 5, len(CLASS_NAMES))
    root = Path(cache_dir) / f"textures{train_images}-side{min_side}-{max_side}"
    result = dict(root=root, train=root / "train", val=root / "val", train_images=train_images,
                  val_images=val_images, write_seconds=0.0)
    if result["train"].is_dir() and result["val"].is_dir():
        result["bytes"] = _bytes_under(root)
        return result
    processes = processes or os.cpu_count() or 1
    say(f"writing {train_images + val_images} JPEGs ({min_side} to {max_side} pixels on the long "
        f"side, {len(CLASS_NAMES)} classes, {processes} processes) to {root} ...")
    start = time.perf_counter()
    Path(cache_dir).mkdir(parents=True, exist_ok=True)
    temporary = Path(cache_dir) / f".{root.name}.tmp-{os.getpid()}"
    shutil.rmtree(temporary, ignore_errors=True)
    # fork: the children need nothing but this module, already imported.
    with multiprocessing.get_context("fork").Pool(processes) as pool:
        written = _write_split(temporary / "train", train_images, 0, min_side, max_side, pool)
        written += _write_split(temporary / "val", val_images, train_images, min_side, max_side,
                                pool)
    try:
        temporary.rename(root)
    except OSError:
        # Another run put the same set in place first: use that one.
        shutil.rmtree(temporary, ignore_errors=True)
        if not result["train"].is_dir():
            raise
    result["bytes"] = written
    result["write_seconds"] = time.perf_counter() - start
    say(f"  written in {result['write_seconds']:.1f} s ({written / 1e6:.0f} MB)")
    return result
