"""Builds the gpufeed Python package with scikit-build 0.16 (Debian 12's python3-skbuild).

Why scikit-build: it is the CMake-driven backend Debian packages (scikit-build-core and
meson-python's CMake support are not there, and the library is a CMake project), so
`pip install --no-build-isolation .` works offline. It configures the C++ library with only
the Python part (no tests, benchmarks, examples or libtorch adapter), builds the extension
gpufeed._gpufeed with the library linked in statically, and installs the `python` component.
Pass more CMake options with SKBUILD_CONFIGURE_OPTIONS or `-C--build-option=...`, e.g.
-DGPUFEED_WITH_CUDA=OFF.
"""

import re
import sys
from pathlib import Path

from skbuild import setup

root = Path(__file__).resolve().parent
version = re.search(r"project\(gpufeed VERSION ([0-9.]+)", (root / "CMakeLists.txt").read_text())[1]

setup(
    name="gpufeed",
    version=version,
    description="Keeps GPUs fed during training: a drop-in for torch.utils.data.DataLoader",
    packages=["gpufeed"],
    package_dir={"": "python"},
    python_requires=">=3.9",
    install_requires=["numpy"],
    cmake_install_target="install-python",
    cmake_args=[
        f"-DPython3_EXECUTABLE={sys.executable}",
        "-DGPUFEED_WITH_PYTHON=ON",
        "-DGPUFEED_WITH_TORCH=OFF",
        "-DGPUFEED_BUILD_TESTS=OFF",
        "-DGPUFEED_BUILD_BENCHMARKS=OFF",
        "-DGPUFEED_BUILD_EXAMPLES=OFF",
        "-DCMAKE_CXX_FLAGS_RELEASE=-O2 -DNDEBUG",
    ],
)
