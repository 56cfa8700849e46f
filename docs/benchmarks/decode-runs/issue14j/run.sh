#!/bin/bash
# ABBA: main (3b3d8f7) vs new (5286331: decode_planes transforms only the iMCUs under the crop,
# and baseline JPEGs take the planar path for every crop), 12 runs on the generated 320x256 set,
# 8 on the photographs. (Run as a loop of its own; the same runs as ../abba.sh makes them.)
../abba.sh /tmp/e15/final "main new new main main new new main main new new main" \
  "main new new main main new new main"
