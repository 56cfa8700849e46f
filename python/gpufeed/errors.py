"""gpufeed's exceptions. Bad arguments raise ValueError; these carry what went wrong in a run."""

__all__ = ["SampleError", "LoaderTimeoutError", "FileError"]


class SampleError(RuntimeError):
    """A sample could not be read.

    ``index`` is its index in the dataset, ``epoch`` the epoch, ``file`` the file being read
    (None where the dataset named none) and ``worker`` the worker thread. ``__cause__`` is the
    dataset's own exception, with its traceback, when the dataset is written in Python.
    """

    def __init__(self, message, index, epoch, file=None, worker=None):
        super().__init__(message)
        self.index = index
        self.epoch = epoch
        self.file = file
        self.worker = worker


class LoaderTimeoutError(RuntimeError, TimeoutError):
    """A batch did not arrive within ``timeout`` seconds; ``index`` is the late sample."""

    def __init__(self, message, index):
        super().__init__(message)
        self.index = index


class FileError(OSError):
    """A file a dataset needs could not be read; ``path`` names it."""

    def __init__(self, message, path):
        super().__init__(message)
        self.path = path
