"""gpufeed's bundled datasets for Python. They read, decode and augment in C++ worker threads
that never take the GIL; ``gpufeed.DataLoader`` reads them as they are.

- ``ImageFolder``: torchvision's folder-per-class layout; batches are ``[images, labels]``:
  uint8 [N, H, W, 3] and int64 [N].
- ``FileList``: the images a ``path,label`` CSV lists; same options and batches.
- ``HDF5``: rows of HDF5 datasets; batches are dicts by field name.
- ``InMemory``: numpy arrays or CPU tensors (a dict, a list or a tuple of them, rows along the
  first dimension), read without a copy of the arrays; batches have the same form.
- ``Synthetic``: deterministic bytes, for benchmarks.

Each is a class (``isinstance(data, gpufeed.datasets.ImageFolder)``) and a
``gpufeed._gpufeed.Dataset``: ``len(data)`` is its sample count and ``data.fields`` its
sample's fields, ``(name, dtype, shape)`` each. Keyword arguments are named as their C++
options.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from . import _gpufeed

if TYPE_CHECKING:
    import numpy.typing as npt

__all__ = ["ImageFolder", "FileList", "HDF5", "InMemory", "Synthetic"]

# The C++ classes these derive from; a part built without its libraries (libjpeg and libpng, HDF5)
# has none, and its classes then raise ValueError when made.
if TYPE_CHECKING or _gpufeed.has_images:
    _ImageFolderBase = _gpufeed.ImageFolder
    _FileListBase = _gpufeed.FileList
else:  # pragma: no cover - exercised where libjpeg or libpng is absent
    _ImageFolderBase = _FileListBase = _gpufeed.Dataset
if TYPE_CHECKING or _gpufeed.has_hdf5:
    _HDF5Base = _gpufeed.HDF5
else:  # pragma: no cover - exercised where HDF5 is absent
    _HDF5Base = _gpufeed.Dataset

# A sample's structure, as gpufeed.DataLoader rebuilds batches in it (_assemble.py).
Structure = tuple[Any, ...]

ResizeMode = Literal["center_crop", "random_resized_crop"]


def _leaves(names: Sequence[str]) -> list[Structure]:
    return [("leaf", i) for i in range(len(names))]


def _dict_structure(names: Sequence[str]) -> Structure:
    return ("dict", dict, list(names), _leaves(names))


def _without_images() -> None:
    if not _gpufeed.has_images:
        raise ValueError(
            "gpufeed was built without the image datasets (libjpeg or libpng was not found)"
        )


class _ImageOptions:
    """The options ImageFolder and FileList share, as attributes."""

    height: int
    width: int
    resize: ResizeMode
    resize_to: int
    scale: tuple[float, float]
    ratio: tuple[float, float]
    horizontal_flip: bool
    jitter: dict[str, float] | None
    full_decoding: bool
    check_whole_file: bool

    def _image_options(self, *, height: int, width: int, size: int | Sequence[int] | None,
                       resize: ResizeMode, resize_to: int, scale: Sequence[float],
                       ratio: Sequence[float], horizontal_flip: bool,
                       jitter: Mapping[str, float] | None, full_decoding: bool,
                       check_whole_file: bool) -> dict[str, Any]:
        """The C++ dataset's keyword arguments, ``size`` resolved into height and width."""
        if size is not None:  # torchvision's habit: one int, or (height, width)
            if isinstance(size, int):
                height = width = size
            elif len(size) == 2:
                height, width = size
            else:
                raise ValueError("size: expected an int or (height, width)")
        options: dict[str, Any] = dict(
            height=height, width=width, resize=resize, resize_to=resize_to, scale=tuple(scale),
            ratio=tuple(ratio), horizontal_flip=horizontal_flip,
            jitter=None if jitter is None else dict(jitter), full_decoding=full_decoding,
            check_whole_file=check_whole_file)
        return options

    def _open(self, path: str, arguments: Mapping[str, Any]) -> None:
        """Makes the C++ dataset over `path` from a subclass's ``__init__`` arguments (its
        ``locals()``: explicit parameters, so that type checkers see each option), keeps the
        options as attributes and sets the samples' structure."""
        _without_images()
        options = self._image_options(**{name: arguments[name] for name in _IMAGE_OPTIONS})
        super().__init__(path, **options)  # type: ignore[call-arg]  # the C++ base, next in line
        for name, value in options.items():
            setattr(self, name, value)
        self._gpufeed_structure: Structure = ("list", _leaves(["image", "label"]))


