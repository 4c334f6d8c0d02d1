"""The runner (``bookkit.run``) and the build fail fast on a stalled cell and name the chapter
and the cell.

Each test starts a real kernel (about 2 s) on a tiny temporary notebook. A stalled cell waits
on an event that never comes, under a limit of 1 s: the assertions read what the message
names, never a duration.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from bookkit import bench, run

ROOT = Path(__file__).resolve().parents[2]
STALL = "import threading\nthreading.Event().wait()  # nothing ever sets it"


def _notebook(folder: Path, name: str, *sources: str) -> Path:
    cells = [new_markdown_cell("# A tiny notebook")] + [new_code_cell(s) for s in sources]
    nb = new_notebook(cells=cells)
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    path = folder / name
    nbformat.write(nb, path)
    return path


def test_a_stalled_cell_names_notebook_cell_and_limit(tmp_path):
    path = _notebook(tmp_path, "stalls.ipynb", "x = 1", STALL, "print('never')")
    outcome = run.execute(path, cell_timeout=1, notebook_timeout=60)
    assert outcome.status == "stalled" and outcome.cell == 2
    assert outcome.message.endswith(
        "stalls.ipynb, cell 2 (`import threading`): no reply within the per-cell limit of 1 s"
    )


def test_the_notebook_wall_clock_limit_names_the_cell_it_interrupts(tmp_path):
    path = _notebook(tmp_path, "slow.ipynb", "x = 1", STALL)
    outcome = run.execute(path, cell_timeout=60, notebook_timeout=1)
    assert outcome.status == "stalled" and outcome.cell == 2
    assert (
        "slow.ipynb, cell 2 (`import threading`): no reply within the notebook's "
        "wall-clock limit of 1 s" in outcome.message
    )


def test_a_failing_cell_is_named_and_a_good_notebook_passes_headless(tmp_path):
    bad = _notebook(tmp_path, "bad.ipynb", "x = 1", "raise ValueError('boom')")
    outcome = run.execute(bad)
    assert outcome.status == "failed"
    assert outcome.message.endswith(
        "bad.ipynb, cell 2 (`raise ValueError('boom')`): ValueError: boom"
    )
    good = _notebook(
        tmp_path,
        "good.ipynb",
        "import os\nassert os.environ['GMMLIB_HEADLESS'] == '1'",
        "import matplotlib.pyplot as plt\nfrom gmmlib.runtime.plotting import live_sliders\n"
        "assert live_sliders(lambda lam: plt.figure(), {'lam': (0.5, 1.0)}) is None",
    )
    outcome = run.execute(good)
    assert outcome.ok and outcome.peak_mib > 10, "the kernel's peak memory is measured"


def test_the_run_command_exits_nonzero_and_says_where(tmp_path):
    path = _notebook(tmp_path, "bad.ipynb", "x = 1", "1/0")
    proc = subprocess.run(
        [sys.executable, "-m", "bookkit", "run", str(path)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 1
    assert "bad.ipynb: FAILED" in proc.stderr
    assert "bad.ipynb, cell 2 (`1/0`): ZeroDivisionError" in proc.stderr


def test_a_chapter_runs_from_its_myst_source(tmp_path):
    """The runners take the .md (the source, through jupytext) as well as the .ipynb."""
    src = tmp_path / "ch.md"
    src.write_text(
        "---\njupytext:\n  text_representation:\n    format_name: myst\n"
        "kernelspec:\n  name: python3\n  display_name: Python 3\n  language: python\n"
        "---\n\n# A chapter\n\n```{code-cell}\nx = 41\n```\n\n"
        "```{code-cell}\nraise ValueError(x + 1)\n```\n"
    )
    before = src.read_text()
    outcome = run.execute(src)
    assert outcome.status == "failed"
    assert outcome.message.endswith("ch.md, cell 2 (`raise ValueError(x + 1)`): ValueError: 42")
    assert src.read_text() == before, "the source is never modified"


def test_run_many_reports_each_outcome_with_its_environment(tmp_path):
    good = _notebook(tmp_path, "good.ipynb", "import os\nassert os.environ['GMMLIB_SEED'] == '3'")
    bad = _notebook(tmp_path, "bad.ipynb", "1/0")
    heard = []
    outcomes = run.run_many(
        [(good, {"GMMLIB_SEED": "3"}), (bad, {})], workers=2, report=lambda i, o: heard.append(i)
    )
    assert [o.status for o in outcomes] == ["ok", "failed"] and sorted(heard) == [0, 1]
    assert "bad.ipynb, cell 1 (`1/0`): ZeroDivisionError" in outcomes[1].message


def _build_tiny_book(folder: Path, timeout: int, *sources: str) -> subprocess.CompletedProcess:
    """Build a one-chapter book (book/ch.ipynb with ``sources``) with bookkit.execution."""
    jb = Path(sys.executable).parent / "jupyter-book"
    if not jb.exists():
        pytest.skip("jupyter-book is not installed next to this Python")
    (folder / "book").mkdir()
    (folder / "_config.yml").write_text(
        f"title: tiny\nexecute:\n  execute_notebooks: force\n  timeout: {timeout}\n"
        "  raise_on_error: true\nsphinx:\n  extra_extensions: [bookkit.execution]\n"
    )
    (folder / "_toc.yml").write_text(
        "format: jb-book\nroot: intro\nparts:\n  - caption: P\n    chapters:\n"
        "      - file: book/ch\n"
    )
    (folder / "intro.md").write_text("# Intro\n")
    _notebook(folder / "book", "ch.ipynb", *sources)
    return subprocess.run(
        [str(jb), "build", str(folder)], capture_output=True, text=True, timeout=300
    )


def test_a_stalled_cell_fails_the_jupyter_book_build_naming_it(tmp_path):
    """A tiny book with the repository's extension and a 1 s cell timeout: the build fails and
    says where."""
    proc = _build_tiny_book(tmp_path, 1, "x = 1", STALL)
    assert proc.returncode != 0
    out = proc.stdout + proc.stderr
    # myst-nb's error names the notebook, nbclient's the timeout and the cell's source
    assert "ch.ipynb" in out and "CellTimeoutError" in out and "threading.Event().wait()" in out


def test_live_sliders_make_no_widget_headless_and_one_live(monkeypatch):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from gmmlib.runtime.plotting import HEADLESS_ENV, live_sliders

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


def test_seeds_table_names_the_failed_claim():
    failed = run.Outcome(
        "book/ch.md",
        "failed",
        1.0,
        "book/ch.md, cell 3 (`x`): CheckFailed: "
        "The claim [prop-02] was not confirmed in chapter 2: the variance",
    )
    assert bench.verdict(failed) == "FAIL: prop-02"
    crashed = run.Outcome("book/ch.md", "crashed", 1.0, "book/ch.md: DeadKernelError: [x]")
    assert bench.verdict(crashed).startswith("CRASHED: book/ch.md")
    assert bench.verdict(run.Outcome("book/ch.md", "ok", 1.0)) == "pass"
    report = {
        "budget": bench.budget(),
        "variants": [{"GMMLIB_SEED": "1"}, {"GMMLIB_SEED": "2"}],
        "chapters": [
            {
                "chapter": "ch",
                "seconds": 1.0,
                "max_s": 1.2,
                "peak_mib": 90,
                "verdicts": ["pass", "FAIL: a | b"],
            }
        ],
        "book_seconds": 1.0,
    }
    assert "| ch | 1.0 | 1.2 | 90 | pass | FAIL: a \\| b |" in bench.markdown(report)


BAD_FIGURE = (
    "import matplotlib.pyplot as plt\nplt.plot([0, 1])\n"
    "plt.title(r'$\\mathcal S$')   # mathtext wants \\mathcal{S}: drawing the figure fails\n"
    "plt.show()"
)


def test_a_figure_that_fails_to_draw_fails_the_run_and_is_named(tmp_path):
    """The cell replies "ok" (the error is raised while its display is formatted), but its
    output is a traceback and the figure is missing: the runners and the build must fail."""
    path = _notebook(tmp_path, "figure.ipynb", "x = 1", BAD_FIGURE)
    outcome = run.execute(path)
    assert outcome.status == "failed" and outcome.cell == 2
    assert (
        "figure.ipynb, cell 2 (`import matplotlib.pyplot as plt`): its output shows an error"
        in outcome.message
    )
    good = _notebook(
        tmp_path, "good_figure.ipynb", BAD_FIGURE.replace("\\mathcal S", "\\mathcal{S}")
    )
    assert run.execute(good).ok


def test_a_figure_that_fails_to_draw_fails_the_jupyter_book_build(tmp_path):
    """The build renders the error output as a traceback; the build fails naming the cell."""
    proc = _build_tiny_book(tmp_path, 60, "x = 1", BAD_FIGURE)
    assert proc.returncode != 0
    out = proc.stdout + proc.stderr
    assert (
        "book/ch.ipynb, cell 2 (`import matplotlib.pyplot as plt`): its output shows an error"
        in out
    )
    assert "without encryption" not in out, "the build's kernels talk over IPC, not TCP"


def test_seeds_skips_chapters_that_draw_no_random_number(tmp_path):
    drawn = _notebook(
        tmp_path,
        "drawn.ipynb",
        "from gmmlib.runtime.seeding import Seeds\nseeds = Seeds(chapter=1)",
        "x = seeds.rng('prompts').normal()",
    )
    fixed = _notebook(tmp_path, "fixed.ipynb", "import numpy as np\nx = np.linspace(0, 1, 3)")
    assert bench.draws_random_numbers(drawn) and not bench.draws_random_numbers(fixed)
    out = tmp_path / "out" / "seeds.json"
    assert bench.main([str(fixed), "--seeds", "1", "2", "--out", str(out)]) == 0
    assert "Skipped (no random draw): fixed" in out.with_suffix(".md").read_text()


# ------------------------------------------------- what a reader sees when a command goes wrong
def _bookkit(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "bookkit", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=120)


def _one_line(stderr: str) -> str:
    lines = stderr.strip().splitlines()
    assert len(lines) == 1, f"not one line:\n{stderr}"
    return lines[0]


def test_a_good_run_prints_its_summary_and_no_kernel_warning(tmp_path):
    path = _notebook(tmp_path, "good.ipynb", "x = 1")
    proc = _bookkit("run", str(path))
    assert proc.returncode == 0 and "good.ipynb: ok in" in proc.stdout, proc.stderr
    assert proc.stderr == "", f"the kernel talks over IPC, silently: {proc.stderr!r}"


@pytest.mark.parametrize("command", ["run", "bench", "sync", "release", "pdf"])
def test_every_command_has_its_usage(command):
    proc = _bookkit(command, "--help")
    assert proc.returncode == 0 and proc.stdout.startswith("usage:"), proc.stderr
    assert "--help" not in proc.stderr and "No such file" not in proc.stderr


def test_bookkit_lists_its_commands_and_needs_one():
    listed = _bookkit("--help")
    assert listed.returncode == 0
    assert all(c in listed.stdout for c in ("run", "bench", "sync", "release", "pdf"))
    for args in ((), ("nonsense",), ("run",)):
        proc = _bookkit(*args)
        assert proc.returncode == 2 and "error:" in proc.stderr, (args, proc.stderr)
        assert "Traceback" not in proc.stderr


def test_a_missing_chapter_gets_one_line_and_nothing_runs():
    proc = _bookkit("run", "book/99_missing.md")
    line = _one_line(proc.stderr)
    assert proc.returncode == 2 and proc.stdout == ""
    assert line.startswith("error: book/99_missing.md: no such file") and "book/NN_name.md" in line


def test_a_file_that_is_not_a_notebook_gets_one_line(tmp_path):
    (tmp_path / "ch.md").write_text("# Just Markdown\n\nNo front matter, no cells.\n")
    (tmp_path / "ch.ipynb").write_text("{ not json")
    (tmp_path / "other.ipynb").write_text('{"cells": 3}')
    for name, says in (("ch.md", "not a MyST Markdown notebook"),
                       ("ch.ipynb", f"run its MyST source {tmp_path / 'ch.md'} instead"),
                       ("other.ipynb", "not a notebook in JSON")):
        proc = _bookkit("run", str(tmp_path / name))
        line = _one_line(proc.stderr)
        assert proc.returncode == 2 and str(tmp_path / name) in line and says in line, line
    outcome = run.execute(tmp_path / "other.ipynb")  # the runner's API does not raise either
    assert outcome.status == "crashed" and "not a notebook in JSON" in outcome.message


def test_make_without_an_environment_or_python_says_what_to_do(tmp_path):
    """No .venv and no python3.11 to make it with: one line naming both and what to do (make
    adds its own "make: *** ... Error 1" line); nothing is installed."""
    venv = tmp_path / "venv"
    proc = subprocess.run(["make", "run", "CHAPTER=book/01_infinite_prompt_limit.md",
                           f"VENV={venv}", "PYTHON=/nonexistent/python3.11"],
                          cwd=ROOT, capture_output=True, text=True, timeout=60)
    ours = [ln for ln in proc.stderr.splitlines() if not ln.startswith("make")]
    assert proc.returncode != 0 and len(ours) == 1, proc.stderr
    assert f"no {venv}/bin/python" in ours[0] and "install Python 3.11" in ours[0], ours
    assert not venv.exists()


@pytest.mark.parametrize("args", [["run"], ["grade", "ASSIGNMENT=01_infinite_prompt_limit"]])
def test_make_targets_without_their_arguments_say_so_first(args):
    """Before the environment is made or anything runs: one line, the usage."""
    # as a reader types it: not a sub-make of `make test` (which would print its directory)
    env = {k: v for k, v in os.environ.items() if k not in ("MAKELEVEL", "MAKEFLAGS", "MFLAGS")}
    proc = subprocess.run(["make", *args], cwd=ROOT, capture_output=True, text=True, timeout=60,
                          env=env)
    line = _one_line(proc.stderr)
    assert proc.returncode == 2 and f"usage: make {args[0]} " in line and proc.stdout == ""
