"""The live training explorer (chapter 17) in JupyterLab, in chromium: the page trains, the weights come back to Python.

A notebook of one cell shows ``live_training_explorer()`` (the book's setting: width 32, one head, two
layers, seed 0). The reader's path is taken: press *train*, let the worker report its first steps, press *pause*.
The page sends its weights at the pause; in the same kernel, ``ex.trained_model()`` must then give the
book's model and the weights of the step the page paused at, and these must be attnlib's own training
of as many steps (the same seed, the page's learning-rate schedule over the book's 1200 steps) to a
relative 1e-9, and give the held-out losses the page showed.
"""

from __future__ import annotations

import json
import time

import numpy as np
import pytest
from support.lab import notebook_in_lab
from support.servers import ALL_CELLS_RAN_JS, RUN_IN_KERNEL

from attnlib import induction
from attnlib.explorers.kinds.live_training import live_probe
from attnlib.training import Adam

pytestmark = pytest.mark.slow

REL = 1e-9
BOOK = induction.BOOK
CELL = "from attnlib.explorers import live_training_explorer\nex = live_training_explorer()\nex"
#: Prints the step the kernel's explorer holds and its trained weights (or null before the page sent any).
KERNEL_STATE = (
    "import json\n"
    "try:\n"
    "    m, p = ex.trained_model()\n"
    "    print(json.dumps({'step': ex.trained['step'], 'model': [m.d_model, m.n_heads, m.n_layers],"
    " 'params': {k: v.tolist() for k, v in p.items()}}))\n"
    "except ValueError:\n"
    "    print('null')"
)
FACTS = "document.querySelector('.attnlib-live .attnlib-facts').textContent"


def attnlib_after(steps: int) -> dict[str, np.ndarray]:
    """attnlib's training of the book's model from seed 0 for ``steps`` steps, the rate falling as on the page (over 1200).

    The page's rate falls on a line from the book's ``lr`` to its ``final_lr`` over 1200 steps; a run of ``steps``
    steps follows the same line when its own ``final_lr`` is the page's rate at its last step.
    """
    model = induction.book_model()
    done = (steps - 1) / (BOOK["n_steps"] - 1)
    last_lr = BOOK["lr"] * (1 - done) + BOOK["final_lr"] * done
    run = induction.train_induction(model, model.init(induction.PortableRandom(0)), Adam(lr=BOOK["lr"]), steps, BOOK["n_sequences"],
                                    BOOK["half_lengths"], live_probe()[0], seed=induction.PortableRandom(0), final_lr=last_lr)  # fmt: skip
    return run.final_params


def test_the_page_trains_in_jupyterlab_and_the_kernel_gets_attnlib_s_weights(tmp_path):
    with notebook_in_lab(tmp_path, "live.ipynb", CELL) as (page, errors, blocker):
        page.wait_for_function(f"() => document.querySelector('.attnlib-live .attnlib-facts') && {FACTS}.startsWith('Step 0.')")
        page.wait_for_function(ALL_CELLS_RAN_JS)
        assert page.evaluate(RUN_IN_KERNEL, KERNEL_STATE).strip() == "null"  # nothing trained yet
        train = page.locator(".attnlib-live button.attnlib-train")
        train.click()
        page.wait_for_function(f"() => /^Step [1-9]/.test({FACTS})")  # the worker's first slice of steps is done
        train.click()  # pause: the page sends its weights to the kernel
        page.wait_for_function("() => document.querySelector('.attnlib-live .attnlib-train-progress').textContent.startsWith('paused')")
        views = page.evaluate("() => document.querySelector('.attnlib-live').attnlibTrainer.last().views")
        step = views["step"]
        assert step >= 1 and page.evaluate(f"() => {FACTS}").startswith(f"Step {step}.")
        deadline = time.monotonic() + 20
        while True:  # the widget manager sends the change once it is made
            printed = page.evaluate(RUN_IN_KERNEL, KERNEL_STATE).strip()
            assert "ERROR" not in printed, printed
            kernel = json.loads(printed.splitlines()[-1])
            if (kernel and kernel["step"] == step) or time.monotonic() > deadline:
                break
            page.wait_for_timeout(200)
        assert kernel is not None and kernel["step"] == step, kernel
        assert not errors, errors
        assert blocker.blocked == [], f"JupyterLab asked another host: {blocker.blocked}"
    assert kernel["model"] == [BOOK["d_model"], BOOK["n_heads"], 2]
    expected = attnlib_after(step)
    for name, want in expected.items():
        got = np.asarray(kernel["params"][name])
        assert got.shape == want.shape, name
        worst = np.max(np.abs(got - want)) / np.max(np.abs(want))
        assert worst < REL, f"{name} after {step} steps: {worst:.2e} of its largest entry"
    # the weights moved (a page that never trained would fail the comparison above, and this says so plainly)
    start = induction.book_model().init(induction.PortableRandom(0))
    assert np.max(np.abs(expected["W_Q1"] - start["W_Q1"])) > 1e-3
    # what Python's analysis reads from the weights is what the page showed: the held-out losses of both halves
    params = {name: np.asarray(rows) for name, rows in kernel["params"].items()}
    first, second, _ = induction.half_losses(induction.book_model(), params, live_probe()[0])
    assert abs(first - views["first"]) < REL * abs(first) and abs(second - views["second"]) < REL * abs(second)
