"""The shapes a trace file comes in, old and new."""

import gzip
import json
import zlib

import msgspec
import polars as pl
import pytest

from tests import tracebuild as tb
from traceview import compression
from traceview.errors import TraceviewError
from traceview.parse import halves, read_trace
from traceview.parse import source as source_module

EVENTS = [tb.step(1, 0, 100), tb.launch(1, 5), tb.kernel("k", 10, 20, 1)]


def test_object_form_plain_and_gzip_give_the_same_events(tmp_path):
    plain = read_trace(tb.write(tmp_path / "a.json", tb.document(EVENTS)))
    packed = read_trace(tb.write(tmp_path / "a.json.gz", tb.document(EVENTS)))
    assert plain.events.drop("row").equals(packed.events.drop("row"))
    assert plain.events.height == 3
    assert plain.size_bytes == packed.size_bytes


def test_gzip_is_recognised_by_content_not_name(tmp_path):
    path = tmp_path / "trace.json"
    path.write_bytes(gzip.compress(json.dumps(tb.document(EVENTS)).encode()))
    assert read_trace(path).events.height == 3


def test_bare_array_form_with_and_without_closing_bracket(tmp_path):
    text = json.dumps(EVENTS)
    (tmp_path / "a.json").write_text(text)
    (tmp_path / "b.json").write_text(text.rstrip("]") + ",\n")  # the Chrome format allows it
    for name in ("a.json", "b.json"):
        trace = read_trace(tmp_path / name)
        assert trace.events.height == 3
        assert not trace.truncated
        assert trace.meta.rank is None


@pytest.mark.parametrize("pad", [0, 65_500, 65_536 - 40, 200_000])
def test_the_events_are_found_after_a_long_header(tmp_path, pad):
    # A key of the same name nested in the header first (no events: looked past), then the
    # events' own after `pad` bytes: before, across and after the first bytes looked in.
    doc = {"meta": {"traceEvents": [1]}, "pad": "x" * pad, "traceEvents": EVENTS}
    text = json.dumps(doc)
    trace = read_trace(tb.write(tmp_path / "t.json", doc))
    assert trace.events.height == len(EVENTS) and not trace.truncated
    assert trace.meta.extra["meta"] == {"traceEvents": [1]} and len(trace.meta.extra["pad"]) == pad
    assert text.index('"traceEvents": [{') > text.index('"traceEvents": [1]')


def test_metadata_before_and_after_the_events(tmp_path):
    doc = {
        "traceEvents": EVENTS,
        "distributedInfo": {"rank": 3, "world_size": 4, "backend": "nccl"},
        "baseTimeNanoseconds": 1700000000000000000,
        "displayTimeUnit": "ms",
    }
    trace = read_trace(tb.write(tmp_path / "t.json", doc))
    assert (trace.meta.rank, trace.meta.world_size, trace.meta.backend) == (3, 4, "nccl")
    assert trace.meta.base_time_ns == 1700000000000000000
    assert trace.meta.extra["displayTimeUnit"] == "ms"


def test_a_list_of_objects_after_the_events_is_no_event_boundary(tmp_path, monkeypatch):
    # As a tool that writes {"traceEvents": ..., **the rest} leaves a trace: deviceProperties'
    # objects, `}, {` between them, after the events' array. The read must not cut there, in
    # whichever chunk the array's end and that list fall.
    doc = {
        "traceEvents": EVENTS,
        "deviceProperties": [{"id": 0, "name": "A"}, {"id": 1, "name": "B"}],
        "distributedInfo": {"rank": 3, "world_size": 4, "backend": "nccl"},
    }
    path = tb.write(tmp_path / "t.json", doc)
    text = path.read_bytes()
    array_end = text.index(b"]")  # EVENTS hold no bracket
    for chunk in (1 << 20, array_end - 3, array_end + 1, array_end + 9, array_end + 40):
        monkeypatch.setattr(source_module, "CHUNK_SIZE", chunk)
        monkeypatch.setattr(source_module, "READ_SIZE", chunk)
        trace = read_trace(path)
        assert trace.events.height == len(EVENTS), chunk
        assert (trace.meta.rank, trace.meta.world_size) == (3, 4)
        assert trace.meta.devices == ("A", "B")
        assert not trace.truncated and not any(n.lossy for n in trace.notes)


