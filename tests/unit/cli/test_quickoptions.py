"""`lws manager`'s flags parsed without typer give the command what typer would give it (issue 25)."""

from __future__ import annotations

import functools
import inspect
from pathlib import Path
from typing import Annotated, Any

import pytest
import typer
from typer.testing import CliRunner

from leaderworkerset.cli import manager, quickoptions

# Plainly valid command lines: parsed here, they must give exactly typer's arguments.
PLAIN = [
    [],
    ["--kubeconfig", "/k", "--context", "dev", "--namespace", "lws-system"],
    ["--config", "cfg.yaml", "--webhook-port", "9443", "--cert-dir", "/certs"],
    ["--kubeconfig=/k", "--webhook-port=10250", "--kube-api-qps=12.5", "--kube-api-burst", "+7"],
    ["--leader-elect", "--leader-elect-lease-duration", "15s", "--leader-elect-resource-name", "x"],
    ["--no-leader-elect", "--log-console", "--insecure-metrics"],
    ["--no-insecure-metrics", "--log-json", "--disable-webhooks"],
    ["--webhooks-only", "--max-concurrent-reconciles", "1", "--watch-namespace", "ns"],
    ["--disable-disaggregatedset", "--disable-failure-ledger", "--kube-api-qps", "1e3"],
    ["--enable-disaggregatedset", "--metrics-bind-address", "0", "--health-probe-bind-address", ":8081"],
    ["--webhook-url-host", "127.0.0.1", "--webhook-url-port", "443", "--kube-api-qps", "-1"],
    ["--webhook-port", "1", "--webhook-port", "2", "--leader-elect", "--no-leader-elect"],
    ["--kubeconfig", ""],
]
# Left to typer: help, errors, and values typer may read otherwise than Python does.
FOR_TYPER = [
    ["--help"],
    ["--bogus"],
    ["--webhook-port"],
    ["--webhook-port", "x"],
    ["--webhook-port", "1_000"],
    ["--webhook-port", " 5"],
    ["--kube-api-qps", "nan"],
    ["--insecure-metrics=true"],
    ["--kubecon", "/k"],
    ["positional"],
    ["--namespace", "-x"],
]


def _through_typer(argv: list[str]) -> dict[str, Any]:
    seen: list[dict[str, Any]] = []

    @functools.wraps(manager.manager)  # typer reads the options through __wrapped__
    def capture(**kwargs: Any) -> None:
        seen.append(kwargs)

    app = typer.Typer()
    app.command()(capture)
    result = CliRunner().invoke(app, argv)
    assert result.exit_code == 0, result.output
    assert len(seen) == 1
    return seen[0]


def test_every_manager_option_is_mirrored() -> None:
    parser = quickoptions.build_parser(manager.manager)
    assert {action.dest for action in parser._actions} == set(inspect.signature(manager.manager).parameters)


def test_plain_command_lines_give_typers_arguments() -> None:
    checked = 0
    for argv in PLAIN:
        assert quickoptions.parse(manager.manager, argv) == _through_typer(argv), argv
        checked += 1
    assert checked == len(PLAIN) == 13


def test_help_errors_and_unusual_values_are_left_to_typer() -> None:
    assert [argv for argv in FOR_TYPER if quickoptions.parse(manager.manager, argv) is not None] == []
    assert len(FOR_TYPER) == 11


def test_path_options_are_paths() -> None:
    parsed = quickoptions.parse(manager.manager, ["--config", "c.yaml"])
    assert parsed is not None
    assert parsed["config"] == Path("c.yaml")


def test_an_option_it_cannot_mirror_is_refused() -> None:
    def command(port: Annotated[int, typer.Option(envvar="PORT")] = 0) -> None:
        del port

    with pytest.raises(TypeError):
        quickoptions.build_parser(command)
