"""The report's HTML page: its parts, then Vega-Embed's scripts and the charts, each inlined
once, gzipped, and inflated by the browser itself — a file that opens with no server and no
network, a third of the size of the scripts as text."""

from __future__ import annotations

import base64
import gzip
import html
import json
import os
import subprocess
import sys
from importlib.metadata import version as installed
from pathlib import Path

from altair.utils._importers import vl_version_for_vl_convert

try:
    import resource
except ImportError:  # not on Windows, where no such limit stops V8
    resource = None  # type: ignore[assignment]

from traceview import TraceviewError


def _charting_script() -> str:
    """Vega-Embed and its libraries as one script, from vl-convert. Its JavaScript engine (V8)
    reserves tens of GB of address space as it starts and aborts the whole process when it
    cannot (`ulimit -v`): under such a limit it runs in a process of its own, whose end is
    said in one line."""
    version = vl_version_for_vl_convert()
    if resource is None or resource.getrlimit(resource.RLIMIT_AS)[0] == resource.RLIM_INFINITY:
        import vl_convert

        return str(vl_convert.javascript_bundle(vl_version=version))  # type: ignore[call-arg]
    done = subprocess.run(
        [sys.executable, "-c", _BUNDLE_IN_A_CHILD, version],
        capture_output=True,
        check=False,
    )
    if done.returncode != 0 or not done.stdout:
        limit = resource.getrlimit(resource.RLIMIT_AS)[0] >> 20
        raise TraceviewError(
            f"the report's chart engine (vl-convert's V8) cannot start under an address-space "
            f"limit of {limit:,} MB (ulimit -v): run report without that limit"
        )
    return done.stdout.decode("utf-8")


_BUNDLE_IN_A_CHILD = (  # as far as the hard limit allows, the limit is lifted first
    "import resource, sys, vl_convert; "
    "hard = resource.getrlimit(resource.RLIMIT_AS)[1]; "
    "resource.setrlimit(resource.RLIMIT_AS, (hard, hard)); "
    "sys.stdout.write(vl_convert.javascript_bundle(vl_version=sys.argv[1]))"
)


# The charting scripts and the charts are gzipped in the file (a third of their size) and
# inflated by the browser itself (DecompressionStream: Chrome 80, Firefox 113, Safari 16.4).
_DRAW = """
async function unpack(id) {
  const text = atob(document.getElementById(id).textContent);
  const bytes = Uint8Array.from(text, (c) => c.charCodeAt(0));
  const inflated = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
  return new Response(inflated).text();
}
(async () => {
  if (typeof DecompressionStream === "undefined") {
    document.querySelectorAll(".chart").forEach((div) => {
      div.textContent = "This browser cannot draw the charts (it lacks DecompressionStream).";
    });
    return;
  }
  (0, eval)(await unpack("charting"));
  const specs = JSON.parse(await unpack("charts"));
  specs.forEach((spec, i) => vegaEmbed("#chart" + i, spec, {actions: false}).catch(console.error));
})();
"""


def packed(text: str) -> str:
    """`text` gzipped and in base64: how the report carries its scripts and charts."""
    return base64.b64encode(gzip.compress(text.encode("utf-8"), mtime=0)).decode("ascii")


def cache_dir() -> Path:
    """Where the packed charting scripts are kept between reports: $XDG_CACHE_HOME/traceview."""
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "traceview"


def packed_charting_script() -> str:
    """The charting scripts, packed: made once per vl-convert and Vega-Lite version (V8 takes
    ~1.2 s to bundle them, most of a report's fixed cost) and kept; a cache that cannot be read
    or written is made again, or left unwritten."""
    name = f"charting-vl-convert-{installed('vl-convert-python')}-{vl_version_for_vl_convert()}"
    path = cache_dir() / f"{name}.b64"
    try:
        kept = path.read_text("ascii")
        gzip.decompress(base64.b64decode(kept, validate=True))  # whole: gzip's CRC holds
        return kept
    except (OSError, ValueError, EOFError, gzip.BadGzipFile):
        pass
    text = packed(_charting_script())
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_name(f".{path.name}.{os.getpid()}")
        partial.write_text(text, "ascii")
        partial.replace(path)  # whole or not at all, whoever else writes it
    except OSError:
        pass
    return text


def html_page(title: str, style: str, parts: list[str], specs: list[dict[str, object]]) -> str:
    """The document: its parts, then the charting scripts and the charts (Vega-Lite specs, drawn
    into the `chart<i>` divs), packed."""
    return (
        f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{html.escape(title)}</title><style>{style}</style></head>\n<body>\n"
        + "\n".join(parts)
        + f'\n<script type="application/gzip" id="charting">{packed_charting_script()}</script>'
        + f'\n<script type="application/gzip" id="charts">{packed(json.dumps(specs))}</script>'
        + f'\n<script type="text/javascript">{_DRAW}</script>\n</body></html>\n'
    )


def table_html(
    head: list[str], rows: list[list[str]], names: int = 1, wrap_last: bool = False
) -> str:
    """An HTML table; the first `names` columns are text, the rest numbers (the last one text
    that wraps, if asked)."""

    def cell(tag: str, i: int, text: str) -> str:
        cls = ' class="name"' if i < names else ""
        if wrap_last and i == len(head) - 1:
            cls = ' class="wrap"'
        return f"<{tag}{cls}>{text}</{tag}>"

    out = [
        "<table><tr>"
        + "".join(cell("th", i, html.escape(str(h))) for i, h in enumerate(head))
        + "</tr>"
    ]
    out += ["<tr>" + "".join(cell("td", i, c) for i, c in enumerate(r)) + "</tr>" for r in rows]
    return "\n".join(out) + "</table>"
