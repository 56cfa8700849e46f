"""What this build of gpufeed has: ``build_info()`` and ``python -m gpufeed``."""

from __future__ import annotations

import platform
import sys
from typing import NamedTuple

from . import _gpufeed

__all__ = ["BuildPart", "build_info", "describe_build"]


class BuildPart(NamedTuple):
    """One optional part of gpufeed: whether this build has it, and ``detail``: the libraries it
    runs with (for ``"cuda"``, also whether a driver and devices are there), or why it is left
    out and what to do about it."""

    built: bool
    detail: str


def build_info() -> dict[str, BuildPart]:
    """The optional parts of this build of gpufeed by name: ``"hdf5"`` (``datasets.HDF5``),
    ``"images"`` (``datasets.ImageFolder`` and ``FileList``: JPEG and PNG), ``"opencv"`` (the
    image formats only OpenCV reads) and ``"cuda"`` (``device="cuda"``)."""
    return {name: BuildPart(built, detail) for name, built, detail in _gpufeed.build_parts()}


def describe_build() -> str:
    """The lines ``python -m gpufeed`` prints: the versions, then each part."""
    import numpy

    try:
        import torch

        torch_version = str(torch.__version__)
    except ImportError:
        torch_version = "not installed (batches are numpy arrays)"
    lines = [f"gpufeed {_gpufeed.__version__} on Python {platform.python_version()} "
             f"({sys.platform}, {platform.machine()}), numpy {numpy.__version__}, "
             f"torch {torch_version}"]
    for name, part in build_info().items():
        lines.append(f"  {name:<7} {'yes' if part.built else 'no ':<4}{part.detail}")
    return "\n".join(lines)
