"""gpufeed's bundled datasets for Python. They read, decode and augment in C++ worker threads
that never take the GIL. Keyword arguments are named as their C++ options.

- ``ImageFolder(root, height=224, width=224, resize="center_crop", resize_to=0, scale=(0.08, 1),
  ratio=(3/4, 4/3), horizontal_flip=False, jitter=None, full_decoding=False,
  check_whole_file=True)``: torchvision's folder-per-class layout; batches are
  ``[images, labels]``: uint8 [N, H, W, 3] and int64 [N]. ``full_decoding=True`` decodes every
  JPEG whole, at full size, to RGB, then crops and resamples: the reference pixels of PIL and
  torchvision, and the slowest path; by default only the part the crop needs is decoded, at
  1/2-1/8 scale where the crop is that much larger than the output and to YCbCr planes where it
  is resampled anyway: nearly the same pixels, much faster. ``check_whole_file=False`` stops
  each JPEG's decode after the last row the crop needs: faster, but damage below the crop goes
  unnoticed (docs/datasets-images.md).
- ``FileList(csv, ...)``: the images a ``path,label`` CSV lists; same options and batches.
- ``HDF5(path, fields=None, cache_chunks=8, force_h5dread=False)``: rows of HDF5 datasets;
  batches are dicts by field name.
- ``InMemory(arrays)``: numpy arrays or CPU tensors (a dict, a list or a tuple of them, rows
  along the first dimension), read without a copy of the arrays; batches have the same form.
- ``Synthetic(size, fields, seed=0, cpu_cost_us=0, sleep_us=0)``: deterministic bytes, for
  benchmarks; ``fields`` is a list of (name, dtype, shape).
"""

import numpy as np

from . import _gpufeed

__all__ = ["ImageFolder", "FileList", "HDF5", "InMemory", "Synthetic"]


def _leaves(names):
    return [("leaf", i) for i in range(len(names))]


def _dict_structure(names):
    return ("dict", dict, list(names), _leaves(names))


def ImageFolder(root, **options):  # noqa: N802 (a class to its users)
    """Images in one folder per class; see the module's documentation for the options."""
    if not _gpufeed.has_images:
        raise ValueError("gpufeed was built without the image datasets (OpenCV was not found)")
    data = _gpufeed.ImageFolder(str(root), **options)
    data._gpufeed_structure = ("list", _leaves(["image", "label"]))
    return data


def FileList(csv, **options):  # noqa: N802
    """Images listed in a CSV file of path,label rows; options as ImageFolder's."""
    if not _gpufeed.has_images:
        raise ValueError("gpufeed was built without the image datasets (OpenCV was not found)")
    data = _gpufeed.FileList(str(csv), **options)
    data._gpufeed_structure = ("list", _leaves(["image", "label"]))
    return data


def HDF5(path, fields=None, cache_chunks=8, force_h5dread=False):  # noqa: N802
    """Rows of the HDF5 datasets ``fields`` (default: every top-level dataset of the sample
    count); batches are dicts by field name."""
    if not _gpufeed.has_hdf5:
        raise ValueError("gpufeed was built without HDF5 (its C library was not found)")
    data = _gpufeed.HDF5(str(path), list(fields or []), cache_chunks, force_h5dread)
    data._gpufeed_structure = _dict_structure([name for name, _, _ in data.fields])
    return data


def _as_array(name, value):
    if hasattr(value, "detach") and hasattr(value, "numpy"):  # a torch tensor
        if value.device.type != "cpu":
            raise ValueError(f"InMemory: '{name}' is on {value.device}; give CPU tensors "
                             "(gpufeed copies batches to the GPU itself)")
        value = value.detach().numpy()
    return np.ascontiguousarray(value)


def InMemory(arrays):  # noqa: N802
    """Samples are rows of ``arrays`` (a dict, list or tuple of numpy arrays or CPU tensors of
    one length). The arrays are kept alive and not copied (unless not C-contiguous)."""
    if isinstance(arrays, dict):
        names = [str(k) for k in arrays]
        values = list(arrays.values())
        structure = ("dict", dict, list(arrays.keys()), _leaves(names))
    elif isinstance(arrays, (list, tuple)):
        names = [str(i) for i in range(len(arrays))]
        values = list(arrays)
        structure = ("list", _leaves(names))
    else:
        names, values = ["0"], [arrays]
        structure = ("leaf", 0)
    values = [_as_array(n, v) for n, v in zip(names, values)]
    if not values:
        raise ValueError("InMemory: no arrays given")
    lengths = {len(v) if v.ndim > 0 else None for v in values}
    if len(lengths) != 1 or None in lengths:
        raise ValueError("InMemory: every array needs the same first dimension (the sample "
                         f"count); got {[v.shape for v in values]}")
    data = _gpufeed.InMemory(lengths.pop())
    for name, value in zip(names, values):
        data.add(name, value)
    data._gpufeed_structure = structure
    return data


def Synthetic(size, fields, seed=0, cpu_cost_us=0.0, sleep_us=0.0):  # noqa: N802
    """Deterministic pseudo-random samples; ``fields`` is a list of (name, dtype, shape)."""
    data = _gpufeed.Synthetic(size, [(n, t, list(s)) for n, t, s in fields], seed, cpu_cost_us,
                              sleep_us)
    data._gpufeed_structure = _dict_structure([name for name, _, _ in fields])
    return data
