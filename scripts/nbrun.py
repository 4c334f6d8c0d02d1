"""Execute chapters in fresh kernels, with limits that fail fast and name the place.

The execution module of the scripts: ``run_notebook.py`` (one or more chapters, in its own
process), ``bench.py``, ``stress.py`` and ``seeds.py`` (many chapters, each in a child process
under a hard deadline). A chapter is its MyST source ``book/NN_*.md`` (read through jupytext)
or a notebook ``.ipynb``; the stored file is never modified. The build executes the chapters
through myst-nb with the same per-cell limit (``execute.timeout``), and
``_ext/execution_limits.py`` names the chapter and cell when one fails.

The limits (public nbclient settings only: ``timeout_func``, ``on_cell_start``)
-------------------------------------------------------------------------------
* :data:`CELL_TIMEOUT_S` per cell, the build's ``execute.timeout`` (180 s): no cell of the book
  needs more than a minute, even on a loaded 2-core machine, so such a cell is stalled.
* :data:`NOTEBOOK_TIMEOUT_S` per chapter (wall clock): each cell's limit is the smaller of the
  per-cell limit and the time the chapter has left.
* a child process (:func:`run_children`) is killed, with its kernel, :data:`HARD_MARGIN_S` after
  the chapter's limit, should the client itself hang outside a cell.

A limit that fires gives an :class:`Outcome` with status ``"stalled"`` and a message such as::

    book/09_iterated_denoiser.md, cell 13 (`draw(1.5)`): no reply after 180 s (the per-cell limit
    of 180 s); the kernel was idle (0.00 s of CPU in its last second): waiting, not computing

Every kernel started here runs with ``GMMLIB_HEADLESS=1`` (:data:`gmmlib.plotting.HEADLESS_ENV`):
no front end is attached, so :func:`gmmlib.plotting.interactive_figure` shows its precomputed
frames and creates no widget.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from datetime import datetime
from pathlib import Path

import nbformat
import yaml
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError, CellTimeoutError, DeadKernelError

from gmmlib.plotting import HEADLESS_ENV

ROOT = Path(__file__).resolve().parent.parent
#: Seconds per cell: the build's ``execute.timeout`` in ``_config.yml`` (written there only).
CELL_TIMEOUT_S = int(yaml.safe_load((ROOT / "_config.yml").read_text())["execute"]["timeout"])
NOTEBOOK_TIMEOUT_S = 600
HARD_MARGIN_S = 120
#: How often the kernel's CPU time and memory are sampled (seconds).
SAMPLE_S = 0.05


def chapters(root: Path = ROOT) -> list[Path]:
    """The chapters listed in ``_toc.yml`` under ``root``, in order: each one's ``.md`` (else ``.ipynb``)."""
    toc = yaml.safe_load((root / "_toc.yml").read_text())
    files = [c["file"] for part in toc["parts"] for c in part.get("chapters", [])]
    found = [next((root / f"{f}{s}" for s in (".md", ".ipynb") if (root / f"{f}{s}").is_file()), None)
             for f in files if Path(f).name[:2].isdigit()]
    return [p for p in found if p is not None]


def read(path: Path | str) -> nbformat.NotebookNode:
    """A chapter as a notebook: ``.md`` through jupytext (the source), ``.ipynb`` as stored."""
    path = Path(path)
    if path.suffix == ".md":
        import jupytext

        return jupytext.read(path, fmt="md:myst")
    return nbformat.read(path, as_version=4)


def first_line(source: str, width: int = 60) -> str:
    """The first non-blank line of a cell's source, shortened to ``width`` characters."""
    line = next((ln.strip() for ln in source.splitlines() if ln.strip()), "")
    return line if len(line) <= width else line[: width - 1] + "…"


def cell_label(nb: nbformat.NotebookNode, index: int | None) -> str:
    """``cell 13 (`first line`)``: the cell's index in the notebook (0-based, all cells counted)."""
    if index is None:
        return "before the first cell"
    return f"cell {index} (`{first_line(nb.cells[index].source)}`)"


def display_name(path: Path | str) -> str:
    """The notebook's path relative to the book's root when it is inside it."""
    p = Path(path).resolve()
    try:
        return str(p.relative_to(ROOT))
    except ValueError:
        return str(p)


