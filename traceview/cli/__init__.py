"""The command line: a thin shell over the library. `main(argv) -> exit code`."""

from __future__ import annotations

import gc

from traceview import preload

preload.for_the_program()  # before anything below loads polars or numpy
# Loading polars, numpy and the commands allocates enough for ~100 rounds of Python's cycle
# collector, which find next to nothing: paused until they are loaded, and what they made (it
# lives as long as the program) is left out of every later round. ~20 ms of a start-up of
# ~0.3 s (docs/performance.md).
gc.disable()

import argparse
import atexit
import contextlib
import os
import signal
import sys
import traceback
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any, NoReturn

from traceview import __version__
from traceview.cli.commands import COMMANDS
from traceview.cli.say import say
from traceview.errors import A_BUG_DEBUG, EXIT_INTERNAL, EXIT_INTERRUPTED, EXIT_OK, TraceviewError
from traceview.helpformat import DefaultsHelp
from traceview.remote import storage_error

preload.collect_less()
gc.enable()


class _Parser(argparse.ArgumentParser):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", DefaultsHelp)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> None:  # type: ignore[override]
        """One line, not argparse's usage block."""
        raise TraceviewError(f"{message} (see '{self.prog} --help')")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="traceview", description="Where does data-parallel step time go?")
    parser.add_argument("--version", action="version", version=f"traceview {__version__}")
    parser.add_argument(
        "--debug", action="store_true", help="show the traceback of an internal error (anywhere)"
    )
    subparsers = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    for command in COMMANDS:
        command.add_parser(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args_in = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in args_in  # anywhere on the line: shows an internal error's traceback
    args_in = [a for a in args_in if a != "--debug"]
    try:
        args = build_parser().parse_args(args_in)
        args.debug = debug
        with interrupted_by_sigterm():
            return int(args.run(args))
    except TraceviewError as e:
        say("error", e.message)
        return e.exit_code
    except KeyboardInterrupt:
        say("interrupted")
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        silence_stdout()  # the reader went away (| head): not an error
        return EXIT_OK
    except Exception as e:  # a bug: one line, the traceback only when asked
        if said := storage_error(e):
            say("error", said.message)
            return said.exit_code
        if debug:
            traceback.print_exc()
        say("internal error", f"{type(e).__name__}: {e} {A_BUG_DEBUG}")
        return EXIT_INTERNAL


def program() -> NoReturn:
    """The `traceview` command: main() on the command line, then out of the process without
    tearing the interpreter down. The exit handlers run and the output is flushed; the
    modules, and the tables a large trace leaves, are not freed one object at a time (the
    system takes the memory back at once): about 4 % of the CPU time of a 1 GB trace."""
    code = main()
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError, AttributeError):
            stream.flush()
    os._exit(code)


@contextmanager
def interrupted_by_sigterm() -> Iterator[None]:
    """SIGTERM ends a command as Ctrl-C does, so partly written files are removed."""

    def stop(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    try:
        previous = signal.signal(signal.SIGTERM, stop)
    except ValueError:  # not the main thread (a test runner): leave signals alone
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def silence_stdout() -> None:
    """Point stdout at /dev/null, so the interpreter's last flush does not complain."""
    with contextlib.suppress(OSError, ValueError, AttributeError):
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


if __name__ == "__main__":  # pragma: no cover
    program()
