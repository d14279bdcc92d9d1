"""In-cluster installation: generated manifests (RBAC, manager Deployment, Services, webhooks), apply."""
