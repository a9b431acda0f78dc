"""Unit tests of the benchmark harness (e2e/bench): no cluster, no control plane."""
