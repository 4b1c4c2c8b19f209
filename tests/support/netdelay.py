"""A link with a known RTT: two network namespaces joined by a userspace delay line between TUN devices.

`tc netem` is not built into these kernels; namespaces and TUN are. One process opens
`tunA` inside namespace A and `tunB` inside namespace B (a TUN device belongs to the netns
that is current when /dev/net/tun is opened), then copies every IP packet across, holding
it for a fixed delay per direction (heap + select). ICMP, the TCP handshake and HTTP are all
delayed, as with netem (measured bias +0.4–0.7 ms: README, Regions).

    with DelayLink(rtt_ms=40) as link:          # A = 10.213.1.1, B = 10.213.1.2
        link.popen_in("b", [...server...]); link.run_in("a", [...probe...])

`link.call_in("a", fn, ...)` runs a Python function in a thread inside namespace A (setns is per thread: the
sockets it opens live there), so a probe can run in-process, without a CLI start-up inside the namespace.
`DelayLink.unavailable()` says why it cannot run here (not root, no netns, no /dev/net/tun).
"""

from __future__ import annotations

import ctypes
import fcntl
import heapq
import os
import select
import shutil
import struct
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import TypeVar

__all__ = ["ADDR_A", "ADDR_B", "DelayLink"]

ADDR_A, ADDR_B = "10.213.1.1", "10.213.1.2"
_CLONE_NEWNET, _TUNSETIFF, _IFF_TUN, _IFF_NO_PI = 0x40000000, 0x400454CA, 0x0001, 0x1000
T = TypeVar("T")


@contextmanager
def _in_netns(ns: str) -> Iterator[None]:
    """The calling thread inside network namespace `ns` for the block, back in its own afterwards."""
    libc = ctypes.CDLL("libc.so.6", use_errno=True)
    home = os.open("/proc/thread-self/ns/net", os.O_RDONLY)
    target = os.open(f"/var/run/netns/{ns}", os.O_RDONLY)
    try:
        if libc.setns(target, _CLONE_NEWNET) != 0:
            raise OSError(ctypes.get_errno(), f"setns({ns}) failed")
        yield
    finally:
        libc.setns(home, _CLONE_NEWNET)
        os.close(home), os.close(target)


def _open_tun_in(ns: str, name: str) -> int:
    with _in_netns(ns):
        fd = os.open("/dev/net/tun", os.O_RDWR)
        fcntl.ioctl(fd, _TUNSETIFF, struct.pack("16sH", name.encode(), _IFF_TUN | _IFF_NO_PI))
    return fd


def _forward(ns_a: str, ns_b: str, delay_ab_ms: float, delay_ba_ms: float) -> None:
    """Create the two TUN devices, address them, print 'ready', then copy packets with the delays forever."""
    fa, fb = _open_tun_in(ns_a, "tunA"), _open_tun_in(ns_b, "tunB")
    for ns, dev, me, peer in ((ns_a, "tunA", ADDR_A, ADDR_B), (ns_b, "tunB", ADDR_B, ADDR_A)):
        subprocess.run(["ip", "-n", ns, "addr", "add", me, "peer", peer, "dev", dev], check=True)
        subprocess.run(["ip", "-n", ns, "link", "set", dev, "up"], check=True)
    print("ready", flush=True)
    route = {fa: (fb, delay_ab_ms / 1000), fb: (fa, delay_ba_ms / 1000)}
    heap: list[tuple[float, int, int, bytes]] = []
    seq = 0
    while True:
        timeout = max(0.0, heap[0][0] - time.monotonic()) if heap else None
        readable, _, _ = select.select([fa, fb], [], [], timeout)
        now = time.monotonic()
        for fd in readable:
            pkt = os.read(fd, 65535)
            out, delay = route[fd]
            seq += 1
            heapq.heappush(heap, (now + delay, seq, out, pkt))
        while heap and heap[0][0] <= time.monotonic():
            _, _, out, pkt = heapq.heappop(heap)
            try:
                os.write(out, pkt)
            except OSError:
                pass  # a device going down at teardown


