"""Live explorers for the book: sliders that recompute attention as they move.

Every explorer is built from ipywidgets and shows its numbers as HTML tables
whose ``value`` is replaced in place on every change (no figure is redrawn).
Each table cell carries its value (4 decimals) on a ``cividis`` background,
token labels head the rows and columns, the cells that changed with the last
move are outlined and marked with an arrow, and a caption plus a visually
hidden summary give screen readers a text alternative.

All the math is done by :mod:`attnlib.core` and :mod:`attnlib.positional`;
this module only formats.

Every constructor returns an object that Jupyter displays as the live widget.
Its display bundle also holds a static ``text/html`` snapshot and a
``text/plain`` summary of the current setting, so a page built without a
kernel (the web book) still shows the numbers.

Examples
--------
>>> ex = attention_explorer()
>>> ex.result.weights.round(4)[0].tolist()
[0.4555, 0.2246, 0.3199]
>>> ex.W_V = [[1, 0], [1, 1]]
>>> ex.result.output.round(4)[2].tolist()
[1.0, 0.5]
>>> ex.mask = "causal"
>>> ex.result.weights.round(4)[1].tolist()
[0.3302, 0.6698, 0.0]
"""

from __future__ import annotations

import asyncio
import html
import math
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import ipywidgets as widgets
import matplotlib
import matplotlib.colors
import numpy as np

from ._validate import as_matrix, as_positive_int
from .core import (
    TOKENS,
    AttentionResult,
    additive_mask,
    attention,
    attention_parameter_count,
    causal_mask,
    multi_head_attention,
    running_example,
    scale_divisor,
    scaled_scores,
    self_attention,
    softmax,
)
from .plots import CMAP, OKABE_ITO, format_value, readable_text_colour
from .positional import positional_frequencies, sinusoidal_encoding

__all__ = [
    "AttentionExplorer",
    "attention_explorer",
    "value_projection_explorer",
    "mask_explorer",
    "scaling_explorer",
    "scale_comparison_explorer",
    "head_count_explorer",
    "positional_explorer",
    "matrix_html",
    "SNAPSHOT_NOTE",
    "CSS",
    "MAX_TOKENS",
]

#: Largest number of tokens the explorer takes (an 8 x 8 mask grid still fits a page).
MAX_TOKENS = 8
#: Largest token width; the explorer has ``3 * d_model**2`` sliders.
MAX_D_MODEL = 4
#: Choices of the d_k control; 0 means "no scaling".
DK_CHOICES = (0, 1, 2, 3, 4, 8, 16, 32, 64, 128, 256, 512)

#: Shown above every static snapshot (the web book has no kernel).
SNAPSHOT_NOTE = (
    "Snapshot of the default setting. Run this notebook in JupyterLab, Binder or JupyterLite "
    "and the sliders come alive: every table below then updates as you move them."
)

_CHANGED = "#D55E00"  # Okabe-Ito vermillion, far from every cividis colour
_MASKED_BG = "#dddddd"
_SR_ONLY = "position:absolute;width:1px;height:1px;margin:-1px;padding:0;overflow:hidden;clip:rect(0,0,0,0);white-space:nowrap;border:0"

#: The shared look of every view; each cell's colours stay inline. Shown once per widget and snapshot.
CSS = (
    "<style>"
    ".attnlib-view{border-collapse:collapse;margin:0 14px 10px 0;font-family:monospace;font-size:13px}"
    ".attnlib-view caption{caption-side:top;text-align:left;font-family:sans-serif;font-weight:bold;padding:2px 0}"
    ".attnlib-view th{padding:3px 6px;font-weight:bold;text-align:center;font-family:sans-serif;background:none}"
    ".attnlib-view td{padding:3px 7px;text-align:right;border:1px solid #fff;min-width:4.2em}"
    f".attnlib-view td.attnlib-changed{{outline:3px solid {_CHANGED};outline-offset:-3px}}"
    f".attnlib-view td.attnlib-masked{{background:{_MASKED_BG};color:#000}}"
    ".attnlib-view td.attnlib-rowsum{background:#fff;color:#000}"
    f".attnlib-view td.attnlib-message{{padding:3px 8px;border:2px dashed {_CHANGED};font-family:sans-serif;font-size:12px;"
    "background:#fff7f0;color:#000;text-align:left}"
    f".attnlib-view tr.attnlib-highlight{{outline:2px solid {OKABE_ITO[4]}}}"
    ".attnlib-view tr.attnlib-highlight td{font-weight:bold}"
    ".attnlib-arrow{font-size:9px;margin-right:2px}"
    # the static snapshot brings its own light ground, like the book's figures, also in a dark theme
    ".attnlib-snapshot{background:#fff;color:#1a1a1a;padding:6px 8px;border-radius:4px}"
    ".attnlib-view caption,.attnlib-view th,.attnlib-snapshot p,.attnlib-snapshot figcaption{color:inherit}"
    f".attnlib-sr{{{_SR_ONLY}}}"
    "</style>"
)

_LUT: tuple[list[str], list[str]] | None = None


def _lut() -> tuple[list[str], list[str]]:
    """256 background colours of the colormap as hex, with a readable text colour for each (made once)."""
    global _LUT
    if _LUT is None:
        rgba = matplotlib.colormaps[CMAP](np.linspace(0.0, 1.0, 256))
        _LUT = ([matplotlib.colors.to_hex(c) for c in rgba], [readable_text_colour(c) for c in rgba])
    return _LUT


_NEG_INF_TEXT = "\u2212\u221e"


def _fmt(value: float) -> str:
    """:func:`attnlib.plots.format_value` with 4 decimals, for Python floats (fast path for the live views)."""
    if value == -math.inf:
        return _NEG_INF_TEXT
    text = f"{value:.4f}"
    return "0.0000" if text == "-0.0000" else text


def _esc(text: Any) -> str:
    return html.escape(str(text), quote=True)


