"""Command-line flags built from RunConfig's fields: one definition of every option."""

from __future__ import annotations

import argparse
import dataclasses
import typing
from collections.abc import Sequence
from pathlib import Path

from instrumented_train.config import ConfigError, RunConfig
from traceview.helpformat import DefaultsHelp


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> typing.NoReturn:
        raise ConfigError(f"{message} (see --help)")


def _number(kind: type) -> typing.Callable[[str], object]:
    def convert(text: str) -> object:
        try:
            return kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"not a{'n' if kind is int else ''} {kind.__name__}: {text!r}"
            ) from None

    convert.__name__ = kind.__name__
    return convert


def build_parser(prog: str = "python -m instrumented_train") -> argparse.ArgumentParser:
    parser = _Parser(
        prog=prog,
        formatter_class=DefaultsHelp,
        description="Train a GPT-style model with data parallelism under torchrun and write a "
        "profiler trace per rank plus run.json into the run folder.",
    )
    hints = typing.get_type_hints(RunConfig)
    for f in dataclasses.fields(RunConfig):
        flag = "--" + f.name.replace("_", "-")
        kind = hints[f.name]
        options: dict[str, object] = {"help": f.metadata.get("help", ""), "default": f.default}
        if kind is bool:
            options["action"] = argparse.BooleanOptionalAction
        elif "choices" in f.metadata:
            options["choices"] = f.metadata["choices"]
        elif typing.get_origin(kind) is typing.Literal:
            options["choices"] = typing.get_args(kind)
        elif kind in (int, float):
            options["type"] = _number(kind)
        elif kind in (float | None, int | None):
            options["type"] = _number(next(t for t in typing.get_args(kind) if t is not type(None)))
        elif kind in (Path, Path | None):
            options["type"] = Path
        parser.add_argument(flag, **options)  # type: ignore[arg-type]
    return parser


def parse_config(argv: Sequence[str] | None = None) -> RunConfig:
    args = build_parser().parse_args(argv)
    return RunConfig(**vars(args))
