"""The PDF of the whole book (``python3 dev.py pdf``), printed by Debian's chromium and read back with poppler.

The session's strict web build (``built_book``) is copied with its execution
cache (and the wheels its JupyterLite site fetched), so the single-page build that the PDF is printed from runs no
notebook again; ``pdf/make_pdf.py`` then prints it, and an HTML build in
the copy checks that the web book links the PDF once it exists. poppler's
``pdftotext``, ``pdfimages`` and ``pdfinfo`` (Debian's poppler-utils;
``.ci/run`` installs it) read the result. The page count, size and build
time go to ``test-artifacts/pdf-report.json``.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time

import pytest
import yaml
from support.browser import require_chromium
from support.notebooks import chapter_notebooks
from support.paths import ARTIFACTS, BIN, CHAPTERS, ROOT
from support.site import parse_html

from attnlib.explorers.snapshot import SNAPSHOT_NOTE

pytestmark = pytest.mark.slow

PDF_NAME = "deriving-attention.pdf"
RUNNING_EXAMPLE = ("0.4555", "0.2246", "0.3199", "0.6155", "0.3845")
RAW_TEX = ("\\frac", "$$")


def _poppler(tool: str) -> str:
    found = shutil.which(tool)
    assert found, f"{tool} is missing: install Debian's poppler-utils (apt-get install poppler-utils; .ci/run does this)"
    return found


def _run(command: list, **kw) -> subprocess.CompletedProcess:
    env = dict(os.environ, PATH=f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}")
    return subprocess.run([str(c) for c in command], cwd=ROOT, env=env, capture_output=True, text=True, **kw)


def toc_titles() -> list[str]:
    """The title (first level-1 heading) of every page in _toc.yml, as a reader sees it."""
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    files = [c["file"] for part in toc["parts"] for c in part["chapters"]]
    titles = []
    for name in files:
        path = ROOT / f"{name}.ipynb"
        if path.exists():
            text = "\n".join("".join(c["source"]) for c in json.loads(path.read_text())["cells"] if c["cell_type"] == "markdown")
        else:
            text = (ROOT / f"{name}.md").read_text()
        heading = re.search(r"^# (.+)$", text, re.M).group(1)
        titles.append(heading.replace("`", "").strip())
    return titles


def _squash(text: str) -> str:
    return re.sub(r"\s+", " ", text)


@pytest.fixture(scope="session")
def book_pdf(built_book, tmp_path_factory) -> dict:
    require_chromium()
    out = tmp_path_factory.mktemp("pdf")
    # the web build's execution cache and doctrees: the single-page build executes nothing again; and the
    # wheels it fetched from PyPI for its JupyterLite site (_ext/jupyterlite_book.py), which both builds here
    # would otherwise download again (they build attnlib's own wheel and the site afresh)
    shutil.copytree(built_book.html.parent, out / "_build", ignore=shutil.ignore_patterns("html", "jupyterlite"))
    shutil.copytree(built_book.html.parent / "jupyterlite" / "wheels", out / "_build" / "jupyterlite" / "wheels")
    start = time.perf_counter()
    made = _run([sys.executable, ROOT / "pdf" / "make_pdf.py", "--path-output", out])
    seconds = time.perf_counter() - start
    assert made.returncode == 0, f"pdf/make_pdf.py failed:\n{made.stdout[-4000:]}\n{made.stderr[-4000:]}"
    pdf = out / "_build" / "pdf" / PDF_NAME
    assert pdf.is_file(), f"no {pdf}"
    info = _run([_poppler("pdfinfo"), pdf]).stdout
    pages = int(re.search(r"^Pages:\s+(\d+)", info, re.M).group(1))
    text = _run([_poppler("pdftotext"), "-enc", "UTF-8", pdf, "-"]).stdout
    front = _run([_poppler("pdftotext"), "-enc", "UTF-8", "-f", "1", "-l", "6", pdf, "-"]).stdout
    title_page = _run([_poppler("pdftotext"), "-enc", "UTF-8", "-f", "1", "-l", "1", pdf, "-"]).stdout
    images = [line for line in _run([_poppler("pdfimages"), "-list", pdf]).stdout.splitlines()[2:] if line.split()[2:3] == ["image"]]
    report = {"pages": pages, "bytes": pdf.stat().st_size, "seconds": round(seconds, 1), "images": len(images),
              "log": [line for line in made.stdout.splitlines() if line.startswith("book_pdf:")]}
    ARTIFACTS.mkdir(exist_ok=True)
    (ARTIFACTS / "pdf-report.json").write_text(json.dumps(report, indent=2))
    print("PDF:", report)
    return {**report, "path": pdf, "out": out, "info": info, "text": text, "front": front, "title_page": title_page,
            "log_text": made.stdout + made.stderr}


def test_pdf_is_a_real_book(book_pdf):
    assert book_pdf["pages"] >= 60, f"only {book_pdf['pages']} pages"
    assert re.search(r"^Tagged:\s+yes", book_pdf["info"], re.M), "the PDF is not tagged"
    assert b"/Outlines" in book_pdf["path"].read_bytes(), "the PDF has no outline (bookmarks)"
    footers = re.findall(rf"\b\d+ / {book_pdf['pages']}\b", book_pdf["text"])
    assert len(footers) >= book_pdf["pages"] - 1, f"page numbers on {len(footers)} of {book_pdf['pages']} pages"
    # about 1.5-3 minutes on two busy cores; far more means something waits for a timeout
    assert book_pdf["seconds"] < 600, f"the PDF took {book_pdf['seconds']} s"


def test_pdf_has_every_chapter_title_and_a_table_of_contents(book_pdf):
    text, front = _squash(book_pdf["text"]), _squash(book_pdf["front"])
    titles = toc_titles()
    assert len(titles) >= 14
    missing = [t for t in titles if t not in text]
    assert not missing, f"chapter titles missing from the PDF: {missing}"
    assert "Contents" in front
    not_listed = [t for t in titles if t not in front]
    assert not not_listed, f"chapters missing from the table of contents (first pages): {not_listed}"
    for number, title in enumerate(titles[:15], start=1):  # chapters 1-15, across three parts
        assert f"{number}. {title}" in text, f"chapter {number} is not numbered: {title}"
    assert re.search(r"\b4\.\d+\. \S", text), "sections are not numbered"
    assert re.search(r"\(\d+\.\d+\)", text), "no numbered equation such as (2.1)"
    assert "Attention Is All You Need" in text, "the References page (references.bib) is missing from the PDF"


def _lines(text: str) -> list[str]:
    return [_squash(line).strip() for line in text.splitlines()]


def test_pdf_title_page_and_headings_are_printed(book_pdf):
    """The title page starts with the book's title (the page footer repeats the document's title, so it is
    the first line that counts), and the cheat sheet's heading is printed on its page as well as in the
    contents: a theme print rule (`.bd-article h1:first-of-type`, hidden) dropped both
    (_static/print-headings.css)."""
    title = yaml.safe_load((ROOT / "_config.yml").read_text())["title"]
    first = next((line for line in _lines(book_pdf["title_page"]) if line), "")
    assert first == title, f"the title page starts with {first!r}, not the title {title!r}: {book_pdf['title_page'][:400]!r}"
    cheat_sheet = next(t for t in toc_titles() if "cheat" in t.lower())
    printed = _lines(book_pdf["text"]).count(cheat_sheet)
    assert printed >= 2, f"{cheat_sheet!r} is printed {printed} time(s) as a line: in the contents, not as the page's heading"


def test_pdf_shows_the_running_example_and_typeset_formulas(book_pdf):
    text = book_pdf["text"]
    missing = [n for n in RUNNING_EXAMPLE if n not in text]
    assert not missing, f"the running example's numbers missing from the PDF: {missing}"
    # printed code may contain TeX (a sympy cell builds a \\frac string); prose and formulas may not
    code = {line.strip() for nb in [*chapter_notebooks(), CHAPTERS / "playground.ipynb"]
            for cell in json.loads(nb.read_text())["cells"] if cell["cell_type"] == "code"
            for line in "".join(cell["source"]).splitlines() if line.strip()}
    raw = [line for line in text.splitlines() if any(t in line for t in RAW_TEX) and line.strip() not in code]
    assert not raw, f"raw TeX in the PDF (MathJax did not typeset it): {raw[:5]}"


def test_pdf_has_every_figure_and_snapshot_instead_of_live_panels(book_pdf):
    figures = sum(
        1
        for nb in chapter_notebooks()
        for cell in json.loads(nb.read_text())["cells"]
        if cell["cell_type"] == "code" and "image" in cell.get("metadata", {}).get("mystnb", {})
    )
    assert figures > 10
    assert book_pdf["images"] >= figures, f"{book_pdf['images']} images in the PDF, the chapters declare {figures} figures"
    text = book_pdf["text"]
    # the note every explorer's static snapshot starts with (attnlib.explorers.snapshot.SNAPSHOT_NOTE)
    assert SNAPSHOT_NOTE.split(":")[0] in _squash(text), "no explorer snapshot in the PDF"
    assert "A Jupyter widget" not in text and "IntSlider(" not in text


def test_web_book_links_the_pdf_once_it_exists(book_pdf):
    """An HTML build after the PDF: copied into the site, linked from the intro page and every chapter's download menu."""
    out = book_pdf["out"]
    built = _run([BIN / "jupyter-book", "build", ROOT, "--path-output", out, "-W", "-n", "--keep-going"])
    assert built.returncode == 0, f"the web build after the PDF failed:\n{built.stdout[-4000:]}\n{built.stderr[-4000:]}"
    html = out / "_build" / "html"
    assert (html / PDF_NAME).read_bytes() == book_pdf["path"].read_bytes()
    assert PDF_NAME in parse_html(html / "intro.html").links
    for nb in chapter_notebooks():
        links = parse_html(html / "chapters" / f"{nb.stem}.html").links
        assert f"../{PDF_NAME}" in links, f"{nb.stem}.html has no link to the book's PDF"


def test_pdf_prints_no_check_result_and_no_code_solution(book_pdf):
    """The checks' RIGHT/PASS lines and the model code are folded (_ext/exercise_solutions.py): paper shows neither.

    The written solutions ("Solution" and "A model answer" boxes) are printed open after their exercise.
    """
    text = book_pdf["text"]
    results = [line.strip() for line in text.splitlines() if re.match(r"\s*(RIGHT|PASS) \S", line)]
    assert not results, f"the PDF prints the checks' results for the model solutions: {results[:5]}"
    # (the instructors' page names the marker in a sentence; a printed solution has it alone on a line)
    markers = [line for line in text.splitlines() if line.strip() in ("### BEGIN SOLUTION", "### END SOLUTION")]
    assert not markers, "the PDF prints a model solution's code"
    assert "measured peak:" not in text, "the PDF prints what Exercise 15.3's check measured for the model solution"
    assert "A model answer" in text and "Exercise 4.1" in text, "the PDF lost the exercises or their written model answers"
