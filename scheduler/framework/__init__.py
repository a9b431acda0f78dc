"""The scheduling framework: plugin interfaces, statuses, cycle state, node info, cluster events."""
