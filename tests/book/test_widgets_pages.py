"""The explorers on the book's pages: the playground runs, every chapter that needs one embeds its widget,
and the static web book shows the snapshot (with its numbers) instead of a dead slider."""

from __future__ import annotations

import re

import nbformat
import pytest
from support.paths import CHAPTERS

from attnlib.explorers import SNAPSHOT_NOTE

PLAYGROUND = CHAPTERS / "playground.ipynb"
WIDGET_MIME = "application/vnd.jupyter.widget-view+json"

# chapter -> the constructor its widget cell calls
CHAPTER_WIDGETS = {
    "03": "value_projection_explorer",
    "04": "attention_explorer",
    "05": "scaling_explorer",
    "06": "attention_explorer",
    "07": "scale_comparison_explorer",
    "08": "head_count_explorer",
    "09": "mask_explorer",
    "11": "positional_explorer",
    "15": "block_memory_explorer",
    "17": "live_training_explorer",
}
#: chapter 17's own page for the trained model on the reader's text (the chapter's page holds the live trainer)
OWN_TEXT = CHAPTERS / "induction-own-text.ipynb"


def chapter(n: str):
    (path,) = CHAPTERS.glob(f"{n}-*.ipynb")
    return path


def widget_cells(nb) -> list:
    return [c for c in nb.cells if "widget" in c.metadata.get("tags", [])]


@pytest.fixture(scope="module")
def playground(executed):
    return executed(PLAYGROUND)


