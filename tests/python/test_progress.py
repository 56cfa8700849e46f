"""The progress line and the system monitor from Python."""

import time

import gpufeed
from samples import Indices, indices_of


def test_progress_yields_every_batch_and_draws_the_line(capfd):
    loader = gpufeed.DataLoader(Indices(400), batch_size=4, num_workers=2)
    got = []
    for batch in gpufeed.progress(loader, monitor=True, tty=True, interval_s=0.001):
        got.append(batch)
        time.sleep(0.002)  # so that the line is due between batches
    assert indices_of(got) == list(range(400))
    err = capfd.readouterr().err
    assert "samples/s" in err and "epoch 0" in err and "\r" in err  # redrawn in place
    assert "CPU" in err and "RAM" in err  # the monitor's fields


def test_the_system_monitor_samples_this_machine():
    with gpufeed.SystemMonitor(interval_s=0.05) as monitor:
        deadline = time.monotonic() + 10
        while monitor.latest() is None and time.monotonic() < deadline:
            time.sleep(0.02)
        sample = monitor.latest()
    assert sample is not None
    assert sample["ram_total_bytes"] > 0 and sample["process_rss_bytes"] > 0
