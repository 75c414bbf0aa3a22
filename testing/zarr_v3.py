"""Zarr v3 stores written as the v3 core specification lays them out (zarr.json metadata,
chunk keys, the bytes / transpose / blosc / zstd / gzip / crc32c codecs and
sharding_indexed), for tests and benchmarks: Debian's zarr-python (2.13) writes v2 only.
Compression goes through numcodecs (the library zarr-python itself uses); CRC-32C is
computed here and pinned to RFC 3720's check value. Arrays only; groups are a zarr.json
with node_type "group"."""

import json
import os

import numpy as np


def _crc32c_table():
    table = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        table.append(c)
    return table


_TABLE = _crc32c_table()


def crc32c(data):
    """CRC-32C (Castagnoli), as the crc32c codec appends it (little-endian)."""
    c = 0xFFFFFFFF
    for b in bytes(data):
        c = _TABLE[(c ^ b) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF


assert crc32c(b"123456789") == 0xE3069283  # RFC 3720, B.4

_V3_TYPES = {"float32": "float32", "float64": "float64", "int8": "int8", "int16": "int16",
             "int32": "int32", "int64": "int64", "uint8": "uint8", "uint16": "uint16",
             "uint32": "uint32", "uint64": "uint64", "bool": "bool"}


def group(path, attributes=None):
    os.makedirs(path, exist_ok=True)
    with open(os.path.join(path, "zarr.json"), "w") as f:
        json.dump({"zarr_format": 3, "node_type": "group", "attributes": attributes or {}}, f)


def _encode(chunk, codecs):
    """One chunk (an ndarray of the chunk's shape) through `codecs` (v3 JSON objects)."""
    import numcodecs
    a = chunk
    out = None
    for c in codecs:
        name, conf = c["name"], c.get("configuration", {})
        if name == "transpose":
            a = np.ascontiguousarray(np.transpose(a, conf["order"]))
        elif name == "bytes":
            endian = conf.get("endian", "little")
            out = a.astype(a.dtype.newbyteorder("<" if endian == "little" else ">")).tobytes()
        elif name == "blosc":
            shuffle = {"noshuffle": 0, "shuffle": 1, "bitshuffle": 2}[conf.get("shuffle", "shuffle")]
            out = numcodecs.Blosc(cname=conf.get("cname", "lz4"), clevel=conf.get("clevel", 5),
                                  shuffle=shuffle, blocksize=conf.get("blocksize", 0)).encode(out)
        elif name == "zstd":
            out = numcodecs.Zstd(level=conf.get("level", 1)).encode(out)
        elif name == "gzip":
            out = numcodecs.GZip(level=conf.get("level", 5)).encode(out)
        elif name == "crc32c":
            out = bytes(out) + crc32c(out).to_bytes(4, "little")
        else:
            raise ValueError(name)
    return bytes(out)


def _key(coords, encoding, sep):
    if encoding == "default":
        return sep.join(["c"] + [str(c) for c in coords])
    return sep.join(str(c) for c in coords) if coords else "0"


def write_array(path, data, chunks, codecs=({"name": "bytes", "configuration": {"endian": "little"}},),
                fill_value=0, dimension_names=None, attributes=None, shard=None,
                index_location="end", key_encoding="default", separator=None, skip=()):
    """Writes `data` as a v3 array at `path`. With `shard`, the stored chunks are shards of
    that shape holding `chunks`-shaped inner chunks encoded with `codecs` (index: bytes +
    crc32c). Chunks (or inner chunks) whose grid coordinates are in `skip`, or that are all
    fill_value, are not written."""
    data = np.asarray(data)
    os.makedirs(path, exist_ok=True)
    sep = separator or ("/" if key_encoding == "default" else ".")
    stored_chunk = shard or chunks
    index_codecs = [{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "crc32c"}]
    meta_codecs = list(codecs)
    if shard:
        meta_codecs = [{"name": "sharding_indexed", "configuration": {
            "chunk_shape": list(chunks), "codecs": list(codecs), "index_codecs": index_codecs,
            "index_location": index_location}}]
    fv = fill_value
    if isinstance(fv, float) and np.isnan(fv):
        fv = "NaN"
    meta = {"zarr_format": 3, "node_type": "array", "shape": list(data.shape),
            "data_type": _V3_TYPES[str(data.dtype.newbyteorder("="))] if data.dtype != bool else "bool",
            "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": list(stored_chunk)}},
            "chunk_key_encoding": {"name": key_encoding, "configuration": {"separator": sep}},
            "fill_value": fv, "codecs": meta_codecs, "attributes": attributes or {}}
    if dimension_names:
        meta["dimension_names"] = list(dimension_names)
    with open(os.path.join(path, "zarr.json"), "w") as f:
        json.dump(meta, f)

    def padded(block, shape):
        full = np.full(shape, fill_value, dtype=data.dtype)
        full[tuple(slice(0, s) for s in block.shape)] = block
        return full

    grid = [-(-n // c) for n, c in zip(data.shape, stored_chunk)]
    for coords in np.ndindex(*grid):
        sl = tuple(slice(c * s, (c + 1) * s) for c, s in zip(coords, stored_chunk))
        block = padded(data[sl], stored_chunk)
        key = os.path.join(path, *_key(coords, key_encoding, sep).split("/"))
        if not shard:
            if coords in skip or np.all(block == fill_value):
                continue
            os.makedirs(os.path.dirname(key), exist_ok=True)
            with open(key, "wb") as f:
                f.write(_encode(block, codecs))
            continue
        per = [s // c for s, c in zip(shard, chunks)]
        body, index = b"", []
        n_inner = int(np.prod(per))
        head = n_inner * 16 + 4 if index_location == "start" else 0
        for inner in np.ndindex(*per):
            isl = tuple(slice(i * c, (i + 1) * c) for i, c in zip(inner, chunks))
            part = block[isl]
            whole = tuple(o * p + i for o, p, i in zip(coords, per, inner))
            if whole in skip or np.all(part == fill_value):
                index.append((2**64 - 1, 2**64 - 1))
                continue
            enc = _encode(np.ascontiguousarray(part), codecs)
            index.append((head + len(body), len(enc)))
            body += enc
        if all(i == (2**64 - 1, 2**64 - 1) for i in index):
            continue
        idx = b"".join(o.to_bytes(8, "little") + n.to_bytes(8, "little") for o, n in index)
        idx += crc32c(idx).to_bytes(4, "little")
        os.makedirs(os.path.dirname(key), exist_ok=True)
        with open(key, "wb") as f:
            f.write(idx + body if index_location == "start" else body + idx)
