"""docs/examples/in-place-restart.yaml is a set the webhook admits with in-place restart switched on."""

from __future__ import annotations

from pathlib import Path

import yaml

from leaderworkerset.core.lifecycle import inplacerestart
from leaderworkerset.webhooks.leaderworkerset import validate_create

EXAMPLE = Path(__file__).resolve().parents[2] / "docs" / "examples" / "in-place-restart.yaml"


def test_the_example_opts_in_and_is_admitted() -> None:
    lws = yaml.safe_load(EXAMPLE.read_text())
    lws["metadata"]["namespace"] = "default"
    assert inplacerestart.wants_in_place_restart(lws)
    assert validate_create(lws) == []
