"""``python -m benchmarks``: the ``benchsel`` command line (see :mod:`benchsel.benchmarks.cli`)."""
import sys

from .cli import main

sys.exit(main())
