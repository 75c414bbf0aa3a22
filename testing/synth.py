"""Synthetic surveys written with numpy (fast, any size): big-endian SEG-Y, IBM float or
IEEE, shots across several files, plausible marine-like geometry."""

import os

import numpy as np


def ieee_to_ibm(x):
    """float32 array -> big-endian IBM float words (uint32), rounded to nearest."""
    x = np.asarray(x, dtype=np.float64)
    sign = (x < 0).astype(np.uint32) << 31
    a = np.abs(x)
    out = np.zeros(a.shape, dtype=np.uint32)
    nz = a > 0
    m, e2 = np.frexp(a[nz])                      # a = m * 2^e2, m in [0.5, 1)
    e16 = np.ceil(e2 / 4.0).astype(np.int64)     # a = f * 16^e16, f in [1/16, 1)
    f = np.ldexp(m, e2 - 4 * e16)
    frac = np.round(np.ldexp(f, 24)).astype(np.int64)
    carry = frac >= (1 << 24)
    frac[carry] >>= 4
    e16[carry] += 1
    biased = np.clip(e16 + 64, 0, 127).astype(np.uint32)
    out[nz] = (biased << 24) | frac.astype(np.uint32)
    return (out | sign).astype(">u4")


def _header_bytes(n_samples, dt_us, fmt):
    text = np.full(3200, 0x40, dtype=np.uint8)  # EBCDIC blanks
    binh = np.zeros(400, dtype=np.uint8)
    binh[16:18] = np.frombuffer(np.array(dt_us, ">i2").tobytes(), np.uint8)
    binh[20:22] = np.frombuffer(np.array(n_samples, ">u2").tobytes(), np.uint8)
    binh[24:26] = np.frombuffer(np.array(fmt, ">i2").tobytes(), np.uint8)
    binh[300] = 1  # rev 1
    return text.tobytes() + binh.tobytes()


_INT_TYPES = {2: (">i4", 1e6), 3: (">i2", 1e4), 8: ("i1", 1e2)}


def _encode(data, fmt):
    """float32 samples -> the big-endian words of SEG-Y format fmt (1, 2, 3, 5 or 8);
    integer formats get the samples scaled and rounded."""
    if fmt == 1:
        return ieee_to_ibm(data)
    if fmt == 5:
        return data.astype(">f4")
    dtype, scale = _INT_TYPES[fmt]
    info = np.iinfo(np.dtype(dtype))
    return np.clip(np.round(data * scale), info.min, info.max).astype(dtype)


