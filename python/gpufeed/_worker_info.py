"""gpufeed.get_worker_info(): torch.utils.data.get_worker_info() for gpufeed's workers, processes
and threads alike."""

from __future__ import annotations

from . import _gpufeed, _workers

__all__ = ["get_worker_info"]


def get_worker_info() -> _workers.WorkerInfo | None:
    """Inside a worker, a ``WorkerInfo`` (``id``, ``num_workers``, ``seed``, ``dataset``, as
    torch.utils.data.get_worker_info() gives them): in a worker process, its own (``seed`` as
    torch seeds workers); in a worker thread's call to a Python dataset, that thread's
    (``seed``: this sample's, a function of the loader's seed, the epoch and the index). None
    elsewhere."""
    info = _workers.current_worker_info()
    if info is not None:
        return info
    thread = _gpufeed.get_worker_info()
    if thread is None:
        return None
    return _workers.WorkerInfo(thread["id"], thread["num_workers"], thread["seed"],
                               thread["dataset"])
