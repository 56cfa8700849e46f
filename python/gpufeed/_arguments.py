"""The checks of gpufeed.DataLoader's arguments, in torch's words where torch checks the same.

Each check raises the ValueError (or TypeError) torch's DataLoader raises for the argument, or
one that says what to pass instead where gpufeed has no such mode; those that settle an
argument (a default, or a mode the others imply) return what the loader is made with.
"""

import multiprocessing
import multiprocessing.context
import os
import sys
import warnings

from . import _gpufeed, _workers

try:  # torch is optional: without it, batches are numpy arrays
    import torch
    import torch.utils.data as _torch_data
except ImportError:  # pragma: no cover - exercised where torch is absent
    torch = None  # type: ignore[assignment]
    _torch_data = None  # type: ignore[assignment]

__all__ = [
    "check_batching",
    "check_collate",
    "check_device",
    "check_iterable",
    "check_num_workers",
    "check_on_error",
    "check_output",
    "check_prefetch_factor",
    "check_timeout",
    "worker_kind",
]


def positive_int(name, value):
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ValueError(f"{name} should be a positive integer value, but got {name}={value!r}")
    return value


def check_batching(batch_size, shuffle, sampler, batch_sampler, drop_last):
    """(unbatched, batch_size): batch_size=None means samples one at a time, without a batch
    dimension (torch's automatic batching off): gpufeed reads batches of one and hands each out
    without its batch axis."""
    unbatched = batch_size is None and batch_sampler is None
    if unbatched:
        if drop_last:
            raise ValueError("batch_size=None option disables auto-batching and is mutually "
                             "exclusive with drop_last")
        batch_size = 1
    if sampler is not None and shuffle:
        raise ValueError("sampler option is mutually exclusive with shuffle")
    if batch_sampler is not None:
        if batch_size != 1 or shuffle or sampler is not None or drop_last:
            raise ValueError("batch_sampler option is mutually exclusive with batch_size, "
                             "shuffle, sampler, and drop_last")
    else:
        positive_int("batch_size", batch_size)
    return unbatched, batch_size


def check_context(multiprocessing_context, num_workers, worker_type):
    """torch's checks of multiprocessing_context, with the phrases of its messages. gpufeed
    reads in one worker process with num_workers=0 when worker_type='process' asks for it."""
    if multiprocessing_context is None:
        return
    if num_workers == 0 and worker_type != "process":
        raise ValueError("multiprocessing_context chooses how worker processes start, so it "
                         "needs multi-process loading (num_workers > 0), but got num_workers=0 "
                         "(or pass worker_type='process': one worker process)")
    if isinstance(multiprocessing_context, str):
        methods = multiprocessing.get_all_start_methods()
        if multiprocessing_context not in methods:
            raise ValueError(f"multiprocessing_context option should specify a valid start "
                             f"method in {methods!r}, but got {multiprocessing_context!r}")
    elif not isinstance(multiprocessing_context, multiprocessing.context.BaseContext):
        raise TypeError("multiprocessing_context option should be a valid context object or a "
                        "string naming a start method, but got "
                        f"{type(multiprocessing_context).__name__} {multiprocessing_context!r}")


def check_num_workers(num_workers, multiprocessing_context, worker_type):
    """num_workers and the multiprocessing_context that starts them; warns, as torch does, of
    more workers than the CPUs this process may use. Called by DataLoader.__init__ itself, so
    that the warning points at the line that makes the loader."""
    if isinstance(num_workers, bool) or not isinstance(num_workers, int) or num_workers < 0:
        raise ValueError("num_workers option should be non-negative; use num_workers=0 to "
                         "disable multiprocessing.")
    check_context(multiprocessing_context, num_workers, worker_type)
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    if cores and num_workers > cores:
        # The phrase torch's warning has, so that filters written for it match this one.
        warnings.warn(f"This DataLoader will create {num_workers} workers, more than the "
                      f"{cores} CPUs this process may use: excessive worker creation might "
                      f"get DataLoader running slow or even freeze; lower num_workers to "
                      f"{cores} or less (or let autotune=True choose)", UserWarning,
                      stacklevel=3)


def check_timeout(timeout):
    if timeout < 0:
        raise ValueError("timeout option should be non-negative")


def check_prefetch_factor(prefetch_factor):
    if prefetch_factor is not None and (not isinstance(prefetch_factor, int)
                                        or prefetch_factor < 1):
        raise ValueError(f"prefetch_factor should be a positive integer, got {prefetch_factor!r}")


def is_default_collate(fn):
    if fn is None or _torch_data is None:
        return fn is None
    defaults = [getattr(_torch_data, "default_collate", None)]
    try:
        from torch.utils.data._utils import collate as _collate

        defaults.append(_collate.default_collate)
    except ImportError:  # pragma: no cover
        pass
    return any(fn is d for d in defaults if d is not None)


