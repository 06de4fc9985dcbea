"""Run the book's notebooks in the browser: a JupyterLite site with attnlib inside.

``jupyterlite_sphinx`` builds a JupyterLite site into ``<html>/lite/`` after
the book is written. This extension loads it **only when the JupyterLite
tools are installed** (``requirements-docs.txt``: jupyterlite-sphinx,
jupyterlite-core, jupyterlite-pyodide-kernel) and the builder is the HTML
builder. Otherwise (a reader's ``pip install -r requirements.txt`` and
``jupyter-book build .``, or the single-page build that the PDF is printed
from) the book is built without the lite site, the log says so in one
line (not a warning), no JupyterLite launch button is added, and the
``notebooklite`` directive of ``playground-live.md`` renders a short note
that points to the static playground and the other ways to run the book
instead of an embedded notebook. No page then links into ``lite/``.

When the tools are there, this extension adds what the book needs on top:

* **The chapters.** The site's contents folder is ``<build>/jupyterlite/contents``
  (not jupyterlite_sphinx's default ``_contents/`` in the repository, so two
  builds into different folders never share it), and ``chapters/`` is copied
  into it, so every notebook keeps its path ``chapters/NN-name.ipynb``; the
  copies are the student versions of ``_ext/student_notebooks.py`` (answer
  cells unsolved, solutions folded).

* **attnlib as a wheel.** At the start of the build, ``pip wheel`` builds
  ``attnlib`` from a copy of the repository's ``pyproject.toml``,
  ``README.md`` and ``attnlib/`` (a copy, so no ``build/`` folder appears in
  the work tree) into ``<build>/jupyterlite/wheels/``. Nothing built is
  committed.
* **Registered, so ``import attnlib`` works without ``%pip``.** The
  committed ``lite/jupyter-lite.json`` and ``lite/jupyter_lite_config.json``
  are copied into ``<build>/jupyterlite/`` (the JupyterLite "lite dir"), and:

  - the wheel is given to piplite (``PipliteAddon.piplite_urls``), so the
    site serves it at ``lite/pypi/`` with an ``all.json`` index that
    ``pipliteUrls`` points to (``%pip install attnlib`` also works offline);
  - its address is appended to the Pyodide kernel's
    ``loadPyodideOptions.packages``, next to ``numpy``, ``matplotlib`` and
    ``sympy``: ``loadPyodide`` installs all of them before the kernel starts.
    Pyodide fetches a wheel address relative to the kernel's worker script,
    which lives in ``lite/extensions/@jupyterlite/pyodide-kernel-extension/static/``,
    hence the ``../../../../pypi/`` prefix (:data:`WHEEL_FROM_WORKER`).

  ``ipywidgets`` and ``anywidget`` (the explorers are anywidgets) and
  anywidget's ``psygnal`` are not part of the Pyodide distribution, so their
  pure-Python wheels, at the versions installed here, are fetched from PyPI
  once (``pip download --platform any``: psygnal also has compiled wheels,
  which Pyodide cannot load; kept in ``<build>/jupyterlite/wheels/``) and
  registered the same way. Their other needs come with the kernel (``comm``,
  ``ipython``, ``traitlets``) or are Pyodide packages preloaded by name
  (``typing-extensions``, in ``lite/jupyter-lite.json``: Pyodide does not
  resolve the needs of a wheel given by its address). anywidget's front end (its JupyterLab extension, installed
  here with the Python package) is copied into the site by jupyterlite-core
  with the environment's other federated extensions.

  jupyterlite-pyodide-kernel 0.8 has no other way to pre-install a local
  wheel without a full custom Pyodide lock file (its ``PyodideLockAddon``
  downloads the Pyodide lock and solves it with ``uv`` at build time).
* **A "JupyterLite" launch button on every chapter page,** in the theme's
  launch menu next to Binder, opening that chapter's notebook in JupyterLab
  inside the lite site (a link relative to the page, so the book works from
  any folder or host).
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from docutils import nodes
from docutils.parsers.rst import Directive, directives
from sphinx import addnodes
from sphinx.application import Sphinx
from sphinx.config import Config
from sphinx.util import logging

logger = logging.getLogger(__name__)

ROOT = Path(__file__).resolve().parent.parent
TEMPLATE = ROOT / "lite"
LITE_OUT = "lite"  # jupyterlite_sphinx writes the site to <html>/lite
LAB = f"{LITE_OUT}/lab/index.html"
KERNEL_PLUGIN = "@jupyterlite/pyodide-kernel-extension:kernel"
#: from the kernel worker's folder to the lite site's root
WHEEL_FROM_WORKER = "../../../../pypi/"
#: the chapter notebooks' folder, the same inside the lite site as in the repository
CHAPTER_DIR = "chapters"
#: pure-Python wheels from PyPI that the notebooks need in the browser besides the Pyodide distribution
EXTRA_WHEELS = ("ipywidgets", "anywidget", "psygnal")
#: the Python packages that building the lite site needs (requirements-docs.txt)
LITE_TOOLS = ("jupyterlite_sphinx", "jupyterlite_core", "jupyterlite_pyodide_kernel")
#: the builders that get a lite site (the single-page build for the PDF does not)
LITE_BUILDERS = ("html",)


def missing_lite_tools() -> list[str]:
    """The JupyterLite build tools that cannot be imported here (empty when all are installed)."""
    return [name for name in LITE_TOOLS if importlib.util.find_spec(name) is None]


def build_wheel(dest: Path) -> Path:
    """Build attnlib's wheel from a copy of the package sources into ``dest``; return its path."""
    dest.mkdir(parents=True, exist_ok=True)
    for old in dest.glob("attnlib-*.whl"):
        old.unlink()
    with tempfile.TemporaryDirectory(prefix="attnlib-wheel-") as tmp:
        src = Path(tmp) / "src"
        src.mkdir()
        for name in ("pyproject.toml", "README.md"):
            shutil.copy2(ROOT / name, src / name)
        shutil.copytree(ROOT / "attnlib", src / "attnlib", ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        proc = subprocess.run(
            [sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "--wheel-dir", str(dest), str(src)],
            capture_output=True,
            text=True,
        )
    wheels = sorted(dest.glob("attnlib-*-py3-none-any.whl"))
    if proc.returncode != 0 or len(wheels) != 1:
        raise RuntimeError(f"jupyterlite_book: building attnlib's wheel failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    return wheels[0]


def fetch_wheels(names: tuple[str, ...], dest: Path) -> list[Path]:
    """Download (once) the pure-Python wheels of ``names`` at the versions installed here into ``dest``."""
    dest.mkdir(parents=True, exist_ok=True)
    wheels = []
    for name in names:
        version = importlib.metadata.version(name)
        found = sorted(dest.glob(f"{name}-{version}-*none-any.whl"))
        if not found:
            command = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "--platform", "any", "--quiet"]
            proc = subprocess.run([*command, "--dest", str(dest), f"{name}=={version}"], capture_output=True, text=True)
            found = sorted(dest.glob(f"{name}-{version}-*none-any.whl"))
            if proc.returncode != 0 or len(found) != 1:
                raise RuntimeError(f"jupyterlite_book: downloading the {name} {version} wheel from PyPI failed:\n{proc.stderr}")
        wheels.append(found[0])
    return wheels


def write_lite_dir(lite_dir: Path, wheels: list[Path]) -> None:
    """Copy the committed lite/ configuration into ``lite_dir`` and register ``wheels`` in it."""
    if lite_dir.exists():
        for name in ("jupyter-lite.json", "jupyter_lite_config.json"):
            (lite_dir / name).unlink(missing_ok=True)
    lite_dir.mkdir(parents=True, exist_ok=True)

    site = json.loads((TEMPLATE / "jupyter-lite.json").read_text())
    kernel = site.setdefault("jupyter-config-data", {}).setdefault("litePluginSettings", {}).setdefault(KERNEL_PLUGIN, {})
    packages = kernel.setdefault("loadPyodideOptions", {}).setdefault("packages", [])
    packages.extend(WHEEL_FROM_WORKER + wheel.name for wheel in wheels)
    (lite_dir / "jupyter-lite.json").write_text(json.dumps(site, indent=2) + "\n")

    build = json.loads((TEMPLATE / "jupyter_lite_config.json").read_text())
    build.setdefault("PipliteAddon", {})["piplite_urls"] = [str(wheel) for wheel in wheels]
    (lite_dir / "jupyter_lite_config.json").write_text(json.dumps(build, indent=2) + "\n")


def _work(app: Sphinx) -> Path:
    return Path(app.outdir).parent / "jupyterlite"


def _contents_dir(app: Sphinx, config: Config) -> None:
    # before jupyterlite_sphinx's own config-inited handler empties and creates the folder
    config.jupyterlite_content_dir = str(_work(app) / "contents")
    # chapters/ is copied in as .ipynb files; the book's own pages are not lite notebooks
    config.jupyterlite_bind_ipynb_suffix = False


def _student_notebooks():
    spec = importlib.util.spec_from_file_location("student_notebooks", Path(__file__).with_name("student_notebooks.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _copy_chapters(app: Sphinx, config: Config) -> None:
    # after jupyterlite_sphinx emptied the contents folder
    target = Path(config.jupyterlite_content_dir) / CHAPTER_DIR
    shutil.rmtree(target, ignore_errors=True)
    shutil.copytree(ROOT / CHAPTER_DIR, target, ignore=shutil.ignore_patterns(".*", "__pycache__", "ruff.toml"))
    # readers get the answer cells unsolved and the solutions folded (_ext/student_notebooks.py)
    _student_notebooks().write_student_versions(target)


def _configure(app: Sphinx, config: Config) -> None:
    # only the folder's name here: the config the environment keeps must not depend on the builder
    config.jupyterlite_dir = str(_work(app) / "lite-dir")


def _prepare_lite_dir(app: Sphinx) -> None:
    """Build attnlib's wheel, fetch the extra wheels and write the lite configuration (HTML builds only)."""
    start = time.perf_counter()
    work = _work(app)
    wheels = [build_wheel(work / "attnlib-wheel"), *fetch_wheels(EXTRA_WHEELS, work / "wheels")]
    write_lite_dir(Path(app.config.jupyterlite_dir), wheels)
    names = ", ".join(wheel.name for wheel in wheels)
    logger.info(f"jupyterlite_book: wheels {names} and the lite configuration ready in {time.perf_counter() - start:.1f} s")


def lite_notebook_path(app: Sphinx, pagename: str) -> str | None:
    """The notebook's path inside the lite site for a chapter page, or None for other pages."""
    source = Path(app.env.doc2path(pagename))
    if source.suffix != ".ipynb" or not pagename.startswith(CHAPTER_DIR + "/"):
        return None
    return f"{pagename}.ipynb"


def _launch_button(app: Sphinx, pagename: str, templatename: str, context: dict, doctree) -> None:
    notebook = lite_notebook_path(app, pagename)
    if notebook is None or not _LITE["active"]:
        return
    url = f"{context['pathto'](LAB, 1)}?path={notebook}"
    button = {
        "type": "link",
        "text": "JupyterLite",
        "tooltip": "Run this chapter in your browser (JupyterLite, no install)",
        "icon": "_static/images/logo_jupyterlite.svg",
        "url": url,
        "label": "launch-jupyterlite-button",
    }
    buttons = context.setdefault("header_buttons", [])
    for group in buttons:
        if group.get("label") == "launch-buttons":
            group["buttons"].append(button)
            return
    buttons.append(
        {"type": "group", "tooltip": "Launch interactive content", "icon": "fas fa-rocket", "buttons": [button], "label": "launch-buttons"}
    )


_LITE_CLOCK: dict[str, float] = {}


def _lite_started(app: Sphinx, exception: Exception | None) -> None:
    _LITE_CLOCK["start"] = time.perf_counter()


def _lite_finished(app: Sphinx, exception: Exception | None) -> None:
    if exception is None and "start" in _LITE_CLOCK:
        seconds = time.perf_counter() - _LITE_CLOCK.pop("start")
        logger.info(f"jupyterlite_book: the JupyterLite site took {seconds:.1f} s to build")


class LiteUnavailable(Directive):
    """Stands in for ``notebooklite`` when the book is built without the lite site: a note, no dead link."""

    required_arguments = 1
    option_spec = {"width": directives.unchanged, "height": directives.unchanged,
                   "prompt": directives.unchanged, "prompt_color": directives.unchanged}

    def run(self) -> list[nodes.Node]:
        docname = self.state.document.settings.env.docname

        def doc_link(target: str, text: str) -> addnodes.pending_xref:
            ref = addnodes.pending_xref("", refdomain="std", reftype="doc", reftarget=target, refdoc=docname, refexplicit=True)
            ref += nodes.inline(text, text)
            return ref

        notebook = Path(self.arguments[0]).with_suffix("").as_posix()
        para = nodes.paragraph()
        para += nodes.Text("This copy of the book was built without its JupyterLite site (the tools in ")
        para += nodes.literal("requirements-docs.txt", "requirements-docs.txt")
        para += nodes.Text(" were not installed), so the live notebook cannot start here. ")
        para += doc_link(notebook, "Its static page")
        para += nodes.Text(" shows it as it starts; ")
        para += doc_link("ways-to-run", "Ways to run this book")
        para += nodes.Text(" explains how to run it live on Binder or on your own computer.")
        return [nodes.note("", para)]


_LITE = {"active": False}
#: the directive of jupyterlite_sphinx that pages may use; it gets the note when there is no lite site
LITE_DIRECTIVE = "notebooklite"


def _docs_with_lite_directive(app: Sphinx, env) -> list[str]:
    marker = "{" + LITE_DIRECTIVE + "}"
    return sorted(doc for doc in env.found_docs if marker in Path(env.doc2path(doc)).read_text(encoding="utf-8", errors="replace"))


def _reread_when_mode_changed(app: Sphinx, env, added, changed, removed) -> list[str]:
    # a page read with the other directive (embedded notebook or note) is read again
    if getattr(env, "jupyterlite_book_active", None) == _LITE["active"]:
        return []
    env.jupyterlite_book_active = _LITE["active"]
    return _docs_with_lite_directive(app, env)


def _skip_lite_for_other_builders(app: Sphinx) -> None:
    """The single-page build (for the PDF) gets no lite site, no button, and the note instead of the notebook."""
    if app.builder.name in LITE_BUILDERS:
        _LITE["active"] = True
        _prepare_lite_dir(app)
        return
    _LITE["active"] = False
    logger.info(f"jupyterlite_book: no JupyterLite site for the {app.builder.name} builder")
    app.add_directive(LITE_DIRECTIVE, LiteUnavailable, override=True)
    from jupyterlite_sphinx.jupyterlite_sphinx import jupyterlite_build

    for listener in list(app.events.listeners.get("build-finished", [])):
        if listener.handler in (jupyterlite_build, _lite_started, _lite_finished):
            app.disconnect(listener.id)


def setup(app: Sphinx) -> dict:
    app.connect("env-get-outdated", _reread_when_mode_changed)
    missing = missing_lite_tools()
    if missing:
        names = ", ".join(missing)
        logger.info(f"jupyterlite_book: {names} not installed (requirements-docs.txt): the book is built without its JupyterLite site")
        app.add_directive(LITE_DIRECTIVE, LiteUnavailable)
        return {"parallel_read_safe": True, "parallel_write_safe": True, "version": "1"}
    app.setup_extension("jupyterlite_sphinx")
    app.connect("builder-inited", _skip_lite_for_other_builders)
    app.connect("config-inited", _contents_dir, priority=400)
    app.connect("config-inited", _configure)
    app.connect("config-inited", _copy_chapters, priority=600)
    # jupyterlite_sphinx builds the site in build-finished at the default priority (500): time it
    app.connect("build-finished", _lite_started, priority=499)
    app.connect("build-finished", _lite_finished, priority=501)
    # after sphinx-book-theme's add_launch_buttons (priority 501), before the buttons are rendered
    app.connect("html-page-context", _launch_button, priority=502)
    return {"parallel_read_safe": True, "parallel_write_safe": True, "version": "1"}
