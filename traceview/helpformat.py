"""--help that shows each option's default (traceview's commands and the harness's flags)."""

from __future__ import annotations

import argparse


class DefaultsHelp(argparse.HelpFormatter):
    """Appends "(default: X)" to an option's help where there is a default worth saying (not
    None, not off) and the help does not say it already."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        silent = action.default in (None, False, argparse.SUPPRESS)
        if action.option_strings and not silent and "default" not in text:
            text += " (default: %(default)s)"
        return text
