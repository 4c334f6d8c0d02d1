"""The path of a Colab reader, in CI: a chapter's reader notebook run outside the repository, in
a fresh environment, whose first cell installs gmmlib from the repository.

The reader notebook is what the launch buttons open (``bookkit.notebooks``, written by the build
into ``_build/notebooks/book/``), so this test reads the built book (``--built``: ``make test``
runs it after the build). It clones the repository's current commit (``git clone``: committed
files only), copies one chapter's reader notebook into an empty folder outside the repository
and the clone, and points its setup cell at the clone: ``REPO`` becomes ``file://<clone>`` and
``REF`` the commit's sha, in place of the GitHub URL and ``main``. It creates a fresh virtual
environment (Python 3.11) holding only what Colab already has and the book does not install,
torch (the CPU build) and a Jupyter kernel, and executes the chapter there with nbclient, its
working directory the folder outside the repository. The setup cell must then install
``gmmlib[book]`` itself; the test fails if the install or any cell fails, and reports how long
each step took.

On this machine pip finds torch 2.13.0's CPU wheel in its configured wheel folder; on GitHub
the workflow sets ``TORCH_INDEX`` to PyTorch's CPU wheel index. Skip locally with
``pytest --built -k "not colab"``; ``make test`` and CI run it.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# a chapter that executes in about ten seconds and uses torch, widgets and the checks: its
# reader notebook, as the build wrote it
CHAPTER = "book/09_iterated_denoiser.ipynb"
READER = ROOT / "_build" / "notebooks" / CHAPTER
pytestmark = pytest.mark.built
TORCH = "torch==2.13.0"
SETUP_LINE = re.compile(r'^(\s*)REPO = "[^"]*"\n\s*REF = "[^"]*"$', re.M)


def _python311() -> str:
    found = shutil.which(os.environ.get("PYTHON", "python3.11"))
    if found:
        return found
    if sys.version_info[:2] == (3, 11):
        return sys.executable
    pytest.fail("python3.11 is missing: the Colab path is tested with Python 3.11 (README)")


def _run(cmd: list[str], step: str, times: dict[str, float], **kw) -> str:
    start = time.perf_counter()
    run = subprocess.run(cmd, capture_output=True, text=True, **kw)
    times[step] = round(time.perf_counter() - start, 1)
    assert run.returncode == 0, (
        f"{step} failed (exit {run.returncode}):\n{run.stdout[-3000:]}\n{run.stderr[-3000:]}"
    )
    return run.stdout


def _clean_env(**extra: str) -> dict[str, str]:
    """This machine's environment without anything that would let the kernel find the
    repository's gmmlib or the build's venv."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("PYTHON", "VIRTUAL_ENV", "GMMLIB_", "JUPYTER", "BOOK_"))
    }
    env["PATH"] = os.pathsep.join(
        p for p in env.get("PATH", "").split(os.pathsep) if ".venv" not in p
    )
    env.update(extra)
    return env


# plain nbclient, as a reader's Jupyter runs it (the book's runner, bookkit.run, imports
# gmmlib, which the fresh environment lacks until the setup cell has run); the kernel runs with
# GMMLIB_HEADLESS=1 (no front end: widgets show their precomputed frames); 400 s per cell
EXECUTE = r"""
import json, sys, time
import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError, CellTimeoutError

nb = nbformat.read(sys.argv[1], as_version=4)
start = time.perf_counter()
current = {}
client = NotebookClient(nb, timeout=400, kernel_name="python3", record_timing=True,
                        resources={"metadata": {"path": sys.argv[2]}},
                        on_cell_start=lambda cell, cell_index: current.update(
                            index=cell_index, line=cell.source.split("\n")[0][:70]))
try:
    client.execute(cwd=sys.argv[2])
except (CellExecutionError, CellTimeoutError) as err:
    print(json.dumps({"error": f"cell {current}: {err}"[-4000:]}))
    sys.exit(1)

def seconds(cell):
    from datetime import datetime
    t = cell.get("metadata", {}).get("execution", {})
    a, b = t.get("iopub.execute_input"), t.get("shell.execute_reply")
    return (datetime.fromisoformat(b.replace("Z", "+00:00"))
            - datetime.fromisoformat(a.replace("Z", "+00:00"))).total_seconds() if a and b else 0.0

setup = next(c for c in nb.cells if c.cell_type == "code")
print(json.dumps({"seconds": time.perf_counter() - start, "setup_seconds": seconds(setup),
                  "cells": sum(c.cell_type == "code" for c in nb.cells)}))
"""


