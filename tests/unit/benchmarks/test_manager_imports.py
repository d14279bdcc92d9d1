"""The manager import-graph benchmark reports what it measured from a fresh process."""

from __future__ import annotations

from benchmarks import manager_imports

from tests.support import image


def test_one_fresh_process_reports_rss_modules_cpu_and_packages() -> None:
    result = manager_imports.run_once("packages", image.optimize_level())
    assert result["optimize"] == image.optimize_level(), "the manager runs as the image runs it"
    assert float(str(result["rss_mib"])) > 0
    # Split into heap and mapped files; the rest (shared memory) is about nothing here.
    heap, mapped = float(str(result["anon_mib"])), float(str(result["file_mib"]))
    assert heap > 0
    assert mapped > 0
    assert heap + mapped <= float(str(result["rss_mib"]))
    assert int(str(result["modules"])) > 0
    assert float(str(result["cpu_s"])) > 0
    packages = result["packages"]
    assert isinstance(packages, dict)
    assert "leaderworkerset" in packages
