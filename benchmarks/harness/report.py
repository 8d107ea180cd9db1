"""Turning runs into a console table, CSV, a Markdown summary and PNG plots."""

from __future__ import annotations

import csv
import importlib.util
import re
import statistics
from pathlib import Path

from scenarios import EXECUTORS, SCENARIOS, SIZES, headline

ORDER = list(EXECUTORS)


def _short(value: float) -> str:
    """A console cell: one decimal, or three significant digits below 1."""
    return f'{value:.1f}' if abs(value) >= 1 else f'{value:.3g}'


def reference(runs: list[dict]) -> str:
    """rclcpp_events when it ran, else rclrs_basic."""
    ran = {r['executor'] for r in runs if r.get('metrics')}
    return 'rclcpp_events' if 'rclcpp_events' in ran else 'rclrs_basic'


def _value(by: dict, scenario: str, executor: str, metric: str):
    run = by.get((scenario, executor))
    if not run or not run.get('metrics'):
        return None
    return run['metrics'].get(metric)


def table(runs: list[dict]) -> str:
    by = {(r['scenario'], r['executor']): r for r in runs}
    executors = [e for e in ORDER if any(r['executor'] == e for r in runs)]
    ref = reference(runs)
    width = 20
    lines = [f'ratios against: {ref}', '']
    header = f'{"scenario":<22} {"metric":<20}' + ''.join(f'{e:>{width}}' for e in executors)
    lines += [header, '-' * len(header)]
    for scenario in dict.fromkeys(r['scenario'] for r in runs):
        metric, _ = headline(scenario)
        ref_value = _value(by, scenario, ref, metric)
        cells = []
        for e in executors:
            value = _value(by, scenario, e, metric)
            if (scenario, e) not in by:
                cells.append(f'{"":>{width}}')
            elif by[(scenario, e)].get('failed'):
                cells.append(f'{"failed":>{width}}')
            elif value is None:
                cells.append(f'{"absent":>{width}}')
            else:
                ratio = f' ({value / ref_value:.2f}x)' if ref_value else ''
                cells.append(f'{_short(value):>{width - len(ratio)}}{ratio}')
        lines.append(f'{scenario:<22} {metric:<20}' + ''.join(cells))
        extra = SCENARIOS[scenario].extra if scenario in SCENARIOS else None
        if extra:
            row = []
            for e in executors:
                value = _value(by, scenario, e, extra)
                row.append(f'{"":>{width}}' if value is None else f'{_short(value):>{width}}')
            lines.append(f'{"":<22} {extra:<20}' + ''.join(row))
    absent = sorted({(r['executor'], r['absent']) for r in runs if r.get('absent')})
    if absent:
        lines.append('')
        lines += [f'absent: {e}: {why}' for e, why in absent]
    return '\n'.join(lines)


def write_csv(runs: list[dict], path: Path) -> None:
    keys = sorted({k for r in runs for k in (r.get('metrics') or {})})
    with path.open('w', newline='') as out:
        writer = csv.writer(out)
        writer.writerow(['scenario', 'executor', 'reps', 'absent', *keys])
        for r in runs:
            m = r.get('metrics') or {}
            writer.writerow([r['scenario'], r['executor'], r.get('reps', 0),
                             r.get('absent', ''), *[m.get(k, '') for k in keys]])


def write_markdown(document: dict, path: Path) -> None:
    runs = document['runs']
    m = document['machine']
    lines = [
        '# Executor comparison',
        '',
        f'- machine: {m["cpu"]}, {m["cores"]} cores, {m["memory_gib"]} GiB, kernel {m["kernel"]}'
        + (f'; run pinned to CPUs {m["cpus_allowed"]}' if m.get('pinned_cpus') else ''),
        f'- rmw: {document["rmw"]}, ROS {m["ros_distro"]}, commit {m["commit"]}',
        f'- command: `{document["command"]}`',
        f'- method: {document["method"]}',
        '',
        '```',
        table(runs),
        '```',
        '',
    ]
    lines += latency_quantiles(runs)
    lines += size_sweep(runs)
    lines += robot_mix(runs)
    lines += mixed_criticality(runs)
    lines += composed_nodes(runs)
    lines += two_hosts(runs)
    lines += stage_breakdown(runs)
    lines += receive_side(runs)
    lines += wake_ups(runs)
    lines += paired_ratio_table(runs)
    lines += fanout_comparison(runs)
    path.write_text('\n'.join(lines))


