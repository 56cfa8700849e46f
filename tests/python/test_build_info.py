"""gpufeed.build_info() and ``python -m gpufeed``: what this build has, and why a part is not."""

import ctypes
import os
import subprocess
import sys

import gpufeed
from gpufeed import _gpufeed

PARTS = ("hdf5", "images", "opencv", "cuda")


def test_every_part_is_reported_once_in_order():
    info = gpufeed.build_info()
    assert tuple(info) == PARTS


def test_what_a_part_says_agrees_with_what_the_module_has():
    info = gpufeed.build_info()
    assert info["hdf5"].built == _gpufeed.has_hdf5
    assert info["images"].built == _gpufeed.has_images
    assert info["cuda"].built == _gpufeed.has_cuda
    for name, part in info.items():
        assert part.detail, f"{name} says nothing"
        if not part.built:
            # A part left out says why: turned off, not found, or left out of the wheel.
            assert any(why in part.detail for why in ("turned off", "not found", "left out")), (
                name, part.detail)
    if info["hdf5"].built:
        assert info["hdf5"].detail.startswith("HDF5 1.")
    if info["images"].built:
        assert "libpng 1." in info["images"].detail and "zlib " in info["images"].detail


def test_the_cuda_part_says_why_it_is_off_on_a_machine_without_devices():
    info = gpufeed.build_info()
    devices, why = _gpufeed.cuda_devices()
    if info["cuda"].built and devices == 0:
        assert why and why in info["cuda"].detail
        try:
            ctypes.CDLL("libcuda.so.1")
        except OSError:
            # Without NVIDIA's driver, the reason names it (not the runtime's "insufficient").
            assert "no NVIDIA driver is installed" in why, why
    elif info["cuda"].built:
        assert f"{devices} device" in info["cuda"].detail


def test_python_m_gpufeed_prints_the_versions_and_parts():
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    out = subprocess.run([sys.executable, "-m", "gpufeed"], capture_output=True, text=True,
                         env=env, timeout=120, check=True).stdout
    lines = out.splitlines()
    assert lines[0].startswith(f"gpufeed {gpufeed.__version__} on Python "), out
    assert "numpy " in lines[0], out
    for name, part in gpufeed.build_info().items():
        expected = f"  {name:<7} {'yes' if part.built else 'no ':<4}"
        assert any(line.startswith(expected) for line in lines[1:]), (name, out)
