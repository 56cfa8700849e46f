"""The progress line and the system monitor, from Python.

``for batch in gpufeed.progress(loader): ...`` wraps a loader as tqdm does and draws
``epoch 3 batch 120/500 | 5120 samples/s | stall 2% | GPU 85% | VRAM 12.3/24.0 GB | CPU 45% |
RAM 18.4/64.0 GB`` (redrawn in place on a terminal, logged every 30 s elsewhere); at the end
of the epoch it logs the epoch's summary, and the diagnosis as a warning when the loader, not
the training step, sets the pace. The monitor warns when the GPU's utilization stays low.
"""

import json

from . import _gpufeed

__all__ = ["progress", "SystemMonitor"]


class SystemMonitor:
    """GPU, VRAM, CPU and RAM sampled every ``interval_s`` on a thread of its own (NVML is
    loaded at run time when present). ``latest()`` is the last sample as a dict."""

    def __init__(self, interval_s=1.0, history=600, gpu_index=0, low_utilization_window_s=30.0,
                 low_utilization_percent=30.0):
        self._native = _gpufeed.SystemMonitor(interval_s, history, gpu_index,
                                              low_utilization_window_s, low_utilization_percent)

    @property
    def gpu_available(self):
        return self._native.gpu_available

    def latest(self):
        text = self._native.latest_json()
        return None if text is None else json.loads(text)

    def stop(self):
        self._native.stop()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()


def progress(loader, monitor=True, tty=None, interval_s=0.5):
    """Yields ``loader``'s batches of one epoch, drawing the progress line as it goes."""
    line = _gpufeed.ProgressLine(tty, interval_s)
    own_monitor = SystemMonitor() if monitor is True else None
    mon = own_monitor if own_monitor is not None else (monitor or None)
    try:
        iterator = iter(loader)
        epoch = loader._epoch
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
