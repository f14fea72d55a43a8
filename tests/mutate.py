"""Mutations of real traces, for fuzzing traceview (tests/cli/test_fuzz.py on every CI run,
scripts/fuzz.py for long runs): events deleted, duplicated and swapped, fields retyped, nesting
deepened, and the bytes truncated, flipped or compressed and cut."""

from __future__ import annotations

import copy
import gzip
import json
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests import tracebuild as tb

FIXTURES = Path(__file__).parent / "fixtures" / "traces"
Doc = dict[str, Any]

ODD_VALUES: list[Any] = [
    None,
    True,
    -1,
    0,
    1e300,
    -1e300,
    1e19,
    2**63,
    2**64 + 7,
    -(2**70),
    "",
    "12.5",
    "0x1f",
    "NaN",
    "\ud800",  # a lone surrogate: not encodable as UTF-8 (written with surrogatepass)
    [],
    [1, [2, [3]]],
    {},
    {"a": {"b": None}},
    "x" * 1000,
]


def seeds() -> list[tuple[str, Doc]]:
    """Small real and hand-built traces to start from."""
    out = [
        ("gpu_example", tb.document(tb.gpu_example())),
        ("cpu_example", tb.document(tb.cpu_example(), backend="gloo")),
    ]
    for name in ("gloo_cpu_w300_rank34.json.gz", "nccl_no_distinfo.json.gz"):
        out.append((name, json.loads(gzip.decompress((FIXTURES / name).read_bytes()))))
    return out


def _events(doc: Doc) -> list[Any]:
    events = doc.get("traceEvents")
    return events if isinstance(events, list) else []


def delete_events(doc: Doc, rng: random.Random) -> None:
    events = _events(doc)
    for _ in range(rng.randint(1, 5)):
        if events:
            events.pop(rng.randrange(len(events)))


def duplicate_events(doc: Doc, rng: random.Random) -> None:
    events = _events(doc)
    for _ in range(rng.randint(1, 5)):
        if events:
            events.insert(rng.randrange(len(events) + 1), copy.deepcopy(rng.choice(events)))


def swap_events(doc: Doc, rng: random.Random) -> None:
    events = _events(doc)
    if len(events) > 1:
        i, j = rng.randrange(len(events)), rng.randrange(len(events))
        events[i], events[j] = events[j], events[i]


def retype_fields(doc: Doc, rng: random.Random) -> None:
    events = _events(doc)
    for _ in range(rng.randint(1, 4)):
        if not events:
            return
        event = rng.choice(events)
        if not isinstance(event, dict):
            continue
        target = event
        if isinstance(event.get("args"), dict) and event["args"] and rng.random() < 0.5:
            target = event["args"]
        key = rng.choice([*target.keys(), "ph", "ts", "dur", "pid", "tid", "name", "cat"])
        target[key] = copy.deepcopy(rng.choice(ODD_VALUES))


def deepen_nesting(doc: Doc, rng: random.Random) -> None:
    """A value nested 10 to 20,000 deep (written out by `encode`), in an event's args or as
    an event of its own."""
    events = _events(doc)
    if not events:
        return
    value = f"{DEEP}{rng.choice([10, 500, 2000, 20000])}"
    i = rng.randrange(len(events))
    if isinstance(events[i], dict) and rng.random() < 0.5:
        events[i].setdefault("args", {})
        if isinstance(events[i]["args"], dict):
            events[i]["args"]["nested"] = value
    else:
        events[i] = value


def bury_a_syntax_error(doc: Doc, rng: random.Random) -> None:
    """A value nested too deep to decode, then an event whose args hold thousands of small
    objects with one syntax error among them: the shape whose refusal once took quadratic
    time (each nested boundary tried as an event's end)."""
    events = _events(doc)
    if not events:
        return
    i = rng.randrange(len(events))
    events[i : i + 1] = [
        f"{DEEP}20000",
        {"ph": "X", "name": "x", "ts": 1, "dur": 1, "args": {"list": f"{BROKEN}5000"}},
    ]


def retype_metadata(doc: Doc, rng: random.Random) -> None:
    key = rng.choice(["distributedInfo", "baseTimeNanoseconds", "deviceProperties", "traceEvents"])
    if key == "distributedInfo" and isinstance(doc.get(key), dict) and rng.random() < 0.7:
        doc[key][rng.choice(["rank", "world_size", "pg_config", "backend"])] = copy.deepcopy(
            rng.choice(ODD_VALUES)
        )
    else:
        doc[key] = copy.deepcopy(rng.choice(ODD_VALUES))


STRUCTURAL: list[Callable[[Doc, random.Random], None]] = [
    delete_events,
    duplicate_events,
    swap_events,
    retype_fields,
    deepen_nesting,
    bury_a_syntax_error,
    retype_metadata,
]


DEEP = "__deep__"  # "__deep__N": N nested arrays
BROKEN = "__broken__"  # "__broken__N": a list of N small objects, the last one invalid JSON


def encode(doc: Doc) -> bytes:
    text = json.dumps(doc, allow_nan=True)
    while (at := text.find(f'"{DEEP}')) >= 0:
        end = text.index('"', at + 1)
        depth = int(text[at + 1 + len(DEEP) : end])
        text = text[:at] + "[" * depth + "]" * depth + text[end + 1 :]
    while (at := text.find(f'"{BROKEN}')) >= 0:
        end = text.index('"', at + 1)
        items = ", ".join(f'{{"a": {k}}}' for k in range(int(text[at + 1 + len(BROKEN) : end])))
        text = text[:at] + f'[{items}, {{"a": 1 2}}]' + text[end + 1 :]
    return text.encode("utf-8", "surrogatepass")


def truncate(data: bytes, rng: random.Random) -> bytes:
    return data[: rng.randrange(len(data) + 1)]


def flip_bytes(data: bytes, rng: random.Random) -> bytes:
    out = bytearray(data)
    for _ in range(rng.randint(1, 8)):
        if out:
            out[rng.randrange(len(out))] = rng.randrange(256)
    return bytes(out)


def insert_bytes(data: bytes, rng: random.Random) -> bytes:
    at = rng.randrange(len(data) + 1)
    junk = rng.choice([b"}, {", b"]", b'"', b"\\", b"\xff\xfe", b"NaN", b"\x00" * 5, b"{" * 50])
    return data[:at] + junk + data[at:]


def gzip_cut(data: bytes, rng: random.Random) -> bytes:
    packed = gzip.compress(data, mtime=0)
    return packed[: rng.randrange(len(packed) + 1)] if rng.random() < 0.7 else packed + b"tail"


BYTEWISE: list[Callable[[bytes, random.Random], bytes]] = [
    truncate,
    flip_bytes,
    insert_bytes,
    gzip_cut,
]


def mutant(rng: random.Random, base: list[tuple[str, Doc]] | None = None) -> tuple[str, bytes]:
    """One mutated trace: a few structural changes to a seed, then maybe one to its bytes.
    Returns a description and the file's bytes."""
    name, doc = rng.choice(base or seeds())
    doc = copy.deepcopy(doc)
    done = []
    for _ in range(rng.randint(1, 3)):
        change = rng.choice(STRUCTURAL)
        change(doc, rng)
        done.append(change.__name__)
    data = encode(doc)
    if rng.random() < 0.5:
        change_bytes = rng.choice(BYTEWISE)
        data = change_bytes(data, rng)
        done.append(change_bytes.__name__)
    return f"{name}: {', '.join(done)}", data