def test_events_after_a_stray_bracket_are_invalid_json_not_a_cut(tmp_path, monkeypatch):
    # `}], {` in the middle of the events: the array seems to end there, and what follows is
    # no key of the document. Refused where it breaks, not read as a trace whose keys after the
    # events were cut off (which would keep half its events under a note about keys).
    events = [tb.cpu_op(f"aten::op{i}", i * 10, 5) for i in range(400)]
    text = json.dumps(tb.document(events))
    middle = text.index('{"ph"', len(text) // 2)
    stray = text.rindex("}", 0, middle) + 1  # just after the event before the middle one
    path = tmp_path / "t.json"
    path.write_text(text[:stray] + "]" + text[stray:])
    after = text.index("{", stray) + 1  # the next event's `{`, one byte on for the `]`
    for chunk in (1 << 20, 4096):
        monkeypatch.setattr(source_module, "CHUNK_SIZE", chunk)
        monkeypatch.setattr(source_module, "READ_SIZE", chunk)
        with pytest.raises(TraceviewError, match=rf"invalid JSON at byte {after:,} "):
            read_trace(path)


@pytest.mark.parametrize("halves_read", [False, True])
def test_bytes_after_a_whole_document_are_ignored_and_said(tmp_path, monkeypatch, halves_read):
    # Something that is not JSON after the document: the document is whole, its keys after the
    # events are read, the bytes after it counted in a note.
    events = [tb.cpu_op(f"aten::op{i}", i * 10, 5) for i in range(400)]
    doc = {"traceEvents": events, "distributedInfo": {"rank": 3, "world_size": 4}}
    path = tmp_path / "t.json"
    path.write_bytes(json.dumps(doc).encode() + b"#\n" * 1500)
    if halves_read:  # the second half reads the end: what it found joins the first's
        _read_in_halves(monkeypatch)
    trace = read_trace(path)
    assert trace.events.height == 400 and not trace.truncated
    assert (trace.meta.rank, trace.meta.world_size) == (3, 4)
    said = [n for n in trace.notes if "after the end of the JSON document" in n.message]
    assert len(said) == 1 and said[0].message.startswith("3,000 bytes") and said[0].lossy


def _read_in_halves(monkeypatch, chunk: int = 4096) -> None:
    monkeypatch.setattr(halves, "SPLIT_MIN_BYTES", 0)
    monkeypatch.setattr(source_module, "CHUNK_SIZE", chunk)
    monkeypatch.setattr(source_module, "READ_SIZE", chunk)


def _file(path, data: bytes):
    path.write_bytes(data)
    return path


ZEROS = 9_000  # longer than two of the small reads below: a zero tail across chunks


@pytest.mark.parametrize(
    ("how", "cut"),
    [(how, cut) for how in ("plain", "gzip", "halves", "small reads") for cut in (False, True)]
    + [("gzipped", False)],
)
def test_zeros_that_end_the_file_are_ignored_and_said(tmp_path, monkeypatch, cut, how):
    # A crash while a trace is written can leave its last blocks zero-filled, after the whole
    # document or inside the events. The zeros are no part of the trace: what is before them is
    # read as if the file ended there (a whole trace, or one cut short), and they are counted.
    # "gzip": the zeros inside a .gz; "gzipped": after it (a cut one: the next test).
    events = [tb.cpu_op(f"aten::op{i}", i * 10, 5) for i in range(400)]
    text = json.dumps({"traceEvents": events, "distributedInfo": {"rank": 3, "world_size": 4}})
    data = text.encode()
    if cut:  # inside an event past the middle
        data = data[: data.index(b'{"ph"', len(data) // 2) + 30]
    path = tmp_path / "t.json"
    if how == "gzipped":
        path.write_bytes(gzip.compress(data) + bytes(ZEROS))
    else:
        whole = data + bytes(ZEROS)
        path.write_bytes(gzip.compress(whole) if how == "gzip" else whole)
    if how == "halves":
        _read_in_halves(monkeypatch)
    elif how == "small reads":  # a read ending inside the data, the next ones all zeros
        _read_in_halves(monkeypatch, chunk=len(data) // 3 + 7)
        monkeypatch.setattr(halves, "SPLIT_MIN_BYTES", 1 << 40)
    trace = read_trace(path)
    assert trace.truncated == cut
    assert trace.events.height == (text[: len(data)].count('"ph"') - cut if cut else 400)
    assert (trace.meta.rank, trace.meta.world_size) == ((None, None) if cut else (3, 4))
    said = [n for n in trace.notes if "zero bytes end the trace: ignored" in n.message]
    assert len(said) == 1 and said[0].message.startswith(f"{ZEROS:,} zero") and said[0].lossy
    if cut:  # the cut is said where the data ends, not where the zeros do
        assert any(f"cut short at byte {len(data):,}," in n.message for n in trace.notes)


@pytest.mark.parametrize("inflating", [compression.inflating, zlib], ids=["default", "zlib"])
@pytest.mark.parametrize("fraction", [0.3, 0.5, 0.9])
def test_a_gzip_cut_then_zero_filled_reads_as_the_cut_alone(
    tmp_path, monkeypatch, inflating, fraction
):
    # Zeros fed to a deflate stream cut short inflate to garbage (invalid JSON), or to nothing
    # and an error: they are held back, and the file is read as the cut alone, plus a note. A
    # whole member's own last bytes are zeros too (its length, below 16 MiB): it stays whole.
    monkeypatch.setattr(compression, "inflating", inflating)
    events = [tb.cpu_op(f"aten::op{i}", i * 10, 5) for i in range(2000)]
    packed = gzip.compress(json.dumps(tb.document(events)).encode())
    assert packed.endswith(b"\0")
    whole = read_trace(_file(tmp_path / "whole.json.gz", packed))
    assert whole.events.height == 2000 and not whole.truncated and not whole.notes
    cut = packed[: int(len(packed) * fraction)]
    alone = read_trace(_file(tmp_path / "cut.json.gz", cut))
    filled = read_trace(_file(tmp_path / "filled.json.gz", cut + bytes(ZEROS)))
    assert alone.truncated and filled.truncated and 0 < filled.events.height < 2000
    assert filled.events.equals(alone.events)
    zeros = f"{ZEROS:,} zero bytes end the trace: ignored (a crash"
    assert [n.message for n in filled.notes if not n.message.startswith(zeros)] == [
        n.message for n in alone.notes
    ]
    assert len(filled.notes) == len(alone.notes) + 1


@pytest.mark.parametrize("chunk", [1 << 20, 4096])
def test_zeros_that_data_follows_are_invalid_json(tmp_path, monkeypatch, chunk):
    # Only zeros that reach the file's end are a tail: zeros in the middle are refused where
    # they start, as any byte that is not JSON.
    events = [tb.cpu_op(f"aten::op{i}", i * 10, 5) for i in range(400)]
    data = json.dumps(tb.document(events)).encode()
    at = data.index(b'{"ph"', len(data) // 2)
    path = tmp_path / "t.json"
    path.write_bytes(data[:at] + bytes(ZEROS) + data[at:])
    monkeypatch.setattr(source_module, "CHUNK_SIZE", chunk)
    monkeypatch.setattr(source_module, "READ_SIZE", chunk)
    with pytest.raises(TraceviewError, match=rf"invalid JSON at byte {at:,} "):
        read_trace(path)


@pytest.mark.parametrize("packed", [False, True])
def test_a_file_of_zeros_is_said_in_one_line(tmp_path, packed):
    path = tmp_path / "t.json"
    path.write_bytes(gzip.compress(bytes(ZEROS)) if packed else bytes(ZEROS))
    with pytest.raises(TraceviewError, match=rf"holds only zero bytes \({ZEROS:,}\): nothing"):
        read_trace(path)


@pytest.mark.parametrize("halves_read", [False, True])
def test_keys_after_the_events_with_bytes_not_utf8_are_read_repaired(
    tmp_path, monkeypatch, halves_read
):
    # Whole, not cut: read as the events are, the bytes replaced, and said; the rank is kept.
    events = [tb.cpu_op(f"aten::op{i}", i * 10, 5) for i in range(400)]
    text = json.dumps({"traceEvents": events, "traceName": "NAME"}).encode()[:-1]
    info = b', "distributedInfo": {"rank": 3, "world_size": 4}}'
    path = tmp_path / "t.json"
    path.write_bytes(text.replace(b"NAME", b"host-\xff\xfe") + info)
    if halves_read:
        _read_in_halves(monkeypatch)
    trace = read_trace(path)
    assert trace.events.height == 400 and not trace.truncated
    assert (trace.meta.rank, trace.meta.world_size) == (3, 4)
    assert trace.meta.extra["traceName"] == "host-\ufffd\ufffd"
    said = [n.message for n in trace.notes if n.lossy]
    assert said == [
        "the keys after the events held bytes that are not UTF-8: they were replaced (U+FFFD)"
    ]


def test_keys_after_the_events_nested_too_deep_are_skipped_not_called_a_cut(tmp_path):
    events = [tb.cpu_op(f"aten::op{i}", i * 10, 5) for i in range(400)]
    text = json.dumps({"traceEvents": events}).encode()[:-1]
    deep = b', "deep": ' + b"[" * 5000 + b"]" * 5000 + b', "distributedInfo": {"rank": 3}}'
    path = tmp_path / "t.json"
    path.write_bytes(text + deep)
    trace = read_trace(path)
    assert trace.events.height == 400 and not trace.truncated
    assert trace.meta.rank is None
    said = [n.message for n in trace.notes if n.lossy]
    assert said == [
        "the keys after the events are nested too deep to read: they were skipped (a rank or "
        "world size among them is unknown)"
    ]


def test_rank_is_unknown_without_distributed_info_never_guessed(tmp_path):
    trace = read_trace(tb.write(tmp_path / "rank5.json", tb.document(EVENTS, rank=None)))
    assert trace.meta.rank is None and trace.meta.world_size is None
    assert any("rank and world size unknown" in n.message for n in trace.notes)


def test_a_rank_without_a_world_size_keeps_its_rank(tmp_path):
    doc = {"traceEvents": EVENTS, "distributedInfo": {"rank": 1}}
    trace = read_trace(tb.write(tmp_path / "t.json", doc))
    assert (trace.meta.rank, trace.meta.world_size) == (1, None)
    assert [n.message for n in trace.notes] == [
        "distributedInfo gives rank 1 but no world_size: world size unknown"
    ]


def test_impossible_rank_is_reported_unknown(tmp_path):
    doc = tb.document(EVENTS, rank=4, world=4)
    trace = read_trace(tb.write(tmp_path / "t.json", doc))
    assert trace.meta.rank is None
    assert any("not usable" in n.message for n in trace.notes)


def test_epoch_microseconds_with_fractions_become_exact_nanoseconds(tmp_path):
    # 1.7e18 ns is beyond float64's exact integers: the fraction must be converted apart.
    (tmp_path / "t.json").write_text(
        '{"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7,'
        ' "ts": 1700000000123456.789, "dur": 2.5, "args": {"stream": 7, "correlation": 1}}]}'
    )
    row = read_trace(tmp_path / "t.json").events.row(0, named=True)
    assert row["ts_ns"] == 1700000000123456789
    assert row["end_ns"] - row["ts_ns"] == 2500


def test_fractional_epoch_timestamps_stay_exact_over_many_batches(tmp_path):
    # ~9 MB: several 4 MB batches. The first decides the trace's clock needs decimals; the later
    # ones are decoded once, as decimals, and every timestamp stays exact to the nanosecond.
    n = 60_000
    events = ",".join(
        f'{{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, '
        f'"ts": {1700000000000000 + 10 * i}.{i % 1000:03d}, "dur": 2.5, '
        f'"args": {{"stream": 7, "correlation": {i}, "padding": "{"x" * 60}"}}}}'
        for i in range(n)
    )
    path = tmp_path / "t.json"
    path.write_text('{"traceEvents": [' + events + "]}")
    assert path.stat().st_size > 2 * (4 << 20)
    table = read_trace(path).events.sort("ts_ns")
    assert table.height == n
    expected = [(1700000000000000 + 10 * i) * 1000 + i % 1000 for i in range(n)]
    assert table["ts_ns"].to_list() == expected
    assert (table["end_ns"] - table["ts_ns"]).unique().to_list() == [2500]


def test_old_format_string_ids_and_capitalised_categories(tmp_path):
    events = [
        {
            "ph": "X",
            "cat": "Kernel",
            "name": "k",
            "pid": 0,
            "tid": "stream 7",
            "ts": 10,
            "dur": 5,
            "args": {"correlation": 1, "external id": 9},
        },
        {
            "ph": "X",
            "cat": "Runtime",
            "name": "cudaLaunchKernel",
            "pid": 25,
            "tid": "25",
            "ts": 1,
            "dur": 2,
            "args": {"correlation": 1},
        },
    ]
    ev = read_trace(tb.write(tmp_path / "t.json", {"traceEvents": events})).events
    rows = {r["cat"]: r for r in ev.iter_rows(named=True)}
    assert rows["kernel"]["tid"] == 7 and rows["kernel"]["correlation"] == 1
    assert rows["runtime"]["tid"] == 25


def test_fields_of_unexpected_types_are_decoded_leniently(tmp_path):
    events = [tb.kernel("k", 10, 5, 1), {**tb.launch(1, 1), "tid": 1.0}]
    trace = read_trace(tb.write(tmp_path / "t.json", {"traceEvents": events}))
    assert sorted(trace.events["tid"].to_list()) == [1, 7]
    assert any("unexpected types" in n.message for n in trace.notes)


def test_hex_string_streams_of_rocm_runtime_events_are_read(tmp_path):
    # ROCm 6.2 writes the runtime call's stream as a hex string; nothing may be dropped.
    launch = tb.launch(1, 5, name="hipLaunchKernel")
    launch["args"]["stream"] = "0x0"
    k = tb.kernel("Cijk_Alik_Bljk_SB_MT64x64x16", 10, 20, corr=1)
    k["args"]["stream"] = "0x1f"
    trace = read_trace(tb.write(tmp_path / "t.json", tb.document([tb.step(1, 0, 100), launch, k])))
    assert not any(n.lossy for n in trace.notes)
    rows = {r["cat"]: r for r in trace.events.iter_rows(named=True)}
    assert rows["runtime"]["stream"] == 0 and rows["runtime"]["correlation"] == 1
    assert rows["kernel"]["stream"] == 31


def test_times_written_as_strings_are_exact(tmp_path):
    events = [
        {**tb.cpu_op("a", 0, 0), "ts": "1700000000123456.789", "dur": "2.5"},
        {**tb.cpu_op("b", 0, 0), "ts": "1700000000123460.001", "dur": "1"},
    ]
    trace = read_trace(tb.write(tmp_path / "t.json", {"traceEvents": events}))
    assert trace.events["ts_ns"].to_list() == [1700000000123456789, 1700000000123460001]
    assert trace.events["end_ns"].to_list() == [1700000000123459289, 1700000000123461001]
    assert not any(n.lossy for n in trace.notes)


def test_string_args_quoted_unquoted_or_numbers_read_alike(tmp_path):
    def comms(**args):
        return tb.cpu_op("record_param_comms", 1, 1, **args)

    events = [
        comms(**{"Collective name": "allreduce", "dtype": "Float", "Process Group Name": "0"}),
        comms(**{"Collective name": '"allreduce"', "dtype": '"Float"', "Process Group Name": 0}),
        comms(**{"Collective name": "allreduce", "dtype": "Float", "Process Group Name": '"0"'}),
    ]
    for e in events:
        e["args"].update({"In msg nelems": "10", "Seq": 3.0, "Process Group Ranks": "[0, 1, 2]"})
    trace = read_trace(tb.write(tmp_path / "t.json", {"traceEvents": events}))
    args = trace.comm_args.drop("row").unique()
    assert args.height == 1
    row = args.row(0, named=True)
    assert (row["collective_name"], row["dtype"], row["pg_name"]) == ("allreduce", "Float", "0")
    assert (row["in_nelems"], row["seq"], row["group_size"]) == (10, 3, 3)


def test_ids_above_2_63_keep_their_identity(tmp_path):
    big = 2**63 + 5  # written as uint64 by some Kineto versions
    events = [
        {**tb.launch(big, 5), "pid": 2**64 - 1},
        tb.kernel("k", 10, 20, corr=big),
        tb.kernel("other", 40, 5, corr=big + 1),
    ]
    trace = read_trace(tb.write(tmp_path / "t.json", tb.document([tb.step(1, 0, 100), *events])))
    assert not any(n.lossy for n in trace.notes)
    ids = trace.events.filter(pl.col("correlation").is_not_null())["correlation"].to_list()
    assert len(ids) == 3 and ids[0] == ids[1] != ids[2]  # wrapped alike, still told apart


def test_chunk_boundaries_inside_strings_are_rejected(tmp_path, monkeypatch):
    # Tiny chunks force a cut attempt at every "}, {" — including the ones inside names.
    monkeypatch.setattr(source_module, "CHUNK_SIZE", 64)
    tricky = [tb.cpu_op(f"op}}, {{ number {i}", i * 10, 5) for i in range(40)]
    trace = read_trace(tb.write(tmp_path / "t.json", {"traceEvents": tricky}))
    assert trace.events.height == 40
    assert trace.events["name"].cast(str).to_list()[3] == "op}, { number 3"


def test_many_chunks_keep_every_event(tmp_path, monkeypatch):
    monkeypatch.setattr(source_module, "CHUNK_SIZE", 4096)
    events = [tb.cpu_op(f"aten::op{i}", i, 1) for i in range(3000)]
    for name in ("t.json", "t.json.gz"):
        trace = read_trace(tb.write(tmp_path / name, tb.document(events)))
        assert trace.events.height == 3000
        assert trace.events["ts_ns"].to_list() == [i * 1000 for i in range(3000)]


@pytest.mark.parametrize("cut", [0.5, 0.9, 0.999])
def test_truncated_trace_keeps_the_complete_events(tmp_path, cut):
    events = [tb.cpu_op(f"aten::op{i}", i, 1) for i in range(200)]
    data = json.dumps(tb.document(events), indent=1).encode()
    (tmp_path / "t.json").write_bytes(data[: int(len(data) * cut)])
    trace = read_trace(tmp_path / "t.json")
    assert trace.truncated
    kept = trace.events.height
    assert 0 < kept < 200
    assert trace.events["name"].cast(str).to_list() == [f"aten::op{i}" for i in range(kept)]
    (note,) = [n for n in trace.notes if n.lossy]
    assert "cut short" in note.message and f"kept {kept:,} complete events" in note.message


def test_truncated_gzip_keeps_the_complete_events(tmp_path):
    events = [tb.cpu_op(f"aten::op{i}", i, 1) for i in range(2000)]
    packed = gzip.compress(json.dumps(tb.document(events)).encode())
    (tmp_path / "t.json.gz").write_bytes(packed[: len(packed) // 2])
    trace = read_trace(tmp_path / "t.json.gz")
    assert trace.truncated and 0 < trace.events.height < 2000


def test_trace_cut_after_its_events_keeps_them_all(tmp_path):
    data = json.dumps(tb.document(EVENTS) | {"traceName": "x" * 50}).encode()
    (tmp_path / "t.json").write_bytes(data[:-20])  # inside the trailing key
    trace = read_trace(tmp_path / "t.json")
    assert trace.truncated and trace.events.height == 3


def test_events_are_decoded_with_only_the_fields_used(tmp_path):
    # Unknown keys of any shape are skipped, not an error.
    event = {**tb.launch(1, 1), "args": {"correlation": 1, "weird": {"a": [1, {"b": None}]}}}
    trace = read_trace(tb.write(tmp_path / "t.json", {"traceEvents": [event], "x": {"y": 1}}))
    assert trace.events.height == 1
    assert msgspec  # the decoder under test


def test_every_phase_is_accepted_and_only_complete_events_are_kept(tmp_path):
    others = [{"ph": ph, "name": "x", "pid": 1, "tid": 1, "ts": 1, "id": 3} for ph in "BEiIsfCbeMP"]
    unknown_phase = {"ph": "Z", "ts": 1}
    no_phase = {"name": "lost", "ts": 1, "dur": 1}
    trace = read_trace(
        tb.write(tmp_path / "t.json", {"traceEvents": [*EVENTS, *others, unknown_phase, no_phase]})
    )
    assert trace.events.height == 3
    (lossy,) = [n for n in trace.notes if n.lossy]
    assert lossy.message == "1 event could not be read and was skipped"  # the one without "ph"
    assert not any("unexpected types" in n.message for n in trace.notes)


def test_a_legacy_autograd_profiler_export_is_refused(tmp_path):
    # torch.autograd.profiler's export_chrome_trace: a bare list of events with no "cat".
    legacy = [
        {"name": "aten::mm", "ph": "X", "ts": 10, "dur": 5, "tid": 1, "pid": "CPU functions"},
        {"name": "aten::add", "ph": "X", "ts": 20, "dur": 5, "tid": 1, "pid": "CPU functions"},
    ]
    path = tmp_path / "legacy.json"
    path.write_text(json.dumps(legacy))
    from traceview.errors import NotATraceError

    with pytest.raises(NotATraceError, match="none of its 2 events has a category the profiler"):
        read_trace(path)


def test_accelerator_device_events_are_kept_to_be_named(tmp_path):
    events = [
        tb.step(1, 0, 100),
        {**tb.kernel("hccl_allreduce", 10, 5, 1), "cat": "npu_kernel"},
        {**tb.kernel("fc", 20, 5, 2), "cat": "npu_kernel"},  # any other category of kernels
        {**tb.kernel("py", 20, 5, 3), "cat": "python_function"},
    ]
    trace = read_trace(tb.write(tmp_path / "t.json", tb.document(events)))
    assert trace.events["cat"].to_list() == ["user_annotation", "accelerator", "accelerator"]
