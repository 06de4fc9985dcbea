"""The bibliography: references.bib parses, holds the book's keys, and every {cite} in the book resolves.

The strict build fails on an unknown key too, but only after executing every chapter; this test
says which file cites what in a second. The References page is in the table of contents, and the
build (Jupyter Book passes ``bibtex_bibfiles`` to sphinxcontrib-bibtex) reads references.bib.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml

pybtex_database = pytest.importorskip("pybtex.database")

ROOT = Path(__file__).resolve().parents[1]
BIB = ROOT / "references.bib"

# the keys the chapters were agreed to cite (more may be added)
KEYS = {
    "bahdanau2015",
    "luong2015",
    "vaswani2017",
    "britz2017",
    "shaw2018",
    "su2021",
    "milakov2018",
    "rabe2021",
    "dao2022",
    "dao2023",
    "sourcepost",
}
CITE = re.compile(r"\{cite(?::[a-z]+)?\}`([^`]+)`")


def _entries():
    return pybtex_database.parse_file(str(BIB), bib_format="bibtex").entries


def _book_texts() -> dict[str, str]:
    """The Markdown of every page of the book (notebook markdown cells included)."""
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    files = [toc["root"]] + [c["file"] for part in toc["parts"] for c in part["chapters"]]
    texts = {}
    for name in files:
        nb, md = ROOT / f"{name}.ipynb", ROOT / f"{name}.md"
        if nb.exists():
            cells = json.loads(nb.read_text())["cells"]
            texts[name] = "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "markdown")
        elif md.exists():
            texts[name] = md.read_text()
    return texts


def test_bib_holds_the_agreed_keys_and_each_entry_is_complete():
    entries = _entries()
    assert KEYS <= set(entries), f"missing keys: {sorted(KEYS - set(entries))}"
    for key, entry in entries.items():
        assert entry.fields.get("title"), f"{key} has no title"
        if key == "sourcepost":
            # the post names no author, no date and no address: the entry says so instead of inventing them
            assert "author" not in entry.persons and "year" not in entry.fields
            note = entry.fields["note"]
            assert "What Attention is Really Doing" in note and "Why Vanilla Attention Breaks at Scale" in note
            continue
        assert entry.persons.get("author"), f"{key} has no authors"
        assert re.fullmatch(r"(19|20)\d\d", entry.fields.get("year", "")), f"{key} has no year"
        assert any(f in entry.fields for f in ("booktitle", "journal", "eprint")), f"{key} names no venue"


def test_every_citation_in_the_book_is_in_the_bib_and_something_cites():
    keys = set(_entries())
    cited = {}
    for name, text in _book_texts().items():
        for group in CITE.findall(text):
            for key in (k.strip() for k in group.split(",")):
                cited.setdefault(key, []).append(name)
    unknown = {k: v for k, v in cited.items() if k not in keys}
    assert not unknown, f"cited but not in references.bib: {unknown}"
    assert cited, "nothing in the book cites anything"


def test_references_page_is_in_the_toc_and_the_build_reads_the_bib():
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    files = [c["file"] for part in toc["parts"] for c in part["chapters"]]
    assert "references" in files
    assert "{bibliography}" in (ROOT / "references.md").read_text()
    config = yaml.safe_load((ROOT / "_config.yml").read_text())
    assert config["bibtex_bibfiles"] == ["references.bib"]
    pins = [line.strip() for line in (ROOT / "requirements.txt").read_text().splitlines()]
    assert any(line.startswith("sphinxcontrib-bibtex==") for line in pins), "requirements.txt must pin sphinxcontrib-bibtex"
