"""Hidden tests of chapter 4: instructor only, never in the book or its downloads.

``instructor/make_assignments.py`` appends each block, between nbgrader's
hidden-test markers, to the test cell whose grade id follows ``# %%``. The
block runs in the student's notebook after the visible self-check, with
``seed`` set by the grader from the roster's student id.
"""
# ruff: noqa: F821 (the names come from the student's notebook)

# %% ch04-ex1-test
_v = variants.weighted_average_by_hand(seed)
assert variants.agrees(o_by_hand, _v.weights @ _v.V)

# %% ch04-ex2-test
_v = variants.implement_inputs("4.2", seed)
assert np.allclose(my_softmax(_v.logits), attnlib.softmax(_v.logits))
assert np.allclose(my_softmax(_v.logits + _v.shift), my_softmax(_v.logits))

# %% ch04-ex3-test
_v = variants.implement_inputs("4.3", seed)
assert np.allclose(my_attention(_v.Q, _v.K, _v.V), attnlib.attention(_v.Q, _v.K, _v.V).output)
assert np.allclose(my_attention(X, X, X), attnlib.attention(X, X, X).output)
