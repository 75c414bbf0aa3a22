"""The grpcio fallback: shotstream.Client over the generated gRPC stubs alone, where the
native extension (the C++ client) is not built (an sdist installed without compilers,
sanitizer builds) or not wanted (Client(native=False), SHOTSTREAM_NATIVE=0). Slower: one Python thread's CPU is the limit
(docs/clients.md). It decodes float32, native and int16 itself (wire.py), lossless and
quantized with python3-blosc and zfp with python3-zfpy, and says which package it needs
where one is missing. Thread-safety: as grpcio's channels; each stream is for one thread."""

from __future__ import annotations

import queue
import threading
import time
from typing import Dict, Iterator, List

import grpc

from shotstream import routing
from shotstream.errors import ShotstreamError
from shotstream.routing import RetryBudget
from shotstream.types import DatasetInfo
from shotstream.v1 import shotstream_pb2 as pb
from shotstream.v1 import shotstream_pb2_grpc as pb_grpc
from shotstream.wire import Assembler, crc32

_CHANNEL_OPTIONS = [
    ("grpc.max_receive_message_length", -1),
    ("grpc.max_send_message_length", 16 * 1024 * 1024),
    ("grpc.http2.max_frame_size", 16 * 1024 * 1024 - 1),
    ("grpc.http2.lookahead_bytes", 64 * 1024 * 1024),
]

# Transient: a server restarting, shutting down (its streams are cut) or out of reach.
_RETRYABLE = (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.CANCELLED)


# gRPC's words for a server that cancelled its calls at the end of its shutdown, and ours
# (the native client's are the same: client/client.cc FromGrpc).
_SERVER_CANCELLED = "Cancelling all calls"
_SERVER_CANCELLED_SAYS = (
    "the server is shutting down: its grace period ended while this stream's data waited for "
    "the consumer to read it (gRPC: Cancelling all calls); resume on another server")


# gRPC's words for a connection reset under a stream (a server that exited with bytes
# unread: the reset can overtake the cancellation), and ours around them (as FromGrpc's).
_RESET = "Connection reset by peer"
_RESET_SAYS = (
    "the connection to the server was reset: the server exited (a shutdown whose grace period "
    "ended before this stream's data was read) or the network failed (gRPC: {}); resume on "
    "another server")


def _error(exc: BaseException) -> ShotstreamError:
    if isinstance(exc, ShotstreamError):
        return exc
    if isinstance(exc, grpc.RpcError):
        if exc.code() == grpc.StatusCode.UNAVAILABLE and exc.details() == _SERVER_CANCELLED:
            return ShotstreamError(exc.code(), _SERVER_CANCELLED_SAYS)
        if exc.code() == grpc.StatusCode.UNAVAILABLE and _RESET in (exc.details() or ""):
            return ShotstreamError(exc.code(), _RESET_SAYS.format(exc.details()))
        return ShotstreamError(exc.code(), exc.details())
    return ShotstreamError(grpc.StatusCode.UNKNOWN, str(exc))


def _put_unless_stopped(q: "queue.Queue", item, stop: threading.Event) -> bool:
    """Puts `item` into the bounded queue `q`, waiting for room unless `stop` is set
    (then False)."""
    while not stop.is_set():
        try:
            q.put(item, timeout=0.1)
            return True
        except queue.Full:
            continue
    return False




class _Rerouted(Exception):
    """Internal: the remaining shots moved to other targets; stream again."""




