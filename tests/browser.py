"""Open the built book in a real, headless Chromium, with MathJax served from a local copy.

Shared by the real-browser test (``tests/test_browser.py``) and ``make pdf``
(``scripts/make_pdf.py``). Nothing is downloaded: the browser is the system's Chromium
(Debian's ``chromium`` package), MathJax 3 comes from the ``django-static-mathjax`` wheel in
``requirements.txt``, and every request that would leave this machine is refused.
"""

from __future__ import annotations

import contextlib
import functools
import http.server
import shutil
import threading
from pathlib import Path
from typing import Iterator

MATHJAX_CDN = "**/npm/mathjax@3/es5/**"
CHROMIUM_ARGS = [
    "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]


def chromium_path() -> str | None:
    """The system's Chromium, or ``None`` when it is not installed."""
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    return None


def local_mathjax() -> Path:
    """The folder holding MathJax 3's ``es5`` build (from the django-static-mathjax wheel)."""
    import mathjax  # the django-static-mathjax package

    folder = Path(mathjax.__file__).parent / "static" / "mathjax" / "es5"
    if not (folder / "tex-mml-chtml.js").is_file():
        raise FileNotFoundError(f"no MathJax build in {folder}")
    return folder


@contextlib.contextmanager
def serve(folder: Path) -> Iterator[str]:
    """Serve ``folder`` over HTTP on the loopback interface; yields the base URL."""

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

    handler = functools.partial(Quiet, directory=str(folder))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@contextlib.contextmanager
def browser_page(width: int = 1280, height: int = 1600):
    """A Playwright page in headless Chromium: MathJax served locally, no other outside request."""
    from playwright.sync_api import sync_playwright

    exe = chromium_path()
    if exe is None:
        raise FileNotFoundError("no Chromium on this machine (apt-get install chromium)")
    mathjax_dir = local_mathjax()

    def fulfil_mathjax(route):
        rel = route.request.url.split("/es5/", 1)[1].split("?", 1)[0]
        path = mathjax_dir / rel
        if path.is_file():
            route.fulfill(path=str(path))
        else:
            route.fulfill(status=404, body="")

    def only_local(route):
        url = route.request.url
        if url.startswith(("http://127.0.0.1", "file://", "data:", "blob:", "about:")):
            route.continue_()
        else:
            route.abort()

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=exe, args=CHROMIUM_ARGS)
        try:
            context = browser.new_context(viewport={"width": width, "height": height})
            context.route("**/*", only_local)
            context.route(MATHJAX_CDN, fulfil_mathjax)  # registered last: matched first
            yield context.new_page()
        finally:
            browser.close()


def wait_for_math(page, timeout_ms: int = 30_000) -> bool:
    """Wait until MathJax has loaded and typeset the page; ``False`` if the page loads no MathJax.

    Sphinx adds MathJax only to pages that contain mathematics.
    """
    if not page.evaluate("() => !!document.querySelector('script[src*=\"mathjax\"]')"):
        return False
    page.wait_for_function("() => window.MathJax && MathJax.startup && MathJax.startup.promise",
                           timeout=timeout_ms)
    page.evaluate("() => MathJax.startup.promise")
    return True
