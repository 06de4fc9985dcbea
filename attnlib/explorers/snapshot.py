"""The explorers' static face, the parts every kind shares: HTML tables, text rows, the embedding.

A web page without JavaScript, a print and any notebook viewer without the
widget front end show this snapshot; the live explorer replaces it where its
module runs. Values have 4 decimals on ``cividis`` backgrounds, masked
scores read ``−∞`` on grey, the weights carry row sums, and a query row that
may attend to no key shows its message instead of numbers. Every token label
is escaped. Colours come from :mod:`attnlib.plots`, number formats from :mod:`attnlib.formatting`.

Examples
--------
>>> html_text = matrix_html([[0.5, 0.25]], ["<x1>"], ["a", "b"], title="w", row_sums=True)
>>> "0.7500" in html_text and "&lt;x1&gt;" in html_text and "<x1>" not in html_text
True
"""

from __future__ import annotations

import html
import json
import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from .._validate import as_array, as_flag
from ..formatting import NEG_INF_TEXT, format_value
from ..plots import MASKED_COLOUR, OKABE_ITO, colour_table

__all__ = [
    "ACCENT_COLOUR",
    "CHANGED_COLOUR",
    "CSS",
    "SNAPSHOT_NOTE",
    "embed_html",
    "esc",
    "facts",
    "flex",
    "fmt",
    "matrix_html",
    "matrix_text",
    "state_json",
    "style_data",
    "table_html",
]

#: Shown above every static snapshot; the live explorer hides the snapshot where its module runs.
SNAPSHOT_NOTE = (
    "Static snapshot of this setting: the numbers below do not move. Where JavaScript runs, the web page "
    "puts the live explorer in its place; in JupyterLab, Binder or JupyterLite, run the notebook for the live widget."
)

CHANGED_COLOUR = OKABE_ITO[5]  # vermillion, far from every cividis colour
ACCENT_COLOUR = OKABE_ITO[4]
DECIMALS = 4
_SR_ONLY = "position:absolute;width:1px;height:1px;margin:-1px;padding:0;overflow:hidden;clip:rect(0,0,0,0);white-space:nowrap;border:0"

#: The look of the snapshot tables (each cell's colours stay inline).
CSS = (
    "<style>"
    ".attnlib-view{border-collapse:collapse;margin:0 14px 10px 0;font-family:monospace;font-size:13px}"
    ".attnlib-view caption{caption-side:top;text-align:left;font-family:sans-serif;font-weight:bold;padding:2px 0}"
    ".attnlib-view th{padding:3px 6px;font-weight:bold;text-align:center;font-family:sans-serif;background:none}"
    ".attnlib-view td{padding:3px 7px;text-align:right;border:1px solid #fff;min-width:4.2em}"
    f".attnlib-view td.attnlib-masked{{background:{MASKED_COLOUR};color:#000}}"
    ".attnlib-view td.attnlib-rowsum{background:#fff;color:#000}"
    f".attnlib-view td.attnlib-message,p.attnlib-message{{padding:3px 8px;border:2px dashed {CHANGED_COLOUR};"
    "font-family:sans-serif;font-size:12px;background:#fff7f0;color:#000;text-align:left}"
    f".attnlib-view tr.attnlib-highlight{{outline:2px solid {ACCENT_COLOUR}}}"
    ".attnlib-view tr.attnlib-highlight td{font-weight:bold}"
    # the static snapshot brings its own light ground, like the book's figures, also in a dark theme
    ".attnlib-snapshot{background:#fff;color:#1a1a1a;padding:6px 8px;border-radius:4px}"
    ".attnlib-view caption,.attnlib-view th,.attnlib-snapshot p,.attnlib-snapshot figcaption{color:inherit}"
    f".attnlib-sr{{{_SR_ONLY}}}"
    "</style>"
)

_LUT: tuple[list[str], list[str]] | None = None


def _lut() -> tuple[list[str], list[str]]:
    global _LUT
    if _LUT is None:
        _LUT = colour_table(256)
    return _LUT


def style_data() -> dict[str, Any]:
    """The colours and number format of the front end (the ``look`` trait; ipywidgets reserves ``style``), from :mod:`attnlib.plots`.

    Examples
    --------
    >>> s = style_data()
    >>> len(s["lut"]), s["neg_inf"], s["decimals"]
    (256, '−∞', 4)
    """
    bg, fg = _lut()
    return {
        "lut": list(bg),
        "text": list(fg),
        "masked_bg": MASKED_COLOUR,
        "changed": CHANGED_COLOUR,
        "accent": ACCENT_COLOUR,
        "palette": list(OKABE_ITO),
        "neg_inf": NEG_INF_TEXT,
        "decimals": DECIMALS,
    }


