"""Figures for the book: labelled heatmaps and token vectors.

All figures use colour-blind-safe colormaps (``cividis`` by default), write
the value into every heatmap cell with a text colour chosen for contrast, and
label the axes with token names. Each function returns the matplotlib
``Figure`` so a notebook can show it and a test can inspect it.
"""

from __future__ import annotations

import io
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import matplotlib
import matplotlib.colors
import matplotlib.pyplot as plt
import matplotlib.text
import matplotlib.transforms
import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from ._validate import as_array, as_flag, as_instance, as_int, as_labels, as_positive_int, as_real, quiet, to_ndarray
from .blocked import key_blocks
from .formatting import MASKED_TEXT, NEG_INF_TEXT, format_row, format_value, is_displayable, is_masked

__all__ = [
    "CMAP",
    "GROUP_COLOURS",
    "LABEL_OFFSETS",
    "LINE_COLOURS",
    "MASKED_COLOUR",
    "MASKED_TEXT",
    "MAX_WIDTH_IN",
    "NEG_INF_TEXT",
    "OKABE_ITO",
    "SvgImage",
    "as_svg",
    "attention_data_flow",
    "colour_table",
    "format_row",
    "format_value",
    "heatmap",
    "is_displayable",
    "is_masked",
    "key_block_steps",
    "label_points",
    "loss_curves",
    "multi_head_data_flow",
    "path_length_heatmap",
    "readable_text_colour",
    "token_vectors",
]

#: Sequential, colour-blind-safe colormap used for every heatmap.
CMAP = "cividis"

#: The Okabe-Ito palette, safe for the common colour-vision deficiencies.
OKABE_ITO = ("#E69F00", "#56B4E9", "#009E73", "#F0E442", "#0072B2", "#D55E00", "#CC79A7", "#000000")

#: Okabe-Ito without its yellow, which is too faint for thin lines on white.
LINE_COLOURS = tuple(c for c in OKABE_ITO if c != "#F0E442")

#: Colours of groups of lines (:func:`loss_curves`), in the order that keeps the first two furthest apart:
#: blue and vermillion differ in hue and in lightness, so two groups stay apart for every kind of colour vision.
GROUP_COLOURS = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000")

#: Background of a masked (``-inf``) cell, in figures and in the explorers.
MASKED_COLOUR = "#dddddd"

def colour_table(n: int = 256, cmap: str = CMAP) -> tuple[list[str], list[str]]:
    """``n`` evenly spaced colours of ``cmap`` as hex, with the readable text colour for each.

    The explorers colour a cell holding the fraction ``t`` of its view's range
    with entry ``round(t * (n - 1))``, in the static snapshot and in the browser.

    Raises
    ------
    ValueError
        ``n`` is not a positive integer; ``cmap`` is not a matplotlib colour map name. The message names the argument.

    Examples
    --------
    >>> bg, fg = colour_table(2)
    >>> bg, fg
    (['#00224e', '#fee838'], ['white', 'black'])
    """
    n = as_int("n", n, minimum=1, what="a positive integer")
    if n > 4096:
        raise ValueError(f"n must be at most 4096 colours; got {n}")
    cmap = _colour_map(cmap)
    rgba = matplotlib.colormaps[cmap](np.linspace(0.0, 1.0, n))
    return [matplotlib.colors.to_hex(c) for c in rgba], [readable_text_colour(c) for c in rgba]

#: The widest a figure drawn here gets, in inches. The book shows a figure at most 672 px wide, where a 10 pt
#: text (matplotlib's default size) of a figure this wide is 672 / (72 * 10) * 10 = 9.3 px tall.
MAX_WIDTH_IN = 10.0


def _texts(**texts: Any) -> None:
    """Titles and axis labels are texts (``""`` for none): a number or ``None`` would be drawn as its repr."""
    for name, value in texts.items():
        if not isinstance(value, str):
            raise ValueError(f"{name} must be a text (a str, empty for none); got {value!r}"[:200])


def _axes(ax: Any) -> Axes | None:
    return None if ax is None else as_instance("ax", ax, Axes, "None or a matplotlib Axes to draw into")


def _colour_map(cmap: Any) -> str:
    if not isinstance(cmap, str) or cmap not in matplotlib.colormaps:
        raise ValueError(f"cmap must be the name of a matplotlib colormap (for example {CMAP!r}); got {cmap!r}"[:200])
    return cmap


def _limit(name: str, value: Any) -> float | None:
    return None if value is None else as_real(name, value)


def readable_text_colour(rgba: Sequence[float]) -> str:
    """Black or white, whichever contrasts more with the background ``rgba``.

    Uses the WCAG relative luminance.

    Raises
    ------
    ValueError
        ``rgba`` is not 3 or 4 real numbers from 0 to 1. The message names the argument.

    Examples
    --------
    >>> readable_text_colour((1, 1, 1, 1)), readable_text_colour((0, 0, 0, 1))
    ('black', 'white')
    """
    def channel(c: float) -> float:
        return c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4

    try:
        parts = [float(c) for c in rgba]
    except (TypeError, ValueError):
        raise ValueError(f"rgba must be 3 or 4 numbers between 0 and 1; got {rgba!r}"[:200]) from None
    if len(parts) not in (3, 4) or not all(0.0 <= c <= 1.0 for c in parts):
        raise ValueError(f"rgba must be 3 or 4 numbers between 0 and 1; got {rgba!r}"[:200])
    r, g, b = (channel(c) for c in parts[:3])
    lum = 0.2126 * r + 0.7152 * g + 0.0722 * b
    # contrast with black is (lum+0.05)/0.05, with white 1.05/(lum+0.05)
    return "black" if (lum + 0.05) / 0.05 >= 1.05 / (lum + 0.05) else "white"


