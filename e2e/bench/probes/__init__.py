"""One-off measurements behind design choices, runnable as `python -m e2e.bench.probes.<name>`."""
