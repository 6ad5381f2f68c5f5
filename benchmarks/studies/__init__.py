"""One-off studies: each script measures one question and prints (or writes) its numbers.

Run them as ``python -m benchsel.benchmarks.studies.<name> --help``. They use
the harness (:mod:`benchsel.benchmarks`) but the harness never imports them,
and none changes the process environment when imported: BLAS thread limits
are set inside each script's ``main`` run.
"""
