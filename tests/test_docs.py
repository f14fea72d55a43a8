"""The documentation as a reader meets it: a README that is a front page, links that lead
somewhere inside the repository, and no path from outside it."""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", ROOT / "DEVELOPERS.md", *sorted((ROOT / "docs").rglob("*.md"))]
LINK = re.compile(r"\]\(([^)\s]+)\)")


def test_the_readme_is_a_front_page_over_docs():
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) <= 250
    linked = set(LINK.findall(readme))
    for page in (
        "docs/metrics.md",
        "docs/glossary.md",
        "docs/output.md",
        "docs/store.md",
        "docs/harness.md",
    ):
        assert page in linked
    assert "docs/images/dashboard.png" in linked and (ROOT / "docs/images/dashboard.png").is_file()


def test_every_link_leads_to_a_file_inside_the_repository():
    broken = []
    for page in PAGES:
        for target in LINK.findall(page.read_text()):
            if re.match(r"[a-z]+:", target):  # a web address
                continue
            path = (page.parent / target.split("#")[0]).resolve()
            if not path.exists() or not path.is_relative_to(ROOT):
                broken.append(f"{page.relative_to(ROOT)}: {target}")
    assert broken == []


def test_no_page_names_a_path_outside_the_repository():
    outside = re.compile(r"\.\./shared|/work/|(?<![\w.])\.\./\.\.")
    named = [
        f"{page.relative_to(ROOT)}: {m.group(0)}"
        for page in PAGES
        for m in outside.finditer(page.read_text())
    ]
    assert named == []


@pytest.mark.cli
def test_the_api_pages_examples_run(tmp_path):
    blocks = re.findall(r"```python\n(.*?)```", (ROOT / "docs" / "api.md").read_text(), re.S)
    assert len(blocks) >= 2
    script = tmp_path / "api_examples.py"
    script.write_text("\n".join(blocks))
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=300, cwd=ROOT
    )
    assert done.returncode == 0, done.stderr


def _options() -> dict[str, set[str]]:
    """Each command's options, as its parser declares them."""
    from traceview.cli import build_parser

    (commands,) = [a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)]
    return {
        name: {o for action in parser._actions for o in action.option_strings}
        for name, parser in commands.choices.items()
    }


def _named(text: str) -> set[str]:
    return set(re.findall(r"`([a-z-]+)`", text))


def test_the_readme_says_which_command_takes_which_option():
    readme = " ".join((ROOT / "README.md").read_text().split())
    options = _options()
    printing = re.search(r"The commands that print results \((.*?)\) take `--format", readme)
    steps = re.search(
        r"`--steps 3,5-7` picks profiler steps in (.*?) \(`diff`: `--steps-a`", readme
    )
    assert printing and steps
    assert _named(printing[1]) == {c for c, o in options.items() if "--format" in o}
    assert {c for c, o in options.items() if "--format" in o} <= {
        c for c, o in options.items() if "--output" in o
    }
    assert _named(steps[1]) == {c for c, o in options.items() if "--steps" in o}
    assert {c for c, o in options.items() if "--steps-a" in o} == {"diff"}
    assert {c for c, o in options.items() if "--ranks" in o} == {"export"}
    assert "every command but `dashboard` and `pack` takes `--jobs N`" in readme
    assert {c for c, o in options.items() if "--jobs" not in o} == {"dashboard", "pack"}


def test_the_readme_counts_the_compiled_modules():
    readme = " ".join((ROOT / "README.md").read_text().split())
    sources = sorted(p.relative_to(ROOT) for p in (ROOT / "traceview").rglob("*.c"))
    assert [str(p) for p in sources] == ["traceview/parse/_scan.c"]
    assert "The install compiles one small C module, the parser's fast path" in readme
