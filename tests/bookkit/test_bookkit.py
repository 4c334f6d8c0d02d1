"""The build machinery: the ledger follows the pages under cached builds; the internals it reads.

Each test builds a tiny book in a temporary folder (a few seconds of kernel time each).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from importlib.metadata import version
from pathlib import Path

import nbformat
import pytest
import yaml

from gmmlib.runtime.verdicts import MIME_TYPE

ROOT = Path(__file__).resolve().parents[2]
JB = Path(sys.executable).parent / "jupyter-book"


def records(notebook) -> list[dict]:
    """The check records an executed notebook carries, in order."""
    return [out["data"][MIME_TYPE] for cell in notebook.cells for out in cell.get("outputs", [])
            if MIME_TYPE in out.get("data", {})]


CHAPTER = """\
---
jupytext:
  text_representation: {{format_name: myst}}
kernelspec: {{display_name: Python 3, language: python, name: python3}}
---
# Chapter {n}

```{{prf:theorem}}
:label: thm-{n}

One is one.
```

```{{code-cell}}
import os
from gmmlib.runtime.checks import Control, Ledger
ledger = Ledger("0{n}_ch")
ledger.close(1.0, 1.0, atol=1e-9, claim="thm-{n}", what=f"{what} in kernel {{os.getpid()}}",
             method="closed form", why="round-off", control=Control("two", 2.0))
```

```{{code-cell}}
print(ledger.summary())
```
"""


def _book(folder: Path) -> None:
    """Two chapters with a check each and the ledger page, under the book's own configuration
    (its execution, parsing and Sphinx settings; only the extensions the ledger needs)."""
    config = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))
    ours = ["sphinx_proof", "bookkit.ledger", "bookkit.execution"]
    sphinx_config = {k: v for k, v in config["sphinx"]["config"].items()  # of these extensions
                     if not k.startswith(("html_", "autodoc_", "napoleon_", "bibtex_"))}
    small = {"title": "tiny", "only_build_toc_files": True, "execute": config["execute"],
             "parse": config["parse"],
             "sphinx": {"extra_extensions": ours, "config": sphinx_config}}
    assert set(ours) <= set(config["sphinx"]["extra_extensions"])
    (folder / "book").mkdir(parents=True)
    (folder / "_config.yml").write_text(yaml.safe_dump(small), encoding="utf-8")
    (folder / "_toc.yml").write_text(textwrap.dedent("""\
        format: jb-book
        root: intro
        parts:
          - caption: Chapters
            numbered: true
            chapters: [{file: book/01_ch}, {file: book/02_ch}, {file: book/ledger}]
        """), encoding="utf-8")
    (folder / "intro.md").write_text("# Tiny\n", encoding="utf-8")
    (folder / "book" / "ledger.md").write_text("# Ledger\n\n```{verification-ledger}\n```\n")
    for n in (1, 2):
        (folder / "book" / f"0{n}_ch.md").write_text(CHAPTER.format(n=n, what="first"))


def _build(folder: Path) -> tuple[list[dict], str]:
    env = {**os.environ, "BOOK_EXECUTE": "cache"}
    run = subprocess.run([str(JB), "build", str(folder), "-W", "-n", "--keep-going"],
                         capture_output=True, text=True, env=env, timeout=300)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    build = folder / "_build"
    html = (build / "html" / "book" / "ledger.html").read_text(encoding="utf-8")
    return json.loads((build / "ledger.json").read_text(encoding="utf-8")), html


@pytest.mark.skipif(not JB.exists(), reason="jupyter-book is not installed next to this Python")
def test_the_ledger_follows_the_pages_under_cached_builds(tmp_path):
    _book(tmp_path)
    first, html = _build(tmp_path)
    assert [e["claim"] for e in first] == ["thm-1", "thm-2"]
    assert all(e["passed"] and e["what"].startswith("first") for e in first)
    assert "This build ran 2 checks, of which 2 passed" in html
    chapter = tmp_path / "book" / "02_ch.md"
    chapter.write_text(chapter.read_text().replace('what=f"first', 'what=f"second'))
    second, html = _build(tmp_path)
    assert second[0] == first[0], "chapter 1 is unchanged: served from the cache, same record"
    assert second[1]["what"].startswith("second") and second[1]["what"] != first[1]["what"]
    assert second[1]["what"] in html and first[1]["what"] not in html
    assert not (tmp_path / "_build" / "ledger").exists()
    executed = nbformat.read(tmp_path / "_build" / "jupyter_execute" / "book" / "02_ch.ipynb", 4)
    assert records(executed) == second[1:], "the executed notebook carries its checks' records"


PAGE = """\
---
jupytext:
  text_representation: {format_name: myst}
