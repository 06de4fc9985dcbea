"""A cell's printed text on its page exactly as the cell printed it, however the kernel cut it up.

The kernel sends what a cell prints in chunks, one per flush of its output buffer. A flush can fall
in the middle of a ``print`` with several arguments (``print("weights[1, 2] == 0.0:", True)`` writes
its parts one by one), and on a loaded machine it sometimes does: the cell's outputs then hold
``"weights[1, 2] == 0.0:"`` and ``" True\\n"`` as two stream outputs. myst-nb 1.4's
``coalesce_streams`` (``nb_merge_streams: true``) strips the end of every chunk and adds a line break
after it, so the page showed the line broken in two.

This extension merges the chunks of each stream first, exactly (as nbclient's own
``coalesce_streams`` does: plain concatenation), and hands the result to myst-nb's function, which
then sees one chunk per stream and keeps the rest of what it does (carriage returns, backspaces,
stderr after stdout).
"""

from __future__ import annotations

from sphinx.application import Sphinx


def concatenate_streams(outputs: list) -> list:
    """The outputs with every stream's chunks joined into its first chunk, text concatenated exactly.

    Streams of one name (``stdout``, ``stderr``) are joined wherever they are in the list, into the
    position of the first, as myst-nb and nbclient merge them; other outputs keep their order. The
    chunks are not changed: the first chunk of each stream is a copy.

    >>> chunks = [{"output_type": "stream", "name": "stdout", "text": "w[1, 2] == 0.0:"},
    ...           {"output_type": "stream", "name": "stdout", "text": " True\\n"}]
    >>> concatenate_streams(chunks)[0]["text"]
    'w[1, 2] == 0.0: True\\n'
    """
    merged: list = []
    first: dict[str, dict] = {}
    for output in outputs:
        if output.get("output_type") != "stream":
            merged.append(output)
        elif output["name"] in first:
            first[output["name"]]["text"] += output["text"]
        else:
            first[output["name"]] = type(output)(output)  # a copy, of the output's own mapping type
            merged.append(first[output["name"]])
    return merged


def _exact_then_myst_nb(original):
    def coalesce_streams(outputs):
        return original(concatenate_streams(outputs))

    coalesce_streams.attnlib_exact = True
    return coalesce_streams


def setup(app: Sphinx) -> dict:
    from myst_nb.core import render

    if not getattr(render.coalesce_streams, "attnlib_exact", False):  # once, also when Sphinx loads it twice
        render.coalesce_streams = _exact_then_myst_nb(render.coalesce_streams)
    return {"parallel_read_safe": True, "parallel_write_safe": True, "version": "1"}