def _table(
    M: np.ndarray,
    row_labels: Sequence[str],
    col_labels: Sequence[str],
    *,
    name: str,
    title: str,
    previous: list[list[str] | None] | None = None,
    vmin: float | None = None,
    vmax: float | None = None,
    row_sums: bool = False,
    row_messages: dict[int, str] | None = None,
    highlight_row: int | None = None,
) -> tuple[str, list[list[str] | None], int]:
    """One matrix as an HTML table; returns (html, the formatted cells, number of changed cells)."""
    row_messages = row_messages or {}
    n_rows, n_cols = M.shape
    shown = np.ones(M.shape, dtype=bool)
    for i in row_messages:
        shown[i] = False
    finite = np.isfinite(M) & shown
    lo = float(M[finite].min()) if vmin is None and finite.any() else (0.0 if vmin is None else vmin)
    hi = float(M[finite].max()) if vmax is None and finite.any() else (1.0 if vmax is None else vmax)
    formatted: list[list[str] | None] = []
    changed = 0
    hexes, fgs = _lut()
    span_ = hi - lo
    scaled = np.clip(np.rint(255 * (np.where(finite, M, lo) - lo) / span_), 0, 255) if span_ > 0 else np.full(M.shape, 128.0)
    idx = np.where(finite, scaled, -1).astype(int).tolist()
    values = M.tolist()
    head = "".join(f'<th scope="col">{_esc(c)}</th>' for c in col_labels)
    if row_sums:
        head += '<th scope="col" title="sum of the row">row sum</th>'
    rows = []
    for i in range(n_rows):
        label = f'<th scope="row">{_esc(row_labels[i])}</th>'
        if i in row_messages:
            formatted.append(None)
            span = n_cols + (1 if row_sums else 0)
            rows.append(
                f'<tr data-i="{i}">{label}<td colspan="{span}" class="attnlib-message" data-i="{i}" role="note">'
                f"{_esc(row_messages[i])}</td></tr>"
            )
            continue
        prev_row = previous[i] if previous is not None and i < len(previous) else None
        texts = [_fmt(v) for v in values[i]]
        cells = []
        for j, text in enumerate(texts):
            k = idx[i][j]
            attrs = f' style="background:{hexes[k]};color:{fgs[k]}"' if k >= 0 else ""
            classes = "" if k >= 0 else "attnlib-masked"
            mark = ""
            old = prev_row[j] if prev_row is not None and j < len(prev_row) else None
            if old is not None and old != text:
                changed += 1
                classes += " attnlib-changed"
                arrow = "\u25b2" if _as_float(text) > _as_float(old) else "\u25bc"
                mark = (
                    f'<span aria-hidden="true" class="attnlib-arrow">{arrow}</span><span class="attnlib-sr">changed from {old}, now </span>'
                )
            if classes:
                attrs += f' class="{classes.strip()}"'
            cells.append(f'<td data-i="{i}" data-j="{j}"{attrs}>{mark}{text}</td>')
        if row_sums:
            total = float(M[i].sum())
            cells.append(f'<td class="attnlib-rowsum" data-i="{i}" >{_fmt(total)}</td>')
        formatted.append(texts)
        row_style = ' class="attnlib-highlight"' if highlight_row == i else ""
        rows.append(f'<tr data-i="{i}"{row_style}>{label}{"".join(cells)}</tr>')
    caption = f"<caption>{_esc(title)}</caption>"
    out = (
        f'<table class="attnlib-view" data-view="{_esc(name)}">{caption}'
        f"<thead><tr><td class='attnlib-corner'></td>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"
    )
    return out, formatted, changed


def _as_float(text: str) -> float:
    if text == "\u2212\u221e":
        return -math.inf
    return float(text)


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
    m = np.asarray(matrix, dtype=float)
    if m.ndim == 1:
        m = m[None, :]
    if m.ndim != 2:
        raise ValueError(f"matrix must have 1 or 2 dimensions; got shape {m.shape}")
    if np.isnan(m).any() or np.isposinf(m).any():
        raise ValueError(f"matrix (shape {m.shape}) contains NaN or +inf")
    rows = list(row_labels) if row_labels is not None else [str(i + 1) for i in range(m.shape[0])]
    cols = list(col_labels) if col_labels is not None else [str(j + 1) for j in range(m.shape[1])]
    if len(rows) != m.shape[0] or len(cols) != m.shape[1]:
        raise ValueError(f"labels ({len(rows)} rows, {len(cols)} columns) do not fit the matrix of shape {m.shape}")
    return CSS + _table(m, rows, cols, name=name, title=title, row_sums=row_sums)[0]


def _matrix_text(M: np.ndarray, labels: Sequence[str], *, messages: dict[int, str] | None = None) -> str:
    messages = messages or {}
    lines = []
    for i, label in enumerate(labels):
        if i in messages:
            lines.append(f"  {label}: {messages[i]}")
        else:
            lines.append(f"  {label}: " + "  ".join(format_value(float(v)) for v in M[i]))
    return "\n".join(lines)


def _flex(*parts: str) -> str:
    return '<div style="display:flex;flex-wrap:wrap;align-items:flex-start">' + "".join(parts) + "</div>"


class _Live:
    """Base of every explorer: a live widget plus a static snapshot for pages without a kernel."""

    widget: widgets.Widget
    title: str = ""

    def snapshot_html(self) -> str:
        """The current views as static HTML (the same tables the widget shows)."""
        raise NotImplementedError

    def summary_text(self) -> str:
        """The key numbers of the current setting as plain text."""
        raise NotImplementedError

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, Any]:
        data = dict(self.widget._repr_mimebundle_())
        data["text/plain"] = self.summary_text()
        data["text/html"] = (
            f'<div class="attnlib-snapshot" role="group" aria-label="{_esc(self.title)} (static snapshot)">'
            f'<p class="attnlib-snapshot-note" style="font-family:sans-serif;font-size:13px;font-style:italic;'
            f'border-left:4px solid {OKABE_ITO[4]};padding:4px 8px;margin:4px 0 8px 0">'
            f"<strong>{_esc(self.title)}.</strong> {_esc(SNAPSHOT_NOTE)}</p>"
            f"{CSS}{self.snapshot_html()}</div>"
        )
        return data

    def __repr__(self) -> str:
        return self.summary_text()


class _Renderer:
    """Coalesces bursts of control events: many changes in one event-loop turn give one render."""

    def __init__(self, render: Callable[[], None], coalesce: bool) -> None:
        self._render = render
        self.coalesce = coalesce
        self.dirty = False
        self.pending = False
        self.holding = 0
        self.renders = 0

    def request(self) -> None:
        self.dirty = True
        if self.holding:
            return
        loop = None
        if self.coalesce:
            try:
                loop = asyncio.get_running_loop()
            except RuntimeError:
                loop = None
        if loop is None:
            self.flush()
        elif not self.pending:
            self.pending = True
            loop.call_soon(self.flush)

    def flush(self) -> None:
        self.pending = False
        if self.dirty and not self.holding:
            self.dirty = False
            self.renders += 1
            self._render()

    @contextmanager
    def hold(self) -> Iterator[None]:
        self.holding += 1
        try:
            yield
        finally:
            self.holding -= 1
        if not self.holding and self.dirty:
            self.request()


# ---------------------------------------------------------------------------
# The full explorer
# ---------------------------------------------------------------------------

_ALL_CONTROLS = ("W_Q", "W_K", "W_V", "presets", "d_k", "mask")
_ALL_VIEWS = ("Q", "K", "V", "scores", "scaled", "weights", "output", "plane")
_W_NAMES = ("W_Q", "W_K", "W_V")


