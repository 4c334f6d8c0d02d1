"""Sphinx extension: the build's notebook execution fails fast and names the place.

myst-nb executes each chapter with nbclient under ``execute.timeout`` (seconds per cell, from
``_config.yml``); on a timeout its error names the notebook only. This extension runs that
execution through ``scripts/nbrun.py``'s :class:`LimitedClient`, the runner the scripts use, so
that in the build too

* each cell's limit is the smaller of ``execute.timeout`` and what is left of a per-notebook
  wall-clock limit (the Sphinx option ``nb_execution_notebook_timeout``, default 600 s);
* a limit that fires, or a failing cell, fails the build with a message naming the notebook,
  the cell (index and first line) and whether the kernel was idle (a stall) or busy (too slow);
* the kernels run with ``GMMLIB_HEADLESS=1``: no front end is attached to them;
* a cell that replies "ok" but whose output shows a traceback (an exception raised while its
  display was formatted, such as a figure whose label does not parse) fails the build too.
"""

from __future__ import annotations

import sys
import time
import traceback
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))

import nbrun  # noqa: E402

_STATE: dict[str, Any] = {"path": None, "notebook_timeout": nbrun.NOTEBOOK_TIMEOUT_S}


def limited_execution(nb, cwd, timeout, allow_errors, meta_override=True, record_timing=False, **kwargs):
    """Drop-in for ``jupyter_cache.executors.utils.single_nb_execution`` (as myst-nb calls it)."""
    from jupyter_cache.executors.utils import ExecutionResult
    from nbclient.exceptions import CellExecutionError, CellTimeoutError

    if meta_override and "execution" in nb.metadata:
        timeout = nb.metadata.execution.get("timeout", timeout)
        allow_errors = nb.metadata.execution.get("allow_errors", allow_errors)
    path = _STATE["path"]
    name = nbrun.display_name(path) if path is not None else "a notebook"
    cell_timeout = timeout if timeout and timeout > 0 else nbrun.CELL_TIMEOUT_S
    client = nbrun.LimitedClient(nb, name=name, cell_timeout=cell_timeout,
                                 notebook_timeout=_STATE["notebook_timeout"], allow_errors=allow_errors,
                                 record_timing=record_timing, resources={"metadata": {"path": cwd}}, **kwargs)
    error = exc_string = None
    start = time.perf_counter()
    try:
        client.execute(env=nbrun.kernel_env(), cwd=cwd)
        found = [] if allow_errors else nbrun.error_outputs(nb)
        if found:  # a cell that replied "ok" but shows a traceback (e.g. its figure failed to draw)
            raise CellExecutionError(nbrun.display_error_message(name, nb, found), "DisplayError", found[0][1])
    except CellTimeoutError as err:
        error, exc_string = err, "".join(traceback.format_exc())
    except CellExecutionError as err:
        where = "" if err.ename == "DisplayError" else f"{client.where()}: {err.ename}: {err.evalue}\n"
        named = CellExecutionError(f"{where}{err}", err.ename, err.evalue)
        error, exc_string = named, "".join(traceback.format_exc())
    return ExecutionResult(nb, cwd, time.perf_counter() - start, error, exc_string)


def _install() -> None:
    from myst_nb.core.execute import direct

    if getattr(direct, "_limits_installed", False):
        return
    original = direct.NotebookClientDirect.start_client

    def start_client(self):
        _STATE["path"] = self.path
        try:
            return original(self)
        finally:
            _STATE["path"] = None

    direct.NotebookClientDirect.start_client = start_client
    direct.single_nb_execution = limited_execution
    direct._limits_installed = True


def _configure(app, config) -> None:
    _STATE["notebook_timeout"] = float(config.nb_execution_notebook_timeout)


def setup(app):
    app.add_config_value("nb_execution_notebook_timeout", nbrun.NOTEBOOK_TIMEOUT_S, "env")
    app.connect("config-inited", _configure)
    _install()
    return {"version": "0.1", "parallel_read_safe": True, "parallel_write_safe": True}
