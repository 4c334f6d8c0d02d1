// First reading: one switch on every chapter page hides the verification scaffolding (the
// checks' verdicts and code, "How this is checked", the paper notes) for a reader who wants
// the argument alone, and shows it again. Remembered across pages (localStorage); no kernel.
(() => {
  const KEY = "book-first-reading";
  const SCAFFOLD = ".check-verdict, .how-checked, .paper-credit";
  const root = document.documentElement;
  let on = false;
  try { on = localStorage.getItem(KEY) === "1"; } catch (e) { /* storage off: not remembered */ }
  root.classList.toggle("first-reading", on);  // set before the page is drawn: no flash
  document.addEventListener("DOMContentLoaded", () => {
    if (!document.querySelector(SCAFFOLD)) return;  // a page without checks has no switch
    const button = document.createElement("button");
    button.type = "button";
    button.className = "btn first-reading-switch";
    button.textContent = "First reading";
    button.title = "Hide the checks' verdicts and code, the 'How this is checked' boxes and "
      + "the paper notes (press again to show them); remembered across pages";
    button.setAttribute("aria-pressed", String(on));
    button.addEventListener("click", () => {
      const now = !root.classList.contains("first-reading");
      root.classList.toggle("first-reading", now);
      button.setAttribute("aria-pressed", String(now));
      try { localStorage.setItem(KEY, now ? "1" : "0"); } catch (e) { /* not remembered */ }
    });
    const place = document.querySelector(".article-header-buttons");
    if (place) place.prepend(button);
    else document.querySelector("main, article, body").prepend(button);
  });
})();