class LimitedClient(NotebookClient):
    """A :class:`NotebookClient` with a per-cell and a per-notebook limit, which knows the current cell.

    Only public settings: ``timeout_func`` gives each cell the smaller of the two limits, and
    ``on_cell_start`` records the cell (``on_progress(index, first_line)``, optional, hears it).
    """

    def __init__(self, nb: nbformat.NotebookNode, *, name: str,
                 cell_timeout: float = CELL_TIMEOUT_S, notebook_timeout: float = NOTEBOOK_TIMEOUT_S,
                 on_progress=None, **kw) -> None:
        kw.setdefault("kernel_name", "python3")
        super().__init__(nb, timeout_func=self._cell_limit, on_cell_start=self._started, **kw)
        self.name = name
        self.cell_timeout = float(cell_timeout)
        self.notebook_timeout = float(notebook_timeout)
        self.current: int | None = None
        self.limit = (self.cell_timeout, "cell")  # the limit of the current cell, and which one it is
        self.deadline = float("inf")  # when the current cell's limit fires (time.monotonic)
        self._end = time.monotonic() + self.notebook_timeout
        self._on_progress = on_progress

    def _started(self, cell, cell_index: int) -> None:
        if cell.cell_type == "code" and cell.source.strip():
            self.current = cell_index
            if self._on_progress is not None:
                self._on_progress(cell_index, first_line(cell.source))

    def _cell_limit(self, cell) -> int:
        left = self._end - time.monotonic()
        self.limit = (self.cell_timeout, "cell") if left >= self.cell_timeout else (max(1.0, left), "notebook")
        self.deadline = time.monotonic() + self.limit[0]
        return max(1, round(self.limit[0]))

    def where(self) -> str:
        return f"{self.name}, {cell_label(self.nb, self.current)}"

    def kernel_pid(self) -> int | None:
        return getattr(getattr(self.km, "provisioner", None), "pid", None) if self.km is not None else None


class KernelMonitor(threading.Thread):
    """Samples the kernel's CPU time and resident memory (with its children) every :data:`SAMPLE_S`."""

    def __init__(self, client: LimitedClient) -> None:
        super().__init__(daemon=True)
        self.client, self.stop = client, threading.Event()
        self.samples: list[tuple[float, float]] = []  # (time.monotonic, CPU seconds)
        self.peak_rss = 0

    def run(self) -> None:
        import psutil

        while not self.stop.is_set():
            pid = self.client.kernel_pid()
            try:
                procs = [psutil.Process(pid)] if pid else []
                procs += [c for p in procs for c in p.children(recursive=True)]
                cpu = sum(sum(p.cpu_times()[:2]) for p in procs)
                self.peak_rss = max(self.peak_rss, sum(p.memory_info().rss for p in procs))
                if procs:
                    self.samples = [*self.samples[-200:], (time.monotonic(), cpu)]
            except psutil.Error:  # the kernel is starting or gone
                pass
            time.sleep(SAMPLE_S)

    def cpu_before(self, t: float, span: float = 1.0) -> float | None:
        """CPU seconds the kernel used in the ``span`` seconds before ``t``, or None if unknown."""
        window = [(s, c) for s, c in self.samples if t - span - SAMPLE_S <= s <= t + SAMPLE_S]
        return window[-1][1] - window[0][1] if len(window) >= 2 else None


def _stall_message(client: LimitedClient, monitor: KernelMonitor) -> str:
    seconds, which = client.limit
    limit = (f"the per-cell limit of {client.cell_timeout:.0f} s" if which == "cell"
             else f"the notebook's wall-clock limit of {client.notebook_timeout:.0f} s")
    cpu = monitor.cpu_before(client.deadline)
    if cpu is None:
        state = "the kernel's state is unknown"
    elif cpu < 0.05:
        state = f"the kernel was idle ({cpu:.2f} s of CPU in its last second): waiting, not computing (a stall)"
    else:
        state = f"the kernel was busy ({cpu:.2f} s of CPU in its last second): the cell is too slow"
    return f"{client.where()}: no reply after {seconds:.0f} s ({limit}); {state}"


