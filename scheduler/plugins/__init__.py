"""The in-tree plugins, one package each, with kube-scheduler's names and behaviour."""
