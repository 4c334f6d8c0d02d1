#!/usr/bin/env python3
"""Print the whole book to one PDF (``make pdf``), with Chromium.

``make pdf`` first builds the HTML book (every chapter executed). This script then opens
the first chapter's page in the system's headless Chromium (MathJax served from the local
copy used by ``tests/browser.py``, no network), replaces its article by the articles of all
pages in table-of-contents order (they all live in ``book/``, so their relative links and
images keep working), lets MathJax typeset the whole document, opens every solution
dropdown, and prints A4 pages with backgrounds (theorem boxes, figures) to
``_build/pdf/book.pdf``. The API reference and the execution table are left out.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.browser import browser_page, serve, wait_for_math  # noqa: E402

SKIP = {"api", "exec_status"}
PRINT_CSS = """
.bd-header, .bd-sidebar-primary, .bd-sidebar-secondary, .bd-footer-article, .prev-next-area,
.bd-header-article, .header-article-items, #pst-back-to-top, .bd-footer, .bd-search,
.headerlink, .toggle-details__summary .tb-icon, .onlyprint { display: none !important; }
.bd-main .bd-content .bd-article-container, .bd-page-width, .bd-main .bd-content { max-width: 100% !important; }
/* the theme hides the article's own h1 in print (its print header shows it instead): show every chapter's */
article.bd-article h1, article.bd-article .book-part h1 { display: block !important; }
.book-part { break-before: page; }
.book-part:first-child { break-before: auto; }
figure, .cell_output img, div.proof, div.theorem, div.lemma, div.proposition, table { break-inside: avoid; }
"""

ASSEMBLE_JS = """
async (pages) => {
  const article = document.querySelector('article.bd-article') || document.querySelector('main');
  const parts = [];
  for (const page of pages) {
    const text = await (await fetch(page + '.html')).text();
    const doc = new DOMParser().parseFromString(text, 'text/html');
    const body = doc.querySelector('article.bd-article') || doc.querySelector('main');
    parts.push('<section class="book-part">' + body.innerHTML + '</section>');
  }
  article.innerHTML = parts.join('\\n');
  document.querySelectorAll('details').forEach(d => d.open = true);
  MathJax.typesetClear();
  await MathJax.typesetPromise();
  await Promise.all([...document.images].map(i => { i.loading = 'eager'; return i.decode().catch(() => null); }));
  return document.querySelectorAll('mjx-container').length;
}
"""


def toc_pages() -> list[str]:
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    files = [toc["root"]] + [c["file"] for part in toc["parts"] for c in part.get("chapters", [])]
    return [f.split("/")[-1] for f in files if f.split("/")[-1] not in SKIP]


def main() -> int:
    html = ROOT / "_build" / "html"
    pages = toc_pages()
    missing = [p for p in pages if not (html / "book" / f"{p}.html").is_file()]
    if missing:
        print(f"error: pages missing from _build/html: {missing} (run `make book` first)", file=sys.stderr)
        return 1
    out = ROOT / "_build" / "pdf" / "book.pdf"
    out.parent.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    # a chapter (its MyST source book/NN_*.md) has mathematics: its page loads MathJax
    first_with_math = next(p for p in pages if p[:2].isdigit() and (ROOT / "book" / f"{p}.md").is_file())
    with serve(html) as base, browser_page(width=1100, height=1400) as page:
        page.goto(f"{base}/book/{first_with_math}.html", wait_until="load")
        if not wait_for_math(page, timeout_ms=120_000):
            print("error: the template page loads no MathJax", file=sys.stderr)
            return 1
        n_math = page.evaluate(ASSEMBLE_JS, pages)
        page.add_style_tag(content=PRINT_CSS)
        page.emulate_media(media="print")
        page.pdf(path=str(out), format="A4", print_background=True, scale=0.78,
                 margin={"top": "15mm", "bottom": "15mm", "left": "12mm", "right": "12mm"},
                 display_header_footer=True, header_template="<span></span>",
                 footer_template='<div style="font-size:8px;width:100%;text-align:center;">'
                                 '<span class="pageNumber"></span> / <span class="totalPages"></span></div>')
    print(f"wrote {out.relative_to(ROOT)}: {len(pages)} pages of the book, {n_math} typeset formulas, "
          f"{out.stat().st_size / 2**20:.1f} MiB, in {time.perf_counter() - start:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
