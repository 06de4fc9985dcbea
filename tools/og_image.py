"""Draw the front page's opening picture and link-preview image, ``_static/og-image.png``, from attnlib.

The grid is the attention weights of the running example with ``W_Q = W_K = W_V = I``
(so ``Q = K = V = X``), scores divided by ``sqrt(d_k) = sqrt(2)``, rounded to two
decimals; rows are the queries x1, x2, x3 and columns the keys. It is drawn by
``attnlib.plots.heatmap``, so the numbers come from the same code as the chapters.
After a change to the running example, the heatmap or this file, write it again::

    .venv/bin/python tools/og_image.py

``tests/book/test_og_image.py`` fails while the committed PNG differs from what this draws.
"""

from __future__ import annotations

import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
import attnlib  # noqa: E402
from attnlib.plots import heatmap  # noqa: E402

IMAGE = ROOT / "_static" / "og-image.png"
#: 1200 x 630 px, the size link previews expect: 6 x 3.15 inches at 200 dots per inch
SIZE_IN, DPI = (6.0, 3.15), 200
DECIMALS = 2
TOKENS = ["$x_1$", "$x_2$", "$x_3$"]


def weights() -> np.ndarray:
    """The running example's attention weights with identity projections, scaled by 1/sqrt(2)."""
    X = attnlib.running_example()
    return attnlib.attention(X, X, X).weights


def figure() -> matplotlib.figure.Figure:
    """The picture: the weights grid on the left, the title and the formula on the right."""
    fig = plt.figure(figsize=SIZE_IN, dpi=DPI)
    ax = fig.add_axes((0.075, 0.2, 0.27, 0.62))
    heatmap(weights(), TOKENS, TOKENS, ax=ax, decimals=DECIMALS, xlabel="key", ylabel="query")
    ax.xaxis.set_label_position("top")
    ax.xaxis.tick_top()
    fig.text(0.4, 0.66, "Deriving Attention", fontsize=20, fontweight="bold", color="#0b2e59")
    fig.text(0.4, 0.5, "From soft alignment to", fontsize=11, color="#333333")
    fig.text(0.4, 0.4, r"softmax$(QK^{\top}/\sqrt{d_k})\,V$, one step at a time", fontsize=11, color="#333333")
    fig.text(0.4, 0.26, "An open textbook with runnable chapters", fontsize=9, color="#555555")
    return fig


def write(path: Path = IMAGE) -> Path:
    """Draw the picture and save it to ``path`` (no date or version in the file, so it is reproducible)."""
    fig = figure()
    fig.savefig(path, dpi=DPI, facecolor="white", metadata={"Software": None})
    plt.close(fig)
    return path


if __name__ == "__main__":
    print(write())