def heatmap(
    matrix: Any,
    row_labels: Sequence[str] | None = None,
    col_labels: Sequence[str] | None = None,
    *,
    title: str = "",
    ax: Axes | None = None,
    decimals: int = 4,
    cmap: str = CMAP,
    vmin: float | None = None,
    vmax: float | None = None,
    xlabel: str = "key",
    ylabel: str = "query",
) -> Figure:
    """Draw ``matrix`` as a heatmap with its values written in the cells.

    ``-inf`` entries (masked scores) are drawn as light grey cells marked
    ``−∞`` and are left out of the colour scale; they are the only cells
    drawn that way (finite extremes such as ``±1e308`` get colours). NaN and
    ``+inf`` are refused with a :class:`ValueError`.

    Raises
    ------
    ValueError
        ``matrix`` is not finite real numbers of the expected shape; ``row_labels`` or ``col_labels`` is not a list of
        one label per row; ``title``, ``xlabel`` or ``ylabel`` is not a text (a ``str``); ``ax`` is neither ``None`` nor
        a matplotlib ``Axes``; ``decimals`` is not a non-negative integer; ``cmap`` is not a matplotlib colour map name;
        ``vmin`` or ``vmax`` is neither ``None`` nor a finite real number in its range. The message names the argument.

    Examples
    --------
    >>> fig = heatmap([[1, 0], [0, 1]], ["a", "b"], ["a", "b"])
    >>> [t.get_text() for t in fig.axes[0].texts]
    ['1.0000', '0.0000', '0.0000', '1.0000']
    >>> plt.close(fig)
    """
    m = as_array("matrix", matrix, (1, 2), allow_neg_inf=True)
    decimals = as_int("decimals", decimals, minimum=0, what="a non-negative integer")
    if m.ndim == 1:
        m = m[None, :]
    n_rows, n_cols = m.shape
    row_labels = None if row_labels is None else as_labels("row_labels", row_labels, n_rows)
    col_labels = None if col_labels is None else as_labels("col_labels", col_labels, n_cols)
    _texts(title=title, xlabel=xlabel, ylabel=ylabel)
    ax, cmap, vmin, vmax = _axes(ax), _colour_map(cmap), _limit("vmin", vmin), _limit("vmax", vmax)
    if ax is None:
        # at most MAX_WIDTH_IN wide: the book shows figures at most 672 px wide, where 10 pt text stays above 9 px
        fig, ax = plt.subplots(figsize=(min(0.9 * n_cols + 1.6, MAX_WIDTH_IN), 0.6 * n_rows + 1.0), layout="constrained")
    else:
        fig = ax.figure
    masked = np.isneginf(m)
    finite = ~masked
    lo = float(m[finite].min()) if vmin is None and finite.any() else (float(vmin) if vmin is not None else 0.0)
    hi = float(m[finite].max()) if vmax is None and finite.any() else (float(vmax) if vmax is not None else 1.0)
    if not (np.isfinite(lo) and np.isfinite(hi)):
        raise ValueError(f"vmin and vmax must be finite numbers; got vmin={vmin!r}, vmax={vmax!r}")
    # Colour positions in [0, 1], computed with halves so that hi - lo cannot overflow (lo = -1e308, hi = 1e308);
    # a constant matrix sits in the middle of the colour scale.
    with quiet():
        position = np.full(m.shape, 0.5) if hi == lo else np.clip((m / 2 - lo / 2) / (hi / 2 - lo / 2), 0.0, 1.0)
    shown = np.ma.masked_where(masked, position)
    colormap = matplotlib.colormaps[cmap].with_extremes(bad=MASKED_COLOUR)
    image = ax.imshow(shown, cmap=colormap, vmin=0.0, vmax=1.0, aspect="auto")
    for i in range(n_rows):
        for j in range(n_cols):
            if finite[i, j]:
                colour = readable_text_colour(image.cmap(float(position[i, j])))
            else:
                colour = "black"
            ax.text(j, i, format_value(m[i, j], decimals), ha="center", va="center", color=colour, fontsize=10)
    ax.set_xticks(range(n_cols), labels=list(col_labels) if col_labels is not None else [str(j + 1) for j in range(n_cols)])
    ax.set_yticks(range(n_rows), labels=list(row_labels) if row_labels is not None else [str(i + 1) for i in range(n_rows)])
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.tick_params(length=0)
    if title:
        ax.set_title(title)
    return fig


