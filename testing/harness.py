"""Test harness: real server processes on loopback, SEG-Y files written by segyio."""

import os
import queue
import shutil
import subprocess
import tempfile
import threading
import time
import unittest

import numpy as np
import segyio


def runfile(path):
    """Absolute path of a runfile (workspace-relative path) under bazel test or run."""
    for root in (os.environ.get("TEST_SRCDIR"), os.environ.get("RUNFILES_DIR")):
        if root:
            p = os.path.join(root, "shotstream", path)
            if os.path.exists(p):
                return p
    here = os.path.dirname(os.path.abspath(__file__))
    for base in (os.path.join(here, ".."), os.path.join(here, "..", "bazel-bin")):
        p = os.path.join(base, path)
        if os.path.exists(p):
            return os.path.abspath(p)
    raise FileNotFoundError(path)



def import_shotstream():
    """The shotstream package: the installed one, else the build's (bazel-bin or runfiles)."""
    try:
        import shotstream
    except ImportError:
        import sys
        sys.path.insert(0, runfile("client/python/shotstream/__init__.py")
                        .rsplit("/shotstream/", 1)[0])
        import shotstream
    return shotstream


SERVING, NOT_SERVING = 1, 2


def health(target, service="", creds=None):
    """grpc.health.v1.Health/Check by hand (no grpc_health package on Debian): the
    status enum (SERVING, NOT_SERVING), 0 for UNKNOWN."""
    import grpc
    ch = grpc.secure_channel(target, creds) if creds else grpc.insecure_channel(target)
    with ch:
        name = service.encode()
        req = b"" if not service else b"\x0a" + bytes([len(name)]) + name
        check = ch.unary_unary("/grpc.health.v1.Health/Check",
                               request_serializer=lambda x: x,
                               response_deserializer=lambda x: x)
        resp = check(req, timeout=5)
        return resp[1] if len(resp) >= 2 and resp[0] == 0x08 else 0


SERVER = "server/shotstream_server"
CLI = "client/shotstream"


def server_is_asan():
    """Whether the server binary is an AddressSanitizer build (bazel test --config=asan)."""
    with open(runfile(SERVER), "rb") as f:
        return b"__asan_init" in f.read()


def status_kb(pid, field):
    """A KiB field of /proc/PID/status (VmRSS, RssAnon, ...), 0 if the process is gone."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def rss_kb(pid):
    """Resident memory of process `pid` in KiB (VmRSS), 0 if it is gone."""
    return status_kb(pid, "VmRSS")


def anon_kb(pid):
    """Anonymous resident memory of process `pid` in KiB (RssAnon): what it allocated,
    without the pages of the files it maps; 0 if it is gone."""
    return status_kb(pid, "RssAnon")


def cpu_times(pid):
    """(user, system) CPU seconds of process `pid` so far."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    tick = os.sysconf("SC_CLK_TCK")
    return int(fields[11]) / tick, int(fields[12]) / tick


def cpu_seconds(pid):
    """User + system CPU seconds of process `pid` so far."""
    return sum(cpu_times(pid))


def warm_page_cache(*paths):
    """Reads every file given, or every file of each directory given, so that what is
    measured next starts from the page cache."""
    for p in paths:
        files = [os.path.join(p, f) for f in sorted(os.listdir(p))] if os.path.isdir(p) else [p]
        for path in files:
            with open(path, "rb") as fh:
                while fh.read(16 << 20):
                    pass


