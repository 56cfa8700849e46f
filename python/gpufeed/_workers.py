"""Worker processes for Python datasets.

Each process runs gpufeed's worker loop (C++, ``_gpufeed._worker_loop``): it waits for the
loader's tasks in shared memory, calls the dataset's ``__getitem__`` and writes each sample's
arrays straight into its batch slot, in the ring the loader's process shares with it. No sample
is pickled, and the loader's process runs none of the dataset's Python code, so its GIL stays
with the training loop.

Inside a worker, torch's worker contract holds: ``worker_init_fn(worker_id)`` runs there,
``torch.utils.data.get_worker_info()`` and ``gpufeed.get_worker_info()`` describe it, and
``random``, numpy's global generator and torch are seeded per worker as torch seeds them.
"""

from __future__ import annotations

import dataclasses
import multiprocessing
import multiprocessing.reduction
import os
import pickle
import random
import signal
import traceback
import warnings
from collections.abc import Callable
from typing import Any

from . import _gpufeed

__all__ = ["WorkerConfig", "WorkerInfo", "WorkerProcesses", "current_worker_info",
           "describe_read_failure", "rebuild_exception"]

_info: WorkerInfo | None = None  # this process's WorkerInfo, in a worker process


class WorkerInfo:
    """What a worker is, as gpufeed.get_worker_info() gives it (torch's WorkerInfo fields).

    Args:
        id: The worker's number, 0 to ``num_workers - 1``.
        num_workers: The loader's workers.
        seed: The worker's seed (a worker process's, as torch seeds workers; a worker thread's
            for the sample it reads).
        dataset: The dataset the worker reads (a worker process's own copy).
    """

    __slots__ = ("id", "num_workers", "seed", "dataset")

    def __init__(self, id: int, num_workers: int, seed: int,  # noqa: A002 - torch's name
                 dataset: Any) -> None:
        self.id = id
        self.num_workers = num_workers
        self.seed = seed
        self.dataset = dataset

    def __repr__(self) -> str:
        return (f"WorkerInfo(id={self.id}, num_workers={self.num_workers}, seed={self.seed}, "
                f"dataset={type(self.dataset).__name__})")


def current_worker_info() -> WorkerInfo | None:
    """This process's WorkerInfo when it is a gpufeed worker process, else None."""
    return _info


class _Descriptor:
    """A file descriptor that reaches the worker whatever the start method: as itself under
    fork, duplicated into the child by multiprocessing under spawn and forkserver."""

    def __init__(self, fd):
        self.fd = fd

    def __reduce__(self):
        return _Descriptor._rebuild, (multiprocessing.reduction.DupFd(self.fd),)

    @staticmethod
    def _rebuild(duplicate):
        return _Descriptor(duplicate.detach())


class _KeyErrorMessage(str):
    """KeyError's str() shows repr(message); this message shows as itself (as torch does)."""

    def __repr__(self):
        return self


def rebuild_exception(pickled, context):
    """The dataset's exception, raised in a worker, as an instance of its own type: its message
    is the worker's traceback, then ``context`` (gpufeed's: the samples, epoch and worker). An
    exception type that cannot be made from one message becomes a RuntimeError."""
    try:
        exc_type, text = pickle.loads(pickled)
    except Exception:  # noqa: BLE001 - the type is not importable here
        exc_type, text = RuntimeError, ""
    message = f"{text}\n{context}" if text else context
    if exc_type is KeyError:
        message = _KeyErrorMessage(message)
    try:
        exc = exc_type(message)
    except Exception:  # noqa: BLE001 - a constructor that wants other arguments
        exc = RuntimeError(message)
    return exc


def _describe(worker_id, exc, where):
    """(a line saying what was raised, pickled (type, the worker's whole account with its
    traceback)) of an exception raised in worker `worker_id`."""
    trace = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    text = (f"Caught {type(exc).__name__} in gpufeed worker process {worker_id} {where}.\n"
            f"Original {trace}").rstrip("\n")
    try:
        pickled = pickle.dumps((type(exc), text))
    except Exception:  # noqa: BLE001 - a type pickle cannot name
        pickled = pickle.dumps((RuntimeError, text))
    try:
        line = f"{type(exc).__name__}: {exc}"
    except Exception:  # noqa: BLE001 - an unprintable exception
        line = type(exc).__name__
    return line, pickled