def compared_scenario(scenario: str) -> str:
    """The scenario whose rows a variant's row is compared with: a `_dedicated` row with
    its plain scenario, a `fanout_shared*` row (one fan-out subscription) with the
    8-subscription `fanout*` row; any other scenario with itself."""
    plain = re.sub(r'_dedicated(_normal_priority)?$', '', scenario)
    return re.sub(r'^fanout_shared(_on_worker)?', 'fanout', plain)


def paired_ratios(runs: list[dict], against: str | None = None
                  ) -> dict[tuple[str, str], list[float]]:
    """Each executor's headline divided by that of `against` (by default the reference
    executor) in the same repetition, per (scenario, executor), in repetition order.
    Interleaving puts both runs of a repetition close together in time, so a drift of
    the machine that moves both cancels out of their ratio, and the spread of the ratios
    shows how often a lead held. A row of a variant scenario (`_dedicated`,
    `fanout_shared*`) is paired with the row of the scenario it is compared with
    ([`compared_scenario`])."""
    against = against or reference(runs)
    by_rep = {(r['scenario'], r['executor']): r['headline_by_rep']
              for r in runs if r.get('headline_by_rep')}
    paired = {}
    for (scenario, executor), ours in by_rep.items():
        theirs = by_rep.get((compared_scenario(scenario), against))
        if executor == against or not theirs:
            continue
        ratios = [ours[rep] / theirs[rep] for rep in sorted(ours, key=int)
                  if ours[rep] is not None and theirs.get(rep)]
        if ratios:
            paired[(scenario, executor)] = ratios
    return paired


# The push-driven and the wait-set floors: this executor's rows are paired with them too.
FLOORS = ('raw_push', 'raw_rcl')


def paired_ratio_table(runs: list[dict]) -> list[str]:
    """Markdown: the paired ratios' median and spread, per row: every executor against
    the reference, and this executor's rows against the floors that ran."""
    ref = reference(runs)
    tables = [(ref, paired_ratios(runs, ref))]
    tables += [(floor, {key: ratios for key, ratios in paired_ratios(runs, floor).items()
                        if key[1].startswith('rclrs_tokio')})
               for floor in FLOORS]
    if not any(paired for _, paired in tables):
        return []
    lines = ['## Paired ratios (per repetition)', '',
             '| scenario | executor | metric | against | median | min | max | repetitions |',
             '| --- | --- | --- | --- | --- | --- | --- | --- |']
    for against, paired in tables:
        for (scenario, executor), ratios in paired.items():
            metric, _ = headline(scenario)
            lines.append(f'| {scenario} | {executor} | {metric} | '
                         f'{compared_scenario(scenario)} {against} | '
                         f'{statistics.median(ratios):.2f}x | {min(ratios):.2f}x | '
                         f'{max(ratios):.2f}x | {len(ratios)} |')
    return lines + ['', 'Each ratio divides the row\'s headline by the other row\'s from the '
                    'same repetition (the table above divides medians).', '']


def latency_quantiles(runs: list[dict]) -> list[str]:
    """Markdown: every latency row's p50, p99, p99.9 and max (median over repetitions),
    which is how jitter under contention is compared."""
    rows = [r for r in runs if r['scenario'].startswith('latency')
            and (r.get('metrics') or {}).get('latency_p99_us') is not None]
    if not rows:
        return []
    lines = ['## Latency quantiles (µs, median over repetitions)', '',
             '| scenario | executor | p50 | p99 | p99.9 | max |',
             '| --- | --- | --- | --- | --- | --- |']
    for r in rows:
        m = r['metrics']
        cells = [m.get(k) for k in ('latency_p50_us', 'latency_p99_us', 'latency_p999_us',
                                    'latency_max_us')]
        lines.append(f'| {r["scenario"]} | {r["executor"]} | '
                     + ' | '.join('' if c is None else f'{c:g}' for c in cells) + ' |')
    return lines + ['', '`_contended`: beside one busy process per core at normal priority. '
                    '`_dedicated`: rclrs_tokio with every Worker on a thread of its own '
                    '(`_contended_dedicated`: under SCHED_FIFO 80 where permitted).', '']


def _cell(value, fmt='{:g}') -> str:
    return '' if value is None else fmt.format(value)


def _metrics(by: dict, scenario: str, executor: str) -> dict:
    return (by.get((scenario, executor)) or {}).get('metrics') or {}


