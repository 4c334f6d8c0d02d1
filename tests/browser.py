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
    # containers (CI's python:3.11 image) give /dev/shm 64 MB, too little for long pages
    "--disable-dev-shm-usage",
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
def browser_page(width: int = 1280, height: int = 1600, color_scheme: str = "light"):
    """A Playwright page in headless Chromium: MathJax served locally, no other outside request.

    ``color_scheme`` ("light" or "dark") is the reader's system preference, which the theme's
    default "auto" mode follows.
    """
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
            context = browser.new_context(viewport={"width": width, "height": height},
                                          color_scheme=color_scheme)
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


def settle(page, timeout_ms: int = 5_000) -> None:
    """Wait until every CSS animation and transition on the page has finished.

    Opening a dropdown starts the theme's fade-in (tens of animations on a chapter): axe-core
    run in the middle of it measures half-transparent text and reports contrast failures that a
    reader never sees.
    """
    page.evaluate("""(ms) => Promise.race([
        Promise.all(document.getAnimations().map(a => a.finished.catch(() => null))),
        new Promise(r => setTimeout(r, ms))])""", timeout_ms)


#: axe-core's impacts that fail the accessibility test (minor and moderate are reported only)
AXE_FAILING = ("serious", "critical")


#: the rules whose outcome depends on colours: the ones run again in the theme's dark mode
DARK_MODE_RULES = ("color-contrast", "link-in-text-block")


def run_axe(page, rules: tuple[str, ...] | None = None) -> dict:
    """Run axe-core (the copy shipped in the axe-playwright-python wheel: no download) on the
    page as it is now. Returns ``{"rules": checks run, "violations": [{id, impact, nodes,
    help, targets}]}``; "checks run" counts the rules that applied to the page (passed, violated
    or needing review), not the rules that found nothing to check. ``rules`` limits the run to
    those axe rule ids (default: all of axe's rules, WCAG and best practices).
    """
    from axe_playwright_python.sync_playwright import Axe

    options: dict = {"resultTypes": ["violations"]}
    if rules:
        options["runOnly"] = {"type": "rule", "values": list(rules)}
    results = Axe().run(page, options=options).response
    applied = len(results["passes"]) + len(results["violations"]) + len(results["incomplete"])
    violations = [{"id": v["id"], "impact": v["impact"], "nodes": len(v["nodes"]), "help": v["help"],
                   "targets": [", ".join(map(str, n["target"])) for n in v["nodes"][:5]]}
                  for v in results["violations"]]
    return {"rules": applied, "violations": violations}