@dataclass
class Outcome:
    """What happened to one execution of one notebook."""

    notebook: str
    status: str  # "ok", "failed" (a cell raised), "stalled" (a limit fired), "crashed"
    seconds: float
    message: str = ""
    cell: int | None = None
    first_line: str = ""
    peak_mib: float | None = None

    @property
    def ok(self) -> bool:
        return self.status == "ok"


def error_outputs(nb: nbformat.NotebookNode) -> list[tuple[int, str]]:
    """The cells whose outputs hold an error, as ``(index, "Name: message")``.

    A cell can reply "ok" and still show a traceback: an exception raised while its *display*
    is formatted (a figure whose mathtext label does not parse, say) is reported as an error
    output, not as a failed cell, so nbclient does not raise and the figure is missing.
    """
    return [(i, f"{out.get('ename', '?')}: {first_line(str(out.get('evalue', '')), 200)}")
            for i, cell in enumerate(nb.cells) for out in cell.get("outputs", [])
            if out.get("output_type") == "error"]


def display_error_message(name: str, nb: nbformat.NotebookNode, found: list[tuple[int, str]]) -> str:
    """One line naming the first cell with an error output (and how many there are)."""
    i, what = found[0]
    more = f" (and {len(found) - 1} more cell(s))" if len(found) > 1 else ""
    return f"{name}, {cell_label(nb, i)}: its output shows an error{more}: {what}"


def kernel_env(env: dict[str, str] | None = None) -> dict[str, str]:
    """The environment of a kernel started here: this process's, ``env``, and ``GMMLIB_HEADLESS=1``."""
    return {**os.environ, **(env or {}), HEADLESS_ENV: "1"}


def execute(path: Path | str, *, cell_timeout: float = CELL_TIMEOUT_S,
            notebook_timeout: float = NOTEBOOK_TIMEOUT_S, out_dir: Path | None = None,
            env: dict[str, str] | None = None, measure_memory: bool = False,
            on_progress=None, profile: int = 0) -> Outcome:
    """Execute the chapter at ``path`` (``.md`` or ``.ipynb``) in a fresh kernel (cwd: its folder).

    Never modifies the file (``out_dir`` receives the executed ``.ipynb``). Returns an
    :class:`Outcome`; never raises for a failing, stalled or crashed notebook.
    """
    path = Path(path).resolve()
    name = display_name(path)
    nb = read(path)
    client = LimitedClient(nb, name=name, cell_timeout=cell_timeout, notebook_timeout=notebook_timeout,
                           on_progress=on_progress, resources={"metadata": {"path": str(path.parent)}})
    monitor = KernelMonitor(client)
    monitor.start()
    start = time.perf_counter()
    status, message = "ok", ""
    try:
        client.execute(env=kernel_env(env))
    except CellTimeoutError:
        status, message = "stalled", _stall_message(client, monitor)
    except CellExecutionError as exc:
        status = "failed"
        message = f"{client.where()}: {exc.ename}: {first_line(exc.evalue, 300)}"
    except DeadKernelError as exc:
        status, message = "crashed", f"{client.where()}: the kernel died ({exc})"
    except Exception as exc:  # kernel start-up, a broken notebook file, ...
        status, message = "crashed", f"{client.where()}: {type(exc).__name__}: {first_line(str(exc), 300)}"
    elapsed = time.perf_counter() - start
    monitor.stop.set()
    found = error_outputs(nb) if status == "ok" else []
    if found:
        status, message = "failed", display_error_message(name, nb, found)
        client.current = found[0][0]
    if out_dir is not None:
        out_dir.mkdir(parents=True, exist_ok=True)
        nbformat.write(nb, out_dir / f"{path.stem}.ipynb")
    if profile:
        print_slowest_cells(name, nb, profile)
    cur = client.current
    return Outcome(name, status, round(elapsed, 2), message, cur,
                   first_line(nb.cells[cur].source) if cur is not None else "",
                   round(monitor.peak_rss / 2**20, 1) if measure_memory else None)


def cell_seconds(cell) -> float | None:
    """Wall time of an executed code cell, from nbclient's ``metadata.execution`` timestamps."""
    meta = cell.get("metadata", {}).get("execution", {})
    try:
        start = datetime.fromisoformat(meta["iopub.execute_input"].replace("Z", "+00:00"))
        stop = datetime.fromisoformat(meta["shell.execute_reply"].replace("Z", "+00:00"))
    except (KeyError, ValueError):
        return None
    return (stop - start).total_seconds()


