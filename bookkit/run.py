"""Execute chapters in fresh kernels with nbclient; a failure names the chapter and the cell."""

import argparse
import os
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import jupytext
import nbformat
import yaml
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError, CellTimeoutError
from traitlets.config import Config

from gmmlib.runtime.plotting import HEADLESS_ENV

from .toc import NoBook, find_root

NOTEBOOK_TIMEOUT_S = 600.0


def config(root: Path | None = None) -> dict:
    """The book's ``_config.yml`` (the book found from the working directory by default)."""
    return yaml.safe_load((find_root(root) / "_config.yml").read_text(encoding="utf-8"))


def cell_time_limit(root: Path | None = None) -> float:
    """The per-cell timeout of the book's execution (``execute.timeout``), in seconds."""
    return float(config(root)["execute"]["timeout"])


def first_line(source: str, width: int = 60) -> str:
    """The first non-blank line, cut to ``width``."""
    line = next((ln.strip() for ln in source.splitlines() if ln.strip()), "")
    return line if len(line) <= width else line[: width - 1] + "…"


class NotANotebook(ValueError):
    """A path that names no notebook the runner can execute; the message is one line."""


CHAPTER = "give a chapter, book/NN_name.md (its MyST source) or its paired .ipynb"


def read(path: Path) -> nbformat.NotebookNode:
    """A chapter as a notebook: its MyST source through jupytext, or an ``.ipynb``.

    Raises :class:`NotANotebook`, with one line naming the file and what to do, when the path
    is missing or is neither a notebook in JSON nor a MyST Markdown notebook."""
    path = Path(path)
    if path.is_dir():
        raise NotANotebook(f"{path}: a folder, not a notebook: {CHAPTER}")
    if not path.is_file():
        raise NotANotebook(f"{path}: no such file: {CHAPTER} (`ls book/[0-9]*.md` lists them)")
    if path.suffix not in (".md", ".ipynb"):
        raise NotANotebook(f"{path}: not a notebook (.md or .ipynb): {CHAPTER}")
    try:
        nb = jupytext.read(path, fmt="md:myst" if path.suffix == ".md" else None)
    except Exception as exc:  # not JSON, not nbformat, not UTF-8: the reader's first line
        why = f"{type(exc).__name__}: {first_line(str(exc), 80)}"
        if path.suffix == ".md":
            raise NotANotebook(f"{path}: not readable as MyST Markdown ({why}): {CHAPTER}") \
                from None
        source = path.with_suffix(".md")
        todo = (f"run its MyST source {source} instead, or rewrite the pair from it with "
                f"`.venv/bin/jupytext --sync {source}`" if source.is_file() else CHAPTER)
        raise NotANotebook(f"{path}: not a notebook in JSON ({why}): {todo}") from None
    if path.suffix == ".md" and "kernelspec" not in nb.metadata:
        raise NotANotebook(f"{path}: not a MyST Markdown notebook (no `kernelspec` in its front "
                           f"matter): {CHAPTER}, or pair this file with `.venv/bin/jupytext "
                           f"--set-formats ipynb,md:myst {path}`")
    return nb


def kernel_config(folder: str) -> Config:
    """The kernel manager's settings: the kernel talks to the runner over local IPC sockets
    (files under ``folder``), not TCP, which the kernel warns is unencrypted."""
    return Config({"KernelManager": {"transport": "ipc",
                                     "ip": str(Path(folder, "kernel"))}})


@dataclass
class Outcome:
    """One execution; ``status``: ok, failed, stalled (a limit fired) or crashed (the kernel)."""

    notebook: str
    status: str
    seconds: float
    message: str = ""
    cell: int | None = None
    peak_mib: float = 0.0

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    def summary(self) -> str:
        if self.ok:
            return f"{self.notebook}: ok in {self.seconds:.1f} s, peak {self.peak_mib:.0f} MiB"
        return f"{self.notebook}: {self.status.upper()} after {self.seconds:.1f} s: {self.message}"


def _peak_memory(client: NotebookClient, stop: threading.Event, seen: dict) -> None:
    import psutil

    while not stop.wait(0.05):  # the kernel's resident memory, with its children's
        try:
            kernel = psutil.Process(client.km.provisioner.pid)
            procs = [kernel, *kernel.children(recursive=True)]
            seen["rss"] = max(seen["rss"], sum(p.memory_info().rss for p in procs))
        except (AttributeError, psutil.Error):  # not started yet, or gone
            pass


