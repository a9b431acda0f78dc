#!/bin/sh
# Fails (listing the lines) when the product cites development records a reader cannot follow:
# numbered sessions, issues or changes, scratch paths under the system temp directory, or the
# retired benchmark history. Such a line should state the fact itself, or link a section of the
# product's own docs. Each pattern is spelled so that it does not match this file's own text.
set -u
cd "$(dirname "$0")/.." || exit 2

pattern='sessions? [0-9]|session-by-sessio[n]|(this|that|same|previous|next|earlier|last) session([^-a-z]|$)'
pattern="$pattern"'|issues? #?[0-9]|issue-[0-9]|changes? #?[0-9]|/tm[p]/|benchmarks-histor[y]'

# Untracked files count too (ignored ones do not), so a new file is checked before `git add`.
git --no-pager grep --untracked -n -i -E "$pattern" -- \
    scheduler controller dashboards docs e2e tests examples Makefile README.md
status=$?
case $status in
    0) echo "error: the lines above cite development records; state the fact instead" >&2
       exit 1 ;;
    1) exit 0 ;;  # git grep found nothing
    *) echo "error: git grep failed (status $status)" >&2
       exit 2 ;;
esac
