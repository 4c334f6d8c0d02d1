"""The reader notebooks (``bookkit.notebooks``): what the launch buttons open in Colab and Binder.

Without ``--built``: the Colab and Binder addresses follow ``_config.yml`` (the branch
``notebooks-<ref>``). With ``--built`` (``make test`` runs them after the build): every chapter,
and the introduction (a notebook page too), has its reader notebook in
``_build/notebooks/book/``, valid, without outputs, on the ``python3`` kernel; its Markdown holds
no MyST markup (no directive fences, no roles, no ``(label)=`` targets, no raw label slugs) but
the numbers of what it references ("Theorem 3.1", "(3.1)", ``\\tag{3.1}`` on numbered
displays) and the values that the page glues; its code cells are the chapter's, in order, the
setup cell first. Each page's Colab and Binder buttons open that page's reader notebook at this
build's ref. ``tests/book/test_colab_path.py`` runs one reader notebook outside the repository.
"""

from __future__ import annotations

import re
from html import unescape
from pathlib import Path

import nbformat
import pytest
import yaml

from bookkit import edition, notebooks
from bookkit.pages import LABEL  # a book label as typed (prop-01-exact)

from ..conftest import chapter_sources, read_chapter

ROOT = Path(__file__).resolve().parents[2]
BUILD = ROOT / "_build"
READER = BUILD / "notebooks" / "book"

#: MyST markup that Jupyter and Colab would show as it is typed
MARKUP = {
    "a directive fence": re.compile(r"^\s*(`{3,}|~{3,})\s*\{", re.M),
    "a colon fence": re.compile(r":::+\s*\{"),
    "a role": re.compile(r"\{[a-z][\w.:-]*\}`"),
    "a label target": re.compile(r"^\s*\(\S+\)=\s*$", re.M),
    "a directive option": re.compile(r"^:(label|class|name|tags|nonumber|book|status):", re.M),
    "a substitution": re.compile(r"\{\{[^}]*\}\}"),
}
STATEMENT = re.compile(r"\b(Theorem|Proposition|Lemma|Corollary|Remark|Definition|Conjecture) "
                       r"(\d+)\.\d+")
GLUED = re.compile(r'<span class="pasted-text">([^<]*)</span>')


def _chapters() -> list[str]:
    return [p.stem for p in chapter_sources(ROOT)]


def _pages() -> list[str]:
    """The pages that are notebooks: the chapters and the introduction."""
    return _chapters() + ["intro"]


def _config() -> dict:
    return yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))


def _markdown(nb) -> str:
    """The notebook's Markdown with the Markdown escapes removed (``\\_`` → ``_``)."""
    text = "\n\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
    return re.sub(r"\\([\\`*_<$|])", r"\1", text)


def _prose(text: str) -> str:
    """Markdown without its code blocks (a BibTeX record's ``{{…}}`` is not a substitution); a
    directive's fence ```` ```{name} ```` stays, its info string is not a language."""
    return re.sub(r"^(`{3,})[\w-]*\n.*?^\1\s*$", "", text, flags=re.M | re.S)


def _reader(chapter: str):
    path = READER / f"{chapter}.ipynb"
    assert path.is_file(), f"{path} is missing: build the book first (make notebooks)"
    return nbformat.read(path, as_version=4)


def _number(chapter: str) -> int:
    return int(chapter[:2])


# ---------------------------------------------------------------------------- without a build
def test_launch_urls_open_the_reader_notebook_on_its_branch():
    url, ref = _config()["repository"]["url"].rstrip("/"), _config()["repository"]["branch"]
    owner_repo = "/".join(url.split("/")[-2:])
    assert notebooks.branch(ROOT) == f"notebooks-{ref}"
    urls = notebooks.launch_urls(ROOT, "book/03_gated_experts")
    assert urls == {
        "Colab": f"https://colab.research.google.com/github/{owner_repo}/blob/notebooks-{ref}/"
        "book/03_gated_experts.ipynb",
        "Binder": f"https://mybinder.org/v2/gh/{owner_repo}/notebooks-{ref}"
        "?urlpath=tree/book/03_gated_experts.ipynb",
    }


def test_markdown_text_is_escaped():
    assert notebooks._text("a*b_c $5 <x> `y` \\z\nw") == r"a\*b\_c \$5 \<x> \`y\` \\z w"


def test_table_cells_keep_their_maths():
    assert notebooks._cell("a | b $\\|x\\|$\nc") == "a \\| b $\\|x\\|$ c"


def test_the_markup_patterns_catch_myst():
    myst = "```{prf:theorem} T\n:label: thm-03-x\n```\n(ch-03)=\n:::{admonition} A\n{eq}`x` {{ v }}"
    assert all(p.search(_prose(myst)) for p in MARKUP.values())
    assert not MARKUP["a substitution"].search(_prose("```bibtex\n  author = {{A B}}\n```"))


