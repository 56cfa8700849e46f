#!/usr/bin/python3
"""Checks that `gpufeed-bench [SUBCOMMAND] --help` explains every option it registers.

    check_help.py GPUFEED_BENCH COMMAND      (COMMAND: gpufeed-bench for the tool itself, or a
                                              subcommand: overhead, memcpy, compare, sweep, ...)

The registered options come from `gpufeed-bench --list-options` (the parser's own list: command,
name, flag or value, default). For COMMAND, --help must exit with status 0, and each of its
options must appear in the help with a description of at least a few words; an option that takes
a value must show its default, or say in its description what happens by default. For the tool
itself, every subcommand must also be named in the help. Exit status 0 when all is explained.
"""

import re
import subprocess
import sys


def run(args):
    done = subprocess.run(args, capture_output=True, text=True, timeout=30, check=False)
    return done.returncode, done.stdout + done.stderr


def option_lines(help_text, name):
    """The help's lines for option `name`: its own line and any continuation lines."""
    lines = help_text.splitlines()
    for i, line in enumerate(lines):
        stripped = line.strip()
        if not stripped.startswith("-"):
            continue
        names = re.split(r"\s", stripped, maxsplit=1)[0]
        # "-v,--verbose", "--batch-size", "--workers N:INT in [1 - 1024]=2"
        if name in re.split(r"[,=\s]", names):
            indent = len(line) - len(line.lstrip())
            block = [stripped]
            for follow in lines[i + 1:]:
                follow_indent = len(follow) - len(follow.lstrip())
                if not follow.strip() or follow_indent <= indent or follow.strip().startswith("-"):
                    break
                block.append(follow.strip())
            return " ".join(block)
    return None


def description_of(block, name):
    """The words of `block` after the option's names, type and default."""
    rest = block.split(None, 1)[1] if " " in block else ""
    # Drop CLI11's type / check / default tokens that follow the names (upper case, brackets, =).
    words = rest.split()
    while words and (re.fullmatch(r"[A-Z0-9_:,.\[\]{}()=<>+\-.|/']+", words[0]) or words[0] in
                     ("in", "-", "[", "]") or words[0].startswith(("=", "[", "{"))):
        words.pop(0)
    return " ".join(words)


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    binary, command = sys.argv[1], sys.argv[2]
    status, listing = run([binary, "--list-options"])
    if status != 0:
        print(f"FAIL {binary} --list-options exited with {status}:\n{listing}")
        return 1
    options = []
    commands = set()
    for line in listing.splitlines():
        parts = line.split("\t")
        if len(parts) != 4:
            print(f"FAIL unexpected --list-options line: {line!r}")
            return 1
        commands.add(parts[0])
        if parts[0] == command:
            options.append(parts[1:])
    if not options:
        print(f"FAIL {command}: no options listed (commands: {sorted(commands)})")
        return 1

    args = [binary, "--help"] if command == "gpufeed-bench" else [binary, command, "--help"]
    status, help_text = run(args)
    if status != 0:
        print(f"FAIL {' '.join(args)} exited with {status}:\n{help_text}")
        return 1

    failures = []
    for name, kind, default in options:
        block = option_lines(help_text, name)
        if block is None:
            failures.append(f"{name}: not in the help")
            continue
        description = description_of(block, name)
        if len(description.split()) < 3:
            failures.append(f"{name}: no real description in {block!r}")
            continue
        if kind == "value" and name not in ("--help",):
            if default and default not in block:
                failures.append(f"{name}: default {default!r} not shown in {block!r}")
            elif not default and "default" not in description.lower():
                failures.append(f"{name}: no default shown, and its description does not say "
                                f"what the default is: {block!r}")
        print(f"ok   {command} {name}: {description[:90]}")
    if command == "gpufeed-bench":
        for sub in sorted(commands - {"gpufeed-bench"}):
            if not re.search(rf"^\s+{re.escape(sub)}\s+\S", help_text, re.MULTILINE):
                failures.append(f"subcommand {sub}: not described in the help")
    for failure in failures:
        print(f"FAIL {command} {failure}")
    print(f"{len(options) - len([f for f in failures if f.startswith('-')])} of {len(options)} "
          f"options of {command} explained")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
