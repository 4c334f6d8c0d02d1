"""Execute notebooks in fresh kernels, with limits that fail fast and name the place.

The one execution module of the book outside Jupyter Book: ``scripts/run_notebook.py`` (one or
more chapters, in its own process), ``scripts/bench.py``, ``scripts/stress.py`` and
``scripts/seeds.py`` (many chapters, each in a child process under a hard deadline) use it; the
build applies the same limits and messages through ``_ext/execution_limits.py``.

The limits
----------
* :data:`CELL_TIMEOUT_S` per cell: no cell of the book needs more than a minute, even on a
  loaded 2-core machine, so a cell that has not replied after 180 s is stalled.
* :data:`NOTEBOOK_TIMEOUT_S` per notebook (wall clock): each cell's limit is the smaller of the
  per-cell limit and the time the notebook has left.
* a child process (:func:`run_children`) is killed, with its kernel, :data:`HARD_MARGIN_S` after
  the notebook's limit, should the client itself hang outside a cell.

A limit that fires raises :class:`nbclient.exceptions.CellTimeoutError` with a message such as::

    book/09_iterated_denoiser.ipynb, cell 13 (`import ipywidgets as widgets`): no reply after
    180 s (the per-cell limit of 180 s); the kernel was idle (0.00 s of CPU in 1 s): it is
    waiting, not computing (a stall)

Every kernel started here runs with ``GMMLIB_HEADLESS=1`` (:data:`HEADLESS_ENV`): no front end is
attached, so :func:`gmmlib.plotting.interactive` draws once instead of creating a widget.
"""

from __future__ import annotations

import asyncio
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
from pathlib import Path
from queue import Empty

import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError, CellTimeoutError, DeadKernelError

ROOT = Path(__file__).resolve().parent.parent
CELL_TIMEOUT_S = 180
NOTEBOOK_TIMEOUT_S = 600
HARD_MARGIN_S = 120
#: The client re-polls the kernel's sockets at least this often (seconds).
POLL_SLICE_S = 1.0
#: Set in every kernel this module (or the build) starts: no front end is attached.
HEADLESS_ENV = "GMMLIB_HEADLESS"


def chapters(root: Path = ROOT) -> list[Path]:
    """The chapters listed in ``_toc.yml`` under ``root``, in order."""
    import yaml

    toc = yaml.safe_load((root / "_toc.yml").read_text())
    files = [c["file"] for part in toc["parts"] for c in part.get("chapters", [])]
    return [root / f"{f}.ipynb" for f in files if (root / f"{f}.ipynb").is_file()]


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


def _cpu_seconds(pid: int | None) -> float | None:
    if not pid:
        return None
    try:
        import psutil

        t = psutil.Process(pid).cpu_times()
        return t.user + t.system
    except Exception:  # the kernel may be gone; the message then says nothing about it
        return None


def _poll_in_slices(channel, slice_s: float = POLL_SLICE_S) -> None:
    """Make ``channel.get_msg(timeout)`` wait in slices of ``slice_s`` seconds, re-polling the socket.

    A message that reached the socket without waking the event loop (the lost wake-up of the
    module docstring) is then read at the end of the current slice, instead of when the whole
    ``timeout`` (the per-cell limit; forever when it is None) runs out. Each slice ends with a
    non-blocking poll of the socket, which finds such a message.
    """
    original = channel.get_msg

    async def get_msg(timeout: float | None = None):
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            left = slice_s if deadline is None else min(slice_s, max(0.0, deadline - time.monotonic()))
            try:
                return await original(timeout=left)
            except Empty:
                if deadline is not None and time.monotonic() >= deadline:
                    raise

    channel.get_msg = get_msg


class LimitedClient(NotebookClient):
    """A :class:`NotebookClient` with a per-cell and a per-notebook limit whose error names the cell.

    ``name`` is how messages call the notebook; ``on_progress(index, first_line)`` (optional) is
    called when each code cell starts.
    """

    def __init__(self, nb: nbformat.NotebookNode, *, name: str,
                 cell_timeout: float = CELL_TIMEOUT_S, notebook_timeout: float = NOTEBOOK_TIMEOUT_S,
                 on_progress=None, **kw) -> None:
        kw.setdefault("kernel_name", "python3")
        kw.setdefault("timeout", int(cell_timeout))
        super().__init__(nb, **kw)
        self.name = name
        self.cell_timeout = float(cell_timeout)
        self.notebook_timeout = float(notebook_timeout)
        self.current: int | None = None
        self._deadline = time.monotonic() + self.notebook_timeout
        self._on_progress = on_progress
        self.timeout_func = self._cell_limit
        self.on_cell_start = self._started

    async def async_start_new_kernel_client(self):
        kc = await super().async_start_new_kernel_client()
        _poll_in_slices(kc.shell_channel)
        _poll_in_slices(kc.iopub_channel)
        return kc

    def _started(self, cell, cell_index: int) -> None:
        if cell.cell_type == "code" and cell.source.strip():
            self.current = cell_index
            if self._on_progress is not None:
                self._on_progress(cell_index, first_line(cell.source))

    def _cell_limit(self, cell) -> float:
        left = self._deadline - time.monotonic()
        return max(1.0, min(self.cell_timeout, left))

    def where(self) -> str:
        return f"{self.name}, {cell_label(self.nb, self.current)}"

    async def _async_handle_timeout(self, timeout, cell=None):
        pid = getattr(getattr(self.km, "provisioner", None), "pid", None)
        before = _cpu_seconds(pid)
        await asyncio.sleep(1.0)
        after = _cpu_seconds(pid)
        limit = (f"the per-cell limit of {self.cell_timeout:.0f} s" if timeout >= self.cell_timeout
                 else f"the notebook's wall-clock limit of {self.notebook_timeout:.0f} s")
        if before is None or after is None:
            state = "the kernel's state is unknown"
        elif after - before < 0.05:
            state = (f"the kernel was idle ({after - before:.2f} s of CPU in 1 s): it is waiting, not "
                     "computing (a stall)")
        else:
            state = f"the kernel was busy ({after - before:.2f} s of CPU in 1 s): the cell is too slow"
        raise CellTimeoutError(f"{self.where()}: no reply after {timeout:.0f} s ({limit}); {state}")


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
    extra: dict = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.status == "ok"


