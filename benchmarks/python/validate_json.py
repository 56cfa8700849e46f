#!/usr/bin/python3
"""Validates gpufeed-bench JSON reports against docs/benchmarks/schema.json.

    validate_json.py --schema SCHEMA FILE_OR_DIR...     every report must conform
    validate_json.py --schema SCHEMA --mutate FILE      every broken copy of FILE must be rejected

A directory is searched recursively for *.json; there, files that do not claim to be reports
(no "tool": "gpufeed-bench", e.g. Google Benchmark's output) are listed and skipped. A file named
explicitly must be a report. --mutate is the negative test: FILE must conform, and each of a list
of deliberate breakages of it (a missing field, a wrong type, an out-of-range value, an unknown
command, ...) must not. Needs Debian's python3-jsonschema (scripts/setup installs it).
Exit status: 0 when all is as expected, 1 otherwise, 2 on bad usage.
"""

import argparse
import copy
import json
import pathlib
import sys

try:
    import jsonschema
except ImportError:  # pragma: no cover - reported, not tested
    sys.exit("validate_json.py: the jsonschema module is missing (apt-get install python3-jsonschema)")


def validator_for(schema_path):
    schema = json.loads(pathlib.Path(schema_path).read_text())
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    return cls(schema)


def errors_of(validator, document):
    return sorted(validator.iter_errors(document), key=lambda e: list(e.absolute_path))


def describe(error):
    where = "/".join(str(p) for p in error.absolute_path) or "(document)"
    return f"{where}: {error.message[:300]}"


def collect(paths):
    """(path, explicitly named) for each file to check."""
    for name in paths:
        path = pathlib.Path(name)
        if path.is_dir():
            for found in sorted(path.rglob("*.json")):
                yield found, False
        else:
            yield path, True


def validate_files(validator, paths):
    failed = 0
    checked = 0
    for path, explicit in collect(paths):
        try:
            document = json.loads(path.read_text())
        except (OSError, ValueError) as e:
            print(f"FAIL {path}: cannot read JSON: {e}")
            failed += 1
            continue
        if not explicit and not (isinstance(document, dict) and document.get("tool") == "gpufeed-bench"):
            print(f"skip {path}: not a gpufeed-bench report")
            continue
        errors = errors_of(validator, document)
        checked += 1
        if errors:
            failed += 1
            print(f"FAIL {path}: {len(errors)} error(s)")
            for error in errors[:20]:
                print(f"  {describe(error)}")
        else:
            version = document.get("schema_version")
            print(f"ok   {path} (schema_version {version}, {document.get('command')})")
    if checked == 0 and failed == 0:
        print("no report found")
        return 1
    print(f"{checked - failed if checked >= failed else 0} of {checked} conform")
    return 1 if failed else 0


def mutations(document):
    """(what, broken copy) pairs; each copy must be rejected by the schema."""

    def changed(what, edit):
        broken = copy.deepcopy(document)
        edit(broken)
        return what, broken

    first = lambda d: d["results"][0]  # noqa: E731
    out = [
        changed("results removed", lambda d: d.pop("results")),
        changed("results empty", lambda d: d.update(results=[])),
        changed("tool renamed", lambda d: d.update(tool="other-bench")),
        changed("unknown schema_version", lambda d: d.update(schema_version=99)),
        changed("unknown command", lambda d: d.update(command="benchmark-everything")),
        changed("date not ISO 8601", lambda d: d.update(date="22 Nov 2026")),
        changed("unknown top-level field", lambda d: d.update(extra=1)),
        changed("machine.cpus negative", lambda d: d["machine"].update(cpus=-1)),
        changed("machine.load_average short", lambda d: d["machine"].update(load_average=[1.0])),
        changed("config without verbose", lambda d: d["config"].pop("verbose")),
        changed("result without loader", lambda d: first(d).pop("loader")),
        changed("samples_per_s a string", lambda d: first(d).update(samples_per_s="fast")),
        changed("bytes_per_s negative", lambda d: first(d).update(bytes_per_s=-5.0)),
        changed("pinned_bytes fractional", lambda d: first(d).update(pinned_bytes=1.5)),
        changed("unknown result field", lambda d: first(d).update(speed=1)),
        changed("details.stall_fraction above 1", lambda d: first(d)["details"].update(stall_fraction=1.5)),
        changed("details.gpu_util a string", lambda d: first(d)["details"].update(gpu_util="high")),
        changed("details.h2d_bytes_per_s negative",
                lambda d: first(d)["details"].update(h2d_bytes_per_s=-1.0)),
        changed("goal with an unknown comparison",
                lambda d: d.update(goals=[{"metric": "x", "comparison": "==", "target": 1, "value": 1,
                                           "met": True}])),
        changed("goal without met",
                lambda d: d.update(goals=[{"metric": "x", "comparison": "<", "target": 1, "value": 0}])),
    ]
    if document.get("schema_version", 1) >= 2:
        out.append(changed("v2 without command_line", lambda d: d.pop("command_line")))
        out.append(changed("v2 result without cell", lambda d: first(d).pop("cell")))
    if document.get("schema_version", 1) >= 3:
        goal = {"metric": "x", "comparison": "<", "target": 1, "value": 0, "met": True}
        out.append(changed("v3 goal without statistic", lambda d: d.update(goals=[dict(goal)])))
        out.append(changed("goal with an unknown statistic", lambda d: d.update(
            goals=[dict(goal, statistic="ratio_of_medians")])))
    if document.get("command") == "overhead":
        gpufeed = lambda d: next(r for r in d["results"] if r["loader"] == "gpufeed")  # noqa: E731
        out.append(changed("overhead steady p99 negative",
                           lambda d: gpufeed(d)["details"]["steady"].update(p99_us=-1.0)))
        out.append(changed("overhead best case without max_us",
                           lambda d: gpufeed(d)["details"]["best_case"].pop("max_us")))
    if document.get("command") == "sweep":
        out.append(changed("sweep cell null", lambda d: first(d).update(cell=None)))
        out.append(changed("sweep config workers not a list", lambda d: d["config"].update(workers=2)))
        out.append(changed("sweep cell without workers", lambda d: first(d)["cell"].pop("workers")))
    else:
        out.append(changed("cell on a non-sweep row", lambda d: first(d).update(
            cell={"batch_size": 1, "workers": 1, "prefetch_depth": 1, "chosen_by": "grid"})))
        out.append(changed("config without batch_size", lambda d: d["config"].pop("batch_size")))
    return out


def check_mutations(validator, path):
    document = json.loads(pathlib.Path(path).read_text())
    errors = errors_of(validator, document)
    if errors:
        print(f"FAIL {path} itself does not conform:")
        for error in errors[:20]:
            print(f"  {describe(error)}")
        return 1
    accepted = 0
    for what, broken in mutations(document):
        rejected = errors_of(validator, broken)
        if rejected:
            print(f"rejected as expected: {what} ({describe(rejected[0])})")
        else:
            print(f"FAIL accepted a broken report: {what}")
            accepted += 1
    return 1 if accepted else 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--schema", required=True, help="docs/benchmarks/schema.json")
    parser.add_argument("--mutate", action="store_true",
                        help="negative test: every broken copy of the one FILE must be rejected")
    parser.add_argument("paths", nargs="+", help="report files or directories of them")
    args = parser.parse_args()
    validator = validator_for(args.schema)
    if args.mutate:
        if len(args.paths) != 1:
            parser.error("--mutate takes one file")
        return check_mutations(validator, args.paths[0])
    return validate_files(validator, args.paths)


if __name__ == "__main__":
    sys.exit(main())
