"""The explorers' static face: HTML tables and a text summary of one setting.

A web page without JavaScript, a print and any notebook viewer without the
widget front end show this snapshot; the live explorer replaces it where its
module runs. Values have 4 decimals on ``cividis`` backgrounds, masked
scores read ``−∞`` on grey, the weights carry row sums, and a query row that
may attend to no key shows its message instead of numbers. Every token label
is escaped. Colours and number formats come from :mod:`attnlib.plots`.

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
from ..plots import MASKED_COLOUR, NEG_INF_TEXT, OKABE_ITO, colour_table, format_value
from .state import AttentionViews

__all__ = [
    "blocks_snapshot",
    "SNAPSHOT_NOTE",
    "CSS",
    "style_data",
    "state_json",
    "embed_html",
    "matrix_html",
    "table_html",
    "matrix_text",
    "plane_svg",
    "attention_snapshot",
    "attention_summary",
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


def _esc(text: Any) -> str:
    return html.escape(str(text), quote=True)


def _fmt(value: float) -> str:
    if math.isnan(value) or math.isinf(value) and value > 0:
        return str(value)
    return format_value(value, DECIMALS)


def state_json(state: Mapping[str, Any]) -> str:
    """The state as JSON that is safe inside ``<script>``: ``<``, ``>`` and ``&`` are ``\\u`` escapes.

    Examples
    --------
    >>> state_json({"tokens": ["</script>"]})
    '{"tokens": ["\\\\u003c/script\\\\u003e"]}'
    """
    text = json.dumps(state, ensure_ascii=False, allow_nan=False)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def embed_html(kind: str, title: str, state: Mapping[str, Any], snapshot: str) -> str:
    """The ``text/html`` output: the state for the page's host, then the snapshot with its note."""
    return (
        f'<div class="attnlib-explorer" data-attnlib-kind="{_esc(kind)}">'
        f'<script type="application/json" class="attnlib-state">{state_json(state)}</script>'
        f'<div class="attnlib-snapshot" role="group" aria-label="{_esc(title)} (static snapshot)">'
        f'<p class="attnlib-snapshot-note" style="font-family:sans-serif;font-size:13px;font-style:italic;'
        f'border-left:4px solid {ACCENT_COLOUR};padding:4px 8px;margin:4px 0 8px 0">'
        f"<strong>{_esc(title)}.</strong> {_esc(SNAPSHOT_NOTE)}</p>"
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
) -> str:
    """One matrix as an accessible HTML table (``th`` headers, caption, values on colour)."""
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
    head = "".join(f'<th scope="col">{_esc(c)}</th>' for c in col_labels)
    if row_sums:
        head += '<th scope="col" title="sum of the row">row sum</th>'
    rows = []
    for i in range(n_rows):
        label = f'<th scope="row">{_esc(row_labels[i])}</th>'
        if i in row_messages:
            width = n_cols + (1 if row_sums else 0)
            rows.append(
                f'<tr data-i="{i}">{label}<td colspan="{width}" class="attnlib-message" data-i="{i}" role="note">'
                f"{_esc(row_messages[i])}</td></tr>"
            )
            continue
        cells = []
        for j in range(n_cols):
            k = idx[i][j]
            attrs = f' style="background:{hexes[k]};color:{fgs[k]}"' if k >= 0 else ' class="attnlib-masked"'
            cells.append(f'<td data-i="{i}" data-j="{j}"{attrs}>{_fmt(values[i][j])}</td>')
        if row_sums:
            cells.append(f'<td class="attnlib-rowsum" data-i="{i}">{_fmt(float(M[i].sum()))}</td>')
        row_class = ' class="attnlib-highlight"' if highlight_row == i else ""
        rows.append(f'<tr data-i="{i}"{row_class}>{label}{"".join(cells)}</tr>')
    return (
        f'<table class="attnlib-view" data-view="{_esc(name)}"><caption>{_esc(title)}</caption>'
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


def matrix_text(M: Any, labels: Sequence[str], *, messages: Sequence[str | None] | None = None) -> str:
    """A matrix as indented lines ``label: v1  v2 ...``; a row with a message prints the message.

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
            lines.append(f"  {label}: " + "  ".join(_fmt(float(v)) for v in M[i]))
    return "\n".join(lines)


def _flex(*parts: str) -> str:
    return '<div style="display:flex;flex-wrap:wrap;align-items:flex-start">' + "".join(parts) + "</div>"


def _facts(text: str) -> str:
    return f'<p style="font-family:sans-serif;font-size:13px">{_esc(text)}</p>'


def plane_svg(X: np.ndarray, output: np.ndarray | None, tokens: Sequence[str], messages: Sequence[str | None]) -> str:
    """Tokens (solid) and outputs (dashed) as arrows in the noun/verb plane, as an inline SVG."""
    n = len(tokens)
    rows = [i for i in range(n) if output is not None and not messages[i]]
    pts = np.vstack([X] + ([output[rows]] if rows else []))
    lim = max(1.2, float(np.abs(pts).max()) * 1.15)
    size, pad = 230, 18

    def xy(p: np.ndarray) -> tuple[float, float]:
        return pad + (p[0] + lim) / (2 * lim) * (size - 2 * pad), size - pad - (p[1] + lim) / (2 * lim) * (size - 2 * pad)

    ox, oy = xy(np.zeros(2))
    items = [
        f'<line x1="{pad}" y1="{oy:.1f}" x2="{size - pad}" y2="{oy:.1f}" stroke="#999" stroke-width="1"/>',
        f'<line x1="{ox:.1f}" y1="{pad}" x2="{ox:.1f}" y2="{size - pad}" stroke="#999" stroke-width="1"/>',
        f'<text x="{size - pad}" y="{oy + 12:.1f}" font-size="10" text-anchor="end" fill="#555">noun &#8594;</text>',
        f'<text x="{ox - 4:.1f}" y="{pad + 8}" font-size="10" text-anchor="end" fill="#555">verb &#8593;</text>',
    ]
    desc = []
    for i, t in enumerate(tokens):
        colour = OKABE_ITO[i % len(OKABE_ITO)]
        out_vec = output[i] if i in rows else None
        for vec, label, dash in ((X[i], t, ""), (out_vec, f"o{i + 1}", ' stroke-dasharray="5,3"')):
            if vec is None:
                continue
            x, y = xy(vec)
            items.append(f'<line x1="{ox:.1f}" y1="{oy:.1f}" x2="{x:.1f}" y2="{y:.1f}" stroke="{colour}" stroke-width="2.5"{dash}/>')
            items.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3.5" fill="{colour}"/>')
            # token labels above-right of the tip, output labels below-right: an output on top of a token stays readable
            dy = 12 if dash else -4
            items.append(f'<text x="{x + 4:.1f}" y="{y + dy:.1f}" font-size="11">{_esc(label)}</text>')
            desc.append(f"{label} at ({vec[0]:.2f}, {vec[1]:.2f})")
    label = "Noun/verb plane: tokens as solid arrows, outputs as dashed arrows; " + "; ".join(desc)
    return (
        f'<figure style="margin:0 14px 10px 0"><svg role="img" aria-label="{_esc(label)}" width="{size}" height="{size}" '
        f'viewBox="0 0 {size} {size}" style="background:#fff;border:1px solid #ccc">{"".join(items)}</svg>'
        f'<figcaption style="font-family:sans-serif;font-size:12px">tokens (solid) and outputs (dashed)</figcaption></figure>'
    )


def divisor_text(dk: int, divisor: float) -> str:
    """``no scaling: scores divided by 1`` or ``scores divided by √d_k = ...``."""
    return "no scaling: scores divided by 1" if dk == 0 else f"scores divided by \u221a{dk} = {divisor:.4f}"


def attention_snapshot(
    *,
    tokens: Sequence[str],
    X: np.ndarray,
    views: AttentionViews,
    view_names: Sequence[str],
    settings: Sequence[str],
    dk: int,
) -> str:
    """The attention explorer's tables for one setting (the views it shows, in its order)."""
    n, d = X.shape
    toks = list(tokens)
    dims = [f"d{j + 1}" for j in range(d)]
    msgs = {i: m for i, m in enumerate(views.messages) if m}
    tables: dict[str, str] = {}
    head = f'<p style="font-family:monospace;font-size:12px">{_esc("; ".join(settings))}</p>' if settings else ""
    if views.error:
        return head + f'<p class="attnlib-message" role="note">{_esc(views.error)}</p>'
    for key, M, labels, cols, title in (
        ("Q", views.Q, [f"q{i + 1}" for i in range(n)], dims, "Q = X W_Q"),
        ("K", views.K, [f"k{i + 1}" for i in range(n)], dims, "K = X W_K"),
        ("V", views.V, [f"v{i + 1}" for i in range(n)], dims, "V = X W_V"),
        ("scores", views.scores, toks, toks, "scores Q K\u1d40 (rows: queries, columns: keys)"),
        ("scaled", views.scaled, toks, toks, f"scaled and masked scores ({divisor_text(dk, views.divisor)}; \u2212\u221e = masked)"),
    ):
        if key in view_names and M is not None:
            tables[key] = table_html(M, labels, cols, name=key, title=title)
    if "weights" in view_names:
        tables["weights"] = table_html(
            views.weights, toks, toks, name="weights", title="softmax weights (each row sums to 1)",
            vmin=0.0, vmax=1.0, row_sums=True, row_messages=msgs,
        )  # fmt: skip
    if "output" in view_names:
        tables["output"] = table_html(
            views.output, [f"o{i + 1}" for i in range(n)], dims, name="output", title="outputs O = weights \u00b7 V", row_messages=msgs
        )
    if "plane" in view_names and d == 2:
        tables["plane"] = plane_svg(X, views.output, toks, views.messages)
    if views.message:
        head += f'<p class="attnlib-message" role="note">{_esc(views.message)}</p>'
    layout = [["Q", "K", "V"], ["scores", "scaled"], ["weights", "output", "plane"]]
    return head + "".join(_flex(*[tables[k] for k in row if k in tables]) for row in layout if any(k in tables for k in row))


def attention_summary(*, title: str, tokens: Sequence[str], views: AttentionViews, settings: Sequence[str], show_values: bool) -> str:
    """The text/plain face of the attention explorer: setting, values, weights and outputs."""
    n = len(tokens)
    lines = [f"{title} ({', '.join(tokens)})", *settings]
    if show_values and np.isfinite(views.V).all():  # overflowed values are not numbers to show: the error says so
        lines += ["values V:", matrix_text(views.V, [f"v{i + 1}" for i in range(n)])]
    if views.error:
        lines.append(views.error)
        return "\n".join(lines)
    lines += ["weights (each row sums to 1):", matrix_text(views.weights, tokens, messages=views.messages)]
    lines += ["outputs:", matrix_text(views.output, [f"o{i + 1}" for i in range(n)], messages=views.messages)]
    return "\n".join(lines)


def scaling_snapshot(d_k: int, n_samples: int, view: Mapping[str, np.ndarray], spread: tuple[float, float]) -> tuple[str, str]:
    """The scaling explorer's tables and its text summary."""
    raw, scaled, w_raw, w_scaled = view["raw"], view["scaled"], view["raw_weights"], view["scaled_weights"]
    keys = [f"k{j + 1}" for j in range(raw.shape[1])]
    facts = (
        f"d_k = {d_k}. Spread (standard deviation) of {n_samples**2} scores of random vectors: "
        f"{spread[0]:.4f} unscaled (about \u221ad_k = {math.sqrt(d_k):.4f}), {spread[1]:.4f} after dividing by \u221ad_k. "
        f"Largest weight of the query: {w_raw.max():.4f} unscaled, {w_scaled.max():.4f} scaled."
    )
    tables = _flex(
        table_html(
            np.vstack([raw, scaled]), ["q\u00b7k", "q\u00b7k/\u221ad_k"], keys, name="scores", title="scores of one query against six keys"
        ),
        table_html(
            np.vstack([w_raw, w_scaled]), ["unscaled", "scaled"], keys, name="weights", title="softmax weights",
            vmin=0.0, vmax=1.0, row_sums=True,
        ),  # fmt: skip
    )
    text = "\n".join(
        [
            facts,
            "scores (unscaled): " + "  ".join(_fmt(float(v)) for v in raw[0]),
            "scores (scaled):   " + "  ".join(_fmt(float(v)) for v in scaled[0]),
            "weights (unscaled): " + "  ".join(_fmt(float(v)) for v in w_raw[0]),
            "weights (scaled):   " + "  ".join(_fmt(float(v)) for v in w_scaled[0]),
        ]
    )
    return _facts(facts) + tables, text


def scale_comparison_snapshot(length: float, tokens: Sequence[str], raw: Any, scaled: Any) -> tuple[str, str]:
    """The scale comparison explorer's two weight tables and its text summary (``raw``/``scaled``: AttentionResults)."""
    toks = list(tokens)
    facts = (
        f"Vectors stretched by {length:.2f}: the scores grow by {length**2:.4f}. "
        f"Largest weight per row, unscaled: {', '.join(_fmt(float(v)) for v in raw.weights.max(axis=1))}; "
        f"scaled: {', '.join(_fmt(float(v)) for v in scaled.weights.max(axis=1))}."
    )
    tables = _flex(
        table_html(raw.weights, toks, toks, name="unscaled", title="weights without scaling", vmin=0.0, vmax=1.0, row_sums=True),
        table_html(
            scaled.weights, toks, toks, name="scaled", title=f"weights, scores divided by \u221a2 = {scaled.divisor:.4f}",
            vmin=0.0, vmax=1.0, row_sums=True,
        ),  # fmt: skip
    )
    text = "\n".join(
        [facts, "weights without scaling:", matrix_text(raw.weights, toks), "weights with scaling:", matrix_text(scaled.weights, toks)]
    )
    return _facts(facts) + tables, text


def head_count_snapshot(n_heads: int, d_model: int, params: int, tokens: Sequence[str], weights: np.ndarray) -> tuple[str, str]:
    """One weight table per head and the text summary of the head count explorer."""
    d_head = d_model // n_heads
    toks = list(tokens)
    tables = _flex(
        *[
            table_html(
                weights[r], toks, toks, name=f"head{r}",
                title=f"head {r + 1}: weights (columns {r * d_head + 1}\u2013{(r + 1) * d_head})", vmin=0.0, vmax=1.0,
            )  # fmt: skip
            for r in range(n_heads)
        ]
    )
    facts = (
        f"{n_heads} head(s) of width d_head = {d_model} / {n_heads} = {d_head}: {n_heads} attention pattern(s) per token. "
        f"Parameters of the block: 4 \u00b7 {d_model}\u00b2 = {params}, whatever the number of heads."
    )
    text = "\n".join([facts] + [f"head {r + 1} weights:\n" + matrix_text(weights[r], toks) for r in range(n_heads)])
    return _facts(facts) + tables, text


def positional_snapshot(position: int, d_model: int, pe: np.ndarray, freqs: Sequence[float], similarity: np.ndarray) -> tuple[str, str]:
    """The PE table (row t outlined), the dot products with PE(t), and the text summary."""
    n = pe.shape[0]
    cols = [f"{'sin' if c % 2 == 0 else 'cos'} \u03c9{c // 2}" for c in range(d_model)]
    rows = [f"t={p}" for p in range(n)]
    tables = _flex(
        table_html(
            pe, rows, cols, name="pe", title=f"PE for positions 0\u2013{n - 1}, d_model = {d_model} (row t outlined)",
            vmin=-1.0, vmax=1.0, highlight_row=position,
        ),  # fmt: skip
        table_html(
            np.asarray(similarity)[:, None], rows, [f"PE(t={position})\u00b7PE"], name="similarity", title="dot product with every position"
        ),
    )
    facts = (
        f"PE(t={position}) = (" + ", ".join(_fmt(float(v)) for v in pe[position]) + "). "
        "Frequencies \u03c9 = " + ", ".join(_fmt(float(w)) for w in freqs) + "."
    )
    return _facts(facts) + tables, facts + "\n" + matrix_text(pe, rows)


def training_snapshot(view: Mapping[str, Any], last_step: int, tokens: Sequence[str], features: Sequence[str]) -> tuple[str, str]:
    """The training explorer's two tables (attention map, ``W_Q W_K^T``) and its text summary."""
    toks, feats = list(tokens), list(features)
    facts = (
        f"Step {view['step']} of {last_step}: loss {_fmt(view['loss'])} on the held-out batch; "
        f"mean weight on the previous token {_fmt(view['previous'])}."
    )
    tables = _flex(
        table_html(
            view["weights"], toks, toks, name="weights", title=f"attention weights of one held-out sequence at step {view['step']}",
            vmin=0.0, vmax=1.0, row_sums=True,
        ),  # fmt: skip
        table_html(view["bilinear"], feats, feats, name="bilinear", title="W_Q W_K^T (rows: query features, columns: key features)"),
    )
    text = "\n".join([facts, "attention weights:", matrix_text(view["weights"], toks), "W_Q W_K^T:", matrix_text(view["bilinear"], feats)])
    return _facts(facts) + tables, text
def blocks_snapshot(
    n: int, block_size: int, dtype: str, d_k: int, causal: bool, memory: Mapping[str, Any], step: int, block: Any
) -> tuple[str, str]:
    """The long-sequence explorer's memory table, a picture of the chosen step's strip of scores, and its text summary."""
    size = 220
    scale = size / n
    (k0, k1), (r0, r1) = block.keys, block.rows
    where = f"step {step} of {memory['steps']}: keys {k0 + 1} to {k1}, queries {r0 + 1} to {r1}"
    diagonal = f'<line x1="0" y1="0" x2="{size}" y2="{size}" stroke="black" stroke-dasharray="4 3"/>' if causal else ""
    picture = (
        f'<svg width="{size + 40}" height="{size + 40}" viewBox="-30 -10 {size + 40} {size + 40}" role="img" '
        f'aria-label="{_esc(f"The {n} x {n} score matrix at {where}.")}">'
        f'<rect x="0" y="0" width="{size}" height="{size}" fill="white" stroke="black"/>'
        f'<rect x="{k0 * scale:.3f}" y="{r0 * scale:.3f}" width="{max(1.0, (k1 - k0) * scale):.3f}" '
        f'height="{max(1.0, (r1 - r0) * scale):.3f}" fill="{ACCENT_COLOUR}"/>{diagonal}'
        f'<text x="{size / 2}" y="{size + 22}" text-anchor="middle" font-size="12">keys</text>'
        f'<text x="-12" y="{size / 2}" text-anchor="middle" font-size="12" transform="rotate(-90 -12 {size / 2})">queries</text>'
        "</svg>"
    )
    rows = [
        ("n \u00d7 n score matrix", memory["dense"]),
        (f"blocked working set ({block_size} keys per step)", memory["blocked"]),
        ("ratio", f"{memory['ratio']}\u00d7 less"),
    ]
    table = (
        '<table class="attnlib-view" data-view="memory">'
        f"<caption>{_esc(f'memory of one head, {dtype}, d_k = {d_k}')}</caption>"
        "<tbody>" + "".join(f'<tr><th scope="row">{_esc(a)}</th><td data-j="0">{_esc(b)}</td></tr>' for a, b in rows) + "</tbody></table>"
    )
    facts = (
        f"The dense computation holds all {n:,d}\u00b2 scores at once ({memory['dense']}); the blocked one holds one strip of at "
        f"most {min(block_size, n)} key columns ({memory['blocked']} in all). Shown: {where}."
    )
    text = "\n".join([facts] + [f"{a}: {b}" for a, b in rows])
    return _facts(facts) + _flex(picture, table), text