# The keyword arguments ImageFolder and FileList share (_ImageOptions._image_options').
_IMAGE_OPTIONS = ("height", "width", "size", "resize", "resize_to", "scale", "ratio",
                  "horizontal_flip", "jitter", "full_decoding", "check_whole_file")


class ImageFolder(_ImageOptions, _ImageFolderBase):
    """Images in one folder per class, as torchvision's ``ImageFolder`` finds them; samples are
    ``[image, label]``: uint8 [height, width, 3] (RGB) and int64.

    Args:
        root: The folder that holds one folder per class (classes in name order: label 0 is the
            first).
        height: The output's height in pixels.
        width: The output's width in pixels.
        size: torchvision's habit: an int for both, or (height, width); overrides ``height``
            and ``width``.
        resize: ``"center_crop"`` (scale the shorter side to ``resize_to``, crop the centre) or
            ``"random_resized_crop"`` (torchvision's RandomResizedCrop, from ``scale`` and
            ``ratio``).
        resize_to: center_crop: the shorter side after scaling; 0 means
            round(min(height, width) * 256 / 224) (256 for 224).
        scale: random_resized_crop: the range of the crop's area, as a fraction of the image's.
        ratio: random_resized_crop: the range of the crop's aspect ratio (width / height).
        horizontal_flip: Mirror left-right with probability 0.5.
        jitter: Colour jitter: ``{"brightness": b, "contrast": c, "saturation": s, "hue": h}``
            (any of them), as torchvision's ColorJitter; None: off.
        full_decoding: Decode every JPEG whole, at full size, to RGB, then crop and resample:
            the reference pixels of PIL and torchvision, and the slowest path. False (the
            default): only the part the crop needs is decoded, at 1/2-1/8 scale where the crop
            is that much larger than the output and to YCbCr planes where it is resampled
            anyway: nearly the same pixels, much faster.
        check_whole_file: False stops each JPEG's decode after the last row the crop needs:
            faster, but damage below the crop goes unnoticed (docs/datasets-images.md).

    Raises:
        ValueError: gpufeed was built without the image datasets, or an option is out of range.
        gpufeed.FileError: ``root`` cannot be read.
    """

    root: str

    def __init__(self, root: str | os.PathLike[str], *, height: int = 224, width: int = 224,
                 size: int | Sequence[int] | None = None, resize: ResizeMode = "center_crop",
                 resize_to: int = 0, scale: Sequence[float] = (0.08, 1.0),
                 ratio: Sequence[float] = (3 / 4, 4 / 3), horizontal_flip: bool = False,
                 jitter: Mapping[str, float] | None = None, full_decoding: bool = False,
                 check_whole_file: bool = True) -> None:
        self._open(os.fspath(root), locals())
        self.root = os.fspath(root)


class FileList(_ImageOptions, _FileListBase):
    """The images a CSV file lists, one ``path,label`` row each (a relative path is relative to
    the CSV's folder); samples as ImageFolder's.

    Args:
        csv: The CSV file.
        height: The output's height in pixels.
        width: The output's width in pixels.
        size: An int for both, or (height, width); overrides ``height`` and ``width``.
        resize: ``"center_crop"`` or ``"random_resized_crop"``, as ImageFolder's.
        resize_to: center_crop: the shorter side after scaling (0: 256/224 of the output's).
        scale: random_resized_crop: the range of the crop's area, as a fraction of the image's.
        ratio: random_resized_crop: the range of the crop's aspect ratio (width / height).
        horizontal_flip: Mirror left-right with probability 0.5.
        jitter: Colour jitter, as ImageFolder's; None: off.
        full_decoding: Decode every JPEG whole (the reference pixels, slowest), as
            ImageFolder's.
        check_whole_file: False stops each JPEG's decode after the last row the crop needs.

    Raises:
        ValueError: gpufeed was built without the image datasets, or an option is out of range.
        gpufeed.FileError: ``csv`` cannot be read.
    """

    csv: str

    def __init__(self, csv: str | os.PathLike[str], *, height: int = 224, width: int = 224,
                 size: int | Sequence[int] | None = None, resize: ResizeMode = "center_crop",
                 resize_to: int = 0, scale: Sequence[float] = (0.08, 1.0),
                 ratio: Sequence[float] = (3 / 4, 4 / 3), horizontal_flip: bool = False,
                 jitter: Mapping[str, float] | None = None, full_decoding: bool = False,
                 check_whole_file: bool = True) -> None:
        self._open(os.fspath(csv), locals())
        self.csv = os.fspath(csv)


