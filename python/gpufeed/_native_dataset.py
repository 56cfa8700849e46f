"""The dataset gpufeed's C++ loader reads, made of the one a gpufeed.DataLoader is given: a
bundled one (gpufeed.datasets) as it is, any other through the Python adapter, read by worker
processes (started when the loader is first iterated) or by threads."""

from . import _gpufeed, _workers
from ._notes import say_once
from ._options import quarter_of_memory, seed_from

__all__ = ["make_native_dataset"]


def make_native_dataset(dataset, *, plan, iterable, collate, collate_fn, worker_init_fn,
                        multiprocessing_context, generator, drop_last, held_batches_budget):
    """(native, structure, worker_processes), read by the workers of ``plan`` (a WorkerPlan).
    ``structure``: the sample's, where it is known before a worker reads the first sample, else
    None ("collated": a collate_fn's batches carry their own). ``worker_processes``: the _workers.WorkerProcesses that read for the loader,
    None for threads."""
    if plan.kind == "process":
        native = _gpufeed.ProcessDataset(
            # An iterable dataset's epochs are open-ended: the core ends each one when every
            # worker's iterator has ended, and reads no length.
            0 if iterable else len(dataset), plan.processes,
            collate=collate, iterable=iterable,
            collate_budget=held_batches_budget if held_batches_budget is not None
            else quarter_of_memory())
        processes = _workers.WorkerProcesses(
            native, dataset, plan.processes, multiprocessing_context, worker_init_fn,
            seed_from(generator), collate_fn if collate else None,
            iterable=iterable, drop_last=bool(drop_last))
        _gpufeed.log("info", f"{plan.processes} worker processes ({processes.start_method}): "
                     f"{plan.why}; they write samples into a ring this process shares with them")
        return native, "collated" if collate else None, processes
    if isinstance(dataset, _gpufeed.Dataset):
        structure = getattr(dataset, "_gpufeed_structure", None) or (
            "dict", dict, [n for n, _, _ in dataset.fields],
            [("leaf", i) for i in range(len(dataset.fields))])
        if worker_init_fn is not None:
            say_once("worker_init_fn", "worker_init_fn: not called for gpufeed.datasets, "
                     "whose workers run no Python")
        return dataset, structure, None
    native = _gpufeed.PythonDataset(dataset, worker_init_fn)
    count = "autotuned" if plan.workers == "auto" else plan.workers
    _gpufeed.log("info", f"{count} worker threads: {plan.why}")
    return native, None, None
