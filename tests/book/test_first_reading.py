"""The first-reading switch: on a chapter page it hides the verification scaffolding (the
checks' verdicts and code, "How this is checked", the paper notes) and shows it again, is
remembered across pages, needs no kernel, and the page stays accessible with it on."""

from __future__ import annotations

from pathlib import Path

import pytest

from ..browser import browser_page, chromium_path, run_axe, serve, settle, wait_for_math

pytestmark = pytest.mark.built
ROOT = Path(__file__).resolve().parents[2]
HTML = ROOT / "_build" / "html"
SCAFFOLD = ".check-verdict, .how-checked, .paper-credit"


def _visible(page, selector: str) -> int:
    """How many elements matching ``selector`` take up room on the page."""
    return page.evaluate("""(s) => [...document.querySelectorAll(s)]
        .filter(e => e.getClientRects().length > 0).length""", selector)


def _open(page, base: str, name: str, math: bool = True) -> None:
    """Open a chapter; with ``math``, wait until MathJax has typeset it (the switch and what it
    hides do not depend on MathJax: the pages the switch is only read on need not wait)."""
    assert page.goto(f"{base}/book/{name}.html", wait_until="load").ok
    if math:
        wait_for_math(page)


def test_the_switch_hides_the_scaffolding_on_every_chapter_and_remembers(built_chapters):
    if chromium_path() is None:
        pytest.skip("no Chromium installed: `apt-get install chromium` to run this test")
    with serve(HTML) as base, browser_page() as page:
        first, *others = built_chapters
        _open(page, base, first)
        switch = page.locator("button.first-reading-switch")
        assert switch.count() == 1 and switch.get_attribute("aria-pressed") == "false"
        shown = _visible(page, SCAFFOLD)
        assert shown > 0, f"{first}: no scaffolding visible before the switch"
        switch.click()
        assert switch.get_attribute("aria-pressed") == "true"
        assert _visible(page, SCAFFOLD) == 0
        assert _visible(page, "div.cell:has(.check-verdict) > .cell_input") == 0
        assert _visible(page, "figure, .math") > 0, "the argument itself stays"
        settle(page)
        serious = [v for v in run_axe(page)["violations"] if v["impact"] in ("serious",
                                                                            "critical")]
        assert not serious, serious
        for name in others:  # remembered: every other chapter opens with it on
            _open(page, base, name, math=False)
            assert page.locator("button.first-reading-switch").get_attribute(
                "aria-pressed") == "true", name
            assert _visible(page, SCAFFOLD) == 0, f"{name}: scaffolding shown"
        page.locator("button.first-reading-switch").click()  # and it shows it again
        assert _visible(page, SCAFFOLD) > 0


@pytest.fixture(scope="module")
def built_chapters() -> list[str]:
    if not (HTML / "index.html").is_file():
        pytest.fail("build the book first (make test does)")
    return sorted(p.stem for p in (HTML / "book").glob("[0-9][0-9]_*.html"))
