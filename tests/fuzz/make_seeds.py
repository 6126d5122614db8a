#!/usr/bin/env python3
"""Writes one valid frame of every message type into a folder, as seeds for
the wire fuzzer (tests/fuzz/run.sh). Layouts: share/doc/wire-format.md; the
protocol version is read from lib/wire/frame.h, so seeds follow its bumps.
Each file starts with the fuzzer's piece-size byte (0 = feed at once).
After a change, run tests/fuzz/update_outcomes.sh for FuzzCorpusTest."""
import hashlib
import os
import re
import struct
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
MAGIC = 0x52545350


def wire_version():
    with open(os.path.join(HERE, "../../lib/wire/frame.h")) as f:
        return int(re.search(r"kWireVersion = (\d+);", f.read()).group(1))


VERSION = wire_version()


def frame(mtype, meta, data=b"", request_id=7, flags=0):
    body = struct.pack("<I", len(meta)) + meta + data
    return struct.pack("<IHHIQQ", MAGIC, VERSION, mtype, flags, len(body),
                       request_id) + body


def s(text):
    return struct.pack("<I", len(text)) + text


def desc(key, dims, dtype=1, size=4):
    n = 1
    for d in dims:
        n *= d
    return (struct.pack("<IBBB", key, dtype, 0, len(dims)) +
            b"".join(struct.pack("<q", d) for d in dims) +
            struct.pack("<Q", n * size)), b"\x00" * (n * size)


def coded(key, n, codec, data):
    """A float32 [n] descriptor in `codec` (1 fp16 .. 5 onebit), and its
    record `data` (share/doc/wire-format.md, "Compressed tensors")."""
    return (struct.pack("<IBBB", key, 1, codec, 1) + struct.pack("<q", n) +
            struct.pack("<Q", len(data))), data


def compressed(mtype, version, records, tail=b"\0" * 8):
    """A push or push_pull of compressed `records` [(n, codec, data)]."""
    metas, datas = [], []
    for key, (n, codec, data) in enumerate(records):
        m, d = coded(key, n, codec, data)
        metas.append(m)
        datas.append(d)
    meta = struct.pack("<QI", version, len(records)) + b"".join(metas) + tail
    return frame(mtype, meta, b"".join(datas))


def tensors(mtype, version, shapes, tail=b"", order=None):
    """A frame of zero tensors of `shapes`; `order`: tagged (flag bit 0),
    each descriptor's bytes after its u32 index, descriptors in that order."""
    metas, datas = [], []
    for key, dims in enumerate(shapes):
        m, d = desc(key, dims)
        metas.append(m)
        datas.append(d)
    meta = struct.pack("<QI", version, len(shapes)) + b"".join(metas) + tail
    if order is None:
        return frame(mtype, meta, b"".join(datas))
    data = b"".join(struct.pack("<I", i) + datas[i] for i in order)
    return frame(mtype, meta, data, flags=1)


def ids(values):
    return b"".join(struct.pack("<q", v) for v in values)


def sparse_rows(key, row_ids, row_dim):
    """One SparseRows record: its meta and its rows' data."""
    m, d = desc(key, [len(row_ids), row_dim])
    return m + ids(row_ids), d


def sparse(mtype, version, shapes, rows, requests=None, tail=b""):
    """A push, push_pull or params frame with dense tensors of `shapes`
    (keys 0..), then sparse `rows` [(key, ids, row_dim)], then (push,
    push_pull) `requests` [(key, ids)], then `tail` (params: members, flags)."""
    metas, datas = [], []
    for key, dims in enumerate(shapes):
        m, d = desc(key, dims)
        metas.append(m)
        datas.append(d)
    meta = struct.pack("<QI", version, len(shapes)) + b"".join(metas)
    meta += struct.pack("<I", len(rows))
    for key, row_ids, row_dim in rows:
        m, d = sparse_rows(key, row_ids, row_dim)
        meta += m
        datas.append(d)
    if requests is not None:
        meta += struct.pack("<I", len(requests))
        for key, row_ids in requests:
            meta += struct.pack("<II", key, len(row_ids)) + ids(row_ids)
    return frame(mtype, meta + tail, b"".join(datas))


def module(data):
    """A module frame: the sha256 of `data`, a uint8 [n] raw descriptor,
    then `data` itself as the data section."""
    sha = hashlib.sha256(data).hexdigest().encode()
    n = len(data)
    meta = (s(sha) + struct.pack("<IBBB", 0, 8, 0, 1) + struct.pack("<q", n) +
            struct.pack("<Q", n))
    return frame(20, meta, data)


def push_batch(version, x_dims, y_dims, y_dtype=5, y_size=8):
    """A push_batch frame: float32 inputs x (key 0) of `x_dims` and targets
    y (key 1) of `y_dims`, int64 by default; data x's bytes, then y's."""
    x_meta, x_data = desc(0, x_dims)
    y_meta, y_data = desc(1, y_dims, y_dtype, y_size)
    meta = struct.pack("<Q", version) + x_meta + y_meta
    return frame(21, meta, x_data + y_data)


def batch_done(version, loss_bits, flags):
    """A batch_done frame: the loss as the bits of a double, then flags."""
    return frame(22, struct.pack("<QQB", version, loss_bits, flags))