class HDF5(_HDF5Base):
    """Rows of HDF5 datasets; batches are dicts by field name. ``path`` and ``chunk_rows`` (the
    rows of the fields' storage chunk) are attributes too.

    Args:
        path: The HDF5 file.
        fields: The HDF5 datasets that become the sample's fields, in this order (paths such as
            ``"images"`` or ``"/group/labels"``; a field is named after its path without the
            leading ``/``). None: every top-level dataset whose first dimension is the sample
            count, in name order.
        cache_chunks: Decompressed chunks kept per field, shared by all workers; at least
            the loader's ``chunk_window``, better twice that.
        force_h5dread: Read every field through ``H5Dread`` (serialized on one lock) instead of
            ``pread``: for comparisons and as an escape hatch.

    Raises:
        ValueError: gpufeed was built without HDF5, or the file's datasets do not fit.
        gpufeed.FileError: ``path`` cannot be read.
    """

    cache_chunks: int
    force_h5dread: bool

    def __init__(self, path: str | os.PathLike[str], fields: Sequence[str] | None = None,
                 cache_chunks: int = 8, force_h5dread: bool = False) -> None:
        if not _gpufeed.has_hdf5:
            raise ValueError("gpufeed was built without HDF5 (its C library was not found)")
        super().__init__(os.fspath(path), list(fields or []), cache_chunks, force_h5dread)
        self.cache_chunks = cache_chunks
        self.force_h5dread = force_h5dread
        self._gpufeed_structure: Structure = _dict_structure(
            [name for name, _, _ in self.fields])


def _as_array(name: str, value: Any) -> np.ndarray:
    if hasattr(value, "detach") and hasattr(value, "numpy"):  # a torch tensor
        if value.device.type != "cpu":
            raise ValueError(f"InMemory: '{name}' is on {value.device}; give CPU tensors "
                             "(gpufeed copies batches to the GPU itself)")
        value = value.detach().numpy()
    return np.ascontiguousarray(value)


class InMemory(_gpufeed.InMemory):
    """Samples are rows of arrays held in memory; batches have the arrays' form (a dict of
    them, a list, or one). The arrays are kept alive and not copied (unless not C-contiguous).

    Args:
        arrays: A dict, list or tuple of numpy arrays or CPU tensors, or one of them; each has
            the sample count as its first dimension.

    Raises:
        ValueError: No arrays, arrays of different lengths, a tensor on a GPU, or a dtype
            gpufeed cannot batch.
    """

    def __init__(self, arrays: (dict[Any, npt.ArrayLike] | list[npt.ArrayLike]
                                | tuple[npt.ArrayLike, ...] | npt.ArrayLike)) -> None:
        structure: Structure
        if isinstance(arrays, dict):
            names = [str(k) for k in arrays]
            given = list(arrays.values())
            structure = ("dict", dict, list(arrays.keys()), _leaves(names))
        elif isinstance(arrays, (list, tuple)):
            names = [str(i) for i in range(len(arrays))]
            given = list(arrays)
            structure = ("list", _leaves(names))
        else:
            names, given = ["0"], [arrays]
            structure = ("leaf", 0)
        values = [_as_array(n, v) for n, v in zip(names, given)]
        if not values:
            raise ValueError("InMemory: no arrays given")
        lengths = {len(v) if v.ndim > 0 else None for v in values}
        length = lengths.pop() if len(lengths) == 1 else None
        if length is None:
            raise ValueError("InMemory: every array needs the same first dimension (the sample "
                             f"count); got {[v.shape for v in values]}")
        super().__init__(length)
        for name, value in zip(names, values):
            self.add(name, value)
        self._gpufeed_structure: Structure = structure


class Synthetic(_gpufeed.Synthetic):
    """Deterministic pseudo-random samples, for benchmarks: sample i's fields are bytes derived
    from (seed, i, field); integer fields get uniform bits, floating fields values in [0, 1).

    Args:
        size: The sample count.
        fields: The sample's fields: (name, dtype, shape) each, dtype a name such as
            ``"float32"``.
        seed: Seeds the content.
        cpu_cost_us: CPU time each read burns (busy), in microseconds: stands in for decoding.
        sleep_us: Time each read sleeps, in microseconds: stands in for storage latency.
    """

    seed: int
    cpu_cost_us: float
    sleep_us: float

    def __init__(self, size: int, fields: Sequence[tuple[str, str, Sequence[int]]],
                 seed: int = 0, cpu_cost_us: float = 0.0, sleep_us: float = 0.0) -> None:
        super().__init__(size, [(n, t, list(s)) for n, t, s in fields], seed, cpu_cost_us,
                         sleep_us)
        self.seed = seed
        self.cpu_cost_us = cpu_cost_us
        self.sleep_us = sleep_us
        self._gpufeed_structure: Structure = _dict_structure([name for name, _, _ in fields])