def print_slowest_cells(name: str, nb: nbformat.NotebookNode, n: int) -> None:
    """Print the ``n`` slowest code cells of an executed notebook (``run_notebook.py --profile``)."""
    timed = [(s, i) for i, c in enumerate(nb.cells) if (s := cell_seconds(c)) is not None]
    print(f"{name}: {sum(s for s, _ in timed):.1f} s in {len(timed)} cells; slowest:")
    for s, i in sorted(timed, reverse=True)[:n]:
        print(f"  {s:6.2f} s  cell {i:3d}  {first_line(nb.cells[i].source)}")


# ---------------------------------------------------------------- many notebooks, in child processes
@dataclass
class Job:
    """One execution: a notebook, extra environment variables, and a label for reports."""

    path: Path
    env: dict[str, str] = field(default_factory=dict)
    label: str = ""


def _run_child(job: Job, scratch: Path, cell_timeout: float, notebook_timeout: float,
               measure_memory: bool) -> Outcome:
    scratch.mkdir(parents=True, exist_ok=True)
    report = scratch / f"{job.path.stem}-{uuid.uuid4().hex[:8]}.json"
    report.unlink(missing_ok=True)
    cmd = [sys.executable, str(ROOT / "scripts" / "run_notebook.py"), str(job.path), "--json", str(report),
           "--cell-timeout", str(cell_timeout), "--notebook-timeout", str(notebook_timeout), "--quiet"]
    if measure_memory:
        cmd.append("--memory")
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=ROOT, env={**os.environ, **job.env}, start_new_session=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    name = display_name(job.path)
    try:
        _, err = proc.communicate(timeout=notebook_timeout + HARD_MARGIN_S)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)  # the runner and its kernel: one process group
        proc.communicate()
        data = _read_json(report)
        cell = data.get("cell")
        return Outcome(name, "stalled", round(time.perf_counter() - start, 2),
                       f"{name}, cell {cell} (`{data.get('first_line', '')}`): the runner "
                       f"itself hung and was killed after {notebook_timeout + HARD_MARGIN_S:.0f} s",
                       cell, data.get("first_line", ""))
    data = _read_json(report)
    if data.get("status") in (None, "running"):
        tail = first_line((err or "").strip().splitlines()[-1] if (err or "").strip() else "", 300)
        return Outcome(name, "crashed", round(time.perf_counter() - start, 2),
                       f"{name}: the runner exited with code {proc.returncode}: {tail}",
                       data.get("cell"), data.get("first_line", ""))
    return Outcome(**data)


def _read_json(path: Path) -> dict:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return {}


def run_children(jobs: Sequence[Job], *, workers: int = 2, scratch: Path,
                 cell_timeout: float = CELL_TIMEOUT_S, notebook_timeout: float = NOTEBOOK_TIMEOUT_S,
                 measure_memory: bool = False, report=None) -> list[Outcome]:
    """Execute ``jobs``, at most ``workers`` at a time, each in its own runner process and kernel.

    ``report(job, outcome)`` is called as each one ends. Returns the outcomes in the order of ``jobs``.
    """
    def one(job: Job) -> Outcome:
        outcome = _run_child(job, scratch, cell_timeout, notebook_timeout, measure_memory)
        if report is not None:
            report(job, outcome)
        return outcome

    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        return list(pool.map(one, jobs))


def write_progress(path: Path, index: int, line: str) -> None:
    """The ``--json`` file while a notebook runs: which cell started last (read if the runner is killed)."""
    path.write_text(json.dumps({"status": "running", "cell": index, "first_line": line}))


def outcome_json(outcome: Outcome) -> str:
    return json.dumps(asdict(outcome))


def summary_line(outcome: Outcome) -> str:
    if outcome.ok:
        mem = f", peak {outcome.peak_mib:.0f} MiB" if outcome.peak_mib else ""
        return f"{outcome.notebook}: ok in {outcome.seconds:.1f} s{mem}"
    return f"{outcome.notebook}: {outcome.status.upper()} after {outcome.seconds:.1f} s\n  {outcome.message}"
