"""Hidden tests of chapter 12: instructor only, never in the book or its downloads.

``instructor/make_assignments.py`` appends each block, between nbgrader's
hidden-test markers, to the test cell whose grade id follows ``# %%``. The
block runs in the student's notebook after the visible self-check, with
``seed`` set by the grader from the roster's student id.
"""
# ruff: noqa: F821 (the names come from the student's notebook)

# %% ch12-ex1-test
_v = variants.retrieval_by_hand(seed)
_r = attnlib.retrieval.retrieve([_v.scores], _v.values)
assert variants.agrees(weights_by_hand, _r.weights[0])
assert variants.agrees(output_by_hand, _r.output[0])
