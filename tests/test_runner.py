"""The notebook runners fail fast on a stalled cell and name the notebook and the cell.

Each test starts a real kernel (about 2 s) on a tiny temporary notebook.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from .conftest import load_repo_module

ROOT = Path(__file__).resolve().parent.parent


def _load(name: str, folder: str):
    return load_repo_module(folder, name)


nbrun = _load("nbrun", "scripts")


def _notebook(folder: Path, name: str, *sources: str) -> Path:
    cells = [new_markdown_cell("# A tiny notebook")] + [new_code_cell(s) for s in sources]
    nb = new_notebook(cells=cells)
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    path = folder / name
    nbformat.write(nb, path)
    return path


def test_a_stalled_cell_fails_within_its_timeout_naming_notebook_and_cell(tmp_path):
    path = _notebook(tmp_path, "stalls.ipynb", "x = 1", "import time\ntime.sleep(60)", "print('never')")
    start = time.perf_counter()
    outcome = nbrun.execute(path, cell_timeout=2, notebook_timeout=60)
    elapsed = time.perf_counter() - start
    assert outcome.status == "stalled"
    assert "stalls.ipynb" in outcome.message
    assert "cell 2 (`import time`)" in outcome.message  # index in the notebook, and its first line
    assert "per-cell limit of 2 s" in outcome.message
    assert "busy" in outcome.message or "idle" in outcome.message
    assert outcome.cell == 2 and outcome.first_line == "import time"
    assert elapsed < 30, f"the stalled cell took {elapsed:.0f} s to fail"


def test_the_notebook_wall_clock_limit_names_the_cell_it_interrupts(tmp_path):
    path = _notebook(tmp_path, "slow.ipynb", "import time", "time.sleep(1.5)", "time.sleep(1.5)",
                     "time.sleep(30)")
    outcome = nbrun.execute(path, cell_timeout=60, notebook_timeout=4)
    assert outcome.status == "stalled"
    assert "slow.ipynb, cell" in outcome.message and "wall-clock limit of 4 s" in outcome.message
    assert outcome.seconds < 30


def test_a_failing_cell_is_named_and_a_good_notebook_passes_headless(tmp_path):
    bad = _notebook(tmp_path, "bad.ipynb", "x = 1", "raise ValueError('boom')")
    outcome = nbrun.execute(bad)
    assert outcome.status == "failed"
    assert outcome.message.endswith("bad.ipynb, cell 2 (`raise ValueError('boom')`): ValueError: boom")
    good = _notebook(tmp_path, "good.ipynb", "import os\nassert os.environ['GMMLIB_HEADLESS'] == '1'",
                     "import matplotlib.pyplot as plt\nfrom gmmlib.plotting import live_sliders\n"
                     "assert live_sliders(lambda lam: plt.figure(), {'lam': (0.5, 1.0)}) is None")
    assert nbrun.execute(good).ok


def test_run_notebook_script_exits_nonzero_and_says_where(tmp_path):
    path = _notebook(tmp_path, "stalls.ipynb", "import time\ntime.sleep(60)")
    report = tmp_path / "out.json"
    proc = subprocess.run([sys.executable, str(ROOT / "scripts" / "run_notebook.py"), str(path),
                           "--cell-timeout", "2", "--json", str(report)],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1
    assert "STALLED" in proc.stderr and "stalls.ipynb, cell 1 (`import time`)" in proc.stderr
    data = json.loads(report.read_text())
    assert data["status"] == "stalled" and data["cell"] == 1


def test_the_build_execution_names_notebook_and_cell(tmp_path):
    pytest.importorskip("myst_nb")
    ext = _load("execution_limits", "_ext")
    path = _notebook(tmp_path, "stalls.ipynb", "import time\ntime.sleep(60)")
    nb = nbformat.read(path, as_version=4)
    ext._STATE["path"] = path
    try:
        result = ext.limited_execution(nb, cwd=str(tmp_path), timeout=2, allow_errors=False)
    finally:
        ext._STATE["path"] = None
    assert type(result.err).__name__ == "CellTimeoutError"
    assert "stalls.ipynb, cell 1 (`import time`): no reply after 2 s" in str(result.err)


def test_run_children_reports_each_outcome(tmp_path):
    good = _notebook(tmp_path, "good.ipynb", "print(1)")
    bad = _notebook(tmp_path, "bad.ipynb", "1/0")
    outcomes = nbrun.run_children([nbrun.Job(good), nbrun.Job(bad, {"GMMLIB_SEED": "3"})],
                                  workers=2, scratch=tmp_path / "scratch", cell_timeout=30,
                                  notebook_timeout=60)
    assert [o.status for o in outcomes] == ["ok", "failed"]
    assert "bad.ipynb, cell 1 (`1/0`): ZeroDivisionError" in outcomes[1].message


def test_a_stalled_cell_fails_the_jupyter_book_build_naming_it(tmp_path):
    """A tiny book with the repository's extension and a 3 s cell timeout: the build fails and says where."""
    (tmp_path / "book").mkdir()
    (tmp_path / "scripts").mkdir()
    (tmp_path / "_ext").mkdir()
    for rel in ("scripts/nbrun.py", "_ext/execution_limits.py"):
        (tmp_path / rel).write_text((ROOT / rel).read_text())
    (tmp_path / "_config.yml").write_text(
        "title: tiny\nexecute:\n  execute_notebooks: force\n  timeout: 3\n  raise_on_error: true\n"
        "sphinx:\n  local_extensions:\n    execution_limits: _ext/\n")
    (tmp_path / "_toc.yml").write_text(
        "format: jb-book\nroot: intro\nparts:\n  - caption: P\n    chapters:\n      - file: book/stall\n")
    (tmp_path / "intro.md").write_text("# Intro\n")
    _notebook(tmp_path / "book", "stall.ipynb", "x = 1", "import time\ntime.sleep(60)")
    jb = Path(sys.executable).parent / "jupyter-book"
    if not jb.exists():
        pytest.skip("jupyter-book is not installed next to this Python")
    start = time.perf_counter()
    proc = subprocess.run([str(jb), "build", str(tmp_path)], capture_output=True, text=True, timeout=300)
    assert proc.returncode != 0
    assert "book/stall.ipynb, cell 2 (`import time`): no reply after 3 s" in proc.stdout + proc.stderr
    assert time.perf_counter() - start < 120


