"""Explanations of scheduling attempts: the per-pod record the scheduler keeps (`record`), and
the client that reads it from the secure port and prints it (`cli`, `render`)."""
