"""The text sizes of a matplotlib SVG whose text is drawn as outlines (``svg.fonttype: path``)."""

from __future__ import annotations

import re


def text_sizes_pt(svg: str) -> tuple[float, float, float]:
    """The SVG's width in points, its largest and its smallest text size in points (subscripts included).

    Matplotlib draws each text as a group scaled by its font size / 100, and a mathtext subscript as
    glyphs scaled once more (by 0.7) inside that group.
    """
    width = float(re.search(r'<svg[^>]*width="([0-9.]+)pt"', svg)[1])
    sizes, smallest = [], []
    for group in re.split(r"(?=<g transform=\"translate\([^)]*\) scale\()", svg)[1:]:
        size = 100 * float(re.match(r'<g transform="translate\([^)]*\) scale\(([0-9.]+)', group)[1])
        sizes.append(size)
        # glyphs of text (DejaVu); a sized radical sign (STIXSize...) is drawn scaled too but is not text
        inner = [float(s) for s in re.findall(r'<use xlink:href="#DejaVu[^"]*" [^>]*scale\(([0-9.]+)\)', group.split("</g>")[0])]
        smallest.append(size * min(inner, default=1.0))
    return width, max(sizes), min(smallest)
