"""kube-pysched: a Kubernetes scheduler written in Python."""

__version__ = "0.1.0"