def execute(path: Path | str, *, cell_timeout: float | None = None,
            notebook_timeout: float = NOTEBOOK_TIMEOUT_S, env: dict | None = None) -> Outcome:
    """Execute ``path`` in a fresh kernel (cwd: its folder); never raises for a bad notebook."""
    path = Path(path).resolve()
    try:  # the book the notebook belongs to, else the one the command runs in
        root = find_root(path.parent)
    except NoBook:
        root = find_root()
    name = str(path.relative_to(root) if path.is_relative_to(root) else path)
    cell_timeout = cell_time_limit(root) if cell_timeout is None else cell_timeout
    try:
        nb, seen = read(path), {"cell": None, "end": None, "limit": "", "rss": 0}
    except NotANotebook as exc:
        return Outcome(name, "crashed", 0.0, str(exc))

    def limit(cell) -> int:  # the per-cell limit, or what the chapter has left if less
        seen["end"] = seen["end"] or time.monotonic() + notebook_timeout
        left = seen["end"] - time.monotonic()
        seen["limit"] = (f"the per-cell limit of {cell_timeout:g} s" if left >= cell_timeout
                         else f"the notebook's wall-clock limit of {notebook_timeout:g} s")
        return max(1, round(min(cell_timeout, left)))

    def where(i: int | None) -> str:
        return f"{name}, cell {i} (`{first_line(nb.cells[i].source)}`)" if i is not None else name

    sockets = tempfile.TemporaryDirectory(prefix="bookkit-kernel-")  # short: a socket's path
    client = NotebookClient(nb, kernel_name="python3", timeout_func=limit,
                            on_cell_start=lambda cell, cell_index: seen.update(cell=cell_index),
                            shutdown_kernel="immediate", config=kernel_config(sockets.name),
                            resources={"metadata": {"path": str(path.parent)}})
    stop, start, status, message = threading.Event(), time.perf_counter(), "ok", ""
    threading.Thread(target=_peak_memory, args=(client, stop, seen), daemon=True).start()
    try:
        # headless: no widget, whose messages on the shell socket can lose the cell's reply
        client.execute(env={**os.environ, **(env or {}), HEADLESS_ENV: "1"})
    except CellTimeoutError:
        status, message = "stalled", f"{where(seen['cell'])}: no reply within {seen['limit']}"
    except CellExecutionError as exc:
        error = f"{exc.ename}: {first_line(exc.evalue, 300)}"
        status, message = "failed", f"{where(seen['cell'])}: {error}"
    except Exception as exc:  # the kernel died, never started, or the file is broken
        status, message = "crashed", f"{where(seen['cell'])}: {type(exc).__name__}: {exc}"
    finally:
        stop.set()
        sockets.cleanup()
    # a cell can reply "ok" and show a traceback: an error raised while its display is formatted
    shown = [(i, f"{o.get('ename')}: {first_line(str(o.get('evalue')), 200)}")
             for i, c in enumerate(nb.cells) for o in c.get("outputs", [])
             if o.get("output_type") == "error"]
    if status == "ok" and shown:
        (seen["cell"], error), status = shown[0], "failed"
        message = f"{where(seen['cell'])}: its output shows an error: {error}"
    return Outcome(name, status, round(time.perf_counter() - start, 2), message, seen["cell"],
                   round(seen["rss"] / 2**20, 1))


def run_many(jobs: list[tuple[Path, dict]], workers: int = 1, report=None) -> list[Outcome]:
    """Each ``(chapter, kernel environment)``, ``workers`` at a time; ``report(i, outcome)``."""
    def one(i: int) -> Outcome:
        outcome = execute(jobs[i][0], env=jobs[i][1])
        if report:
            report(i, outcome)
        return outcome

    with ThreadPoolExecutor(max(1, workers)) as pool:
        return list(pool.map(one, range(len(jobs))))


def main(argv: list[str] | None = None) -> int:
    """``python -m bookkit run CHAPTER...``: each chapter's outcome; exit 1 if one fails, 2 if
    an argument names no notebook (one line on stderr each, nothing executed)."""
    parser = argparse.ArgumentParser(
        prog="python -m bookkit run", description="Execute each chapter in a fresh kernel, as "
        "the build does (cwd: its folder), and print its time and peak memory, or the cell "
        "that failed or stalled. Exit status 1 if one fails. `make run CHAPTER=...` runs this.")
    parser.add_argument("chapters", nargs="+", type=Path, metavar="CHAPTER",
                        help="book/NN_name.md (the MyST source) or a notebook .ipynb")
    args = parser.parse_args(argv)
    bad = []
    for path in args.chapters:
        try:
            read(path)
        except NotANotebook as exc:
            bad.append(str(exc))
    if bad:
        print("\n".join(f"error: {b}" for b in bad), file=sys.stderr)
        return 2
    failed = 0
    for path in args.chapters:
        outcome = execute(path)
        print(outcome.summary(), file=sys.stdout if outcome.ok else sys.stderr, flush=True)
        failed += not outcome.ok
    return 1 if failed else 0
