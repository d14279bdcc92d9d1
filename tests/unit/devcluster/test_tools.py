"""Each extra Go tool is built from its committed wrapper module, which must pin the very version
the tool's cache directory and version check name."""

from __future__ import annotations

from pathlib import Path

import pytest

from leaderworkerset.devcluster import tools

GOMOD = Path(tools.__file__).parent / "gomod"


@pytest.mark.parametrize("tool", list(tools.TOOLS.values()), ids=list(tools.TOOLS))
def test_the_wrapper_module_pins_the_tools_version(tool: tools.GoTool) -> None:
    go_mod = (GOMOD / tool.module_dir / "go.mod").read_text()
    required = dict(line.split()[:2] for line in go_mod.splitlines() if line.startswith("\t"))
    modules = [module for module in required if tool.package.startswith(module + "/")]
    assert modules, f"no requirement provides {tool.package}"
    assert required[max(modules, key=len)] == tool.version
    assert f"tool {tool.package}\n" in go_mod
    assert (GOMOD / tool.module_dir / "go.sum").is_file()