def test_playground_is_committed_without_outputs():
    nb = nbformat.read(PLAYGROUND, as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code":
            assert cell.outputs == [] and cell.execution_count is None


def test_playground_runs_and_carries_live_widget_and_snapshot(playground):
    nb, ran = playground
    assert ran.cpu < 60, f"the playground took {ran.cpu:.1f} CPU-s ({ran.wall:.1f} s wall)"  # 3.5 CPU-s alone
    bundles = [o["data"] for c in nb.cells for o in c.get("outputs", []) if WIDGET_MIME in o.get("data", {})]
    assert len(bundles) == 2, "the playground shows two explorers"
    first = bundles[0]
    assert SNAPSHOT_NOTE in first["text/html"]
    assert "x1: 0.4555  0.2246  0.3199" in first["text/plain"] and "o1: 0.6155  0.3845" in first["text/plain"]
    assert "0.4555" in first["text/html"] and "0.6155" in first["text/html"]
    printed = "".join(o.get("text", "") for c in nb.cells for o in c.get("outputs", []))
    assert "[0.3302 0.6698 0.    ]" in printed and "True True" in printed


@pytest.mark.parametrize("n", sorted(CHAPTER_WIDGETS))
def test_chapter_embeds_its_widget_before_the_recap(n):
    nb = nbformat.read(chapter(n), as_version=4)
    cells = widget_cells(nb)
    assert [c.cell_type for c in cells] == ["markdown", "code"], f"chapter {n}: one invitation and one widget cell"
    assert f"{CHAPTER_WIDGETS[n]}()" in cells[1].source
    index = nb.cells.index(cells[1])
    recap = next(i for i, c in enumerate(nb.cells) if c.cell_type == "markdown" and "## Recap" in c.source)
    assert nb.cells.index(cells[0]) == index - 1 and index < recap


def test_chapter_17s_page_for_the_readers_text_embeds_the_trained_model():
    nb = nbformat.read(OWN_TEXT, as_version=4)
    cells = widget_cells(nb)
    assert [c.cell_type for c in cells] == ["markdown", "code"] and "induction_explorer()" in cells[1].source
    assert nb.cells.index(cells[1]) == len(nb.cells) - 1 and nb.cells.index(cells[0]) == len(nb.cells) - 2
    chapter17 = "".join(c.source for c in nbformat.read(chapter("17"), as_version=4).cells if c.cell_type == "markdown")
    assert "{doc}`induction-own-text`" in chapter17, "chapter 17 does not link to its page for the reader's text"
    assert all(c.outputs == [] and c.execution_count is None for c in nb.cells if c.cell_type == "code")


def test_built_page_for_the_readers_text_shows_its_snapshot(web_html):
    page = (web_html / "chapters" / "induction-own-text.html").read_text()
    _static_checks(page, OWN_TEXT.name)
    assert 'data-attnlib-kind="induction"' in page and 'data-attnlib-kind="live_training"' not in page


def test_only_the_playground_and_chapters_four_and_six_carry_the_full_explorer():
    full = [n for n in CHAPTER_WIDGETS if "attention_explorer()" in widget_cells(nbformat.read(chapter(n), as_version=4))[1].source]
    assert full == ["04", "06"]
    assert "attention_explorer()" in "".join(c.source for c in nbformat.read(PLAYGROUND, as_version=4).cells)


def _static_checks(page: str, name: str) -> None:
    """An explorer cell's output on a built page: the state for the live explorer, the static snapshot, the host."""
    assert 'class="attnlib-explorer"' in page and 'class="attnlib-state"' in page, f"{name}: no explorer state for the live page"
    assert SNAPSHOT_NOTE in page, f"{name}: no static snapshot (for print and readers without JavaScript)"
    # the entry module: it imports the host and the page's kind and starts it (_ext/live_explorers.py)
    entry = re.search(r'<script type="module" async>(.*?)</script>', page, re.S)
    assert entry, f"{name}: the live explorers' entry module (an async module) is missing"
    assert 'import { start } from "../_explorers/host.js";' in entry.group(1) and "start({" in entry.group(1), entry.group(1)
    # and the same module deferred: it starts the host when parsing ends if the async one has not yet
    deferred = re.search(r'<script type="module">(.*?)</script>', page, re.S)
    assert deferred and deferred.group(1) == entry.group(1), f"{name}: the deferred copy of the entry module is missing"
    mathjax = page.find("mathjax/tex-mml-chtml.js")
    assert mathjax == -1 or page.index(deferred.group(0)) < mathjax, f"{name}: the deferred entry comes after MathJax"
    # no live-widget output: neither the widget-view mime type nor the widget JavaScript from a CDN
    assert WIDGET_MIME not in page, f"{name}: a widget-view output (it needs a kernel) is on the page"
    assert "embed-amd" not in page and "require.min.js" not in page, f"{name}: the page loads widget JavaScript"
    assert not re.search(r'class="[^"]*widget-slider', page)


def test_built_playground_shows_the_snapshot_numbers(web_html):
    page = (web_html / "chapters" / "playground.html").read_text()
    _static_checks(page, "playground")
    for number in ("0.4555", "0.2246", "0.3199", "0.6155", "0.3845", "\u221a2 = 1.4142"):
        assert number in page


@pytest.mark.parametrize("n", sorted(CHAPTER_WIDGETS))
def test_built_chapters_show_their_snapshot(web_html, n):
    page = (web_html / "chapters" / f"{chapter(n).stem}.html").read_text()
    _static_checks(page, chapter(n).name)
    assert 'class="attnlib-view"' in page


def test_the_front_end_is_served_from_the_book_and_loaded_only_where_needed(web_html):
    """_ext/live_explorers.py: the modules in _explorers/ (not _static/, which every page loads), host.js only on explorer pages."""
    from support.site import site_pages

    from attnlib.explorers import registry
    from attnlib.explorers.frontend import HOST, STATIC, host_source, module_files

    for name in module_files():
        served = web_html / "_explorers" / name
        kind = name.removesuffix(".js")
        if name == HOST:  # the host with the registry's kinds written in
            want = host_source().encode()
        else:
            want = (registry.module_path(kind) if kind in registry.kinds() else STATIC / name).read_bytes()
        assert served.is_file() and served.read_bytes() == want, f"{served} is not attnlib's {name}"
    assert not list((web_html / "_static").glob("host.js")) and not list((web_html / "_static").glob("compute.js"))
    with_host, with_explorer = set(), set()
    for path in site_pages(web_html):
        text = path.read_text(encoding="utf-8")
        if "_explorers/host.js" in text:
            with_host.add(path.name)
        if 'class="attnlib-explorer"' in text:
            with_explorer.add(path.name)
    assert with_host == with_explorer and len(with_explorer) >= 8, (sorted(with_host), sorted(with_explorer))


SCRIPT_TAG = re.compile(r"<script\b([^>]*)>", re.I)


def test_no_script_file_in_the_head_holds_the_parser_back_but_documentation_options(web_html):
    """_ext/live_explorers.py and _templates/layout.html: every external script in a page's <head> is
    deferred, async or a module, except documentation_options.js (the theme's inline scripts use it),
    so that the parser reaches the explorers without waiting for the theme's scripts or searchindex.js.
    The search page itself is the exception: it loads its index as it always did, and has no explorer."""
    from support.site import site_pages

    blocking: dict[str, list[str]] = {}
    for path in site_pages(web_html):
        if path.relative_to(web_html).as_posix() == "search.html":
            continue
        head = path.read_text(encoding="utf-8").split("</head>", 1)[0]
        for attributes in SCRIPT_TAG.findall(head):
            src = re.search(r'src="([^"]+)"', attributes)
            if not src or re.search(r"\b(defer|async)\b|type=\"module\"", attributes):
                continue
            if not src.group(1).split("?")[0].endswith("/documentation_options.js"):
                blocking.setdefault(src.group(1).split("?")[0], []).append(path.relative_to(web_html).as_posix())
    assert not blocking, {src: (len(pages), pages[:3]) for src, pages in blocking.items()}