kernelspec: {display_name: Python 3, language: python, name: python3}
---
# Page

```{prf:lemma}
:label: lem-a

A lemma.
```

```{figure} pic.png
:name: fig-a

A figure.
```

```{exercise} Warm-up (★)
:label: ex-a

An exercise.
```

```{solution} ex-a
An answer.
```

```{math}
:label: eq-a

a = b
```

(sec-a)=
## A section

```{code-cell}
x = 1
```
"""


def test_the_internals_bookkit_reads_are_where_it_reads_them(tmp_path):
    """Sphinx, sphinx-proof, sphinx-exercise, myst-nb and sphinx-book-theme: an upgrade that
    moves one fails here, naming the package and its version (bookkit.internals raises
    InternalsChanged)."""
    from docutils import nodes as docutils_nodes
    from sphinx.application import Sphinx

    from bookkit import internals

    (tmp_path / "index.md").write_text("# Book\n\n```{toctree}\n:numbered:\npage\n```\n")
    (tmp_path / "page.md").write_text(PAGE)
    (tmp_path / "pic.png").write_bytes(b"")
    (tmp_path / "conf.py").write_text(
        "extensions = ['myst_nb', 'sphinx_proof', 'sphinx_exercise']\nnumfig = True\n"
        "nb_execution_mode = 'force'\nsuppress_warnings = ['image.not_readable']\n"
        "html_theme = 'sphinx_book_theme'\nhtml_theme_options = {'repository_url': "
        "'https://github.com/o/r', 'repository_branch': 'main', 'launch_buttons': {"
        "'colab_url': 'https://colab.research.google.com', 'binderhub_url': "
        "'https://mybinder.org'}}\n")
    app = Sphinx(tmp_path, tmp_path, tmp_path / "_build", tmp_path / "_doctrees", "html",
                 status=None, warning=None, freshenv=True)
    buttons = {}
    app.connect("html-page-context", lambda app, page, template, context, doctree:
                buttons.update({page: internals.launch_buttons(context)}), priority=600)
    downloads = {}
    app.connect("html-page-context", lambda app, page, template, context, doctree:
                downloads.update({page: internals.download_buttons(context)}), priority=600)
    app.build()
    assert ".md" in [b["text"] for b in downloads["page"]], \
        f"sphinx-book-theme {version('sphinx-book-theme')}: the download menu in its context"
    assert internals.download_buttons({}) is None, "another theme: no download menu"
    fragment = internals.render_html(app.builder, docutils_nodes.paragraph("", "lone"), "img")
    assert fragment.strip() == "<p>lone</p>", f"sphinx {version('sphinx')}: a node as HTML"
    assert {b["text"]: b["url"] for b in buttons["page"]} == {
        "Binder": "https://mybinder.org/v2/gh/o/r/main?urlpath=tree/page.md",
        "Colab": "https://colab.research.google.com/github/o/r/blob/main/page.md"}, \
        f"sphinx-book-theme {version('sphinx-book-theme')}: the launch buttons in its context"
    assert buttons["index"] == [], "a page that is not a notebook has no launch button"
    env = app.env
    figures, section = internals.numbers(env, "page")
    assert section == (1,) and figures["figure"] == {"fig-a": (1, 1)}, \
        f"sphinx {version('sphinx')}: env.toc_fignumbers / toc_secnumbers"
    assert internals.section_numbers(env, "page")[""] == (1,), \
        f"sphinx {version('sphinx')}: env.toc_secnumbers"
    assert internals.proofs(env) == {"lem-a": {"docname": "page", "kind": "lemma",
                                               "countertype": "lemma"}}, \
        f"sphinx-proof {version('sphinx-proof')}: env.proof_list"
    assert figures["exercise"] == {"ex-a": (1, 1)}
    exercise = {"label": "ex-a", "docname": "page", "title": "Warm-up (★)"}
    assert internals.exercises(env) == [exercise], \
        f"sphinx-exercise {version('sphinx-exercise')}: env.sphinx_exercise_registry"
    solutions = internals.solution_nodes()
    assert any(isinstance(n, solutions) for n in env.get_doctree("page").findall()), \
        f"sphinx-exercise {version('sphinx-exercise')}: its solution nodes"
    record = internals.exec_data(env, "page")
    assert record["succeeded"] is True and record["runtime"] >= 0, \
        f"myst-nb {version('myst-nb')}: the execution record"
    assert internals.equations(env) == {"eq-a": "page"}, f"sphinx {version('sphinx')}: math data"
    labels = internals.std_labels(env)
    assert labels["sec-a"] == {"docname": "page", "id": "sec-a", "title": "A section"}, \
        f"sphinx {version('sphinx')}: the std domain's labels"
    assert labels["fig-a"]["docname"] == "page" and internals.title(env, "page") == "Page"
    assert internals.title(env, "nowhere") is None
    code = next(n for n in env.get_doctree("page").findall(docutils_nodes.literal_block)
                if n.astext() == "x = 1")
    assert internals.code_cell(code)[1] == "x = 1", f"myst-nb {version('myst-nb')}: nb_element"
    internals.set_figure_number(env, "page", "figure", "fig-a", (0, 1))
    assert internals.numbers(env, "page")[0]["figure"]["fig-a"] == (0, 1)
    with pytest.raises(AssertionError, match="no figure fig-b"):
        internals.set_figure_number(env, "page", "figure", "fig-b", (0, 2))


def test_a_record_from_another_gmmlib_is_refused_in_one_line():
    """A cached notebook executed with another gmmlib carries an older record (no ``schema``,
    or another): the build stops with one line that says to run make book-fresh."""
    from types import SimpleNamespace

    from sphinx.errors import ExtensionError

    from bookkit.ledger import CheckRecords
    from gmmlib.runtime.checks import Control, Ledger
    from gmmlib.runtime.verdicts import RECORD_SCHEMA

    led = Ledger("99_test")
    led.close(1.0, 1.0, atol=1e-9, claim="eq-x", what="w", method="m", why="y",
              control=Control("off by one", 2.0))
    record = led.last.record()
    assert record["schema"] == RECORD_SCHEMA
    nodes = CheckRecords.handle_mime(None, SimpleNamespace(mime_type=MIME_TYPE, content=record),
                                     False)
    assert nodes[0]["record"] == record
    old = {k: v for k, v in record.items() if k != "schema"}
    for stale in (old, {**record, "schema": RECORD_SCHEMA + 1}):
        with pytest.raises(ExtensionError, match="make book-fresh") as info:
            CheckRecords.handle_mime(None, SimpleNamespace(mime_type=MIME_TYPE, content=stale),
                                     False)
        assert "\n" not in str(info.value)


def test_mathjax_is_copied_from_its_wheel_once(tmp_path):
    """bookkit.local_mathjax: the bundle named by mathjax_path and what it loads on demand (the
    fonts, the TeX extensions) go to _static/; a second build copies nothing; a bundle that the
    wheel does not have stops the build with a message naming it."""
    from pathlib import PurePosixPath
    from types import SimpleNamespace

    from sphinx.errors import ConfigError

    from bookkit import local_mathjax

    config = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))
    path = PurePosixPath(config["sphinx"]["config"]["mathjax_path"])
    assert "bookkit.local_mathjax" in config["sphinx"]["extra_extensions"]
    bundle = local_mathjax.copy_mathjax(tmp_path, path)
    static = tmp_path / "_static" / path.parent
    assert bundle == static / path.name and bundle.stat().st_size > 500_000
    assert (static / "output/chtml/fonts/woff-v2/MathJax_Main-Regular.woff").is_file()
    assert (static / "input/tex/extensions/physics.js").is_file()
    before = {p: p.stat().st_mtime_ns for p in static.rglob("*") if p.is_file()}
    local_mathjax.copy_mathjax(tmp_path, path)
    assert before == {p: p.stat().st_mtime_ns for p in static.rglob("*") if p.is_file()}
    assert local_mathjax.local_path(SimpleNamespace(mathjax_path="https://cdn/x.js")) is None
    with pytest.raises(ConfigError, match="no tex-nothing.js"):
        local_mathjax._check(None, SimpleNamespace(mathjax_path="mathjax/tex-nothing.js"))


def test_no_internal_is_read_or_written_outside_bookkit_internals():
    """Every undocumented attribute the build touches goes through one guarded function of
    bookkit.internals, so an upgrade that moves it fails the upgrade test above."""
    import re

    internal = re.compile(r"get_domain\(|\benv\.titles\b|toc_fignumbers|toc_secnumbers|"
                          r"nb_element|proof_list|sphinx_exercise_registry|header_buttons|"
                          r"KernelManager\.|NbMetadataCollector")
    found = [f"{path.name}:{n}: {line.strip()}"
             for path in sorted((ROOT / "bookkit").glob("*.py")) if path.name != "internals.py"
             for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
             # a call into the fence (internals.nb_element) is what the rule asks for
             if internal.search(re.sub(r"internals\.\w+", "", line))]
    assert not found, found
