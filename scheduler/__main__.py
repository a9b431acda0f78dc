"""Allows `python -m scheduler`."""

from scheduler.cmd.cli import main

raise SystemExit(main())