class AttentionExplorer(_Live):
    """Self-attention on ``X`` with a slider for every entry of ``W_Q``, ``W_K`` and ``W_V``.

    Build it with :func:`attention_explorer` (everything) or one of the focused
    constructors. The state is readable and settable from code:

    * ``W_Q``, ``W_K``, ``W_V``: the current matrices (assign a matrix to move the sliders);
    * ``d_k``: the d_k the scores are scaled for (``None`` = no scaling);
    * ``mask``: the boolean mask (``None`` = no mask); assign ``None``, ``"causal"`` or a matrix;
    * ``result``: the :class:`~attnlib.core.AttentionResult` of the current setting,
      or ``None`` when some query row may attend to no key (then ``message`` says which);
    * ``sliders``, ``d_k_control``, ``mask_mode``, ``mask_cells``: the controls themselves;
    * ``views``: the HTML widgets, keyed by view name.

    Parameters
    ----------
    X:
        Token vectors as rows, at most ``MAX_TOKENS`` tokens of width at most ``MAX_D_MODEL``
        (default: the running example).
    tokens:
        One label per row of ``X``.
    controls, views:
        Which controls and views to show (see ``_ALL_CONTROLS`` and ``_ALL_VIEWS``).
    W_Q, W_K, W_V:
        Starting matrices, ``(d_model, d_model)`` with entries in ``[-2, 2]`` (default: identity).
    d_k:
        Starting d_k for the scaling, ``None`` for no scaling (default: the width of ``X``).
    coalesce:
        Defer rendering to the end of the event-loop turn when a loop runs (in a kernel),
        so a burst of slider events renders once.
    """

    def __init__(
        self,
        X: Any = None,
        tokens: Sequence[str] | None = None,
        *,
        controls: Sequence[str] = _ALL_CONTROLS,
        views: Sequence[str] = _ALL_VIEWS,
        W_Q: Any = None,
        W_K: Any = None,
        W_V: Any = None,
        d_k: int | None | str = "width",
        mask: Any = None,
        title: str = "Attention explorer",
        coalesce: bool = True,
        seed: int = 0,
    ) -> None:
        x = running_example() if X is None else as_matrix("X", X)
        n, d = x.shape
        if n > MAX_TOKENS:
            raise ValueError(f"X has {n} tokens (shape {x.shape}); the explorer shows at most {MAX_TOKENS}")
        if d > MAX_D_MODEL:
            raise ValueError(f"X has d_model={d} (shape {x.shape}); the explorer has sliders for d_model <= {MAX_D_MODEL}")
        if tokens is None:
            tokens = TOKENS if X is None else tuple(f"x{i + 1}" for i in range(n))
        tokens = tuple(str(t) for t in tokens)
        if len(tokens) != n:
            raise ValueError(f"tokens has {len(tokens)} labels but X has {n} rows (X is {x.shape})")
        for c in controls:
            if c not in _ALL_CONTROLS:
                raise ValueError(f"unknown control {c!r}; choose from {_ALL_CONTROLS}")
        for v in views:
            if v not in _ALL_VIEWS:
                raise ValueError(f"unknown view {v!r}; choose from {_ALL_VIEWS}")
        self.X = x
        self.tokens = tokens
        self.title = title
        self.controls = tuple(controls)
        self.view_names = tuple(v for v in views if not (v == "plane" and d != 2))
        self.lo, self.hi, self.step = -2.0, 2.0, 0.05
        self._rng_seed = seed
        self._random_draws = 0
        self._renderer = _Renderer(self._render, coalesce)
        self._syncing = False
        self._previous: dict[str, list[list[str] | None]] = {}
        self._last_change = "initial setting"
        self.result: AttentionResult | None = None
        self.message: str | None = None
        self.partial: AttentionResult | None = None
        self._html: dict[str, str] = {}

        start = {}
        for name, given in zip(_W_NAMES, (W_Q, W_K, W_V)):
            start[name] = np.eye(d) if given is None else self._check_w(name, given)
        if d_k == "width":
            d_k = d
        self._initial = (start, d_k, mask)

        self.sliders: dict[str, list[list[widgets.FloatSlider]]] = {}
        for name in _W_NAMES:
            grid = []
            for i in range(d):
                row = []
                for j in range(d):
                    s = widgets.FloatSlider(
                        value=float(start[name][i, j]),
                        min=self.lo,
                        max=self.hi,
                        step=self.step,
                        description=f"[{i + 1},{j + 1}]",
                        tooltip=f"{name}, row {i + 1}, column {j + 1}",
                        readout_format=".2f",
                        continuous_update=True,
                        layout=widgets.Layout(width="210px"),
                        style={"description_width": "38px"},
                    )
                    s.add_class(f"attnlib-{name}-{i}-{j}")
                    s.observe(self._slider_observer(name, i, j), "value")
                    row.append(s)
                grid.append(row)
            self.sliders[name] = grid

        options = [("no scaling", 0)] + [(f"{k} (true d_k)" if k == d else str(k), k) for k in DK_CHOICES if k]
        if d not in DK_CHOICES:
            options.append((f"{d} (true d_k)", d))
            options.sort(key=lambda o: o[1])
        self.d_k_control = widgets.SelectionSlider(
            options=options,
            value=0 if d_k is None else int(d_k),
            description="d_k",
            continuous_update=True,
            layout=widgets.Layout(width="330px"),
        )
        self.d_k_control.add_class("attnlib-dk")
        self.d_k_control.observe(self._dk_observer, "value")
        self.divisor_label = widgets.HTML()

        self.mask_mode = widgets.ToggleButtons(
            options=["none", "causal", "custom"], value="none", description="mask", style={"button_width": "70px"}
        )
        self.mask_mode.add_class("attnlib-mask-mode")
        self.mask_mode.observe(self._mode_observer, "value")
        self.mask_cells: list[list[widgets.Checkbox]] = []
        for i in range(n):
            row = []
            for j in range(n):
                cb = widgets.Checkbox(
                    value=True,
                    indent=False,
                    description="",
                    tooltip=f"{tokens[i]} may attend to {tokens[j]}",
                    layout=widgets.Layout(width="26px"),
                )
                cb.add_class(f"attnlib-mask-{i}-{j}")
                cb.observe(self._cell_observer(i, j), "value")
                row.append(cb)
            self.mask_cells.append(row)

        self.buttons = {
            "identity": widgets.Button(description="identity", tooltip="W_Q = W_K = W_V = I"),
            "post": widgets.Button(description="post's W_V", tooltip="W_V = [[1, 0], [1, 1]], the example of chapter 3"),
            "random": widgets.Button(description="seeded random", tooltip="entries drawn from a seeded generator"),
            "reset": widgets.Button(description="reset", tooltip="back to the starting setting"),
        }
        self.buttons["identity"].on_click(lambda _: self.set(W_Q=np.eye(d), W_K=np.eye(d), W_V=np.eye(d)))
        self.buttons["post"].on_click(lambda _: self.set(W_V=[[1.0, 0.0], [1.0, 1.0]]))
        self.buttons["random"].on_click(lambda _: self.randomise())
        self.buttons["reset"].on_click(lambda _: self.reset())

        self.views = {name: widgets.HTML() for name in self.view_names}
        self.status = widgets.HTML()
        with self._renderer.hold():
            self.mask = mask
            self._renderer.dirty = True
        self._last_change = "initial setting"
        self.widget = self._layout()

    # -- state -----------------------------------------------------------
    def _check_w(self, name: str, value: Any) -> np.ndarray:
        w = as_matrix(name, value)
        d = self.X.shape[1] if hasattr(self, "X") else w.shape[0]
        if w.shape != (d, d):
            raise ValueError(f"{name} must be ({d}, {d}) for X of width {d}; got shape {w.shape}")
        if (w < -2.0 - 1e-12).any() or (w > 2.0 + 1e-12).any():
            raise ValueError(f"{name} entries must lie in the sliders' range [-2, 2]; got {w.tolist()}")
        return w

    def _matrix(self, name: str) -> np.ndarray:
        return np.array([[s.value for s in row] for row in self.sliders[name]], dtype=float)

    def _set_matrix(self, name: str, value: Any) -> None:
        w = self._check_w(name, value)
        with self._renderer.hold():
            for i, row in enumerate(self.sliders[name]):
                for j, s in enumerate(row):
                    s.value = float(w[i, j])
            self._last_change = f"{name} set to {np.round(w, 2).tolist()}"

    @property
    def W_Q(self) -> np.ndarray:
        return self._matrix("W_Q")

    @W_Q.setter
    def W_Q(self, value: Any) -> None:
        self._set_matrix("W_Q", value)

    @property
    def W_K(self) -> np.ndarray:
        return self._matrix("W_K")

    @W_K.setter
    def W_K(self, value: Any) -> None:
        self._set_matrix("W_K", value)

    @property
    def W_V(self) -> np.ndarray:
        return self._matrix("W_V")

    @W_V.setter
    def W_V(self, value: Any) -> None:
        self._set_matrix("W_V", value)

    @property
    def d_k(self) -> int | None:
        return None if self.d_k_control.value == 0 else int(self.d_k_control.value)

    @d_k.setter
    def d_k(self, value: int | None) -> None:
        v = 0 if value is None else as_positive_int("d_k", value)
        allowed = [o[1] for o in self.d_k_control.options]
        if v not in allowed:
            raise ValueError(f"d_k must be None (no scaling) or one of {allowed[1:]}; got {value!r}")
        self.d_k_control.value = v

    @property
    def divisor(self) -> float:
        """What the scores are divided by: ``sqrt(d_k)``, or 1 without scaling."""
        return scale_divisor(1, False) if self.d_k is None else scale_divisor(self.d_k)

    @property
    def mask(self) -> np.ndarray | None:
        if self.mask_mode.value == "none":
            return None
        if self.mask_mode.value == "causal":
            return causal_mask(len(self.tokens))
        return np.array([[cb.value for cb in row] for row in self.mask_cells], dtype=bool)

    @mask.setter
    def mask(self, value: Any) -> None:
        n = len(self.tokens)
        with self._renderer.hold():
            if value is None or (isinstance(value, str) and value == "none"):
                self.mask_mode.value = "none"
            elif isinstance(value, str) and value == "causal":
                self.mask_mode.value = "causal"
            elif isinstance(value, str):
                raise ValueError(f"mask must be None, 'none', 'causal' or a boolean ({n}, {n}) matrix; got {value!r}")
            else:
                arr = np.asarray(value)
                if arr.dtype != bool or arr.shape != (n, n):
                    raise ValueError(
                        f"mask must be a boolean ({n}, {n}) matrix (True = may attend); got dtype {arr.dtype}, shape {arr.shape}"
                    )
                self._syncing = True
                try:
                    self.mask_mode.value = "custom"
                    for i in range(n):
                        for j in range(n):
                            self.mask_cells[i][j].value = bool(arr[i, j])
                finally:
                    self._syncing = False
                self._last_change = "mask set from code"
                self._renderer.request()
            self._show_mode_cells()

    def set(self, **values: Any) -> AttentionExplorer:
        """Set several controls at once (one render): ``W_Q``, ``W_K``, ``W_V``, ``d_k``, ``mask``."""
        unknown = set(values) - {"W_Q", "W_K", "W_V", "d_k", "mask"}
        if unknown:
            raise ValueError(f"unknown setting(s) {sorted(unknown)}; use W_Q, W_K, W_V, d_k, mask")
        with self._renderer.hold():
            for key, value in values.items():
                setattr(self, key, value)
            self._last_change = "set " + ", ".join(sorted(values))
        return self

    def randomise(self) -> None:
        """Draw all three matrices from a seeded generator (multiples of the slider step)."""
        rng = np.random.default_rng([self._rng_seed, self._random_draws])
        self._random_draws += 1
        d = self.X.shape[1]
        draws = {n: np.round(rng.uniform(-1.5, 1.5, size=(d, d)) / self.step) * self.step for n in _W_NAMES}
        self.set(**draws)
        self._last_change = "seeded random matrices"

    def reset(self) -> None:
        """Back to the starting matrices, d_k and mask."""
        start, d_k, mask = self._initial
        self.set(W_Q=start["W_Q"], W_K=start["W_K"], W_V=start["W_V"], d_k=d_k, mask=mask)
        self._last_change = "reset"

    def refresh(self) -> None:
        """Render now if a change is pending (a deferred render in a running event loop)."""
        self._renderer.flush()

    @property
    def renders(self) -> int:
        """How many times the views were rendered (bursts of events coalesce into one)."""
        return self._renderer.renders

    def __getattribute__(self, name: str) -> Any:
        # reading the state always sees the latest controls, even while a coalesced render is pending
        if name in ("result", "message", "partial"):
            renderer = object.__getattribute__(self, "_renderer")
            if renderer.dirty and not renderer.holding:
                renderer.flush()
        return object.__getattribute__(self, name)

    # -- observers ---------------------------------------------------------
    def _slider_observer(self, name: str, i: int, j: int) -> Callable[[dict], None]:
        def observe(change: dict) -> None:
            self._last_change = f"{name}[{i + 1},{j + 1}] moved from {change['old']:.2f} to {change['new']:.2f}"
            self._renderer.request()

        return observe

    def _dk_observer(self, change: dict) -> None:
        old, new = change["old"], change["new"]
        self._last_change = f"d_k changed from {old or 'no scaling'} to {new or 'no scaling'}"
        self._renderer.request()

    def _mode_observer(self, change: dict) -> None:
        if self._syncing:
            return
        self._last_change = f"mask changed to {change['new']}"
        self._show_mode_cells()
        self._renderer.request()

    def _show_mode_cells(self) -> None:
        mode = self.mask_mode.value
        if mode == "custom":
            return
        n = len(self.tokens)
        pattern = np.ones((n, n), dtype=bool) if mode == "none" else causal_mask(n)
        self._syncing = True
        try:
            for i in range(n):
                for j in range(n):
                    self.mask_cells[i][j].value = bool(pattern[i, j])
        finally:
            self._syncing = False

    def _cell_observer(self, i: int, j: int) -> Callable[[dict], None]:
        def observe(change: dict) -> None:
            if self._syncing:
                return
            self._syncing = True
            try:
                self.mask_mode.value = "custom"
            finally:
                self._syncing = False
            verb = "may" if change["new"] else "may no longer"
            self._last_change = f"{self.tokens[i]} {verb} attend to {self.tokens[j]}"
            self._renderer.request()

        return observe

    # -- computing and rendering --------------------------------------------
    def _compute(self) -> tuple[AttentionResult, np.ndarray, dict[int, str]]:
        """The projections and scores, the scaled-and-masked scores, and the messages for empty rows."""
        scale: bool | float = False if self.d_k is None else self.divisor
        mask = self.mask
        messages: dict[int, str] = {}
        empty = np.flatnonzero(~mask.any(axis=1)) if mask is not None else np.array([], dtype=int)
        if empty.size == 0:
            # one attnlib call computes everything (masked or not); nothing is undefined
            self.result = self_attention(self.X, self.W_Q, self.W_K, self.W_V, mask=mask, scale=scale)
            self.message, self.partial = None, None
            return self.result, self.result.scaled, messages
        full = self_attention(self.X, self.W_Q, self.W_K, self.W_V, scale=scale)
        scaled = full.scaled + additive_mask(mask)
        for i in empty:
            messages[int(i)] = (
                f"{self.tokens[i]} may attend to no key, so its softmax is undefined: "
                "no weights and no output for this row. Allow at least one key in its mask row."
            )
        names = ", ".join(self.tokens[i] for i in empty)
        self.message = f"query row(s) {names} may attend to no key; their weights and outputs are undefined"
        self.result = None
        ok = np.flatnonzero(mask.any(axis=1))
        self.partial = attention(full.Q[ok], full.K, full.V, mask=mask[ok], scale=scale) if ok.size else None
        return full, scaled, messages

    def _rows_with_gaps(self, partial: np.ndarray | None, width: int, messages: dict[int, str]) -> np.ndarray:
        n = len(self.tokens)
        out = np.zeros((n, width))
        if partial is not None:
            out[[i for i in range(n) if i not in messages]] = partial
        return out

    def _shown(self, messages: dict[int, str]) -> tuple[np.ndarray, np.ndarray]:
        """The weights and outputs to display: zeros stand in for the rows that have a message instead."""
        if not messages:
            return self.result.weights, self.result.output
        partial = self.partial
        weights = self._rows_with_gaps(partial.weights if partial else None, len(self.tokens), messages)
        output = self._rows_with_gaps(partial.output if partial else None, self.X.shape[1], messages)
        return weights, output

    def _render(self) -> None:
        full, scaled, messages = self._compute()
        toks = list(self.tokens)
        d = self.X.shape[1]
        dims = [f"d{j + 1}" for j in range(d)]
        weights, output = self._shown(messages)
        dk_text = "no scaling: scores divided by 1" if self.d_k is None else f"scores divided by \u221a{self.d_k} = {self.divisor:.4f}"
        tables = {
            "Q": (full.Q, [f"q{i + 1}" for i in range(len(toks))], dims, "Q = X W_Q", {}, {}),
            "K": (full.K, [f"k{i + 1}" for i in range(len(toks))], dims, "K = X W_K", {}, {}),
            "V": (full.V, [f"v{i + 1}" for i in range(len(toks))], dims, "V = X W_V", {}, {}),
            "scores": (full.scores, toks, toks, "scores Q K\u1d40 (rows: queries, columns: keys)", {}, {}),
            "scaled": (scaled, toks, toks, f"scaled and masked scores ({dk_text}; \u2212\u221e = masked)", {}, {}),
            "weights": (
                weights,
                toks,
                toks,
                "softmax weights (each row sums to 1)",
                messages,
                {"row_sums": True, "vmin": 0.0, "vmax": 1.0},
            ),
            "output": (output, [f"o{i + 1}" for i in range(len(toks))], dims, "outputs O = weights \u00b7 V", messages, {}),
        }
        changed_total = 0
        parts: dict[str, str] = {}
        for name in self.view_names:
            if name == "plane":
                parts[name] = self._plane_svg(output, messages)
                continue
            M, rl, cl, title, msgs, extra = tables[name]
            text, formatted, changed = _table(
                M, rl, cl, name=name, title=title, previous=self._previous.get(name), row_messages=msgs, **extra
            )
            self._previous[name] = formatted
            changed_total += changed
            parts[name] = text
        summary = self._summary_sentence(changed_total, weights, messages)
        self._html = dict(parts)
        self._html["status"] = summary
        self.divisor_label.value = f'<span style="font-family:sans-serif">{_esc(dk_text)}</span>'
        for name, view in self.views.items():
            if view.value != parts[name]:
                view.value = parts[name]
        self.status.value = summary

    def _summary_sentence(self, changed: int, weights: np.ndarray, messages: dict[int, str]) -> str:
        rows = []
        for i, t in enumerate(self.tokens):
            if i in messages:
                rows.append(f"{t}: no allowed key")
            else:
                rows.append(f"{t}: " + ", ".join(format_value(float(v)) for v in weights[i]))
        text = f"Last change: {self._last_change}. {changed} displayed value(s) changed. Weights by query row: " + "; ".join(rows) + "."
        visible = f"Last change: {self._last_change} \u2014 {changed} value(s) changed (outlined, \u25b2 up / \u25bc down)."
        if messages:
            visible += " " + (self.message or "")
        return (
            f'<div role="status" aria-live="polite" class="attnlib-status" style="font-family:sans-serif;font-size:12px;margin:2px 0 6px">'
            f'<span aria-hidden="true">{_esc(visible)}</span><span class="attnlib-sr">{_esc(text)}</span></div>'
        )

    def _plane_svg(self, output: np.ndarray, messages: dict[int, str]) -> str:
        """Tokens (solid) and outputs (dashed) as arrows in the noun/verb plane, as an inline SVG."""
        pts = [self.X] + ([output[[i for i in range(len(self.tokens)) if i not in messages]]] if len(messages) < len(self.tokens) else [])
        lim = max(1.2, float(np.abs(np.vstack(pts)).max()) * 1.15)
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
        for i, t in enumerate(self.tokens):
            colour = OKABE_ITO[i % len(OKABE_ITO)]
            for vec, label, dash in ((self.X[i], t, ""), (None if i in messages else output[i], f"o{i + 1}", ' stroke-dasharray="5,3"')):
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

    # -- layout and snapshots ----------------------------------------------
    def _matrix_group(self, name: str) -> widgets.Widget:
        rows = [widgets.HBox(row) for row in self.sliders[name]]
        return widgets.VBox([widgets.HTML(f"<b>{name}</b> (row i, column j)")] + rows, layout=widgets.Layout(margin="0 12px 6px 0"))

    def _mask_grid(self) -> widgets.Widget:
        n = len(self.tokens)
        header = [widgets.HTML("")] + [widgets.HTML(f"<b>{_esc(t)}</b>", layout=widgets.Layout(width="26px")) for t in self.tokens]
        items = list(header)
        for i in range(n):
            items.append(widgets.HTML(f"<b>{_esc(self.tokens[i])}</b>"))
            items.extend(self.mask_cells[i])
        grid = widgets.GridBox(items, layout=widgets.Layout(grid_template_columns=f"40px repeat({n}, 30px)", width="fit-content"))
        help_text = widgets.HTML('<span style="font-size:12px">rows: queries, columns: keys; ticked = may attend</span>')
        return widgets.VBox([self.mask_mode, widgets.HBox([grid, help_text])])

    def _layout(self) -> widgets.Widget:
        parts: list[widgets.Widget] = [widgets.HTML(f"{CSS}<h4 style='margin:4px 0'>{_esc(self.title)}</h4>")]
        groups = [self._matrix_group(n) for n in _W_NAMES if n in self.controls]
        if groups:
            parts.append(widgets.HBox(groups, layout=widgets.Layout(flex_flow="row wrap")))
        if "presets" in self.controls:
            keys = ["identity", "post", "random", "reset"] if self.X.shape[1] == 2 else ["identity", "random", "reset"]
            if self.controls == ("W_V", "presets"):
                keys = ["identity", "post", "reset"] if self.X.shape[1] == 2 else ["identity", "reset"]
            parts.append(widgets.HBox([self.buttons[k] for k in keys]))
        if "d_k" in self.controls:
            parts.append(widgets.HBox([self.d_k_control, self.divisor_label]))
        if "mask" in self.controls:
            parts.append(self._mask_grid())
        parts.append(self.status)
        rows = [["Q", "K", "V"], ["scores", "scaled"], ["weights", "output", "plane"]]
        for row in rows:
            shown = [self.views[v] for v in row if v in self.views]
            if shown:
                parts.append(widgets.HBox(shown, layout=widgets.Layout(flex_flow="row wrap")))
        box = widgets.VBox(parts)
        box.add_class("attnlib-explorer")
        return box

    def snapshot_html(self) -> str:
        self.refresh()
        settings = []
        for name in _W_NAMES:
            if name in self.controls:
                settings.append(f"{name} = {np.round(self._matrix(name), 2).tolist()}")
        if "d_k" in self.controls:
            settings.append("d_k: no scaling" if self.d_k is None else f"d_k = {self.d_k} (divide by {self.divisor:.4f})")
        if "mask" in self.controls:
            settings.append(f"mask: {self.mask_mode.value}")
        head = f'<p style="font-family:monospace;font-size:12px">{_esc("; ".join(settings))}</p>' if settings else ""
        rows = [["Q", "K", "V"], ["scores", "scaled"], ["weights", "output", "plane"]]
        body = "".join(_flex(*[self._html[v] for v in row if v in self._html]) for row in rows)
        return head + body

    def summary_text(self) -> str:
        self.refresh()
        full, _, messages = self._compute()
        lines = [f"{self.title} ({', '.join(self.tokens)})"]
        for name in _W_NAMES:
            if name in self.controls:
                lines.append(f"{name} = {np.round(self._matrix(name), 4).tolist()}")
        lines.append("d_k: no scaling (divide by 1)" if self.d_k is None else f"d_k = {self.d_k}: divide the scores by {self.divisor:.4f}")
        lines.append(f"mask: {self.mask_mode.value}")
        if "V" in self.view_names:
            lines.append("values V:")
            lines.append(_matrix_text(full.V, [f"v{i + 1}" for i in range(len(self.tokens))]))
        weights, output = self._shown(messages)
        lines.append("weights (each row sums to 1):")
        lines.append(_matrix_text(weights, self.tokens, messages=messages))
        lines.append("outputs:")
        lines.append(_matrix_text(output, [f"o{i + 1}" for i in range(len(self.tokens))], messages=messages))
        return "\n".join(lines)