# ---------------------------------------------------------------------------- the built book
@pytest.mark.built
@pytest.mark.parametrize("chapter", _pages())
def test_reader_notebook_is_valid_without_outputs(chapter):
    nb = _reader(chapter)
    nbformat.validate(nb)
    assert nb.metadata["kernelspec"]["name"] == "python3"
    for cell in nb.cells:
        if cell.cell_type == "code":
            assert cell.outputs == [] and cell.execution_count is None


@pytest.mark.built
@pytest.mark.parametrize("chapter", _pages())
def test_reader_notebook_has_no_myst_markup(chapter):
    text = _prose(_markdown(_reader(chapter)))
    found = {what: m.group(0) for what, p in MARKUP.items() if (m := p.search(text))}
    assert not found, f"{chapter}: MyST markup in the reader notebook: {found}"
    slugs = sorted(set(m.group(0) for m in LABEL.finditer(text)))
    assert not slugs, f"{chapter}: raw labels in the reader notebook: {slugs[:10]}"


@pytest.mark.built
@pytest.mark.parametrize("chapter", _chapters())
def test_references_read_as_numbers(chapter):
    source = "\n".join(c.source for c in read_chapter(ROOT / "book" / f"{chapter}.md").cells
                       if c.cell_type == "markdown")
    text = _markdown(_reader(chapter))
    number = _number(chapter)
    if "{prf:ref}" in source:
        assert STATEMENT.search(text), f"{chapter}: no 'Theorem N.k'-like reference"
    own = {int(m.group(2)) for m in STATEMENT.finditer(text)}
    if re.search(r"```\{prf:(theorem|proposition|lemma)\}", source):
        assert number in own, f"{chapter}: none of its statements reads 'Kind {number}.k'"
    if "{eq}`" in source:
        assert re.search(rf"\({number}\.\d+\)", text), f"{chapter}: no '({number}.k)'"
    tags = re.findall(r"\\tag\{(\d+)\.(\d+)\}", text)
    if re.search(r"^\$\$\s*\([\w-]+\)\s*$", source, re.M):
        assert tags, f"{chapter}: numbered displays carry no \\tag"
    assert all(int(n) == number for n, _ in tags), f"{chapter}: tags {tags}"


@pytest.mark.built
def test_chapter_3_reads_as_the_page_does():
    text = _markdown(_reader("03_gated_experts"))
    assert "**Theorem 3.1 (" in text and "\\tag{3.1}" in text and "(3.1)" in text
    assert "<details>\n<summary>How this is checked</summary>" in text
    assert "Gabet *et al.*" in text, "citations read author-year"
    assert "## 3.1 " in text, "sections carry their numbers"


@pytest.mark.built
@pytest.mark.parametrize("chapter", _pages())
def test_glued_values_appear(chapter):
    html = (BUILD / "html" / "book" / f"{chapter}.html").read_text(encoding="utf-8")
    values = {unescape(v).strip() for v in GLUED.findall(html)} - {""}
    text = _markdown(_reader(chapter))
    missing = sorted(v for v in values if v not in text)
    assert not missing, f"{chapter}: glued values of the page missing: {missing[:10]}"


@pytest.mark.built
def test_a_few_glued_values_appear_in_all():
    count = 0
    for chapter in _chapters():
        html = (BUILD / "html" / "book" / f"{chapter}.html").read_text(encoding="utf-8")
        text = _markdown(_reader(chapter))
        count += sum(unescape(v) in text for v in set(GLUED.findall(html)))
    assert count >= 10, f"only {count} glued values in the reader notebooks"


@pytest.mark.built
@pytest.mark.parametrize("chapter", _pages())
def test_code_cells_are_the_chapters_setup_cell_first(chapter):
    nb = _reader(chapter)
    code = [c.source for c in nb.cells if c.cell_type == "code"]
    source = [c.source for c in read_chapter(ROOT / "book" / f"{chapter}.md").cells
              if c.cell_type == "code"]
    setup = edition.canonical_source(ROOT)
    if chapter == "intro":  # the introduction has no setup cell: its reader notebook gets it
        source = [setup, *source]
    assert code[0] == source[0] == setup, "the setup cell comes first"
    assert nb.cells[0].cell_type == "code", "the setup cell is the notebook's first cell"
    assert code == source, f"{chapter}: the code cells differ from the chapter's"