def _executors(runs: list[dict], scenarios) -> list[str]:
    """The executors with a measured row in any of `scenarios`, in the usual order."""
    ran = {r['executor'] for r in runs if r['scenario'] in scenarios and r.get('metrics')}
    return [e for e in ORDER if e in ran]


def _executor_table(runs: list[dict], title: str, columns: dict[str, str], cell) -> list[str]:
    """Markdown: one row per executor that ran any of `columns` (heading: scenario), each
    cell `cell(metrics)` of that scenario's row ('' where it did not run)."""
    by = {(r['scenario'], r['executor']): r for r in runs}
    executors = _executors(runs, columns.values())
    if not executors:
        return []
    lines = [f'## {title}', '', '| executor | ' + ' | '.join(columns) + ' |',
             '| --- |' + ' --- |' * len(columns)]
    for e in executors:
        cells = [cell(m) if (m := _metrics(by, scenario, e)) else ''
                 for scenario in columns.values()]
        lines.append(f'| {e} | ' + ' | '.join(cells) + ' |')
    return lines + ['']


def size_sweep(runs: list[dict]) -> list[str]:
    """Markdown: latency against message size (`latency_100Hz_<size>`, p50 / p99 per
    executor), in one process and across two, and the throughput at every size."""
    lines = []
    forms = (('in one process', ''), ('across two processes', '_xproc'))
    for title, suffix in forms:
        lines += _executor_table(
            runs, f'Latency against size, {title} (100 Hz, reliable; p50 / p99 µs, median '
            'over repetitions)', {size: f'latency_100Hz_{size}{suffix}' for size in SIZES},
            lambda m: f'{_cell(m.get("latency_p50_us"))} / {_cell(m.get("latency_p99_us"))}')
    ran = {r['scenario'] for r in runs}
    for title, suffix in forms:
        if not {f'throughput_1MB{suffix}', f'throughput_4MB{suffix}'} & ran:
            continue
        lines += _executor_table(
            runs, f'Throughput against size, {title} (received/s, drop %)',
            {size: f'throughput_{size}{suffix}' for size in ('0B', '64KB', '1MB', '4MB')},
            lambda m: (f'{_num(m["received_per_s"])} ({_cell(m.get("drop_pct"))} %)'
                       if m.get('received_per_s') is not None else ''))
    return lines


def robot_mix(runs: list[dict]) -> list[str]:
    """Markdown: robot_mix per executor (the control stream, the process's CPU, what was
    lost), then every stream's rate, p99 and losses."""
    rows = [r for r in runs if r['scenario'] == 'robot_mix' and r.get('metrics')]
    if not rows:
        return []
    by = {r['executor']: r['metrics'] for r in rows}
    cbg = by.get('rclcpp_events_cbg', {})
    lines = ['## Robot mix (subscriber process; median over repetitions)', '',
             '| executor | control p50 µs | control p99 µs | control max µs | '
             'process CPU % | lost | control p99 / cbg | CPU / cbg |',
             '| --- | --- | --- | --- | --- | --- | --- | --- |']
    for r in rows:
        m = r['metrics']
        ratio = lambda key: (f'{m[key] / cbg[key]:.2f}x'  # noqa: E731
                             if cbg.get(key) and m.get(key) is not None else '')
        lines.append(f'| {r["executor"]} | {_cell(m.get("control_latency_p50_us"))} | '
                     f'{_cell(m.get("control_latency_p99_us"))} | '
                     f'{_cell(m.get("control_latency_max_us"))} | '
                     f'{_cell(m.get("cpu_process_pct"))} | {_cell(m.get("lost"))} | '
                     f'{ratio("control_latency_p99_us")} | {ratio("cpu_process_pct")} |')
    names = list(dict.fromkeys(n for r in rows for n in (r['metrics'].get('streams') or {})))
    lines += ['', '### Every stream (received/s, p99 µs, lost)', '',
              '| stream | ' + ' | '.join(r['executor'] for r in rows) + ' |',
              '| --- |' + ' --- |' * len(rows)]
    for name in names:
        cells = []
        for r in rows:
            f = (r['metrics'].get('streams') or {}).get(name, {})
            cells.append(f'{_cell(f.get("received_per_s"))} / '
                         f'{_cell(f.get("latency_p99_us"))} / {_cell(f.get("lost"))}'
                         if f else '')
        lines.append(f'| {name} | ' + ' | '.join(cells) + ' |')
    return lines + ['', 'The graph: benchmarks/src/workload/robot_mix.rs. `service` and '
                    '`parameters` are round trips measured by the caller in the drivers\' '
                    'process; lost: sent and never received (a call never answered).', '']