def token_vectors(
    X: Any,
    labels: Sequence[str] | None = None,
    *,
    ax: Axes | None = None,
    axis_names: tuple[str, str] = ("noun-ness (dimension 1)", "verb-ness (dimension 2)"),
    title: str = "",
    extra: dict[str, Any] | None = None,
    match_rows: dict[str, int] | None = None,
) -> Figure:
    """Draw the rows of a ``(n, 2)`` matrix as arrows from the origin.

    Parameters
    ----------
    X:
        Token vectors as rows; must have exactly two columns.
    labels:
        One label per row.
    extra:
        Optional further ``{label: vector}`` pairs drawn dashed (for example
        the outputs of attention next to the inputs).
    match_rows:
        Optional ``{label of extra: row of X}`` (rows counted from 0): that
        dashed arrow takes the colour of that row's solid arrow, so that an
        output and the input it came from share a colour. Extras not named
        here get colours of their own, after the rows' colours.

    Raises
    ------
    ValueError
        ``X`` is not a finite real matrix of 2 columns; ``labels`` is neither ``None`` nor one label per row;
        ``axis_names`` is not 2 labels; ``title`` is not a text; ``ax`` is neither ``None`` nor a matplotlib ``Axes``;
        ``extra`` is neither ``None`` nor a dict of labels to points of the plane; ``match_rows`` is neither ``None``
        nor a dict from labels of ``extra`` to row indices of ``X``. The message names the argument.

    Examples
    --------
    >>> fig = token_vectors([[1, 0], [0, 1]], ["a", "b"])
    >>> sorted(t.get_text().strip() for t in fig.axes[0].texts if t.get_text())
    ['a', 'b']
    >>> plt.close(fig)
    >>> fig = token_vectors([[1, 0], [0, 1]], extra={"o1": [0.6, 0.4]}, match_rows={"o1": 0})
    >>> fig.axes[0].texts[0].arrow_patch.get_edgecolor() == matplotlib.colors.to_rgba(LINE_COLOURS[0])  # o1 as x1
    True
    >>> plt.close(fig)
    """
    x = as_array("X", X, 2)
    if x.shape[1] != 2:
        raise ValueError(f"X must have 2 columns to be drawn in the plane; got shape {x.shape}")
    labels = as_labels("labels", labels, x.shape[0]) if labels is not None else [f"x{i + 1}" for i in range(x.shape[0])]
    axis_names = as_labels("axis_names", axis_names, 2)
    _texts(title=title)
    ax = _axes(ax)
    if ax is None:
        fig, ax = plt.subplots(figsize=(4.2, 4.2), layout="constrained")
    else:
        fig = ax.figure
    if extra is not None and not isinstance(extra, dict):
        raise ValueError(f"extra must be a dict {{label: 2-d vector}}; got {type(extra).__name__}")
    if match_rows is not None and not isinstance(match_rows, dict):
        raise ValueError(f"match_rows must be a dict {{label of extra: row of X}}; got {type(match_rows).__name__}")
    matched = {}
    for name, row in (match_rows or {}).items():
        if name not in (extra or {}):
            raise ValueError(f"match_rows names {name!r}, which is not a label of extra")
        matched[name] = as_int(f"match_rows[{name!r}]", row, minimum=0, what=f"a row index of X (0 to {x.shape[0] - 1})")
        if matched[name] >= x.shape[0]:
            raise ValueError(f"match_rows[{name!r}] must be a row index of X (0 to {x.shape[0] - 1}); got {matched[name]}")
    points = [x]
    for k, (name, vec) in enumerate([(n, v) for n, v in (extra or {}).items()]):
        v = as_array(f"extra[{name!r}]", vec, 1)
        if v.shape != (2,):
            raise ValueError(f"extra[{name!r}] must be a vector of 2 numbers (a point in the plane); got shape {v.shape}")
        points.append(v[None, :])
        colour = LINE_COLOURS[(matched[name] if name in matched else x.shape[0] + k) % len(LINE_COLOURS)]
        ax.annotate("", xy=v, xytext=(0, 0), arrowprops=dict(arrowstyle="->", color=colour, lw=2, linestyle="--"))
        ax.text(v[0], v[1], f" {name}", color="black", fontsize=11, va="bottom")
    for i, (row, name) in enumerate(zip(x, labels)):
        colour = LINE_COLOURS[i % len(LINE_COLOURS)]
        ax.annotate("", xy=row, xytext=(0, 0), arrowprops=dict(arrowstyle="->", color=colour, lw=2.5))
        ax.text(row[0], row[1], f" {name}", color="black", fontsize=11, va="bottom")
    allpts = np.vstack(points + [np.zeros((1, 2))])
    lo = min(allpts.min(), 0) - 0.2
    hi = max(allpts.max(), 1) + 0.3
    ax.set_xlim(lo, hi)
    ax.set_ylim(lo, hi)
    ax.set_aspect("equal")
    ax.axhline(0, color="grey", lw=0.8)
    ax.axvline(0, color="grey", lw=0.8)
    ax.grid(True, alpha=0.3)
    ax.set_xlabel(axis_names[0])
    ax.set_ylabel(axis_names[1])
    if title:
        ax.set_title(title)
    return fig


def loss_curves(
    curves: dict[str, Sequence[Any]],
    *,
    ax: Axes | None = None,
    title: str = "",
    log: bool = True,
    xlabel: str = "training step",
    ylabel: str = "loss",
) -> Figure:
    """Loss curves of several groups of runs: each run thin, each group's median thick.

    ``curves`` maps a group label to a list of equal-length loss arrays (one
    per seed). Colours are Okabe-Ito (``GROUP_COLOURS``), one per group, and every line style
    differs too, so the groups stay apart without colour. A group of one run is drawn once,
    thick, and its legend entry is its label alone (a median of one run is that run).

    Raises
    ------
    ValueError
        ``curves`` is not a non-empty dict of labels to lists of finite real loss curves of one length (positive ones
        with ``log=True``); ``log`` is not ``True`` or ``False``; ``title``, ``xlabel`` or ``ylabel`` is not a text;
        ``ax`` is neither ``None`` nor a matplotlib ``Axes``. The message names the argument.

    Examples
    --------
    >>> fig = loss_curves({"a": [[1.0, 0.5, 0.2]], "b": [[1.0, 0.9, 0.8], [1.0, 0.7, 0.6]]})
    >>> [line.get_label() for line in fig.axes[0].get_lines() if not line.get_label().startswith("_")]
    ['a', 'b (median of 2)']
    >>> len(fig.axes[0].get_lines())  # a: one line; b: two runs and their median
    4
    >>> plt.close(fig)
    """
    if not isinstance(curves, Mapping) or not curves:
        raise ValueError(f"curves must be a non-empty dict of label -> list of loss curves; got {type(curves).__name__}")
    log = as_flag("log", log)
    _texts(title=title, xlabel=xlabel, ylabel=ylabel)
    ax = _axes(ax)
    groups = {}
    for label, runs in curves.items():
        arr = as_array(f"curves[{label!r}]", runs, 2)
        if log and (arr <= 0).any():
            raise ValueError(f"curves[{label!r}] has entries <= 0, which a logarithmic axis cannot show; pass log=False")
        groups[str(label)] = arr
    if ax is None:
        fig, ax = plt.subplots(figsize=(7, 3.6), layout="constrained")
    else:
        fig = ax.figure
    styles = ("-", "--", "-.", ":")
    for g, (label, arr) in enumerate(groups.items()):
        colour, style = GROUP_COLOURS[g % len(GROUP_COLOURS)], styles[g % len(styles)]
        steps = np.arange(arr.shape[1])
        if len(arr) == 1:
            ax.plot(steps, arr[0], color=colour, linestyle=style, linewidth=2.4, label=label)
            continue
        for run in arr:
            ax.plot(steps, run, color=colour, linestyle=style, linewidth=0.9, alpha=0.6)
        ax.plot(steps, np.median(arr, axis=0), color=colour, linestyle=style, linewidth=2.4, label=f"{label} (median of {len(arr)})")
    if log:
        ax.set_yscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.legend(frameon=False)
    if title:
        ax.set_title(title)
    return fig


