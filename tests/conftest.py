"""Test-wide settings.

Hypothesis runs derandomized by default (the same examples on every run, so a CI failure reproduces
locally); ``HYPOTHESIS_PROFILE=explore`` draws fresh examples each run to search for new failures.
"""
from __future__ import annotations

import os

from hypothesis import settings

settings.register_profile("repro", derandomize=True, database=None)
settings.register_profile("explore", derandomize=False)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "repro"))

# A toy formulation, method and estimator, registered the way a new one is (tests/support/toys.py): the
# registry-driven suites (conformance, estimator contracts) pick them up with no list edited.
import support.toys  # noqa: E402,F401
