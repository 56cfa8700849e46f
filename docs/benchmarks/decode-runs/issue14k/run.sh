#!/bin/bash
# ABBA: main (68141a5) vs new (the luma blocks outside the crop left out of the planar decode),
# 12 runs on the generated 320x256 set, 8 on the photographs.
../abba.sh /tmp/e16/final "main new new main main new new main main new new main" \
  "main new new main main new new main"
