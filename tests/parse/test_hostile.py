"""Hostile and odd input to the reader: every case becomes skipped events counted in a lossy
note, or one clear error, with bounded work."""

from __future__ import annotations

import gzip
import json
import zlib
from pathlib import Path

import msgspec
import pytest

from tests import tracebuild as tb
from traceview import compression
from traceview.errors import TraceviewError
from traceview.parse import json_text, read_trace
from traceview.parse import source as source_module
from traceview.parse import stream as stream_module
from traceview.parse.decode import BatchDecoder

OK = tb.cpu_op("aten::mm", 1, 1)


def read(tmp_path, text: str | bytes, name: str = "t.json", **kw):
    path = tmp_path / name
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    return read_trace(path, **kw)


def lossy(trace) -> list[str]:
    return [n.message for n in trace.notes if n.lossy]


def doc(*events: object) -> str:
    return json.dumps({"traceEvents": list(events)})


def test_nesting_deeper_than_the_decoder_recurses_drops_that_event(tmp_path):
    deep = '{"ph": "X", "cat": "cpu_op", "name": "deep", "ts": 1, "dur": 1, "args": {"x": '
    deep += "[" * 5000 + "]" * 5000 + "}}"
    text = '{"traceEvents": [' + json.dumps(OK) + ", " + deep + ", " + json.dumps(OK) + "]}"
    trace = read(tmp_path, text)
    assert trace.events["name"].cast(str).to_list() == ["aten::mm", "aten::mm"]
    assert lossy(trace) == ["1 event could not be read and was skipped"]
    # As an event of its own, and as the last one.
    trace = read(
        tmp_path, '{"traceEvents": [' + json.dumps(OK) + ", " + "[" * 5000 + "]" * 5000 + "]}"
    )
    assert trace.events.height == 1 and lossy(trace) == [
        "1 event could not be read and was skipped"
    ]


@pytest.mark.parametrize("where", ['"ts": 1,', '"name": "aten::mm",', '"dur": 1,'])
def test_a_number_json_allows_but_a_double_cannot_hold_is_one_skipped_event(tmp_path, where):
    # 1e309 is valid JSON, beyond a double: the event holding it is skipped and counted, the
    # events around it kept (was: the whole trace refused, or "cut short", kept 0).
    key = where.split(":")[0]
    text = doc(OK, OK, OK).replace(where, f"{key}: 1e309,", 1)
    assert "1e309" in text
    trace = read(tmp_path, text)
    assert trace.events.height == 2
    assert lossy(trace) == ["1 event could not be read and was skipped"]


def test_a_number_beyond_a_double_in_a_real_trace_loses_that_event_alone(tmp_path):
    real = Path(__file__).parents[1] / "fixtures" / "traces" / "nccl_ddp_w2_rank0_step5.json.gz"
    text = gzip.decompress(real.read_bytes()).decode()
    whole = read_trace(real).events.height
    at = text.index('"dur": ', text.index('"traceEvents"'))
    text = text[:at] + '"dur": 1e309' + text[text.index(",", at) :]
    trace = read(tmp_path, text)
    assert trace.events.height == whole - 1
    assert lossy(trace) == ["1 event could not be read and was skipped"]


def test_bytes_that_are_not_utf8_are_replaced_and_said(tmp_path):
    text = doc(OK).replace("aten::mm", "aten::m\udcffm").encode("utf-8", "surrogateescape")
    trace = read(tmp_path, text)
    assert trace.events["name"].cast(str).to_list() == ["aten::m\ufffdm"]
    (note,) = lossy(trace)
    assert "not UTF-8" in note


@pytest.mark.parametrize("ph", [["X"], {"a": 1}, 7, None])
def test_a_phase_of_the_wrong_type_is_a_skipped_event(tmp_path, ph):
    trace = read(tmp_path, doc({**OK, "ph": ph}, OK))
    assert trace.events.height == 1
    assert lossy(trace) == ["1 event could not be read and was skipped"]


@pytest.mark.parametrize("field,value", [("ts", 1e300), ("dur", 1e19), ("ts", -1e300)])
def test_times_beyond_int64_nanoseconds_are_skipped(tmp_path, field, value):
    trace = read(tmp_path, doc({**OK, field: value}, OK))
    assert trace.events.height == 1
    (note,) = lossy(trace)
    assert note.startswith("1 complete event without a readable ts or dur")


