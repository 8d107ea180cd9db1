#!/usr/bin/env python3
"""The reliability suite, side by side: each case against each executor, one process each.

    stress.py [--full] [--cases r1,r2,...] [--executors tokio,tokio_dedicated,basic]
              [--r7-churn same-names,none,unique-names] [--r7-seconds S]
              [--valgrind-rounds N] [--output-dir benchmarks/results/stress]

Runs the installed `stress` binary (benchmarks/src/bin/stress.rs; the cases are
described in benchmarks/src/stress.rs) once per (case, executor), in sequence so that
no two runs share the machine, and writes latest.json (machine, rmw, command, every
result line) and latest.md (a side-by-side table of every figure) into the output
directory. With --valgrind-rounds N, R2 also runs N rounds under valgrind for the Tokio
executor and records its error count. Results are written after every run, so a late
failure loses nothing. Exits non-zero if a Tokio-executor case failed (either mode).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench import ROOT, machine  # noqa: E402
from scenarios import find_installed  # noqa: E402

CASES = {
    'r1': 'r1-start-stop',
    'r2': 'r2-churn',
    'r3': 'r3-panic-storm',
    'r4': 'r4-shutdown',
    'r5': 'r5-bad-input',
    'r6': 'r6-sim-clock',
    'r7': 'r7-soak',
}
# tokio_dedicated: the Tokio executor with every Worker on a thread of its own.
EXECUTORS = ['tokio', 'tokio_dedicated', 'basic']
# The basic executor spends about 0.14 s per churn round (its wait set is rebuilt for
# every entity); the full R2 count would take it over 20 minutes.
BASIC_R2_ROUNDS = 2000


def run_case(binary: Path, case: str, executor: str, extra: list[str], full: bool,
             prefix: list[str] | None = None, timeout: float = 3600) -> dict:
    cmd = (prefix or []) + [str(binary), CASES[case], '--executor', executor] + extra
    if full:
        cmd.append('--full')
    print('$', shlex.join(cmd), flush=True)
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as err:
        return {'case': case, 'executor': executor, 'passed': False, 'applicable': True,
                'figures': {}, 'failures': [f'no result within {timeout:.0f} s'],
                'command': shlex.join(cmd), 'stderr_tail': str(err.stderr or '')[-2000:]}
    lines = [line for line in proc.stdout.splitlines() if line.startswith('{')]
    if lines:
        result = json.loads(lines[-1])
    else:
        result = {'case': case, 'executor': executor, 'passed': False, 'applicable': True,
                  'figures': {}, 'failures': [f'exit {proc.returncode} without a result line']}
    result['command'] = shlex.join(cmd)
    result['exit_status'] = proc.returncode
    if proc.returncode != 0 or prefix:
        result['stderr_tail'] = proc.stderr[-2000:]
    return result


def valgrind_errors(result: dict) -> int | None:
    match = re.search(r'ERROR SUMMARY: (\d+) errors', result.get('stderr_tail', '') or '')
    return int(match.group(1)) if match else None


def markdown(report: dict) -> str:
    m = report['machine']
    out = [
        '# Reliability suite',
        '',
        f"{report['date']} on {m['cpu']} ({m['cores']} cores), rmw {report['rmw']}, "
        f"commit {m.get('commit') or 'unknown'}.",
        '',
        f"Command: `{report['command']}`",
        '',
    ]
    for case in sorted({r['case_key'] for r in report['results']}):
        rows = [r for r in report['results'] if r['case_key'] == case]
        labels = [f"{r['executor']}{' (' + r['variant'] + ')' if r.get('variant') else ''}"
                  for r in rows]
        out += [f'## {case}', '', '| | ' + ' | '.join(labels) + ' |',
                '| --- |' + ' --- |' * len(rows)]
        verdicts = []
        for r in rows:
            if not r.get('applicable', True):
                verdicts.append('n/a')
            else:
                verdicts.append('pass' if r.get('passed') else 'FAIL')
        out.append('| result | ' + ' | '.join(verdicts) + ' |')
        names = sorted({k for r in rows for k in r.get('figures', {})})
        for name in names:
            cells = []
            for r in rows:
                value = r.get('figures', {}).get(name, '')
                cells.append(str(value).replace('|', '/'))
            out.append(f'| {name} | ' + ' | '.join(cells) + ' |')
        out.append('| seconds | ' + ' | '.join(f"{r.get('seconds', 0):.1f}" for r in rows) + ' |')
        out.append('')
        for r, label in zip(rows, labels):
            for failure in r.get('failures', []):
                out.append(f'- {label}: {failure}')
            if r.get('note'):
                out.append(f"- {label}: {r['note']}")
        out.append('')
    return '\n'.join(out)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--full', action='store_true', help='the full counts and durations')
    parser.add_argument('--cases', default=','.join(CASES), help='comma-separated: r1,...,r7')
    parser.add_argument('--executors', default=','.join(EXECUTORS))
    parser.add_argument('--r7-churn', default='same-names',
                        help='R7 churn variants, comma-separated (same-names, none, unique-names); '
                             'the first runs for every executor, the others for tokio only')
    parser.add_argument('--r7-seconds', type=int, help='R7 duration (default: 30, --full 600)')
    parser.add_argument('--valgrind-rounds', type=int, default=0,
                        help='also run R2 with this many rounds under valgrind (tokio)')
    parser.add_argument('--output-dir', type=Path, default=ROOT / 'benchmarks' / 'results' / 'stress')
    args = parser.parse_args(argv)
    cases = [c for c in args.cases.split(',') if c]
    executors = [e for e in args.executors.split(',') if e]
    unknown = [c for c in cases if c not in CASES] + [e for e in executors if e not in EXECUTORS]
    if unknown:
        parser.error(f'unknown cases or executors: {unknown}')
    binary = find_installed('rclrs_tokio_benchmarks', 'stress')
    if binary is None:
        parser.error('the stress binary is not installed; run `make build` and source install/setup.sh')

    args.output_dir.mkdir(parents=True, exist_ok=True)
    report = {
        'date': datetime.datetime.now(datetime.timezone.utc).strftime('%Y-%m-%d %H:%M UTC'),
        'machine': machine(),
        'rmw': os.environ.get('RMW_IMPLEMENTATION', 'rmw_fastrtps_cpp'),
        'command': shlex.join(['python3', 'benchmarks/harness/stress.py'] + (argv or sys.argv[1:])),
        'results': [],
    }

    def save():
        (args.output_dir / 'latest.json').write_text(json.dumps(report, indent=1) + '\n')
        (args.output_dir / 'latest.md').write_text(markdown(report) + '\n')

    churns = [c for c in args.r7_churn.split(',') if c]
    for case in cases:
        for executor in executors:
            variants: list[tuple[str, list[str], list[str] | None]] = [('', [], None)]
            if case == 'r2' and executor == 'basic' and args.full:
                variants = [('', ['--rounds', str(BASIC_R2_ROUNDS)], None)]
            if case == 'r7':
                seconds = ['--seconds', str(args.r7_seconds)] if args.r7_seconds else []
                wanted = churns if executor == 'tokio' else churns[:1]
                variants = [(f'churn {c}', ['--churn', c] + seconds, None) for c in wanted]
            if case == 'r2' and executor == 'tokio' and args.valgrind_rounds:
                variants.append((f'valgrind, {args.valgrind_rounds} rounds',
                                 ['--rounds', str(args.valgrind_rounds), '--gentle'],
                                 ['valgrind', '--fair-sched=yes', '--error-exitcode=97',
                                  '--leak-check=no']))
            for variant, extra, prefix in variants:
                result = run_case(binary, case, executor, extra, args.full and prefix is None,
                                  prefix)
                result['case_key'] = case
                result['variant'] = variant
                if prefix:
                    errors = valgrind_errors(result)
                    result.setdefault('figures', {})['valgrind_errors'] = errors
                    if result.get('exit_status') == 97:
                        result['passed'] = False
                        result.setdefault('failures', []).append('valgrind reported errors')
                report['results'].append(result)
                verdict = 'n/a' if not result.get('applicable', True) else (
                    'pass' if result.get('passed') else 'FAIL')
                print(f'  {case} {executor} {variant}: {verdict} {result.get("failures", [])}',
                      flush=True)
                save()
    save()
    print(f"wrote {args.output_dir / 'latest.md'}")
    failed = [r for r in report['results']
              if r['executor'].startswith('tokio') and not r.get('passed')]
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
