"""The induction explorer (chapter 17) in JupyterLab, in chromium: typing updates the maps, the predictions and the kernel.

A notebook of one cell builds the explorer on a briefly trained model of the chapter's shape
(``induction.book_run(0, n_steps=300)``, seeded, so this process computes the same weights). After
typing into the text box, the page's maps and predictions must be attnlib's for the typed text, and
the kernel's explorer must hold the same text and the same predictions.
"""

from __future__ import annotations

import json
import time

import pytest
from support.lab import notebook_in_lab
from support.servers import ALL_CELLS_RAN_JS, RUN_IN_KERNEL

from attnlib import induction
from attnlib.explorers.kinds.induction import induction_data, induction_view
from attnlib.formatting import format_value

pytestmark = pytest.mark.slow

CELL = (
    "from attnlib import induction\n"
    "from attnlib.explorers import induction_explorer\n"
    "ex = induction_explorer(induction.book_run(0, n_steps=300).final_params, induction.book_model())\n"
    "ex"
)
MAPS = """() => ['layer1-head0', 'layer2-head0'].map(v => document.querySelector(`.attnlib-live canvas[data-view="${v}"]`).attnlibValues)"""
PREDICTIONS = """() => [...document.querySelectorAll('.attnlib-live table[data-view=predictions] tbody tr:not([hidden])')].map(tr =>
  [tr.querySelector('th').textContent, ...[...tr.querySelectorAll('td')].map(td => td.textContent)])"""
KERNEL_STATE = "import json; print(json.dumps({'text': ex.text, 'predicted': ex.result['predicted_labels']}))"


def _texts(rows) -> list[list[str]]:
    return [[format_value(float(x), 2) for x in row] for row in rows]


def test_typing_in_jupyterlab_updates_the_maps_the_predictions_and_the_kernel(tmp_path):
    data = induction_data(induction.book_run(0, n_steps=300).final_params, induction.book_model())
    with notebook_in_lab(tmp_path, "induction.ipynb", CELL) as (page, errors, blocker):
        page.wait_for_function("() => document.querySelectorAll('.attnlib-live .attnlib-panel').length === 1")
        page.wait_for_function(ALL_CELLS_RAN_JS)
        box = page.locator(".attnlib-live input.attnlib-text")
        box.click()
        page.keyboard.press("End")
        page.keyboard.type(" the cat sat")
        page.wait_for_function("() => document.querySelector('.attnlib-live .attnlib-facts').textContent.startsWith('9 tokens')")
        text = box.input_value()
        assert text == "the cat sat on the mat the cat sat"
        want = induction_view(data, text, "words")
        assert [_texts(M) for M in page.evaluate(MAPS)] == [_texts(want["layers"][layer][0]) for layer in range(2)]
        shown = zip(want["labels"], want["predicted_labels"], want["probability"])
        rows = [[f"{i}:{t}", p, format_value(q, 2)] for i, (t, p, q) in enumerate(shown)]
        assert page.evaluate(PREDICTIONS) == rows
        deadline = time.monotonic() + 20
        while True:  # the widget manager sends the last change once the kernel is idle
            printed = page.evaluate(RUN_IN_KERNEL, KERNEL_STATE)
            assert "ERROR" not in printed, printed
            kernel = json.loads(printed.strip().splitlines()[-1])
            if kernel["text"] == text or time.monotonic() > deadline:
                break
            page.wait_for_timeout(200)
        assert kernel == {"text": text, "predicted": want["predicted_labels"]}
        assert not errors, errors
        assert blocker.blocked == [], f"JupyterLab asked another host: {blocker.blocked}"
