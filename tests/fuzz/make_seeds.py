"""Writes the seed corpora of the fuzzers (small valid inputs) into corpus/."""

import os
import struct
import sys
import zlib

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tools"))


def segy(fmt=5, ns=8, traces=3, little=False):
    e = "<" if little else ">"
    head = bytearray(3600)
    struct.pack_into(e + "hHh", head, 3216, 1000, ns, 0)
    struct.pack_into(e + "h", head, 3224, fmt)
    bps = {1: 4, 2: 4, 3: 2, 5: 4, 6: 8, 8: 1}[fmt]
    out = bytes(head)
    for t in range(traces):
        th = bytearray(240)
        struct.pack_into(e + "i", th, 8, 10 + t // 2)
        struct.pack_into(e + "H", th, 114, ns)
        out += bytes(th) + bytes(range(t, t + ns * bps)) * 1
    return out


def catalog():
    """A version-3 catalog (server/catalog/catalog_store.h): shot 10 as a run of two
    traces, shot 11 as a list of one, in a file of 400-byte traces from byte 3600."""
    b = b"SSCATLG\0" + struct.pack("<I", 3)
    key = b"field_record"
    b += struct.pack("<I", len(key)) + key + struct.pack("<I", 1)
    p = b"a.sgy"
    b += struct.pack("<I", len(p)) + p + struct.pack("<QqI", 1000000, 1, 2)
    b += struct.pack("<QQQQQ", 2, 2, 1, 1, 0)  # shots, segments, list, files, positions
    b += bytes(-len(b) % 8)  # the columns start 8-byte aligned
    b += struct.pack("<qQII", 10, 0, 2, 1) + struct.pack("<qQII", 11, 1, 1, 1)
    b += struct.pack("<QII", 0, 0, 2) + struct.pack("<QII", 0, 0, 1 | 0x80000000)
    b += struct.pack("<I", 2) + bytes(4)  # the list (trace index 2), padded to 8 bytes
    b += struct.pack("<QQ", 3600, 400)  # the file's geometry
    return b + struct.pack("<I", zlib.crc32(b))


def lossless_frame(n):
    """A c-blosc frame of n float32 samples, as the server writes them (bitshuffle, LZ4)."""
    import blosc
    import numpy as np
    return blosc.compress(np.arange(n, dtype="<f4").tobytes(), typesize=4, cname="lz4",
                          shuffle=blosc.BITSHUFFLE, clevel=5)


def quantized_payload(n):
    """A QUANTIZED payload of n samples (the proto's layout): step 0.5, width 2, then a
    c-blosc frame of zigzag integers (bitshuffle, LZ4)."""
    import blosc
    import numpy as np
    z = np.arange(n, dtype="<u2")
    return struct.pack("<fB3x", 0.5, 2) + blosc.compress(
        z.tobytes(), typesize=2, cname="lz4", shuffle=blosc.BITSHUFFLE, clevel=5)


def npy(array):
    """A .npy file as numpy writes it."""
    import io
    out = io.BytesIO()
    np.save(out, array)
    return out.getvalue()


def main():
    c = os.path.join(HERE, "corpus")
    seeds = {
        "segy_header": {"be5": b"\0" + segy(5), "le5": b"\0" + segy(5, little=True),
                        "ibm": b"\0" + segy(1), "int16": b"\0" + segy(3, ns=5),
                        "su": b"\1" + segy(5)[3600:]},
        "trace_decode": {"ibm": b"\0" + bytes(range(64)), "le": b"\x80" + bytes(range(64)),
                         "f64": b"\x04" + bytes(range(64))},
        "catalog_load": {"ok": catalog()},
        "npy_header": {"f4_3d": npy(np.arange(24, dtype="<f4").reshape(2, 3, 4)),
                       "i2_be": npy(np.arange(12, dtype=">i2").reshape(3, 4)),
                       "f8": npy(np.zeros((2, 5), "<f8"))},
        # encoding, format | byte order, traces, samples, then the payload.
        "sample_decode": {"lossless": b"\x00\x05\x02\x08" + lossless_frame(16),
                          "int16": b"\x01\x05\x02\x04" + bytes(8) + bytes(range(16)),
                          "native": b"\x02\x83\x02\x04" + bytes(range(16)),
                          "quantized": b"\x03\x05\x02\x08" + quantized_payload(16)},
        # byte 0 bit 0: force dataset "d"; then a serialized StreamShotsRequest.
        "request_validation": {"ok": b"\x01" + b"\x0a\x01d" + b"\x12\x03\x01\x02\x03"
                               + b"\x18\x02" + b"\x22\x08\x0a\x06offset",
                               "unknown": b"\x00" + b"\x0a\x03xyz\x12\x01\x07"},
    }
    for name, files in seeds.items():
        os.makedirs(os.path.join(c, name), exist_ok=True)
        for f, data in files.items():
            with open(os.path.join(c, name, f), "wb") as out:
                out.write(data)


if __name__ == "__main__":
    main()
