"""Decoding a batch of events the compiled scanner did not take: the whole batch at once where it
can be, else event by event, keeping what can be read and counting what cannot."""

from __future__ import annotations

from typing import Any, Literal

import msgspec

from traceview.parse import json_text
from traceview.parse.events import (
    EVENTS,
    KNOWN_PHASES,
    LENIENT_EVENT,
    LENIENT_PRECISE_EVENT,
    PRECISE_EVENTS,
    STRICT_EVENT,
    STRICT_PRECISE_EVENT,
    DecodedBatch,
    needs_precision,
)

# How the keys after the events were left unread as written: bytes that are not UTF-8 were
# replaced to read them ("repaired"), or they are nested too deep to read ("too deep").
TrailerUnread = Literal["repaired", "too deep"]


class StreamResult(msgspec.Struct):
    """What the stream learned besides the events, filled in as it goes."""

    # The top-level keys other than the events.
    metadata: dict[str, Any] = msgspec.field(default_factory=dict)
    bare_array: bool = False
    truncated: bool = False
    lost_trailer: bool = False  # the events are whole but the keys after them were cut
    retyped_events: int = 0  # events decoded leniently after a type mismatch
    dropped_events: int = 0  # events whose fields could not be read at all
    repaired_events: int = 0  # batches whose bytes that are not UTF-8 were replaced
    trailing_bytes: int = 0  # bytes after the end of the JSON document, not JSON: ignored
    trailer_unread: TrailerUnread | None = None  # the keys after the events, whole


class BatchDecoder:
    def __init__(self, result: StreamResult) -> None:
        self.result = result
        self.precise = False  # epoch timestamps with fractions: decode them as decimals
        # Whether events were decoded before the timestamps were known to need decimals: how
        # they were read then depends on what came before (see parse/halves.py).
        self.decoded_unsure = False

    def decode(self, doc: bytes) -> DecodedBatch:
        """A batch `[...]` of events. msgspec.DecodeError: not valid JSON as a whole."""
        self.decoded_unsure |= not self.precise
        try:
            return self._decode_utf8(doc)
        except UnicodeDecodeError:
            self.result.repaired_events += 1
            return self._decode_utf8(json_text.utf8_replaced(doc))

    def _decode_utf8(self, doc: bytes) -> DecodedBatch:
        try:
            if self.precise:  # this trace's clock needs decimals: each batch decoded once
                return DecodedBatch.of(PRECISE_EVENTS.decode(doc), precise=True)
            batch = DecodedBatch.of(EVENTS.decode(doc))
        except (msgspec.ValidationError, RecursionError):
            return self._decode_by_event(doc)
        if needs_precision(batch.complete):
            self.precise = True
            return DecodedBatch.of(PRECISE_EVENTS.decode(doc), precise=True)
        return batch

    def _decode_by_event(self, doc: bytes) -> DecodedBatch:
        """A field had an unexpected type, or nesting too deep: decode event by event, dropping
        the ones that cannot be read."""
        try:
            raws = [(0, msgspec.json.encode(raw)) for raw in json_text.decode_json(doc)]
        except (RecursionError, msgspec.ValidationError):
            # Nesting too deep, or a number JSON allows but a double cannot hold (1e309): find
            # the events in the text instead, and drop only the ones that hold it.
            raws = list(json_text.event_texts(doc, 1, len(doc) - 1))
        texts = []
        for at, text in raws:
            try:
                raw = msgspec.json.decode(text)
            except RecursionError:
                stops = json_text.unclosed(text)
                if stops is not None:  # not one whole value: not JSON
                    raise msgspec.DecodeError(f"not one value (byte {at + stops})") from None
                self.result.dropped_events += 1
                continue
            except msgspec.ValidationError:
                self.result.dropped_events += 1
                continue
            except msgspec.DecodeError as e:  # said at its place in `doc`
                where = json_text.BYTE_AT.search(str(e))
                offset = at + (int(where[1]) if where else 0)
                raise msgspec.DecodeError(f"{json_text.reason(e)} (byte {offset})") from None
            ph = raw.get("ph") if isinstance(raw, dict) else None
            if isinstance(ph, str) and ph not in KNOWN_PHASES:
                continue  # a phase outside the Chrome trace format, which nothing here reads
            texts.append(text)
        counted = True  # each event's loss is counted once, by its first decoding
        if not self.precise:
            batch = DecodedBatch.of(self._typed(texts, STRICT_EVENT, LENIENT_EVENT))
            if not needs_precision(batch.complete):
                return batch
            self.precise, counted = True, False
        precise = self._typed(texts, STRICT_PRECISE_EVENT, LENIENT_PRECISE_EVENT, count=counted)
        return DecodedBatch.of(precise, precise=True)

    def _typed(
        self, texts: list[bytes], strict: Any, lenient: Any, *, count: bool = True
    ) -> list[Any]:
        events = []
        for text in texts:
            try:
                events.append(strict.decode(text))
                continue
            except (msgspec.ValidationError, RecursionError):
                pass
            try:
                events.append(lenient.decode(text))
                self.result.retyped_events += count
            except (msgspec.ValidationError, RecursionError):
                self.result.dropped_events += count
        return events
