"""The browser tests' helpers: the page after its animations, axe-core's report.

The browser itself (the system's Chromium with the network closed: only the local server
answers, MathJax comes with the book) is ``bookkit.browser``'s, shared with ``make pdf``.
"""

from __future__ import annotations

from bookkit.browser import browser_page, chromium_path, serve, wait_for_math

__all__ = [
    "browser_page",
    "chromium_path",
    "serve",
    "wait_for_math",
    "settle",
    "run_axe",
    "AXE_FAILING",
    "DARK_MODE_RULES",
]


def settle(page, timeout_ms: int = 5_000) -> None:
    """Wait until every CSS animation and transition on the page has finished.

    Opening a dropdown starts the theme's fade-in (tens of animations on a chapter): axe-core
    run in the middle of it measures half-transparent text and reports contrast failures that a
    reader never sees.
    """
    page.evaluate(
        """(ms) => Promise.race([
        Promise.all(document.getAnimations().map(a => a.finished.catch(() => null))),
        new Promise(r => setTimeout(r, ms))])""",
        timeout_ms,
    )


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
    violations = [
        {
            "id": v["id"],
            "impact": v["impact"],
            "nodes": len(v["nodes"]),
            "help": v["help"],
            "targets": [", ".join(map(str, n["target"])) for n in v["nodes"][:5]],
        }
        for v in results["violations"]
    ]
    return {"rules": applied, "violations": violations}
