"""A Client for a process forked after its parent started gRPC (a DataLoader worker under
multiprocessing's "fork"): its calls run in a helper process that this one starts by
exec, and the results come back through two pipes.

Why: a forked child inherits the parent's memory but none of its threads. gRPC's threads
in the parent may hold locks at the moment of the fork (Abseil's, which both gRPC cores in
a process share: the extension's libgrpc and grpcio's), and in the child nothing will
ever release them, so any gRPC there, either core, can hang (seen: a worker stuck in
absl::Mutex::Lock under grpcio after a parent that streamed natively). A process started
by exec inherits nothing; it runs an ordinary Client. docs/epochs.md says more.

The exchange: each message is a pickle (protocol 5) whose large buffers (shot samples)
travel out of band, straight from numpy's memory into the pipe and from the pipe into the
receiver's. A call may be answered by a request for the next item of an iterable argument
(Client.write's shots), which the caller answers, while the answer is on its way.
"""

from __future__ import annotations

import collections.abc
import os
import pickle
import select
import struct
import subprocess
import sys
import threading
import weakref
from typing import Any, Dict, List

import grpc

from shotstream.errors import ShotstreamError
from shotstream.types import Shot

_HEAD = struct.Struct("<I")
_MAX_BUFFERS = 1 << 16


class _Pipes:
    """Framed pickles over a read and a write descriptor. Not thread-safe: its owner
    serialises senders and receivers."""

    def __init__(self, read_fd: int, write_fd: int) -> None:
        for fd in (read_fd, write_fd):
            _widen(fd)
        self._r = open(read_fd, "rb", buffering=0)
        self._w = open(write_fd, "wb", buffering=0)

    def send(self, message) -> None:
        buffers: List[pickle.PickleBuffer] = []
        body = pickle.dumps(message, protocol=5, buffer_callback=buffers.append)
        raws = [b.raw() for b in buffers]
        sizes = [len(body)] + [r.nbytes for r in raws]
        self._write(_HEAD.pack(len(sizes)) + struct.pack(f"<{len(sizes)}Q", *sizes))
        self._write(body)
        for r in raws:
            self._write(r)

    def recv(self):
        (n,) = _HEAD.unpack(self._read(_HEAD.size))
        if not 1 <= n <= _MAX_BUFFERS:
            raise EOFError(f"a message of {n} parts")
        sizes = struct.unpack(f"<{n}Q", self._read(8 * n))
        body = self._read(sizes[0])
        return pickle.loads(body, buffers=[self._read(s) for s in sizes[1:]])

    def _write(self, data) -> None:
        view = memoryview(data).cast("B")
        while view:
            view = view[self._w.write(view):]

    def _read(self, n: int) -> bytearray:
        out = bytearray(n)
        view = memoryview(out)
        while view:
            got = self._r.readinto(view)
            if not got:
                raise EOFError("the other end of the pipe closed")
            view = view[got:]
        return out

    def close(self) -> None:
        for f in (self._r, self._w):
            try:
                f.close()
            except OSError:
                pass


def _widen(fd: int) -> None:
    """The pipe's buffer as large as an unprivileged process may make it (Linux: 1 MiB by
    default, against 64 KiB): a shot crosses in a few writes, not a hundred."""
    try:
        import fcntl
        with open("/proc/sys/fs/pipe-max-size") as f:
            fcntl.fcntl(fd, fcntl.F_SETPIPE_SZ, int(f.read()))
    except (ImportError, OSError, ValueError, AttributeError):
        pass  # the default size works, only slower


def _pulled(value) -> bool:
    """Whether an argument travels as items pulled one at a time (an iterator: a
    generator of modelled shots is never held whole) rather than as its pickle."""
    return isinstance(value, collections.abc.Iterator)


class _Pull:
    """An iterable argument left in the calling process: its items come on request."""

    def __init__(self, handle: int) -> None:
        self.handle = handle


class _Done:
    """The end of a pulled iterable."""


