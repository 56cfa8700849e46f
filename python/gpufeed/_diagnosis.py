"""gpufeed.Diagnosis: what DataLoader.diagnose() says of the bottleneck."""

__all__ = ["Diagnosis"]


class Diagnosis(tuple):
    """The bottleneck: ``kind`` ("gpu_bound", "input_bound", "gil_bound", ...) and ``sentence``
    (the evidence and the fix)."""

    __slots__ = ()

    def __new__(cls, kind, sentence):
        return super().__new__(cls, (kind, sentence))

    kind = property(lambda self: self[0])
    sentence = property(lambda self: self[1])

    def __repr__(self):
        return f"Diagnosis(kind={self.kind!r}, sentence={self.sentence!r})"

    def __str__(self):
        return self.sentence