def test_live_sliders_make_no_widget_headless_and_one_live(monkeypatch):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from gmmlib.plotting import HEADLESS_ENV, live_sliders

    calls = []

    def draw(lam):
        calls.append(lam)
        fig, ax = plt.subplots()
        ax.plot([0, 1], [0, lam])
        return fig

    monkeypatch.setenv(HEADLESS_ENV, "1")
    assert live_sliders(draw, {"lam": (0.5, 3.0, 0.5)}) is None and calls == []
    monkeypatch.delenv(HEADLESS_ENV)
    widget = live_sliders(draw, {"lam": (0.5, 3.0, 0.5)})
    assert widget is not None and calls  # drawn once at its initial value
    with pytest.raises(ValueError):
        live_sliders(draw, {})


def test_seeds_table_names_the_failed_claims(tmp_path):
    seeds = _load("seeds", "scripts")
    ledger = tmp_path / "ch.json"
    ledger.write_text(json.dumps([{"claim": "thm-01", "what": "C(z) by quadrature", "passed": True},
                                  {"claim": "prop-02", "what": "the variance", "passed": False}]))
    claims = seeds.failed_claims(ledger)
    assert claims == ["prop-02: the variance"]
    bad = nbrun.Outcome("book/ch.ipynb", "failed", 1.0, "book/ch.ipynb, cell 3 (`x`): CheckFailed: ...")
    assert seeds.verdict(bad, claims) == "FAIL: prop-02: the variance"
    assert seeds.verdict(bad, []).startswith("FAILED: book/ch.ipynb, cell 3")
    cells = {("ch", 1): {"verdict": "pass"}, ("ch", 2): {"verdict": "FAIL: a | b"}}
    table = seeds.markdown(["ch"], [1, 2], cells)
    assert "| ch | pass | FAIL: a \\| b |" in table


BAD_FIGURE = ("import matplotlib.pyplot as plt\nplt.plot([0, 1])\n"
              "plt.title(r'$\\mathcal S$')   # mathtext wants \\mathcal{S}: drawing the figure fails\nplt.show()")


def test_a_figure_that_fails_to_draw_fails_the_run_and_is_named(tmp_path):
    """The cell replies "ok" (the error is raised while its display is formatted), but its
    output is a traceback and the figure is missing: the runners and the build must fail."""
    path = _notebook(tmp_path, "figure.ipynb", "x = 1", BAD_FIGURE)
    outcome = nbrun.execute(path)
    assert outcome.status == "failed" and outcome.cell == 2
    assert "figure.ipynb, cell 2 (`import matplotlib.pyplot as plt`): its output shows an error" in outcome.message
    pytest.importorskip("myst_nb")
    ext = _load("execution_limits", "_ext")
    ext._STATE["path"] = path
    try:
        result = ext.limited_execution(nbformat.read(path, as_version=4), cwd=str(tmp_path), timeout=60,
                                       allow_errors=False)
    finally:
        ext._STATE["path"] = None
    assert "figure.ipynb, cell 2" in str(result.err) and "its output shows an error" in str(result.err)
    good = _notebook(tmp_path, "good_figure.ipynb", BAD_FIGURE.replace("\\mathcal S", "\\mathcal{S}"))
    assert nbrun.execute(good).ok
