"""The trace args table: the decoder and the column builder are both made from it."""

from __future__ import annotations

import msgspec
import polars as pl

from traceview.parse.args import COMM_ARGS_SCHEMA, TRACE_ARGS, Args
from traceview.parse.columns import BATCH_SCHEMA, complete_events
from traceview.parse.events import CompleteEvent


def test_every_declared_arg_is_decoded_under_its_key_and_becomes_its_column():
    fields = {f.name: f.encode_name for f in msgspec.structs.fields(Args)}
    assert fields == {a.column: a.key for a in TRACE_ARGS}
    columns = set(BATCH_SCHEMA) | set(COMM_ARGS_SCHEMA)
    for arg in TRACE_ARGS:
        if arg.scope != "metadata":
            assert (arg.fills or arg.column) in columns, arg


def _comm_args(args: dict) -> dict:
    event = msgspec.json.decode(
        msgspec.json.encode(
            {"ph": "X", "name": "record_param_comms", "ts": 1, "dur": 2, "args": args}
        ),
        type=CompleteEvent,
    )
    _, comm = complete_events([event], first_row=7)
    assert comm.schema == pl.Schema(COMM_ARGS_SCHEMA)
    return comm.row(0, named=True)


def test_values_are_read_however_a_trace_wrote_them():
    row = _comm_args(
        {
            "In msg nelems": "1024",
            "Out msg nelems": 4096.0,
            "Process Group Name": 0,
            "dtype": '"Float"',
            "Seq": "0x10",
            "Input Dims": [[1024]],
            "Other arg": {"ignored": True},
        }
    )
    assert row["row"] == 7
    assert (row["in_nelems"], row["out_nelems"], row["seq"]) == (1024, 4096, 16)
    assert (row["pg_name"], row["dtype"], row["input_dims"]) == ("0", "Float", "[[1024]]")


def test_the_ranks_listed_fill_a_missing_group_size():
    assert _comm_args({"Process Group Ranks": "[0, 1, 2, 3]"})["group_size"] == 4
    assert _comm_args({"Process Group Ranks": [0, 1], "Group size": 8})["group_size"] == 8
    assert _comm_args({})["group_size"] is None
