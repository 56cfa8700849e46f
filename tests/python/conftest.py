import os
import sys

# The suites import samples.py from this folder.
sys.path.insert(0, os.path.dirname(__file__))