def error_outputs(nb: nbformat.NotebookNode) -> list[tuple[int, str]]:
    """The cells whose outputs hold an error, as ``(index, "Name: message")``.

    A cell can reply "ok" and still show a traceback: an exception raised while its *display*
    is formatted (a figure whose mathtext label does not parse, say) is reported as an error
    output, not as a failed cell, so nbclient does not raise and the figure is missing.
    """
    found = []
    for i, cell in enumerate(nb.cells):
        for out in cell.get("outputs", []):
            if out.get("output_type") == "error":
                found.append((i, f"{out.get('ename', '?')}: {first_line(str(out.get('evalue', '')), 200)}"))
    return found


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
            on_progress=None) -> Outcome:
    """Execute the notebook at ``path`` in a fresh kernel (cwd: its folder); never modify the file.

    Returns an :class:`Outcome`; never raises for a failing, stalled or crashed notebook.
    """
    path = Path(path).resolve()
    name = display_name(path)
    nb = nbformat.read(path, as_version=4)
    client = LimitedClient(nb, name=name, cell_timeout=cell_timeout, notebook_timeout=notebook_timeout,
                           on_progress=on_progress, resources={"metadata": {"path": str(path.parent)}})
    peak = {"rss": 0}
    stop = threading.Event()
    if measure_memory:
        threading.Thread(target=_poll_memory, args=(client, peak, stop), daemon=True).start()
    start = time.perf_counter()
    status, message = "ok", ""
    try:
        client.execute(env=kernel_env(env))
    except CellTimeoutError as exc:
        status, message = "stalled", str(exc).splitlines()[0]
    except CellExecutionError as exc:
        status = "failed"
        message = f"{client.where()}: {exc.ename}: {first_line(exc.evalue, 300)}"
    except DeadKernelError as exc:
        status, message = "crashed", f"{client.where()}: the kernel died ({exc})"
    except Exception as exc:  # kernel start-up, a broken notebook file, ...
        status, message = "crashed", f"{client.where()}: {type(exc).__name__}: {first_line(str(exc), 300)}"
    elapsed = time.perf_counter() - start
    stop.set()
    found = error_outputs(nb) if status == "ok" else []
    if found:
        status, message = "failed", display_error_message(name, nb, found)
        client.current = found[0][0]
    if out_dir is not None:
        out_dir.mkdir(parents=True, exist_ok=True)
        nbformat.write(nb, out_dir / path.name)
    cur = client.current
    return Outcome(name, status, round(elapsed, 2), message, cur,
                   first_line(nb.cells[cur].source) if cur is not None else "",
                   round(peak["rss"] / 2**20, 1) if measure_memory else None)


def _poll_memory(client: NotebookClient, peak: dict, stop: threading.Event) -> None:
    """Peak resident memory of the kernel and its children, polled every 50 ms."""
    import psutil

    while not stop.is_set():
        km = client.km
        pid = getattr(getattr(km, "provisioner", None), "pid", None) if km is not None else None
        if pid:
            try:
                proc = psutil.Process(pid)
                rss = 0
                for p in [proc, *proc.children(recursive=True)]:
                    try:
                        rss += p.memory_info().rss
                    except psutil.Error:
                        pass
                peak["rss"] = max(peak["rss"], rss)
            except psutil.Error:
                pass
        time.sleep(0.05)


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
    try:
        _, err = proc.communicate(timeout=notebook_timeout + HARD_MARGIN_S)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)  # the runner and its kernel: one process group
        proc.communicate()
        data = _read_json(report)
        cell = data.get("cell")
        return Outcome(display_name(job.path), "stalled", round(time.perf_counter() - start, 2),
                       f"{display_name(job.path)}, cell {cell} (`{data.get('first_line', '')}`): the runner "
                       f"itself hung and was killed after {notebook_timeout + HARD_MARGIN_S:.0f} s",
                       cell, data.get("first_line", ""))
    data = _read_json(report)
    if data.get("status") in (None, "running"):
        tail = first_line((err or "").strip().splitlines()[-1] if (err or "").strip() else "", 300)
        return Outcome(display_name(job.path), "crashed", round(time.perf_counter() - start, 2),
                       f"{display_name(job.path)}: the runner exited with code {proc.returncode}: {tail}",
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
