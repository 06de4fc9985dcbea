"""Hidden tests of chapter 10: instructor only, never in the book or its downloads.

``instructor/make_assignments.py`` appends each block, between nbgrader's
hidden-test markers, to the test cell whose grade id follows ``# %%``. The
block runs in the student's notebook after the visible self-check, with
``seed`` set by the grader from the roster's student id.
"""
# ruff: noqa: F821 (the names come from the student's notebook)

# %% ch10-ex1-test
_v = variants.path_lengths_by_hand(seed)
assert rnn_steps == attnlib.paths.rnn_path_length(_v.source, _v.target, n=_v.n)
assert attention_steps == attnlib.paths.attention_path_length(_v.source, _v.target, n=_v.n)
