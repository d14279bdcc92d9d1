"""lightkube's generated models load when first read, and then work as if imported normally."""

from __future__ import annotations

import json
import subprocess
import sys

PROBE = """
import json, sys
from leaderworkerset.cli.deferredmodules import defer_generated_models, loaded
defer_generated_models()
import lightkube  # the whole client, as the manager imports it
from lightkube.config.client_adapter import user_auth
core_v1 = sys.modules["lightkube.models.core_v1"]
before = loaded(core_v1)
from lightkube.models.core_v1 import Pod, PodSpec, Container
from lightkube.resources.core_v1 import Pod as PodResource
pod = Pod(spec=PodSpec(containers=[Container(name="c", image="i")]))
print(json.dumps({
    "before": before,
    "after": loaded(core_v1),
    "image": pod.to_dict()["spec"]["containers"][0]["image"],
    "resource": PodResource._api_info.plural,
    "real_loader": type(core_v1.__spec__.loader).__name__ != "_DeferringLoader",
}))
"""


def test_a_generated_model_loads_when_first_read_and_works() -> None:
    out = subprocess.run(
        [sys.executable, "-c", PROBE], capture_output=True, text=True, check=True, timeout=60
    )
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result == {
        "before": False,
        "after": True,
        "image": "i",
        "resource": "pods",
        "real_loader": True,
    }