def check_iterable(dataset, shuffle, sampler, batch_sampler, worker_type, collate_fn, unbatched):
    """(iterable, collate_fn). An iterable dataset: each worker process iterates its own copy
    (sharded through get_worker_info(), as torch's workers do) and makes batches of what it
    takes, with collate_fn (torch's default_collate by default); the epoch ends when every
    worker's iterator has."""
    iterable = _torch_data is not None and isinstance(dataset, _torch_data.IterableDataset)
    if iterable:
        for name, value in (("shuffle", shuffle or None), ("sampler", sampler),
                            ("batch_sampler", batch_sampler)):
            if value is not None:
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified "
                                 f"{name} option, but got {name}={value!r}")
        if worker_type == "thread":
            raise ValueError("an IterableDataset is iterated in worker processes: use "
                             "worker_type='process' (or 'auto')")
        if is_default_collate(collate_fn):
            collate_fn = _workers.convert_one if unbatched else _workers.default_collate
    return iterable, collate_fn


def check_collate(dataset, collate_fn, iterable, unbatched, worker_type, on_error, transforms):
    """(collate, worker_type). A custom collate_fn runs in the worker processes on each batch's
    samples, as in torch; its output is laid out in the shared ring and read in place."""
    collate = iterable or not is_default_collate(collate_fn)
    if collate:
        if isinstance(dataset, _gpufeed.Dataset):
            raise ValueError("collate_fn: gpufeed.datasets make their batches in C++; do "
                             "per-batch work after the loader (on the GPU: transforms=)")
        if worker_type == "thread":
            raise ValueError("collate_fn runs in worker processes: use worker_type='process' "
                             "(or 'auto'); worker threads write samples straight into "
                             "their batch and run no collate function")
        if on_error != "raise":
            raise ValueError(f"on_error={on_error!r} with a custom collate_fn: a batch is "
                             "made whole or not at all, so a failing sample fails its "
                             "batch; use on_error='raise'")
        if unbatched and not iterable:
            raise ValueError("batch_size=None with a custom collate_fn: gpufeed makes "
                             "batches with it; give a batch_size")
        if transforms:
            raise ValueError("transforms= with a custom collate_fn: its output is returned "
                             "as collate_fn made it; convert it in collate_fn or after")
        worker_type = "process"
    return collate, worker_type


def check_output(output):
    """The kind of batches: torch tensors where torch imports, else numpy arrays."""
    if output is None:
        output = "torch" if torch is not None else "numpy"
    if output not in ("torch", "numpy"):
        raise ValueError(f"output: expected 'torch' or 'numpy', got {output!r}")
    if output == "torch" and torch is None:
        raise ValueError("output='torch' but torch cannot be imported; use output='numpy'")
    return output


def check_on_error(on_error):
    if on_error not in ("raise", "skip"):
        raise ValueError(f"on_error: expected 'raise' or 'skip', got {on_error!r}")


def device_index(device):
    """None for host memory, else the CUDA device number (-1: the default, LOCAL_RANK)."""
    if device is None:
        return None
    if torch is not None and isinstance(device, torch.device):
        if device.type == "cpu":
            return None
        if device.type != "cuda":
            raise ValueError(f"device: gpufeed delivers to 'cuda' or host memory, not {device}")
        return -1 if device.index is None else device.index
    if isinstance(device, int) and not isinstance(device, bool):
        return device
    if isinstance(device, str):
        if device == "cpu":
            return None
        if device == "cuda":
            return -1
        if device.startswith("cuda:") and device[5:].isdigit():
            return int(device[5:])
    raise ValueError(f"device: expected None, 'cpu', 'cuda', 'cuda:N' or a torch.device, "
                     f"got {device!r}")


def check_device(device, output):
    """The device's index (see device_index), once this process is known to see it."""
    index = device_index(device)
    if index is not None:
        count, why = _gpufeed.cuda_devices()
        if count == 0:
            raise ValueError(f"device={device!r}: this machine has no usable CUDA device "
                             f"({why}); pass device=None (or 'cpu') for batches in host "
                             "memory")
        if index >= count:
            raise ValueError(f"device={device!r}: this process sees {count} CUDA device(s), "
                             f"cuda:0 to cuda:{count - 1}")
    if index is not None and output == "numpy":
        raise ValueError("output='numpy' needs host memory: numpy cannot hold CUDA memory; "
                         "use output='torch' or device=None")
    return index


def free_threaded():
    return hasattr(sys, "_is_gil_enabled") and not sys._is_gil_enabled()


def worker_kind(worker_type, python_dataset, num_workers):
    """("process" or "thread", why)."""
    if worker_type not in ("auto", "process", "thread"):
        raise ValueError(f"worker_type: expected 'auto', 'process' or 'thread', "
                         f"got {worker_type!r}")
    if not python_dataset:
        if worker_type == "process":
            raise ValueError("worker_type='process': gpufeed.datasets read in C++ without the "
                             "GIL, on threads; use worker_type='thread' or 'auto'")
        return "thread", "gpufeed.datasets read in C++, without the GIL"
    if worker_type != "auto":
        return worker_type, f"worker_type={worker_type!r}"
    if free_threaded():
        return "thread", "this interpreter has no GIL (free-threaded), so threads run in parallel"
    if num_workers == 0:
        return "thread", ("num_workers=0: one worker thread (torch would read in the main "
                          "process); set num_workers for worker processes")
    return "process", ("the dataset runs Python code, and threads running it would take the GIL "
                       "from the training loop")
