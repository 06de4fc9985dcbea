"""Where the book departs from the source post or a paper, it says so in one visible form.

The form (every chapter uses it) is a MyST admonition whose title starts with "Departure from" and
whose class is ``departure``, fenced with backticks (a ``:::`` fence in a chapter is read as a folded
solution by ``_ext/student_notebooks.py``)::

    ```{admonition} Departure from the source post
    :class: departure

    The post says ...; more precisely ...
    ```

``_static/departure.css`` draws it as a box of its own colour, in the light and the dark theme and
on paper. These tests hold the pages to the form: the title and the class go together, the title
names what the book departs from, the places known to depart carry a box that says what the
departure is, and the built pages keep the class and load the style sheet.
"""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser

import pytest
import yaml
from support.paths import ROOT

#: An admonition directive: a fence of three or more backticks or colons, the directive, its title.
DIRECTIVE = re.compile(r"^(?P<fence>`{3,}|:{3,})\{admonition\}[ \t]*(?P<title>.*)$")
#: What a departure's title may name: the source post, a paper, or its authors and year.
TITLE = re.compile(
    r"Departure from (the source post|the paper|[A-Z][\w'-]+( et al\.| and [A-Z][\w'-]+)? \((19|20)\d\d\))"
)

#: The places in chapters 1-13 known to depart from the post, each with words its box must contain.
#: The first six are the referee's conceptual slips of the post (December 2026, item 1 a-f), the rest
#: the post's hand-rounded digits and its notation where the book writes the formula differently.
KNOWN = [
    ("chapters/02-compatibility-function", "q_1^\\top", "stacks the queries with a transpose on each row"),
    ("chapters/02-compatibility-function", "*bilinear*", "'the most general linear score' is bilinear, under linear maps"),
    ("chapters/03-queries-keys-values", "U_a h_j", "Bahdanau's keys and values already differ"),
    ("chapters/10-path-length", "bidirectional", "a bidirectional and a left-to-right RNN conflated"),
    ("chapters/11-positional-information", "hypothesis", "relative offsets are not learned automatically"),
    ("chapters/10-path-length", "dropping the recurrence", "parallelism comes from dropping recurrence, not the dot product"),
    ("chapters/12-one-story", "$h_j$ itself", "the value is not the bare annotation"),
    ("chapters/04-full-formula", "0.4556", "the first weight's last digit"),
    ("chapters/06-walkthrough", "1.4240", "the hand-rounded exponential, normaliser and weights"),
    ("chapters/07-unscaled-vs-scaled", "0.2247", "the scaled row's digits"),
    ("chapters/08-multi-head", "project", "the head formula projects Q, K, V twice in the post's own terms"),
    ("chapters/09-self-cross-masked", "before dividing", "the mask added before the division and called S"),
    ("chapters/12-one-story", "three-decimal", "the outputs' digits"),
]


def _pages() -> dict[str, str]:
    """The Markdown of every page in the table of contents (a notebook's Markdown cells joined)."""
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    names = [toc["root"]] + [c["file"] for part in toc["parts"] for c in part["chapters"]]
    texts = {}
    for name in names:
        nb, md = ROOT / f"{name}.ipynb", ROOT / f"{name}.md"
        if nb.exists():
            cells = json.loads(nb.read_text(encoding="utf-8"))["cells"]
            texts[name] = "\n\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "markdown")
        elif md.exists():
            texts[name] = md.read_text(encoding="utf-8")
    return texts


def admonitions(markdown: str) -> list[dict]:
    """Every ``{admonition}`` of a Markdown text: its title, its classes and its body.

    >>> [a["title"] for a in admonitions(":::{admonition} Departure from the source post\\n:class: departure\\n\\nText.\\n:::")]
    ['Departure from the source post']
    >>> admonitions("```{admonition} Note\\n:class: dropdown tip\\nBody\\n```")[0]["classes"]
    ['dropdown', 'tip']
    """
    found, lines, i = [], markdown.splitlines(), 0
    while i < len(lines):
        m = DIRECTIVE.match(lines[i].strip())
        if not m:
            i += 1
            continue
        fence, classes, body = m["fence"], [], []
        i += 1
        while i < len(lines) and lines[i].strip().startswith(":") and not lines[i].strip().startswith(fence[0] * 3):
            option = re.match(r":(\w+):\s*(.*)", lines[i].strip())
            if option and option[1] == "class":
                classes += option[2].split()
            i += 1
        while i < len(lines) and lines[i].strip() != fence:
            body.append(lines[i])
            i += 1
        found.append({"title": m["title"].strip(), "classes": classes, "body": "\n".join(body)})
        i += 1
    return found


