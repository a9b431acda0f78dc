"""Container image names as kube-scheduler compares them with a node's `status.images`."""

from __future__ import annotations


def normalized_image_name(name: str) -> str:
    """ImageLocality's normalizedImageName: a name without a tag gets ":latest".

    A ':' before the last '/' is a registry port, not a tag (`host:5000/app` -> `...:latest`);
    digests (`app@sha256:...`) have a ':' after the last '/' and are kept as they are.
    """
    if name.rfind(":") <= name.rfind("/"):
        return name + ":latest"
    return name
