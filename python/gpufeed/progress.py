"""The progress line and the system monitor, from Python.

``for batch in gpufeed.progress(loader): ...`` wraps a loader as tqdm does and draws
``epoch 3 batch 120/500 | 5120 samples/s | stall 2% | GPU 85% | VRAM 12.3/24.0 GB | CPU 45% |
RAM 18.4/64.0 GB`` (redrawn in place on a terminal, logged every 30 s elsewhere); at the end
of the epoch it logs the epoch's summary, and the diagnosis as a warning when the loader, not
the training step, sets the pace. The monitor warns when the GPU's utilization stays low.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from . import _gpufeed

if TYPE_CHECKING:
    from collections.abc import Iterator

    from typing_extensions import Self

    from .loader import DataLoader

__all__ = ["progress", "SystemMonitor"]


class SystemMonitor:
    """GPU, VRAM, CPU and RAM sampled on a thread of its own (NVML is loaded at run time when
    present); warns in the log when the GPU's utilization stays low. ``latest()`` is the last
    sample as a dict. A context manager: ``with`` stops it at the end.

    Args:
        interval_s: Seconds between samples.
        history: Samples kept.
        gpu_index: The GPU sampled.
        low_utilization_window_s: How long the GPU's utilization must stay low before the
            monitor warns.
        low_utilization_percent: What low is, in percent.
    """

    def __init__(self, interval_s: float = 1.0, history: int = 600, gpu_index: int = 0,
                 low_utilization_window_s: float = 30.0,
                 low_utilization_percent: float = 30.0) -> None:
        self._native = _gpufeed.SystemMonitor(interval_s, history, gpu_index,
                                              low_utilization_window_s, low_utilization_percent)

    @property
    def gpu_available(self) -> bool:
        """Whether NVML was found and sees the GPU."""
        return self._native.gpu_available

    def latest(self) -> dict[str, Any] | None:
        """The last sample (GPU, VRAM, CPU and RAM figures by name), None before the first."""
        text = self._native.latest_json()
        return None if text is None else json.loads(text)

    def stop(self) -> None:
        """Stops the sampling thread."""
        self._native.stop()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def progress(loader: DataLoader[Any], monitor: SystemMonitor | bool | None = True,
             tty: bool | None = None, interval_s: float = 0.5) -> Iterator[Any]:
    """Yields ``loader``'s batches of one epoch, drawing the progress line as it goes; at the
    end of the epoch, logs its summary, and the diagnosis as a warning when the loader, not the
    training step, sets the pace.

    Args:
        loader: The loader; one epoch of it is iterated.
        monitor: True: a SystemMonitor of its own, stopped at the end; a SystemMonitor: that
            one's figures; None (or False): no GPU, CPU and RAM figures.
        tty: Redraw the line in place (True) or log it every 30 s (False); None: in place
            where the standard error is a terminal.
        interval_s: Seconds between redraws in place.
    """
    line = _gpufeed.ProgressLine(tty, interval_s)
    own_monitor = SystemMonitor() if monitor is True else None
    mon = own_monitor if own_monitor is not None else (
        monitor if isinstance(monitor, SystemMonitor) else None)
    try:
        iterator = iter(loader)
        epoch = loader._current_or_next_epoch()
        for batch in iterator:
            yield batch
            line.update(loader._core, None if mon is None else mon._native)
        line.end_epoch(loader._core, epoch)
        d = loader.diagnose()
        if d.kind not in ("gpu_bound", "not_enough_data"):
            _gpufeed.log("warn", d.sentence)
    finally:
        if own_monitor is not None:
            own_monitor.stop()
