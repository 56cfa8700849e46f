"""gpufeed's exceptions. Bad arguments raise ValueError; these carry what went wrong in a run.

Each can be made from its message alone, as Python's own exceptions can: pickle (a process
pool, torch.multiprocessing) and code that rebuilds an exception from its type and message
(``type(e)(str(e))``) work; the attributes then are None unless pickle restores them."""

from __future__ import annotations

import signal as _signal
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
    make a new one.

    A dead worker process's error also says so in its attributes (None for other failures):
    ``worker`` (its number), ``pid``, ``exit_status`` (where it exited) or ``signal`` (the
    signal that killed it; both None where how it ended is not known), ``samples`` (the indices
    it was reading, a tuple, empty when it held none), ``epoch`` (theirs) and ``task`` (what it
    was doing when it held no samples, such as "the batch layout").

    Args:
        message: What went wrong.
        worker: The worker's number.
        pid: Its process id.
        exit_status: The status it exited with.
        signal: The signal that killed it.
        samples: The indices of the samples it was reading.
        epoch: Their epoch.
        task: What it was doing, when it held no samples.
    """

    def __init__(self, message: str, worker: int | None = None, pid: int | None = None,
                 exit_status: int | None = None, signal: int | None = None,
                 samples: Iterable[int] = (), epoch: int | None = None,
                 task: str | None = None) -> None:
        super().__init__(message)
        self.worker = worker
        self.pid = pid
        self.exit_status = exit_status
        self.signal = signal
        self.samples = tuple(samples)
        self.epoch = epoch
        self.task = task

    @classmethod
    def died(cls, worker: int, pid: int, exit_status: int | None = None,
             signal: int | None = None, samples: Iterable[int] = (), epoch: int | None = None,
             task: str | None = None) -> WorkerError:
        """The error of worker process ``worker`` (``pid``) that died holding ``samples`` of
        ``epoch`` (or doing ``task``), its message made from these fields."""
        error = cls("", worker, pid, exit_status, signal, samples, epoch, task)
        error.args = (error._death_message(),)
        return error

    def ended_with(self, exitcode: int) -> None:
        """Records how the dead worker process ended, as ``multiprocessing.Process.exitcode``
        gives it (negative: the signal that killed it), and says so in the message."""
        if exitcode < 0:
            self.signal, self.exit_status = -exitcode, None
        else:
            self.exit_status, self.signal = exitcode, None
        self.args = (self._death_message(),)

    def _death_message(self) -> str:
        advice = ""
        if self.exit_status is not None:
            how = f"exited with status {self.exit_status}"
        elif self.signal is not None:
            try:
                name = _signal.Signals(self.signal).name
            except ValueError:
                name = str(self.signal)
            how = f"was killed by signal {self.signal} ({name})"
            if self.signal == _signal.SIGKILL:
                advice = (". The kernel's out-of-memory killer ends processes with SIGKILL: "
                          "check dmesg, and lower num_workers or the memory each sample takes")
        else:
            how = "ended"
        if self.samples:
            held = ("sample " if len(self.samples) == 1 else "samples ") + ", ".join(
                str(i) for i in self.samples) + f" of epoch {self.epoch}"
        else:
            held = self.task or "a task"
        return (f"gpufeed: worker process {self.worker} (pid {self.pid}) {how} while reading "
                f"{held}; the loader cannot go on (make a new one){advice}")
