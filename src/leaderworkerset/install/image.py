"""Which manager image an install runs, and what an install says while none is published.

No image is published yet. ``PUBLISHED_REPOSITORY`` stays ``None`` until a release has pushed one (the
release workflow, ``.github/workflows/release.yaml``, pushes ``<registry>/<owner>/lws-python:v<version>``
for amd64 and arm64); then it names that repository, ``lws install`` defaults to its tag for this
version, and the chart's ``image.manager.repository`` is set to the same. Until then ``lws install``
without ``--image`` refuses with :data:`NOT_PUBLISHED` instead of applying a Deployment whose image
nobody can pull, and the chart fails the same way (``charts/lws/templates/manager/deployment.yaml``).
"""

from __future__ import annotations

from leaderworkerset import __version__

PUBLISHED_REPOSITORY: str | None = None

# The image of the generated plain manifests (deploy/manifests/install.yaml) while none is published:
# its registry host is under the reserved .invalid top-level domain, so a pull fails at once, naming
# it, and never reaches anybody's registry. Replace it when applying them.
PLACEHOLDER = f"image-not-published.invalid/lws-python:v{__version__}"

NOT_PUBLISHED = f"""no manager image is published yet, so --image has no default.
Build one (Docker-free, as root):
  hack/build-image.sh                        # -> build/image/oci:lws; or: docker build -t IMAGE .
then make it pullable by your nodes, either imported into each node's containerd:
  skopeo copy oci:build/image/oci:lws docker-archive:/tmp/lws.tar:example.local/lws-python:v{__version__}
  ctr -n k8s.io images import /tmp/lws.tar   # on every node
  (then --image example.local/lws-python:v{__version__})
or pushed to a registry they can pull from:
  skopeo copy oci:build/image/oci:lws docker://REGISTRY/lws-python:v{__version__}
and pass it: lws install --image IMAGE (docs/install.md, "Image")."""


class NoPublishedImageError(Exception):
    """No --image was given and no image is published."""


def default_image() -> str:
    """The published image of this version; raises :class:`NoPublishedImageError` while there is none."""
    if PUBLISHED_REPOSITORY is None:
        raise NoPublishedImageError(NOT_PUBLISHED)
    return f"{PUBLISHED_REPOSITORY}:v{__version__}"


def manifest_image() -> str:
    """The image written into the plain manifests: the published one, else :data:`PLACEHOLDER`."""
    try:
        return default_image()
    except NoPublishedImageError:
        return PLACEHOLDER
