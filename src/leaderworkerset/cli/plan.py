"""``lws plan -f NEW.yaml``: the steps the controller will take to apply a changed spec.

The thin I/O shell of `core.plan`: read the live object, ask the API server how it would store
the new spec (a dry-run update, so webhook defaulting and validation apply exactly as on a real
apply), read the groups, the nodes and their pods, then render the plan. Reads are direct LISTs
(a one-shot CLI, not a controller hot path).
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import asdict
from pathlib import Path
from typing import Annotated, Any

import typer
import yaml
from rich.console import Console, Group
from rich.table import Table
from rich.text import Text

from leaderworkerset.api import constants as c
from leaderworkerset.core import plan as core_plan
from leaderworkerset.core.disaggregated.children import (
    is_external,
    owned_children,
    resolve_targets,
    slice_children,
)
from leaderworkerset.core.disaggregated.naming import scaler_name, slice_count
from leaderworkerset.core.disaggregated.rollout_inputs import child_views, role_targets
from leaderworkerset.core.groups.state import is_leader_pod
from leaderworkerset.core.objects import MutableObj, name_of
from leaderworkerset.core.observe import readiness
from leaderworkerset.core.rollout.inplaceupdate.classification import node_resizes
from leaderworkerset.core.scheduling import accelerators
from leaderworkerset.runtime.client import ClientOptions, KubeClient, new_client, serves_pod_resize
from leaderworkerset.runtime.resources import (
    CONTROLLER_REVISIONS,
    DISAGGREGATEDSETS,
    DS_ROLE_SCALERS,
    LEADERWORKERSETS,
    NODES,
    PODS,
    STATEFULSETS,
    ResourceRef,
)

EXIT_WARNINGS = 3


class PlanInputError(Exception):
    """The file or the live object cannot be planned; the message says why."""


def load_manifest(path: Path) -> MutableObj:
    docs = [doc for doc in yaml.safe_load_all(path.read_text()) if doc]
    if len(docs) != 1 or not isinstance(docs[0], dict):
        raise PlanInputError(f"{path}: expected exactly one object, found {len(docs)}")
    doc: MutableObj = docs[0]
    if doc.get("kind") not in (c.LWS_KIND, c.DS_KIND):
        raise PlanInputError(f"{path}: kind must be {c.LWS_KIND} or {c.DS_KIND}, not {doc.get('kind')!r}")
    if not (doc.get("metadata") or {}).get("name"):
        raise PlanInputError(f"{path}: metadata.name is required")
    return doc


async def _stored_form(client: KubeClient, ref: ResourceRef, live: MutableObj, new: MutableObj) -> MutableObj:
    """The object as the API server would store it with the new spec (dry-run PUT)."""
    body = core_plan.with_spec(live, new)
    body.pop("status", None)
    path = ref.object_path(str(live["metadata"]["namespace"]), name_of(live))
    try:
        return await client.request("PUT", path, body=body, params={"dryRun": "All"})
    except Exception as err:
        raise PlanInputError(f"the API server refuses the new spec: {err}") from err


async def _free(client: KubeClient, selector: dict[str, str]) -> dict[str, accelerators.Accelerators]:
    """Free accelerators per eligible node."""
    nodes, pods = await asyncio.gather(client.list(NODES), client.list(PODS))
    return accelerators.free_accelerators_by_node(nodes, pods, selector)


async def plan_lws(client: KubeClient, namespace: str, live: MutableObj, new: MutableObj) -> core_plan.Plan:
    name = name_of(live)
    stored = await _stored_form(client, LEADERWORKERSETS, live, new)
    selector = f"{c.LABEL_SET_NAME}={name}"
    statefulsets, revisions, pods, free_by_node, resizes = await asyncio.gather(
        client.list(STATEFULSETS, namespace, selector),
        client.list(CONTROLLER_REVISIONS, namespace, selector),
        client.list(PODS, namespace, selector),
        _free(client, accelerators.template_node_selector(stored)),
        serves_pod_resize(client),
    )
    # The leader StatefulSet carries the set's name label but no group index; group_states
    # tells the two kinds apart, as the controller's read does.
    sts = next((s for s in statefulsets if name_of(s) == name), None)
    return core_plan.plan_leaderworkerset(
        live,
        stored,
        leader_statefulset=sts,
        revisions=revisions,
        leader_pods=[pod for pod in pods if is_leader_pod(pod)],
        statefulsets=statefulsets,
        time_to_ready=readiness.observed_time_to_ready(pods),
        free=accelerators.total_free(free_by_node),
        free_by_node=free_by_node,
        # A resize needs every pod's kubelet to do it (the API server refuses it otherwise).
        resizes_in_place=resizes and all(node_resizes(pod) for pod in pods),
    )


async def plan_ds(client: KubeClient, namespace: str, live: MutableObj, new: MutableObj) -> core_plan.Plan:
    name = name_of(live)
    stored = await _stored_form(client, DISAGGREGATEDSETS, live, new)
    selector = f"{c.LABEL_DS_NAME}={name}"
    roles = (stored.get("spec") or {}).get("roles") or []
    lws_list, pods, free_by_node = await asyncio.gather(
        client.list(LEADERWORKERSETS, namespace, selector),
        client.list(PODS, namespace, selector),
        _free(client, {}),
    )
    # Role scalers only matter (and their API only needs to be served) for External roles.
    scalers = await client.list(DS_ROLE_SCALERS, namespace) if any(is_external(r) for r in roles) else []
    by_name = {name_of(s): s for s in scalers}
    bound = {
        str(role.get("name")): by_name[scaler_name(name, str(role.get("name")))]
        for role in roles
        if scaler_name(name, str(role.get("name"))) in by_name
    }
    targets = resolve_targets(stored, bound)
    children = child_views(slice_children(owned_children(live, lws_list), 0))
    return core_plan.plan_disaggregatedset(
        live,
        stored,
        children=children,
        targets=targets,
        role_targets=role_targets(stored, targets),
        slices=slice_count(stored),
        time_to_ready=readiness.observed_time_to_ready(pods),
        free=accelerators.total_free(free_by_node),
        free_by_node=free_by_node,
    )


async def build(options: ClientOptions, path: Path, namespace: str | None) -> core_plan.Plan:
    new = load_manifest(path)
    ns = namespace or (new.get("metadata") or {}).get("namespace") or "default"
    kind, name = new["kind"], new["metadata"]["name"]
    ref = LEADERWORKERSETS if kind == c.LWS_KIND else DISAGGREGATEDSETS
    client = new_client(options)
    try:
        live = await client.get_or_none(ref, ns, name)
        if live is None:
            raise PlanInputError(
                f"{kind} {ns}/{name} does not exist: a plan compares against the live object"
            )
        if kind == c.LWS_KIND:
            return await plan_lws(client, ns, live, new)
        return await plan_ds(client, ns, live, new)
    finally:
        await client.close()


# --- rendering (pure) --------------------------------------------------------------------------------


def _accelerators(values: Any) -> str:
    return ", ".join(f"{count} {name}" for name, count in sorted(values.items())) if values else "-"


def _eta(seconds: float | None) -> str:
    if seconds is None:
        return "unknown"
    minutes, secs = divmod(round(seconds), 60)
    return f"{minutes}m{secs:02d}s" if minutes else f"{secs}s"


def render(plan: core_plan.Plan) -> Group:
    header = Text.assemble(
        (f"{plan.kind} {plan.namespace}/{plan.name}", "bold"),
        "  ",
        (plan.change, "cyan"),
        f"  {plan.summary}",
    )
    parts: list[Any] = [header]
    if plan.steps:
        table = Table(show_lines=False)
        for column in ("step", "down", "up", "updated/old", "ready capacity", "extra accelerators", "ETA"):
            table.add_column(column)
        for index, step in enumerate(plan.steps, start=1):
            table.add_row(
                str(index),
                ", ".join(step.down) or "-",
                ", ".join(step.up) or "-",
                f"{step.updated}/{step.old}",
                ", ".join(f"{role} {pct}%" for role, pct in step.capacity),
                _accelerators(step.extra_accelerators),
                _eta(step.eta_seconds),
            )
        parts.append(table)
        free = "unknown" if plan.free_accelerators is None else _accelerators(plan.free_accelerators)
        parts.append(Text(f"peak extra accelerators: {_accelerators(plan.peak_extra_accelerators)}"))
        parts.append(Text(f"free on the eligible nodes: {free}"))
        parts.append(
            Text(f"observed time to ready: {_eta(plan.time_to_ready_seconds)}; ETA {_eta(plan.eta_seconds)}")
        )
    for note in plan.notes:
        parts.append(Text(note))
    for warning in plan.warnings:
        parts.append(Text(f"warning: {warning}", style="yellow"))
    return Group(*parts)


def to_json(plan: core_plan.Plan) -> str:
    data = asdict(plan)
    data["eta_seconds"] = plan.eta_seconds
    for step in data["steps"]:
        step["capacity"] = dict(step["capacity"])  # role -> percent of target
    return json.dumps(data, indent=2, sort_keys=True)


def plan(
    file: Annotated[
        Path, typer.Option("--filename", "-f", help="The changed LeaderWorkerSet or DisaggregatedSet.")
    ],
    namespace: Annotated[str | None, typer.Option("--namespace", "-n")] = None,
    kubeconfig: Annotated[str | None, typer.Option(help="Kubeconfig path (default: $KUBECONFIG).")] = None,
    output: Annotated[str, typer.Option("--output", "-o", help="table or json.")] = "table",
    fail_on_warning: Annotated[
        bool, typer.Option("--fail-on-warning", help=f"Exit {EXIT_WARNINGS} when the plan has warnings.")
    ] = False,
) -> None:
    """Show the ordered steps the controller will take to apply FILE, without applying it."""
    if output not in ("table", "json"):
        raise typer.BadParameter("must be table or json", param_hint="--output")
    console = Console()
    try:
        result = asyncio.run(build(ClientOptions(kubeconfig=kubeconfig), file, namespace))
    except (PlanInputError, OSError, yaml.YAMLError) as err:
        typer.echo(f"lws plan: {err}", err=True)  # one unwrapped line, for scripts too
        raise typer.Exit(1) from err
    if output == "json":
        typer.echo(to_json(result))
    else:
        console.print(render(result))
    raise typer.Exit(EXIT_WARNINGS if fail_on_warning and result.warnings else 0)
