"""``lws cluster ...``: a real local control plane for development and tests."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from leaderworkerset.devcluster import build, named, tools, versions
from leaderworkerset.devcluster import metrics as resource_metrics
from leaderworkerset.devcluster.cluster import ClusterError, ClusterOptions
from leaderworkerset.devcluster.realnodes import binaries, workloads

app = typer.Typer(
    help="Build, start and stop a local Kubernetes control plane (no Docker needed).", no_args_is_help=True
)

NameOpt = Annotated[str, typer.Option("--name", help="Cluster name (several can run side by side).")]
VersionOpt = Annotated[
    str | None,
    typer.Option(
        "--kubernetes-version",
        help=f"{', '.join(v.removeprefix('v') for v in versions.SUPPORTED_KUBERNETES_VERSIONS)} or their "
        f"minor (1.34 ...); default ${versions.KUBERNETES_VERSION_ENV}, else {versions.KUBERNETES_VERSION}. "
        "Each is built once.",
    ),
]


ImagesOpt = Annotated[
    str,
    typer.Option(
        help="Workload images the real nodes import, comma-separated: "
        + ", ".join(f"{name} ({ref})" for name, ref in workloads.WORKLOAD_IMAGES.items())
        + "; built on first use (root, a few minutes each), then cached (docs/examples/README.md).",
    ),
]


def image_names(images: str, real_nodes: int) -> tuple[str, ...]:
    """`--images`, checked before anything is built or started."""
    try:
        names = workloads.parse_names(images)
    except workloads.WorkloadImageError as err:
        raise typer.BadParameter(str(err).removeprefix("--images: "), param_hint="--images") from err
    if names and not real_nodes:
        raise typer.BadParameter("needs --real-nodes (fake nodes run no image)", param_hint="--images")
    return names


@app.command("up")
def up(
    name: NameOpt = named.DEFAULT_NAME,
    shape: Annotated[
        str,
        typer.Option(
            help="apiserver (etcd + kube-apiserver) or full (+ controller-manager, "
            "scheduler, kwok fake nodes)."
        ),
    ] = "full",
    nodes: Annotated[int, typer.Option(help="Fake nodes (full shape).")] = 4,
    real_nodes: Annotated[
        int,
        typer.Option(
            help="Real nodes beside the fake ones: kubelet + containerd + runc, each in its own network "
            "namespace, with kube-proxy and CoreDNS (root; see docs/real-nodes.md)."
        ),
    ] = 0,
    images: ImagesOpt = "",
    pod_ready_delay_ms: Annotated[int, typer.Option(help="Delay before a scheduled pod turns Ready.")] = 0,
    kubeconfig_out: Annotated[str | None, typer.Option(help="Also copy the kubeconfig here.")] = None,
    workload_api: Annotated[
        bool,
        typer.Option(
            help="Serve the Workload API (scheduling.k8s.io/v1beta1) with kube-scheduler's gang "
            "scheduling: GenericWorkload on apiserver, controller-manager and scheduler."
        ),
    ] = False,
    kubernetes_version: VersionOpt = None,
    feature_gates: Annotated[
        str,
        typer.Option(
            help="Kubernetes feature gates for kube-apiserver, kube-controller-manager and kube-scheduler, "
            "e.g. MaxUnavailableStatefulSet=true."
        ),
    ] = "",
    metrics_server: Annotated[
        bool,
        typer.Option(
            help="Serve the resource metrics API (kubectl top, HPA on CPU/memory): kwok simulates the "
            "kubelets' /metrics/resource from pods' kwok.x-k8s.io/usage-cpu|memory annotations and "
            "metrics-server (built once from its Go module) scrapes them (full shape)."
        ),
    ] = False,
) -> None:
    """Start a local cluster and print the path of its kubeconfig."""
    if shape not in ("apiserver", "full"):
        raise typer.BadParameter("must be 'apiserver' or 'full'", param_hint="--shape")
    version = resolved_version(kubernetes_version)
    workload_images = image_names(images, real_nodes)
    options = ClusterOptions(
        shape="full" if shape == "full" else "apiserver",
        nodes=nodes,
        pod_ready_delay_ms=pod_ready_delay_ms,
        feature_gates=feature_gates,
        real_nodes=real_nodes,
        kubelet_metrics=metrics_server,
    )
    if metrics_server and shape != "full":
        raise typer.BadParameter("needs the full shape (kwok's fake kubelets)", param_hint="--metrics-server")
    try:
        if real_nodes:
            binaries.require_available(version)  # before the control plane's build, not after it
        options.node_images += tuple(workloads.ensure_archive(name) for name in workload_images)
        if workload_api:
            options = options.with_workload_api(version)
        cluster = named.up(name, options, version)
        if metrics_server:
            resource_metrics.start(cluster)
    except (ClusterError, build.BuildError, RuntimeError) as err:
        typer.echo(f"error: {err}", err=True)
        raise typer.Exit(1) from err
    if kubeconfig_out:
        Path(kubeconfig_out).write_bytes(cluster.kubeconfig.read_bytes())
    typer.echo(str(cluster.kubeconfig))
    typer.echo(
        f"# cluster {name!r} ({shape}, Kubernetes {version}) is up; try:\n"
        '#   kubectl --kubeconfig "$(lws cluster kubeconfig'
        f'{"" if name == named.DEFAULT_NAME else " --name " + name})" get nodes\n'
        f"# stop it with: lws cluster down{'' if name == named.DEFAULT_NAME else ' --name ' + name}",
        err=True,
    )


@app.command("down")
def down(name: NameOpt = named.DEFAULT_NAME) -> None:
    """Stop the cluster's processes and delete its work dir."""
    if named.down(name):
        typer.echo(f"cluster {name!r} stopped and removed", err=True)
    else:
        typer.echo(f"no cluster named {name!r}", err=True)


@app.command("kubeconfig")
def kubeconfig(name: NameOpt = named.DEFAULT_NAME) -> None:
    """Print the path of the cluster's kubeconfig."""
    try:
        typer.echo(str(named.kubeconfig(name)))
    except FileNotFoundError as err:
        typer.echo(f"error: {err}", err=True)
        raise typer.Exit(1) from err


@app.command("bin-dir")
def bin_dir(kubernetes_version: VersionOpt = None) -> None:
    """Print the directory of the built binaries, building them first if needed."""
    version = resolved_version(kubernetes_version)
    try:
        typer.echo(str(build.ensure_binaries(version)))
    except build.BuildError as err:
        typer.echo(f"error: {err}", err=True)
        raise typer.Exit(1) from err


@app.command("tool")
def tool(name: Annotated[str, typer.Argument(help=f"One of {', '.join(tools.TOOLS)}.")]) -> None:
    """Print the path of an extra Go tool the tests use, building it first if needed (cached)."""
    if name not in tools.TOOLS:
        raise typer.BadParameter(
            f"{name!r} is not a tool; choose one of {', '.join(tools.TOOLS)}", param_hint="NAME"
        )
    try:
        typer.echo(str(tools.ensure_tool(tools.TOOLS[name])))
    except build.BuildError as err:
        typer.echo(f"error: {err}", err=True)
        raise typer.Exit(1) from err


def resolved_version(kubernetes_version: str | None) -> str:
    """The full version for `--kubernetes-version`, or a usage error naming the option and the window."""
    try:
        return versions.resolve_kubernetes_version(kubernetes_version)
    except versions.UnsupportedVersionError as err:
        raise typer.BadParameter(str(err), param_hint="--kubernetes-version") from err