def _seed(base_seed, worker_id):
    """Seeds random, numpy's global generator and torch as torch's workers are seeded."""
    seed = base_seed + worker_id
    random.seed(seed)
    try:
        import torch
    except ImportError:
        torch = None
    if torch is not None:
        torch.manual_seed(seed)
    try:
        import numpy
    except ImportError:
        return seed
    state = None
    if torch is not None:
        try:
            from torch.utils.data._utils.worker import _generate_state

            state = _generate_state(base_seed, worker_id)
        except ImportError:
            state = None
    if state is None:  # without torch: numpy's own mixing of the same two numbers
        state = numpy.random.SeedSequence([worker_id, base_seed % 2**64]).generate_state(4)
    numpy.random.seed(state)
    return seed


def default_collate(samples):
    """torch's default_collate (numpy's stack without torch): an iterable dataset's batches."""
    try:
        from torch.utils.data import default_collate as collate
    except ImportError:
        import numpy

        return numpy.stack(samples)
    return collate(samples)


def convert_one(samples):
    """The one sample of a batch of one as torch's default_convert gives it (batch_size=None)."""
    try:
        from torch.utils.data import default_convert as convert
    except ImportError:
        return samples[0]
    return convert(samples[0])


@dataclasses.dataclass(frozen=True)
class WorkerConfig:
    """What one worker process is made with. It reaches the process pickled (under spawn and
    forkserver), and gpufeed's worker loop (``_gpufeed._worker_loop``) reads it there.

    Args:
        worker: The worker's number, 0 to ``workers - 1``.
        workers: The loader's worker processes.
        files: The files it shares with the loader's process (process_dataset::worker_files):
            the control region, the arena, and the events to the worker and to the loader.
        arena_reserve: The address space the arena may grow to.
        main_pid: The loader's process, which the worker watches.
        base_seed: The loader's seed; the worker seeds itself with ``base_seed + worker``.
        worker_init_fn: The user's, called first in the worker.
        collate_fn: The user's, run on whole batches in the worker; None: samples are written
            into their slots.
        iterable: Whether the dataset is an IterableDataset (each worker iterates its copy).
        drop_last: Whether a worker's short last batch of an iterable dataset is dropped.
    """

    worker: int
    workers: int
    files: tuple[_Descriptor, ...]
    arena_reserve: int
    main_pid: int
    base_seed: int
    worker_init_fn: Callable[[int], Any] | None = None
    collate_fn: Callable[[list[Any]], Any] | None = None
    iterable: bool = False
    drop_last: bool = False

    @property
    def fds(self) -> tuple[int, ...]:
        """The files' descriptors in this process."""
        return tuple(f.fd for f in self.files)


def describe_read_failure(worker_id, exc, index, epoch):
    """_describe() of an exception the dataset raised reading sample `index` (the worker loop's
    account of a failed read)."""
    return _describe(worker_id, exc, f"reading sample {index} of epoch {epoch}")


def _worker_main(dataset, config):
    global _info
    # Ctrl-C reaches the whole process group: the loader's process handles it and stops the
    # workers; a worker interrupted in __getitem__ would only print a second traceback.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # SIGTERM ends a worker (multiprocessing's exit handler and clusters end processes with
    # it), whatever handler it inherited: a Python handler, such as the one a trainer installs
    # in its own process, would run only between tasks, and a worker waiting for one would
    # never end.
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    worker_id, num_workers = config.worker, config.workers
    seed = _seed(config.base_seed, worker_id)
    _info = WorkerInfo(worker_id, num_workers, seed, dataset)
    try:
        import torch
        from torch.utils.data._utils import worker as torch_worker
    except ImportError:
        torch = None
    if torch is not None:
        torch.set_num_threads(1)  # as torch's workers: one thread each, the cores are shared
        torch_worker._worker_info = torch_worker.WorkerInfo(
            id=worker_id, num_workers=num_workers, seed=seed, dataset=dataset)
    init_error = None
    if config.worker_init_fn is not None:
        try:
            config.worker_init_fn(worker_id)
        except BaseException as e:  # noqa: BLE001 - raised again in the loader's process
            init_error = _describe(worker_id, e, "in worker_init_fn")
    _gpufeed._worker_loop(dataset, config, init_error)


def _context(multiprocessing_context):
    """The context of a start method (the loader has checked the argument)."""
    if multiprocessing_context is None:
        return multiprocessing.get_context()
    if isinstance(multiprocessing_context, str):
        return multiprocessing.get_context(multiprocessing_context)
    return multiprocessing_context


def _exit_hook_before_multiprocessings():
    """atexit runs the hooks registered last first. multiprocessing's (registered when its util
    module is first imported, after gpufeed's) terminates daemonic processes: run before
    gpufeed's, it would end the workers under loaders still open, and a thread waiting in next()
    would see them die. gpufeed's moves after it, so every loader is closed (and threads waiting
    in next() are parked) before multiprocessing ends the workers."""
    import atexit
    import multiprocessing.util  # noqa: F401 - registers multiprocessing's hook if not yet

    atexit.unregister(_gpufeed._at_exit)
    atexit.register(_gpufeed._at_exit)


