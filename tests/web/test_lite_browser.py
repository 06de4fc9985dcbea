"""The JupyterLite site in a real browser: a chapter opens and its Pyodide kernel runs code.

Headless Debian ``/usr/bin/chromium`` (never ``playwright install``), driven by
the ``playwright`` package, over a copy of the built lite site served on
127.0.0.1; every request to another host fails and is recorded.

What runs: JupyterLab (lite) opens ``chapters/01-running-example.ipynb``, the
Pyodide 314.0.6 runtime (npm ``pyodide``) starts in the kernel's worker,
the kernel installs its own start-up packages, the book's preloaded attnlib and
ipywidgets wheels are installed from the site without ``%pip``, a pure-Python
cell typed into the notebook runs, an ipywidgets slider renders live, and
attnlib's own front-end module of the scaling explorer, loaded from the
preloaded wheel's files, runs as an anywidget (anywidget, psygnal and
typing-extensions preloaded, anywidget's lab extension in the site): a key
press on its d_k slider recomputes the weights in the page.

What does not run here: anything that imports numpy, matplotlib or sympy,
including ``import attnlib`` itself, so none of the book's explorers with
attnlib's own Python model can run here. Their browser builds come from the Pyodide
CDN when a reader opens the page, and neither the CDN nor a browser build of
numpy or matplotlib on PyPI is reachable from this machine
(see tests/lite_support.py for exactly what the copy changes).
"""

from __future__ import annotations

import json
import shutil
import time
from contextlib import ExitStack
from importlib.metadata import version

import pytest
from support.browser import BLOCK_OTHER_HOSTS, CHROMIUM, CHROMIUM_ARGS, Blocker, require_chromium
from support.lite import offline_lite_site
from support.paths import ARTIFACTS, ROOT
from support.servers import serve

pytestmark = pytest.mark.slow

NOTEBOOK = "chapters/01-running-example.ipynb"
CELL = (
    "import sys, importlib.util as u, importlib.metadata as m\n"
    "print('lite-ok', sys.platform, sum(k * k for k in range(10)), u.find_spec('attnlib') is not None, "
    "m.version('attnlib'), m.version('ipywidgets'))"
)
WIDGET_CELL = "import ipywidgets\nipywidgets.IntSlider(value=3, min=0, max=9, description='k')"
# attnlib's own front-end module for the scaling explorer, as an anywidget, without importing attnlib
# (its package imports numpy, which cannot load offline): frontend.py is loaded from the installed wheel's
# files, and the explorer's data is a small hand-made sample instead of attnlib's seeded one.
ANYWIDGET_CELL = (
    "import importlib.util as u, anywidget, traitlets\n"
    "spec = u.spec_from_file_location('fe', u.find_spec('attnlib').submodule_search_locations[0] + '/explorers/frontend.py')\n"
    "fe = u.module_from_spec(spec); spec.loader.exec_module(fe)\n"
    "look = {'lut': ['#00224e'] * 128 + ['#fee838'] * 128, 'text': ['white'] * 128 + ['black'] * 128, 'decimals': 4}\n"
    "sample = {'raw_scores': [2.0, 0.0, 1.0, -1.0, 0.5, 0.0], 'spread_raw': 1.0, 'spread_scaled': 1.0}\n"
    "Live = type('Live', (anywidget.AnyWidget,), {'_esm': fe.module_source('scaling'), '_css': fe.css_source(), "
    "'kind': traitlets.Unicode('scaling').tag(sync=True), 'look': traitlets.Dict(look).tag(sync=True), "
    "'dk': traitlets.Int(1).tag(sync=True), 'dk_choices': traitlets.List([1, 4]).tag(sync=True), "
    "'samples': traitlets.Dict({'1': sample, '4': sample}).tag(sync=True)})\n"
    "live = Live()\nlive"
)


def _title() -> str:
    """The chapter's title, from the first markdown cell of the committed notebook."""
    source = json.loads((ROOT / NOTEBOOK).read_text())["cells"][0]["source"]
    return next(line for line in "".join(source).splitlines() if line.startswith("# "))[2:].strip()


def _poll(read, done, seconds: float = 30.0) -> str:
    """Read a value from the page until ``done(value)`` or the time is up; return the last value read."""
    deadline = time.monotonic() + seconds
    value = read()
    while not done(value) and time.monotonic() < deadline:
        time.sleep(0.25)
        value = read()
    return value