def write_survey(directory, n_shots=48, traces_per_shot=480, n_samples=2000, n_files=4,
                 fmt=1, dt_us=2000, seed=0, sixteen_bit=False):
    """Writes n_files files, shots split evenly (a shot may span two files). Returns the
    list of paths and the total sample bytes (as float32). sixteen_bit: the samples of a
    16-bit recording converted to float (integers within +-32767, as format 3 would hold
    them), whatever the format."""
    os.makedirs(directory, exist_ok=True)
    rng = np.random.default_rng(seed)
    n_traces = n_shots * traces_per_shot
    per_file = -(-n_traces // n_files)
    th_dtype = np.dtype([("h", "u1", 240)])
    t = np.arange(n_samples) * dt_us * 1e-6
    wavelet_f = 25.0
    paths = []
    for f in range(n_files):
        lo, hi = f * per_file, min(n_traces, (f + 1) * per_file)
        if lo >= hi:
            break
        k = np.arange(lo, hi)
        shot = k // traces_per_shot + 1
        rcv = k % traces_per_shot
        offset = 100 + rcv * 12.5
        headers = np.zeros((hi - lo, 60), dtype=">i4")  # 240 bytes as 4-byte words
        headers[:, 0] = k + 1                         # bytes 1-4 trace seq line
        headers[:, 2] = shot                          # bytes 9-12 field record
        headers[:, 3] = rcv + 1                       # bytes 13-16 trace number
        headers[:, 4] = shot                          # bytes 17-20 energy source point
        headers[:, 9] = offset.astype(np.int64)       # bytes 37-40 offset
        headers[:, 10] = 0                            # receiver elevation
        headers[:, 11] = 0                            # source elevation
        h16 = headers.view(">i2")                     # 2-byte view: index = (byte-1)/2
        h16[:, 34] = -1                               # bytes 69-70 elevation scalar
        h16[:, 35] = -100                             # bytes 71-72 coordinate scalar
        sx = (shot * 50.0 * 100).astype(np.int64)
        headers[:, 18] = sx                           # bytes 73-76 source x
        headers[:, 19] = 0
        headers[:, 20] = sx + (offset * 100).astype(np.int64)  # bytes 81-84 group x
        headers[:, 21] = 0
        h16[:, 57] = n_samples                        # bytes 115-116
        h16[:, 58] = dt_us                            # bytes 117-118
        # Samples: a few hyperbolic events plus noise.
        data = rng.standard_normal((hi - lo, n_samples)).astype(np.float32) * 0.05
        for v, t0 in ((1500.0, 0.2), (2200.0, 0.6), (3000.0, 1.1)):
            tt = np.sqrt(t0 ** 2 + (offset / v) ** 2)
            arg = (t[None, :] - tt[:, None]) * np.pi * wavelet_f
            data += ((1 - 2 * arg ** 2) * np.exp(-arg ** 2)).astype(np.float32)
        if sixteen_bit:
            data = np.clip(np.round(data * 1e4), -32767, 32767).astype(np.float32)
        words = _encode(data, fmt)
        path = os.path.join(directory, f"survey_{f:03d}.sgy")
        with open(path, "wb") as out:
            out.write(_header_bytes(n_samples, dt_us, fmt))
            bps = words.dtype.itemsize
            rows = np.empty((hi - lo, 240 + bps * n_samples), dtype=np.uint8)
            rows[:, :240] = headers.view(np.uint8).reshape(hi - lo, 240)
            rows[:, 240:] = words.view(np.uint8).reshape(hi - lo, bps * n_samples)
            out.write(rows.tobytes())
        paths.append(path)
    return paths, n_traces * n_samples * 4


def write_le_segy(path, data, shot_ids, offsets=None, dt_us=2000):
    """IEEE float32 little-endian SEG-Y (format 5) of `data` [shots, traces, samples],
    written with numpy (segyio 1.8.3 writes such files wrongly): field_record (bytes 9-12)
    the shot's id, the sample count (bytes 115-116) in every trace header, and offset
    (bytes 37-40, as int32) from `offsets` [traces] when given."""
    n_shots, n_traces, ns = data.shape
    head = np.zeros(3600, np.uint8)
    head[3216:3218] = np.frombuffer(np.int16(dt_us).astype("<i2").tobytes(), np.uint8)
    head[3220:3222] = np.frombuffer(np.uint16(ns).astype("<u2").tobytes(), np.uint8)
    head[3224:3226] = np.frombuffer(np.int16(5).astype("<i2").tobytes(), np.uint8)
    th = np.zeros((n_shots, n_traces, 240), np.uint8)
    ids = np.asarray(list(shot_ids), dtype="<i4")
    th[:, :, 8:12] = np.frombuffer(ids.tobytes(), np.uint8).reshape(n_shots, 1, 4)
    if offsets is not None:
        off = np.asarray(offsets).astype("<i4")
        th[:, :, 36:40] = np.frombuffer(off.tobytes(), np.uint8).reshape(1, n_traces, 4)
    th[:, :, 114:116] = np.frombuffer(np.uint16(ns).astype("<u2").tobytes(), np.uint8)
    rec = np.zeros((n_shots, n_traces), dtype=[("h", "V240"), ("s", "<f4", (ns,))])
    rec["h"] = th.view("V240")[..., 0]
    rec["s"] = data
    with open(path, "wb") as f:
        f.write(head.tobytes())
        f.write(rec.tobytes())