PAGES = _pages()


def test_the_parser_finds_the_boxes_it_should():
    """A guard against a parser that silently finds nothing."""
    every = [a for text in PAGES.values() for a in admonitions(text)]
    assert len([a for a in every if "dropdown" in a["classes"]]) > 40  # the folded solutions
    assert len([a for a in every if "departure" in a["classes"]]) >= len(KNOWN)


@pytest.mark.parametrize("page", sorted(PAGES))
def test_a_departure_title_and_the_departure_class_go_together(page):
    for box in admonitions(PAGES[page]):
        titled = box["title"].startswith("Departure from")
        classed = "departure" in box["classes"]
        assert titled == classed, f"{page}: the admonition '{box['title']}' has classes {box['classes']}"
        if titled:
            assert TITLE.fullmatch(box["title"]), (
                f"{page}: '{box['title']}' should read 'Departure from the source post', 'Departure from the paper' "
                "or 'Departure from <Author> et al. (<year>)'"
            )
            assert box["body"].strip(), f"{page}: an empty departure box"


@pytest.mark.parametrize("page, words, what", KNOWN, ids=[f"{p.split('/')[-1][:2]}-{w}" for p, w, _ in KNOWN])
def test_each_known_departure_is_marked(page, words, what):
    boxes = [a["body"] for a in admonitions(PAGES[page]) if "departure" in a["classes"]]
    assert any(words in body for body in boxes), f"{page}: no departure box says '{words}' ({what})"


def test_the_front_page_promises_the_form():
    intro = PAGES["intro"]
    assert "rounded by hand or\nerred" in intro or "rounded by hand or erred" in intro
    assert "Departure from the source" in intro


class _Boxes(HTMLParser):
    """The class lists of the admonition divs of a built page, with the text of their titles."""

    def __init__(self) -> None:
        super().__init__()
        self.boxes: list[dict] = []
        self.stylesheets: list[str] = []
        self._in_title = 0

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        classes = (a.get("class") or "").split()
        if tag == "div" and "admonition" in classes:
            self.boxes.append({"classes": classes, "title": ""})
        if tag == "p" and "admonition-title" in classes and self.boxes:
            self._in_title = 1
        if tag == "link" and a.get("rel") == "stylesheet":
            self.stylesheets.append(a.get("href", ""))

    def handle_endtag(self, tag):
        if tag == "p":
            self._in_title = 0

    def handle_data(self, data):
        if self._in_title:
            self.boxes[-1]["title"] += data


def test_the_built_pages_keep_the_form_and_load_its_style(built_book):
    html = built_book.html
    css = (html / "_static" / "departure.css").read_text()
    assert "admonition.departure" in css and 'data-theme="dark"' in css and "@media print" in css
    counted = 0
    for page, text in PAGES.items():
        expected = [a for a in admonitions(text) if "departure" in a["classes"]]
        parser = _Boxes()
        parser.feed((html / f"{page}.html").read_text(encoding="utf-8"))
        built = [b for b in parser.boxes if "departure" in b["classes"]]
        assert len(built) == len(expected), f"{page}: {len(expected)} departure boxes in the source, {len(built)} built"
        for box in parser.boxes:
            assert ("departure" in box["classes"]) == box["title"].strip().startswith("Departure from"), (page, box)
        if built:
            assert any(href.split("?")[0].endswith("departure.css") for href in parser.stylesheets), f"{page} does not load departure.css"
        counted += len(built)
    assert counted >= len(KNOWN)
