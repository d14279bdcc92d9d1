"""The generated CRD manifests shipped inside the package (the `manifests/` data directory next to
this module), read at runtime and never regenerated there."""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import Any, Final

import yaml

from leaderworkerset.api import constants as c

MANIFEST_DIR: Final = Path(__file__).resolve().parent / "manifests"
_PACKAGE: Final = "leaderworkerset.crd"


def manifest_file_name(group: str, plural: str) -> str:
    """Same naming as controller-gen: ``<group>_<plural>.yaml``."""
    return f"{group}_{plural}.yaml"


# Install order: LeaderWorkerSet first (DisaggregatedSets create LeaderWorkerSets).
CRD_FILES: Final = (
    manifest_file_name(c.LWS_GROUP, c.LWS_PLURAL),
    manifest_file_name(c.DS_GROUP, c.DS_PLURAL),
    manifest_file_name(c.DS_GROUP, c.DSRS_PLURAL),
)


def crd_texts() -> list[str]:
    """The YAML text of every CRD, in install order."""
    folder = resources.files(_PACKAGE) / "manifests"
    return [(folder / name).read_text(encoding="utf-8") for name in CRD_FILES]


def crd_documents() -> list[dict[str, Any]]:
    """Every CRD as a JSON-compatible dict, in install order."""
    # The manifests are large (about 1.5 MB each); the C loader parses them ten times faster.
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    return [yaml.load(text, Loader=loader) for text in crd_texts()]
