"""Batches rebuilt in the structure of the dataset's samples, as torch's default collate would.

A structure is what gpufeed._gpufeed.PythonDataset.structure describes (nested tuples of
("leaf", field), ("text", field), ("tuple", [...]), ("list", [...]), ("dict", type, keys, [...]),
("namedtuple", type, [...])). torch's default collate turns tuples into lists, keeps lists,
named tuples and mapping types, a bare leaf stays a bare tensor, and str or bytes leaves become
the samples' values (a tuple inside tuples and lists, else a list): so does this.
"""

from __future__ import annotations

from typing import Any, NamedTuple


class StepInfo(NamedTuple):
    """Where a batch stands in gradient accumulation: optimizer step ``step``, micro-batch
    ``micro`` of ``micros_in_step``; divide the summed loss by ``samples_in_step``; step the
    optimizer after the batch whose ``last_micro`` is true.

    Args:
        step: The optimizer step within the epoch.
        micro: This batch's index within its step.
        micros_in_step: Micro-batches in this step (``accumulation_steps``, or fewer for a short
            last step).
        samples_in_step: Samples in the whole step: divide the summed loss by it.
        last_micro: Step the optimizer after this batch.
        short_step: This step has fewer than ``accumulation_steps x batch_size`` samples.
    """

    step: int
    micro: int
    micros_in_step: int
    samples_in_step: int
    last_micro: bool
    short_step: bool


class BatchList(list[Any]):
    """A batch whose samples were tuples or lists: a list of tensors, with ``step_info``."""

    __slots__ = ("step_info",)
    step_info: StepInfo


class BatchDict(dict[Any, Any]):
    """A batch whose samples were dicts: a dict of tensors, with ``step_info``."""

    __slots__ = ("step_info",)
    step_info: StepInfo


def text_fields(structure: tuple[Any, ...]) -> set[int]:
    """The fields of ``structure`` that hold text (their batch field holds ids, not data)."""
    kind = structure[0]
    if kind == "text":
        return {structure[1]}
    if kind == "leaf":
        return set()
    children = structure[-1]
    return set().union(*(text_fields(child) for child in children))


def build(structure, tensors, step_info, texts=None):
    """The batch for ``structure`` from one tensor per field (``texts(field)``: the list of a
    text field's values); the outermost container carries ``step_info`` where it can (a bare
    tensor, a bare list of text or a named tuple cannot)."""
    out = _build(structure, tensors, texts, top=True)
    if isinstance(out, (BatchList, BatchDict)):
        out.step_info = step_info
    return out


def unbatched(structure, tensors, text):
    """One sample for ``structure``, as torch's default_convert gives it with batch_size=None:
    its arrays as tensors (numbers as 0-d tensors), tuples as lists, str and bytes as they are
    (``text(field)``: a text field's value)."""
    return _build(structure, tensors, lambda field: _Single(text(field)), top=False)


class _Single:
    """A text value standing where _build expects the list of a batch's values."""

    def __init__(self, value):
        self.value = value


def _build(node, tensors, texts, top=False, in_sequence=False):
    kind = node[0]
    if kind == "leaf":
        return tensors[node[1]]
    if kind == "text":
        # torch's collate returns the values it was given: the tuple zip() made of them inside
        # a tuple, list or named tuple, the list of samples' values at the top or in a dict.
        values = texts(node[1])
        if isinstance(values, _Single):
            return values.value
        return tuple(values) if in_sequence else values
    if kind in ("tuple", "list"):
        items = [_build(child, tensors, texts, in_sequence=True) for child in node[1]]
        return BatchList(items) if top else items
    if kind == "namedtuple":
        return node[1](*(_build(child, tensors, texts, in_sequence=True) for child in node[2]))
    if kind == "dict":
        mapping_type, keys, children = node[1], node[2], node[3]
        values = {key: _build(child, tensors, texts) for key, child in zip(keys, children)}
        if mapping_type is dict:
            return BatchDict(values) if top else values
        try:
            return mapping_type(values)
        except TypeError:  # a mapping that cannot be built from a dict, as torch does
            return values
    raise ValueError(f"unknown structure node {kind!r}")
