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

import multiprocessing
import multiprocessing.reduction
import os
import pickle
import random
import signal
import traceback

from . import _gpufeed

__all__ = ["WorkerInfo", "WorkerProcesses", "current_worker_info", "rebuild_exception"]

_info = None  # this process's WorkerInfo, in a worker process


class WorkerInfo:
    """What a worker process is: ``id``, ``num_workers``, ``seed`` and ``dataset`` (torch's
    WorkerInfo fields)."""

    __slots__ = ("id", "num_workers", "seed", "dataset")

    def __init__(self, id, num_workers, seed, dataset):  # noqa: A002 - torch's field name
        self.id = id
        self.num_workers = num_workers
        self.seed = seed
        self.dataset = dataset

    def __getitem__(self, name):  # gpufeed's worker threads once gave a dict
        if name not in self.__slots__:
            raise KeyError(name)
        return getattr(self, name)

    def __repr__(self):
        return (f"WorkerInfo(id={self.id}, num_workers={self.num_workers}, seed={self.seed}, "
                f"dataset={type(self.dataset).__name__})")


def current_worker_info():
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


def _worker_main(dataset, worker_id, num_workers, base_seed, worker_init_fn, files,
                 arena_reserve, main_pid):
    global _info
    # Ctrl-C reaches the whole process group: the loader's process handles it and stops the
    # workers; a worker interrupted in __getitem__ would only print a second traceback.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    seed = _seed(base_seed, worker_id)
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
    if worker_init_fn is not None:
        try:
            worker_init_fn(worker_id)
        except BaseException as e:  # noqa: BLE001 - raised again in the loader's process
            init_error = _describe(worker_id, e, "in worker_init_fn")

    def describe(exc, index, epoch):
        return _describe(worker_id, exc, f"reading sample {index} of epoch {epoch}")

    _gpufeed._worker_loop(dataset, worker_id, num_workers, tuple(f.fd for f in files),
                          arena_reserve, main_pid, describe, init_error)


def _context(multiprocessing_context):
    if multiprocessing_context is None:
        return multiprocessing.get_context()
    if isinstance(multiprocessing_context, str):
        try:
            return multiprocessing.get_context(multiprocessing_context)
        except ValueError:
            raise ValueError(
                f"multiprocessing_context: {multiprocessing_context!r} is not a start method "
                f"here; use one of {multiprocessing.get_all_start_methods()}") from None
    return multiprocessing_context


class WorkerProcesses:
    """The worker processes of one loader: started at once, stopped by close()."""

    def __init__(self, native, dataset, num_workers, multiprocessing_context, worker_init_fn,
                 base_seed):
        self._native = native
        self._owner = os.getpid()
        self.processes = []
        context = _context(multiprocessing_context)
        self.start_method = context.get_start_method()
        try:
            for worker_id in range(num_workers):
                files = tuple(_Descriptor(fd) for fd in native.files(worker_id))
                process = context.Process(
                    target=_worker_main, name=f"gpufeed-worker-{worker_id}", daemon=True,
                    args=(dataset, worker_id, num_workers, base_seed, worker_init_fn, files,
                          native.arena_reserve, os.getpid()))
                try:
                    process.start()
                except (pickle.PicklingError, AttributeError, TypeError) as e:
                    raise ValueError(
                        f"multiprocessing_context={self.start_method!r} starts each worker "
                        "process by pickling the dataset and worker_init_fn, as torch's "
                        f"DataLoader does, and this one does not pickle: {e}. Define them at "
                        "module level, use the 'fork' start method, or worker_type='thread'"
                    ) from e
                native.attach(worker_id, process.pid)
                self.processes.append(process)
        except BaseException:
            self.close()
            raise

    def exit_codes(self):
        """Each worker's exit code, or None while it runs."""
        return [p.exitcode for p in self.processes]

    def close(self, timeout=1.0):
        """Asks every worker to stop after the task in hand; ends (SIGTERM, then SIGKILL) the
        ones still running after `timeout` seconds, whose work nobody waits for any more, and
        reaps them all."""
        if not self.processes or os.getpid() != self._owner:
            return  # a process forked from the loader's: these workers are its parent's
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
        self.processes = []
