"""Real nodes for the local cluster: containerd + runc + kubelet + kube-proxy per node, each node a
network namespace on a bridge, CoreDNS as a Deployment; see docs/real-nodes.md.

    `addresses`  every address and name (pure)     `node`    one node's configurations (pure)
    `network`    bridge, namespaces, routes (ip)    `images`  OCI archives made here (no registry)
    `binaries`   node binaries from Go modules      `addons`  CoreDNS objects (pure)
    `fleet`      start the nodes; remove every trace
    `workloads`  the Ray and JAX examples' images, built once and cached
"""
