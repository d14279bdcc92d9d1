"""Figures of a chaos run: printed (visible with ``-s``) and, when ``LWS_CHAOS_REPORT_DIR`` is set,
written there as JSON so docs/reliability.md can quote the run that produced them."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from tests.chaos import sizes


def emit(name: str, figures: dict[str, Any]) -> None:
    figures = {"size": sizes.size(), **figures}
    text = json.dumps(figures, indent=2, sort_keys=True, default=str)
    print(f"\n=== chaos figures: {name} ===\n{text}")
    folder = os.environ.get("LWS_CHAOS_REPORT_DIR")
    if folder:
        Path(folder).mkdir(parents=True, exist_ok=True)
        (Path(folder) / f"{name}.json").write_text(text + "\n")