def attention_explorer(X: Any = None, tokens: Sequence[str] | None = None) -> AttentionExplorer:
    """The full explorer: sliders for ``W_Q``, ``W_K``, ``W_V``, presets, a d_k control and a mask.

    Parameters
    ----------
    X:
        Up to 8 token vectors as rows (default: the running example).
    tokens:
        Their labels (default ``x1, x2, ...``).

    Examples
    --------
    >>> ex = attention_explorer()
    >>> ex.set(d_k=None).result.weights.round(4)[0].tolist()
    [0.5065, 0.1863, 0.3072]
    """
    return AttentionExplorer(X, tokens)


def value_projection_explorer() -> AttentionExplorer:
    """Chapter 3: only ``W_V`` moves. The values and outputs change; the weights never do.

    Examples
    --------
    >>> ex = value_projection_explorer()
    >>> before = ex.result.weights.copy()
    >>> ex.W_V = [[1, 0], [1, 1]]
    >>> ex.result.V.tolist(), bool((ex.result.weights == before).all())
    ([[1.0, 0.0], [1.0, 1.0], [1.0, 0.5]], True)
    """
    return AttentionExplorer(controls=("W_V", "presets"), views=("V", "weights", "output", "plane"), title="Values move, weights stay")


def mask_explorer() -> AttentionExplorer:
    """Chapter 9: the mask is the only control. Tick which key each query may attend to.

    Examples
    --------
    >>> ex = mask_explorer()
    >>> ex.mask = "causal"
    >>> ex.result.weights.round(4)[0].tolist()
    [1.0, 0.0, 0.0]
    """
    return AttentionExplorer(controls=("mask",), views=("scaled", "weights", "output"), title="Masking")


