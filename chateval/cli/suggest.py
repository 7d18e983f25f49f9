"""'Did you mean' for a mistyped command or option: argparse's own error line, with the closest
names (difflib, as the registries suggest systems, presets and personas) appended."""

from __future__ import annotations

import argparse
import re
from collections.abc import Sequence
from typing import NoReturn

from ..util.registry import did_you_mean

_CHOICE = re.compile(r"invalid choice: '([^']*)' \(choose from (.*)\)")
_UNRECOGNIZED = "unrecognized arguments: "


class Parser(argparse.ArgumentParser):
    """The parser of every chateval command (subparsers inherit the class)."""

    # The command line being parsed (set by build_parser): an unknown option is compared with the
    # options of the command it names. argparse reports unknown options from the top parser.
    argv: Sequence[str] = ()

    def error(self, message: str) -> NoReturn:
        super().error(message + hint(self, message))


def hint(parser: argparse.ArgumentParser, message: str) -> str:
    m = _CHOICE.search(message)
    if m:
        return did_you_mean(m.group(1), re.findall(r"'([^']*)'", m.group(2)))
    if _UNRECOGNIZED in message:
        known = _options(parser, list(getattr(parser, "argv", ())))
        for token in message.split(_UNRECOGNIZED, 1)[1].split():
            if token.startswith("--"):
                flag = token.split("=", 1)[0]
                near = did_you_mean(flag, known)
                if near:
                    return near
    return ""


def _options(parser: argparse.ArgumentParser, argv: list[str]) -> list[str]:
    """The long options of the command argv names (the parser, then the subcommands it names)."""
    out: list[str] = []
    current: argparse.ArgumentParser | None = parser
    tokens = iter(argv)
    while current is not None:
        out += [o for a in current._actions for o in a.option_strings if o.startswith("--")]
        subs = [a for a in current._actions if isinstance(a, argparse._SubParsersAction)]
        current = None
        if subs:
            for token in tokens:
                if token in subs[0].choices:
                    current = subs[0].choices[token]
                    break
    return out
