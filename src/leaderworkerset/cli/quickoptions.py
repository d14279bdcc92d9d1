"""`lws manager`'s options, declared once and parsed without typer when the command line is plain.

The manager is the long-running process, and typer is not free there: it brings click (about 1.4 MiB
of RSS and 31 modules after the manager's other imports), and its parsing builds a pydantic
TypeAdapter per option (45 more modules, about 6 MiB). So the manager's options are declared as
`Annotated[type, option(...)]` with this module's `Flag`, which needs nothing from typer, and:

- `parse` reads a plainly valid command line (known options, plain values) with argparse;
- `typer_command` gives typer the same options, translated to `typer.Option`, for everything else:
  `--help`, an unknown or malformed option, a value it does not recognise as plainly valid. Help,
  errors and odd inputs therefore look exactly as typer has always made them.

typer is imported only on that second path, so a manager started with plain flags never loads it.
"""

from __future__ import annotations

import argparse
import inspect
import re
import typing
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# Only values any reader would take the same way; the rest (underscores, "nan", surrounding
# spaces, ...) are left to typer, which accepts or rejects them as it always did.
_PLAIN_INT = re.compile(r"[+-]?[0-9]+")
_PLAIN_FLOAT = re.compile(r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?")


@dataclass(frozen=True)
class Flag:
    """One option of a command: its names in typer's syntax ("--name", "--on/--off"; none: from
    the parameter's name, and `--x/--no-x` for a bool) and its help text."""

    decls: tuple[str, ...] = ()
    help: str | None = None


def option(*decls: str, help: str | None = None) -> Flag:
    return Flag(decls=decls, help=help)


class UsageError(Exception):
    """A command's arguments contradict each other; typer reports it with the usage line."""


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


@dataclass(frozen=True)
class _Declared:
    param: inspect.Parameter
    annotated: Any  # the parameter's type as written, `X | None` included
    value_type: Any  # what a value converts to: X
    flag: Flag


def _declared(command: Callable[..., Any]) -> list[_Declared]:
    """The command's options; TypeError for a parameter that is not `Annotated[..., Flag]` or whose
    type has no plain converter."""
    hints = typing.get_type_hints(command, include_extras=True)
    declared = []
    for name, param in inspect.signature(command).parameters.items():
        annotation = hints[name]
        annotated, *extras = typing.get_args(annotation)
        flags = [extra for extra in extras if isinstance(extra, Flag)]
        if typing.get_origin(annotation) is not typing.Annotated or len(flags) != 1:
            raise TypeError(f"option {name!r} is not Annotated[..., option(...)]: {annotation!r}")
        members = [arg for arg in typing.get_args(annotated) if arg is not type(None)]
        value_type = members[0] if len(members) == 1 else annotated  # X | None: X
        if value_type is not bool and value_type not in _CONVERTERS:
            raise TypeError(f"option {name!r}: no plain converter for {value_type!r}")
        declared.append(_Declared(param, annotated, value_type, flags[0]))
    return declared


def build_parser(command: Callable[..., Any]) -> argparse.ArgumentParser:
    """An argparse parser for the command's options, named and defaulted as typer names them."""
    parser = _Parser(add_help=False, allow_abbrev=False)
    for declared in _declared(command):
        name, flag = declared.param.name, declared.flag
        default_decl = "--" + name.replace("_", "-")
        if declared.value_type is bool:
            for decl in flag.decls or (f"{default_decl}/--no-{default_decl[2:]}",):
                on, _, off = decl.partition("/")
                parser.add_argument(on, dest=name, action="store_const", const=True)
                if off:
                    parser.add_argument(off, dest=name, action="store_const", const=False)
        else:
            converter = _CONVERTERS[declared.value_type]
            parser.add_argument(*(flag.decls or (default_decl,)), dest=name, type=converter)
        parser.set_defaults(**{name: declared.param.default})
    return parser


def parse(command: Callable[..., Any], argv: Sequence[str]) -> dict[str, Any] | None:
    """The command's keyword arguments for `argv`, or None when typer must parse it."""
    try:
        return vars(build_parser(command).parse_args(list(argv)))
    except NotPlainError:
        return None


def typer_command(command: Callable[..., Any], call: Callable[..., Any] | None = None) -> Callable[..., None]:
    """The command with its options as typer annotations, for `typer.Typer().command()`; it runs
    `call` (default: the command) with typer's arguments and turns a UsageError into typer's."""
    import typer  # only for help, errors and unusual values: see the module's docstring

    target = command if call is None else call
    annotations: dict[str, Any] = {}
    params = []
    annotated: Any = typing.Annotated  # subscripted with runtime values, not a static type
    for declared in _declared(command):
        typed = annotated[declared.annotated, typer.Option(*declared.flag.decls, help=declared.flag.help)]
        annotations[declared.param.name] = typed
        params.append(declared.param.replace(annotation=typed))

    def through_typer(**kwargs: Any) -> None:
        try:
            target(**kwargs)
        except UsageError as err:
            raise typer.BadParameter(str(err)) from err

    through_typer.__name__ = command.__name__
    through_typer.__doc__ = command.__doc__
    through_typer.__annotations__ = annotations
    through_typer.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    return through_typer


def run(command: Callable[..., Any], argv: Sequence[str], with_typer: Callable[[], None]) -> None:
    """Run the command on `argv` parsed here, or through `with_typer` when typer must parse it
    (also when the command raises UsageError: typer then reports it with its usage line)."""
    kwargs = parse(command, argv)
    if kwargs is None:
        with_typer()
        return
    try:
        command(**kwargs)
    except UsageError:
        with_typer()
