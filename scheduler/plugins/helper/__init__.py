"""The plugin-side library: logic several in-tree plugins share, on top of the plugin API
(scheduler.framework), as kube-scheduler's plugins/helper and component-helpers:
scores.py (DefaultNormalizeScore, Go's integer division), shape.py (scoring shapes),
node_affinity.py (a pod's required node affinity over nodes), taints.py (untolerated taints,
the base of the toleration Filters), storage.py (volume plugins), gang.py (gang plugins).
Plugins import each other never; what two of them need is here."""