# ---------------------------------------------------------------------------
# Focused explorers with their own knob
# ---------------------------------------------------------------------------


class _SimpleExplorer(_Live):
    """A few controls and one HTML view recomputed on every change."""

    def __init__(self, title: str, controls: list[widgets.Widget], coalesce: bool = True) -> None:
        self.title = title
        self.controls = controls
        self.view = widgets.HTML()
        self._renderer = _Renderer(self._render, coalesce)
        self._previous: dict[str, list[list[str] | None]] = {}
        self._text = ""
        for c in controls:
            c.observe(lambda _change: self._renderer.request(), "value")
        self._renderer.dirty = True
        self._renderer.flush()
        self.widget = widgets.VBox([widgets.HTML(f"{CSS}<h4 style='margin:4px 0'>{_esc(title)}</h4>"), *controls, self.view])

    def _render(self) -> None:
        html_text, self._text = self._build()
        self.view.value = html_text

    def _build(self) -> tuple[str, str]:
        raise NotImplementedError

    def _tab(self, M: np.ndarray, rows: Sequence[str], cols: Sequence[str], name: str, title: str, **kw: Any) -> str:
        text, formatted, _ = _table(np.asarray(M, dtype=float), rows, cols, name=name, title=title, previous=self._previous.get(name), **kw)
        self._previous[name] = formatted
        return text

    def refresh(self) -> None:
        self._renderer.flush()

    def snapshot_html(self) -> str:
        self.refresh()
        return self.view.value

    def summary_text(self) -> str:
        self.refresh()
        return self._text


