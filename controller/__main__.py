"""`python -m controller`: the same entry point as the `kube-pysched-controller` script."""

import sys

from controller.cli import main

sys.exit(main())