class WorkerProcesses:
    """The worker processes of one loader: started by start(), when the loader is first
    iterated (as torch starts its workers, so that they copy the dataset as it is then), and
    stopped by close()."""

    def __init__(self, native, dataset, num_workers, multiprocessing_context, worker_init_fn,
                 base_seed, collate_fn=None, iterable=False, drop_last=False):
        self._native = native
        self._owner = os.getpid()
        self.processes = []
        self._exit_codes = {}  # pid: exit code, of the workers reaped
        self._context = _context(multiprocessing_context)
        self.start_method = self._context.get_start_method()
        self._dataset = dataset
        self._num_workers = num_workers
        self._every_worker = {"base_seed": base_seed, "worker_init_fn": worker_init_fn,
                        "collate_fn": collate_fn, "iterable": iterable, "drop_last": drop_last}
        self._started = False

    def start(self):
        """Starts the workers, once. The loader's own threads already wait for them (their
        tasks are posted): they hold no lock a worker needs, so forking now is safe, which is
        why Python's warning about forking a process with threads is silenced here."""
        if self._started:
            return
        self._started = True
        dataset, self._dataset = self._dataset, None  # the workers hold it from now on
        _exit_hook_before_multiprocessings()
        try:
            for worker_id in range(self._num_workers):
                config = WorkerConfig(
                    worker=worker_id, workers=self._num_workers,
                    files=tuple(_Descriptor(fd) for fd in self._native.files(worker_id)),
                    arena_reserve=self._native.arena_reserve, main_pid=os.getpid(),
                    **self._every_worker)
                process = self._context.Process(
                    target=_worker_main, name=f"gpufeed-worker-{worker_id}", daemon=True,
                    args=(dataset, config))
                try:
                    with warnings.catch_warnings():
                        warnings.filterwarnings("ignore", category=DeprecationWarning,
                                                message=r".*use of fork\(\) may lead to "
                                                "deadlocks")
                        process.start()
                except (pickle.PicklingError, AttributeError, TypeError) as e:
                    # torch's words first, so that warning filters and tests written for its
                    # DataLoader match; stacklevel: the caller's iter().
                    warnings.warn("Got pickle error when attempting to start a worker Process: "
                                  f"{e}", UserWarning, stacklevel=4)
                    raise ValueError(
                        f"multiprocessing_context={self.start_method!r} starts each worker "
                        "process by pickling the dataset, worker_init_fn and collate_fn, as "
                        "torch's "
                        f"DataLoader does, and this one does not pickle: {e}. Define them at "
                        "module level, use the 'fork' start method, or worker_type='thread'"
                    ) from e
                self._native.attach(worker_id, process.pid)
                self.processes.append(process)
        except BaseException:
            self._stop_processes()
            raise

    def explain(self, error, within_s=5.0):
        """Fills in how a dead worker process ended (``error``: a WorkerError) where the core
        could not tell: a forkserver's workers are the server's children, so only
        multiprocessing, which hears from the server, knows their exit status."""
        if error.pid is None or error.exit_status is not None or error.signal is not None:
            return
        code = self._exit_codes.get(error.pid)
        if code is None:
            for p in self.processes:
                if p.pid == error.pid:
                    p.join(within_s)  # it is dead: the server reports its status at once
                    code = self._exit_codes[error.pid] = p.exitcode
        if code is not None:
            error.ended_with(code)

    def close(self, timeout=1.0):
        """Asks every worker to stop after the task in hand; ends (SIGTERM, then SIGKILL) the
        ones still running after `timeout` seconds, whose work nobody waits for any more, reaps
        them all, and closes the files they shared with this process (the ring's memory stays
        mapped for the batches alive)."""
        if os.getpid() != self._owner:
            return  # a process forked from the loader's: these workers are its parent's
        self._dataset = None
        self._stop_processes(timeout)
        self._native.release_workers()

    def _stop_processes(self, timeout=1.0):
        if self.processes:
            self._native.stop_workers()
            for p in self.processes:
                p.join(timeout)
            for p in self.processes:
                if p.exitcode is None:
                    p.terminate()
                    p.join(1.0)
                if p.exitcode is None:
                    p.kill()
                    p.join()
                self._exit_codes.setdefault(p.pid, p.exitcode)
                p.close()  # its pipe to the process
            self.processes = []
