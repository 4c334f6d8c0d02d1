"""Execute chapters in fresh kernels with nbclient; a failure names the chapter and the cell."""

import os
import sys
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

from gmmlib.plotting import HEADLESS_ENV

from .toc import ROOT

CONFIG = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))
CELL_TIMEOUT_S, NOTEBOOK_TIMEOUT_S = float(CONFIG["execute"]["timeout"]), 600.0


def first_line(source: str, width: int = 60) -> str:
    """The first non-blank line, cut to ``width``."""
    line = next((ln.strip() for ln in source.splitlines() if ln.strip()), "")
    return line if len(line) <= width else line[: width - 1] + "…"


def read(path: Path) -> nbformat.NotebookNode:
    """A chapter as a notebook: its MyST source through jupytext, or an ``.ipynb``."""
    return jupytext.read(path, fmt="md:myst" if Path(path).suffix == ".md" else None)


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


def execute(path: Path | str, *, cell_timeout: float = CELL_TIMEOUT_S,
            notebook_timeout: float = NOTEBOOK_TIMEOUT_S, env: dict | None = None) -> Outcome:
    """Execute ``path`` in a fresh kernel (cwd: its folder); never raises for a bad notebook."""
    path = Path(path).resolve()
    name = str(path.relative_to(ROOT) if path.is_relative_to(ROOT) else path)
    nb, seen = read(path), {"cell": None, "end": None, "limit": "", "rss": 0}

    def limit(cell) -> int:  # the per-cell limit, or what the chapter has left if less
        seen["end"] = seen["end"] or time.monotonic() + notebook_timeout
        left = seen["end"] - time.monotonic()
        seen["limit"] = (f"the per-cell limit of {cell_timeout:g} s" if left >= cell_timeout
                         else f"the notebook's wall-clock limit of {notebook_timeout:g} s")
        return max(1, round(min(cell_timeout, left)))

    def where(i: int | None) -> str:
        return f"{name}, cell {i} (`{first_line(nb.cells[i].source)}`)" if i is not None else name

    client = NotebookClient(nb, kernel_name="python3", timeout_func=limit,
                            on_cell_start=lambda cell, cell_index: seen.update(cell=cell_index),
                            shutdown_kernel="immediate",
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


def main(argv: list[str]) -> int:
    """``python -m bookkit run CHAPTER...``: each chapter's outcome; exit 1 if one fails."""
    failed = 0
    for path in argv:
        outcome = execute(path)
        print(outcome.summary(), file=sys.stdout if outcome.ok else sys.stderr, flush=True)
        failed += not outcome.ok
    return 1 if failed else 0