@pytest.mark.built
@pytest.mark.parametrize("chapter", _pages())
def test_launch_buttons_open_the_reader_notebook_at_this_ref(chapter):
    html = (BUILD / "html" / "book" / f"{chapter}.html").read_text(encoding="utf-8")
    assert "dropdown-launch-buttons" in html, f"{chapter}: no launch buttons"
    html = html.split("dropdown-launch-buttons", 1)[1].split("</ul>", 1)[0]  # the theme's menu
    colab = set(re.findall(r'href="(https://colab\.research\.google\.com/[^"]+)"', html))
    binder = set(re.findall(r'href="(https://mybinder\.org/[^"]+)"', html))
    urls = notebooks.launch_urls(ROOT, f"book/{chapter}")
    assert {unescape(u) for u in colab} == {urls["Colab"]}, colab
    assert {unescape(u) for u in binder} == {urls["Binder"]}, binder
    branch = f"notebooks-{_config()['repository']['branch']}"
    assert urls["Colab"].endswith(f"/blob/{branch}/book/{chapter}.ipynb")
    assert f"/{branch}?urlpath=tree/book/{chapter}.ipynb" in urls["Binder"]
    assert (READER / f"{chapter}.ipynb").is_file(), "the button's notebook was built"


# ---------------------------------------------------------------------------- a small book
CHAPTER = """---
jupytext:
  text_representation:
    format_name: myst
kernelspec:
  display_name: Python 3
  language: python
  name: python3
---

```{code-cell}
:tags: [remove-cell]

<SETUP>
```

(ch-01)=
# A chapter

```{code-cell}
from myst_nb import glue
glue("half", 0.5, display=False)
```

## Claims

```{prf:theorem} Title
:label: thm-01-t

For all $x$,

$$
x = x
$$ (eq-01-x)
```

By {prf:ref}`thm-01-t` and {eq}`eq-01-x`, the value is {glue:text}`half:.2f`.

```{admonition} How this is checked
:class: dropdown

Folded.
```

```{exercise} Warm-up (★): one
:label: ex-01-one

Do it.
```

```{solution} ex-01-one
:class: dropdown

Done.
```
"""


def test_a_small_book_gets_reader_notebooks_and_launch_buttons_to_them(tmp_path):
    """bookkit.notebooks in a Sphinx build of a one-chapter book: the reader notebook (markup
    gone, numbers, glue, folds, the setup cell first) and the launch buttons that open it."""
    from sphinx.application import Sphinx

    (tmp_path / "gmmlib").mkdir()
    (tmp_path / "gmmlib" / "__init__.py").write_text('__version__ = "1.0.dev0"\n')
    (tmp_path / "_config.yml").write_text(
        "repository:\n  url: https://github.com/o/r\n  branch: main\n")
    (tmp_path / "_toc.yml").write_text(
        "format: jb-book\nroot: index\nparts:\n  - chapters:\n      - file: book/01_a\n")
    (tmp_path / "index.md").write_text("# Book\n\n```{toctree}\n:numbered:\nbook/01_a\n```\n")
    (tmp_path / "book").mkdir()
    setup = edition.canonical_source(tmp_path)
    (tmp_path / "book" / "01_a.md").write_text(CHAPTER.replace("<SETUP>", setup))
    (tmp_path / "conf.py").write_text(
        "extensions = ['myst_nb', 'sphinx_proof', 'sphinx_exercise', 'sphinx_design', "
        "'bookkit.notebooks']\nnumfig = True\nmath_numfig = True\n"
        "myst_enable_extensions = ['dollarmath', 'amsmath', 'colon_fence']\n"
        "nb_execution_mode = 'force'\nhtml_theme = 'sphinx_book_theme'\n"
        "html_theme_options = {'repository_url': 'https://github.com/o/r', "
        "'repository_branch': 'main', 'launch_buttons': {"
        "'colab_url': 'https://colab.research.google.com', 'binderhub_url': "
        "'https://mybinder.org'}}\n")
    app = Sphinx(tmp_path, tmp_path, tmp_path / "_build" / "html", tmp_path / "_doctrees",
                 "html", status=None, warning=None, freshenv=True)
    app.build()
    nb = nbformat.read(tmp_path / "_build" / "notebooks" / "book" / "01_a.ipynb", as_version=4)
    nbformat.validate(nb)
    assert [c.source for c in nb.cells if c.cell_type == "code"] == [
        setup, 'from myst_nb import glue\nglue("half", 0.5, display=False)']
    assert nb.cells[0].source == setup
    text = _markdown(nb)
    assert not [w for w, p in MARKUP.items() if p.search(_prose(text))], text
    assert "# 1 A chapter" in text and "## 1.1 Claims" in text
    assert "**Theorem 1.1 (Title)**" in text and "\\tag{1.1}" in text
    assert "By Theorem 1.1 and (1.1), the value is 0.50." in text
    assert "<details>\n<summary>How this is checked</summary>\n\n\nFolded.\n\n</details>" in text
    assert "**Exercise 1.1 (Warm-up (★): one)**" in text
    assert "<summary>Solution to Exercise 1.1 (Warm-up (★): one)</summary>" in text
    html = (tmp_path / "_build" / "html" / "book" / "01_a.html").read_text(encoding="utf-8")
    urls = notebooks.launch_urls(tmp_path, "book/01_a")
    assert urls["Colab"].endswith("/o/r/blob/notebooks-main/book/01_a.ipynb")
    for url in urls.values():
        assert f'href="{url}"' in html, url
