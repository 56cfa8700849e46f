"""Notes in gpufeed's log about torch arguments that mean something else here, each once per
process: a loader made in a loop says it once, not once per loader."""

import threading

from . import _gpufeed

__all__ = ["note_arguments_taken_otherwise", "say_once"]

_said: set[object] = set()
_said_lock = threading.Lock()


def say_once(key, message):
    with _said_lock:
        if key in _said:
            return
        _said.add(key)
    _gpufeed.log("info", message)


def note_arguments_taken_otherwise(*, pin_memory, device_index, pin_memory_device,
                                   multiprocessing_context, worker_type, persistent_workers,
                                   num_workers, in_order):
    """Says what gpufeed does instead of what these arguments ask torch for."""
    if pin_memory and device_index is None:
        say_once("pin_memory", "pin_memory=True: gpufeed's host batches are not pinned; "
                 "pass device='cuda' and gpufeed copies each batch to the GPU from pinned "
                 "memory itself (one copy per batch, non-blocking; a collate_fn's batches "
                 "are copied by torch, tensor by tensor)")
    if pin_memory_device:
        say_once("pin_memory_device", "pin_memory_device: use device= instead")
    if multiprocessing_context is not None and worker_type == "thread":
        say_once("mp", "multiprocessing_context: this loader's workers are threads; ignored")
    if not persistent_workers and num_workers > 0:
        say_once("persistent", "persistent_workers=False: gpufeed's workers always persist "
                 "across epochs (seeded once, as torch's persistent workers are)")
    if not in_order:
        say_once("in_order", "in_order=False: gpufeed delivers batches in order; a slow "
                 "sample holds back only its own batch while the others are prepared")