def test_an_end_past_int64_is_skipped_too(tmp_path):
    # Each in range, their sum not: 9.2e15 µs + 9.2e15 µs.
    trace = read(tmp_path, doc({**OK, "ts": 9.2e15, "dur": 9.2e15}, OK))
    assert trace.events.height == 1 and len(lossy(trace)) == 1


def test_a_rank_beyond_int32_is_unknown(tmp_path):
    text = json.dumps(
        {"traceEvents": [OK], "distributedInfo": {"rank": 3_000_000_000, "world_size": 4e9}}
    )
    trace = read(tmp_path, text)
    assert trace.meta.rank is None and trace.meta.world_size is None


def test_nan_is_an_error_at_its_own_byte(tmp_path):
    text = doc(OK, OK).replace('"ts": 1,', '"ts": NaN,', 2)
    with pytest.raises(TraceviewError) as e:
        read(tmp_path, text)
    offset = text.index("NaN")
    assert f"invalid JSON at byte {offset:,}" in e.value.message


def test_trailing_bytes_after_a_whole_gzip_stream_are_ignored_and_said(tmp_path):
    packed = gzip.compress(tb_doc := json.dumps(tb.document([OK, OK])).encode())
    assert tb_doc
    trace = read(tmp_path, packed + b"not gzip at all", name="t.json.gz")
    assert trace.events.height == 2 and not trace.truncated
    assert lossy(trace) == ["15 bytes after the end of the gzip stream are not gzip data: ignored"]


def test_a_trace_gzipped_as_several_members_reads_as_one(tmp_path):
    # gzip files may be concatenated (`cat a.gz b.gz`): the members' bytes follow one another.
    text = json.dumps(tb.document([OK, OK, OK])).encode()
    members = b"".join(gzip.compress(text[i : i + 40]) for i in range(0, len(text), 40))
    trace = read(tmp_path, members, name="t.json.gz")
    assert trace.events.height == 3 and not trace.truncated and not lossy(trace)


