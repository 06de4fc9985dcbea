"""Figures' text: labels that do not overprint each other, legends that say what is drawn (issue 44)."""

from __future__ import annotations

import itertools
import re

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

from attnlib import plots  # noqa: E402

#: Chapter 14's margin figure: seeds 2 and 16 sit at the same place, seed 3 next to them, 1 and 15 close together.
MARGINS = [0.26, 0.87, 0.81, 0.81, 0.56, 0.75, 0.70, 0.45, 0.58, 0.68, 0.65, 0.76, 0.31, 0.72, 0.88, 0.87, 0.81, 0.60, 0.77, 0.73]
LOSSES = [0.0331, 0.0012, 0.0019, 0.0022, 0.0167, 0.0026, 0.0044, 0.0165, 0.0078, 0.0077, 0.0068, 0.0047, 0.0292, 0.0053, 0.0008,
          0.0014, 0.0019, 0.0095, 0.0033, 0.0035]  # fmt: skip


@pytest.mark.parametrize("size", [(7, 4.2), (5, 3)])
def test_no_two_labels_overlap_on_the_margin_figure(size):
    fig, ax = plt.subplots(figsize=size, layout="constrained")
    ax.semilogy(MARGINS, LOSSES, "o", ms=7)
    texts = plots.label_points(ax, MARGINS, LOSSES, [str(s) for s in range(20)])
    assert [t.get_text() for t in texts] == [str(s) for s in range(20)]
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    boxes = [t.get_window_extent(renderer) for t in texts]
    pairs = itertools.combinations(range(20), 2)
    overlapping = [(texts[a].get_text(), texts[b].get_text()) for a, b in pairs if boxes[a].overlaps(boxes[b])]
    assert not overlapping, overlapping
    plt.close(fig)


def test_labels_at_one_place_go_to_different_sides():
    fig, ax = plt.subplots()
    ax.plot([1.0] * 3, [1.0] * 3, "o")
    a, b, c = plots.label_points(ax, [1.0] * 3, [1.0] * 3, ["a", "b", "c"])
    assert len({a.xyann, b.xyann, c.xyann}) == 3
    plt.close(fig)


def test_label_points_refuses_what_it_cannot_place():
    fig, ax = plt.subplots()
    with pytest.raises(ValueError, match="labels must be a list with one label per point"):
        plots.label_points(ax, [1.0, 2.0], [1.0, 2.0], ["a"])
    with pytest.raises(ValueError, match="labels"):
        plots.label_points(ax, [1.0], [1.0], "a")
    with pytest.raises(ValueError, match="x and y"):
        plots.label_points(ax, [1.0, 2.0], [1.0], ["a", "b"])
    ax.set_yscale("log")
    with pytest.raises(ValueError, match="y must be positive"):
        plots.label_points(ax, [1.0], [0.0], ["a"])
    with pytest.raises(ValueError, match="ax"):
        plots.label_points(fig, [1.0], [1.0], ["a"])
    plt.close(fig)


def test_a_single_run_is_not_called_a_median():
    fig = plots.loss_curves({"one head, d_k = 4": [[1.0, 0.5, 0.1]], "five": [[1.0, 0.4, 0.2]] * 5})
    labels = [line.get_label() for line in fig.axes[0].get_lines() if not line.get_label().startswith("_")]
    assert labels == ["one head, d_k = 4", "five (median of 5)"]
    assert [t.get_text() for t in fig.axes[0].get_legend().get_texts()] == labels
    plt.close(fig)


def test_two_groups_of_loss_curves_differ_in_colour_and_style():
    """Chapter 14's scaled and unscaled runs: blue solid against vermillion dashed, thin runs visible."""
    fig = plots.loss_curves({"scaled": [[1.0, 0.5, 0.2]] * 2, "unscaled": [[1.0, 0.4, 0.1]] * 2})
    lines = fig.axes[0].get_lines()
    first, second = lines[:3], lines[3:]
    assert {line.get_color() for line in first} == {plots.GROUP_COLOURS[0]}
    assert {line.get_color() for line in second} == {plots.GROUP_COLOURS[1]}
    assert plots.GROUP_COLOURS[0] != plots.GROUP_COLOURS[1]
    assert {line.get_linestyle() for line in first} != {line.get_linestyle() for line in second}
    assert all(line.get_alpha() >= 0.6 for line in first[:2] + second[:2])
    plt.close(fig)


def test_no_path_cells_get_a_mark_with_room_to_spare():
    """Chapter 10's Fig. 10.2: a row of no-path cells must not read as one word ("nonenonenone")."""
    from attnlib.paths import path_length_matrix

    matrix = path_length_matrix(8, "rnn_left_to_right")
    fig, axes = plt.subplots(1, 3, figsize=(10, 3.7), layout="constrained")
    plots.path_length_heatmap(matrix, [f"x{i}" for i in range(1, 9)], ax=axes[0], vmax=7)
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    marks = [t for t in axes[0].texts if t.get_text() == "–"]
    assert len(marks) == 28  # every pair below the diagonal, 8 * 7 / 2
    cell = axes[0].get_window_extent(renderer).width / 8
    assert all(t.get_window_extent(renderer).width < cell / 2 for t in marks)
    plt.close(fig)


def test_an_output_can_share_the_colour_of_its_input():
    """Chapter 6's outputs: o1 dashed in x1's colour and o2 in x2's, never the other way round (referee R18, item 12)."""
    X = [[1.0, 0.0], [0.0, 1.0], [0.5, 0.5]]
    extra = {"o1": [0.6, 0.4], "o2": [0.4, 0.6], "free": [0.2, 0.1]}
    fig = plots.token_vectors(X, ["x1", "x2", "x3"], extra=extra, match_rows={"o1": 0, "o2": 1})
    arrows = [t for t in fig.axes[0].texts if isinstance(t, matplotlib.text.Annotation)]
    colour = {}
    for arrow, label in zip(arrows, [*extra, "x1", "x2", "x3"]):  # the extras are drawn first, then the rows
        colour[label] = matplotlib.colors.to_hex(arrow.arrow_patch.get_edgecolor())
    assert colour["o1"] == colour["x1"] and colour["o2"] == colour["x2"]
    assert colour["x1"] != colour["x2"] and colour["free"] not in {colour["x1"], colour["x2"], colour["x3"]}
    plt.close(fig)


def test_match_rows_is_checked_by_name():
    X, extra = [[1.0, 0.0], [0.0, 1.0]], {"o1": [0.6, 0.4]}
    for bad, words in [
        ([0], "match_rows must be a dict"),
        ({"o9": 0}, "match_rows names 'o9'"),
        ({"o1": 2}, "match_rows['o1'] must be a row index of X (0 to 1)"),
        ({"o1": -1}, "match_rows['o1'] must be a row index"),
        ({"o1": True}, "match_rows['o1'] must be a row index"),
    ]:
        with pytest.raises(ValueError, match=re.escape(words)):
            plots.token_vectors(X, extra=extra, match_rows=bad)
    plt.close("all")
