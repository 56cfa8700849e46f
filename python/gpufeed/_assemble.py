"""Batches rebuilt in the structure of the dataset's samples, as torch's default collate would.

A structure is what gpufeed._gpufeed.PythonDataset.structure describes (nested tuples of
("leaf", field), ("tuple", [...]), ("list", [...]), ("dict", type, keys, [...]),
("namedtuple", type, [...])). torch's default collate turns tuples into lists, keeps lists,
named tuples and mapping types, and a bare leaf stays a bare tensor: so does this.
"""

from collections import namedtuple

StepInfo = namedtuple(
    "StepInfo", ["step", "micro", "micros_in_step", "samples_in_step", "last_micro", "short_step"]
)
StepInfo.__doc__ = """Where a batch stands in gradient accumulation: optimizer step ``step``,
micro-batch ``micro`` of ``micros_in_step``; divide the summed loss by ``samples_in_step``; step
the optimizer after the batch whose ``last_micro`` is true."""


class BatchList(list):
    """A batch whose samples were tuples or lists: a list of tensors, with ``step_info``."""

    __slots__ = ("step_info",)


class BatchDict(dict):
    """A batch whose samples were dicts: a dict of tensors, with ``step_info``."""

    __slots__ = ("step_info",)


def build(structure, tensors, step_info):
    """The batch for ``structure`` from one tensor per field; the outermost container carries
    ``step_info`` where it can (a bare tensor or a named tuple cannot)."""
    out = _build(structure, tensors, top=True)
    if isinstance(out, (BatchList, BatchDict)):
        out.step_info = step_info
    return out


def _build(node, tensors, top=False):
    kind = node[0]
    if kind == "leaf":
        return tensors[node[1]]
    if kind in ("tuple", "list"):
        items = [_build(child, tensors) for child in node[1]]
        return BatchList(items) if top else items
    if kind == "namedtuple":
        return node[1](*(_build(child, tensors) for child in node[2]))
    if kind == "dict":
        mapping_type, keys, children = node[1], node[2], node[3]
        values = {key: _build(child, tensors) for key, child in zip(keys, children)}
        if mapping_type is dict:
            return BatchDict(values) if top else values
        try:
            return mapping_type(values)
        except TypeError:  # a mapping that cannot be built from a dict, as torch does
            return values
    raise ValueError(f"unknown structure node {kind!r}")
