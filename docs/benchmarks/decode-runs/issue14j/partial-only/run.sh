#!/bin/bash
# ABBA: main (3b3d8f7) vs new (the partial planar decode with the 0.5 threshold), 8 runs on the
# generated 320x256 set, 4 on the photographs. (Run as a loop of its own; the same runs as
# ../../abba.sh makes them.)
../../abba.sh /tmp/e15 "main new new main main new new main" "main new new main"
