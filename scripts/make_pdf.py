#!/usr/bin/env python3
"""Print the whole book to one PDF (``make pdf``): Chromium prints the single-page HTML.

``make pdf`` first builds ``_build/singlehtml`` (every chapter executed, as for the HTML
book); this script opens it in the system's headless Chromium, with MathJax served from the
local copy that ``tests/browser.py`` uses, waits for every formula to be typeset, and prints
A4 pages with backgrounds (theorem boxes, figures) to ``_build/pdf/book.pdf``.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.browser import browser_page, serve, wait_for_math  # noqa: E402

PRINT_CSS = """
@media print {
  .bd-header, .bd-sidebar-primary, .bd-sidebar-secondary, .bd-footer-article, .prev-next-area,
  .header-article, .bd-header-article, .article-header-buttons, #pst-back-to-top, .bd-footer { display: none !important; }
  .bd-main .bd-content .bd-article-container { max-width: 100% !important; }
  .bd-page-width { max-width: 100% !important; }
  details.dropdown { display: block; }
  figure, .cell_output img, div.proof, div.theorem { break-inside: avoid; }
}
"""


def main() -> int:
    html = ROOT / "_build" / "singlehtml"
    index = html / "index.html"
    if not index.is_file():
        print("error: _build/singlehtml/index.html is missing (run `make pdf`)", file=sys.stderr)
        return 1
    out = ROOT / "_build" / "pdf" / "book.pdf"
    out.parent.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    with serve(html) as base, browser_page(width=1100, height=1400) as page:
        page.goto(f"{base}/index.html", wait_until="load")
        wait_for_math(page, timeout_ms=120_000)
        page.add_style_tag(content=PRINT_CSS)
        page.evaluate("() => document.querySelectorAll('details').forEach(d => d.open = true)")
        page.evaluate("async () => { await Promise.all([...document.images].map(i => i.decode().catch(() => null))); }")
        page.emulate_media(media="print")
        page.pdf(path=str(out), format="A4", print_background=True,
                 margin={"top": "16mm", "bottom": "16mm", "left": "14mm", "right": "14mm"},
                 display_header_footer=True, header_template="<span></span>",
                 footer_template='<div style="font-size:8px;width:100%;text-align:center;">'
                                 '<span class="pageNumber"></span> / <span class="totalPages"></span></div>')
    print(f"wrote {out.relative_to(ROOT)} ({out.stat().st_size / 2**20:.1f} MiB) in {time.perf_counter() - start:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
