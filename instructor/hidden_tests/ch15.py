"""Hidden tests of chapter 15: instructor only, never in the book or its downloads.

``instructor/make_assignments.py`` appends each block, between nbgrader's
hidden-test markers, to the test cell whose grade id follows ``# %%``. The
block runs in the student's kernel after the visible self-check, with
``seed`` set by the grader from the roster's student id. It trusts nothing
there: ``hand_in`` only hands the answer in (the typed numbers, or the
student's function's results on the grader's inputs), and the grader judges
it in its own process (``attnlib.exercises.grading``; nbgrader plugin
``JudgeHandIns``). See the exercises' registry in ``attnlib/exercises/ch15.py``.
"""
# ruff: noqa: F821, F811, E402 (seed comes from the grader's line at the top of the test cell; each block is a cell of its own)

# %% ch15-ex1-test
from attnlib.exercises.grading import hand_in

hand_in("15.1", seed, globals())

# %% ch15-ex2-test
from attnlib.exercises.grading import hand_in

hand_in("15.2", seed, globals())

# %% ch15-ex3-test
from attnlib.exercises.grading import hand_in

hand_in("15.3", seed, globals())
