"""Every explorer kind, and a new one, mounts live on a static page built from the cell outputs (chromium).

The toy kind of ``support.toy_kind`` (a temporary Python module and JS module) is registered by
importing it; its cell output (``text/html``) and the files ``frontend.write_modules`` writes make a
page like the web book's. The page's host must mount it from the list of kinds written into
``host.js``, draw the scaled row, and follow a key press on its slider. No book build is needed.
"""

from __future__ import annotations

import pytest
from support.browser import browser_context
from support.servers import serve
from support.toy_kind import KIND, toy_kind

import attnlib.explorers as explorers
from attnlib.explorers import frontend, registry

pytestmark = pytest.mark.slow


COUNT_CELLS = "() => [...document.querySelectorAll('.attnlib-live')].map(l => l.querySelectorAll('table.attnlib-view td').length)"


def _page(site, outputs: list[str]) -> None:
    """index.html with the cells' text/html outputs and the host, as the web book serves them."""
    page_html = (
        '<!doctype html><html lang="en"><head><meta charset="utf-8"><link rel="icon" href="data:,"><title>explorers</title></head>'
        f'<body><main>{"".join(outputs)}</main><script type="module" src="_explorers/host.js"></script></body></html>'
    )
    (site / "index.html").write_text(page_html, encoding="utf-8")


CELL_TEXTS = (
    "tds => tds.map(td => { const c = td.cloneNode(true); c.querySelectorAll('span').forEach(s => s.remove()); "
    "return c.textContent.trim(); })"
)


def test_a_toy_kind_mounts_on_a_static_page(tmp_path):
    site = tmp_path / "site"
    with toy_kind(tmp_path):
        html = explorers.toy_scale_explorer()._repr_mimebundle_()[0]["text/html"]
        frontend.write_modules(site / "_explorers")
    _page(site, [html])
    with serve(site) as base, browser_context(tmp_path / "chromium") as (context, blocker):
        page = context.new_page()
        errors = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto(base + "index.html")
        page.wait_for_function("() => document.querySelector('div.attnlib-explorer.attnlib-mounted') !== null", timeout=20_000)

        def cells() -> list[str]:  # the shown numbers (the arrow and screen-reader spans of a changed cell left out)
            return page.eval_on_selector_all(".attnlib-live table[data-view=scaled] td[data-j]", CELL_TEXTS)

        assert cells() == ["0.5000", "-1.2500", "2.0000"]
        slider = page.locator(".attnlib-live input.attnlib-toy")
        slider.focus()
        page.keyboard.press("ArrowRight")
        page.wait_for_function("() => document.querySelector('.attnlib-live .attnlib-facts').textContent.includes('times 2')")
        assert cells() == ["1.0000", "-2.5000", "4.0000"]
        assert page.evaluate("() => window.attnlibExplorers.map(e => e.kind)") == [KIND]
        _check_changed_cells(page)
        assert not errors and not blocker.blocked


#: For each shown cell of the scaled row: its class, its arrow (the ::before the stylesheet draws), its background
#: and the colour the view's style gives its value, and its screen-reader text.
CHANGED_CELLS = """() => {
  const look = JSON.parse(document.querySelector('script.attnlib-state').textContent).look;
  return [...document.querySelectorAll('.attnlib-live table[data-view=scaled] td[data-j]')].map(td => {
    const v = Number(td.lastChild.data), k = Math.round(255 * (v - -2.5) / (4 - -2.5));
    const want = document.createElement('div');
    want.style.background = look.lut[k];
    return {cls: td.className, arrow: getComputedStyle(td, '::before').content,
            background: getComputedStyle(td).backgroundColor, want: want.style.backgroundColor,
            spoken: td.querySelector('.attnlib-sr').textContent};
  });
}"""


def _check_changed_cells(page) -> None:
    """After a key press the changed cells are outlined with an arrow up or down (hidden from screen readers) on
    the colour of their value; once the reader pauses (250 ms) each says what it was."""
    page.wait_for_function("() => document.querySelector('.attnlib-live table[data-view=scaled] .attnlib-sr').textContent !== ''")
    got = page.evaluate(CHANGED_CELLS)
    assert [c["cls"] for c in got] == ["attnlib-changed attnlib-up", "attnlib-changed attnlib-down", "attnlib-changed attnlib-up"]
    assert [c["arrow"] for c in got] == ['"\u25b2" / ""', '"\u25bc" / ""', '"\u25b2" / ""'], got
    assert [c["spoken"] for c in got] == [f"changed from {old}, now " for old in ("0.5000", "-1.2500", "2.0000")]
    # the view colours the row on its own range, -2.5 to 4 (both colours as the browser computes them: rgb(...))
    assert all(c["background"] == c["want"] and c["want"].startswith("rgb(") for c in got), got


def test_every_registered_kind_mounts_without_an_error(tmp_path):
    """One page with every constructor's output: all mount, none logs an error, none asks another host."""
    site = tmp_path / "site"
    made = [fn() for fn in registry.factories().values()]
    frontend.write_modules(site / "_explorers")
    _page(site, [ex._repr_mimebundle_()[0]["text/html"] for ex in made])
    with serve(site) as base, browser_context(tmp_path / "chromium") as (context, blocker):
        page = context.new_page()
        errors = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.goto(base + "index.html")
        page.wait_for_function("(n) => document.querySelectorAll('div.attnlib-explorer.attnlib-mounted').length === n", arg=len(made))
        kinds = page.evaluate("() => window.attnlibExplorers.map(e => e.kind)")
        assert sorted(set(kinds)) == sorted(registry.kinds()) and len(kinds) == len(made)
        tables = page.evaluate(
            "() => [...document.querySelectorAll('.attnlib-live')].map(l => l.querySelectorAll('table.attnlib-view td').length)"
        )
        assert all(t > 0 for t in tables), tables
        assert not errors and not blocker.blocked, errors


def test_the_live_region_reads_the_weights_once_the_reader_pauses(tmp_path):
    """The attention explorer's screen-reader line (its polite live region), written 250 ms after the last key
    press: the change and every query row's weights, the same numbers as the weights table shows."""
    site = tmp_path / "site"
    frontend.write_modules(site / "_explorers")
    _page(site, [explorers.attention_explorer()._repr_mimebundle_()[0]["text/html"]])
    with serve(site) as base, browser_context(tmp_path / "chromium") as (context, blocker):
        page = context.new_page()
        page.goto(base + "index.html")
        page.wait_for_function("() => document.querySelector('div.attnlib-explorer.attnlib-mounted') !== null", timeout=20_000)
        page.locator(".attnlib-live input.attnlib-W_Q-0-0").focus()
        for _ in range(3):
            page.keyboard.press("ArrowRight")
        region = ".attnlib-live .attnlib-live-region"
        page.wait_for_function(f"() => document.querySelector('{region}').textContent.includes('to 1.15')")
        spoken = page.locator(region).text_content()
        rows = page.eval_on_selector_all(
            ".attnlib-live table[data-view=weights] tbody tr",
            "trs => trs.map(tr => [tr.querySelector('th').textContent, "
            "[...tr.querySelectorAll('td[data-j]')].map(td => td.lastChild.data).join(', ')])",
        )
        want = "; ".join(f"{token}: {values}" for token, values in rows)
        assert spoken == f"Last change: W_Q[1,1] moved from 1.10 to 1.15. Weights by query row: {want}.", spoken
        assert len(rows) == 3 and not blocker.blocked
