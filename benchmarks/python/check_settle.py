#!/usr/bin/env python3
"""paired.settle() waits for work left running in the process tree: a child process that burns
0.5 s of CPU is still running right after it starts (the control: without settle() a timed run
would begin beside it) and has finished when settle() returns. A check of the benchmark harness,
run by ctest as bench.python_settle."""

import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import paired  # noqa: E402

BURN = "import time\nt = time.process_time()\nwhile time.process_time() - t < 0.5:\n    pass\n"


def main():
    child = subprocess.Popen([sys.executable, "-c", BURN])
    try:
        if child.poll() is not None:
            sys.exit("check_settle: the busy child ended before settle() was called")
        paired.settle(limit=60.0)
        if child.poll() is None:
            sys.exit("check_settle: settle() returned while a child process was still busy")
    finally:
        child.kill()
        child.wait()
    print("settle() waited for the busy child")


if __name__ == "__main__":
    main()
