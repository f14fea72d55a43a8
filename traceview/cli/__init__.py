"""The command line: a thin shell over the library. `main(argv) -> exit code`."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from traceview import __version__
from traceview.cli import analyze, collectives, compare, dashboard, export, ranks
from traceview.errors import TraceviewError


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        """One line, not argparse's usage block."""
        raise TraceviewError(f"{message} (see '{self.prog} --help')")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="traceview", description="Where does data-parallel step time go?")
    parser.add_argument("--version", action="version", version=f"traceview {__version__}")
    subparsers = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    analyze.add_parser(subparsers)
    collectives.add_parser(subparsers)
    ranks.add_parser(subparsers)
    compare.add_parser(subparsers)
    export.add_parser(subparsers)
    dashboard.add_parsers(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    try:
        args = build_parser().parse_args(argv)
        return int(args.run(args))
    except TraceviewError as e:
        print(f"traceview: error: {e.message}", file=sys.stderr)
        return e.exit_code
    except KeyboardInterrupt:
        print("traceview: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
