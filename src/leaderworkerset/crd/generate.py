"""Generate the CRD manifests from the API models (dev time).

    python -m leaderworkerset.crd.generate                 # rewrite the committed copies
    python -m leaderworkerset.crd.generate --out DIR ...   # write into other directories

The same bytes go to ``src/leaderworkerset/crd/manifests/`` (packaged with the wheel, read by
``lws crds`` / ``lws install``) and ``deploy/crds/`` (for kubectl/kustomize users);
``hack/check-generated.sh`` regenerates into a temporary directory and fails on any difference.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

from leaderworkerset.crd.definitions import ALL_CRDS, build_crd
from leaderworkerset.crd.packaged import MANIFEST_DIR, manifest_file_name
from leaderworkerset.crd.render import to_yaml

_REPO_ROOT = Path(__file__).resolve().parents[3]
# deploy/crds for kubectl users; charts/lws/crds because Helm installs crds/ once and never deletes them.
DEFAULT_OUTPUTS = (MANIFEST_DIR, _REPO_ROOT / "deploy" / "crds", _REPO_ROOT / "charts" / "lws" / "crds")


def render_all() -> dict[str, str]:
    """File name → YAML text for every CRD."""
    return {manifest_file_name(spec.group, spec.plural): to_yaml(build_crd(spec)) for spec in ALL_CRDS}


def write_all(directories: Sequence[Path]) -> list[Path]:
    rendered = render_all()
    written: list[Path] = []
    for directory in directories:
        directory.mkdir(parents=True, exist_ok=True)
        for name, text in rendered.items():
            path = directory / name
            path.write_text(text, encoding="utf-8")
            written.append(path)
    return written


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--out", type=Path, action="append", help="output directory (repeatable)")
    args = parser.parse_args(argv)
    directories = args.out or list(DEFAULT_OUTPUTS)
    for path in write_all(directories):
        print(path)


if __name__ == "__main__":
    main()