#: Where :func:`label_points` tries to put a label, in points from its point, in this order.
LABEL_OFFSETS = ((5, 3), (5, -13), (-5, 3), (-5, -13), (5, 15), (-5, 15), (5, -25), (-5, -25), (16, -5), (-16, -5))


def label_points(
    ax: Axes, x: Any, y: Any, labels: Sequence[Any], *, fontsize: float = 10.0
) -> list[matplotlib.text.Annotation]:
    """Write ``labels[i]`` beside the point ``(x[i], y[i])`` of ``ax``, so that no two labels overlap.

    Each label takes the first place of :data:`LABEL_OFFSETS` (right and above the point, then
    below, then to the left, then further out) where its box touches neither a label already
    written nor a point, stays inside the axes, and has no other point nearer to it than its
    own, so that a label cannot be read as another point's; points at the same place get their
    labels on different sides. When no place qualifies, the label goes to the first one. Call it
    after the axes' limits and scales are set: the places are measured on the drawn figure.

    Raises
    ------
    ValueError
        ``ax`` is not a matplotlib ``Axes``; ``x`` or ``y`` is not a list of finite real numbers, one per point (and
        positive on a logarithmic axis); ``labels`` is not a list of one label per point; ``fontsize`` is not a size in
        points from 1 to 72. The message names the argument.

    Examples
    --------
    >>> fig, ax = plt.subplots()
    >>> _ = ax.plot([0.81, 0.81, 0.5], [2.0, 2.0, 1.0], "o")
    >>> texts = label_points(ax, [0.81, 0.81, 0.5], [2.0, 2.0, 1.0], [2, 16, 7])
    >>> [t.get_text() for t in texts], texts[0].xyann != texts[1].xyann
    (['2', '16', '7'], True)
    >>> plt.close(fig)
    """
    if not isinstance(ax, Axes):
        raise ValueError(f"ax must be a matplotlib Axes; got {type(ax).__name__}")
    xs = as_array("x", x, 1)
    ys = as_array("y", y, 1)
    if xs.shape != ys.shape:
        raise ValueError(f"x and y must have one entry per point; got {xs.size} and {ys.size}")
    if isinstance(labels, (str, bytes)) or not isinstance(labels, Sequence) or len(labels) != xs.size:
        got = len(labels) if isinstance(labels, Sequence) else type(labels).__name__
        raise ValueError(f"labels must be a list with one label per point ({xs.size}); got {got}")
    size = as_array("fontsize", fontsize, 0)
    if not 1 <= float(size) <= 72:
        raise ValueError(f"fontsize must be a size in points from 1 to 72; got {float(size)}")
    if ax.get_yscale() == "log" and (ys <= 0).any():
        raise ValueError("y must be positive on a logarithmic axis")
    if ax.get_xscale() == "log" and (xs <= 0).any():
        raise ValueError("x must be positive on a logarithmic axis")
    fig = ax.figure
    order = np.lexsort((ys, xs))
    texts = {
        i: ax.annotate(
            str(labels[i]), (xs[i], ys[i]), textcoords="offset points", xytext=LABEL_OFFSETS[0], fontsize=float(size), va="bottom"
        )
        for i in order
    }
    chosen: dict[int, tuple[int, int]] = {}
    for _ in range(4):  # the labels may change the layout (constrained layout makes room for them): place again until settled
        with quiet():  # matplotlib's own tick arithmetic may overflow for data near 1e308; the places stay defined
            fig.canvas.draw()
            where = ax.transData.transform(np.column_stack([xs, ys]))
        renderer = fig.canvas.get_renderer()
        half = 4 * fig.dpi / 72  # a marker of about 8 points
        frame = ax.get_window_extent(renderer)
        taken = [matplotlib.transforms.Bbox.from_bounds(px - half, py - half, 2 * half, 2 * half) for px, py in where]
        before = dict(chosen)
        for i in order:
            for offset in LABEL_OFFSETS:
                texts[i].xyann = offset
                texts[i].set_horizontalalignment("left" if offset[0] >= 0 else "right")
                box = texts[i].get_window_extent(renderer)
                centre = np.array([(box.x0 + box.x1) / 2, (box.y0 + box.y1) / 2])
                nearest = np.min(np.hypot(*(where - centre).T))
                own = np.hypot(*(where[i] - centre))
                inside = frame.x0 <= box.x0 and box.x1 <= frame.x1 and frame.y0 <= box.y0 and box.y1 <= frame.y1
                if inside and own <= nearest + 1e-9 and not any(box.overlaps(other) for other in taken):
                    break
            else:
                offset = LABEL_OFFSETS[0]
                texts[i].xyann = offset
                texts[i].set_horizontalalignment("left")
                box = texts[i].get_window_extent(renderer)
            chosen[i] = offset
            taken.append(box)
        if chosen == before:
            break
    return [texts[i] for i in range(xs.size)]