class BridgeClient:
    """The calling side: a helper process running Client(*args, **kwargs), and calls on
    it and on what it returns (streams, jobs). Thread-safe: calls from several threads
    run one at a time (use a Client per thread to overlap them)."""

    def __init__(self, args: tuple, kwargs: Dict[str, Any]) -> None:
        if not sys.executable:
            raise ShotstreamError(grpc.StatusCode.FAILED_PRECONDITION, (
                "this process was forked after its parent started gRPC, and it cannot start "
                "the helper process that would run the client for it (sys.executable is "
                "empty): make clients in the workers only, or start them with "
                "multiprocessing_context='spawn' or 'forkserver'"))
        self._lock = threading.RLock()
        self._pulls: Dict[int, Any] = {}
        self._dropped: List[int] = []
        to_helper_r, to_helper_w = os.pipe()
        from_helper_r, from_helper_w = os.pipe()
        here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(
            [here] + [p for p in sys.path if p and p != here]))
        try:
            self._proc = subprocess.Popen(
                [sys.executable, "-c", "import shotstream._bridge as b; b.serve()",
                 str(to_helper_r), str(from_helper_w)],
                pass_fds=(to_helper_r, from_helper_w), env=env, stdin=subprocess.DEVNULL)
        finally:
            os.close(to_helper_r)
            os.close(from_helper_w)
        self._pipes = _Pipes(from_helper_r, to_helper_w)
        # A Client dropped without close() still ends its helper (the pipe closes).
        self._finalizer = weakref.finalize(self, _Pipes.close, self._pipes)
        self.native = bool(self._exchange(("new", args, kwargs)))

    def call(self, handle: int, name: str, args: tuple, kwargs: Dict[str, Any]):
        """obj.name(*args, **kwargs) in the helper, obj the client (handle 0) or a value
        one of its calls returned."""
        pulls = []

        def out(v):
            if _pulled(v):
                pulls.append(v)
                return _Pull(id(v))
            return v
        args = tuple(out(a) for a in args)
        kwargs = {k: out(v) for k, v in kwargs.items()}
        with self._lock:
            for p in pulls:
                self._pulls[id(p)] = p
            try:
                return self._exchange(("call", handle, name, args, kwargs))
            finally:
                for p in pulls:
                    self._pulls.pop(id(p), None)

    def attribute(self, handle: int, name: str):
        """A plain attribute's value (a property's) of the client or a returned value."""
        with self._lock:
            return self._exchange(("getattr", handle, name))

    def drop(self, handle: int) -> None:
        """Lets the helper release a value this process no longer holds (sent with the
        next call: a finalizer may run in the middle of a message)."""
        self._dropped.append(handle)

    def close(self) -> None:
        """Closes the client in the helper and ends the helper."""
        with self._lock:
            if self._proc.poll() is None:
                try:
                    self._exchange(("close",))
                except (EOFError, OSError, ShotstreamError):
                    pass
            self._finalizer()
            try:
                self._proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()

    def _exchange(self, message):
        """Sends a request and waits for its answer, answering the helper's requests
        for items of pulled iterables meanwhile. The caller holds self._lock."""
        try:
            if self._dropped:
                dropped, self._dropped = self._dropped, []
                self._pipes.send(("drop", dropped))
            self._pipes.send(message)
            while True:
                reply = self._pipes.recv()
                kind = reply[0]
                if kind == "pull":
                    self._pipes.send(self._next_item(reply[1]))
                elif kind == "ok":
                    return reply[1]
                elif kind == "iter":
                    return RemoteIterator(self, reply[1])
                elif kind == "err":
                    raise reply[1]
                else:
                    raise EOFError(f"an answer of kind {kind!r}")
        except (EOFError, BrokenPipeError) as e:
            code = self._proc.poll()
            raise ShotstreamError(grpc.StatusCode.UNAVAILABLE, (
                "the helper process that runs this forked process's client (the parent had "
                f"started gRPC) {'ended with status %s' % code if code is not None else 'stopped answering'}"
                f" ({e})")) from None

    def _next_item(self, handle: int):
        source = self._pulls.get(handle)
        if source is None:
            return ("raise", RuntimeError("an iterable argument of an ended call"))
        try:
            return ("item", next(source))
        except StopIteration:
            return ("item", _Done())
        except BaseException as e:  # raised in the helper's call, as in-process
            return ("raise", e)


