"""Serve MathJax from the book itself instead of a CDN.

``npm ci`` (run by ``python3 dev.py book`` and ``python3 dev.py test``)
installs MathJax 3 into ``node_modules/mathjax``. When it is there, this
extension points Sphinx's ``mathjax_path`` at ``_static/mathjax/`` and copies
the parts of MathJax that the pages can load (the TeX/MathML to HTML bundle,
its fonts, the lazily loaded TeX extensions and the accessibility
components) into the built site. The equations then render with every other
host blocked.

The files are copied after the build instead of being put in ``_static/``:
Jupyter Book 1 adds a ``<script>`` tag for *every* ``.js`` file found in
``_static/`` to every page, which would load all of MathJax's components
eagerly.

Without ``node_modules/mathjax`` (no Node.js on the machine) the build keeps
Sphinx's default CDN address and says so in the log.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from sphinx.application import Sphinx
from sphinx.config import Config
from sphinx.util import logging

logger = logging.getLogger(__name__)

BUNDLE = "tex-mml-chtml.js"
# what tex-mml-chtml.js may fetch at run time, relative to mathjax/es5
PARTS = (BUNDLE, "input", "output/chtml", "ui", "a11y", "sre", "adaptors")
TARGET = "mathjax"  # inside _static


def mathjax_source(srcdir: str | Path) -> Path | None:
    es5 = Path(srcdir) / "node_modules" / "mathjax" / "es5"
    return es5 if (es5 / BUNDLE).is_file() else None


def _configure(app: Sphinx, config: Config) -> None:
    if mathjax_source(app.srcdir) is None:
        logger.info("selfhosted_mathjax: node_modules/mathjax is missing (run `npm ci`); pages load MathJax from its CDN")
        return
    config.mathjax_path = f"{TARGET}/{BUNDLE}"


def _copy(app: Sphinx, exception: Exception | None) -> None:
    source = mathjax_source(app.srcdir)
    if exception is not None or source is None or app.builder.format != "html":
        return
    target = Path(app.outdir) / "_static" / TARGET
    for part in PARTS:
        src = source / part
        if src.is_dir():
            shutil.copytree(src, target / part, dirs_exist_ok=True)
        elif src.is_file():
            (target / part).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, target / part)
    logger.info(f"selfhosted_mathjax: copied MathJax into {target}")


def setup(app: Sphinx) -> dict:
    app.connect("config-inited", _configure)
    app.connect("build-finished", _copy)
    return {"parallel_read_safe": True, "parallel_write_safe": True, "version": "1"}
