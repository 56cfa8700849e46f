"""The format of a batch a ``collate_fn`` made, in one place: how a worker process lays it out in
a block of the shared ring, and how the loader's process reads it back in place.

The round trip: a worker process's loop (``src/python/workers/worker_loop.cpp``) calls the
collate_fn on the batch's samples, then ``pack`` on its output; it tells the loader how many
bytes that takes, and the loader (``src/python/workers/process_collate.cpp``, which knows blocks,
not their contents) gives it a block at least that large; the worker then calls ``write`` into
it. The loader's iterator calls ``unpack`` on the block.

A block holds, at offset 0, two little-endian 64-bit numbers (where the header starts, and the
header's length), then each array's bytes at a 64-byte-aligned offset, then the header: the
pickled output with each array replaced by ("array" or "tensor", index, dtype, shape), and the
arrays' offsets. Everything else in the output (numbers, strings, None) is pickled as it is.
"""

from __future__ import annotations

import pickle
import struct
from typing import Any

__all__ = ["pack", "unpack", "write"]

_ALIGN = 64
_PREFIX = struct.Struct("<QQ")


def _aligned(n: int) -> int:
    return (n + _ALIGN - 1) // _ALIGN * _ALIGN


def pack(output: Any) -> tuple[int, Any, list[Any]]:
    """(bytes, header, arrays) of a collate_fn's output: what write() lays out in a block."""
    import numpy as np

    torch: Any
    try:
        import torch
    except ImportError:
        torch = None
    arrays = []

    def leaf(kind, array, dtype):
        arrays.append(np.ascontiguousarray(array).reshape(-1).view(np.uint8))
        return (kind, len(arrays) - 1, dtype, tuple(array.shape))

    def walk(x):
        if torch is not None and isinstance(x, torch.Tensor):
            if x.device.type != "cpu":
                raise TypeError(f"collate_fn returned a tensor on {x.device}: return CPU tensors "
                                "from worker processes (gpufeed copies batches to the GPU: "
                                "device=)")
            t = x.detach().contiguous()
            raw = t.view(torch.int16) if t.dtype == torch.bfloat16 else t
            return leaf("tensor", raw.numpy(), str(t.dtype).split(".")[-1])
        if isinstance(x, np.ndarray):
            return leaf("array", x, x.dtype.str)
        if isinstance(x, tuple) and hasattr(x, "_fields"):
            return ("namedtuple", type(x), [walk(v) for v in x])
        if isinstance(x, (tuple, list)):
            return ("tuple" if isinstance(x, tuple) else "list", [walk(v) for v in x])
        if isinstance(x, dict):
            return ("dict", type(x), list(x.keys()), [walk(v) for v in x.values()])
        return ("object", x)  # numbers, str, None, ...: pickled as they are

    structure = walk(output)
    offsets = []
    at = _ALIGN
    for a in arrays:
        offsets.append(at)
        at = _aligned(at + a.nbytes)
    header = pickle.dumps((structure, offsets))
    return at + len(header), (at, header, offsets), arrays


def write(view: memoryview, header: Any, arrays: list[Any]) -> None:
    """Lays out pack()'s output in `view` (a writable memoryview of a block)."""
    import numpy as np

    at, blob, offsets = header
    block = np.frombuffer(view, dtype=np.uint8)
    _PREFIX.pack_into(view, 0, at, len(blob))
    for array, offset in zip(arrays, offsets):
        block[offset:offset + array.nbytes] = array
    block[at:at + len(blob)] = np.frombuffer(blob, dtype=np.uint8)


def unpack(collated: Any, device: str | None = None) -> Any:
    """The output a collate_fn made, its arrays read in place from `collated` (a uint8 exporter
    of the block, which keeps the batch leased as long as any array made from it lives)."""
    import numpy as np

    block = np.asarray(collated)
    at, length = _PREFIX.unpack_from(block[:_PREFIX.size].tobytes())
    structure, offsets = pickle.loads(block[at:at + length].tobytes())

    def build(node):
        kind = node[0]
        if kind in ("array", "tensor"):
            _, k, dtype, shape = node
            count = 1
            for d in shape:
                count *= d
            if kind == "array":
                dt = np.dtype(dtype)
                return block[offsets[k]:offsets[k] + count * dt.itemsize].view(dt).reshape(shape)
            import torch

            t = getattr(torch, dtype)
            size = torch.empty((), dtype=t).element_size()
            raw = block[offsets[k]:offsets[k] + count * size]
            if t == torch.bfloat16:
                tensor = torch.from_numpy(raw.view(np.int16)).view(torch.bfloat16)
            else:
                tensor = torch.from_numpy(raw).view(t)
            tensor = tensor.reshape(shape)
            return tensor if device is None else tensor.to(device, non_blocking=True)
        if kind == "object":
            return node[1]
        if kind == "namedtuple":
            return node[1](*(build(c) for c in node[2]))
        if kind in ("tuple", "list"):
            items = [build(c) for c in node[1]]
            return tuple(items) if kind == "tuple" else items
        if kind == "dict":
            values = {key: build(c) for key, c in zip(node[2], node[3])}
            return values if node[1] is dict else node[1](values)
        raise ValueError(f"unknown node {kind!r} in a collated batch")

    return build(structure)
