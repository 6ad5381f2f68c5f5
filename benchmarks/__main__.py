"""``python -m benchmarks``: the ``benchsel`` command line (see :mod:`benchmarks.cli`)."""
import sys

from .cli import main

sys.exit(main())
