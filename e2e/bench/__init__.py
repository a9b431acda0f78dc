"""The benchmark: scheduler_perf-style workloads run with kube-scheduler and kube-pysched."""
