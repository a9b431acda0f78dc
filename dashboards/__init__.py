"""kube-pysched's Grafana dashboard and Prometheus alerting rules, generated from Python.

Not part of the scheduler (nothing in `scheduler/` imports it): `python -m dashboards` writes
the generated files into `deploy/` and the Helm chart, `python -m dashboards --check` fails when
a checked-in file differs from what the generator produces (also `tests/test_dashboards.py`).
"""
