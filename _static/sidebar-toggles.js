// The ☰ button (chapter list) and the "contents" button (this page's sections) of the article header.
//
// pydata-sphinx-theme 0.17 binds its sidebar dialogs to the first `.primary-toggle` and the first
// `.secondary-toggle` of the page only (document.querySelector; its issue #2451), and sphinx-book-theme
// 1.3 binds its wide-screen "collapse the sidebar" to the first `.primary-toggle` the same way. Since
// 0.17 the theme's own header carries a `.primary-toggle` before the book theme's buttons, and the
// book theme hides it: the buttons a reader sees did nothing. On a phone there was then no way to
// reach the chapter list; at 1280 px the sidebar could not be collapsed.
//
// sphinx-book-theme 1.3.0 requires exactly pydata-sphinx-theme 0.17.1, and the next book theme needs
// Sphinx 8, which Jupyter Book 1 does not allow: no version without the bug can be pinned. Both are
// pinned in requirements.txt, and this file hands a click on any later toggle to the first one,
// whose handlers (the phone's dialog, the wide screen's collapse) do the work. Remove it when the
// themes bind every toggle; tests/web/test_web_sidebar.py fails if the buttons stop working.
// Jupyter Book adds every .js file in _static/ to every page.
(() => {
  const forward = (selector) => {
    const [first, ...others] = document.querySelectorAll(selector);
    for (const button of others) {
      button.addEventListener("click", (event) => {
        event.preventDefault();
        event.stopPropagation();
        first.click();
      });
    }
  };
  const start = () => {
    forward(".primary-toggle");
    forward(".secondary-toggle");
  };
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
