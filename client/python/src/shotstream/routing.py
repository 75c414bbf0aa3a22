"""Where each shot comes from (several servers), and when a broken stream is tried again.
Pure functions and a small policy object, the same rules as the C++ client
(client/client.cc, client/retry_budget.h); client/testdata/retry_cases.txt pins both."""

from __future__ import annotations

from typing import Dict, List, Optional, Sequence, Set, Tuple

import grpc

from shotstream.errors import ShotstreamError

__all__ = ["expand_targets", "RetryBudget"]


def check_target(target: str) -> None:
    """ValueError unless target is HOST:PORT with a port number, [IPv6]:PORT,
    dns:///NAME:PORT or unix:PATH (a target without a port is not port 0)."""
    if isinstance(target, str) and target.startswith("unix:"):
        return
    host, sep, port = str(target).rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536 or \
            (host.startswith("[") and not host.endswith("]")):
        raise ValueError(f"target {target!r}: expected HOST:PORT with a port number "
                         "(e.g. 127.0.0.1:50051, [::1]:50051, dns:///storage-1:50051)")


def expand_targets(targets: Sequence[str], resolve=None) -> List[str]:
    """Targets as given, except that "dns:///NAME:PORT" becomes one target per address
    NAME resolves to (e.g. a Kubernetes headless Service in front of one server per
    storage node)."""
    import socket
    resolve = resolve or socket.getaddrinfo
    out = []
    for t in targets:
        if not t.startswith("dns:///"):
            out.append(t)
            continue
        hostport = t[len("dns:///"):]
        host, _, port = hostport.rpartition(":")
        if not host or not port.isdigit():
            raise ValueError(f"target {t!r}: expected dns:///NAME:PORT")
        addrs = []
        for family, _, _, _, sockaddr in resolve(host.strip("[]"), int(port),
                                                 type=socket.SOCK_STREAM):
            a = f"[{sockaddr[0]}]:{port}" if family == socket.AF_INET6 else f"{sockaddr[0]}:{port}"
            if a not in addrs:
                addrs.append(a)
        if not addrs:
            raise ValueError(f"target {t!r}: {host} resolves to no address")
        out.extend(addrs)
    return out


def route(name: str, shot_ids: Sequence[int],
          per_target: Sequence[Optional[Sequence[int]]]) -> Tuple[List[int], Dict[int, List[int]]]:
    """(target index per shot: a server that holds it, spreading shots held by several;
    shot id -> every target holding it). per_target: each target's shot ids, or None
    where the target does not serve the dataset."""
    holders: Dict[int, List[int]] = {}
    for t, ids in enumerate(per_target):
        if ids is None:
            continue
        for sid in ids:
            holders.setdefault(int(sid), []).append(t)
    out = []
    for k, sid in enumerate(shot_ids):
        h = holders.get(int(sid))
        if not h:
            raise ShotstreamError(grpc.StatusCode.NOT_FOUND,
                                  f"dataset '{name}' has no shot {int(sid)} on any target")
        out.append(h[k % len(h)])
    return out, holders


def reroute(routes: List[int], holders: Dict[int, List[int]], shot_ids: Sequence[int],
            start: int, failed: int, given_up: Set[int]) -> bool:
    """Moves shots from `start` on that were routed to target `failed` to another target
    that holds them, where there is one; True if any moved."""
    given_up.add(failed)
    moved = False
    for k in range(start, len(routes)):
        if routes[k] != failed:
            continue
        others = [t for t in holders.get(shot_ids[k], ()) if t not in given_up]
        if others:
            routes[k] = others[k % len(others)]
            moved = True
    return moved


def split_job(name: str, shot_ids: Sequence[int],
              held: Optional[List[Optional[Sequence[int]]]]) -> Dict[int, List[int]]:
    """A job's shots per target: {target index: its shot ids, in order}, each shot to the
    first target that holds it (the C++ client's rule). held: each target's shot ids (None
    where it lacks the dataset), or None for one target (it takes all). NOT_FOUND names a
    shot no target holds."""
    if held is None:
        return {0: list(shot_ids)}
    sets = [set() if h is None else set(int(x) for x in h) for h in held]
    per_target: Dict[int, List[int]] = {}
    for sid in shot_ids:
        t = next((k for k, h in enumerate(sets) if sid in h), None)
        if t is None:
            raise ShotstreamError(grpc.StatusCode.NOT_FOUND,
                                  f"no target holds shot {sid} of {name!r}")
        per_target.setdefault(t, []).append(sid)
    return per_target


class RetryBudget:
    """How many times a broken stream is tried again: at most `retries` failures in a
    row, each delivered shot starting the count again; before the n-th retry in a row a
    backoff of min(2 s, 50 ms * 2**n). The C++ client's RetryBudget is the same."""

    def __init__(self, retries: int) -> None:
        self.retries = int(retries)
        self.failures_in_a_row = 0

    def delivered(self) -> None:
        """A shot was delivered."""
        self.failures_in_a_row = 0

    def failed(self) -> Optional[float]:
        """A transient failure: the backoff in seconds before trying again, or None when
        the budget is spent (the error is the caller's then)."""
        if self.failures_in_a_row >= self.retries:
            return None
        self.failures_in_a_row += 1
        return min(2.0, 0.05 * 2 ** self.failures_in_a_row)
