"""Documents as JSON text, and the JSON Schema each one is published under
(docs/schema/<command>.schema.json)."""

from __future__ import annotations

import json
from typing import Any

import msgspec

from traceview.documents import structs as d
from traceview.documents.path_structs import CriticalPathDocument
from traceview.documents.structs import SCHEMA_VERSION, WRITES_SUFFIX, Document

# Every command's document, by the command's name: what docs/schema publishes.
DOCUMENTS: dict[str, type[Document]] = {
    "analyze": d.AnalyzeDocument,
    "collectives": d.CollectivesDocument,
    "ranks": d.RanksDocument,
    "compare": d.CompareDocument,
    "diff": d.DiffDocument,
    "critical-path": CriticalPathDocument,
}


def encode(document: Document) -> str:
    """Indented, one key per line, as people read it and diff it."""
    return msgspec.json.format(msgspec.json.encode(document), indent=2).decode() + "\n"


def json_schema(command: str) -> dict[str, Any]:
    """The JSON Schema (2020-12) of `command`'s document at this SCHEMA_VERSION."""
    document = DOCUMENTS[command]
    schema = msgspec.json.schema(document)
    top = schema["$defs"][document.__name__]
    # A document of another version or command does not validate.
    top["properties"]["schema_version"] = {"const": SCHEMA_VERSION}
    top["properties"]["command"] = {"const": command}
    top["required"] = sorted({*top["required"], "command"})
    schema = _published_names(json.loads(json.dumps(schema)))  # a default of () is []
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": f"urn:traceview:schema:{command}:v{SCHEMA_VERSION}",
        "title": f"traceview {command} --format json (schema version {SCHEMA_VERSION})",
        **schema,
    }


def _published_names(schema: dict[str, Any]) -> dict[str, Any]:
    """The schema with each definition named as the document calls it: `Breakdown`, not the
    struct's `BreakdownJson` (a suffix that tells it from the analysis class in Python only)."""
    renamed = {
        n: n.removesuffix(WRITES_SUFFIX) for n in schema["$defs"] if n.endswith(WRITES_SUFFIX)
    }

    def named(node: Any) -> Any:
        if isinstance(node, dict):
            out = {k: named(v) for k, v in node.items()}
            ref = out.get("$ref", "")
            if ref.startswith("#/$defs/") and ref[8:] in renamed:
                out["$ref"] = "#/$defs/" + renamed[ref[8:]]
            if out.get("title") in renamed:
                out["title"] = renamed[out["title"]]
            return out
        if isinstance(node, list):
            return [named(v) for v in node]
        return node

    schema = named(schema)
    schema["$defs"] = {renamed.get(k, k): v for k, v in schema["$defs"].items()}
    return schema
