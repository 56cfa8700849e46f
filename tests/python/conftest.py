import os
import sys

# The suites import samples.py and processes.py from this folder.
sys.path.insert(0, os.path.dirname(__file__))


import pytest  # noqa: E402


@pytest.fixture(autouse=True)
def _gpufeed_logs_at_info():
    """What a test reads of gpufeed's log does not depend on GPUFEED_LOG_LEVEL in its
    environment: every test starts at "info"."""
    import gpufeed

    gpufeed.set_log_level("info")
    yield
