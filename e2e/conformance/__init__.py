"""Kubernetes' own ``[sig-scheduling]`` e2e specs against kube-scheduler and kube-pysched.

``python -m e2e.conformance`` (``make conformance``) runs ``e2e.test`` of the pinned release
twice, each time on a fresh local control plane with 4 kubelet-like kwok nodes: once with
kube-scheduler as ``default-scheduler``, once with kube-pysched in that role, and prints one
table. The gate (``gate.py``): kube-scheduler passes every spec that runs; kube-pysched passes
every spec except those in ``expected.py``, each listed with the plugin it waits for.
A second selection (``runner.WORKLOAD``) runs the Workload API's specs the same way, on
control planes with the GenericWorkload gate and scheduling.k8s.io/v1beta1 on, against its own
list. See docs/conformance.md.
"""
