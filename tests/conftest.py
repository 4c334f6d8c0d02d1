"""Shared fixtures and hypothesis strategies for gmmlib's tests."""

from __future__ import annotations

import functools
from pathlib import Path

import os

import numpy as np
import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from gmmlib import GaussianMixture


REPO = Path(__file__).resolve().parent.parent

# Property tests: on CI (CI=true) hypothesis draws the same examples every run (derandomised,
# no example database), so a red build is never a new random draw; locally it explores.
# HYPOTHESIS_PROFILE=ci (or dev) chooses one by hand.
settings.register_profile("ci", derandomize=True, database=None, print_blob=True,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("dev")
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE",
                                     "ci" if os.environ.get("CI") == "true" else "dev"))
#: The chapters' sources: MyST Markdown notebooks, each paired with a stripped .ipynb (jupytext).
CHAPTER_GLOB = "book/[0-9][0-9]_*.md"


def chapter_sources(root: Path = REPO) -> list[Path]:
    """The chapters' MyST sources ``book/NN_*.md``, in order (the files one edits and reviews)."""
    return sorted(root.glob(CHAPTER_GLOB))


@functools.lru_cache(maxsize=None)
def _read_chapter(path: str, mtime: float):
    import jupytext

    return jupytext.read(path)


def read_chapter(path: Path):
    """The chapter at ``path`` (``.md`` or ``.ipynb``) as an nbformat notebook, read by jupytext."""
    return _read_chapter(str(path), Path(path).stat().st_mtime)


def chapter_cells(path: Path, cell_type: str | None = None) -> list[tuple[int, str, set[str]]]:
    """``(index, source, tags)`` of the chapter's cells (of one type if given).

    Indices run over all cells.
    """
    return [
        (i, c.source, set(c.metadata.get("tags", [])))
        for i, c in enumerate(read_chapter(path).cells)
        if cell_type is None or c.cell_type == cell_type
    ]


def random_spd(rng: np.random.Generator, d: int, scale: float = 1.0) -> np.ndarray:
    A = rng.standard_normal((d, d))
    return scale * (A @ A.T / d + 0.2 * np.eye(d))


def random_mixture(rng: np.random.Generator, K: int, d: int) -> GaussianMixture:
    w = rng.dirichlet(np.ones(K) * 2.0)
    return GaussianMixture(
        w, rng.normal(size=(K, d)), np.stack([random_spd(rng, d, 0.5) for _ in range(K)])
    )


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(12345)


@pytest.fixture
def mixture2d() -> GaussianMixture:
    return GaussianMixture(
        [0.3, 0.7],
        [[1.0, 0.0], [-1.0, 0.5]],
        [0.5 * np.eye(2), [[0.3, 0.1], [0.1, 0.2]]],
    )


seeds = st.integers(min_value=0, max_value=2**32 - 1)
dims = st.integers(min_value=1, max_value=4)
ncomp = st.integers(min_value=1, max_value=4)


# ---------------------------------------------------------------- tests of the built book
def pytest_addoption(parser):
    parser.addoption(
        "--built",
        action="store_true",
        default=False,
        help="run the tests marked 'built', which read a finished build in _build/",
    )


def pytest_configure(config):
    config.addinivalue_line(
        "markers",
        "built: reads the finished build in _build/ (make test runs them after the build)",
    )
    config.addinivalue_line(
        "markers",
        "slow: builds, grades, installs or opens a browser (seconds to minutes each); "
        "make pytest-fast leaves them out",
    )


#: The test modules that build, grade, install or open a browser: marked slow.
SLOW_MODULES = {"test_assignments", "test_bookkit", "test_browser", "test_colab_path",
                "test_packaging", "test_runner", "test_built_book", "test_first_reading",
                "test_homework_browser"}

#: The modules whose tests take longest (seconds to tens of seconds each), in the order they
#: start: under pytest-xdist a worker that draws a long test last keeps the run waiting for it
#: alone (a fresh clone's make test had a core idle for most of a minute). The many short tests
#: of gmmlib and of the book's sources come last and even out the two workers' ends.
LONG_FIRST = ["test_colab_path", "test_first_reading", "test_assignments",
              "test_homework_browser", "test_browser", "test_runner", "test_bookkit",
              "test_publishing", "test_commands", "test_pairs", "test_packaging",
              "test_reader_notebooks", "test_slides"]


def _start_order(item) -> tuple[int, int]:
    """Long modules first; a page of the built book (a ``name`` parameter naming a page under
    _build/html/book/) by its size, the largest first: its MathJax and axe-core scale with it."""
    module = item.module.__name__.rsplit(".", 1)[-1]
    rank = LONG_FIRST.index(module) if module in LONG_FIRST else len(LONG_FIRST)
    name = getattr(item, "callspec", None) and item.callspec.params.get("name")
    page = REPO / "_build" / "html" / "book" / f"{name}.html"
    return rank, -(page.stat().st_size if isinstance(name, str) and page.is_file() else 0)


def pytest_collection_modifyitems(config, items):
    for item in items:
        if item.module.__name__.rsplit(".", 1)[-1] in SLOW_MODULES:
            item.add_marker(pytest.mark.slow)
    built = config.getoption("--built")
    keep, drop = [], []
    for item in items:
        (keep if ("built" in item.keywords) == built else drop).append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
    items[:] = sorted(keep, key=_start_order)  # a stable sort: otherwise in collection order
