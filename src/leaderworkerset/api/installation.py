"""The object names of an in-cluster install, as upstream's kustomize base and Helm chart (release
"lws") name them, so that our install replaces upstream's in place (docs/install.md)."""

from typing import Final

# Installation layout (kustomize base: namespace lws-system, name prefix "lws-").
CONTROLLER_MANAGER_NAME: Final = "lws-controller-manager"
MANAGER_CONFIG_MAP_NAME: Final = "lws-manager-config"
MANAGER_CONFIG_KEY: Final = "controller_manager_config.yaml"
# Object names of an in-cluster install (upstream's kustomize output and chart with release "lws").
SERVICE_ACCOUNT_NAME: Final = "lws-controller-manager"
MANAGER_ROLE_NAME: Final = "lws-manager-role"
MANAGER_ROLE_BINDING_NAME: Final = "lws-manager-rolebinding"
LEADER_ELECTION_ROLE_NAME: Final = "lws-leader-election-role"
LEADER_ELECTION_ROLE_BINDING_NAME: Final = "lws-leader-election-rolebinding"
METRICS_AUTH_ROLE_NAME: Final = "lws-metrics-auth-role"
METRICS_AUTH_ROLE_BINDING_NAME: Final = "lws-metrics-auth-rolebinding"
METRICS_READER_ROLE_NAME: Final = "lws-metrics-reader"
METRICS_SERVICE_NAME: Final = "lws-controller-manager-metrics-service"
MANAGER_CONTAINER_NAME: Final = "manager"
LABEL_CONTROL_PLANE: Final = "control-plane"
CONTROL_PLANE_CONTROLLER_MANAGER: Final = "controller-manager"
LABEL_APP_NAME: Final = "app.kubernetes.io/name"
LABEL_APP_INSTANCE: Final = "app.kubernetes.io/instance"
LABEL_APP_MANAGED_BY: Final = "app.kubernetes.io/managed-by"
APP_NAME: Final = "lws"
ANNOTATION_DEFAULT_CONTAINER: Final = "kubectl.kubernetes.io/default-container"
# cert-manager alternative to the built-in certificate rotation.
CERT_MANAGER_CERTIFICATE_NAME: Final = "lws-serving-cert"
ANNOTATION_CERT_MANAGER_INJECT_CA_FROM: Final = "cert-manager.io/inject-ca-from"
