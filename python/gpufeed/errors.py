"""gpufeed's exceptions. Bad arguments raise ValueError; these carry what went wrong in a run.

Each can be made from its message alone, as Python's own exceptions can: pickle (a process
pool, torch.multiprocessing) and code that rebuilds an exception from its type and message
(``type(e)(str(e))``) work; the attributes then are None unless pickle restores them."""

from collections import namedtuple

__all__ = ["SampleError", "SampleFailure", "LoaderTimeoutError", "FileError", "WorkerError"]


SampleFailure = namedtuple("SampleFailure", ["index", "epoch", "file", "worker", "message"])
SampleFailure.__doc__ = "One failed sample of a batch (``file``: None where none was named)."


class SampleError(RuntimeError):
    """Samples of a batch could not be read.

    ``failures`` lists every failed sample of the batch (``SampleFailure``: index, epoch, file,
    worker, message), in batch order. ``index``, ``epoch``, ``file`` (None where the dataset
    named none) and ``worker`` are the first failed sample's, and ``__cause__`` is its dataset's
    own exception, with its traceback, when the dataset is written in Python.
    """

    def __init__(self, message, index=None, epoch=None, file=None, worker=None, failures=()):
        super().__init__(message)
        self.index = index
        self.epoch = epoch
        self.file = file
        self.worker = worker
        self.failures = [SampleFailure(*f) for f in failures] or [
            SampleFailure(index, epoch, file, worker, message)]


class LoaderTimeoutError(RuntimeError, TimeoutError):
    """A batch did not arrive within ``timeout`` seconds; ``index`` is the late sample."""

    def __init__(self, message, index=None):
        super().__init__(message)
        self.index = index


class FileError(OSError):
    """A file a dataset needs could not be read; ``path`` names it."""

    def __init__(self, message, path=None):
        super().__init__(message)
        self.path = path


class WorkerError(RuntimeError):
    """A worker cannot go on (a worker process died: killed by a signal, out of memory, or
    exited): the message names it, how it ended and the samples it held. The loader is stopped;
    make a new one."""