def _rows_table(title: str, rows: list[dict], columns: dict) -> list[str]:
    """Markdown: one row per run of `rows` (its scenario and executor, then one cell per
    column: heading -> cell(run))."""
    lines = [f'## {title}', '', '| scenario | executor | ' + ' | '.join(columns) + ' |',
             '| --- | --- |' + ' --- |' * len(columns)]
    lines += [f'| {r["scenario"]} | {r["executor"]} | '
              + ' | '.join(cell(r) for cell in columns.values()) + ' |' for r in rows]
    return lines + ['']


def _key(name: str):
    """A cell: the run's metric `name`."""
    return lambda run: _cell(run['metrics'].get(name))


def mixed_criticality(runs: list[dict]) -> list[str]:
    """Markdown: the control stream beside the burning Worker, per row, against the best
    (lowest p99) rclcpp row of the same load."""
    rows = [r for r in runs if r['scenario'].startswith('mixed_criticality')
            and r.get('metrics')]
    if not rows:
        return []

    def against_best_rclcpp(key: str):
        def cell(run: dict) -> str:
            plain = compared_scenario(run['scenario'])
            theirs = [r['metrics'] for r in rows if r['scenario'] == plain
                      and r['executor'].startswith('rclcpp')
                      and r['metrics'].get('control_latency_p99_us') is not None]
            best = min(theirs, key=lambda m: m['control_latency_p99_us'], default={})
            ours = run['metrics'].get(key)
            return f'{ours / best[key]:.2f}x' if best.get(key) and ours is not None else ''
        return cell

    columns = {'p50': _key('control_latency_p50_us'), 'p99': _key('control_latency_p99_us'),
               'p99.9': _key('control_latency_p999_us'), 'max': _key('control_latency_max_us'),
               'burn Hz': _key('burn_rate_hz'), 'process CPU %': _key('cpu_process_pct'),
               'p99 / best rclcpp': against_best_rclcpp('control_latency_p99_us'),
               'max / best rclcpp': against_best_rclcpp('control_latency_max_us')}
    return _rows_table('Mixed criticality (control stream at 1 kHz beside 4 ms of CPU every '
                       '5 ms; µs, median over repetitions)', rows, columns) + [
        '`_dedicated`: rclrs_tokio with the control Worker on a thread of its own under '
        'SCHED_FIFO 80 (`_normal_priority`: without it); `_contended`: beside one busy '
        'process per core. best rclcpp: the rclcpp row with the lowest p99 under the same '
        'load.', '']


def composed_nodes(runs: list[dict]) -> list[str]:
    """Markdown: nodes_<N> per executor: idle CPU, CPU under load, threads."""
    rows = sorted((r for r in runs if re.fullmatch(r'nodes_\d+', r['scenario'])
                   and r.get('metrics')),
                  key=lambda r: (int(r['scenario'].split('_')[1]), ORDER.index(r['executor'])))
    if not rows:
        return []
    columns = {'idle CPU %': _key('idle_cpu_pct'), 'CPU under load %': _key('cpu_process_pct'),
               'threads idle / loaded': lambda r: (f'{_key("idle_threads")(r)} / '
                                                   f'{_key("threads")(r)}'),
               'timer Hz': _key('timer_rate_hz'), 'received/s': _key('received_per_s'),
               'dropped': _key('dropped')}
    return _rows_table('Composed nodes (each with a subscription at 100 Hz and a 10 Hz timer)',
                       rows, columns)


def two_hosts(runs: list[dict]) -> list[str]:
    """Markdown: the rows across two network namespaces, with the link they ran over."""
    rows = [r for r in runs if r['scenario'].startswith('two_hosts') and r.get('metrics')]
    if not rows:
        return []
    columns = {'received/s': _key('received_per_s'), 'dropped': _key('dropped'),
               'p50 µs': _key('latency_p50_us'), 'p99 µs': _key('latency_p99_us'),
               'max µs': _key('latency_max_us'),
               'receive threads µs/msg': _key('receive_cpu_per_msg_us')}
    links = sorted({(r['scenario'].startswith('two_hosts_netem'), r['metrics']['link'])
                    for r in rows if r['metrics'].get('link')})
    return (_rows_table('Two hosts (two network namespaces, Fast DDS over UDP only)', rows,
                        columns)
            + [f'- {"netem" if impaired else "plain"} link: {kind}' for impaired, kind in links]
            + [''])