def path_length_heatmap(
    matrix: Any,
    labels: Sequence[str],
    *,
    ax: Axes | None = None,
    title: str = "",
    vmax: float | None = None,
) -> Figure:
    """A path-length matrix as a heatmap; ``inf`` (no path at all) is a grey cell marked with a dash, ``–``
    (a short mark, so that a row of no-path cells does not run together into one word).

    Raises
    ------
    ValueError
        ``matrix`` is not finite real numbers of the expected shape; ``labels`` is not a list of one label per row;
        ``ax`` is neither ``None`` nor a matplotlib ``Axes``; ``title`` is not a text (a ``str``); ``vmax`` is neither
        ``None`` nor a finite real number in its range. The message names the argument.

    Examples
    --------
    >>> fig = path_length_heatmap([[0, 1], [np.inf, 0]], ["x1", "x2"])
    >>> [t.get_text() for t in fig.axes[0].texts]
    ['0', '1', '–', '0']
    >>> plt.close(fig)
    """
    _texts(title=title)
    ax, vmax = _axes(ax), _limit("vmax", vmax)
    raw = to_ndarray("matrix", matrix)
    if raw.ndim != 2 or raw.dtype.kind not in "iuf" or raw.size == 0:
        raise ValueError(f"matrix must be a non-empty 2-d array of path lengths; got shape {raw.shape}, dtype {raw.dtype}")
    m = raw.astype(float)
    if m.shape[0] != m.shape[1]:
        raise ValueError(f"matrix must be square (a path length for every pair of tokens); got shape {m.shape}")
    labels = as_labels("labels", labels, m.shape[0])
    if np.isnan(m).any() or (m < 0).any():
        raise ValueError("matrix must hold path lengths >= 0 or inf (no path); got NaN or a negative entry")
    no_path = np.isposinf(m)
    shown = np.where(no_path, -np.inf, m)  # heatmap leaves -inf cells grey and out of the colour scale
    fig = heatmap(shown, labels, labels, ax=ax, title=title, decimals=0, vmin=0, vmax=vmax, xlabel="to token", ylabel="from token")
    axes = ax if ax is not None else fig.axes[0]
    n_cols = m.shape[1]
    for index, text in enumerate(axes.texts[-m.size :]):
        if no_path[index // n_cols, index % n_cols]:
            text.set_text("–")  # en dash: no path
    return fig


# -- data-flow diagrams of attention (chapters 4 and 8) ------------------------

_SYMBOLS = {"d_model": r"d_\mathrm{model}", "d_k": "d_k", "d_v": "d_v", "n": "n", "h": "H"}


def _dim(value: int | str) -> str:
    """A dimension as mathtext: an int as digits, a name such as ``d_model`` as its symbol."""
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise ValueError(f"a dimension must be a positive int or a name such as 'd_k'; got {value!r}")
    if isinstance(value, int):
        if value < 1:
            raise ValueError(f"a dimension must be positive; got {value}")
        return str(value)
    return _SYMBOLS.get(value, value)


def _shape(*dims: int | str) -> str:
    return "$" + r" \times ".join(_dim(d) for d in dims) + "$"


def _product(a: int | str, b: int | str) -> int | str:
    """``a * b`` as a number when both are ints, else as a symbol (``h d_v``)."""
    if isinstance(a, int) and isinstance(b, int):
        return a * b
    return f"{_dim(a)}\\,{_dim(b)}"


def _flow_diagram(
    nodes: dict[str, tuple[float, float, str, str]],
    edges: list[tuple[str, str, str]],
    size: tuple[float, float],
    *,
    box_fontsize: float = 10,
    label_fontsize: float = 8.5,
    extent: tuple[float, float, float, float] | None = None,
) -> Figure:
    """Boxes at ``(x, y)`` holding a name and a shape, joined by labelled arrows.

    Every box is sized to its text. An arrow leaves the side of its source box
    that faces the target: right or left when the target lies beside it,
    bottom or top when the target lies straight below or above. A label sits
    above a horizontal or slanting arrow and to the right of a vertical one.
    ``extent`` (x0, x1, y0, y1) fixes the data coordinates of the whole
    figure; without it they are fitted around the boxes.
    """
    fills = {"input": "#FFFFFF", "proj": "#CDE7F7", "score": "#FCE3BF", "out": "#C2EBDD"}
    if extent is None:
        xs = [x for x, *_ in nodes.values()]
        ys = [y for _, y, *_ in nodes.values()]
        extent = (min(xs) - 1.1, max(xs) + 1.6, min(ys) - 0.6, max(ys) + 0.6)
    fig = plt.figure(figsize=size)
    fig.patch.set_facecolor("white")
    ax = fig.add_axes((0.0, 0.0, 1.0, 1.0))
    ax.set_xlim(extent[0], extent[1])
    ax.set_ylim(extent[2], extent[3])
    ax.set_axis_off()
    texts = {
        name: ax.text(x, y, text, ha="center", va="center", multialignment="center", fontsize=box_fontsize, color="black", zorder=3)
        for name, (x, y, text, _) in nodes.items()
    }
    renderer = fig.canvas.get_renderer()
    to_data = ax.transData.inverted()
    pad_x, pad_y = 0.12 * box_fontsize / 10, 0.08 * box_fontsize / 10  # inches around the text
    boxes = {}
    for name, (x, y, _, kind) in nodes.items():
        (x0, y0), (x1, y1) = to_data.transform(texts[name].get_window_extent(renderer).get_points())
        (px0, py0), (px1, py1) = to_data.transform([(0, 0), (pad_x * fig.dpi, pad_y * fig.dpi)])
        half_w, half_h = (x1 - x0) / 2 + (px1 - px0), (y1 - y0) / 2 + (py1 - py0)
        boxes[name] = (x, y, half_w, half_h)
        ax.add_patch(
            matplotlib.patches.FancyBboxPatch(
                (x - half_w, y - half_h), 2 * half_w, 2 * half_h, boxstyle="round,pad=0,rounding_size=0.08",
                fc=fills[kind], ec="black", lw=1.2, zorder=2,
            )
        )
    for src, dst, label in edges:
        x0, y0, w0, h0 = boxes[src]
        x1, y1, w1, h1 = boxes[dst]
        vertical = abs(x1 - x0) < 1e-9
        if vertical:
            step = 1 if y1 > y0 else -1
            start, end = (x0, y0 + step * h0), (x1, y1 - step * h1)
        else:
            step = 1 if x1 > x0 else -1
            start, end = (x0 + step * w0, y0), (x1 - step * w1, y1)
        ax.annotate("", xy=end, xytext=start, arrowprops=dict(arrowstyle="-|>", color="black", lw=1.2, shrinkA=1, shrinkB=1))
        if not label:
            continue
        mid = ((start[0] + end[0]) / 2, (start[1] + end[1]) / 2)
        backing = dict(boxstyle="round,pad=0.15", fc="white", ec="none", alpha=0.9)
        style = dict(fontsize=label_fontsize, color="black", zorder=4, bbox=backing)
        if vertical:  # beside a vertical arrow, above any other
            ax.annotate(label, mid, xytext=(5, 0), textcoords="offset points", ha="left", va="center", **style)
        else:
            ax.annotate(label, mid, xytext=(0, 3), textcoords="offset points", ha="center", va="bottom", **style)
    return fig


def _projections(
    n: int | str, d_model: int | str, width_qk: int | str, width_v: int | str
) -> tuple[dict[str, tuple[float, float, str, str]], list[tuple[str, str, str]]]:
    """The boxes and arrows both data-flow figures start with: ``X`` and its projections ``Q``, ``K``, ``V``."""
    nodes = {
        "X": (0.0, 1.0, f"input $X$\n{_shape(n, d_model)}", "input"),
        "Q": (3.0, 2.0, f"$Q = XW_Q$\n{_shape(n, width_qk)}", "proj"),
        "K": (3.0, 1.0, f"$K = XW_K$\n{_shape(n, width_qk)}", "proj"),
        "V": (3.0, 0.0, f"$V = XW_V$\n{_shape(n, width_v)}", "proj"),
    }
    edges = [
        ("X", "Q", f"$\\cdot W_Q$: {_shape(d_model, width_qk)}"),
        ("X", "K", f"$\\cdot W_K$: {_shape(d_model, width_qk)}"),
        ("X", "V", f"$\\cdot W_V$: {_shape(d_model, width_v)}"),
    ]
    return nodes, edges


def attention_data_flow(
    n: int | str = "n", d_model: int | str = "d_model", d_k: int | str = "d_k", d_v: int | str = "d_v", *, masked: bool = True
) -> Figure:
    """The data flow of one attention head, in the book's notation, with the shape of every array.

    ``X`` is projected by ``W_Q``, ``W_K`` and ``W_V``; ``Q`` and ``K`` give the
    raw scores ``S = Q K^T``; dividing by ``sqrt(d_k)`` (and adding the mask
    ``M`` when ``masked``) gives the logits ``Z``; their row-wise softmax is
    ``A``, and ``A V`` is the output ``O``. The raw scores, the logits, the
    weights and the output run down the right-hand column. Dimensions are
    ints or names (``"n"``, ``"d_model"``, ``"d_k"``, ``"d_v"``).

    The box text is 12 points, arrow labels 11 points, on a figure 6.98
    inches (670 CSS pixels) wide: a page shows an SVG at that natural size
    when its column is wide enough (at 1280 pixels it is), where 12 points are
    16 pixels, the size of the book's body text. :func:`as_svg` turns the
    figure into that vector image.

    Raises
    ------
    ValueError
        ``n``, ``d_model``, ``d_k`` or ``d_v`` is not a positive integer (or a symbol's name); ``masked`` is not
        ``True`` or ``False``. The message names the argument.

    Examples
    --------
    >>> fig = attention_data_flow(3, 2, 2, 2)
    >>> texts = [t.get_text() for t in fig.axes[0].texts]
    >>> "$S = QK^\\\\top$\\n$3 \\\\times 3$" in texts and "$Z = S/\\\\sqrt{d_k} + M$\\n$3 \\\\times 3$" in texts
    True
    >>> "$A = \\\\mathrm{softmax}(Z)$\\n$3 \\\\times 3$" in texts
    True
    >>> plt.close(fig)
    """
    masked = as_flag("masked", masked)
    mask = " + M" if masked else ""
    rows = (3.35, 2.4, 1.45, 0.5)  # the Q and S row, K and Z, A, V and O
    nodes = {
        "X": (0.6, (rows[0] + rows[3]) / 2, f"input $X$\n{_shape(n, d_model)}", "input"),
        "Q": (2.35, rows[0], f"$Q = XW_Q$\n{_shape(n, d_k)}", "proj"),
        "K": (2.35, rows[1], f"$K = XW_K$\n{_shape(n, d_k)}", "proj"),
        "V": (2.35, rows[3], f"$V = XW_V$\n{_shape(n, d_v)}", "proj"),
        "S": (4.5, rows[0], f"$S = QK^\\top$\n{_shape(n, n)}", "score"),
        "Z": (4.5, rows[1], f"$Z = S/\\sqrt{{d_k}}{mask}$\n{_shape(n, n)}", "score"),
        "A": (4.5, rows[2], f"$A = \\mathrm{{softmax}}(Z)$\n{_shape(n, n)}", "score"),
        "O": (4.5, rows[3], f"output $O = AV$\n{_shape(n, d_v)}", "out"),
    }
    edges = [
        ("X", "Q", "$\\cdot W_Q$"),
        ("X", "K", "$\\cdot W_K$"),
        ("X", "V", "$\\cdot W_V$"),
        ("Q", "S", "$Q$"),
        ("K", "S", "$K^\\top$"),
        ("S", "Z", "$\\div\\sqrt{d_k}$" + (", $+\\,M$" if masked else "")),
        ("Z", "A", "softmax, row by row"),
        ("A", "O", "$A$"),
        ("V", "O", "$V$"),
    ]
    # laid out in a 6.4 x 3.85 grid and drawn 12/11 times larger, so that 12-point text fits its boxes as 11-point text would
    grow = 12 / 11
    return _flow_diagram(
        nodes, edges, (6.4 * grow, 3.85 * grow), box_fontsize=12, label_fontsize=11, extent=(0.0, 6.4, 0.0, 3.85)
    )


def _head_list(h: int | str) -> str:
    """The heads that the concatenation joins, ending with the same head count the split names.

    >>> _head_list(8), _head_list(16), _head_list("h")
    ('head$_1$, ..., head$_{8}$', 'head$_1$, ..., head$_{16}$', 'head$_1$, ..., head$_{H}$')
    >>> _head_list(1), _head_list(2)
    ('head$_1$', 'head$_1$, head$_{2}$')
    """
    last = _dim(h) if isinstance(h, int) else "H"
    if h == 1:
        return "head$_1$"
    if h == 2:
        return f"head$_1$, head$_{{{last}}}$"
    return f"head$_1$, ..., head$_{{{last}}}$"


def multi_head_data_flow(
    n: int | str = "n", d_model: int | str = "d_model", h: int | str = "h", d_k: int | str = "d_k", d_v: int | str = "d_v"
) -> Figure:
    """The data flow of multi-head attention: packed projections, the split into ``h`` heads (the book's $H$),
    attention in every head, the concatenation and ``W_O``, with every shape shown.

    The flow runs right along the top (``X`` to its packed projections and the
    split), down the right-hand column (the heads, then their stacked outputs)
    and back left along the bottom (the concatenation times ``W_O`` gives the
    output); a line under it gives the shapes of the four weight matrices. As
    in :func:`attention_data_flow`, box text is 12 points and labels 11 points
    on a figure about 7 inches wide, so :func:`as_svg` shows it at body size.

    Raises
    ------
    ValueError
        ``n``, ``d_model``, ``h``, ``d_k`` or ``d_v`` is not a positive integer. The message names the argument.

    Examples
    --------
    >>> fig = multi_head_data_flow(3, 512, 8, 64, 64)
    >>> texts = [t.get_text() for t in fig.axes[0].texts]
    >>> "concat(head$_1$, ..., head$_{8}$)\\n$3 \\\\times 512$" in texts and "$\\\\cdot W_O$" in texts
    True
    >>> "split columns\\ninto 8 heads" in texts  # the split and the concatenation name the same 8 heads
    True
    >>> "each head$_u$ =\\nAttention($Q^{(u)}, K^{(u)}, V^{(u)}$)\\n$3 \\\\times 64$" in texts
    True
    >>> "$W_Q$, $W_K$, $W_V$: $512 \\\\times 512$ each;  $W_O$: $512 \\\\times 512$" in texts
    True
    >>> plt.close(fig)
    """
    width_qk, width_v = _product(h, d_k), _product(h, d_v)
    heads = _dim(h) if isinstance(h, int) else "$H$"
    right, top, bottom = 4.75, 4.05, 0.95
    nodes = {
        "X": (0.6, top, f"input $X$\n{_shape(n, d_model)}", "input"),
        "Q": (2.3, top + 0.85, f"$Q = XW_Q$\n{_shape(n, width_qk)}", "proj"),
        "K": (2.3, top, f"$K = XW_K$\n{_shape(n, width_qk)}", "proj"),
        "V": (2.3, top - 0.85, f"$V = XW_V$\n{_shape(n, width_v)}", "proj"),
        "split": (right, top, f"split columns\ninto {heads} {'head' if h == 1 else 'heads'}", "proj"),
        "heads": (right, 2.45, f"each head$_u$ =\nAttention($Q^{{(u)}}, K^{{(u)}}, V^{{(u)}}$)\n{_shape(n, d_v)}", "score"),
        "concat": (right, bottom, f"concat({_head_list(h)})\n{_shape(n, width_v)}", "proj"),
        "out": (1.0, bottom, f"output\n{_shape(n, d_model)}", "out"),
    }
    edges = [
        ("X", "Q", "$\\cdot W_Q$"),
        ("X", "K", "$\\cdot W_K$"),
        ("X", "V", "$\\cdot W_V$"),
        ("Q", "split", ""),
        ("K", "split", ""),
        ("V", "split", ""),
        ("split", "heads", f"$Q^{{(u)}}, K^{{(u)}}$: {_shape(n, d_k)}\n$V^{{(u)}}$: {_shape(n, d_v)}"),
        ("heads", "concat", f"all {heads}:\n{_shape(h, n, d_v)}"),
        ("concat", "out", "$\\cdot W_O$"),
    ]
    grow = 12 / 11
    fig = _flow_diagram(
        nodes, edges, (6.4 * grow, 5.35 * grow), box_fontsize=12, label_fontsize=11, extent=(0.0, 6.4, 0.1, 5.45)
    )
    fig.axes[0].text(
        0.1, 0.3, f"$W_Q$, $W_K$, $W_V$: {_shape(d_model, width_qk)} each;  $W_O$: {_shape(width_v, d_model)}",
        ha="left", va="center", fontsize=11, color="black",
    )
    return fig


@dataclass(frozen=True)
class SvgImage:
    """A figure drawn as SVG: Jupyter, and the book built from it, show it as a vector image.

    ``width_pt`` and ``height_pt`` are its size in points (1/72 inch) and
    ``font_sizes_pt`` the sizes of the text drawn in it, smallest first, so a
    test can tell how large the text appears at a given display width.
    """

    svg: str
    width_pt: float
    height_pt: float
    font_sizes_pt: tuple[float, ...]

    def _repr_svg_(self) -> str:
        return self.svg


def as_svg(fig: Figure) -> SvgImage:
    """Draw ``fig`` as SVG, with its text as outlines (it looks the same in every browser and in print), and close it.

    The file holds no date, and its element ids are fixed, so the same figure
    gives the same SVG every time.

    Raises
    ------
    ValueError
        If ``fig`` is not a matplotlib ``Figure``.

    Examples
    --------
    >>> image = as_svg(attention_data_flow())
    >>> image.svg.startswith("<?xml") and (image.width_pt, image.height_pt)
    (502.690909, 302.4)
    >>> min(image.font_sizes_pt), max(image.font_sizes_pt)
    (11.0, 12.0)
    >>> as_svg("figure")
    Traceback (most recent call last):
    ...
    ValueError: fig must be a matplotlib Figure; got a str
    """
    if not isinstance(fig, Figure):
        raise ValueError(f"fig must be a matplotlib Figure; got a {type(fig).__name__}")
    sizes = sorted({float(t.get_fontsize()) for t in fig.findobj(matplotlib.text.Text) if t.get_visible() and t.get_text()})
    buffer = io.StringIO()
    with matplotlib.rc_context({"svg.fonttype": "path", "svg.hashsalt": "attnlib"}):
        fig.savefig(buffer, format="svg", metadata={"Date": None})
    plt.close(fig)
    svg = buffer.getvalue()
    size = re.search(r'<svg[^>]*width="([0-9.]+)pt"[^>]*height="([0-9.]+)pt"', svg)
    width, height = (float(size.group(1)), float(size.group(2))) if size else (fig.get_figwidth() * 72, fig.get_figheight() * 72)
    return SvgImage(svg, width, height, tuple(sizes))


# --- chapter 15: which blocks of the score matrix exist ---------------------------------------


def key_block_steps(n: int, block_size: int, *, causal: bool = False, steps: Sequence[int] | None = None, title: str = "") -> Figure:
    """Draw the ``n x n`` score matrix at several steps of the blocked computation.

    The blocks are :func:`attnlib.blocked.key_blocks` of ``n`` queries and keys
    in blocks of ``block_size`` keys. In each panel the block of scores that
    exists at that step is coloured and numbered with the step, the blocks
    already folded into the running maximum, normaliser and sum are hatched
    grey (they no longer exist), and the blocks still to come are white. With
    ``causal`` a dashed line marks the diagonal: scores above it are masked.
    ``steps`` are 0-based step numbers (default: every step, at most six).

    Raises
    ------
    ValueError
        ``n`` or ``block_size`` is not a positive integer; ``causal`` is not ``True`` or ``False``; ``steps`` is not a
        list of integers in their range; ``title`` is not a text (a ``str``). The message names the argument.

    Examples
    --------
    >>> fig = key_block_steps(6, 2, steps=[0, 2])
    >>> [ax.get_title() for ax in fig.axes]
    ['step 1 of 3', 'step 3 of 3']
    >>> plt.close(fig)
    """
    n = as_positive_int("n", n)
    causal = as_flag("causal", causal)
    blocks = key_blocks(n, n, block_size, causal=causal)
    if steps is None:
        chosen = list(range(min(len(blocks), 6)))
    elif isinstance(steps, (str, bytes)) or not isinstance(steps, Sequence):
        raise ValueError(f"steps must be a list of step numbers; got {steps!r}")
    else:
        chosen = [as_int("steps", s, minimum=0, what=f"a step number from 0 to {len(blocks) - 1}") for s in steps]
    if not chosen:
        raise ValueError("steps is empty: choose at least one step to draw")
    for s in chosen:
        if s >= len(blocks):
            raise ValueError(f"steps must be between 0 and {len(blocks) - 1}; got {s}")
    if not isinstance(title, str):
        raise ValueError(f"title must be text; got {title!r}")
    fig, axes = plt.subplots(1, len(chosen), figsize=(2.3 * len(chosen) + 0.4, 2.7), layout="constrained", squeeze=False)
    for ax, s in zip(axes[0], chosen):
        ax.add_patch(matplotlib.patches.Rectangle((0, 0), n, n, facecolor="white", edgecolor="black", lw=1))
        for t, block in enumerate(blocks[: s + 1]):
            (k0, k1), (r0, r1) = block.keys, block.rows
            current = t == s
            ax.add_patch(
                matplotlib.patches.Rectangle(
                    (k0, r0),
                    k1 - k0,
                    r1 - r0,
                    facecolor=OKABE_ITO[4] if current else "#dddddd",
                    hatch=None if current else "//",
                    edgecolor="black",
                    lw=0.8,
                )
            )
            if current:
                # with the causal diagonal drawn, the label goes to the block's lower left, off the dashed line
                x, y = ((k0 + 0.3 * (k1 - k0), r1 - 0.3 * (r1 - r0)) if causal else ((k0 + k1) / 2, (r0 + r1) / 2))
                ax.text(x, y, str(s + 1), ha="center", va="center", color="white", fontsize=11)
        if causal:
            ax.plot([0, n], [0, n], "--", color="black", lw=1)
        ax.set_xlim(0, n)
        ax.set_ylim(n, 0)
        ax.set_aspect("equal")
        ax.set_xticks([0.5, n - 0.5], labels=["1", str(n)])
        ax.set_yticks([0.5, n - 0.5], labels=["1", str(n)])
        ax.set_xlabel("key")
        ax.set_ylabel("query")
        ax.set_title(f"step {s + 1} of {len(blocks)}")
    if title:
        fig.suptitle(title)
    return fig
