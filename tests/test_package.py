"""The package as users import it: its public names resolve lazily to what type checkers see,
it ships its types, and each class name means one thing."""

from __future__ import annotations

import ast
import dataclasses
import importlib
import numbers
from pathlib import Path

import traceview

PACKAGE = Path(traceview.__file__).parent


def _type_checking_imports() -> dict[str, str]:
    tree = ast.parse((PACKAGE / "__init__.py").read_text())
    block = next(
        n for n in tree.body if isinstance(n, ast.If) and "TYPE_CHECKING" in ast.unparse(n.test)
    )
    return {
        alias.name: node.module
        for node in block.body
        if isinstance(node, ast.ImportFrom) and node.module
        for alias in node.names
    }


def test_the_public_names_are_the_ones_type_checkers_see_and_each_resolves():
    assert _type_checking_imports() == traceview._EXPORTS
    for name, module in traceview._EXPORTS.items():
        assert getattr(traceview, name) is getattr(importlib.import_module(module), name)
    assert sorted(traceview.__all__) == sorted(traceview._EXPORTS)


def test_an_unknown_name_is_an_attribute_error():
    try:
        traceview.no_such_name  # noqa: B018
    except AttributeError as e:
        assert "no_such_name" in str(e)
    else:
        raise AssertionError("no error")


def test_the_package_ships_its_types():
    assert (PACKAGE / "py.typed").is_file()


def _classes(root: Path) -> dict[str, list[str]]:
    """Each class name defined at a module's top level, with the modules that define it."""
    found: dict[str, list[str]] = {}
    for path in sorted(root.rglob("*.py")):
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, ast.ClassDef):
                found.setdefault(node.name, []).append(str(path.relative_to(root.parent)))
    return found


def test_each_class_name_means_one_thing():
    # A document's struct that writes an analysis class is named after it with "Json" added.
    assert {n: where for n, where in _classes(PACKAGE).items() if len(where) > 1} == {}


def _not_plain(obj: object, path: str, seen: set[int]) -> list[str]:
    """Every number inside `obj` (dataclass or struct fields and properties, lists, dicts) not a
    plain Python int, float or bool: a numpy scalar, say."""
    if id(obj) in seen or obj is None or isinstance(obj, str | Path):
        return []
    seen.add(id(obj))
    if type(obj) in (int, float, bool):
        return []
    if isinstance(obj, numbers.Number):
        return [f"{path}: {type(obj).__name__}"]
    found: list[str] = []
    fields = (
        [f.name for f in dataclasses.fields(obj)]
        if dataclasses.is_dataclass(obj)
        else list(getattr(obj, "__struct_fields__", ()))
    )
    if fields:  # a dataclass or a msgspec struct
        names = fields + [n for n in dir(type(obj)) if isinstance(getattr(type(obj), n), property)]
        for name in names:
            found += _not_plain(getattr(obj, name), f"{path}.{name}", seen)
    elif isinstance(obj, list | tuple):
        for i, item in enumerate(obj):
            found += _not_plain(item, f"{path}[{i}]", seen)
    elif isinstance(obj, dict):
        for key, value in obj.items():
            found += _not_plain(value, f"{path}[{key!r}]", seen)
    return found


def test_the_api_gives_plain_python_numbers_and_whole_bytes():
    root = PACKAGE.parent
    found: list[str] = []
    for folder in ("sample_traces/cpu_sweep/zero3-dp4", "tests/fixtures/traces/nccl_sampled_w128"):
        job = traceview.load(root / folder)
        for name in ("ranks", "cross_rank", "fits", "step_skew", "findings"):
            found += _not_plain(getattr(job, name), f"{folder}: job.{name}", set())
    runs = traceview.load_runs([root / "sample_traces/cpu_sweep"])
    for name, value in (("scaling", runs.scaling()), ("predictions", runs.predictions())):
        found += _not_plain(value, f"runs.{name}()", set())
    assert found == []
    for row in runs.scaling():
        for size in (row.model_state_bytes, row.model_state_theory_bytes):
            assert size is None or type(size) is int
    states = traceview.model_state_bytes("zero3", 1_000_000_001, 64, "mixed")
    assert states == {"params": 31_250_001, "grads": 31_250_001, "optimizer": 187_500_001}


def test_the_step_table_holds_a_breakdowns_fields():
    from traceview.analysis.breakdown import Breakdown
    from traceview.tables import BREAKDOWN_COLUMNS

    assert Breakdown.__struct_fields__ == (*BREAKDOWN_COLUMNS, "gaps_ns")


def _imported(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module.split(".")[0])
    return names


def test_the_report_and_what_it_shows_need_no_streamlit():
    needing = [
        str(path.relative_to(PACKAGE))
        for part in ("report", "presentation")
        for path in (PACKAGE / part).rglob("*.py")
        if "streamlit" in _imported(path)
    ]
    assert needing == []
    assert "streamlit" in _imported(PACKAGE / "dashboard" / "app.py")  # the check sees one