def receive_side(runs: list[dict]) -> list[str]:
    """Markdown: the subscriber process's CPU split between the middleware's receive
    threads and the rest, per `_xproc` row (the executor's push path runs on the former)."""
    rows = [r for r in runs
            if (r.get('metrics') or {}).get('receive_cpu_per_msg_us') is not None]
    if not rows:
        return []
    lines = ['## Receive side across processes (subscriber process, median over repetitions)',
             '',
             '| scenario | executor | received/s | receive threads µs/msg | '
             'receive threads % | whole process % |',
             '| --- | --- | --- | --- | --- | --- |']
    for r in rows:
        m = r['metrics']
        lines.append(f'| {r["scenario"]} | {r["executor"]} | {m["received_per_s"]:g} | '
                     f'{m["receive_cpu_per_msg_us"]:g} | {m["receive_cpu_pct"]:g} | '
                     f'{m["cpu_process_pct"]:g} |')
    lines += ['', 'Receive threads: Fast DDS\'s UDP, TCP, shared-memory and data-sharing '
              'listener threads, which run the rmw listener and any rcl push callback; CPU from '
              '/proc/self/task/*/stat (clock ticks) over the window.', '']
    return lines


def wake_ups(runs: list[dict]) -> list[str]:
    """Markdown: the process's context switches per delivery, per stream row (the
    wake-ups a design pays for; on a VM each can cost more than the work it hands over)."""
    rows = [r for r in runs
            if (r.get('metrics') or {}).get('context_switches_per_msg') is not None]
    if not rows:
        return []
    lines = ['## Context switches per delivery (median over repetitions)', '',
             '| scenario | executor | received/s | context switches per delivery |',
             '| --- | --- | --- | --- |']
    lines += [f'| {r["scenario"]} | {r["executor"]} | {r["metrics"]["received_per_s"]:g} | '
              f'{r["metrics"]["context_switches_per_msg"]:g} |' for r in rows]
    return lines + ['', 'Every thread of the (subscriber) process, voluntary and involuntary, '
                    'from /proc/self/task/*/status over the window; with the publisher in '
                    'the same process, its switches count too.', '']


def _num(value: float) -> str:
    return f'{value:,.0f}' if abs(value) >= 1000 else f'{value:g}'


def fanout_comparison(runs: list[dict]) -> list[str]:
    """Markdown: each `fanout_shared*` row (one fan-out subscription, 8 callbacks) against
    the same workload with 8 subscriptions (`fanout*`): the same executor's row, and
    rclcpp's EventsExecutor's with and without intra-process communication."""
    by = {(r['scenario'], r['executor']): r for r in runs}
    shared = [r for r in runs if r['scenario'].startswith('fanout_shared')
              and (r.get('metrics') or {})]
    if not shared:
        return []
    lines = ['## Fan-out: one shared subscription against 8 subscriptions', '',
             '| scenario | executor | metric | value | against | their value | ratio |',
             '| --- | --- | --- | --- | --- | --- | --- |']
    for r in shared:
        metric, higher = headline(r['scenario'])
        value = r['metrics'].get(metric)
        plain = compared_scenario(r['scenario'])
        for other in dict.fromkeys([r['executor'], 'rclcpp_events', 'rclcpp_events_ipc']):
            theirs = _value(by, plain, other, metric)
            if value is None or not theirs:
                continue
            ratio = value / theirs if higher else theirs / value if value else None
            lines.append(f'| {r["scenario"]} | {r["executor"]} | {metric} | {_num(value)} | '
                         f'{plain} {other} | {_num(theirs)} | '
                         + ('' if ratio is None else f'{ratio:.2f}x') + ' |')
    lines += ['', 'ratio: how many times better the shared row is (higher is better for '
              'deliveries/s; for CPU, their CPU over ours).', '']
    return lines


STAGES = ['notify_to_wake', 'wake_to_take', 'take', 'callback', 'notify_to_callback_end']