def wait_for(predicate, timeout=30, what="condition"):
    """Polls `predicate` (an event seen through a process's output or an RPC) until it
    holds; fails after `timeout` seconds."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        if predicate():
            return
        time.sleep(0.02)
    raise AssertionError(f"timed out waiting for {what}")


def client_paths():
    """The Python client's paths this build can test: native (the C++ extension) and
    grpcio; sanitizer builds ship no extension (python3 cannot load their objects)."""
    import shotstream.client
    return (True, False) if shotstream.client._native is not None else (False,)


def server_with_clients(args):
    """A Server on `args` and a Client on it for each client path (client_paths())."""
    import shotstream
    server = Server(args)
    return server, {native: shotstream.Client(server.target, native=native)
                    for native in client_paths()}


def stop_all(server, clients, tmp):
    """Closes the clients, stops the server and removes the directory `tmp`."""
    import shutil
    for c in clients.values():
        c.close()
    server.stop()
    shutil.rmtree(tmp, ignore_errors=True)


def preload_env(shim, **extra):
    """The environment for a process run under an LD_PRELOAD shim. ASan builds insist on
    coming first in the library list; the shim only wraps libc calls, so that check is
    turned off."""
    asan = os.environ.get("ASAN_OPTIONS", "")
    return dict(os.environ, LD_PRELOAD=shim,
                ASAN_OPTIONS=(asan + ":" if asan else "") + "verify_asan_link_order=0",
                **{k: str(v) for k, v in extra.items()})


class Server:
    """A shotstream_server process; `target` is HOST:PORT once it printed its line."""

    def __init__(self, args, timeout=120, env=None, binary=None, nofile=None, started=None,
                 loaded=True):
        """`binary`: another server executable (an installed one) instead of the build's;
        `nofile`: the process's descriptor limit (soft and hard), as `ulimit -n` sets it;
        `started`: called with the process as soon as it exists (before it listens);
        `loaded`: wait for the "datasets loaded" line too (the server listens while its
        datasets load); else self.loaded_line() waits for it later."""
        self.args = [binary or runfile(SERVER), "--listen=127.0.0.1:0", "--drain_delay=0s"] + list(args)
        # The limit by util-linux's prlimit (it sets it and execs the server: one pid), not
        # by preexec_fn: that makes subprocess fork instead of vfork, which runs the fork
        # handlers of a grpcio this process started (grpcio 1.51's can crash: epochs.md).
        limit = ["prlimit", f"--nofile={nofile}:{nofile}", "--"] if nofile else []
        self.proc = subprocess.Popen(limit + self.args, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True, env=env)
        if started is not None:
            started(self.proc)
        self.stderr_lines = []
        lines = queue.Queue()
        threading.Thread(target=lambda: [lines.put(l) for l in self.proc.stdout] and None,
                         daemon=True).start()
        self._stderr_drain = threading.Thread(target=self._drain_stderr, daemon=True)
        self._stderr_drain.start()
        try:
            line = lines.get(timeout=timeout)
        except queue.Empty:
            self.stop()
            raise RuntimeError(f"server did not start: {''.join(self.stderr_lines)}")
        prefix = "shotstream listening on "
        if not line.startswith(prefix):
            self.stop()
            raise RuntimeError(f"unexpected first line {line!r}: {''.join(self.stderr_lines)}")
        self.target = line[len(prefix):].strip()
        self._lines = lines
        self._timeout = timeout
        self._loaded = None
        if loaded:
            self.loaded_line()

    def loaded_line(self, timeout=None):
        """The server's "shotstream datasets loaded: N READY, M FAILED" line (waits for it)."""
        if self._loaded is None:
            try:
                line = self._lines.get(timeout=timeout or self._timeout)
            except queue.Empty:
                raise RuntimeError("the server did not load its datasets: "
                                   f"{''.join(self.stderr_lines)}") from None
            if not line.startswith("shotstream datasets loaded: "):
                raise RuntimeError(f"unexpected second line {line!r}: "
                                   f"{''.join(self.stderr_lines)}")
            self._loaded = line.strip()
        return self._loaded

    def _drain_stderr(self):
        for l in self.proc.stderr:
            self.stderr_lines.append(l)

    def said(self, text, timeout=30):
        """The server's stderr so far, once a line of it holds `text` (waits for it: a
        line the server wrote before a reply or a state a test saw may still be on its
        way through the reader thread)."""
        try:
            wait_for(lambda: any(text in l for l in self.stderr_lines), timeout=timeout,
                     what=f"the server to say {text!r}")
        except AssertionError as e:
            raise AssertionError(f"{e}; it said:\n{''.join(self.stderr_lines[-20:])}") from None
        return "".join(self.stderr_lines)

    def metrics_port(self):
        """The port of --metrics_listen, from the server's start-up line."""
        prefix = "metrics on http://"
        wait_for(lambda: any(prefix in l for l in self.stderr_lines), what="the metrics line")
        line = next(l for l in self.stderr_lines if prefix in l)
        return int(line.split("(port ")[1].rstrip(")\n"))

    def metrics(self):
        """/metrics (the server runs with --metrics_listen) as {name or name{labels}: value}."""
        import urllib.request
        text = urllib.request.urlopen(f"http://127.0.0.1:{self.metrics_port()}/metrics",
                                      timeout=5).read().decode()
        values = {}
        for line in text.splitlines():
            if line and not line.startswith("#"):
                key, value = line.rsplit(" ", 1)
                values[key] = float(value)
        return values

    def stop(self, sig=None):
        if self.proc.poll() is None:
            self.proc.terminate() if sig is None else self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        # Every line the process wrote is in stderr_lines once stop() returns (unless a
        # child of its own still holds the pipe).
        self._stderr_drain.join(timeout=10)
        for stream in (self.proc.stdout, self.proc.stderr):
            try:
                stream.close()
            except Exception:  # the reader thread may hold it
                pass
        return self.proc.returncode

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()


