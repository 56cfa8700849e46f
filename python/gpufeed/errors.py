"""gpufeed's exceptions. Bad arguments raise ValueError; these carry what went wrong in a run.

Each can be made from its message alone, as Python's own exceptions can: pickle (a process
pool, torch.multiprocessing) and code that rebuilds an exception from its type and message
(``type(e)(str(e))``) work; the attributes then are None unless pickle restores them."""

from __future__ import annotations

from collections.abc import Iterable
from typing import NamedTuple

__all__ = ["SampleError", "SampleFailure", "LoaderTimeoutError", "FileError", "WorkerError"]


class SampleFailure(NamedTuple):
    """One failed sample of a batch.

    Args:
        index: The sample's index in the dataset.
        epoch: The epoch it was read in.
        file: The file the dataset was reading, None where it named none.
        worker: The worker that read it.
        message: What the dataset said.
    """

    index: int | None  # type: ignore[assignment]  # the field shadows tuple.index
    epoch: int | None
    file: str | None
    worker: int | None
    message: str


class SampleError(RuntimeError):
    """Samples of a batch could not be read.

    ``failures`` lists every failed sample of the batch (``SampleFailure``: index, epoch, file,
    worker, message), in batch order. ``index``, ``epoch``, ``file`` (None where the dataset
    named none) and ``worker`` are the first failed sample's, and ``__cause__`` is its dataset's
    own exception, with its traceback, when the dataset is written in Python.

    Args:
        message: What went wrong, for the batch.
        index: The first failed sample's index.
        epoch: Its epoch.
        file: The file its dataset was reading, None where it named none.
        worker: The worker that read it.
        failures: Every failed sample, as (index, epoch, file, worker, message) tuples; empty:
            the one sample the other arguments describe.
    """

    def __init__(self, message: str, index: int | None = None, epoch: int | None = None,
                 file: str | None = None, worker: int | None = None,
                 failures: Iterable[tuple[int | None, int | None, str | None, int | None, str]]
                 = ()) -> None:
        super().__init__(message)
        self.index = index
        self.epoch = epoch
        self.file = file
        self.worker = worker
        self.failures: list[SampleFailure] = [SampleFailure(*f) for f in failures] or [
            SampleFailure(index, epoch, file, worker, message)]


class LoaderTimeoutError(RuntimeError, TimeoutError):
    """A batch did not arrive within ``timeout`` seconds.

    Args:
        message: What torch's timeout says, then which sample is late and why.
        index: The late sample's index.
    """

    def __init__(self, message: str, index: int | None = None) -> None:
        super().__init__(message)
        self.index = index


class FileError(OSError):
    """A file a dataset needs could not be read.

    Args:
        message: What went wrong.
        path: The file.
    """

    def __init__(self, message: str, path: str | None = None) -> None:
        super().__init__(message)
        self.path = path


class WorkerError(RuntimeError):
    """A worker cannot go on (a worker process died: killed by a signal, out of memory, or
    exited): the message names it, how it ended and the samples it held. The loader is stopped;
    make a new one."""
