"""Pod admission: the mutating handler that labels LWS pods and injects their env, and
the validating handler, which admits everything (upstream registers it but checks nothing).

Only pods carrying the LWS `name` label are touched; the webhook configuration's objectSelector
already filters on it, the check here keeps the handler safe when called directly.
"""

import secrets
from collections.abc import Callable, Collection

import msgspec

from leaderworkerset.api import constants as c
from leaderworkerset.core.desired import podmutation as pm
from leaderworkerset.core.desired import tpu
from leaderworkerset.core.desired.affinity import avoid_nodes
from leaderworkerset.core.gocompat.strconv import GoParseError
from leaderworkerset.core.groups.state import is_hash_pod
from leaderworkerset.core.objects import MutableObj
from leaderworkerset.core.scheduling import gang, workloads

# Adds scheduler-provider metadata (Volcano group name, Workload scheduling group) to a pod in place.
PodGroupInjector = Callable[[MutableObj], None]
# Source of the random token behind a Hash group key; injectable so tests are deterministic.
TokenSource = Callable[[], str]

_TOKEN_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
_TOKEN_LENGTH = 16


def random_token() -> str:
    """16 random characters from apimachinery's rand.String alphabet (no vowels, no look-alikes)."""
    return "".join(secrets.choice(_TOKEN_ALPHABET) for _ in range(_TOKEN_LENGTH))


def volcano_pod_group_injector(pod: MutableObj) -> None:
    """Volcano: name the group's PodGroup `<lws>-<groupIndex>-<revisionKey>` on the pod."""
    gang.inject_volcano_group_name(pod)


def workload_pod_group_injector(pod: MutableObj) -> None:
    """Kubernetes Workload API: put a workload-aware pod into its PodGroup (`spec.schedulingGroup`)."""
    try:
        workloads.inject_scheduling_group(pod)
    except ValueError as err:
        raise pm.PodMutationError(str(err)) from err


def _json_copy(obj: MutableObj) -> MutableObj:
    """A deep copy of a JSON-shaped object: a msgspec round trip is ~10x cheaper than
    copy.deepcopy, which was most of the pod webhook's handler time."""
    copied: MutableObj = msgspec.json.decode(msgspec.json.encode(obj))
    return copied


def is_lws_pod(pod: MutableObj) -> bool:
    return c.LABEL_SET_NAME in ((pod.get("metadata") or {}).get("labels") or {})


def default_pod(
    pod: MutableObj,
    *,
    pod_group_injector: PodGroupInjector | None = None,
    token_source: TokenSource = random_token,
    avoided_nodes: Collection[str] = (),
) -> MutableObj:
    """Return the mutated copy of `pod`; raises PodMutationError with the denial message.

    `avoided_nodes`: the nodes the pod's set quarantines (core/quarantine/), kept off by a required
    node-affinity term on this pod only: no template changes, so no other group rolls."""
    if not is_lws_pod(pod):
        return pod
    mutated = _json_copy(pod)
    size = pm.group_size(mutated)
    if pm.is_leader(mutated):
        _label_leader(mutated, token_source)
    else:
        pm.label_worker(mutated, size)
    if pod_group_injector is not None:
        pod_group_injector(mutated)
    elif c.ANNOTATION_WORKLOAD_AWARE_SCHEDULING in pm.annotations(mutated):
        # The pod waits for a PodGroup nobody would create: refuse it instead of leaving it pending.
        ref = f"{pm.pod_metadata(mutated).get('namespace') or ''}/{pm.pod_name(mutated)}"
        raise pm.PodMutationError(
            f"pod {ref} requests workload-aware scheduling but no scheduler provider is configured"
        )
    if tpu.pod_requests_tpus(pm.spec(mutated)):
        try:
            tpu.add_tpu_variables(mutated, size)
        except (tpu.TPUEnvError, GoParseError) as err:
            raise pm.PodMutationError(str(err)) from err
    pm.add_lws_env(mutated, pm.pod_leader_address(mutated))
    avoid_nodes(pm.spec(mutated), avoided_nodes)
    return mutated


def _label_leader(pod: MutableObj, token_source: TokenSource) -> None:
    if is_hash_pod(pod):
        key = pm.label_hash_leader(pod, token_source())
        pm.gate_hash_leader(pod)
    else:
        key = pm.label_ordinal_leader(pod)
    pm.apply_unique_subdomain(pod)
    pm.apply_group_exclusive_placement(pod, key)
    pm.label_leader_subgroup(pod, key)


def shape_error(pod: MutableObj) -> str | None:
    """Why the parts of `pod` the mutating handler reads do not have a pod's shape, or None.

    The API server decodes pods into typed structs before calling webhooks, so through it this never
    fires; a direct caller's body that a typed decode would refuse is answered 400, as
    controller-runtime's decoder does, instead of failing inside the handler.
    """
    for key, value in (("metadata", pod.get("metadata")), ("spec", pod.get("spec"))):
        if value is not None and not isinstance(value, dict):
            return f"{key}: expected an object"
    meta = pod.get("metadata") or {}
    for key in ("labels", "annotations"):
        values = meta.get(key)
        if values is None:
            continue
        if not isinstance(values, dict) or not all(isinstance(v, str) for v in values.values()):
            return f"metadata.{key}: expected a map of strings"
    for key in ("name", "namespace", "generateName"):
        if meta.get(key) is not None and not isinstance(meta[key], str):
            return f"metadata.{key}: expected a string"
    spec = pod.get("spec") or {}
    for list_key in ("containers", "initContainers"):
        containers = spec.get(list_key)
        if containers is None:
            continue
        if not isinstance(containers, list):
            return f"spec.{list_key}: expected a list"
        for index, container in enumerate(containers):
            error = _container_shape_error(container)
            if error:
                return f"spec.{list_key}[{index}]{error}"
    return None


def _container_shape_error(container: object) -> str:
    if not isinstance(container, dict):
        return ": expected an object"
    if container.get("name") is not None and not isinstance(container["name"], str):
        return ".name: expected a string"
    resources = container.get("resources")
    if resources is not None:
        if not isinstance(resources, dict):
            return ".resources: expected an object"
        for kind in ("limits", "requests"):
            if resources.get(kind) is not None and not isinstance(resources[kind], dict):
                return f".resources.{kind}: expected an object"
    env = container.get("env")
    if env is not None and (not isinstance(env, list) or not all(isinstance(e, dict) for e in env)):
        return ".env: expected a list of objects"
    return ""


def validate_pod(pod: MutableObj, old_pod: MutableObj | None = None) -> list[str]:
    """The validating pod webhook admits every pod; it returns no warnings."""
    del pod, old_pod
    return []
