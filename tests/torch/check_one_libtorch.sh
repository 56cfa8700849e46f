#!/bin/sh
# check_one_libtorch.sh PROGRAM LIBTORCH: every libtorch and libc10 library PROGRAM loads comes
# from LIBTORCH's folder. A program that loads two torches' libc10 (a pip torch's libtorch beside
# Debian's libc10.so.1.13) aborts at start-up in c10's dispatcher.
set -eu
program=$1
want=$(dirname "$(readlink -f "$2")")
status=0
found=0
for path in $(ldd "$program" | awk '$1 ~ /^lib(c10|torch)/ && $3 ~ /^\// { print $3 }'); do
  found=$((found + 1))
  dir=$(dirname "$(readlink -f "$path")")
  if [ "$dir" != "$want" ]; then
    echo "$program loads $path (in $dir), not libtorch's own from $want"
    status=1
  fi
done
if [ "$found" -eq 0 ]; then
  echo "$program loads no libtorch or libc10 library that ldd resolves"
  status=1
fi
[ "$status" -ne 0 ] || echo "$program loads its $found torch libraries from $want"
exit "$status"
