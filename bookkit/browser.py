"""The built book in headless Chromium with the network closed (it reads offline): tests, PDF."""

import contextlib
import functools
import http.server
import shutil
import sys
import threading
from pathlib import Path

from . import toc


def chromium_path() -> str | None:
    """The system's Chromium (Debian's ``chromium``), or ``None``."""
    names = ("chromium", "chromium-browser", "google-chrome")
    return next(filter(None, map(shutil.which, names)), None)


@contextlib.contextmanager
def serve(folder: Path):
    """Serve ``folder`` over HTTP on the loopback interface; yields the base URL."""
    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(Quiet, directory=str(folder)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


class OutsideRequest(RuntimeError):
    """A page asked for something outside the book (a CDN, a web font, an analytics script)."""


#: what a page may load: the local server, files, and the browser's own in-memory URLs
LOCAL = ("http://127.0.0.1", "http://localhost", "file:", "data:", "blob:", "about:")


@contextlib.contextmanager
def browser_page(width: int = 1280, height: int = 1600, color_scheme: str = "light"):
    """A Playwright page in headless Chromium (``color_scheme``: the reader's preference), with
    the network closed: every request that is not local is aborted and recorded, and leaving
    the block raises :class:`OutsideRequest` naming them (the book must read offline)."""
    from playwright.sync_api import sync_playwright

    exe = chromium_path()
    if exe is None:
        raise FileNotFoundError("no Chromium on this machine (apt-get install chromium)")
    outside: list[str] = []

    def only_local(route):
        url = route.request.url
        if url.startswith(LOCAL):
            return route.continue_()
        try:
            page_url = route.request.frame.url
        except Exception:  # a worker's request has no frame
            page_url = "a worker"
        outside.append(f"{page_url} asked for {url}")
        route.abort("blockedbyclient")

    with sync_playwright() as p:  # CI's container gives /dev/shm 64 MB: too little
        browser = p.chromium.launch(executable_path=exe, args=[
            "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
            "--disable-background-networking", "--disable-component-update",
            "--disable-sync", "--disable-dev-shm-usage"])
        try:
            context = browser.new_context(viewport={"width": width, "height": height},
                                          color_scheme=color_scheme, service_workers="block")
            context.route("**/*", only_local)
            page = context.new_page()
            page.outside_requests = outside  # what the pages asked of the network, so far
            yield page
        finally:
            browser.close()
    if outside:  # a caller that checks page by page empties the list as it goes
        raise OutsideRequest(f"{len(outside)} requests outside the book (it must read "
                             "offline): " + "; ".join(sorted(set(outside))[:10]))


def wait_for_math(page, timeout_ms: int = 30_000) -> bool:
    """Wait until MathJax has typeset the page; ``False`` if the page loads no MathJax."""
    if not page.evaluate("() => !!document.querySelector('script[src*=\"mathjax\"]')"):
        return False
    page.wait_for_function("() => window.MathJax?.startup?.promise", timeout=timeout_ms)
    page.evaluate("() => MathJax.startup.promise")
    return True


# every page's article in one document, typeset, solutions open, images loaded
ASSEMBLE = """async (pages) => {
  const parts = await Promise.all(pages.map(async (page) => {
    const html = await (await fetch(page + '.html')).text();
    const doc = new DOMParser().parseFromString(html, 'text/html');
    const body = doc.querySelector('article.bd-article').innerHTML;
    return `<section class="book-part">${body}</section>`;
  }));
  document.querySelector('article.bd-article').innerHTML = parts.join('\\n');
  document.querySelectorAll('details').forEach(d => d.open = true);
  MathJax.typesetClear();
  await MathJax.typesetPromise();
  await Promise.all([...document.images].map(i => {
    i.loading = 'eager'; return i.decode().catch(() => null); }));
  return document.querySelectorAll('mjx-container').length;
}"""


def main(argv: list[str] | None = None) -> int:
    """``make pdf``: the built book but its API and execution pages as A4 ``book.pdf``."""
    import argparse

    parser = argparse.ArgumentParser(
        prog="python -m bookkit pdf", description="Print the book built in _build/html (but "
        "its API and execution pages) as one A4 PDF, _build/pdf/book.pdf, with the system's "
        "Chromium. `make pdf` builds the book first.")
    parser.add_argument("--html", type=Path, default=Path("_build") / "html",
                        help="the built HTML (default: _build/html)")
    parser.add_argument("--out", type=Path, default=Path("_build") / "pdf" / "book.pdf",
                        help="the PDF to write (default: _build/pdf/book.pdf)")
    args = parser.parse_args(argv)
    html, out = args.html, args.out
    pages = [p for p in toc.pages() if toc.name(p) not in ("api", "exec_status")]
    missing = [p for p in pages if not (html / f"{p}.html").is_file()]
    if missing:
        print(f"error: {html} lacks {missing[0]}.html and {len(missing) - 1} more of the "
              f"{len(pages)} pages: build the book first (`make book`)", file=sys.stderr)
        return 1
    if chromium_path() is None:
        print("error: no Chromium on this machine: install it (`sudo apt-get install "
              "chromium`)", file=sys.stderr)
        return 1
    out.parent.mkdir(parents=True, exist_ok=True)
    first = toc.chapters()[0]  # a chapter has mathematics: MathJax loads
    with serve(html) as base, browser_page(width=1100, height=1400) as page:
        page.goto(f"{base}/{first}.html", wait_until="load")
        wait_for_math(page, timeout_ms=120_000)
        n_math = page.evaluate(ASSEMBLE, [toc.name(p) for p in pages])
        page.emulate_media(media="print")
        page.pdf(path=str(out), format="A4", print_background=True, scale=0.78,
                 margin={"top": "15mm", "bottom": "15mm", "left": "12mm", "right": "12mm"},
                 display_header_footer=True, header_template="<span></span>",
                 footer_template='<div style="font-size:8px;width:100%;text-align:center;">'
                 '<span class="pageNumber"></span> / <span class="totalPages"></span></div>')
    print(f"wrote {out}: {len(pages)} pages, {n_math} formulas")
    return 0