@pytest.mark.parametrize("inflating", [compression.inflating, zlib], ids=["default", "zlib"])
def test_corrupt_gzip_is_located_where_the_inflater_finds_it(tmp_path, monkeypatch, inflating):
    # zlib is what a platform without the ISA-L wheel inflates with: same words either way.
    monkeypatch.setattr(compression, "inflating", inflating)
    monkeypatch.setattr(source_module, "INFLATE_STEP", 1024)
    events = [tb.cpu_op(f"op{i}", i, 1, seq=str(i) * 40) for i in range(3000)]
    packed = gzip.compress(json.dumps(tb.document(events)).encode(), compresslevel=1)
    # Damage to a block's header is found at once, within the 1 KB fed when it came.
    early = bytearray(packed)
    early[5000:5064] = b"\xff" * 64
    with pytest.raises(TraceviewError) as e:
        read(tmp_path, bytes(early), name="t.json.gz")
    assert "found in compressed bytes 4,096–5,120" in e.value.message
    # Damage to the data itself shows only in the checksum at the end: said so.
    late = bytearray(packed)
    late[len(packed) // 2 : len(packed) // 2 + 64] = bytes(64)
    with pytest.raises(TraceviewError) as e:
        read(tmp_path, bytes(late), name="t.json.gz")
    assert "its check (CRC or length) fails at the end of its stream" in e.value.message
    assert "the damage is somewhere before it" in e.value.message


@pytest.mark.parametrize(
    "head, filler",
    [
        (b'{"traceEvents": [', b" "),  # an array of spaces
        (b"[", b"1, "),  # a bare array of numbers
        (b'{"traceEvents": [{"name": "', b"a"),  # one giant string
    ],
)
def test_a_stretch_without_an_event_boundary_is_refused_at_the_limit(tmp_path, head, filler):
    data = head + filler * ((3 << 20) // len(filler))
    with pytest.raises(TraceviewError) as e:
        read(tmp_path, data, max_event_bytes=1 << 20)
    assert "no complete event in the" in e.value.message and "--max-event-mb" in e.value.message


def test_a_header_without_events_is_refused_at_its_limit(tmp_path, monkeypatch):
    monkeypatch.setattr(stream_module, "MAX_HEADER_BYTES", 1 << 20)
    for data in (b" " * (3 << 20), b'{"a": "' + b"x" * (3 << 20)):
        with pytest.raises(TraceviewError) as e:
            read(tmp_path, data)
        assert "no traceEvents array in the first 1 MB" in e.value.message


def test_boundaries_inside_strings_cost_no_decoding(tmp_path, monkeypatch):
    # Names full of "}, {" across many small chunks: told apart by quote parity, so each chunk
    # is decoded about once, not once per false boundary.
    monkeypatch.setattr(source_module, "CHUNK_SIZE", 4096)
    monkeypatch.setattr(source_module, "READ_SIZE", 4096)
    events = [tb.cpu_op('x}, {"y": "}, {' * 200 + f"{i}", i, 1) for i in range(200)]
    path = tb.write(tmp_path / "t.json", tb.document(events))
    calls = []
    real = BatchDecoder.decode

    def counting(self, doc):
        calls.append(len(doc))
        return real(self, doc)

    monkeypatch.setattr(BatchDecoder, "decode", counting)
    trace = read_trace(path)
    assert trace.events.height == 200 and not lossy(trace)
    chunks = path.stat().st_size // 4096 + 1
    assert len(calls) <= chunks + 2


def test_event_texts_split_only_outside_strings():
    inner = b'[{"a": "}, {"}, {"b": [{"c": 1}, {"d": 2}]}, {"e": "\\"}, {"}, 7, [[1]]]'
    pieces = list(json_text.event_texts(inner, 1, len(inner) - 1))
    assert [msgspec.json.decode(t) for _, t in pieces] == [
        {"a": "}, {"},
        {"b": [{"c": 1}, {"d": 2}]},
        {"e": '"}, {'},
        7,
        [[1]],
    ]
    assert [inner[at : at + len(t)] for at, t in pieces] == [t for _, t in pieces]


def test_a_syntax_error_after_a_value_too_deep_to_decode_is_found_in_one_pass(
    tmp_path, monkeypatch
):
    # Thousands of nested boundaries in the broken event, after one the decoder cannot
    # recurse into: each byte is decoded a bounded number of times, and the error is said at
    # its own byte.
    deep = '{"ph": "X", "name": "deep", "args": {"x": ' + "[" * 20000 + "]" * 20000 + "}}"
    items = ", ".join(f'{{"a": {k}}}' for k in range(5000))
    broken = '{"ph": "X", "name": "b", "ts": 1, "dur": 1, "args": {"l": [' + items
    broken += ', {"a": 1 2}]}}'
    text = doc(OK)[:-2] + ", " + deep + ", " + broken + ", " + json.dumps(OK) + "]}"
    decoded = []
    real = msgspec.json.decode

    def counting(data, *args, **kwargs):
        decoded.append(len(data))
        return real(data, *args, **kwargs)

    monkeypatch.setattr(msgspec.json, "decode", counting)
    with pytest.raises(TraceviewError) as e:
        read(tmp_path, text)
    assert e.value.message.endswith(
        f": invalid JSON at byte {text.index('1 2}') + 2:,} (expected ',' or '}}')"
    )
    assert sum(decoded) <= 4 * len(text)


def test_bytes_that_are_not_utf8_in_the_shapes_of_a_collective(tmp_path):
    # Shapes are kept undecoded, so the decoder never checks them: read with replacements.
    op = tb.cpu_op("c10d::allreduce_", 1, 1, **{"Input Dims": [[4]], "Input type": ["float"]})
    text = doc(op).replace('"float"', '"flo\udcffat"').encode("utf-8", "surrogateescape")
    trace = read(tmp_path, text)
    (row,) = trace.comm_args.iter_rows(named=True)
    assert row["input_type"] == '["flo\ufffdat"]'


def _tiny_events(n: int) -> bytes:
    event = json.dumps(tb.cpu_op("a", 1, 1)).encode()
    return b'{"traceEvents": [' + b", ".join([event] * n) + b"]}"


def test_more_events_than_the_memory_bound_allows_are_refused_as_they_are_read(tmp_path):
    from traceview.parse.budget import BYTES_PER_EVENT

    bound = 8 << 20  # 32,768 events
    packed = gzip.compress(_tiny_events(200_000))  # a few hundred KB
    with pytest.raises(TraceviewError) as e:
        read(tmp_path, packed, name="t.json.gz", max_memory_bytes=bound)
    assert f"more than {bound // BYTES_PER_EVENT:,} events" in e.value.message
    assert "memory bound of 8 MB" in e.value.message and "--max-memory-mb" in e.value.message
    # ... and the 1 byte of their one name, 3 times (parse/budget.py)
    needs = 200_000 * BYTES_PER_EVENT + 3
    kept = read(tmp_path, packed, name="t.json.gz", max_memory_bytes=needs)
    assert kept.events.height == 200_000


def test_both_halves_of_a_large_trace_count_against_one_bound(tmp_path):
    from traceview.parse import halves
    from traceview.parse.budget import BYTES_PER_EVENT

    data = _tiny_events(700_000)  # ~55 MB: read by two threads where the scanner is built
    assert len(data) > halves.SPLIT_MIN_BYTES
    with pytest.raises(TraceviewError, match="more than 500,000 events"):
        read(tmp_path, data, max_memory_bytes=500_000 * BYTES_PER_EVENT)
    # each half's one name once, 3 times (parse/budget.py)
    needs = 700_000 * BYTES_PER_EVENT + 2 * 3
    assert read(tmp_path, data, max_memory_bytes=needs).events.height == 700_000


def test_long_distinct_names_count_against_the_bound_by_their_bytes(tmp_path):
    from traceview.parse.budget import BYTES_PER_EVENT, NAME_COPIES

    names = [f"{i:04d}" + "x" * 9_996 for i in range(2_000)]  # 20 MB of distinct names
    events = [json.dumps(tb.cpu_op(n, 1 + i, 1)).encode() for i, n in enumerate(names)]
    packed = gzip.compress(b'{"traceEvents": [' + b", ".join(events) + b"]}")  # ~100 KB
    # 2,000 events alone would need 512 KB; their names 3 × 20,000,000 bytes more.
    needs = 2_000 * BYTES_PER_EVENT + NAME_COPIES * 2_000 * 10_000
    with pytest.raises(TraceviewError) as e:
        read(tmp_path, packed, name="t.json.gz", max_memory_bytes=needs - 1)
    assert "t.json.gz: events whose distinct names hold more than 19 MB" in e.value.message
    assert "--max-memory-mb" in e.value.message
    kept = read(tmp_path, packed, name="t.json.gz", max_memory_bytes=needs)
    assert kept.events.height == 2_000


@pytest.mark.parametrize("depth", [100, 5_000])  # within the decoder's reach, and beyond it
@pytest.mark.parametrize("after", ["@, ", ", @, ", "}@, "])
def test_a_stray_byte_after_a_deep_event_is_invalid_json_where_it_is(tmp_path, depth, after):
    ops = [json.dumps(tb.cpu_op(f"op{i}", 10 * i, 3)) for i in range(3)]
    deep = '{"ph": "X", "name": "deep", "args": {"a": ' + "[" * depth + "]" * depth + "}}"
    text = '{"traceEvents": [' + ", ".join(ops[:2]) + ", " + deep + after + ops[2] + "]}"
    stray = len(text) - len(after + ops[2] + "]}") + after.index("@")
    if after.startswith("}"):
        stray -= 1  # the brace that closes nothing
    with pytest.raises(TraceviewError, match=f"invalid JSON at byte {stray:,}"):
        read(tmp_path, text)


def test_an_event_nested_beyond_the_decoder_is_one_dropped_event_the_rest_kept(tmp_path):
    ops = [json.dumps(tb.cpu_op(f"op{i}", 10 * i, 3)) for i in range(3)]
    deep = '{"ph": "X", "name": "deep", "args": {"a": ' + "[" * 5_000 + "]" * 5_000 + "}}"
    trace = read(tmp_path, '{"traceEvents": [' + ", ".join([*ops[:2], deep, ops[2]]) + "]}")
    assert sorted(trace.events["name"].to_list()) == ["op0", "op1", "op2"]
    assert lossy(trace) == ["1 event could not be read and was skipped"]
