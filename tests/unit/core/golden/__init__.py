"""The golden vectors upstream's own Go code produced (tests/oracle/regen.sh writes them here)."""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

VECTORS = Path(__file__).parent / "revision_vectors.json"


@functools.cache
def golden() -> dict[str, Any]:
    """Every section of the vectors: revisions, dsRevisions, semantic, quantities, gojson, oracle."""
    data: dict[str, Any] = json.loads(VECTORS.read_text("utf-8"))
    return data
