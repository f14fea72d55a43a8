"""The run configuration as run.json records it: every flag of the harness has its typed field in
the record (traceview/parse/run_record.py RunFlags), so none is dropped on the way."""

from __future__ import annotations

import dataclasses

import msgspec

from instrumented_train.config import RunConfig
from traceview.parse.run_record import RunFlags


def test_every_flag_has_its_field_in_the_record():
    flags = {f.name for f in dataclasses.fields(RunConfig)}
    assert flags == set(RunFlags.__struct_fields__)


def test_a_configuration_round_trips_through_its_record():
    config = RunConfig(strategy="zero2", precision="fp32", seq_len=32, lr=1e-3)
    record = msgspec.json.decode(msgspec.json.encode(config.as_record()), type=RunFlags)
    assert record == config.as_record()
    assert (record.strategy, record.seq_len, record.lr, record.out) == (
        "zero2",
        32,
        1e-3,
        "runs/run",
    )


def test_a_record_from_a_newer_harness_is_read_past_its_new_flags():
    text = b'{"strategy": "ddp", "precision": "bf16", "a_flag_of_tomorrow": 3}'
    record = msgspec.json.decode(text, type=RunFlags)
    assert (record.strategy, record.precision, record.seq_len) == ("ddp", "bf16", None)
