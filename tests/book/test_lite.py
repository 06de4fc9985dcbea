"""The JupyterLite site and the launch links that the book build makes (no browser here).

``built_book`` (tests/conftest.py) runs the strict book build once per
session; jupyterlite-sphinx writes the lite site into ``<html>/lite``.
"""

from __future__ import annotations

import importlib.util
import json
import re
import subprocess
import zipfile
from html.parser import HTMLParser
from pathlib import Path, PurePosixPath
from urllib.parse import parse_qs, urljoin, urlparse

import pytest
from support.lite import KERNEL_PLUGIN
from support.notebooks import chapter_notebooks
from support.paths import ROOT
from support.repository import binder_chapter_url

_spec = importlib.util.spec_from_file_location("student_notebooks", ROOT / "_ext" / "student_notebooks.py")
_student = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_student)

pytestmark = pytest.mark.slow

WORKER_DIR = PurePosixPath("extensions/@jupyterlite/pyodide-kernel-extension/static")


def _version() -> str:
    text = (ROOT / "pyproject.toml").read_text()
    return re.search(r'^version = "([^"]+)"', text, re.M).group(1)


@pytest.fixture(scope="session")
def lite(built_book) -> Path:
    site = built_book.html / "lite"
    assert (site / "lab" / "index.html").is_file(), f"the book build made no JupyterLite site in {site}"
    return site


@pytest.fixture(scope="session")
def kernel_settings(lite) -> dict:
    config = json.loads((lite / "jupyter-lite.json").read_text())
    return config["jupyter-config-data"]["litePluginSettings"][KERNEL_PLUGIN]


def test_lite_site_holds_every_chapter_notebook_as_committed(lite):
    chapters = chapter_notebooks()
    assert len(chapters) >= 13
    listing = json.loads((lite / "api" / "contents" / "chapters" / "all.json").read_text())
    listed = {item["name"] for item in listing["content"]}
    for notebook in chapters:
        copy = lite / "files" / "chapters" / notebook.name
        assert copy.is_file(), f"{notebook.name} is not in the lite site"
        # a chapter's copy is its student version (_ext/student_notebooks.py), other notebooks are copied as they are
        expected = _student.student_notebook(json.loads(notebook.read_text()))
        assert json.loads(copy.read_text()) == expected, f"the lite copy of {notebook.name} differs"
        assert notebook.name in listed, f"{notebook.name} is missing from the lite contents index"


