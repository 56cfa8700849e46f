#!/usr/bin/env python3
"""Checks that each program in tests/torch/refused fails to compile against gpufeed::torch, and
that its first compiler error is gpufeed's static_assert, holding the expected words.

Usage: check_refusals.py COMPILE_COMMANDS REFERENCE_SOURCE (FILE=WORDS)...
The compile command is the one of REFERENCE_SOURCE (a gpufeed::torch test) in
COMPILE_COMMANDS, with the refused file as the source and -fsyntax-only."""
import json
import shlex
import subprocess
import sys


def main():
    commands, reference, cases = sys.argv[1], sys.argv[2], sys.argv[3:]
    entry = next(c for c in json.load(open(commands)) if c['file'].endswith(reference))
    args = shlex.split(entry['command'])
    for flag in ('-o', '-c'):
        i = args.index(flag)
        del args[i:i + 2]
    failed = 0
    for case in cases:
        source, words = case.split('=', 1)
        run = subprocess.run(args + ['-fsyntax-only', source], cwd=entry['directory'],
                             capture_output=True, text=True)
        errors = [line for line in run.stderr.splitlines() if 'error:' in line]
        first = errors[0] if errors else ''
        ok = run.returncode != 0 and 'gpufeed::torch' in first and words in first
        print(('ok    ' if ok else 'FAIL  ') + source + '\n      first error: ' +
              (first or '(none: it compiled)'))
        failed += 0 if ok else 1
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