def esc(text: Any) -> str:
    """``text`` (any value, shown as its ``str``) escaped for HTML, quotes included.

    Raises
    ------
    ValueError
        Never for the settings its explorer has checked: this is the explorer's plumbing, which checks nothing itself
        (call it with other input and numpy's own errors may come). Use the explorer's settings instead.
    """
    return html.escape(str(text), quote=True)


def fmt(value: float, decimals: int = DECIMALS) -> str:
    """One value as the explorers show it (:func:`attnlib.formatting.format_value`); NaN and +inf as ``nan``/``inf``.

    Raises
    ------
    ValueError
        Never for the settings its explorer has checked: this is the explorer's plumbing, which checks nothing itself
        (call it with other input and numpy's own errors may come). Use the explorer's settings instead.
    """
    if math.isnan(value) or math.isinf(value) and value > 0:
        return str(value)
    return format_value(value, decimals)


def state_json(state: Mapping[str, Any]) -> str:
    """The state as JSON that is safe inside ``<script>``: ``<``, ``>`` and ``&`` are ``\\u`` escapes.

    Raises
    ------
    ValueError
        Never for the settings its explorer has checked: this is the explorer's plumbing, which checks nothing itself
        (call it with other input and numpy's own errors may come). Use the explorer's settings instead.

    Examples
    --------
    >>> state_json({"tokens": ["</script>"]})
    '{"tokens": ["\\\\u003c/script\\\\u003e"]}'
    """
    text = json.dumps(state, ensure_ascii=False, allow_nan=False)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def embed_html(kind: str, title: str, state: Mapping[str, Any], snapshot: str) -> str:
    """The ``text/html`` output: the state for the page's host, then the snapshot with its note.

    Raises
    ------
    ValueError
        Never for the settings its explorer has checked: this is the explorer's plumbing, which checks nothing itself
        (call it with other input and numpy's own errors may come). Use the explorer's settings instead.
    """
    return (
        f'<div class="attnlib-explorer" data-attnlib-kind="{esc(kind)}">'
        f'<script type="application/json" class="attnlib-state">{state_json(state)}</script>'
        f'<div class="attnlib-snapshot" role="group" aria-label="{esc(title)} (static snapshot)">'
        f'<p class="attnlib-snapshot-note" style="font-family:sans-serif;font-size:13px;font-style:italic;'
        f'border-left:4px solid {ACCENT_COLOUR};padding:4px 8px;margin:4px 0 8px 0">'
        f"<strong>{esc(title)}.</strong> {esc(SNAPSHOT_NOTE)}</p>"
        f"{CSS}{snapshot}</div></div>"
    )


def table_html(
    M: Any,
    row_labels: Sequence[str],
    col_labels: Sequence[str],
    *,
    name: str,
    title: str,
    vmin: float | None = None,
    vmax: float | None = None,
    row_sums: bool = False,
    row_messages: Mapping[int, str] | None = None,
    highlight_row: int | None = None,
    decimals: int = DECIMALS,
) -> str:
    """One matrix as an accessible HTML table (``th`` headers, caption, values on colour, ``decimals`` places).

    Raises
    ------
    ValueError
        Never for the settings its explorer has checked: this is the explorer's plumbing, which checks nothing itself
        (call it with other input and numpy's own errors may come). Use the explorer's settings instead.
    """
    M = np.asarray(M, dtype=float)
    row_messages = row_messages or {}
    n_rows, n_cols = M.shape
    shown = np.ones(M.shape, dtype=bool)
    for i in row_messages:
        shown[i] = False
    finite = np.isfinite(M) & shown
    lo = float(M[finite].min()) if vmin is None and finite.any() else (0.0 if vmin is None else vmin)
    hi = float(M[finite].max()) if vmax is None and finite.any() else (1.0 if vmax is None else vmax)
    hexes, fgs = _lut()
    span = hi - lo
    with np.errstate(over="ignore", invalid="ignore"):
        frac = (np.where(finite, M, lo) - lo) / span if span > 0 and math.isfinite(span) else np.full(M.shape, 0.5)
    idx = np.where(finite, np.clip(np.rint(255 * np.nan_to_num(frac, nan=0.5)), 0, 255), -1).astype(int).tolist()
    values = M.tolist()
    head = "".join(f'<th scope="col">{esc(c)}</th>' for c in col_labels)
    if row_sums:
        head += '<th scope="col" title="sum of the row">row sum</th>'
    rows = []
    for i in range(n_rows):
        label = f'<th scope="row">{esc(row_labels[i])}</th>'
        if i in row_messages:
            width = n_cols + (1 if row_sums else 0)
            rows.append(
                f'<tr data-i="{i}">{label}<td colspan="{width}" class="attnlib-message" data-i="{i}" role="note">'
                f"{esc(row_messages[i])}</td></tr>"
            )
            continue
        cells = []
        for j in range(n_cols):
            k = idx[i][j]
            attrs = f' style="background:{hexes[k]};color:{fgs[k]}"' if k >= 0 else ' class="attnlib-masked"'
            cells.append(f'<td data-i="{i}" data-j="{j}"{attrs}>{fmt(values[i][j], decimals)}</td>')
        if row_sums:
            cells.append(f'<td class="attnlib-rowsum" data-i="{i}">{fmt(float(M[i].sum()), decimals)}</td>')
        row_class = ' class="attnlib-highlight"' if highlight_row == i else ""
        rows.append(f'<tr data-i="{i}"{row_class}>{label}{"".join(cells)}</tr>')
    return (
        f'<table class="attnlib-view" data-view="{esc(name)}"><caption>{esc(title)}</caption>'
        f"<thead><tr><td class='attnlib-corner'></td>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"
    )


