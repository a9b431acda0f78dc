"""End-to-end tests and the local control-plane harness they run against."""
