"""The explorers' browser code stays small and readable: short functions, one job per shared module.

The issue-21 rules: no function (or method) over 80 lines in any front-end module, the math only in
``compute.js``, the DOM in ``dom.js``, the link codec in ``link.js``, number formatting in
``format.js``; and the JavaScript and CSS a page of the web book loads at most 80 KB unminified
(the host, the stylesheet, the modules of the kinds on that page and the shared modules they import).
"""

from __future__ import annotations

import json
import re
import typing

import pytest
from support.notebooks import book_notebooks

from attnlib.explorers import frontend, registry

MAX_FUNCTION_LINES = 80
MAX_BYTES = 80 * 1024

# a function's first line: `function f(`, `export function f(`, a method `name(...) {` in a class,
# or `const f = (...) => {`; its end is the first later line with the same indentation that closes it
START = re.compile(
    r"^(\s*)(?:export\s+)?(?:async\s+)?(?:function\s+\w+\s*\(|(?:static\s+)?\w+\s*\([^)]*\)\s*\{\s*$|const\s+\w+\s*=\s*(?:\([^)]*\)|\w+)\s*=>\s*\{)"
)


def _function_lengths(text: str) -> dict[str, int]:
    lines = text.splitlines()
    out = {}
    for i, line in enumerate(lines):
        m = START.match(line)
        if not m or line.rstrip().endswith(";") or re.match(r"\s*(if|for|while|switch|catch)\b", line):
            continue
        indent = m.group(1)
        for j in range(i + 1, len(lines)):
            if lines[j].startswith(indent + "}") and not lines[j].startswith(indent + " "):
                out[f"line {i + 1}: {line.strip()[:60]}"] = j - i + 1
                break
    return out


def _served() -> dict[str, str]:
    files = {name: (frontend.STATIC / name).read_text(encoding="utf-8") for name in (*frontend.SHARED, frontend.HOST, frontend.CSS)}
    files.update({f"{k}.js": registry.module_path(k).read_text(encoding="utf-8") for k in registry.kinds()})
    return files


@pytest.mark.parametrize("name", sorted(n for n in _served() if n.endswith(".js")))
def test_no_function_is_longer_than_80_lines(name):
    lengths = _function_lengths(_served()[name])
    assert lengths, f"{name}: the checker found no function (its pattern is out of date)"
    long = {k: v for k, v in lengths.items() if v > MAX_FUNCTION_LINES}
    assert not long, f"{name}: functions over {MAX_FUNCTION_LINES} lines: {long}"


def test_the_checker_sees_a_long_function():
    body = "\n".join(f"  x{i} = {i};" for i in range(90))
    assert max(_function_lengths(f"function long() {{\n{body}\n}}\n").values()) == 92


def test_each_shared_module_has_one_job():
    files = _served()
    assert "document." not in files["compute.js"] + files["format.js"] + files["link.js"], "DOM outside dom.js"
    assert "Math.exp" in files["compute.js"] and "Math.exp" not in files["dom.js"], "math outside compute.js"
    assert "toFixed(Math.min(100" in files["format.js"] and "function formatValue" not in files["dom.js"]
    assert "btoa(" in files["link.js"] and "btoa(" not in files["dom.js"] + files["host.js"]


def _kinds_per_page() -> dict[str, set[str]]:
    """The explorer kinds each executed notebook shows, from the constructors its code cells call."""
    kind_of = {name: typing.get_type_hints(fn)["return"].KIND for name, fn in registry.factories().items()}
    pages = {}
    for nb in book_notebooks():
        code = "\n".join("".join(c["source"]) for c in json.loads(nb.read_text())["cells"] if c["cell_type"] == "code")
        pages[nb.stem] = {kind for name, kind in kind_of.items() if re.search(rf"\b{name}\(", code)}
    return pages


def test_every_page_loads_at_most_80_kb_of_js_and_css():
    """Counted: what the page fetches (frontend.page_files, which its <head> preloads): the host, the kinds' modules, the
    shared modules these import and the stylesheet. tests/web/test_web_explorers.py checks in chromium that a built page
    requests exactly these files."""
    served = _served()
    pages = _kinds_per_page()
    assert sum(bool(k) for k in pages.values()) >= 10, f"the scan found too few explorer pages: {pages}"
    loads = {page: sum(len(served[name].encode()) for name in frontend.page_files(sorted(kinds))) for page, kinds in pages.items()}
    heavy = {page: size for page, size in loads.items() if size > MAX_BYTES}
    assert not heavy, f"pages loading more than {MAX_BYTES} bytes of JS and CSS: {heavy}"
    print(f"largest page load {max(loads.values())} bytes; all kinds together {sum(len(t.encode()) for t in served.values())}")


def test_the_stylesheet_braces_balance():
    """A stray ``}`` in explorer.css silently drops the rule after it (it once dropped the live note's look)."""
    text = re.sub(r"/\*.*?\*/", "", (frontend.STATIC / "explorer.css").read_text(encoding="utf-8"), flags=re.S)
    text = re.sub(r'"(?:[^"\\]|\\.)*"', '""', text)
    depth = 0
    for line_no, line in enumerate(text.splitlines(), 1):
        for ch in line:
            depth += {"{": 1, "}": -1}.get(ch, 0)
            assert depth >= 0, f"explorer.css: a '}}' with no '{{' to close, line {line_no} (comments removed)"
    assert depth == 0, f"explorer.css: {depth} '{{' never closed"


def test_a_page_loads_only_the_shared_modules_its_kinds_import():
    files = frontend.page_files(["live_training"])
    assert files == ["format.js", "link.js", "dom.js", "host.js", "live_training.js", "explorer.css"]
    assert frontend.page_files(["scaling", "scaling"]) == frontend.page_files(["scaling"])
    assert "compute.js" in frontend.page_files(["induction", "live_training"])
    assert frontend.page_files([]) == ["link.js", "host.js", "explorer.css"]  # host.js imports link.js


@pytest.mark.parametrize(
    ("kinds", "error", "words"),
    [
        ("scaling", ValueError, "kinds must be a list or tuple of kind names, got str"),
        (None, ValueError, "kinds must be a list or tuple"),
        ({"scaling"}, ValueError, "kinds must be a list or tuple"),
        (["scaling", 3], ValueError, "kinds must hold kind names (str), got 3"),
        ([["scaling"]], ValueError, "kinds must hold kind names (str)"),
        (["heads"], ValueError, "kinds: kind must be one of"),
        (["../dom"], ValueError, "kinds: kind must be one of"),
    ],
)
def test_page_files_names_kinds_on_odd_input(kinds, error, words):
    with pytest.raises(error, match=re.escape(words)):
        frontend.page_files(kinds)