def stage_breakdown(runs: list[dict]) -> list[str]:
    """Markdown: where a message's time went, per traced row (stage tracing on)."""
    traced = [r for r in runs if (r.get('metrics') or {}).get('stages')]
    if not traced:
        return []
    lines = ['## Stage breakdown (stage tracing on; p50 / p99 in µs, median over repetitions)',
             '',
             '| scenario | executor | ' + ' | '.join(STAGES) + ' |',
             '| --- | --- |' + ' --- |' * len(STAGES)]
    for r in traced:
        stages = r['metrics']['stages']
        cells = [f'{stages[s]["p50_us"]:g} / {stages[s]["p99_us"]:g}' if s in stages else ''
                 for s in STAGES]
        lines.append(f'| {r["scenario"]} | {r["executor"]} | ' + ' | '.join(cells) + ' |')
    lines += ['', 'notify_to_wake: push callback to the Worker picking the item up; '
              'wake_to_take: to its first take; take: one rcl_take; callback: conversion, '
              'dispatch and the user callback; notify_to_callback_end: the whole path.', '']
    return lines


def rewrite(directory: Path) -> None:
    """Write `latest.md`, `latest.csv` and the plots again from `latest.json` (after a
    change to the report itself)."""
    import json
    document = json.loads((directory / 'latest.json').read_text())
    write_markdown(document, directory / 'latest.md')
    write_csv(document['runs'], directory / 'latest.csv')
    if have_matplotlib():
        write_plots(document['runs'], directory)


def have_matplotlib() -> bool:
    """True when matplotlib can be imported (plots can be drawn)."""
    return importlib.util.find_spec('matplotlib') is not None