class GrpcioClient:
    """Client's calls over grpcio channels to `targets` (already expanded). `creds`:
    grpc.ChannelCredentials or None (plaintext). reconnects and wire_bytes count over
    its life."""

    def __init__(self, targets: List[str], metadata, creds, retries: int, timeout,
                 reconnect_timeout: float, connect_timeout: float) -> None:
        self._targets = targets
        self._metadata = metadata
        self._retries = retries
        self._timeout = timeout
        self._reconnect_timeout = reconnect_timeout
        self._connect_timeout = connect_timeout
        self._reached = set()  # target indices whose channel has connected
        self.reconnects = 0
        self.wire_bytes = 0
        self._channels = []
        for t in self._targets:
            if creds is None:
                ch = grpc.insecure_channel(t, options=_CHANNEL_OPTIONS)
            else:
                ch = grpc.secure_channel(t, creds, options=_CHANNEL_OPTIONS)
            self._channels.append(ch)
        self._stubs = [pb_grpc.ShotStreamStub(ch) for ch in self._channels]
        # StreamShots with raw responses: chunks are split by wire.split_chunk, not parsed
        # whole.
        self._raw_stream = [ch.unary_stream("/shotstream.v1.ShotStream/StreamShots",
                                            request_serializer=pb.StreamShotsRequest.SerializeToString,
                                            response_deserializer=None)
                            for ch in self._channels]
        self._raw_job = [ch.stream_stream("/shotstream.v1.ShotStream/StreamJob",
                                          request_serializer=pb.JobRequest.SerializeToString,
                                          response_deserializer=None)
                         for ch in self._channels]

    def commit_job(self, dataset, job, shot_ids, step, trained, epoch, seed, resume):
        """CommitJob of `trained` at `step` on every target that runs part of the job."""
        per_target = routing.split_job(
            dataset, shot_ids, None if len(self._stubs) == 1 else
            [None if i is None else i.shot_ids for i in self._dataset_per_target(dataset)])
        where = {}
        if len(self._stubs) == 1:
            where = {0: list(trained)}
        else:
            owner = {s: t for t, ids in per_target.items() for s in ids}
            for s in trained:
                if s not in owner:
                    raise ShotstreamError(grpc.StatusCode.INVALID_ARGUMENT,
                                          f"commit: shot {s} is not one of the job's shot ids")
                where.setdefault(owner[s], []).append(s)
        for t in per_target:
            self._reach(t)
            try:
                self._stubs[t].CommitJob(pb.JobCommit(
                    dataset=dataset, job=job, epoch=int(epoch), seed=int(seed) % (1 << 64),
                    step=int(step), shot_ids=where.get(t, []), resume=resume or b""),
                    metadata=self._metadata, timeout=self._timeout)
            except grpc.RpcError as e:
                raise _error(e) from None

    def stream_job(self, dataset, job, shot_ids, epoch, seed, queue_depth, sel, resume=b"",
                   takeover=True):
        per_target: Dict[int, List[int]] = routing.split_job(
            dataset, shot_ids, None if len(self._stubs) == 1 else
            [None if i is None else i.shot_ids for i in self._dataset_per_target(dataset)])
        out = queue.Queue(maxsize=max(1, int(queue_depth)))
        stop = threading.Event()
        requests = {t: queue.Queue() for t in per_target}
        calls = {}
        _END = object()

        def put(item):
            return _put_unless_stopped(out, item, stop)

        def messages(t):
            # Done counts are cumulative: of the acks waiting, only the newest is sent.
            while True:
                m = requests[t].get()
                while m is not None and m.HasField("progress") and not requests[t].empty():
                    nxt = requests[t].get()
                    m = nxt if nxt is None or nxt.HasField("progress") else m
                if m is None:
                    return
                yield m

        def receive(t):
            try:
                self._reach(t)
                requests[t].put(pb.JobRequest(start=pb.JobStart(
                    dataset=dataset, job=job, shot_ids=per_target[t], epoch=int(epoch),
                    seed=int(seed) % (1 << 64), queue_depth=int(queue_depth),
                    selection=sel.message(), resume=resume or b"",
                    no_takeover=not takeover)))
                call = self._raw_job[t](messages(t), metadata=self._metadata)
                calls[t] = call
                asm = Assembler()
                for chunk in call:
                    before = asm.wire_bytes
                    shot = asm.add(chunk)
                    self.wire_bytes += asm.wire_bytes - before
                    if shot is not None and not put((t, shot)):
                        return
                put((t, _END))
            except BaseException as e:  # handed to the consumer
                if not stop.is_set():
                    put((t, _error(e)))
            finally:
                requests[t].put(None)

        threads = [threading.Thread(target=receive, args=(t,), name="shotstream-job",
                                    daemon=True) for t in per_target]
        for th in threads:
            th.start()
        taken = {t: 0 for t in per_target}
        active = set(per_target)
        last = None
        index = 0
        try:
            while active:
                if last is not None:  # asking for the next: done with the last one
                    taken[last] += 1
                    requests[last].put(pb.JobRequest(progress=pb.JobProgress(done=taken[last])))
                    last = None
                t, item = out.get()
                if item is _END:
                    active.discard(t)
                    continue
                if isinstance(item, ShotstreamError):
                    raise item
                item.index = index
                index += 1
                last = t
                yield item
        finally:
            stop.set()
            for t, call in list(calls.items()):
                if t in active:
                    call.cancel()
            for th in threads:
                th.join()

    def _reach(self, t):
        """Returns once target t's channel is connected (at most connect_timeout seconds);
        else raises UNAVAILABLE naming the target."""
        if t in self._reached:
            return
        ready = grpc.channel_ready_future(self._channels[t])
        try:
            ready.result(timeout=self._connect_timeout)
        except grpc.FutureTimeoutError:
            raise ShotstreamError(
                grpc.StatusCode.UNAVAILABLE,
                f"{self._targets[t]}: cannot connect within {self._connect_timeout:g}s "
                "(is a server running there?)") from None
        finally:
            ready.cancel()
        self._reached.add(t)


    def close(self) -> None:
        for ch in self._channels:
            ch.close()

    def list_datasets(self) -> List[DatasetInfo]:
        """Every dataset of every target (by name, first target first)."""
        seen, several = {}, set()
        for t, stub in enumerate(self._stubs):
            self._reach(t)
            try:
                resp = stub.ListDatasets(pb.ListDatasetsRequest(), metadata=self._metadata,
                                         timeout=self._timeout)
            except grpc.RpcError as e:
                raise _error(e) from None
            for d in resp.datasets:
                if d.name in seen:
                    several.add(d.name)
                seen.setdefault(d.name, DatasetInfo.from_message(d))
        # A dataset several targets hold: its shots and traces are their union, as
        # dataset() reports them (shots can span targets: the counts cannot just be added).
        for name in several:
            merged = self.dataset(name)
            seen[name].n_shots, seen[name].n_traces = merged.n_shots, merged.n_traces
        return list(seen.values())

    _PAGE = 250_000  # shots per GetDataset page

    def _get_dataset(self, stub, name):
        """All pages of GetDataset, merged into one DatasetInfo message."""
        info = stub.GetDataset(pb.GetDatasetRequest(name=name, page_size=self._PAGE),
                               metadata=self._metadata, timeout=self._timeout)
        while info.next_page_token:
            page = stub.GetDataset(pb.GetDatasetRequest(name=name, page_size=self._PAGE,
                                                        page_token=info.next_page_token),
                                   metadata=self._metadata, timeout=self._timeout)
            info.shot_ids.extend(page.shot_ids)
            info.shot_trace_counts.extend(page.shot_trace_counts)
            info.source_positions.extend(page.source_positions)
            info.next_page_token = page.next_page_token
        return info

    def _dataset_per_target(self, name):
        infos = []
        last = None
        for t, stub in enumerate(self._stubs):
            try:
                self._reach(t)
                infos.append(self._get_dataset(stub, name))
            except (grpc.RpcError, ShotstreamError) as e:
                infos.append(None)
                if last is None or last.code() == grpc.StatusCode.NOT_FOUND:
                    last = e  # a target's real reason wins over another's NOT_FOUND
        if all(i is None for i in infos):
            raise _error(last)
        return infos

    def dataset(self, name: str) -> DatasetInfo:
        """The dataset's info; with several targets, the union of their shots."""
        infos = self._dataset_per_target(name)
        present = [i for i in infos if i is not None]
        if len(present) == 1:
            return DatasetInfo.from_message(present[0])
        merged = pb.DatasetInfo()
        merged.CopyFrom(present[0])
        counts = {}
        for i in present:
            for sid, n in zip(i.shot_ids, i.shot_trace_counts):
                counts[sid] = counts.get(sid, 0) + n
        del merged.shot_ids[:]
        del merged.shot_trace_counts[:]
        for sid in sorted(counts):
            merged.shot_ids.append(sid)
            merged.shot_trace_counts.append(counts[sid])
        merged.n_shots = len(counts)
        merged.n_traces = sum(i.n_traces for i in present)
        return DatasetInfo.from_message(merged)

    def dataset_pages(self, name: str, page_size: int = 100_000) -> Iterator[DatasetInfo]:
        """The dataset's info a page at a time, for datasets too large to hold every shot
        id at once: each page's shot_ids and shot_trace_counts are up to `page_size` of its
        shots (the other fields are the dataset's). With several targets, each target's
        pages in turn (a shot several targets hold comes once per target)."""
        found = False
        for t, stub in enumerate(self._stubs):
            self._reach(t)
            token = ""
            while True:
                try:
                    page = stub.GetDataset(pb.GetDatasetRequest(name=name, page_size=max(1, page_size),
                                                                page_token=token),
                                           metadata=self._metadata, timeout=self._timeout)
                except grpc.RpcError as e:
                    if e.code() == grpc.StatusCode.NOT_FOUND:
                        break  # not on this target
                    raise _error(e) from None
                found = True
                token = page.next_page_token
                yield DatasetInfo.from_message(page)
                if not token:
                    break
        if not found:
            raise ShotstreamError(grpc.StatusCode.NOT_FOUND, f"no server has dataset '{name}'")

    def _route(self, name, shot_ids):
        """See routing.route; one target holds everything."""
        if len(self._stubs) == 1:
            return [0] * len(shot_ids), {}
        infos = self._dataset_per_target(name)
        return routing.route(name, shot_ids,
                             [None if i is None else i.shot_ids for i in infos])

    def _check_selection(self, name, sel) -> Iterator:
        """A stream of no shot: the servers that hold the dataset (the first target where
        none does) check it and the selection; what they refuse is raised, nothing is read
        (the C++ client's CheckSelection)."""
        targets = [0]
        if len(self._stubs) > 1:
            infos = self._dataset_per_target(name)
            targets = [t for t, i in enumerate(infos) if i is not None] or [0]
        for t in targets:
            self._reach(t)
            req = pb.StreamShotsRequest(dataset=name, selection=sel.message())
            try:
                for _ in self._raw_stream[t](req, metadata=self._metadata):
                    pass
            except grpc.RpcError as e:
                raise _error(e) from None
        return iter(())

    def write(self, name, items, sample_interval_us, sample_format, max_chunk_bytes,
              parts=None):
        """Client.write: `items` as client._shots_to_write gives them; `parts` the
        WriteParts fields of a multi-part write (a dict), or None."""
        failure = []

        def messages():
            start = pb.WriteStart(dataset=name, sample_interval_us=float(sample_interval_us),
                                  sample_format=int(sample_format))
            if parts:
                start.parts.CopyFrom(pb.WriteParts(**parts))
            yield pb.WriteShotsRequest(start=start)
            try:
                for sid, a, headers in items:
                    n_traces, n_samples = a.shape
                    # wire/chunk_cut.h's TracesPerChunk
                    per = max(1, max_chunk_bytes // max(1, n_samples * 4))
                    crc = 0
                    first = True
                    for t in range(0, max(n_traces, 1), per):
                        part = a[t:t + per].tobytes()
                        crc = crc32(part, crc)
                        m = pb.WriteShotsRequest(shot=pb.ShotPart(samples=part))
                        if first:
                            m.shot.shot_id, m.shot.n_traces, m.shot.n_samples = \
                                sid, n_traces, n_samples
                            for h, col in headers.items():
                                m.shot.headers.add(name=h, values=col.tolist())
                            first = False
                        if t + per >= n_traces:
                            m.shot.shot_end, m.shot.crc32 = True, crc
                        yield m
            except GeneratorExit:  # grpcio closes us: the call already ended
                raise
            except BaseException as e:  # the call is cancelled: the server keeps nothing
                failure.append(e)
                return
            yield pb.WriteShotsRequest(finish=pb.WriteFinish())

        self._reach(0)
        call = self._stubs[0].WriteShots.future(messages(), metadata=self._metadata)
        try:
            response = call.result()
        except grpc.RpcError as e:
            if failure:
                raise failure[0] from None
            raise _error(e) from None
        if failure:  # the iterable failed after the server had everything: not reached
            raise failure[0]
        return DatasetInfo.from_message(response.dataset, written=response)

    def stream(self, name, shot_ids, queue_depth, sel, pieces) -> Iterator:
        if not shot_ids:
            return self._check_selection(name, sel)
        route, holders = self._route(name, shot_ids)
        out = queue.Queue(maxsize=max(1, int(queue_depth)))
        stop = threading.Event()
        state = {"call": None}
        _END = object()

        def put(item):
            return _put_unless_stopped(out, item, stop)

        def runs(start):
            # Maximal runs of consecutive shots on one target, in request order.
            k = start
            while k < len(shot_ids):
                t = route[k]
                j = k
                while j < len(shot_ids) and route[j] == t:
                    j += 1
                yield t, k, j
                k = j

        def receive():
            delivered = 0
            parts = 0  # pieces: traces of the shot at `delivered` yielded (0 between shots)
            budget = RetryBudget(self._retries)
            given_up = set()
            try:
                while delivered < len(shot_ids) and not stop.is_set():
                    t = route[delivered]
                    try:
                        for t, k, j in runs(delivered):
                            try:
                                self._reach(t)
                            except ShotstreamError:
                                # Never reached: another holder, or the error.
                                if routing.reroute(route, holders, shot_ids, delivered, t,
                                                   given_up):
                                    raise _Rerouted() from None
                                raise
                            req = pb.StreamShotsRequest(dataset=name, shot_ids=shot_ids[k:j],
                                                        queue_depth=int(queue_depth),
                                                        selection=sel.message())
                            call = self._raw_stream[t](req, metadata=self._metadata)
                            state["call"] = call
                            asm = Assembler(pieces)
                            for chunk in call:
                                before = asm.wire_bytes
                                shot = asm.add(chunk)
                                self.wire_bytes += asm.wire_bytes - before
                                if shot is None:
                                    continue
                                shot.index = delivered
                                end = shot.first_trace + len(shot.samples)
                                if pieces and shot.first_trace < parts:
                                    # Resumed inside a shot: what came before is not again.
                                    if end <= parts and not shot.last_piece:
                                        continue
                                    keep = parts - shot.first_trace
                                    shot.samples = shot.samples[keep:]
                                    shot.first_trace = parts
                                    shot.headers, shot.trace_headers = {}, None
                                if not put(shot):
                                    call.cancel()
                                    return
                                parts = 0 if shot.last_piece else end
                                if shot.last_piece:
                                    delivered += 1
                                budget.delivered()
                            if stop.is_set():
                                return
                            if delivered < j:
                                raise ShotstreamError(
                                    grpc.StatusCode.DATA_LOSS,
                                    f"stream ended after {delivered - k} of {j - k} shots")
                    except _Rerouted:
                        self.reconnects += 1
                        continue
                    except grpc.RpcError as e:
                        if stop.is_set():
                            return
                        if e.code() in _RETRYABLE and routing.reroute(
                                route, holders, shot_ids, delivered, t, given_up):
                            self.reconnects += 1  # another server holds the shots
                            continue
                        backoff = budget.failed() if e.code() in _RETRYABLE else None
                        if backoff is not None:
                            self.reconnects += 1
                            # Back off, then wait (bounded) for the target to come back.
                            time.sleep(backoff)
                            ready = grpc.channel_ready_future(self._channels[route[delivered]])
                            try:
                                ready.result(timeout=self._reconnect_timeout)
                            except grpc.FutureTimeoutError:
                                pass
                            finally:
                                ready.cancel()
                            continue
                        raise
                put(_END)
            except BaseException as e:  # handed to the consumer
                put(_error(e))

        thread = threading.Thread(target=receive, name="shotstream-receive", daemon=True)
        thread.start()
        try:
            while True:
                item = out.get()
                if item is _END:
                    return
                if isinstance(item, ShotstreamError):
                    raise item
                yield item
        finally:
            stop.set()
            call = state["call"]
            if call is not None:
                call.cancel()
            thread.join()