class ScalingExplorer(_SimpleExplorer):
    """Chapter 5: seeded random q and k of real dimension d_k; the spread of q·k grows like sqrt(d_k)."""

    N_KEYS = 6
    N_SAMPLES = 200

    def __init__(self, seed: int = 0, coalesce: bool = True) -> None:
        self.seed = seed
        self._spread: dict[int, tuple[float, float]] = {}
        options = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024]
        self.d_k_control = widgets.SelectionSlider(
            options=options, value=2, description="d_k", continuous_update=True, layout=widgets.Layout(width="420px")
        )
        self.d_k_control.add_class("attnlib-dk")
        super().__init__("Scaling: the dimension d_k of queries and keys", [self.d_k_control], coalesce)

    @property
    def d_k(self) -> int:
        return int(self.d_k_control.value)

    @d_k.setter
    def d_k(self, value: int) -> None:
        self.d_k_control.value = as_positive_int("d_k", value)

    def sample(self) -> tuple[np.ndarray, np.ndarray]:
        """One query ``(1, d_k)`` and ``N_KEYS`` keys with standard-normal entries, seeded by ``(seed, d_k)``."""
        rng = np.random.default_rng([self.seed, self.d_k])
        return rng.standard_normal((1, self.d_k)), rng.standard_normal((self.N_KEYS, self.d_k))

    def spread(self) -> tuple[float, float]:
        """Standard deviation of ``N_SAMPLES**2`` scores ``q·k`` of seeded random vectors: unscaled, and divided by sqrt(d_k)."""
        if self.d_k not in self._spread:  # deterministic for a d_k, so each is drawn once
            rng = np.random.default_rng([self.seed, self.d_k, 1])
            q = rng.standard_normal((self.N_SAMPLES, self.d_k))
            k = rng.standard_normal((self.N_SAMPLES, self.d_k))
            self._spread[self.d_k] = (float(scaled_scores(q, k, scale=False).std()), float(scaled_scores(q, k, scale=True).std()))
        return self._spread[self.d_k]

    def _build(self) -> tuple[str, str]:
        q, k = self.sample()
        raw = scaled_scores(q, k, scale=False)
        scaled = scaled_scores(q, k, scale=True)
        w_raw, w_scaled = softmax(raw), softmax(scaled)
        sd_raw, sd_scaled = self.spread()
        keys = [f"k{j + 1}" for j in range(self.N_KEYS)]
        tables = _flex(
            self._tab(np.vstack([raw, scaled]), ["q\u00b7k", "q\u00b7k/\u221ad_k"], keys, "scores", "scores of one query against six keys"),
            self._tab(
                np.vstack([w_raw, w_scaled]), ["unscaled", "scaled"], keys, "weights", "softmax weights", vmin=0.0, vmax=1.0, row_sums=True
            ),
        )
        facts = (
            f"d_k = {self.d_k}. Spread (standard deviation) of {self.N_SAMPLES**2} scores of random vectors: "
            f"{sd_raw:.4f} unscaled (about \u221ad_k = {math.sqrt(self.d_k):.4f}), {sd_scaled:.4f} after dividing by \u221ad_k. "
            f"Largest weight of the query: {w_raw.max():.4f} unscaled, {w_scaled.max():.4f} scaled."
        )
        text = "\n".join(
            [
                facts,
                "scores (unscaled): " + "  ".join(format_value(float(v)) for v in raw[0]),
                "scores (scaled):   " + "  ".join(format_value(float(v)) for v in scaled[0]),
                "weights (unscaled): " + "  ".join(format_value(float(v)) for v in w_raw[0]),
                "weights (scaled):   " + "  ".join(format_value(float(v)) for v in w_scaled[0]),
            ]
        )
        return f'<p style="font-family:sans-serif;font-size:13px" role="status" aria-live="polite">{_esc(facts)}</p>' + tables, text


