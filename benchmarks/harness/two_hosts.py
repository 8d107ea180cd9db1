"""Two hosts on one machine: two network namespaces joined by a link, for the
`two_hosts_*` scenarios.

A robot with two computers (a drive unit and a perception unit) delivers over UDP, on the
middleware's UDP receive threads. Here the publisher process runs in one namespace and the
subscriber process in the other, so nothing but the link joins them:

- `veth`: a veth pair, one end in each namespace (10.52.0.1/24 and 10.52.0.2/24).
- `netem`: the same link with 1 ms of delay and 1 % loss each way: `tc netem` on both
  ends of a veth pair where the kernel has it (sch_netem), else two TUN devices joined by
  `lossy_link.py`, which delays and drops in user space (the kernels of this project's
  CI machines have no sch_netem). `Link.kind` says which.

Fast DDS runs with UDPv4 as its only transport (the scenarios' profile,
fastdds_two_hosts.xml, and `FASTDDS_BUILTIN_TRANSPORTS=UDPv4` for a run without it: no
shared memory, which would otherwise join the two processes through /dev/shm), and
discovers over the link (`ROS_AUTOMATIC_DISCOVERY_RANGE=SUBNET`, multicast routed onto
the link, each side also the other's static peer). The namespaces have no other
interface than their loopback, so no traffic leaves the machine.

Creating namespaces needs root (CAP_SYS_ADMIN and CAP_NET_ADMIN): `unavailable()` says
why they cannot be made here, and the harness reports the rows absent with that reason.
Every namespace and device is named after the harness's pid; `Links.close()` removes them
(also when a row fails), and a later harness removes those whose harness died.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

# The addresses on the link: the publisher's side and the subscriber's.
ADDRESSES = ('10.52.0.1', '10.52.0.2')
PREFIX_LENGTH = 24
# The impairment of the `netem` link, each way.
DELAY_MS = 1.0
LOSS = 0.01
# Packets a TUN device queues for the relay (lossy_link.py).
TUN_QUEUE = 20000
_NAME = re.compile(r'^rclrs_bench_(\d+)_')


def unavailable() -> str | None:
    """Why two namespaces cannot be made here, or None."""
    if not sys.platform.startswith('linux'):
        return 'two_hosts needs Linux network namespaces'
    if os.geteuid() != 0:
        return 'two_hosts needs root to create network namespaces (not root)'
    if shutil.which('ip') is None:
        return 'two_hosts needs iproute2 (`ip`), which is not installed'
    return None


def _ip(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    proc = subprocess.run(['ip', *args], capture_output=True, text=True, timeout=30)
    if check and proc.returncode != 0:
        raise OSError(f'ip {" ".join(args)}: {proc.stderr.strip()}')
    return proc


def remove_stale() -> None:
    """Remove the namespaces of harnesses that are no longer running."""
    listed = _ip('netns', 'list', check=False).stdout.split()
    for name in listed:
        match = _NAME.match(name)
        if match and not Path(f'/proc/{match.group(1)}').exists():
            _ip('netns', 'del', name, check=False)


class Link:
    """Two namespaces (`pub`, `sub`) joined by a link of `kind`."""

    def __init__(self, impaired: bool, die_with_parent=None):
        remove_stale()
        tag = f'{os.getpid()}_{"netem" if impaired else "veth"}'
        self.namespaces = {'pub': f'rclrs_bench_{tag}_pub', 'sub': f'rclrs_bench_{tag}_sub'}
        short = f'rb{os.getpid() % 100000}{"n" if impaired else "v"}'
        self.devices = {'pub': f'{short}p', 'sub': f'{short}s'}
        self.relay: subprocess.Popen | None = None
        self.kind = 'veth'
        try:
            for ns in self.namespaces.values():
                _ip('netns', 'add', ns)
            if impaired:
                self._impaired_link(die_with_parent)
            else:
                self._veth()
            for side, ns in self.namespaces.items():
                address = ADDRESSES[0 if side == 'pub' else 1]
                device = self.devices[side]
                _ip('-n', ns, 'addr', 'add', f'{address}/{PREFIX_LENGTH}', 'dev', device)
                _ip('-n', ns, 'link', 'set', 'lo', 'up')
                _ip('-n', ns, 'link', 'set', device, 'up')
                # Discovery's multicast goes onto the link.
                _ip('-n', ns, 'route', 'add', '224.0.0.0/4', 'dev', device)
                self._fragment_reassembly(ns)
        except BaseException:
            self.close()
            raise

    @staticmethod
    def _fragment_reassembly(ns: str) -> None:
        """The namespace's IP reassembly as the ROS 2 documentation advises for large
        messages on lossy links (its own sysctls; the host's stay as they are). A 64 KB
        datagram is some 45 fragments on a 1,500-byte link; with the kernel's defaults a
        datagram that lost one holds its others for 30 s in a 4 MB reassembly buffer,
        which then fills and drops every new fragment: at 1 % loss a reliable 1 MB
        stream at 30 Hz delivered nothing. With 3 s and 128 MB it delivered every frame."""
        proc = subprocess.run(['ip', 'netns', 'exec', ns, 'sysctl', '-q', '-w',
                               'net.ipv4.ipfrag_time=3',
                               'net.ipv4.ipfrag_high_thresh=134217728'],
                              capture_output=True, text=True, timeout=30)
        if proc.returncode != 0:
            raise OSError(f'sysctl in {ns}: {proc.stderr.strip()}')

    def _veth(self) -> None:
        _ip('link', 'add', self.devices['pub'], 'type', 'veth', 'peer', 'name',
            self.devices['sub'])
        for side, ns in self.namespaces.items():
            _ip('link', 'set', self.devices[side], 'netns', ns)

    def _impaired_link(self, die_with_parent) -> None:
        """netem on a veth pair, or the user-space link where the kernel has no netem."""
        self._veth()
        netem = ['qdisc', 'add', 'dev', None, 'root', 'netem', 'delay', f'{DELAY_MS:g}ms',
                 'loss', f'{100 * LOSS:g}%']
        refused = None
        for side, ns in self.namespaces.items():
            netem[3] = self.devices[side]
            proc = subprocess.run(['ip', 'netns', 'exec', ns, 'tc', *netem],
                                  capture_output=True, text=True, timeout=30)
            if proc.returncode != 0:
                refused = proc.stderr.strip() or f'tc exited {proc.returncode}'
                break
        if refused is None:
            self.kind = f'veth with tc netem delay {DELAY_MS:g}ms loss {100 * LOSS:g}%'
            return
        # No netem here: the veth goes, two TUN devices joined by lossy_link.py come.
        _ip('-n', self.namespaces['pub'], 'link', 'del', self.devices['pub'], check=False)
        self.relay = subprocess.Popen(
            [sys.executable, str(Path(__file__).with_name('lossy_link.py')),
             '--devices', ','.join(self.devices.values()), '--delay-ms', f'{DELAY_MS:g}',
             '--loss', f'{LOSS:g}'],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            preexec_fn=die_with_parent)
        ready = self.relay.stdout.readline().strip()
        if ready != 'ready':
            self.relay.kill()
            raise OSError(f'lossy_link.py did not start: {self.relay.stderr.read().strip()}')
        for side, ns in self.namespaces.items():
            # A frame of 1 MB is some 750 packets at once: the queue between the kernel
            # and the relay holds that many bursts (its default 500 would drop them).
            _ip('link', 'set', self.devices[side], 'txqueuelen', str(TUN_QUEUE))
            _ip('link', 'set', self.devices[side], 'netns', ns)
        self.kind = (f'TUN pair through lossy_link.py, delay {DELAY_MS:g}ms loss '
                     f'{100 * LOSS:g}% (tc netem refused: {refused})')

    def command(self, side: str, cmd: list[str]) -> list[str]:
        """`cmd` run in the namespace of `side` ('pub' or 'sub')."""
        return ['ip', 'netns', 'exec', self.namespaces[side], *cmd]

    def environment(self, side: str, base: dict[str, str] | None = None) -> dict[str, str]:
        """The environment of a node on `side` (`base`, by default this process's): Fast
        DDS on UDP only, discovery over the link, the other side as a static peer."""
        peer = ADDRESSES[1 if side == 'pub' else 0]
        return {**(base or os.environ), 'FASTDDS_BUILTIN_TRANSPORTS': 'UDPv4',
                'ROS_AUTOMATIC_DISCOVERY_RANGE': 'SUBNET', 'ROS_STATIC_PEERS': peer}

    def close(self) -> None:
        """Remove the namespaces (and with them the devices) and stop the relay."""
        for ns in self.namespaces.values():
            _ip('netns', 'del', ns, check=False)
        if self.relay is not None:
            self.relay.terminate()
            try:
                self.relay.communicate(timeout=5)
            except subprocess.TimeoutExpired:
                self.relay.kill()
                self.relay.communicate()
            self.relay = None


class Links:
    """The links of one harness run, made when first asked for and removed by close()."""

    def __init__(self, die_with_parent=None):
        self._links: dict[str, Link] = {}
        self._refused: dict[str, str] = {}
        self._die_with_parent = die_with_parent

    def get(self, kind: str) -> Link:
        """The link of `kind` ('veth' or 'netem'); OSError when it cannot be made (the
        reason is kept: it is not tried again)."""
        if kind in self._refused:
            raise OSError(self._refused[kind])
        if kind not in self._links:
            try:
                self._links[kind] = Link(kind == 'netem', self._die_with_parent)
            except (OSError, subprocess.SubprocessError) as error:
                self._refused[kind] = f'cannot make the {kind} link: {error}'
                raise OSError(self._refused[kind]) from error
        return self._links[kind]

    def close(self) -> None:
        for link in self._links.values():
            link.close()
        self._links.clear()
