"""`lws manager`'s flags parsed without typer give the command what typer would give it, and typer gets
the same options for help and errors."""

from __future__ import annotations

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
    app = typer.Typer()
    app.command()(quickoptions.typer_command(manager.manager, call=lambda **kwargs: seen.append(kwargs)))
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
    def typer_style(port: Annotated[int, typer.Option(envvar="PORT")] = 0) -> None:
        del port

    def no_converter(ports: Annotated[list[int] | None, quickoptions.option()] = None) -> None:
        del ports

    for command in (typer_style, no_converter):
        with pytest.raises(TypeError):
            quickoptions.build_parser(command)


def test_typer_shows_the_options_help_and_reports_usage_errors_with_its_usage_line() -> None:
    app = typer.Typer()
    app.command()(quickoptions.typer_command(manager.manager))
    shown = CliRunner().invoke(app, ["--help"], env={"COLUMNS": "200"})  # no truncated names
    assert shown.exit_code == 0
    assert "Run the LeaderWorkerSet controllers and admission webhooks." in shown.output
    for shown_text in (
        "--no-leader-elect",
        "--disable-disaggregatedset",
        "Configuration file (v1alpha1 or v1).",
    ):
        assert shown_text in shown.output
    refused = CliRunner().invoke(app, ["--disable-webhooks", "--webhooks-only"])
    assert refused.exit_code == 2
    assert "Usage:" in refused.output
    assert "--disable-webhooks and --webhooks-only exclude each other" in refused.output


def test_a_usage_error_of_a_plain_command_line_goes_to_typer() -> None:
    ran: list[str] = []

    def command(flag: Annotated[bool, quickoptions.option()] = False) -> None:
        del flag
        raise quickoptions.UsageError("no")

    quickoptions.run(command, ["--flag"], with_typer=lambda: ran.append("typer"))
    assert ran == ["typer"]