def main(out):
    os.makedirs(out, exist_ok=True)
    reg = (struct.pack("<I", 2) + s(b"fc.weight") + struct.pack("<BBqq", 1, 2, 3, 4)
           + s(b"fc.bias") + struct.pack("<BBq", 1, 1, 3))
    nonce, proof = b"n" * 32, b"p" * 32
    members = struct.pack("<III", 2, 0, 2) + b"\x01"  # workers 0 and 2, stop
    seeds = {
        "hello": frame(1, struct.pack("<BIIBIQ", 2, 1, 3, 0, 0, 0)),
        "claim": frame(1, struct.pack("<BIIBIQ", 1, 1, 3, 2, 2, 17)),
        "error": frame(2, struct.pack("<H", 2) + s(b"bad")),
        "get_job": frame(3, b""),
        "job_spec": frame(4, s(b'{"mode":"sync"}')),
        "register": frame(5, reg),
        "ack": frame(6, b""),
        "pull": frame(7, struct.pack("<Q", 3)),
        "push_pull": tensors(8, 2, [[2, 3], [3]], b"\0" * 8),
        "params": tensors(9, 4, [[4], []], b"\0" * 4 + members),
        "done": frame(10, s(b'{"steps":5}')),
        "push": tensors(11, 1, [[1, 2, 1]], b"\0" * 8),
        "push_pull-tagged": tensors(8, 2, [[2, 3], [3], [1]], b"\0" * 8,
                                    order=[2, 0, 1]),
        "push-tagged": tensors(11, 1, [[1, 2, 1], [2]], b"\0" * 8,
                               order=[1, 0]),
        "auth_hello": frame(12, s(nonce)),
        "challenge": frame(13, s(nonce) + s(proof)),
        "auth": frame(14, s(proof)),
        "server_info": frame(15, s(b"127.0.0.1:29500")),
        "shard": tensors(16, 5, [[2], [3, 1]]),
        "step_record": tensors(25, 6, [[2], [3, 1], [2]]),
        "heartbeat": frame(17, s(b'{"steps":3,"samples":192,"loss":0.5}')),
        "snapshot": frame(18, struct.pack("<QB", 6, 1)),
        "snapshot-replay": frame(18, struct.pack("<QB", 6, 7)),
        "get_module": frame(19, b""),
        "module": module(b"PK\x03\x04 a TorchScript archive"),
        "push_batch": push_batch(3, [2, 3], [2]),
        "batch_done": batch_done(4, struct.unpack("<Q", struct.pack(
            "<d", 0.6931))[0], 0),
    }
    # A heartbeat without progress (what servers other than rank 0 get).
    seeds["heartbeat-none"] = frame(17, s(b""))
    # --placement server: a batch of float32 targets (regression, images of
    # 1x2x2), and the reply that stops the job with a NaN loss.
    seeds["push_batch-float32"] = push_batch(5, [3, 1, 2, 2], [3, 1], 1, 4)
    seeds["batch_done-stop"] = batch_done(6, 0x7FF8000000000001, 1)
    # Sparse rows (an embedding table of 10 rows of 2, as key 1): a push_pull
    # with the rows its batch touched and the ids of its next batch, the
    # params reply with those rows, and a push.
    seeds["push_pull-sparse"] = sparse(8, 3, [[3]], [(1, [0, 4, 9], 2)],
                                       [(1, [2, 4])])
    seeds["params-sparse"] = sparse(9, 4, [[3]], [(1, [2, 4], 2)],
                                    tail=b"\0" * 4 + b"\0")
    seeds["push-sparse"] = sparse(11, 3, [], [(1, [7], 2), (2, [], 3)], [])
    # Compressed records of 4 elements (params chunk 256, ratio 0.01: k = 1),
    # as in the golden bytes of share/doc/wire-format.md.
    f32 = lambda *v: struct.pack("<%df" % len(v), *v)
    seeds["push_pull-fp16"] = compressed(8, 2, [(4, 1, bytes.fromhex(
        "003c00c0003800bc"))])
    seeds["push-bf16"] = compressed(11, 2, [(4, 2, bytes.fromhex(
        "803f00c0003f80bf"))])
    seeds["push_pull-int8"] = compressed(8, 2, [(4, 3, f32(2.0) + bytes(
        [64, 0x81, 32, 127]))])
    seeds["push_pull-topk"] = compressed(8, 2, [(4, 4, struct.pack("<I", 1) +
                                                 f32(-2.0))])
    seeds["push-onebit"] = compressed(11, 2, [(4, 5, f32(1.25) + bytes(
        [0x06]))])
    seeds["push_pull-mixed"] = compressed(8, 2, [
        (300, 3, f32(1.0, 0.5) + bytes(300)),
        (600, 4, struct.pack("<6I", 0, 5, 9, 100, 200, 599) + f32(*[1.0] * 6)),
        (9, 5, f32(0.5) + bytes(2))])
    for name, data in seeds.items():
        for piece in (0, 5):
            with open(os.path.join(out, f"{name}-{piece}"), "wb") as f:
                f.write(bytes([piece]) + data)
    with open(os.path.join(out, "two-frames-3"), "wb") as f:
        f.write(b"\x03" + seeds["hello"] + seeds["push"])


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "seeds")
