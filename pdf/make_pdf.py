"""Print the whole book into one PDF with headless Debian chromium.

    .venv/bin/python pdf/make_pdf.py [--path-output DIR]   # what `python3 dev.py pdf` runs

1. ``jupyter-book build . --builder singlehtml -W -n --keep-going`` writes the
   book as one HTML page into ``<DIR>/_build/singlehtml`` (same execution
   cache as the web book: notebooks whose code did not change are not run
   again; no JupyterLite site, see ``_ext/jupyterlite_book.py``).
2. Debian's ``/usr/bin/chromium`` (driven by playwright; playwright's own
   browser downloads are never used) opens that page from disk with every
   request that is not a local file aborted, waits until MathJax (served
   by the book itself, ``_ext/selfhosted_mathjax.py``) has typeset every
   formula, adds a title page and a table of contents built from the
   numbered chapter and section headings (``pdf/print.js``), applies
   ``pdf/print.css`` (no navigation or buttons, the explorers' static
   snapshot tables instead of live panels, page breaks before chapters)
   and prints A4 pages with page numbers in the footer, a PDF outline
   (bookmarks) and tagged text.

The result is ``<DIR>/_build/pdf/deriving-attention.pdf``; the next web
build (``python3 dev.py book``) copies it into ``_build/html/`` and links it
(``_ext/book_pdf.py``). Nothing is downloaded.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
HERE = Path(__file__).resolve().parent
# chromium.py sits next to this script (its folder is on the path when the script runs); the PDF's name and
# place are the book extension's (one definition for the link and the file), loaded from its file
from chromium import CHROMIUM, CHROMIUM_ARGS  # noqa: E402


def _book_pdf():
    spec = importlib.util.spec_from_file_location("book_pdf", ROOT / "_ext" / "book_pdf.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_BOOK_PDF = _book_pdf()
PDF_NAME, pdf_path = _BOOK_PDF.PDF_NAME, _BOOK_PDF.pdf_path

#: playwright's limit for loading the single page and for each step after it (its default is 30 s)
LOAD_TIMEOUT_MS = 180_000

FOOTER = ('<div style="width:100%;font-size:8px;font-family:sans-serif;color:#555;padding:0 15mm;display:flex;'
          'justify-content:space-between"><span class="title"></span>'
          '<span><span class="pageNumber"></span> / <span class="totalPages"></span></span></div>')


def build_singlehtml(path_output: Path) -> Path:
    """The strict single-page build; return the folder of its index.html."""
    bindir = Path(sys.executable).parent
    jb = shutil.which("jupyter-book", path=str(bindir)) or shutil.which("jupyter-book")
    if jb is None:
        sys.exit("jupyter-book is not installed in this environment (pip install -r requirements.txt)")
    command = [jb, "build", str(ROOT), "--builder", "singlehtml", "-W", "-n", "--keep-going"]
    if path_output != ROOT:
        command += ["--path-output", str(path_output)]
    print("+", " ".join(command), flush=True)
    env = dict(os.environ, PATH=f"{bindir}{os.pathsep}{os.environ.get('PATH', '')}")
    subprocess.run(command, cwd=ROOT, check=True, env=env)
    return path_output / "_build" / "singlehtml"


def root_page(singlehtml: Path) -> Path:
    """The page that index.html redirects to (the book's root document, intro.html)."""
    index = (singlehtml / "index.html").read_text(encoding="utf-8")
    match = re.search(r'url=([^"\s]+)"', index, re.IGNORECASE)
    return singlehtml / (match.group(1) if match else "index.html")


def print_pdf(singlehtml: Path, target: Path) -> dict:
    """Print ``singlehtml/index.html`` into ``target``; return what the page held (for the log)."""
    from playwright.sync_api import sync_playwright

    if not CHROMIUM.exists():
        sys.exit(f"{CHROMIUM} is missing: the PDF is printed by Debian's chromium (apt-get install chromium)")
    page_url = root_page(singlehtml).resolve().as_uri()
    blocked: list[str] = []

    def only_local_files(route) -> None:
        if route.request.url.startswith("file://"):
            route.continue_()
        else:
            blocked.append(route.request.url)
            route.abort("blockedbyclient")

    target.parent.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1100, "height": 1400})
            # the whole book on one page: loading it passed playwright's default 30 s on a loaded 2-core machine
            page.set_default_timeout(LOAD_TIMEOUT_MS)
            page.route("**/*", only_local_files)
            clock = time.perf_counter()
            page.goto(page_url, wait_until="load")
            page.emulate_media(media="print", color_scheme="light")
            page.add_style_tag(content=(HERE / "print.css").read_text(encoding="utf-8"))
            facts = page.evaluate((HERE / "print.js").read_text(encoding="utf-8"))
            facts["seconds_loading"] = round(time.perf_counter() - clock, 1)
            if facts["mathErrors"] or facts["mathRendered"] != facts["mathTotal"]:
                raise RuntimeError(f"MathJax did not typeset every formula: {facts}")
            page.pdf(path=str(target), format="A4", print_background=True, display_header_footer=True,
                     header_template="<span></span>", footer_template=FOOTER,
                     margin={"top": "16mm", "bottom": "18mm", "left": "15mm", "right": "15mm"},
                     outline=True, tagged=True)
            facts["seconds_printing"] = round(time.perf_counter() - clock - facts["seconds_loading"], 1)
        finally:
            browser.close()
    if blocked:
        raise RuntimeError(f"the page asked for other hosts: {blocked[:5]}")
    return facts


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--path-output", type=Path, default=ROOT, help="the folder that holds _build/ (default: the repository)")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    singlehtml = build_singlehtml(args.path_output.resolve())
    built = time.perf_counter()
    target = pdf_path(args.path_output.resolve() / "_build" / "html")
    facts = print_pdf(singlehtml, target)
    end = time.perf_counter()
    print(f"book_pdf: {target} ({target.stat().st_size / 1e6:.1f} MB, {facts['chapters']} chapters, "
          f"{facts['mathTotal']} formulas); single-page build {built - start:.0f} s, printing {end - built:.0f} s "
          f"(of which loading and typesetting {facts['seconds_loading']:.0f} s)", flush=True)
    assert target.name == PDF_NAME


if __name__ == "__main__":
    main(sys.argv[1:])