def test_lite_site_ships_the_attnlib_wheel_built_from_this_repository(lite):
    wheel = lite / "pypi" / f"attnlib-{_version()}-py3-none-any.whl"
    assert wheel.is_file(), f"no attnlib wheel in {lite / 'pypi'}"
    with zipfile.ZipFile(wheel) as whl:
        names = set(whl.namelist())
        sources = sorted((ROOT / "attnlib").glob("*.py"))
        assert sources
        for source in sources:
            member = f"attnlib/{source.name}"
            assert member in names, f"{member} is missing from the wheel"
            assert whl.read(member) == source.read_bytes(), f"{member} in the wheel differs from the repository"
        metadata = whl.read(f"attnlib-{_version()}.dist-info/METADATA").decode()
    assert "Name: attnlib" in metadata
    index = json.loads((lite / "pypi" / "all.json").read_text())
    assert [r["filename"] for r in index["attnlib"]["releases"][_version()]] == [wheel.name]
    tracked = subprocess.run(["git", "ls-files", "*.whl"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    assert tracked == "", f"built wheels are committed: {tracked}"


def test_attnlib_and_its_needs_are_preloaded_by_the_pyodide_kernel(lite, kernel_settings):
    preload = kernel_settings["loadPyodideOptions"]["packages"]
    # typing-extensions (a Pyodide package): anywidget and psygnal import it, and a wheel's own needs are not resolved
    for name in ("numpy", "matplotlib", "sympy", "typing-extensions"):
        assert name in preload, f"{name} is not preloaded"
    workers = sorted((lite / WORKER_DIR).glob("*.worker.*.js"))
    assert workers, "the Pyodide kernel's worker scripts are not where the preload addresses assume"
    # the explorers are anywidgets: anywidget and its psygnal (pure-Python wheels) come with ipywidgets
    for name in ("attnlib", "ipywidgets", "anywidget", "psygnal"):
        urls = [p for p in preload if PurePosixPath(p).name.startswith(f"{name}-")]
        assert len(urls) == 1, f"{name} is not preloaded: {preload}"
        # Pyodide fetches the address relative to the worker script that runs the kernel
        target = (lite / WORKER_DIR / urls[0]).resolve()
        assert target.is_file(), f"{urls[0]} from the worker's folder is not a file of the site"
        assert target.parent == (lite / "pypi").resolve()
    assert any(url.startswith("./pypi/all.json") for url in kernel_settings["pipliteUrls"]), "the site's wheel index is not registered"


def test_lite_site_carries_the_anywidget_front_end(lite):
    """anywidget's JupyterLab extension is in the site and registered, so the explorers render in JupyterLite."""
    import importlib.metadata

    config = json.loads((lite / "jupyter-lite.json").read_text())["jupyter-config-data"]
    extensions = {e["name"]: e for e in config.get("federated_extensions", [])}
    assert "anywidget" in extensions, f"anywidget's front end is not registered: {sorted(extensions)}"
    package = json.loads((lite / "extensions" / "anywidget" / "package.json").read_text())
    assert package["version"] == importlib.metadata.version("anywidget")
    entry = lite / "extensions" / "anywidget" / extensions["anywidget"]["load"]
    assert entry.is_file(), f"{entry} is missing"
    assert "@jupyter-widgets/jupyterlab-manager" in extensions, "the widget manager is not in the lite site"
    wheel = next((lite / "pypi").glob("attnlib-*.whl"))
    with zipfile.ZipFile(wheel) as whl:
        names = set(whl.namelist())
    for part in ("compute.js", "dom.js", "format.js", "link.js", "attention.js", "explorer.css"):
        assert f"attnlib/explorers/static/{part}" in names, f"{part} is not in the attnlib wheel"


class _Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.hrefs: list[str] = []

    def handle_starttag(self, tag, attrs):
        if tag == "a" and dict(attrs).get("href"):
            self.hrefs.append(dict(attrs)["href"])


def _hrefs(page: Path) -> list[str]:
    parser = _Links()
    parser.feed(page.read_text())
    return parser.hrefs


def test_every_chapter_page_launches_its_own_notebook_on_binder_and_jupyterlite(built_book, lite):
    for notebook in chapter_notebooks():
        page = built_book.html / "chapters" / f"{notebook.stem}.html"
        assert page.is_file(), f"{page} was not built"
        hrefs = _hrefs(page)
        binder = [h for h in hrefs if h.startswith("https://mybinder.org/")]
        assert binder == [binder_chapter_url(f"chapters/{notebook.name}")], f"{page.name}: Binder links {binder}"
        lite_links = [h for h in hrefs if "lite/lab/index.html" in h]
        assert len(lite_links) == 1, f"{page.name}: JupyterLite links {lite_links}"
        base = built_book.html.as_uri() + "/"
        target = urlparse(urljoin(base + f"chapters/{page.name}", lite_links[0]))
        assert Path(target.path) == lite / "lab" / "index.html", f"{page.name}: {lite_links[0]} does not reach the lite site"
        (path,) = parse_qs(target.query)["path"]
        assert path == f"chapters/{notebook.name}"
        assert (lite / "files" / path).is_file()


def test_lite_size_and_build_time_are_measured(built_book, lite):
    def size(folder: Path) -> int:
        return sum(f.stat().st_size for f in folder.rglob("*") if f.is_file())

    lite_bytes, book_bytes = size(lite), size(built_book.html)
    match = re.search(r"jupyterlite_book: the JupyterLite site took ([0-9.]+) s", built_book.log)
    assert match, "the build log does not say how long the JupyterLite site took"
    wheels = re.search(r"jupyterlite_book: wheels .* ready in ([0-9.]+) s", built_book.log)
    assert wheels, "the build log does not say how long the wheels took"
    report = {
        "lite_site_bytes": lite_bytes,
        "book_bytes_with_lite": book_bytes,
        "book_bytes_without_lite": book_bytes - lite_bytes,
        "lite_files": sum(1 for f in lite.rglob("*") if f.is_file()),
        "lite_build_seconds": float(match.group(1)),
        "wheel_seconds": float(wheels.group(1)),
        "whole_build_seconds": round(built_book.seconds, 1),
    }
    out = ROOT / "test-artifacts"
    out.mkdir(exist_ok=True)
    (out / "lite-measure.json").write_text(json.dumps(report, indent=2) + "\n")
    print("JupyterLite measure:", report)
    assert 0 < lite_bytes < book_bytes


def test_live_playground_page_embeds_the_playground_notebook_from_the_lite_site(built_book, lite):
    page = built_book.html / "playground-live.html"
    assert page.is_file(), "playground-live.md was not built"
    text = page.read_text()
    match = re.search(r"'(lite/[^']*notebooks/index\.html\?path=([^']+))'", text)
    assert match, "no notebooklite embed on the live playground page"
    target = urlparse(urljoin(built_book.html.as_uri() + "/playground-live.html", match.group(1)))
    assert Path(target.path).resolve() == (lite / "notebooks" / "index.html").resolve()
    assert match.group(2) == "chapters/playground.ipynb"
    assert (lite / "files" / match.group(2)).is_file()