class RemoteIterator:
    """A stream, job or page iterator living in the helper: next() and its methods
    (JobStream.commit, close) run there."""

    def __init__(self, bridge: BridgeClient, handle: int) -> None:
        self._bridge = bridge
        self._handle = handle
        weakref.finalize(self, bridge.drop, handle)

    def __iter__(self) -> "RemoteIterator":
        return self

    def __next__(self):
        return _read_only(self._bridge.call(self._handle, "__next__", (), {}))

    def close(self) -> None:
        self._bridge.call(self._handle, "close", (), {})

    def __getattr__(self, name: str):
        if name.startswith("_"):
            raise AttributeError(name)
        value = self._bridge.attribute(self._handle, name)
        if isinstance(value, _Method):
            return lambda *args, **kwargs: self._bridge.call(self._handle, name, args, kwargs)
        return value


class _Method:
    """Says that an attribute asked for is a method (called through call())."""


def _read_only(value):
    """Shots as the in-process client hands them out: samples read-only."""
    if isinstance(value, Shot):
        for a in (value.samples, value.trace_headers):
            if a is not None:
                a.flags.writeable = False
    return value


# The helper's side.

def serve() -> None:
    """The helper process's main: serves one client's calls until the pipe closes."""
    import signal
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the caller takes Ctrl-C
    read_fd, write_fd = int(sys.argv[1]), int(sys.argv[2])

    def watch():
        """Ends the helper once the caller's end of the pipe is gone (the caller exited or
        was killed), even in the middle of a call that waits for the server."""
        hangup = select.poll()
        hangup.register(read_fd, 0)  # POLLHUP and POLLERR only: pending data does not wake it
        while True:
            for _, events in hangup.poll():
                if events & (select.POLLHUP | select.POLLERR | select.POLLNVAL):
                    os._exit(0)
    threading.Thread(target=watch, daemon=True).start()
    try:
        _Helper(_Pipes(read_fd, write_fd)).run()
    except (EOFError, OSError):  # the caller went away mid-answer
        pass
    os._exit(0)  # no interpreter teardown under gRPC's threads


class _Helper:
    def __init__(self, pipes: _Pipes) -> None:
        self._pipes = pipes
        self._values: Dict[int, Any] = {}
        self._next_handle = 1

    def run(self) -> None:
        while True:
            try:
                message = self._pipes.recv()
            except EOFError:
                return
            if not self._serve(message):
                return

    def _serve(self, message) -> bool:
        kind = message[0]
        if kind == "drop":
            for h in message[1]:
                value = self._values.pop(h, None)
                close = getattr(value, "close", None)
                if close is not None:
                    try:
                        close()
                    except Exception:  # a stream's own error: nobody is listening
                        pass
            return True
        if kind == "close":
            client = self._values.get(0)
            if client is not None:
                client.close()
            self._pipes.send(("ok", None))
            return False
        try:
            if kind == "new":
                from shotstream.client import Client
                _, args, kwargs = message
                client = Client(*args, **kwargs)
                self._values[0] = client
                reply = ("ok", client.native)
            elif kind == "getattr":
                _, handle, name = message
                value = getattr(self._values[handle], name)
                reply = ("ok", _Method() if callable(value) else value)
            elif kind == "call":
                _, handle, name, args, kwargs = message
                args = tuple(self._pulled(a) for a in args)
                kwargs = {k: self._pulled(v) for k, v in kwargs.items()}
                result = getattr(self._values[handle], name)(*args, **kwargs)
                if _pulled(result):
                    h = self._next_handle
                    self._next_handle += 1
                    self._values[h] = result
                    reply = ("iter", h)
                else:
                    reply = ("ok", result)
            else:
                reply = ("err", RuntimeError(f"a request of kind {kind!r}"))
        except BaseException as e:  # the caller raises it (StopIteration included)
            reply = ("err", e)
        try:
            self._pipes.send(reply)
        except (pickle.PicklingError, TypeError, AttributeError) as e:  # nothing was sent
            self._pipes.send(("err", ShotstreamError(grpc.StatusCode.INTERNAL, (
                f"an answer of the helper process could not be passed back: {e}; it "
                f"was {reply[1]!r}"))))
        return True

    def _pulled(self, value):
        if not isinstance(value, _Pull):
            return value
        return self._items(value.handle)

    def _items(self, handle: int):
        """The caller's iterable, an item at a time (its requests served meanwhile)."""
        while True:
            self._pipes.send(("pull", handle))
            while True:
                message = self._pipes.recv()
                if message[0] == "item":
                    if isinstance(message[1], _Done):
                        return
                    yield message[1]
                    break
                if message[0] == "raise":
                    raise message[1]
                if not self._serve(message):  # a call made while computing the item
                    raise EOFError("closed while an iterable was pulled")
