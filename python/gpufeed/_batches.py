"""A loader's batches as the user gets them: the C++ loader's next batch, its fields made torch
tensors (or numpy arrays) by DLPack without a copy, and the dataset's sample structure rebuilt
around them (_assemble.py); a collate_fn's batches read in place from their block
(_collated.py). Errors reach the user in the DataLoader's terms."""

from __future__ import annotations

import pickle
from typing import TYPE_CHECKING, Any

import numpy as np

from . import _collated, _gpufeed
from ._assemble import StepInfo, build, text_fields, unbatched
from .errors import LoaderTimeoutError, WorkerError

try:  # torch is optional: without it, batches are numpy arrays
    import torch
    import torch.utils.dlpack
except ImportError:  # pragma: no cover - exercised where torch is absent
    torch = None  # type: ignore[assignment]

if TYPE_CHECKING:
    from ._workers import WorkerProcesses

__all__ = ["BatchReader"]


class BatchReader:
    """Reads a loader's batches, one ``read()`` each.

    Args:
        core: The C++ loader.
        native: The dataset it reads (a _gpufeed.ProcessDataset for worker processes).
        structure: The sample's structure where it is known before the first read, else None
            (learned from the first batch); "collated" for a collate_fn's batches.
        workers: The worker processes, or None (threads).
        output: "torch" or "numpy".
        device_index: The CUDA device batches go to (-1: the current one), or None (host).
        unbatched: Whether the loader gives single samples (batch_size=None).
        timeout: The loader's timeout, in seconds (for the error that says it passed).
    """

    def __init__(self, core: _gpufeed.Loader, native: Any, structure: Any,
                 workers: WorkerProcesses | None, *, output: str, device_index: int | None,
                 unbatched: bool, timeout: float) -> None:
        self._core = core
        self._native = native
        self._workers = workers
        self._collate = structure == "collated"
        self._structure = None if self._collate else structure
        self._text_fields: set[int] = set()
        if self._structure is not None:
            self._note_text_fields()
        self._output = output
        self._device_index = device_index
        resolved = core.resolved
        self._cuda_device = resolved["device"] if resolved["cuda"] else None
        self._unbatched = unbatched
        self._timeout = timeout

    def read(self) -> tuple[Any, StepInfo] | None:
        """(the next batch, where it stands in gradient accumulation), or None at the epoch's
        end. Raises the dataset's error, a WorkerError whose account of the worker's end is
        complete, or a LoaderTimeoutError in torch's words."""
        try:
            return self._read()
        except WorkerError as e:
            self.explain(e)
            raise
        except LoaderTimeoutError as e:
            raise self._timed_out(e) from None

    def explain(self, error: WorkerError) -> None:
        """Completes a WorkerError's account of how a worker process ended."""
        if self._workers is not None:
            self._workers.explain(error)

    def _read(self):
        raw = self._core.next(self._stream())
        if raw is None:
            return None
        if self._collate:  # collate_fn's output as it made it, read in place
            collated = self._native.collated(raw)
            device = None
            if self._device_index is not None:  # the device the core would choose, too
                index = (self._device_index if self._device_index >= 0
                         else _gpufeed.default_cuda_device())
                device = f"cuda:{index}"
            return _collated.unpack(collated, device), StepInfo(*raw.step)
        if self._structure is None:
            self._learn_structure()
        step = StepInfo(*raw.step)
        # A text field's memory holds ids: its values come from the dataset's table instead.
        tensors = [None if i in self._text_fields else self._to_tensor(f)
                   for i, f in enumerate(raw.fields())]
        if self._unbatched:  # the one sample, without its batch axis
            return unbatched(self._structure, [t if t is None else t[0] for t in tensors],
                             lambda field: self._native.texts(raw, field)[0]), step
        return build(self._structure, tensors, step,
                     lambda field: self._native.texts(raw, field)), step

    def _learn_structure(self):
        """The sample's structure, once a worker has read the first sample (a worker process
        sends it pickled)."""
        structure = self._native.structure
        self._structure = pickle.loads(structure) if isinstance(structure, bytes) else structure
        self._note_text_fields()

    def _note_text_fields(self):
        self._text_fields = text_fields(self._structure)
        if self._text_fields:
            names = ", ".join(repr(self._native.fields[i][0]) for i in sorted(self._text_fields))
            _gpufeed.log("info", f"text fields {names}: the batch holds an int64 id per sample "
                         "for each (int64[] below) and gpufeed hands the str or bytes values "
                         "back with it, keeping each distinct value once (at most "
                         f"len(dataset) + {_gpufeed.PythonDataset.text_values_beyond_length} "
                         "per field)")

    def _stream(self):
        if self._device_index is None or self._collate:
            return None
        s = torch.cuda.current_stream(self._cuda_device).cuda_stream
        return s if s != 0 else 1  # DLPack's number for the legacy default stream

    def _to_tensor(self, field):
        if self._output == "numpy":
            # Through the array interface: numpy marks arrays it imports by DLPack read-only
            # (before 2.0), and such arrays cannot be passed on by DLPack; this one is writable
            # and keeps the field (so the slot) alive as its base.
            return np.asarray(field)
        if field.dtype == "bool":  # torch 1.13 reads no DLPack bool; a uint8 view is free
            return torch.utils.dlpack.from_dlpack(field.as_uint8()).view(torch.bool)
        return torch.utils.dlpack.from_dlpack(field)

    def _timed_out(self, error):
        """A LoaderTimeoutError that says first what torch's says, then which sample is late."""
        detail = str(error)
        if detail.startswith("gpufeed: "):
            detail = detail[len("gpufeed: "):]
        return LoaderTimeoutError(f"DataLoader timed out after {self._timeout:g} seconds: "
                                  f"{detail}", error.index)
