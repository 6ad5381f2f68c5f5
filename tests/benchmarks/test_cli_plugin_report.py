"""A ``--plugin`` that registers a suite is found by ``run``; ``report`` figures keep one colour per method."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

from benchsel.benchmarks import report

PLUGIN = """
from functools import partial

from benchsel.benchmarks.suites import InstanceSpec, suite
from benchsel.instances.synthetic import make_kmedoids


@suite("test-plugin-suite", "a suite registered by a plugin", time_limit=20.0)
def _build(data_dir=None):
    return [InstanceSpec("plugin-kmedoids-30", partial(make_kmedoids, 30, 3, seed=0), ("fasterpam", "random"))]
"""


def test_a_plugin_suite_is_found_by_run(tmp_path):
    plugin = tmp_path / "my_suite.py"
    plugin.write_text(textwrap.dedent(PLUGIN))
    out = tmp_path / "res"
    env = dict(os.environ, OMP_NUM_THREADS="1")
    p = subprocess.run([sys.executable, "-m", "benchsel.benchmarks", "run", "test-plugin-suite", "--plugin",
                        str(plugin), "--jobs", "1", "--no-progress", "--out", str(out)],
                       capture_output=True, text=True, env=env, timeout=300)
    assert p.returncode == 0, p.stderr
    assert "plugin-kmedoids-30" in p.stdout and "fasterpam" in p.stdout
    assert "suite test-plugin-suite: 1 instances, 2 runs" in p.stderr
    q = subprocess.run([sys.executable, "-m", "benchsel.benchmarks", "run", "test-plugin-suite", "--no-progress",
                        "--out", str(out)], capture_output=True, text=True, env=env, timeout=120)
    assert q.returncode == 2 and "unknown suite 'test-plugin-suite'" in q.stderr  # without the plugin


def _rows():
    rows = []
    for form, methods in (("KMedoids", ("highs", "fasterpam", "random")), ("Positional", ("random", "highs"))):
        for i, m in enumerate(methods):
            rows.append({"formulation": form, "instance": f"{form}-1", "method": m,
                         "kind": "exact" if m == "highs" else "heuristic", "gap": 0.01 * (i + 1),
                         "seconds": 0.1 * (i + 1)})
    return rows


def test_gap_figure_keeps_one_colour_per_method_and_readable_fonts(tmp_path, monkeypatch):
    mpl = pytest.importorskip("matplotlib")
    mpl.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.colors import to_hex

    figs = []
    monkeypatch.setattr(plt, "close", lambda fig=None: figs.append(fig))
    path = report.plot_gap_vs_time(_rows(), tmp_path / "gap.png")
    assert path is not None and path.is_file()
    (fig,) = figs
    colours: dict[str, set[str]] = {}
    for ax in fig.axes:
        for coll in ax.collections:
            colours.setdefault(coll.get_label(), set()).add(to_hex(coll.get_facecolor()[0], keep_alpha=False))
        assert ax.title.get_fontsize() >= report.FONT["title"] >= 12
        assert ax.xaxis.label.get_fontsize() >= 11
    assert set(colours) == {"highs", "fasterpam", "random"}
    assert all(len(c) == 1 for c in colours.values()), colours  # 'random' is third in one panel, first in the other
    assert len({next(iter(c)) for c in colours.values()}) == 3
    want = report.method_colors(_rows())
    assert {m: next(iter(c)) for m, c in colours.items()} == {m: to_hex(c) for m, c in want.items()}
    monkeypatch.undo()
    plt.close(fig)
