"""A network-namespace NAT lab for tests and benchmarks (root): two hosts, each behind its own NAT router,
and a "public" segment with a coturn (and the signaling service, for node races), all on TEST-NET
addresses inside namespaces the lab makes and removes. Nothing touches the machine's own namespace: every
address, route and iptables rule lives in the lab's namespaces, so deleting them (always, also when a test
fails) removes everything.

    host1 203.0.113.2/28 ── nat1 (LAN 203.0.113.1, WAN 198.51.100.11) ──┐
                                                                         br0 in inet: 198.51.100.1/24 (coturn,
    host2 203.0.113.18/28 ─ nat2 (LAN 203.0.113.17, WAN 198.51.100.12) ─┘     the NATs' default route)

Each NAT masquerades its LAN behind its WAN address (``iptables -t nat … MASQUERADE``: the mapping keeps
the source port, so a STUN-learned address works towards the peer: ordinary hole punching); with
``symmetric`` it adds ``--random-fully`` (a new random port per destination: the address STUN saw is not
the one the peer sees, so only a relay connects the two). The LANs cannot reach each other except
through the NATs' public addresses.
"""

from __future__ import annotations

import itertools
import os
import shutil
import signal
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

PREFIX = "o4wlab"
PUBLIC = "198.51.100.1"
_COUNTER = itertools.count()


@dataclass(frozen=True)
class NatLab:
    """The lab's namespaces and addresses."""

    inet: str
    nats: tuple[str, str]
    hosts: tuple[str, str]
    host_addresses: tuple[str, str]
    nat_addresses: tuple[str, str]
    public: str = PUBLIC

    @property
    def namespaces(self) -> frozenset[str]:
        """Every namespace of this lab."""
        return frozenset((self.inet, *self.nats, *self.hosts))

    def exec_prefix(self, namespace: str) -> list[str]:
        """The command prefix that runs a program inside ``namespace``."""
        return ["ip", "netns", "exec", namespace]


def missing_tools() -> list[str]:
    """The programs the lab needs that are not installed (Debian: iproute2, iptables)."""
    return [tool for tool in ("ip", "iptables") if shutil.which(tool) is None]


def _run(*args: str) -> None:
    subprocess.run(list(args), check=True, capture_output=True, text=True)


def _in(namespace: str, *args: str) -> None:
    _run("ip", "netns", "exec", namespace, *args)


def lab_namespaces() -> list[str]:
    """Every namespace of a lab on this machine (by name prefix)."""
    listed = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=True).stdout
    return [line.split()[0] for line in listed.splitlines() if line.startswith(PREFIX)]


def _remove(namespace: str) -> None:
    """Kill what runs in ``namespace`` and delete it (its veths, addresses and iptables rules go with it)."""
    pids = subprocess.run(["ip", "netns", "pids", namespace], capture_output=True, text=True).stdout.split()
    for pid in pids:
        try:
            os.kill(int(pid), signal.SIGKILL)
        except (ProcessLookupError, ValueError):
            pass
    subprocess.run(["ip", "netns", "del", namespace], capture_output=True)


def remove_stale() -> None:
    """Delete the namespaces of labs whose process is gone (a test process killed before its cleanup)."""
    for namespace in lab_namespaces():
        owner = namespace[len(PREFIX):].split("x")[0]
        if owner.isdigit() and not os.path.exists(f"/proc/{owner}"):
            _remove(namespace)


@contextmanager
def nat_lab(symmetric: bool = False) -> Iterator[NatLab]:
    """Make the lab; remove every namespace of it when the block ends, whatever happened."""
    remove_stale()
    tag = f"{PREFIX}{os.getpid()}x{next(_COUNTER)}"
    inet, nats, hosts = f"{tag}i", (f"{tag}n1", f"{tag}n2"), (f"{tag}h1", f"{tag}h2")
    made: list[str] = []
    try:
        for namespace in (inet, *nats, *hosts):
            _run("ip", "netns", "add", namespace)
            made.append(namespace)
            _in(namespace, "ip", "link", "set", "lo", "up")
        _in(inet, "ip", "link", "add", "br0", "type", "bridge")
        _in(inet, "ip", "addr", "add", f"{PUBLIC}/24", "dev", "br0")
        _in(inet, "ip", "link", "set", "br0", "up")
        # the LANs' addresses are unroutable "out there", as private addresses are on the internet: what is
        # sent to them vanishes instead of failing at once (coturn closes an allocation whose relayed send
        # fails; on the internet the private ranges are its denied peers instead). It goes out of a veth
        # to a MAC address nobody has, and the other end of the veth drops it.
        _in(inet, "ip", "link", "add", "void", "type", "veth", "peer", "name", "voidend")
        for device in ("void", "voidend"):
            _in(inet, "ip", "link", "set", device, "up")
        _in(inet, "ip", "neigh", "add", "198.51.100.254", "lladdr", "02:00:00:00:00:fe", "dev", "void", "nud", "permanent")
        _in(inet, "ip", "route", "add", "203.0.113.0/24", "via", "198.51.100.254", "dev", "void", "onlink")
        _in(inet, "sysctl", "-q", "-w", "net.ipv4.ip_forward=1")
        host_addresses, nat_addresses = ("203.0.113.2", "203.0.113.18"), ("198.51.100.11", "198.51.100.12")
        for i, (nat, host) in enumerate(zip(nats, hosts, strict=True)):
            lan_gateway = f"203.0.113.{1 + 16 * i}"
            _run("ip", "link", "add", "wan", "netns", nat, "type", "veth", "peer", "name", f"up{i}", "netns", inet)
            _in(inet, "ip", "link", "set", f"up{i}", "master", "br0")
            _in(inet, "ip", "link", "set", f"up{i}", "up")
            _in(nat, "ip", "addr", "add", f"{nat_addresses[i]}/24", "dev", "wan")
            _in(nat, "ip", "link", "set", "wan", "up")
            _run("ip", "link", "add", "lan", "netns", nat, "type", "veth", "peer", "name", "eth0", "netns", host)
            _in(nat, "ip", "addr", "add", f"{lan_gateway}/28", "dev", "lan")
            _in(nat, "ip", "link", "set", "lan", "up")
            _in(nat, "ip", "route", "add", "default", "via", PUBLIC)
            _in(nat, "sysctl", "-q", "-w", "net.ipv4.ip_forward=1")
            masquerade = ["iptables", "-t", "nat", "-A", "POSTROUTING", "-o", "wan", "-j", "MASQUERADE"]
            _in(nat, *masquerade, *(["--random-fully"] if symmetric else []))
            # a home router's firewall: unsolicited packets from outside are dropped, which also keeps their
            # conntrack entry from being confirmed (such an entry would take the port the LAN host's own
            # outgoing flow needs, and MASQUERADE would then map that flow to another port)
            _in(nat, "iptables", "-A", "INPUT", "-i", "wan", "-m", "conntrack", "--ctstate", "NEW", "-j", "DROP")
            _in(nat, "iptables", "-A", "FORWARD", "-i", "wan", "-m", "conntrack", "--ctstate", "NEW", "-j", "DROP")
            _in(host, "ip", "addr", "add", f"{host_addresses[i]}/28", "dev", "eth0")
            _in(host, "ip", "link", "set", "eth0", "up")
            _in(host, "ip", "route", "add", "default", "via", lan_gateway)
        yield NatLab(inet, nats, hosts, host_addresses, nat_addresses)
    finally:
        for namespace in reversed(made):
            _remove(namespace)
