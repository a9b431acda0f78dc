"""Synchronous scheduler state machines: the scheduling queue and the node/pod cache."""
