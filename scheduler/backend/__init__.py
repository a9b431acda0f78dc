"""Scheduler state machines: the scheduling queue, the node/pod cache and the API dispatcher."""
