"""The published JSON Schemas: each command's --format json output validates against its own,
the files in docs/schema are what the documents' structs generate, and a released version only
ever gains keys (removing or retyping one needs a new SCHEMA_VERSION)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from tests import tracebuild as tb
from tests.cli.run_cli import traceview
from traceview.documents.publish import DOCUMENTS, json_schema
from traceview.documents.structs import SCHEMA_VERSION

ROOT = Path(__file__).resolve().parents[2]
PUBLISHED = ROOT / "docs" / "schema"
RELEASED = Path(__file__).parent / "released"
SWEEP = ROOT / "sample_traces" / "cpu_sweep"
FIXTURES = ROOT / "tests" / "fixtures" / "traces"


def published(command: str) -> dict[str, Any]:
    return json.loads((PUBLISHED / f"{command}.schema.json").read_text())


def validate(command: str, text: str) -> dict[str, Any]:
    doc = json.loads(text)
    schema = published(command)
    jsonschema.Draft202012Validator.check_schema(schema)
    jsonschema.Draft202012Validator(schema).validate(doc)
    return doc


@pytest.mark.parametrize("command", sorted(DOCUMENTS))
def test_the_published_schema_is_what_the_structs_generate(command):
    assert published(command) == json_schema(command), (
        f"docs/schema/{command}.schema.json is out of date: run scripts/schemas.py"
    )


@pytest.mark.parametrize(
    ("command", "inputs"),
    [
        ("analyze", [SWEEP / "ddp-dp2"]),
        ("analyze", [FIXTURES / "nccl_w8_rank3_step1010.json.gz"]),  # kernels before step 1
        ("analyze", [FIXTURES / "nccl_sampled_w128"]),
        ("collectives", [SWEEP / "zero3-dp2"]),
        ("collectives", [FIXTURES / "nccl_sampled_w128"]),
        ("ranks", [SWEEP / "ddp-dp4"]),
        ("ranks", [FIXTURES / "nccl_ddp_w2_rank0_step5.json.gz"]),  # one rank: nothing compared
        ("compare", [SWEEP]),
        ("diff", [SWEEP / "ddp-dp2", SWEEP / "ddp-dp4"]),
    ],
)
@pytest.mark.cli
def test_every_commands_output_validates_against_its_schema(command, inputs):
    result = traceview(command, *inputs, "--format", "json")
    assert result.code == 0, result.err
    doc = validate(command, result.out)
    assert doc["command"] == command and doc["schema_version"] == SCHEMA_VERSION


@pytest.mark.cli
def test_a_lossy_input_and_a_failed_one_validate_too(tmp_path):
    good = tb.write(tmp_path / "rank0.json", tb.document(tb.gpu_example()))
    (tmp_path / "rank1.json").write_text('{"traceEvents": [{"ph": "X", "ts": 1}, {]}')
    (tmp_path / "rank2.json").write_text("[1, 2")  # events lost
    result = traceview("analyze", good.parent, "--format", "json")
    doc = validate("analyze", result.out)
    assert result.code == 2  # an input that could not be read at all
    assert [e["path"] for e in doc["errors"]] == [str(tmp_path / "rank1.json")]
    assert any(n["severity"] == "lossy" for r in doc["ranks"] for n in r["notes"])


@pytest.mark.cli
def test_a_document_of_another_version_or_command_does_not_validate():
    result = traceview("ranks", SWEEP / "ddp-dp2", "--format", "json")
    doc = json.loads(result.out)
    validator = jsonschema.Draft202012Validator(published("ranks"))
    assert validator.is_valid(doc)
    assert not validator.is_valid({**doc, "schema_version": SCHEMA_VERSION + 1})
    assert not validator.is_valid({**doc, "command": "analyze"})
    del doc["jobs"][0]["aligned"]
    assert not validator.is_valid(doc)


def _without_prose(node: Any) -> Any:
    """A schema with its descriptions, titles and defaults left out: what a key promises."""
    if isinstance(node, dict):
        return {
            k: _without_prose(v)
            for k, v in node.items()
            if k not in ("description", "title", "default")
        }
    if isinstance(node, list):
        return [_without_prose(v) for v in node]
    return node


def _taken_back(released: dict[str, Any], current: dict[str, Any]) -> list[str]:
    """What the released schema promised that the current one does not: a definition or a key
    gone, or a key whose type changed."""
    out = []
    for name, old in released["$defs"].items():
        new = current["$defs"].get(name)
        if new is None:
            out.append(f"{name}: gone")
            continue
        for key, promised in old.get("properties", {}).items():
            now = new.get("properties", {}).get(key)
            if now is None:
                out.append(f"{name}.{key}: gone")
            elif _without_prose(now) != _without_prose(promised):
                out.append(f"{name}.{key}: {promised} -> {now}")
        out += [f"{name}.{k}: no longer required" for k in set(old.get("required", ()))
                - set(new.get("required", ()))]  # fmt: skip
    return out


@pytest.mark.parametrize("command", sorted(DOCUMENTS))
def test_within_a_version_keys_are_only_ever_added(command):
    release = RELEASED / f"v{SCHEMA_VERSION}" / f"{command}.schema.json"
    assert release.is_file(), (
        f"SCHEMA_VERSION {SCHEMA_VERSION} has no released schema: copy docs/schema into "
        f"{release.parent.relative_to(ROOT)} when a version is raised"
    )
    taken_back = _taken_back(json.loads(release.read_text()), json_schema(command))
    assert taken_back == [], (
        f"{command}'s document takes back what schema version {SCHEMA_VERSION} promised: "
        "raise SCHEMA_VERSION (traceview/documents/structs.py)"
    )


def test_the_released_check_sees_a_key_removed_or_retyped():
    schema = json_schema("ranks")
    retyped = json.loads(json.dumps(schema))
    retyped["$defs"]["JobRanks"]["properties"]["straggler"] = {"type": "string"}
    del retyped["$defs"]["Alignment"]["properties"]["wait_us"]
    assert _taken_back(schema, retyped) == [
        "JobRanks.straggler: {'anyOf': [{'type': 'integer'}, {'type': 'null'}]} -> "
        "{'type': 'string'}",
        "Alignment.wait_us: gone",
    ]
    added = json.loads(json.dumps(schema))
    added["$defs"]["JobRanks"]["properties"]["new_key"] = {"type": "integer"}
    assert _taken_back(schema, added) == []
