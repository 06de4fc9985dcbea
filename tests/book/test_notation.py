"""The Notation page is the contract for symbols; the chapters keep to it.

What a test can check, it checks here:

* **one row per symbol**: no symbol is defined by two rows of the page (a symbol with two related
  senses names both in its one row);
* **every symbol is on the page**: each letter of a chapter's formulas (Latin or Greek, plain, bold,
  calligraphic or blackboard; subscripts are indices and labels and are not counted) is a symbol
  of one of the page's tables, of its index conventions or of its "general mathematics" line;
* **no symbol before its chapter**: a chapter uses a symbol only from the chapter that the page
  says introduces it (chapter 1 previews a few, listed in :data:`PREVIEWS`);
* **the meanings the referee found missing are on the page** (:data:`MEANINGS`).

Every chapter and the cheat sheet are held to the page. What a test cannot see is a letter reused with an
unrelated meaning under a subscript (subscripts are not counted): the page names such second senses in the
symbol's one row.
"""

from __future__ import annotations

import json
import re

import pytest
from support.paths import CHAPTERS, ROOT

NOTATION = ROOT / "notation.md"
HELD = sorted(CHAPTERS.glob("[01][0-9]-*.ipynb")) + [CHAPTERS / "cheatsheet.ipynb"]

GREEK = set(
    "alpha beta gamma delta epsilon varepsilon zeta eta theta vartheta iota kappa lambda mu nu xi pi rho sigma tau "
    "upsilon phi varphi chi psi omega Gamma Delta Theta Lambda Xi Pi Sigma Upsilon Phi Psi Omega ell".split()
)
STYLED = re.compile(r"\\(mathbf|boldsymbol|mathcal|mathbb)\s*\{?\s*\\?([A-Za-z]+)\s*\}?")
WORDS = re.compile(r"\\(text|operatorname|mathrm|textrm|label|tag|begin|end)\s*\{[^{}]*\}")

#: Symbols chapter 1 uses before their chapter, to preview what is coming.
PREVIEWS = {"01-running-example": {"q", "k", "Q", "K", "W"}}  # "a score is q_i k_j^T", "transformed by XW"

#: Symbols that two rows of the page may both define, because the second row narrows the first.
NARROWED = {
    "Q": "cross-attention's queries are the same Q, computed from the query sequence X_q",
    "K": "cross-attention's keys are the same K, computed from the memory X_m",
    "V": "cross-attention's values are the same V, computed from the memory X_m",
    "d_k": "with several heads the usual choice is d_k = d_v = d_model / H",
}

#: (chapter, symbol as the page writes it, words its row must contain): the meanings found missing.
MEANINGS = [
    ("02-compatibility-function", "\\Phi_q", "stacked as rows"),
    ("05-scaling", "\\beta", "constant factor"),
    ("05-scaling", "Y", "any random variable"),
    ("12-one-story", "e_{ij}", "whatever enters the softmax"),
    ("12-one-story", "\\alpha_{ij}", "either mechanism"),
    ("11-positional-information", "R_\\Delta", "\\text{PE}(t)\\, R_\\Delta^\\top"),
    ("06-walkthrough", "\\ell_i", "shifted by the running maximum"),
    ("14-attention-learns", "\\eta", "learning rate"),
    ("14-attention-learns", "\\varepsilon", "finite difference"),
    ("15-long-sequences", "\\mathcal{M}", "fast memory"),
    ("16-transformer-block", "\\kappa", "two heads"),
    ("17-induction-heads", "\\Omega", "OV circuit in tokens"),
]


def math_spans(markdown: str) -> list[str]:
    """The LaTeX of every display (``$$...$$``) and inline (``$...$``) formula, code left out.

    >>> math_spans("A $x_i$ and `$no$`, then\\n$$\\nS = QK^\\\\top\\n$$")
    ['\\nS = QK^\\\\top\\n', 'x_i']
    """
    text = re.sub(r"```.*?```", " ", markdown, flags=re.S)
    text = re.sub(r"`[^`\n]*`", " ", text)
    display = re.findall(r"\$\$(.*?)\$\$", text, flags=re.S)
    text = re.sub(r"\$\$.*?\$\$", " ", text, flags=re.S)
    return display + re.findall(r"\$([^$\n]+)\$", text)


def _without_subscripts(tex: str) -> str:
    out, i = [], 0
    while i < len(tex):
        if tex[i] != "_":
            out.append(tex[i])
            i += 1
            continue
        i += 1
        while i < len(tex) and tex[i] == " ":
            i += 1
        if i < len(tex) and tex[i] == "{":
            depth = 0
            while i < len(tex):
                depth += {"{": 1, "}": -1}.get(tex[i], 0)
                i += 1
                if depth == 0:
                    break
        elif i < len(tex) and tex[i] == "\\":
            m = re.match(r"\\[A-Za-z]+(\{[^{}]*\})?", tex[i:])
            i += m.end() if m else 2
        else:
            i += 1
        out.append(" ")
    return "".join(out)


def symbols(tex: str) -> set[str]:
    """The symbols of a formula: letters and Greek letters, with their style; subscripts are not counted.

    >>> sorted(symbols(r"\\operatorname{Var}(\\beta\\,\\mathbf{q}\\mathbf{k}^\\top) = \\beta^2 d_k"))
    ['beta', 'd', 'mathbf:k', 'mathbf:q']
    >>> sorted(symbols(r"e_{ij} = v_a^\\top \\tanh(W_a s_{i-1} + U_a h_j)"))
    ['U', 'W', 'e', 'h', 's', 'v']
    """
    tex = _without_subscripts(WORDS.sub(" ", tex))
    found = {f"{m[1]}:{m[2]}" for m in STYLED.finditer(tex)}
    tex = STYLED.sub(" ", tex)
    found |= {m[1] for m in re.finditer(r"\\([A-Za-z]+)", tex) if m[1] in GREEK}
    tex = re.sub(r"\\[A-Za-z]+", " ", tex)
    return found | set(re.findall(r"[A-Za-z]", tex))