def scaling_explorer() -> ScalingExplorer:
    """Chapter 5: a d_k slider over 1 ... 1024 for seeded random queries and keys.

    Examples
    --------
    >>> ex = scaling_explorer()
    >>> ex.d_k = 512
    >>> raw, scaled = ex.spread()
    >>> 18 < raw < 27 and 0.8 < scaled < 1.2
    True
    """
    return ScalingExplorer()


class ScaleComparisonExplorer(_SimpleExplorer):
    """Chapter 7: the running example stretched by a factor c, unscaled against scaled weights."""

    def __init__(self, coalesce: bool = True) -> None:
        self.length_control = widgets.FloatSlider(
            value=1.0,
            min=0.25,
            max=6.0,
            step=0.25,
            description="length \u00d7",
            continuous_update=True,
            readout_format=".2f",
            layout=widgets.Layout(width="420px"),
        )
        self.length_control.add_class("attnlib-length")
        super().__init__("Unscaled against scaled, as the vectors grow", [self.length_control], coalesce)

    @property
    def length(self) -> float:
        return float(self.length_control.value)

    @length.setter
    def length(self, value: float) -> None:
        self.length_control.value = float(value)

    def results(self) -> tuple[AttentionResult, AttentionResult]:
        """Attention of ``c X`` with itself (W = I): without scaling, and divided by sqrt(d_k)."""
        X = running_example() * self.length
        return attention(X, X, X, scale=False), attention(X, X, X, scale=True)

    def _build(self) -> tuple[str, str]:
        raw, scaled = self.results()
        toks = list(TOKENS)
        tables = _flex(
            self._tab(raw.weights, toks, toks, "unscaled", "weights without scaling", vmin=0.0, vmax=1.0, row_sums=True),
            self._tab(
                scaled.weights,
                toks,
                toks,
                "scaled",
                f"weights, scores divided by \u221a2 = {scaled.divisor:.4f}",
                vmin=0.0,
                vmax=1.0,
                row_sums=True,
            ),
        )
        facts = (
            f"Vectors stretched by {self.length:.2f}: the scores grow by {self.length**2:.4f}. "
            f"Largest weight per row, unscaled: {', '.join(format_value(float(v)) for v in raw.weights.max(axis=1))}; "
            f"scaled: {', '.join(format_value(float(v)) for v in scaled.weights.max(axis=1))}."
        )
        text = "\n".join(
            [
                facts,
                "weights without scaling:",
                _matrix_text(raw.weights, toks),
                "weights with scaling:",
                _matrix_text(scaled.weights, toks),
            ]
        )
        return f'<p style="font-family:sans-serif;font-size:13px" role="status" aria-live="polite">{_esc(facts)}</p>' + tables, text