@pytest.fixture(scope="session")
def lite_run(web_html, tmp_path_factory) -> dict:
    require_chromium()
    from playwright.sync_api import sync_playwright

    site = tmp_path_factory.mktemp("lite-offline") / "lite"
    summary = offline_lite_site(web_html / "lite", site)
    stack = ExitStack()
    base = stack.enter_context(serve(site))
    blocked: list[str] = []
    console: list[str] = []
    profile = tmp_path_factory.mktemp("chromium-profile")
    result: dict = {"summary": summary, "blocked": blocked, "console": console}

    record = Blocker(blocked)  # chromium fails every other host (BLOCK_OTHER_HOSTS); this records them

    try:
        with sync_playwright() as p:
            context = p.chromium.launch_persistent_context(
                str(profile), executable_path=str(CHROMIUM), headless=True, args=[*CHROMIUM_ARGS, BLOCK_OTHER_HOSTS]
            )
            try:
                context.on("request", record)
                page = context.new_page()
                page.on("console", lambda m: console.append(f"{m.type}: {m.text}"))
                start = time.perf_counter()
                page.goto(base + f"lab/index.html?path={NOTEBOOK}")
                page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=120_000)
                result["open_seconds"] = time.perf_counter() - start
                # the first cell's markdown renders a moment after the cell appears
                result["first_cell"] = _poll(lambda: page.locator(".jp-Notebook .jp-Cell").first.inner_text(), lambda t: _title() in t)
                # a new cell above the first one, typed and run as a reader would
                page.click(".jp-Notebook .jp-Cell .jp-InputPrompt >> nth=0")
                page.keyboard.press("Escape")
                page.keyboard.press("a")
                page.keyboard.press("Enter")
                page.keyboard.type(CELL)
                page.keyboard.press("Shift+Enter")
                output = page.wait_for_selector(".jp-Notebook .jp-Cell >> nth=0 >> .jp-OutputArea-output", timeout=300_000)
                result["output"] = output.inner_text()
                result["kernel_seconds"] = time.perf_counter() - start
                # the tab's tooltip names the file's path (filled in once the document has loaded)
                tab = page.locator(".lm-DockPanel-tabBar .lm-TabBar-tab.lm-mod-current").first
                result["tab"] = _poll(lambda: tab.get_attribute("title") or "", lambda t: NOTEBOOK in t)
                page.click(".jp-Notebook .jp-Cell .jp-InputPrompt >> nth=0")
                page.keyboard.press("Escape")
                page.keyboard.press("b")
                page.keyboard.press("Enter")
                page.keyboard.type(WIDGET_CELL)
                page.keyboard.press("Shift+Enter")
                slider = page.wait_for_selector(".jp-Notebook .jp-Cell >> nth=1 >> .widget-slider", timeout=120_000)
                result["slider"] = slider.inner_text()
                # the explorers' front end: anywidget's lab extension loads attnlib's module, which draws the panel
                page.click(".jp-Notebook .jp-Cell .jp-InputPrompt >> nth=1")
                page.keyboard.press("Escape")
                page.keyboard.press("b")
                page.keyboard.press("Enter")
                page.keyboard.type(ANYWIDGET_CELL)
                page.keyboard.press("Shift+Enter")
                try:
                    panel = page.wait_for_selector(".jp-Notebook .attnlib-live .attnlib-panel", timeout=120_000)
                except Exception:
                    cell = page.locator(".jp-Notebook .jp-Cell >> nth=2")
                    shot = ARTIFACTS / "lite-explorer-failure.png"
                    page.screenshot(path=str(shot), full_page=True)
                    shown = cell.inner_text()[-2000:]
                    raise AssertionError(f"no explorer panel; the cell shows: {shown!r}; console: {console[-10:]}") from None
                # the shown text of the "scaled" row (without the arrow and the screen-reader "changed from ...")
                row_js = """() => [...document.querySelectorAll('.attnlib-live table[data-view=weights] tbody tr')[1].children]
                  .map(c => { const k = c.cloneNode(true); k.querySelectorAll('span').forEach(s => s.remove());
                              return k.textContent.trim(); })
                  .join(' ')"""
                result["explorer_before"] = page.evaluate(row_js)
                page.locator(".attnlib-live input.attnlib-dk").focus()
                page.keyboard.press("ArrowRight")
                result["explorer_after"] = _poll(lambda: page.evaluate(row_js), lambda t: t != result["explorer_before"])
                result["explorer_panel"] = panel.inner_text()
                artifacts = ARTIFACTS
                artifacts.mkdir(exist_ok=True)
                page.screenshot(path=str(artifacts / "lite-chapter-01.png"))
            finally:
                context.close()
    finally:
        stack.close()
        shutil.rmtree(profile, ignore_errors=True)
    print("JupyterLite browser run:", {k: v for k, v in result.items() if k != "console"})
    return result


def test_lite_opens_the_chapter_notebook(lite_run):
    assert NOTEBOOK in lite_run["tab"], lite_run["tab"]
    # the chapter's own title, rendered from its first markdown cell
    assert _title() in lite_run["first_cell"], (_title(), lite_run["first_cell"][:300])


def test_pyodide_kernel_runs_a_pure_python_cell_with_attnlib_preinstalled(lite_run):
    # 0+1+4+...+81 = 285, computed by Python in the browser; attnlib/ipywidgets installed without %pip
    expected = ["lite-ok", "emscripten", "285", "True", version("attnlib"), version("ipywidgets")]
    assert lite_run["output"].split() == expected, lite_run["output"]


def test_a_live_widget_renders_in_the_lite_notebook(lite_run):
    assert "k" in lite_run["slider"] and "3" in lite_run["slider"], lite_run["slider"]


def test_the_explorers_front_end_runs_in_the_lite_notebook(lite_run):
    """anywidget (preloaded wheel, with psygnal) and its lab extension draw attnlib's scaling module; moving d_k recomputes."""
    assert "Scaling" in lite_run["explorer_panel"] and "softmax weights" in lite_run["explorer_panel"], lite_run["explorer_panel"]
    from attnlib.core import softmax
    from attnlib.plots import format_value

    raw = [2.0, 0.0, 1.0, -1.0, 0.5, 0.0]
    # the "scaled" row: d_k = 1 divides by 1, then d_k = 4 (one step right) by 2; row sum 1
    for key, divisor in (("explorer_before", 1.0), ("explorer_after", 2.0)):
        want = ["scaled", *(format_value(v) for v in softmax([x / divisor for x in raw])), "1.0000"]
        assert lite_run[key].split() == want, (key, lite_run[key], want)


def test_the_lite_site_needs_no_other_host(lite_run):
    assert lite_run["blocked"] == [], f"requests to other hosts: {lite_run['blocked'][:10]}"
    errors = [line for line in lite_run["console"] if line.startswith("error") and "404" not in line]
    assert errors == [], errors