class ConsumerProcessTest(unittest.TestCase):
    """A test case whose consumers are processes: a survey written once for the class
    (cls.data, two files of N_SHOTS shots of TRACES x SAMPLES IEEE samples, synth's), the
    class's CONSUMER script at cls.script, and cls.env, which gives those processes this
    one's sys.path. Subclasses set the four class attributes."""

    N_SHOTS = TRACES = SAMPLES = 0
    CONSUMER = ""

    @classmethod
    def setUpClass(cls):
        import sys
        import synth
        cls.tmp = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))
        cls.data = os.path.join(cls.tmp, "data")
        synth.write_survey(cls.data, n_shots=cls.N_SHOTS, traces_per_shot=cls.TRACES,
                           n_samples=cls.SAMPLES, n_files=2, fmt=5)
        cls.script = os.path.join(cls.tmp, "consumer.py")
        with open(cls.script, "w") as f:
            f.write(cls.CONSUMER)
        cls.env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)


class SmallSurveyTest(unittest.TestCase):
    """A test case over a survey written once for the class (cls.data: SURVEY, synth's;
    by default 4 shots of 10 traces x 50 IEEE samples in one file) and cls.bad, a
    directory of one file that is not SEG-Y; write() puts a text file (a config) beside
    them."""

    SURVEY = dict(n_shots=4, traces_per_shot=10, n_samples=50, n_files=1, fmt=5)

    @classmethod
    def setUpClass(cls):
        import synth
        cls.tmp = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))
        cls.data = os.path.join(cls.tmp, "data")
        synth.write_survey(cls.data, **cls.SURVEY)
        cls.bad = os.path.join(cls.tmp, "bad")
        os.makedirs(cls.bad)
        with open(os.path.join(cls.bad, "x.sgy"), "wb") as f:
            f.write(b"\x01" * 3700)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def write(self, name, text):
        path = os.path.join(self.tmp, name)
        with open(path, "w") as f:
            f.write(text)
        return path


class ConfigSurveyTest(SmallSurveyTest):
    """SmallSurveyTest over 12 shots of 60 traces x 500 IBM samples in two files, for
    servers started per test from flags or a config (write_config)."""

    SURVEY = dict(n_shots=12, traces_per_shot=60, n_samples=500, n_files=2, fmt=1)

    def write_config(self, text):
        return self.write("config.yaml", text)


class LineOneTest(unittest.TestCase):
    """The end-to-end tests' shared fixture: dataset line1 of three SEG-Y files written
    for the class (IBM and IEEE; shot 3 spans the first two files; ids out of order),
    dataset broken (a file that is not SEG-Y), one server over both
    (--max_chunk_bytes=20000: several chunks a shot) and one client; cls.oracle is
    segyio's reading of every shot, and assert_shot compares a shot with it value for value."""

    @classmethod
    def setUpClass(cls):
        import glob
        import shotstream
        cls.tmp = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))
        d = os.path.join(cls.tmp, "line1")
        os.makedirs(d)
        write_survey(os.path.join(d, "a.sgy"), 1, [1, 2, 3], 24, 301, seed=1)
        write_survey(os.path.join(d, "b.sgy"), 5, [3, 4], 24, 301, seed=2, first_trace=72)
        write_survey(os.path.join(d, "c.sgy"), 5, [-7, 10, 11], 17, 301, seed=3)
        cls.paths = sorted(glob.glob(os.path.join(d, "*.sgy")))
        cls.oracle = segyio_shots(cls.paths)
        bad = os.path.join(cls.tmp, "bad")
        os.makedirs(bad)
        with open(os.path.join(bad, "junk.sgy"), "wb") as f:
            f.write(b"\x00" * 5000)
        cls.server = Server([f"--dataset=line1={d}/*.sgy", f"--dataset=broken={bad}/*.sgy",
                             "--max_chunk_bytes=20000"])
        cls.client = shotstream.Client(cls.server.target)

    @classmethod
    def tearDownClass(cls):
        cls.client.close()
        cls.server.stop()
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def assert_shot(self, shot, sid):
        samples, headers = self.oracle[sid]
        self.assertEqual(shot.shot_id, sid)
        self.assertEqual(shot.samples.dtype, np.float32)
        self.assertEqual(shot.samples.shape, samples.shape)
        np.testing.assert_array_equal(shot.samples, samples)
        for name, values in shot.headers.items():
            np.testing.assert_array_equal(values, headers[name], err_msg=name)


