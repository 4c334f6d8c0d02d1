"""gmmlib's layout: three subpackages, and every earlier module path still imports.

``gmmlib.lda`` (task, landscape, dynamics, autograd), ``gmmlib.denoising`` (task, heads, training)
and ``gmmlib.runtime`` (the book's runtime: checks, comparisons, evidence, verdicts, seeding,
plotting, glue). A module that moved left a shim at its earlier path, for code written against
earlier editions: each name of the new module's ``__all__`` is the very same object there, and
importing a shim warns of nothing (the strict build turns a warning into an error). The packages
import torch only where a name needs it.
"""

from __future__ import annotations

import importlib
import subprocess
import sys
import warnings

import pytest

#: earlier path -> the module that holds its code now
MOVED = {
    "gmmlib.lda_landscape": "gmmlib.lda.landscape",
    "gmmlib.lda_dynamics": "gmmlib.lda.dynamics",
    "gmmlib.lda_torch": "gmmlib.lda.autograd",
    "gmmlib.denoising_heads": "gmmlib.denoising.heads",
    "gmmlib.head_training": "gmmlib.denoising.training",
    "gmmlib.checks": "gmmlib.runtime.checks",
    "gmmlib.comparisons": "gmmlib.runtime.comparisons",
    "gmmlib.verdicts": "gmmlib.runtime.verdicts",
    "gmmlib.evidence": "gmmlib.runtime.evidence",
    "gmmlib.seeding": "gmmlib.runtime.seeding",
    "gmmlib.plotting": "gmmlib.runtime.plotting",
    "gmmlib.glue": "gmmlib.runtime.glued",
}
#: a package that became a package keeps its path and re-exports its task module's names
PACKAGES = {"gmmlib.lda": "gmmlib.lda.task", "gmmlib.denoising": "gmmlib.denoising.task"}


def _run(code: str) -> str:
    out = subprocess.run([sys.executable, "-W", "error", "-c", code], capture_output=True,
                         text=True, check=True)
    return out.stdout.strip()


@pytest.mark.parametrize(("old", "new"), sorted({**MOVED, **PACKAGES}.items()))
def test_every_earlier_path_offers_the_same_objects(old, new):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        before, after = importlib.import_module(old), importlib.import_module(new)
    assert after.__all__, new
    missing = [n for n in after.__all__ if getattr(before, n, None) is not getattr(after, n)]
    assert not missing, f"{old} lacks (or offers other objects as) {missing} of {new}"
    assert set(getattr(before, "__all__", [])) <= set(after.__all__), old


def test_the_chapters_check_tools_stay_importable_from_gmmlib_checks():
    """``from gmmlib.checks import Control, glue, monte_carlo_mean`` (every earlier chapter)."""
    checks = importlib.import_module("gmmlib.checks")
    runtime = importlib.import_module("gmmlib.runtime")
    for name in ("Control", "Estimate", "converged_quadrature", "glue", "monte_carlo_mean",
                 "replicates", "richardson_derivative"):
        assert getattr(checks, name) is getattr(runtime, name), name


def test_the_runtime_reexports_what_it_names_from_where_it_is_defined():
    runtime = importlib.import_module("gmmlib.runtime")
    assert {"Control", "Ledger", "Seeds", "glue", "PALETTE", "use_book_style"} <= set(
        runtime.__all__)
    for name in runtime.__all__:
        obj = getattr(runtime, name)
        home = getattr(obj, "__module__", None) or ""
        if home.startswith("gmmlib.runtime."):  # a class or function: defined in a module here
            assert getattr(importlib.import_module(home), name) is obj, name
    with pytest.raises(AttributeError):
        runtime.no_such_name  # noqa: B018


def test_the_runtime_glue_is_the_function_however_it_is_reached():
    """``glue`` is the function the chapters import, defined in :mod:`gmmlib.runtime.glued` (a
    module named ``glue`` would be shadowed by the function, or shadow it)."""
    assert _run(
        "import gmmlib.runtime.checks\n"
        "from gmmlib.runtime import glue\n"
        "import gmmlib.runtime.glued as module\n"
        "print(callable(glue) and glue is module.glue is gmmlib.runtime.checks.glue)") == "True"


@pytest.mark.parametrize("module", ["gmmlib", "gmmlib.lda", "gmmlib.denoising", "gmmlib.runtime"])
def test_the_packages_do_not_import_torch(module):
    """Checked in a fresh interpreter: another test may have imported torch already."""
    assert _run(f"import sys, {module}\nprint('torch' in sys.modules)") == "False", module


def test_the_runtime_imports_matplotlib_only_for_a_plotting_name():
    code = ("import sys\nfrom gmmlib.runtime import Control, Ledger, Seeds, glue\n"
            "print('matplotlib' in sys.modules, 'torch' in sys.modules)\n"
            "from gmmlib.runtime import use_book_style\n"
            "print('matplotlib' in sys.modules)")
    assert _run(code).split() == ["False", "False", "True"]