def matrix_html(
    matrix: Any,
    row_labels: Sequence[str] | None = None,
    col_labels: Sequence[str] | None = None,
    *,
    title: str = "",
    name: str = "matrix",
    row_sums: bool = False,
) -> str:
    """A matrix as an accessible HTML table: values to 4 decimals on ``cividis`` backgrounds.

    ``-inf`` cells (masked scores) are grey and show ``−∞``. Row and column
    headers are ``<th>`` cells, so a screen reader announces the token of
    every value; the title is the table's caption.

    Raises
    ------
    ValueError
        ``matrix`` is not finite real numbers of the expected shape; ``row_labels`` or ``col_labels`` is not a list of
        one label per row; ``title`` or ``name`` is not a text (a ``str``); ``row_sums`` is not ``True`` or ``False``.
        The message names the argument.

    Examples
    --------
    >>> html_text = matrix_html([[0.5, 0.25]], ["x1"], ["x1", "x2"], title="w", row_sums=True)
    >>> "0.2500" in html_text and "0.7500" in html_text and "<caption" in html_text
    True
    """
    # attnlib's one rule of what an array of real numbers is; -inf (a masked score) is shown as such
    m = as_array("matrix", matrix, (1, 2), allow_neg_inf=True)
    row_sums = as_flag("row_sums", row_sums)
    for label, text in (("title", title), ("name", name)):
        if not isinstance(text, str):
            raise ValueError(f"{label} must be a text; got {text!r}")
    for label, labels in (("row_labels", row_labels), ("col_labels", col_labels)):
        if labels is not None and (isinstance(labels, (str, bytes)) or not isinstance(labels, (Sequence, np.ndarray))):
            raise ValueError(f"{label} must be a list of labels; got {labels!r}")
    if m.ndim == 1:
        m = m[None, :]
    rows = list(row_labels) if row_labels is not None else [str(i + 1) for i in range(m.shape[0])]
    cols = list(col_labels) if col_labels is not None else [str(j + 1) for j in range(m.shape[1])]
    if len(rows) != m.shape[0] or len(cols) != m.shape[1]:
        raise ValueError(f"labels ({len(rows)} rows, {len(cols)} columns) do not fit the matrix of shape {m.shape}")
    return CSS + table_html(m, rows, cols, name=name, title=title, row_sums=row_sums)


def matrix_text(M: Any, labels: Sequence[str], *, messages: Sequence[str | None] | None = None, decimals: int = DECIMALS) -> str:
    """A matrix as indented lines ``label: v1  v2 ...``; a row with a message prints the message.

    Raises
    ------
    ValueError
        Never for the settings its explorer has checked: this is the explorer's plumbing, which checks nothing itself
        (call it with other input and numpy's own errors may come). Use the explorer's settings instead.

    Examples
    --------
    >>> print(matrix_text([[0.5, -np.inf]], ["x1"]))
      x1: 0.5000  −∞
    """
    M = np.asarray(M, dtype=float)
    lines = []
    for i, label in enumerate(labels):
        if messages is not None and messages[i]:
            lines.append(f"  {label}: {messages[i]}")
        else:
            lines.append(f"  {label}: " + "  ".join(fmt(float(v), decimals) for v in M[i]))
    return "\n".join(lines)


def flex(*parts: str) -> str:
    """The HTML ``parts`` (tables of a snapshot) side by side, wrapping on a narrow page.

    Raises
    ------
    ValueError
        Never for the settings its explorer has checked: this is the explorer's plumbing, which checks nothing itself
        (call it with other input and numpy's own errors may come). Use the explorer's settings instead.
    """
    return '<div style="display:flex;flex-wrap:wrap;align-items:flex-start">' + "".join(parts) + "</div>"


def facts(text: str) -> str:
    """A paragraph of ``text`` (escaped) above a snapshot's tables.

    Raises
    ------
    ValueError
        Never for the settings its explorer has checked: this is the explorer's plumbing, which checks nothing itself
        (call it with other input and numpy's own errors may come). Use the explorer's settings instead.
    """
    return f'<p style="font-family:sans-serif;font-size:13px">{esc(text)}</p>'