def scale_comparison_explorer() -> ScaleComparisonExplorer:
    """Chapter 7: stretch the running example and compare unscaled with scaled weights.

    Examples
    --------
    >>> raw, scaled = scale_comparison_explorer().results()
    >>> raw.weights.round(4)[0].tolist(), scaled.weights.round(4)[0].tolist()
    ([0.5065, 0.1863, 0.3072], [0.4555, 0.2246, 0.3199])
    """
    return ScaleComparisonExplorer()


class HeadCountExplorer(_SimpleExplorer):
    """Chapter 8: four tokens of width 8, split across 1, 2, 4 or 8 heads; the parameter count stays 4 d_model^2."""

    D_MODEL = 8
    TOKENS = ("t1", "t2", "t3", "t4")

    def __init__(self, seed: int = 0, coalesce: bool = True) -> None:
        rng = np.random.default_rng(seed)
        self.X = rng.standard_normal((len(self.TOKENS), self.D_MODEL))
        self.W_Q, self.W_K, self.W_V = (rng.standard_normal((self.D_MODEL, self.D_MODEL)) / math.sqrt(self.D_MODEL) for _ in range(3))
        self.W_O = np.eye(self.D_MODEL)
        self.heads_control = widgets.SelectionSlider(options=[1, 2, 4, 8], value=2, description="heads", continuous_update=True)
        self.heads_control.add_class("attnlib-heads")
        super().__init__("Number of heads", [self.heads_control], coalesce)

    @property
    def n_heads(self) -> int:
        return int(self.heads_control.value)

    @n_heads.setter
    def n_heads(self, value: int) -> None:
        self.heads_control.value = as_positive_int("n_heads", value)

    def results(self) -> tuple[np.ndarray, np.ndarray]:
        """``attnlib.multi_head_attention`` of the seeded example: output and per-head weights."""
        return multi_head_attention(self.X, self.X, self.W_Q, self.W_K, self.W_V, self.W_O, n_heads=self.n_heads)

    def _build(self) -> tuple[str, str]:
        _, weights = self.results()
        h = self.n_heads
        d_head = self.D_MODEL // h
        params = attention_parameter_count(self.D_MODEL, h)
        toks = list(self.TOKENS)
        tables = _flex(
            *[
                self._tab(
                    weights[r],
                    toks,
                    toks,
                    f"head{r}",
                    f"head {r + 1}: weights (columns {r * d_head + 1}\u2013{(r + 1) * d_head})",
                    vmin=0.0,
                    vmax=1.0,
                )
                for r in range(h)
            ]
        )
        facts = (
            f"{h} head(s) of width d_head = {self.D_MODEL} / {h} = {d_head}: {h} attention pattern(s) per token. "
            f"Parameters of the block: 4 \u00b7 {self.D_MODEL}\u00b2 = {params}, whatever the number of heads."
        )
        text = "\n".join([facts] + [f"head {r + 1} weights:\n" + _matrix_text(weights[r], toks) for r in range(h)])
        return f'<p style="font-family:sans-serif;font-size:13px" role="status" aria-live="polite">{_esc(facts)}</p>' + tables, text


def head_count_explorer() -> HeadCountExplorer:
    """Chapter 8: choose 1, 2, 4 or 8 heads for a seeded 4-token example with d_model = 8.

    Examples
    --------
    >>> ex = head_count_explorer()
    >>> ex.n_heads = 4
    >>> ex.results()[1].shape
    (4, 4, 4)
    """
    return HeadCountExplorer()


class PositionalExplorer(_SimpleExplorer):
    """Chapter 11: the sinusoidal encoding of one position, for a chosen d_model."""

    N_POSITIONS = 12

    def __init__(self, coalesce: bool = True) -> None:
        self.position_control = widgets.IntSlider(
            value=1, min=0, max=self.N_POSITIONS - 1, description="position t", continuous_update=True, style={"description_width": "80px"}
        )
        self.position_control.add_class("attnlib-position")
        self.d_model_control = widgets.IntSlider(
            value=2, min=2, max=16, step=2, description="d_model", continuous_update=True, style={"description_width": "80px"}
        )
        self.d_model_control.add_class("attnlib-d-model")
        super().__init__("Sinusoidal positions", [self.position_control, self.d_model_control], coalesce)

    @property
    def position(self) -> int:
        return int(self.position_control.value)

    @position.setter
    def position(self, value: int) -> None:
        self.position_control.value = int(value)

    @property
    def d_model(self) -> int:
        return int(self.d_model_control.value)

    @d_model.setter
    def d_model(self, value: int) -> None:
        self.d_model_control.value = int(value)

    def table(self) -> np.ndarray:
        """``sinusoidal_encoding(N_POSITIONS, d_model)``."""
        return sinusoidal_encoding(self.N_POSITIONS, self.d_model)

    def _build(self) -> tuple[str, str]:
        pe = self.table()
        t = self.position
        freqs = positional_frequencies(self.d_model)
        cols = [f"{'sin' if c % 2 == 0 else 'cos'} \u03c9{c // 2 + 1}" for c in range(self.d_model)]
        rows = [f"t={p}" for p in range(self.N_POSITIONS)]
        similarity = scaled_scores(pe[t : t + 1], pe, scale=False)
        tables = _flex(
            self._tab(
                pe,
                rows,
                cols,
                "pe",
                f"PE for positions 0\u2013{self.N_POSITIONS - 1}, d_model = {self.d_model} (row t outlined)",
                vmin=-1.0,
                vmax=1.0,
                highlight_row=t,
            ),
            self._tab(similarity.T, rows, [f"PE(t={t})\u00b7PE"], "similarity", "dot product with every position"),
        )
        facts = (
            f"PE(t={t}) = (" + ", ".join(format_value(float(v)) for v in pe[t]) + "). "
            "Frequencies \u03c9 = " + ", ".join(format_value(float(w)) for w in freqs) + "."
        )
        text = facts + "\n" + _matrix_text(pe, rows)
        return f'<p style="font-family:sans-serif;font-size:13px" role="status" aria-live="polite">{_esc(facts)}</p>' + tables, text


def positional_explorer() -> PositionalExplorer:
    """Chapter 11: move the position t and the width d_model of the sinusoidal encoding.

    Examples
    --------
    >>> ex = positional_explorer()
    >>> ex.table().round(4)[:3].tolist()
    [[0.0, 1.0], [0.8415, 0.5403], [0.9093, -0.4161]]
    """
    return PositionalExplorer()
