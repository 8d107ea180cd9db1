#!/usr/bin/env python3
"""A network link with delay and loss, in user space: the `two_hosts_netem_*` link on
kernels without `tc netem` (sch_netem).

    lossy_link.py --devices tunA,tunB [--delay-ms 1] [--loss 0.01] [--seed 1]

Creates two TUN devices (IP packets, no packet information header), prints `ready` on a
line of its own, then forwards every packet read from one to the other after
`--delay-ms`, dropping each with probability `--loss`, independently in each direction,
in order (a constant delay keeps a FIFO), until SIGTERM or SIGINT. The harness moves
each device into a network namespace of its own and gives it an address, so the two
namespaces reach each other only through this process: what netem's
`delay 1ms loss 1%` does on a veth pair. The devices vanish when the process ends.

On exit it prints one JSON line: packets forwarded and dropped per direction.
"""

from __future__ import annotations

import argparse
import collections
import fcntl
import json
import os
import random
import select
import signal
import struct
import sys
import time

TUNSETIFF = 0x400454ca
IFF_TUN = 0x0001
IFF_NO_PI = 0x1000
# The largest IP packet a TUN device hands over.
MAX_PACKET = 65536


def open_tun(name: str) -> int:
    """A TUN device called `name`, non-blocking; it lives as long as the descriptor."""
    fd = os.open('/dev/net/tun', os.O_RDWR | os.O_NONBLOCK)
    fcntl.ioctl(fd, TUNSETIFF, struct.pack('16sH', name.encode(), IFF_TUN | IFF_NO_PI))
    return fd


class Direction:
    """Packets read from `source`, written to `sink` when due."""

    def __init__(self, source: int, sink: int, delay_s: float, loss: float,
                 rng: random.Random):
        self.source, self.sink = source, sink
        self.delay_s, self.loss, self.rng = delay_s, loss, rng
        self.queue: collections.deque[tuple[float, bytes]] = collections.deque()
        self.forwarded = self.dropped = 0

    def read(self, now: float) -> None:
        """Everything waiting on the source, queued or dropped."""
        while True:
            try:
                packet = os.read(self.source, MAX_PACKET)
            except BlockingIOError:
                return
            if self.rng.random() < self.loss:
                self.dropped += 1
            else:
                self.queue.append((now + self.delay_s, packet))

    def write_due(self, now: float) -> None:
        while self.queue and self.queue[0][0] <= now:
            _, packet = self.queue.popleft()
            try:
                os.write(self.sink, packet)
                self.forwarded += 1
            except OSError:
                # The sink's device is not up yet (the harness is still configuring it)
                # or its queue is full: the link loses the packet.
                self.dropped += 1

    def next_due(self) -> float | None:
        return self.queue[0][0] if self.queue else None


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--devices', required=True,
                        help='the two TUN devices to create, comma-separated')
    parser.add_argument('--delay-ms', type=float, default=1.0)
    parser.add_argument('--loss', type=float, default=0.01,
                        help='probability of dropping each packet (default 0.01)')
    parser.add_argument('--seed', type=int, default=1)
    args = parser.parse_args(argv)
    names = args.devices.split(',')
    if len(names) != 2 or not all(0 < len(n) < 16 for n in names):
        parser.error('--devices: two names of 1 to 15 characters')
    if not 0.0 <= args.loss < 1.0 or args.delay_ms < 0:
        parser.error('--loss must be in [0, 1) and --delay-ms at least 0')
    try:
        a, b = (open_tun(name) for name in names)
    except OSError as error:
        print(f'lossy_link: cannot create TUN devices {names}: {error}', file=sys.stderr)
        return 1
    rng = random.Random(args.seed)
    directions = [Direction(a, b, args.delay_ms / 1e3, args.loss, rng),
                  Direction(b, a, args.delay_ms / 1e3, args.loss, rng)]
    stopping = []
    for number in (signal.SIGTERM, signal.SIGINT):
        signal.signal(number, lambda *_: stopping.append(True))
    print('ready', flush=True)
    while not stopping:
        now = time.monotonic()
        due = [d.next_due() for d in directions if d.next_due() is not None]
        timeout = max(0.0, min(due) - now) if due else 0.5
        try:
            readable, _, _ = select.select([a, b], [], [], timeout)
        except InterruptedError:
            continue
        now = time.monotonic()
        for direction in directions:
            if direction.source in readable:
                direction.read(now)
            direction.write_due(now)
    print(json.dumps({'devices': names,
                      'forwarded': [d.forwarded for d in directions],
                      'dropped': [d.dropped for d in directions]}), flush=True)
    return 0


if __name__ == '__main__':
    sys.exit(main())