def run_server(*args, timeout=60):
    """Runs the server binary to its end and returns the CompletedProcess, whatever its
    exit status (for tests of how it exits)."""
    return subprocess.run([runfile(SERVER)] + list(args), capture_output=True, text=True,
                          timeout=timeout)


def free_port():
    """A TCP port on 127.0.0.1 that was free a moment ago (for a server restarted on it)."""
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def bench_across_a_restart(server_args, port, dataset, shots, *flags):
    """Runs `shotstream bench` of `shots` against a server on `port`, SIGKILLs the server
    once the stream has started (its stderr line says so) and starts it again on the same
    port; returns (returncode, stdout, stderr) of the bench. Raises if the stream ended
    before the server was killed."""
    import signal
    server = Server(server_args)
    bench = subprocess.Popen(
        [runfile(CLI), "bench", f"--target=127.0.0.1:{port}", f"--dataset={dataset}",
         "--shots=" + ",".join(map(str, shots)), *flags],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        wait_for(lambda: any(l.startswith("stream ") and f"shots {len(shots)} " in l
                             for l in server.stderr_lines), what="the stream to start")
        if bench.poll() is not None:
            raise AssertionError("the stream ended before the server was killed")
        server.stop(signal.SIGKILL)
        server = Server(server_args)
        out, err = bench.communicate(timeout=300)
    finally:
        server.stop()
        if bench.poll() is None:
            bench.kill()
    return bench.returncode, out, err


def cli(*args, check=True, env=None):
    """Runs the C++ CLI (with `env` added to the environment); returns CompletedProcess."""
    res = subprocess.run([runfile(CLI)] + list(args), capture_output=True, text=True,
                         timeout=300, env=dict(os.environ, **env) if env else None)
    if check and res.returncode != 0:
        raise AssertionError(f"shotstream {args} failed: {res.stderr}")
    return res


def cli_bench(target, dataset, env=None, **flags):
    """`shotstream bench` with --KEY=VALUE flags; its JSON line as a dict."""
    import json
    args = ["bench", f"--target={target}", f"--dataset={dataset}"]
    args += [f"--{k}={v}" for k, v in flags.items()]
    return json.loads(cli(*args, env=env).stdout.strip().splitlines()[-1])


def node(script, *args, test=None):
    """Runs tests/js/SCRIPT with Node.js (its npm packages: tools/install_deps.sh runs `npm
    ci` in tests/js) and returns its stdout. Skips `test` where Node.js is not installed;
    fails where it is but the packages are missing."""
    import shutil
    exe = shutil.which("node")
    if exe is None:
        test.skipTest("Node.js is not installed (tools/install_deps.sh installs it)")
    # The runfile links to the source tree, where Node finds tests/js/node_modules.
    path = os.path.realpath(runfile(f"tests/js/{script}"))
    if not os.path.isdir(os.path.join(os.path.dirname(path), "node_modules")):
        raise AssertionError("tests/js/node_modules is missing: run tools/install_deps.sh "
                             "(npm ci in tests/js)")
    res = subprocess.run([exe, path, *args], capture_output=True, text=True, timeout=300)
    if res.returncode != 0:
        raise AssertionError(f"node {script} failed: {res.stderr}")
    return res.stdout


def cli_server(*args):
    """Runs the server binary to completion (e.g. --index_only)."""
    res = subprocess.run([runfile(SERVER)] + list(args), capture_output=True, text=True,
                         timeout=300)
    if res.returncode != 0:
        raise AssertionError(f"shotstream_server {args} failed: {res.stderr}")
    return res


def write_survey(path, fmt, shots, traces_per_shot, n_samples, first_trace=0, seed=0,
                 dt_us=2000):
    """A big-endian SEG-Y file written by segyio: FieldRecord = shot id, plausible geometry
    with coordinate and elevation scalars, random samples (IBM-exact for format 1)."""
    rng = np.random.default_rng(seed)
    n = len(shots) * traces_per_shot
    spec = segyio.spec()
    spec.format = fmt
    spec.samples = np.arange(n_samples) * dt_us / 1000.0
    spec.tracecount = n
    spec.sorting = None
    with segyio.create(path, spec) as f:
        f.bin.update(hdt=dt_us, hns=n_samples, format=fmt)
        for k in range(n):
            shot = shots[k // traces_per_shot]
            r = k % traces_per_shot
            f.header[k] = {
                segyio.TraceField.FieldRecord: int(shot),
                segyio.TraceField.TRACE_SEQUENCE_FILE: first_trace + k + 1,
                segyio.TraceField.SourceGroupScalar: -100,
                segyio.TraceField.ElevationScalar: -10,
                segyio.TraceField.SourceX: int(shot) * 5000,
                segyio.TraceField.SourceY: 123456,
                segyio.TraceField.GroupX: int(shot) * 5000 + r * 2500 - 100000,
                segyio.TraceField.GroupY: 123456 + r,
                segyio.TraceField.offset: r * 25 - 1000,
                segyio.TraceField.SourceSurfaceElevation: 1000 + int(shot),
                segyio.TraceField.ReceiverGroupElevation: 900 + r,
                segyio.TraceField.INLINE_3D: 7,
                segyio.TraceField.CROSSLINE_3D: r,
                segyio.TraceField.EnergySourcePoint: int(shot) + 1000,
            }
            data = rng.standard_normal(n_samples).astype(np.float32) * 100
            if fmt == 1:
                # Values with 20 significant bits are exact in IBM float.
                m, e = np.frexp(data)
                data = np.ldexp(np.round(np.ldexp(m, 20)), e - 20).astype(np.float32)
            f.trace[k] = data


HEADER_FIELDS = {
    # contract name: (segyio field, scalar field or None)
    "field_record": (segyio.TraceField.FieldRecord, None),
    "energy_source_point": (segyio.TraceField.EnergySourcePoint, None),
    "inline": (segyio.TraceField.INLINE_3D, None),
    "crossline": (segyio.TraceField.CROSSLINE_3D, None),
    "offset": (segyio.TraceField.offset, None),
    "source_x": (segyio.TraceField.SourceX, segyio.TraceField.SourceGroupScalar),
    "source_y": (segyio.TraceField.SourceY, segyio.TraceField.SourceGroupScalar),
    "group_x": (segyio.TraceField.GroupX, segyio.TraceField.SourceGroupScalar),
    "group_y": (segyio.TraceField.GroupY, segyio.TraceField.SourceGroupScalar),
    "source_elevation": (segyio.TraceField.SourceSurfaceElevation,
                         segyio.TraceField.ElevationScalar),
    "receiver_elevation": (segyio.TraceField.ReceiverGroupElevation,
                           segyio.TraceField.ElevationScalar),
}


def _scaled(value, scalar):
    if scalar > 0:
        return float(value) * scalar
    if scalar < 0:
        return float(value) / -scalar
    return float(value)


def segyio_shots(paths, key=segyio.TraceField.FieldRecord):
    """The oracle: {shot id: (samples (n_traces, n_samples), {header: values})}, traces in
    file order, read by segyio."""
    shots = {}
    for path in sorted(paths):
        with segyio.open(path, ignore_geometry=True) as f:
            keys = f.attributes(key)[:]
            for k in range(f.tracecount):
                h = f.header[k]
                row = {}
                for name, (field, scalar) in HEADER_FIELDS.items():
                    row[name] = _scaled(h[field], h[scalar]) if scalar else float(h[field])
                shots.setdefault(int(keys[k]), []).append((f.trace[k].astype(np.float32), row))
    out = {}
    for sid, rows in shots.items():
        samples = np.stack([r[0] for r in rows])
        headers = {name: np.array([r[1][name] for r in rows]) for name in HEADER_FIELDS}
        out[sid] = (samples, headers)
    return out