def _markdown(path) -> str:
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    return "\n\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "markdown")


def _rows() -> list[dict]:
    """The rows of the page's symbol tables: symbol cell, meaning, the chapter that introduces it."""
    rows = []
    for line in NOTATION.read_text(encoding="utf-8").splitlines():
        if not line.startswith("| $"):
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        chapters = [int(n) for n in re.findall(r"chapter (\d+)", cells[-1])]
        if chapters:
            rows.append({"symbol": cells[0], "meaning": " | ".join(cells[1:-1]), "chapter": min(chapters)})
    return rows


def _top_level_parts(tex: str) -> list[str]:
    """``tex`` split at the commas and semicolons that are not inside brackets or braces."""
    parts, depth, current = [], 0, ""
    for ch in tex:
        depth += {"(": 1, "[": 1, "{": 1, ")": -1, "]": -1, "}": -1}.get(ch, 0)
        if ch in ",;" and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += ch
    return [*parts, current]


def _defined(symbol_cell: str) -> list[str]:
    """The symbols a row defines: ``$Q = XW_Q$`` defines ``Q``; ``$W_Q,\\ W_K$`` defines both.

    >>> _defined(r"$\\lambda_\\text{RNN}(i, j),\\ \\lambda_\\text{attn}(i, j)$")
    ['\\\\lambda_\\\\text{RNN}(i,j)', '\\\\lambda_\\\\text{attn}(i,j)']
    """
    names = []
    for span in math_spans(symbol_cell):
        for part in _top_level_parts(span):
            name = re.sub(r"^\\[ ,;]|\\[ ,;]$", "", part.split("=")[0].strip()).strip()
            if name:
                names.append(re.sub(r"\s+", "", name))
    return names


def _convention_symbols() -> set[str]:
    """Symbols of the page's index conventions and its line on general mathematics (known from chapter 1)."""
    text = NOTATION.read_text(encoding="utf-8")
    found = set()
    for lead in ("- **Indices.**", "- **General mathematics**"):
        start = text.find(lead)
        if start < 0:
            continue
        end = text.find("\n- **", start + 1)
        for span in math_spans(text[start:end]):
            found |= symbols(span)
    return found


def _introduced() -> dict[str, int]:
    first: dict[str, int] = {s: 1 for s in _convention_symbols()}
    for row in _rows():
        for s in symbols(" ".join(math_spans(row["symbol"]))):
            first[s] = min(first.get(s, 99), row["chapter"])
    return first


def test_the_page_is_read():
    """A guard against a parser that silently finds nothing."""
    rows, first = _rows(), _introduced()
    assert len(rows) > 80
    assert {"S", "Z", "A", "ell", "Delta", "mathbf:q", "boldsymbol:beta"} <= set(first)
    assert first["S"] == 2 and first["R"] == 11


def test_no_symbol_is_defined_by_two_rows():
    seen: dict[str, list[str]] = {}
    for row in _rows():
        for name in _defined(row["symbol"]):
            seen.setdefault(name, []).append(row["meaning"][:60])
    twice = {name: where for name, where in seen.items() if len(where) > 1 and name not in NARROWED}
    assert not twice, f"symbols with two rows on the Notation page (give each one row, naming every sense): {twice}"


@pytest.mark.parametrize("path", HELD, ids=lambda p: p.stem)
def test_every_symbol_of_the_chapter_is_on_the_notation_page(path):
    first = _introduced()
    used = set().union(*(symbols(span) for span in math_spans(_markdown(path))))
    missing = sorted(used - set(first))
    assert not missing, f"{path.name} uses symbols the Notation page does not list: {missing}"


@pytest.mark.parametrize("path", [p for p in HELD if p.stem[:2].isdigit()], ids=lambda p: p.stem)
def test_no_symbol_is_used_before_the_chapter_that_introduces_it(path):
    first = _introduced()
    chapter = int(path.stem[:2])
    used = set().union(*(symbols(span) for span in math_spans(_markdown(path))))
    early = sorted(s for s in used if first.get(s, 0) > chapter and s not in PREVIEWS.get(path.stem, set()))
    where = {s: first[s] for s in early}
    assert not early, (
        f"{path.name} (chapter {chapter}) uses symbols that the Notation page introduces later: {where}. "
        "Either the page names the wrong chapter or the chapter reuses a letter for something else."
    )


@pytest.mark.parametrize("chapter, symbol, words", MEANINGS, ids=[f"{c[:2]}-{s}" for c, s, _ in MEANINGS])
def test_the_page_gives_the_meaning_the_chapter_uses(chapter, symbol, words):
    assert symbol in {s for row in _rows() for s in _defined(row["symbol"])} or any(
        symbol in row["symbol"] for row in _rows()
    ), f"{symbol} has no row on the Notation page"
    rows = [row for row in _rows() if symbol in _defined(row["symbol"]) or symbol in row["symbol"]]
    assert any(words in row["meaning"] for row in rows), f"the row of {symbol} should say '{words}' (used so in {chapter})"
