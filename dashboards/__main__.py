"""`python -m dashboards` writes the generated files; `--check` only compares them."""

from __future__ import annotations

import sys

from dashboards import outputs


def main(argv: list[str]) -> int:
    if argv[1:] == ["--check"]:
        stale = outputs.stale()
        for path in stale:
            print(f"out of date: {path} (run `python -m dashboards`)", file=sys.stderr)
        return 1 if stale else 0
    if argv[1:]:
        print("usage: python -m dashboards [--check]", file=sys.stderr)
        return 2
    for path in outputs.write():
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
