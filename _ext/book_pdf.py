"""Link the PDF of the whole book (``python3 dev.py pdf``, ``pdf/make_pdf.py``) from the web book.

The PDF is printed from the single-page build into
``<build>/pdf/deriving-attention.pdf``, next to ``<build>/html``. When it is
there at the start of an HTML build, this extension

* adds a "Book (.pdf)" link to every page's download menu (next to the
  theme's ".pdf", which prints only the page on screen),
* turns the ``{book-pdf}`` directive of ``intro.md`` into a link to it,
* copies it into the HTML output, so the link works wherever the site is
  served.

When it is not there (a reader's ``jupyter-book build .``, the test build),
the menu gets no link and ``{book-pdf}`` says how to make the PDF: no page
links to a file that does not exist. Whether it exists is a config value
(rebuild "html"), so every page is written again when it appears or goes.
In the single-page build that the PDF is printed from, ``{book-pdf}`` says
that this is the PDF edition.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from docutils import nodes
from docutils.parsers.rst import Directive
from sphinx.application import Sphinx
from sphinx.config import Config
from sphinx.util import logging

logger = logging.getLogger(__name__)

PDF_NAME = "deriving-attention.pdf"


def pdf_path(html_outdir: str | Path) -> Path:
    """Where ``pdf/make_pdf.py`` writes the PDF for the HTML build in ``html_outdir``."""
    return Path(html_outdir).parent / "pdf" / PDF_NAME


class book_pdf_placeholder(nodes.General, nodes.Element):
    """Replaced by a link or a sentence once the builder is known (doctree-resolved)."""


class BookPdf(Directive):
    def run(self) -> list[nodes.Node]:
        return [book_pdf_placeholder()]


def _paragraph(*parts: nodes.Node) -> nodes.paragraph:
    para = nodes.paragraph()
    for part in parts:
        para += part
    return para


def _resolve(app: Sphinx, doctree: nodes.document, docname: str) -> None:
    for node in doctree.findall(book_pdf_placeholder):
        strong = nodes.strong("", "As a PDF")
        if app.builder.name != "html":
            para = _paragraph(strong, nodes.Text(": this is the book's PDF edition, printed from the web book; "
                                                 "the interactive explorers appear as their static snapshot tables."))
        elif app.config.book_pdf_present:
            uri = "../" * docname.count("/") + PDF_NAME
            link = nodes.reference("", "the whole book in one PDF", refuri=uri)
            para = _paragraph(strong, nodes.Text(": "), link,
                              nodes.Text(" to read offline or print, with the explorers' snapshot tables in place of live panels."))
        else:
            para = _paragraph(strong, nodes.Text(": "), nodes.literal("", "python3 dev.py pdf"),
                              nodes.Text(" prints the whole book into one PDF; the web book built after it links it here "
                                         "and in every page's download menu."))
        node.replace_self(para)


def _present(app: Sphinx, config: Config) -> None:
    config.book_pdf_present = pdf_path(app.outdir).is_file()


def _download_link(app: Sphinx, pagename: str, templatename: str, context: dict, doctree) -> None:
    if app.builder.name != "html" or not app.config.book_pdf_present:
        return
    button = {
        "type": "link",
        "url": context["pathto"](PDF_NAME, 1),
        "text": "Book (.pdf)",
        "tooltip": "Download the whole book as one PDF",
        "icon": "fas fa-book",
        "label": "download-book-pdf-button",
    }
    for group in context.get("header_buttons", []):
        if group.get("label") == "download-buttons":
            group["buttons"].append(button)
            return


def _copy(app: Sphinx, exception: Exception | None) -> None:
    source = pdf_path(app.outdir)
    if exception is None and app.builder.name == "html" and app.config.book_pdf_present:
        shutil.copy2(source, Path(app.outdir) / PDF_NAME)
        logger.info(f"book_pdf: copied {source} into the web book")


def setup(app: Sphinx) -> dict:
    app.add_config_value("book_pdf_present", False, "html")
    app.add_node(book_pdf_placeholder)
    app.add_directive("book-pdf", BookPdf)
    app.connect("config-inited", _present)
    app.connect("doctree-resolved", _resolve)
    # after sphinx-book-theme's add_header_buttons (default priority), before the buttons are rendered
    app.connect("html-page-context", _download_link, priority=502)
    app.connect("build-finished", _copy)
    return {"parallel_read_safe": True, "parallel_write_safe": True, "version": "1"}