def write_plots(runs: list[dict], directory: Path) -> list[Path]:
    """Throughput and CPU bars, latency CDFs, timer jitter; skipped without matplotlib."""
    try:
        import matplotlib
        matplotlib.use('Agg')
        import matplotlib.pyplot as plt
    except ImportError:
        return []
    written = []
    by = {(r['scenario'], r['executor']): r for r in runs if r.get('metrics')}
    executors = [e for e in ORDER if any(k[1] == e for k in by)]

    def save(fig, legend_ax, name):
        """Legend on `legend_ax`, layout, then `name` in the directory; the figure closes."""
        legend_ax.legend(fontsize=8)
        fig.tight_layout()
        out = directory / name
        fig.savefig(out, dpi=110)
        plt.close(fig)
        written.append(out)

    def bars(scenarios, metric, title, ylabel, name, log=False):
        scenarios = [s for s in scenarios if any((s, e) in by for e in executors)]
        if not scenarios:
            return
        fig, ax = plt.subplots(figsize=(9, 4.5))
        width = 0.8 / max(len(executors), 1)
        for i, e in enumerate(executors):
            values = [(by.get((s, e)) or {}).get('metrics', {}).get(metric) or 0
                      for s in scenarios]
            ax.bar([x + i * width for x in range(len(scenarios))], values, width, label=e)
        ax.set_xticks([x + width * (len(executors) - 1) / 2 for x in range(len(scenarios))])
        ax.set_xticklabels(scenarios, rotation=15)
        ax.set_title(title)
        ax.set_ylabel(ylabel)
        if log:
            ax.set_yscale('log')
        save(fig, ax, name)

    scen = list(dict.fromkeys(r['scenario'] for r in runs))
    large = ('throughput_1MB', 'throughput_4MB')
    bars([s for s in scen if s.startswith('throughput') and not s.endswith('_xproc')
          and not s.startswith(large)],
         'received_per_s', 'Throughput in one process (messages received per second)',
         'msg/s', 'throughput.png')
    bars([s for s in scen if s.startswith('throughput') and s.endswith('_xproc')
          and not s.startswith(large)],
         'received_per_s', 'Throughput across two processes (messages received per second)',
         'msg/s', 'throughput_xproc.png')
    bars([s for s in scen if s.startswith(large)], 'received_per_s',
         'Throughput of 1 MB and 4 MB messages (messages received per second)', 'msg/s',
         'throughput_large.png')
    sweep = [s for s in scen if s.startswith('latency_100Hz_')]
    if sweep:
        fig, axes = plt.subplots(1, 2, figsize=(11, 4.5), sharey=True)
        for ax, suffix, title in [(axes[0], '', 'one process'),
                                  (axes[1], '_xproc', 'two processes')]:
            for i, e in enumerate(executors):
                for metric, style in (('latency_p99_us', '-'), ('latency_p50_us', ':')):
                    points = [(size, by[(f'latency_100Hz_{label}{suffix}', e)]['metrics']
                               .get(metric)) for label, size in SIZES.items()
                              if (f'latency_100Hz_{label}{suffix}', e) in by]
                    points = [(x, y) for x, y in points if y]
                    if points:
                        ax.plot([x for x, _ in points], [y for _, y in points], style,
                                marker='o', color=f'C{i}',
                                label=e if metric == 'latency_p99_us' else None)
            ax.set_xscale('log')
            ax.set_yscale('log')
            ax.set_xlabel('message size (bytes)')
            ax.set_title(f'{title}: p99 (solid), p50 (dotted)')
        axes[0].set_ylabel('latency (µs)')
        fig.suptitle('Latency against message size, 100 Hz reliable')
        save(fig, axes[0] if axes[0].lines else axes[1], 'latency_vs_size.png')
    bars([s for s in scen if s == 'robot_mix'], 'control_latency_p99_us',
         'robot_mix: the 1 kHz control stream\'s p99 beside every other stream', 'µs',
         'robot_mix_control_p99.png')
    bars([s for s in scen if s == 'robot_mix'], 'cpu_process_pct',
         'robot_mix: the subscriber process\'s CPU (% of one core)', '% CPU',
         'robot_mix_cpu.png')
    bars([s for s in scen if s.startswith('mixed_criticality')], 'control_latency_p99_us',
         'Mixed criticality: the control stream\'s p99 beside 4 ms of CPU every 5 ms', 'µs',
         'mixed_criticality_p99.png', log=True)
    bars([s for s in scen if s.startswith('mixed_criticality')], 'control_latency_max_us',
         'Mixed criticality: the control stream\'s worst case', 'µs',
         'mixed_criticality_max.png', log=True)
    nodes = sorted((s for s in scen if re.fullmatch(r'nodes_\d+', s)),
                   key=lambda s: int(s.split('_')[1]))
    if nodes:
        fig, axes = plt.subplots(1, 3, figsize=(14, 4))
        for metric, ax, title in [('idle_cpu_pct', axes[0], 'idle process CPU (%)'),
                                  ('cpu_process_pct', axes[1], 'process CPU under load (%)'),
                                  ('threads', axes[2], 'threads under load')]:
            for e in executors:
                points = [(int(s.split('_')[1]), by[(s, e)]['metrics'].get(metric))
                          for s in nodes if (s, e) in by]
                points = [(n, v) for n, v in points if v is not None]
                if points:
                    ax.plot([n for n, _ in points], [max(v, 1e-3) for _, v in points],
                            marker='o', label=e)
            ax.set_xscale('log')
            ax.set_yscale('log')
            ax.set_xlabel('nodes')
            ax.set_title(title)
        fig.suptitle('Composed nodes: each with a subscription at 100 Hz and a 10 Hz timer')
        save(fig, axes[0], 'nodes.png')
    bars([s for s in scen if s.startswith('two_hosts') and 'throughput' in s],
         'received_per_s', 'Two hosts (network namespaces, UDP): throughput (msg/s)',
         'msg/s', 'two_hosts_throughput.png')
    bars([s for s in scen if s.startswith('two_hosts') and 'throughput' not in s],
         'latency_p99_us', 'Two hosts (network namespaces, UDP): latency p99', 'µs',
         'two_hosts_latency.png', log=True)
    bars([s for s in scen if s.startswith('cpu')], 'cpu_executor_pct',
         'Executor CPU at 10 kHz (% of one core)', '% CPU', 'cpu.png')
    bars([s for s in scen if s.startswith('fanout') and not s.endswith('1kHz')],
         'received_per_s',
         'Fan-out: 1 publisher to 8 callbacks over 2 Workers (deliveries per second)',
         'deliveries/s', 'fanout.png')
    bars([s for s in scen if s.startswith('fanout') and s.endswith('1kHz')],
         'cpu_executor_pct', 'Fan-out at 1 kHz to 8 callbacks: executor CPU (% of one core)',
         '% CPU', 'fanout_cpu.png')
    bars([s for s in scen if s.startswith('workers_parallel')], 'received_per_s',
         'CPU-bound callbacks (200 µs each, 2 x 3 kHz offered) in 1 vs 2 Workers',
         'callbacks/s', 'workers_parallel.png')
    scaling = sorted((s for s in scen if s.startswith('scaling_')),
                     key=lambda s: int(s.split('_')[1]))
    if scaling:
        fig, axes = plt.subplots(1, 2, figsize=(11, 4))
        for metric, ax, title in [('per_message_us', axes[0], 'executor CPU per message (µs)'),
                                  ('idle_cpu_pct', axes[1], 'idle process CPU (%)')]:
            for e in executors:
                points = [(int(s.split('_')[1]), by[(s, e)]['metrics'].get(metric))
                          for s in scaling if (s, e) in by]
                points = [(n, v) for n, v in points if v is not None]
                if points:
                    ax.plot([p[0] for p in points], [max(p[1], 1e-3) for p in points],
                            marker='o', label=e)
            ax.set_xscale('log')
            ax.set_yscale('log')
            ax.set_xlabel('subscriptions')
            ax.set_title(title)
        fig.suptitle('Scaling: N subscriptions on N topics, 1 kHz on one of them')
        save(fig, axes[0], 'scaling.png')
    quantiles = [('latency_p50_us', 0.5), ('latency_p99_us', 0.99),
                 ('latency_p999_us', 0.999), ('latency_max_us', 1.0)]
    for scenario in [s for s in scen
                     if (s.startswith('latency') and not s.startswith('latency_100Hz_'))
                     or s in ('service_rtt', 'action_rtt')]:
        fig, ax = plt.subplots(figsize=(7, 4))
        for e in executors:
            m = (by.get((scenario, e)) or {}).get('metrics')
            if not m:
                continue
            points = [(m[k], q) for k, q in quantiles if m.get(k) is not None]
            if points:
                ax.plot([p[0] for p in points], [p[1] for p in points], marker='o', label=e)
        ax.set_xscale('log')
        ax.set_xlabel('latency (µs)')
        ax.set_ylabel('fraction of messages')
        ax.set_title(f'{scenario}: latency quantiles (p50, p99, p99.9, max)')
        save(fig, ax, f'{scenario}_cdf.png')
    # Stage breakdown: the median (p50) time of each stage, stacked, per traced row.
    traced = [r for r in runs if (r.get('metrics') or {}).get('stages')]
    if traced:
        fig, ax = plt.subplots(figsize=(9, 4.5))
        labels = [f'{r["scenario"]}\n{r["executor"]}' for r in traced]
        bottom = [0.0] * len(traced)
        for stage in STAGES[:-1]:
            values = [r['metrics']['stages'].get(stage, {}).get('p50_us') or 0 for r in traced]
            ax.bar(labels, values, bottom=bottom, label=stage)
            bottom = [b + v for b, v in zip(bottom, values)]
        ends = [r['metrics']['stages'].get('notify_to_callback_end', {}).get('p50_us')
                for r in traced]
        ax.scatter(labels, [e or 0 for e in ends], color='black', marker='_', s=400,
                   label='notify_to_callback_end (p50)', zorder=3)
        ax.set_ylabel('µs (p50 of each stage)')
        ax.set_title('Where a message\'s time goes (stage tracing)')
        save(fig, ax, 'stages.png')
    # Timer jitter: a histogram of |interval - period| per timer scenario.
    edges = ['≤1', '≤2', '≤5', '≤10', '≤20', '≤50', '≤100', '≤200', '≤500', '≤1000', '>1000']
    for scenario in [s for s in scen if s.startswith('timer')]:
        series = [(e, (by.get((scenario, e)) or {}).get('metrics', {}).get('timer_jitter_hist'))
                  for e in executors]
        series = [(e, h) for e, h in series if h and sum(h)]
        if not series:
            continue
        fig, ax = plt.subplots(figsize=(9, 4))
        width = 0.8 / len(series)
        for i, (e, counts) in enumerate(series):
            total = sum(counts)
            ax.bar([x + i * width for x in range(len(counts))],
                   [c / total for c in counts], width, label=e)
        ax.set_xticks([x + width * (len(series) - 1) / 2 for x in range(len(edges))])
        ax.set_xticklabels(edges)
        ax.set_yscale('log')
        ax.set_xlabel('|interval - period| (µs)')
        ax.set_ylabel('fraction of intervals')
        ax.set_title(f'{scenario}: timer period jitter histogram (all repetitions)')
        save(fig, ax, f'{scenario}_jitter.png')
    return written


if __name__ == '__main__':
    import sys
    for folder in sys.argv[1:]:
        rewrite(Path(folder))