class DelayLink:
    """Namespaces `ttft<pid>a`/`ttft<pid>b` joined by a delay line; removed again on exit (also on error)."""

    def __init__(self, rtt_ms: float, *, delay_ab_ms: float | None = None, delay_ba_ms: float | None = None) -> None:
        self.delay_ab_ms = rtt_ms / 2 if delay_ab_ms is None else delay_ab_ms
        self.delay_ba_ms = rtt_ms / 2 if delay_ba_ms is None else delay_ba_ms
        self.rtt_ms = self.delay_ab_ms + self.delay_ba_ms
        self.ns = {"a": f"ttft{os.getpid()}a{int(self.rtt_ms)}", "b": f"ttft{os.getpid()}b{int(self.rtt_ms)}"}
        self._procs: list[subprocess.Popen] = []

    @staticmethod
    def unavailable() -> str | None:
        """Why a delay link cannot be built here, or None when it can."""
        if os.geteuid() != 0:
            return "needs root (network namespaces and TUN devices)"
        if not shutil.which("ip"):
            return "needs the `ip` tool (iproute2)"
        if not os.path.exists("/dev/net/tun"):
            return "needs /dev/net/tun"
        probe = f"ttftprobe{os.getpid()}"
        r = subprocess.run(["ip", "netns", "add", probe], capture_output=True, text=True)
        if r.returncode != 0:
            return f"cannot create a network namespace: {r.stderr.strip()}"
        subprocess.run(["ip", "netns", "del", probe], capture_output=True)
        return None

    def __enter__(self) -> DelayLink:
        try:
            for ns in self.ns.values():
                subprocess.run(["ip", "netns", "add", ns], check=True, capture_output=True)
                subprocess.run(["ip", "-n", ns, "link", "set", "lo", "up"], check=True)
            cmd = [
                sys.executable,
                "-m",
                "tests.support.netdelay",
                self.ns["a"],
                self.ns["b"],
                str(self.delay_ab_ms),
                str(self.delay_ba_ms),
            ]
            if shutil.which("chrt"):  # real-time priority removes most scheduling tails (feasibility §1)
                cmd = ["chrt", "-f", "50", *cmd]
            root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
            fwd = subprocess.Popen(cmd, cwd=root, stdout=subprocess.PIPE, text=True)
            self._procs.append(fwd)
            if fwd.stdout.readline().strip() != "ready":
                raise RuntimeError("the delay-line forwarder did not start")
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def popen_in(self, side: str, argv: list[str], **kw) -> subprocess.Popen:
        """Start argv inside namespace `side` ('a' or 'b'); stopped on exit."""
        p = subprocess.Popen(["ip", "netns", "exec", self.ns[side], *argv], **kw)
        self._procs.append(p)
        return p

    def run_in(self, side: str, argv: list[str], **kw) -> subprocess.CompletedProcess:
        """Run argv to completion inside namespace `side`."""
        return subprocess.run(["ip", "netns", "exec", self.ns[side], *argv], **kw)

    def call_in(self, side: str, fn: Callable[..., T], *args, **kw) -> T:
        """fn(*args, **kw) in a fresh thread inside namespace `side` (sockets it opens belong there); its result."""

        def inside() -> T:
            with _in_netns(self.ns[side]):
                return fn(*args, **kw)

        with ThreadPoolExecutor(max_workers=1) as pool:
            return pool.submit(inside).result()

    def __exit__(self, *exc) -> None:
        for p in reversed(self._procs):
            if p.poll() is None:
                p.terminate()
                try:
                    p.wait(5)
                except subprocess.TimeoutExpired:
                    p.kill()
        self._procs.clear()
        for ns in self.ns.values():
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)


if __name__ == "__main__":
    _forward(sys.argv[1], sys.argv[2], float(sys.argv[3]), float(sys.argv[4]))
