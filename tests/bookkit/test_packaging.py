"""gmmlib's wheel holds gmmlib alone; the build machinery is its own distribution, bookkit.

A reader who installs gmmlib (the chapters' setup cell in Colab) gets no build code, and no
environment with gmmlib and myst-nb loads bookkit's renderer unless bookkit is installed.
"""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def wheels(tmp_path_factory) -> dict[str, zipfile.ZipFile]:
    import shutil

    out, src = tmp_path_factory.mktemp("wheels"), tmp_path_factory.mktemp("sources")
    # built from copies: setuptools writes build/ and *.egg-info beside the sources
    shutil.copytree(ROOT / "gmmlib", src / "gmmlib" / "gmmlib",
                    ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy(ROOT / name, src / "gmmlib" / name)
    shutil.copytree(ROOT / "bookkit", src / "bookkit", ignore=shutil.ignore_patterns(
        "__pycache__", "build", "*.egg-info"))
    for project in (src / "gmmlib", src / "bookkit"):  # the environment's setuptools: no download
        subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps",
                        "--no-build-isolation", "-w", str(out), str(project)],
                       check=True, capture_output=True, text=True, timeout=300)
    return {p.name.split("-")[0]: zipfile.ZipFile(p) for p in out.glob("*.whl")}


def _tops(wheel: zipfile.ZipFile) -> set[str]:
    return {name.split("/")[0] for name in wheel.namelist() if not name.split("/")[0]
            .endswith(".dist-info")}


def _entry_points(wheel: zipfile.ZipFile) -> str:
    found = [n for n in wheel.namelist() if n.endswith(".dist-info/entry_points.txt")]
    return wheel.read(found[0]).decode() if found else ""


def test_gmmlib_wheel_holds_gmmlib_alone(wheels):
    assert _tops(wheels["gmmlib"]) == {"gmmlib"}
    assert "bookkit" not in _entry_points(wheels["gmmlib"])


def test_gmmlib_wheel_holds_every_module_of_gmmlib(wheels):
    """The subpackages too (gmmlib.lda, gmmlib.denoising, gmmlib.runtime): a reader's install
    imports what the chapters import."""
    sources = {p.relative_to(ROOT).as_posix() for p in (ROOT / "gmmlib").rglob("*.py")}
    shipped = {n for n in wheels["gmmlib"].namelist() if n.endswith(".py")}
    assert {"gmmlib/lda/task.py", "gmmlib/runtime/checks.py"} <= sources
    assert sources == shipped, sorted(sources ^ shipped)


def test_bookkit_is_its_own_distribution_with_the_renderer(wheels):
    assert _tops(wheels["bookkit"]) == {"bookkit"}
    assert "bookkit.ledger:CheckRecords" in _entry_points(wheels["bookkit"])
    metadata = next(n for n in wheels["bookkit"].namelist() if n.endswith("METADATA"))
    requires = wheels["bookkit"].read(metadata).decode()
    for needed in ("gmmlib", "sphinx", "jupytext", "nbclient", "pylatexenc", "myst-nb"):
        assert f"Requires-Dist: {needed}" in requires, needed


def test_the_book_installs_both_from_the_repository():
    lines = (ROOT / "requirements.txt").read_text(encoding="utf-8").splitlines()
    assert "-e ." in lines and "-e ./bookkit[browser]" in lines


def test_bookkit_from_its_wheel_works_on_the_book_it_is_run_in(wheels, tmp_path):
    """Installed from the wheel (not the repository), bookkit imports without a book, finds the
    book from the working directory, and outside any book says so in one line."""
    import os

    target = tmp_path / "site"
    wheel = next(p for p in Path(wheels["bookkit"].filename).parent.glob("bookkit-*.whl"))
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target",
                    str(target), str(wheel)], check=True, capture_output=True, timeout=300)
    env = {**os.environ, "PYTHONPATH": str(target)}
    nowhere = tmp_path / "nowhere"
    nowhere.mkdir()
    probe = ("import bookkit, bookkit.run, bookkit.toc; print(bookkit.__file__); "
             "print(bookkit.toc.find_root())")
    inside = subprocess.run([sys.executable, "-c", probe], cwd=ROOT / "book", env=env,
                            capture_output=True, text=True, timeout=60)
    assert inside.returncode == 0, inside.stderr
    where, root = inside.stdout.split()
    assert where.startswith(str(target)) and Path(root) == ROOT
    outside = subprocess.run([sys.executable, "-m", "bookkit", "sync", "--check"], cwd=nowhere,
                             env=env, capture_output=True, text=True, timeout=60)
    assert outside.returncode == 2 and len(outside.stderr.strip().splitlines()) == 1, \
        outside.stderr
    assert "no book here" in outside.stderr
