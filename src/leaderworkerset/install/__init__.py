"""In-cluster installation (docs/install.md): generated manifests (RBAC, manager Deployment, Services,
webhooks) and their apply.

* `manifests` — every object of an install, as plain dicts (pure);
* `rbac` — the manager's RBAC rules, each with the reason it exists;
* `image` — which manager image an install runs;
* `apply` — apply, wait for and remove an install (`lws install`, `lws uninstall`);
* `generate` — write `deploy/manifests/` and the chart's RBAC files (dev time).
"""
