"""Preemption machinery any PostFilter plugin can reuse: candidate search (evaluator), the API
calls that carry a preemption out (executor) and the pure victim/node-choice rules (victims)."""
