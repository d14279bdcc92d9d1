"""A typer command's options parsed with argparse, read from the same signature (issue 25).

typer builds a pydantic TypeAdapter for every option it parses, so parsing `lws manager`'s flags
through typer loads pydantic into the long-running process: 45 modules and about 6 MiB of RSS it
never uses again. The options stay defined once, as typer annotations on the command; this module
reads those annotations and parses a command line that is plainly valid (known options, plain
values) itself. Anything else — `--help`, an unknown or malformed option, a value it does not
recognise as plainly valid — gives None, and the caller lets typer parse the command line as it
always did, so help, errors and odd inputs look exactly as before.
"""

from __future__ import annotations

import argparse
import inspect
import re
import typing
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import typer
from typer.models import OptionInfo

# Only values any reader would take the same way; the rest (underscores, "nan", surrounding
# spaces, ...) are left to typer, which accepts or rejects them as it always did.
_PLAIN_INT = re.compile(r"[+-]?[0-9]+")
_PLAIN_FLOAT = re.compile(r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?")


class NotPlainError(Exception):
    """The command line needs typer: help, an error, or something this parser does not mirror."""


def _checked(pattern: re.Pattern[str], convert: Callable[[str], Any]) -> Callable[[str], Any]:
    def parse(value: str) -> Any:
        if pattern.fullmatch(value) is None:
            raise NotPlainError(value)
        return convert(value)

    return parse


_CONVERTERS: dict[Any, Callable[[str], Any]] = {
    str: str,
    Path: Path,
    int: _checked(_PLAIN_INT, int),
    float: _checked(_PLAIN_FLOAT, float),
}


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> typing.NoReturn:
        raise NotPlainError(message)


def _option(annotation: Any) -> tuple[Any, OptionInfo]:
    """The value type (None stripped) and the typer OptionInfo of an `Annotated[..., Option()]`."""
    value_type, *extras = typing.get_args(annotation)
    infos = [extra for extra in extras if isinstance(extra, OptionInfo)]
    if typing.get_origin(annotation) is not typing.Annotated or len(infos) != 1:
        raise TypeError(f"not an Annotated typer option: {annotation!r}")
    members = [arg for arg in typing.get_args(value_type) if arg is not type(None)]
    if len(members) == 1:  # X | None
        value_type = members[0]
    return value_type, infos[0]


def _declared_names(info: OptionInfo) -> tuple[str, ...]:
    """In `Annotated[..., Option("--a/--b")]` typer takes the first positional argument, which
    OptionInfo holds as its default, for the first declared name."""
    first = () if info.default is ... else (str(info.default),)
    return (*first, *(info.param_decls or ()))


def _mirrored(info: OptionInfo) -> bool:
    """Options whose typer parsing does more than convert a value are left to typer."""
    return (
        info.callback is None
        and info.parser is None
        and info.envvar is None
        and not info.count
        and not info.is_eager
        and info.min is None
        and info.max is None
        and not info.prompt
    )


def build_parser(command: Callable[..., Any]) -> argparse.ArgumentParser:
    """An argparse parser for the command's options, named and defaulted as typer names them.
    Raises TypeError for an option it cannot mirror (tests/unit/cli/test_manager_imports.py
    asserts the manager's options are all mirrored, so the saving cannot regress silently)."""
    parser = _Parser(add_help=False, allow_abbrev=False)
    hints = typing.get_type_hints(command, include_extras=True)
    for name, param in inspect.signature(command).parameters.items():
        value_type, info = _option(hints[name])
        if not _mirrored(info):
            raise TypeError(f"option {name!r} does more than convert a value")
        flag = "--" + name.replace("_", "-")
        decls = _declared_names(info)
        if value_type is bool:
            for decl in decls or (f"{flag}/--no-{flag[2:]}",):
                on, _, off = decl.partition("/")
                parser.add_argument(on, dest=name, action="store_const", const=True)
                if off:
                    parser.add_argument(off, dest=name, action="store_const", const=False)
        elif value_type in _CONVERTERS:
            parser.add_argument(*(decls or (flag,)), dest=name, type=_CONVERTERS[value_type])
        else:
            raise TypeError(f"option {name!r}: no plain converter for {value_type!r}")
        parser.set_defaults(**{name: param.default})
    return parser


def parse(command: Callable[..., Any], argv: Sequence[str]) -> dict[str, Any] | None:
    """The command's keyword arguments for `argv`, or None when typer must parse it."""
    try:
        return vars(build_parser(command).parse_args(list(argv)))
    except (NotPlainError, TypeError):
        return None


def run(command: Callable[..., Any], argv: Sequence[str], with_typer: Callable[[], None]) -> None:
    """Run the command on `argv` parsed here, or through `with_typer` when typer must parse it
    (also when the command rejects a parameter: typer then reports it with its usage line)."""
    kwargs = parse(command, argv)
    if kwargs is None:
        with_typer()
        return
    try:
        command(**kwargs)
    except typer.BadParameter:
        with_typer()
    except typer.Exit as done:
        raise SystemExit(done.exit_code) from None
