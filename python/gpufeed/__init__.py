"""gpufeed: keeps GPUs fed during training.

``gpufeed.DataLoader`` takes torch.utils.data.DataLoader's arguments (a one-line swap); workers
(processes for a Python dataset, threads for gpufeed.datasets) read samples straight into a ring
of batch slots, and batches reach torch and numpy by DLPack without a copy (on the GPU with
device="cuda"). See docs/python.md.
"""

from . import _gpufeed, datasets
from ._assemble import BatchDict, BatchList, StepInfo
from ._build_info import BuildPart, build_info
from .errors import FileError, LoaderTimeoutError, SampleError, SampleFailure, WorkerError
from .loader import DataLoader, Diagnosis, get_worker_info
from .progress import SystemMonitor, progress

__version__ = _gpufeed.__version__
set_log_level = _gpufeed.set_log_level

__all__ = [
    "BatchDict",
    "BatchList",
    "BuildPart",
    "DataLoader",
    "Diagnosis",
    "FileError",
    "LoaderTimeoutError",
    "SampleError",
    "SampleFailure",
    "StepInfo",
    "SystemMonitor",
    "WorkerError",
    "build_info",
    "datasets",
    "get_worker_info",
    "progress",
    "set_log_level",
]
