"""Strings each chapter's executed outputs must contain: the post's numbers, computed.

Keys are chapter file stems. Every chapter in chapters/ needs an entry (a test
checks that), and every string must appear in that chapter's outputs (text,
HTML or LaTeX), which come from attnlib calls, never from typed prose.
"""

EXPECTED: dict[str, list[str]] = {
    "01-running-example": ["shape of X: (3, 2)", "[[1.  0. ]", "length of x3: 0.7071", "x1 . x3 = 0.5"],
    "02-compatibility-function": [],
    "03-queries-keys-values": [],
    "04-full-formula": [],
    "05-scaling": [],
    "06-walkthrough": [],
    "07-unscaled-vs-scaled": [],
    "08-multi-head": [],
    "09-self-cross-masked": [],
    "10-path-length": [],
    "11-positional-information": [],
    "12-one-story": [],
    "13-closing": [],
}