def test_a_chapter_runs_outside_the_repository_in_a_fresh_environment(tmp_path):
    times: dict[str, float] = {}
    total = time.perf_counter()
    clone = tmp_path / "clone"
    _run(["git", "clone", "-q", str(ROOT), str(clone)], "git clone", times)
    sha = _run(["git", "rev-parse", "HEAD"], "rev-parse", times, cwd=clone).strip()

    # the reader's folder: only the notebook, far from the repository and from the clone
    reader = tmp_path / "reader"
    reader.mkdir()
    assert READER.is_file(), f"{READER} is missing: build the book first (make notebooks)"
    notebook = json.loads(READER.read_text(encoding="utf-8"))
    first = next(c for c in notebook["cells"] if c["cell_type"] == "code")
    source = "".join(first["source"]) if isinstance(first["source"], list) else first["source"]
    assert SETUP_LINE.search(source), "the setup cell has no `REPO = ...`, `REF = ...` lines"
    first["source"] = SETUP_LINE.sub(
        lambda m: f'{m.group(1)}REPO = "file://{clone}"\n{m.group(1)}REF = "{sha}"', source, count=1
    )
    path = reader / Path(CHAPTER).name
    path.write_text(json.dumps(notebook, indent=1), encoding="utf-8")

    # a fresh environment with what Colab has: torch (CPU) and a kernel, no gmmlib
    venv = tmp_path / "venv"
    env = _clean_env(GMMLIB_HEADLESS="1")  # no front end: widgets show precomputed frames
    _run([_python311(), "-m", "venv", str(venv)], "venv", times, env=env)
    python = str(venv / "bin" / "python")
    index = (
        ["--extra-index-url", os.environ["TORCH_INDEX"]] if os.environ.get("TORCH_INDEX") else []
    )
    # Colab's pip is recent; Python 3.11's bundled pip 23.2 rejects `name @ git+file:///...`
    # (its packaging requires a host in a VCS URL), which GitHub's URL always has
    _run([python, "-m", "pip", "install", "-q", "--upgrade", "pip"], "pip", times, env=env)
    # --no-compile: byte-compiling torch's files is a large part of its install time
    _run(
        [
            python,
            "-m",
            "pip",
            "install",
            "-q",
            "--no-compile",
            *index,
            TORCH,
            "ipykernel",
            "nbclient",
            "-c",
            str(ROOT / "constraints.txt"),
        ],
        "torch + kernel",
        times,
        env=env,
    )
    probe = _run(
        [python, "-c", "import importlib.util as u; print(u.find_spec('gmmlib'))"],
        "probe",
        times,
        env=env,
        cwd=reader,
    )
    assert probe.strip() == "None", "gmmlib must not be importable before the setup cell runs"

    out = _run(
        [python, "-c", EXECUTE, str(path), str(reader)],
        "execute the chapter",
        times,
        env=env,
        cwd=reader,
        timeout=900,
    )
    result = json.loads(out.strip().splitlines()[-1])
    where = _run(
        [python, "-c", "import gmmlib; print(gmmlib.__file__, gmmlib.__version__)"],
        "probe",
        times,
        env=env,
        cwd=reader,
    )
    assert str(venv) in where and str(ROOT) not in where, f"gmmlib came from {where}"
    times["total"] = round(time.perf_counter() - total, 1)
    print(
        f"\nColab path, {CHAPTER} at {sha[:12]}: {result['cells']} code cells in "
        f"{result['seconds']:.1f} s, of which the setup cell (installing gmmlib[book]) "
        f"{result['setup_seconds']:.1f} s; steps: {times}"
    )


def test_the_chapter_under_test_exists_and_has_the_setup_cell():
    notebook = json.loads(READER.read_text(encoding="utf-8"))
    first = notebook["cells"][0]
    text = "".join(first["source"]) if isinstance(first["source"], list) else first["source"]
    assert first["cell_type"] == "code", "the reader notebook opens with the setup cell"
    assert "# Run this chapter:" in text and "REPO = " in text and "REF = " in text
    markdown = [c for c in notebook["cells"] if c["cell_type"] == "markdown"]
    assert markdown and not any("```{" in "".join(c["source"]) for c in markdown), (
        "the notebook under test is a reader notebook (plain Markdown), not the MyST pair")
