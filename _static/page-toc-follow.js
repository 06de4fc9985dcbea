// The "Contents" list of a page (its sections, in the right-hand sidebar) highlights the section in view.
//
// pydata-sphinx-theme 0.17 moves the highlight only when a section's heading enters a band at the top
// of the window (from under the header to 30 % down). A heading that crosses the band between two
// scroll events, as with Page Down, the space bar or a fast wheel, never enters it: the highlight then
// stayed on the section before (chapter 4: on 4.3 while 4.4, 4.5 and 4.6 were read). Here the
// highlighted entry is, after every scroll, the last section whose heading is above that line, marked
// the way the theme marks it (the link's `active` class and aria-current, `active` on the entries
// around it). For a second after a click on an entry (the theme's own pause) the clicked entry stays.
// Jupyter Book adds every .js file in _static/ to every page; tests/web/test_web_front.py checks it.
(() => {
  const start = () => {
    const nav = document.querySelector("#pst-page-toc-nav");
    if (!nav) return;
    const entries = [...nav.querySelectorAll(".toc-entry")];
    const pairs = [];
    for (const link of nav.querySelectorAll("a")) {
      const id = link.hash.length > 1 ? decodeURIComponent(link.hash.slice(1)) : "";
      const section = id && document.getElementById(id);
      if (section) pairs.push([link, section.querySelector(":is(h1,h2,h3,h4,h5,h6)") || section]);
    }
    if (!pairs.length) return;
    let hold = 0, queued = false;
    const mark = (link) => {
      for (const [a] of pairs) {
        if (a === link) { a.classList.add("active"); a.setAttribute("aria-current", "true"); }
        else { a.classList.remove("active"); a.removeAttribute("aria-current"); }
      }
      for (const entry of entries) entry.classList.toggle("active", entry.contains(link));
    };
    const follow = () => {
      queued = false;
      if (Date.now() < hold) return;
      const header = document.querySelector("#pst-header");
      const top = header ? header.getBoundingClientRect().height : 0;
      const line = top + 0.3 * (window.innerHeight - top);
      let current = null;
      for (const [link, heading] of pairs) if (heading.getBoundingClientRect().top <= line) current = link;
      if (current && !current.classList.contains("active")) mark(current);
    };
    window.addEventListener("scroll", () => {
      if (!queued) { queued = true; requestAnimationFrame(follow); }
    }, { passive: true });
    nav.addEventListener("click", (event) => { if (event.target.closest("a")) hold = Date.now() + 1000; });
    window.addEventListener("hashchange", () => { hold = Date.now() + 1000; });
  };
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
