"""gpufeed.Diagnosis: what DataLoader.diagnose() says of the bottleneck."""

from __future__ import annotations

__all__ = ["Diagnosis"]


class Diagnosis(tuple[str, str]):
    """The bottleneck, as ``DataLoader.diagnose()`` finds it: a ``(kind, sentence)`` pair.

    Args:
        kind: ``"gpu_bound"``, ``"input_bound"``, ``"gil_bound"``, ... (docs/diagnosis.md).
        sentence: The evidence and the fix; ``str(diagnosis)`` is this sentence.
    """

    __slots__ = ()

    def __new__(cls, kind: str, sentence: str) -> Diagnosis:
        return super().__new__(cls, (kind, sentence))

    @property
    def kind(self) -> str:
        """``"gpu_bound"``, ``"input_bound"``, ``"gil_bound"``, ... (docs/diagnosis.md)."""
        return self[0]

    @property
    def sentence(self) -> str:
        """The evidence and the fix."""
        return self[1]

    def __getnewargs__(self) -> tuple[str, str]:
        # pickle and copy make a tuple subclass again with its items as __new__'s arguments.
        return (self[0], self[1])

    def __repr__(self) -> str:
        return f"Diagnosis(kind={self.kind!r}, sentence={self.sentence!r})"

    def __str__(self) -> str:
        return self.sentence
