"""_ext/exact_streams.py: a printed line that reached the notebook in two chunks is one line on the page."""

from __future__ import annotations

import nbformat
from support.notebooks import exact_streams, output_text


def _stream(text: str, name: str = "stdout"):
    return nbformat.v4.new_output("stream", name=name, text=text)


# what ipykernel sent once on a loaded machine for print("masked.weights[1, 2] == 0.0:", True)
SPLIT = [_stream("masked.weights[1, 2] == 0.0:"), _stream(" True\nrows still sum to 1: [1. 1. 1.]\n")]
WHOLE = "masked.weights[1, 2] == 0.0: True\nrows still sum to 1: [1. 1. 1.]\n"


def test_myst_nb_alone_breaks_the_split_line():
    """The reason for the extension: myst-nb's own merge strips each chunk and ends it with a line break."""
    from myst_nb.core.utils import coalesce_streams

    merged = coalesce_streams([nbformat.from_dict(o) for o in SPLIT])
    assert merged[0]["text"].startswith("masked.weights[1, 2] == 0.0:\n True")


def test_the_patched_merge_keeps_the_line_whole_and_the_rest_of_myst_nb():
    from myst_nb.core.utils import coalesce_streams as original

    patched = exact_streams._exact_then_myst_nb(original)
    outputs = [*SPLIT, nbformat.v4.new_output("display_data", data={"text/plain": "fig"}), _stream("later\n"),
               _stream("warn", "stderr")]  # fmt: skip
    merged = patched(outputs)
    assert [o["output_type"] for o in merged] == ["stream", "display_data", "stream"]
    assert merged[0]["text"] == WHOLE + "later\n"
    assert merged[2]["text"] == "warn\n"
    assert SPLIT[0]["text"] == "masked.weights[1, 2] == 0.0:", "the notebook's own outputs are not changed"
    # "\r" handling is still myst-nb's
    assert patched([_stream("10%\r"), _stream("100%\n")])[0]["text"] == "100%\n"


def test_setup_replaces_myst_nb_s_merge_once():
    from myst_nb.core import render

    before = render.coalesce_streams
    try:
        exact_streams.setup(None)
        first = render.coalesce_streams
        exact_streams.setup(None)
        assert render.coalesce_streams is first and first.attnlib_exact
        assert first(SPLIT)[0]["text"] == WHOLE
    finally:
        render.coalesce_streams = before


def test_the_tests_read_a_split_line_whole():
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("print(...)", outputs=SPLIT)])
    assert output_text(nb) == WHOLE
