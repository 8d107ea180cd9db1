#!/usr/bin/env python3
"""Print the lines that say why a `colcon test` run failed, from colcon's test logs.

`make test` runs this after `colcon test-result --verbose` when a test failed, so that
the last lines of the run name the failed tests and their first messages: a CI service
that keeps only the end of a long log then still shows what went wrong. Without a
failure it prints nothing.

    python3 tools/ci/failure_digest.py [--log-dir log/latest_test] [--max-lines 40]
"""

import argparse
import re
import sys
from pathlib import Path

# What a failure looks like in each test runner's output, and how many lines after a
# match to keep (a panic's message follows its location line).
MARKERS = [
    (re.compile(r"^test .+ \.\.\. FAILED$"), 0),  # libtest: a failed test
    (re.compile(r"panicked at "), 1),  # libtest: where and why
    (re.compile(r"test watchdog"), 0),  # tests/support/watchdog.rs
    (re.compile(r"process didn't exit successfully"), 0),  # cargo: a crashed binary
    (re.compile(r"^error: test failed"), 0),  # cargo
    (re.compile(r"^(FAILED|ERROR) \S+"), 0),  # pytest's short summary
    (re.compile(r"^E +\S"), 0),  # pytest: an assertion's explanation
    (re.compile(r"\*\*\*(Failed|Timeout|Exception)"), 0),  # ctest
]


def digest(lines, max_lines):
    """The failure lines of one log, at most `max_lines`, in order, each once."""
    kept, seen, follow = [], set(), 0
    for line in lines:
        line = line.rstrip("\n")
        match = next((extra for pattern, extra in MARKERS if pattern.search(line)), None)
        if match is None and follow == 0:
            continue
        follow = match if match is not None else follow - 1
        if line.strip() and line not in seen:
            seen.add(line)
            kept.append(line)
        if len(kept) >= max_lines:
            kept.append("... (more in the log)")
            break
    return kept


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--log-dir", type=Path, default=Path("log/latest_test"),
                        help="colcon's test log directory (default: %(default)s)")
    parser.add_argument("--max-lines", type=int, default=40,
                        help="lines kept per package (default: %(default)s)")
    args = parser.parse_args(argv)
    if args.max_lines < 1:
        parser.error("--max-lines must be at least 1")
    if not args.log_dir.is_dir():
        print(f"failure digest: no test logs in {args.log_dir}", file=sys.stderr)
        return 0
    for log in sorted(args.log_dir.glob("*/stdout_stderr.log")):
        with open(log, encoding="utf-8", errors="replace") as stream:
            kept = digest(stream, args.max_lines)
        if kept:
            print(f"--- failure digest: {log.parent.name} ({log}) ---")
            print("\n".join(kept))
    return 0


if __name__ == "__main__":
    sys.exit(main())
