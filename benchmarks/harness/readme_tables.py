#!/usr/bin/env python3
"""Write the README's benchmark tables from the curated results.

    readme_tables.py [--check] [--readme README.md] [--results benchmarks/results]

Each host folder of the curated results (`benchmarks/results/<host>/`, for example `amd/`
and `intel/`) holds the harness's `latest.json` and, where measured, the instruction
counts of `instructions.py` (`instructions.json`). This script turns each into one
Markdown table and puts it between the README's markers `<!-- results:<host> -->` and
`<!-- /results:<host> -->`. With `--check` it writes nothing and exits 1 when the README
differs from what it would write (`test/test_readme_tables.py` runs that), so the tables
cannot drift from the data.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

import statistics

from report import paired_ratios, reference
from scenarios import EXECUTORS, headline

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / 'benchmarks' / 'results'
README = ROOT / 'README.md'
# Host folders and their marker names, in the order the README shows them.
HOSTS = ('amd', 'intel')
# The rows the README shows, where a set has them, in this order; latest.md in each
# folder has every row.
HEADLINES = (
    'throughput_0B', 'throughput_0B_be', 'throughput_0B_xproc', 'cpu_10kHz',
    'cpu_10kHz_dedicated', 'latency_1kHz', 'latency_1kHz_dedicated', 'fanout',
    'fanout_1kHz', 'fanout_shared_1kHz', 'scaling_1000', 'service_rtt', 'action_rtt',
    'action_idle', 'timer_1kHz', 'timers_1000', 'robot_mix', 'mixed_criticality_dedicated',
    'latency_100Hz_1MB', 'throughput_1MB', 'nodes_100', 'two_hosts_latency_1kHz',
)


def _cell(value: float) -> str:
    if value >= 10_000:
        return f'{value / 1000:.0f}k'
    if value >= 100:
        return f'{value:.0f}'
    return f'{value:.3g}'


def timed_table(document: dict) -> list[str]:
    """One row per scenario: each executor's median headline, and the median of
    rclrs_tokio's paired ratios against the reference (rclcpp_events where it ran; a
    variant row such as `_dedicated` against the reference's row of its base scenario)."""
    runs = [r for r in document['runs'] if r.get('metrics')]
    ref = reference(runs)
    executors = [e for e in EXECUTORS if any(r['executor'] == e for r in runs)]
    by = {(r['scenario'], r['executor']): r for r in runs}
    paired = paired_ratios(runs)
    header = ['scenario', 'metric', *executors, f'rclrs_tokio / {ref}']
    lines = ['| ' + ' | '.join(header) + ' |', '|' + ' --- |' * len(header)]
    measured = {r['scenario'] for r in runs}
    for scenario in (s for s in HEADLINES if s in measured):
        metric, _ = headline(scenario)
        cells = []
        for executor in executors:
            value = (by.get((scenario, executor)) or {}).get('metrics', {}).get(metric)
            cells.append('' if value is None else _cell(value))
        ratios = paired.get((scenario, 'rclrs_tokio'))
        ratio = f'{statistics.median(ratios):.2f}×' if ratios else ''
        lines.append('| ' + ' | '.join([f'`{scenario}`', metric, *cells, ratio]) + ' |')
    return lines


def instructions_table(document: dict) -> list[str]:
    """Receive-side instructions per message: one row per scenario, one column per
    executor."""
    counts = {(r['scenario'], r['executor']): (r.get('per_message') or {}).get('receive_side')
              for r in document['runs']}
    executors = [e for e in EXECUTORS if any(e == x for _, x in counts)]
    lines = ['| receive-side instructions a message | ' + ' | '.join(executors) + ' |',
             '|' + ' --- |' * (len(executors) + 1)]
    for scenario in dict.fromkeys(s for s, _ in counts):
        cells = [counts.get((scenario, e)) for e in executors]
        lines.append(f'| `{scenario}` | '
                     + ' | '.join('' if c is None else f'{c:,}' for c in cells) + ' |')
    return lines


def host_block(folder: Path) -> list[str]:
    document = json.loads((folder / 'latest.json').read_text())
    machine = document['machine']
    link = f'benchmarks/results/{folder.name}'
    lines = [f'**{machine["cpu"]}, {machine["cores"]} cores, ROS {machine["ros_distro"]}, '
             f'commit {machine.get("commit", "?")}** ({document.get("date", "")[:10]}; '
             f'[`{link}/`]({link}/README.md)). '
             'Medians; the ratio is the median of paired per-repetition ratios; every row '
             f'in [`{link}/latest.md`]({link}/latest.md).', '']
    lines += timed_table(document)
    instructions = folder / 'instructions.json'
    if instructions.exists():
        counted = json.loads(instructions.read_text())
        lines += ['', f'Under callgrind at {counted["method"]["rate_hz"]} Hz '
                  f'(commit {counted["machine"].get("commit", "?")}):', '']
        lines += instructions_table(counted)
    return lines


def rewritten(readme: str, results: Path) -> str:
    for host in HOSTS:
        folder = results / host
        start, end = f'<!-- results:{host} -->', f'<!-- /results:{host} -->'
        if start not in readme:
            continue
        if (folder / 'latest.json').exists():
            body = '\n'.join(host_block(folder))
        else:
            body = f'No current {host} set.'
        readme = re.sub(re.escape(start) + r'.*?' + re.escape(end),
                        lambda _: f'{start}\n{body}\n{end}', readme, flags=re.S)
    return readme


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--check', action='store_true',
                        help='exit 1 if the README differs from the results; write nothing')
    parser.add_argument('--readme', type=Path, default=README)
    parser.add_argument('--results', type=Path, default=RESULTS)
    args = parser.parse_args()
    current = args.readme.read_text()
    wanted = rewritten(current, args.results)
    if args.check:
        if current != wanted:
            print(f'{args.readme}: benchmark tables differ from {args.results}; '
                  'run benchmarks/harness/readme_tables.py', file=sys.stderr)
            return 1
        return 0
    args.readme.write_text(wanted)
    return 0


if __name__ == '__main__':
    sys.exit(main())
