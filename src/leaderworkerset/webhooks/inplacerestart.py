"""In-place group restart in admission (core/lifecycle/inplacerestart.py, docs/in-place-restart.md).

* `RestartAllContainersProbe`: whether the cluster keeps and accepts a `RestartAllContainers`
  container-restart rule, asked with a server-side dry-run create of a StatefulSet (the manager may
  create StatefulSets everywhere; nothing is stored). The API server refuses the action while
  `RestartAllContainersOnContainerExits` is off, and silently drops every rule while
  `ContainerRestartRules` is off: both are "unsupported", with the server's words. Refreshed in the
  background; admission reads the last answer.
* `validate_support`: the LWS webhook refuses `restart-strategy: InPlace` on such a cluster, naming
  the field and the rule (the value itself is checked by the set-annotation table).
* `equip`: the pod webhook gives a new pod of an InPlace set the restart rules and the agent sidecar
  where the probe found the cluster keeps them (pods only, never the templates: nothing rolls, and
  upstream's view of the set stays whole).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from typing import Any

import structlog

from leaderworkerset.api import extensions as ext
from leaderworkerset.core.gocompat import fielderrors as v
from leaderworkerset.core.lifecycle import inplacerestart
from leaderworkerset.core.objects import MutableObj, annotations_of
from leaderworkerset.runtime.client import KubeClient
from leaderworkerset.runtime.errors import ApiStatusError
from leaderworkerset.runtime.resources import STATEFULSETS

log = structlog.get_logger(__name__)

PATH = f"metadata.annotations.{ext.ANNOTATION_RESTART_STRATEGY}"
PROBE_NAMESPACE = "default"
REFRESH_SECONDS = 60.0
# (namespace, set name) -> the set's annotations, as the pod webhook last saw them.
SetAnnotations = Callable[[str, str], Mapping[str, str]]
# None when the cluster supports RestartAllContainers, else why not.
SupportProbe = Callable[[], str | None]


def _probe_statefulset() -> MutableObj:
    labels = {"app.kubernetes.io/name": "lws-restart-all-containers-probe"}
    container = {"name": "probe", "image": "probe.invalid/none:0"}
    inplacerestart.equip_pod({"spec": {"containers": [container]}}, "probe.invalid/none:0")
    return {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"generateName": "lws-restart-probe-", "namespace": PROBE_NAMESPACE},
        "spec": {
            "selector": {"matchLabels": labels},
            "serviceName": "",
            "template": {"metadata": {"labels": labels}, "spec": {"containers": [container]}},
        },
    }


def kept_rule(statefulset: Mapping[str, Any]) -> bool:
    """Whether the stored (dry-run) object still carries the RestartAllContainers rule."""
    spec = ((statefulset.get("spec") or {}).get("template") or {}).get("spec") or {}
    return any(
        rule.get("action") == "RestartAllContainers"
        for container in spec.get("containers") or []
        for rule in container.get("restartPolicyRules") or []
    )


class RestartAllContainersProbe:
    """Callable as `SupportProbe`; "not probed yet" until the first answer (admission refuses
    until it knows). `answer` and `on_change` serve the controllers' condition (the CLI wires them)."""

    def __init__(self) -> None:
        self.reason: str | None = "the API server has not been asked yet"
        self.answered = False
        self._listeners: list[Callable[[], None]] = []

    def __call__(self) -> str | None:
        return self.reason

    def answer(self) -> str | None:
        """The server's last answer; None before the first (for a condition on the sets, not knowing
        yet is no reason to say the cluster lacks the feature)."""
        return self.reason if self.answered else None

    def on_change(self, listener: Callable[[], None]) -> None:
        """Call `listener` whenever `answer` changes."""
        self._listeners.append(listener)

    async def refresh(self, client: KubeClient) -> str | None:
        try:
            stored = await client.request(
                "POST", STATEFULSETS.collection_path(PROBE_NAMESPACE), body=_probe_statefulset(),
                params={"dryRun": "All"},
            )  # fmt: skip
        except ApiStatusError as err:
            reason: str | None = f"the API server refuses it: {err}"
        except Exception as err:  # unreachable server: keep the previous answer, ask again later
            log.warning("RestartAllContainers probe failed", error=str(err))
            return self.reason
        else:
            reason = None if kept_rule(stored) else "the API server drops container restart rules"
        changed = reason != self.answer() or not self.answered
        if reason != self.reason:
            log.info("RestartAllContainers support", supported=reason is None, reason=reason)
        self.reason, self.answered = reason, True
        if changed:
            for listener in self._listeners:
                listener()
        return reason

    async def run(self, client: KubeClient, interval: float = REFRESH_SECONDS) -> None:
        while True:
            await asyncio.sleep(interval)
            await self.refresh(client)


def validate_support(
    new: MutableObj, old: MutableObj | None, probe: SupportProbe | None
) -> list[v.FieldError]:
    """Refuse a new or changed InPlace strategy where the cluster cannot restart containers in place."""
    value = annotations_of(new).get(ext.ANNOTATION_RESTART_STRATEGY)
    if value != inplacerestart.IN_PLACE or probe is None:
        return []
    if old is not None and annotations_of(old).get(ext.ANNOTATION_RESTART_STRATEGY) == value:
        return []  # already admitted: an unrelated update is not refused
    reason = probe()
    if reason is None:
        return []
    return [
        v.invalid(PATH, v.go_quote(value), inplacerestart.unsupported_message(reason), "restart-strategy")
    ]


def equip(
    pod: MutableObj,
    namespace: str,
    set_name: str,
    annotations: SetAnnotations | None,
    image: str | None,
    probe: SupportProbe | None,
) -> None:
    """Equip `pod` (mutated in place) when its set asks for in-place restarts, an agent image is
    configured and the cluster keeps the restart rule; otherwise the pod is admitted as without the
    feature (the controller then recreates the group, says why, and the set's
    InPlaceRestartUnavailable condition names what the cluster lacks).

    A set admitted before the cluster lost the rule (a gate turned off, an API server downgraded)
    still asks for it: a pod carrying the rule would then be refused by the API server (its
    StatefulSet could create no pod) or stored without it, so the pod gets none of it."""
    if annotations is None or image is None or (probe is not None and probe() is not None):
        return
    if annotations(namespace, set_name).get(ext.ANNOTATION_RESTART_STRATEGY) == inplacerestart.IN_PLACE:
        inplacerestart.equip_pod(pod, image)
