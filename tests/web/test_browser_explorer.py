"""The explorer in a real browser: JupyterLab on 127.0.0.1, headless Debian chromium, a slider moved by keyboard and mouse.

The test starts a JupyterLab server from this environment on a free port with a random
token, serving a temporary copy of the playground page (so nothing in the repository is
touched), opens it in ``/usr/bin/chromium`` through the ``playwright`` package (never
``playwright install``), runs all cells, presses the right-arrow key on the W_Q[1,1]
slider of the explorer (attnlib's anywidget front end, the same module as the web book's),
then clicks another slider with the mouse. After each move the weights and outputs on the
page must be what ``attnlib.self_attention`` computes for the sliders' values, and the
kernel, asked by running code in the same kernel, must hold the same setting and the same
numbers in ``ex.result``. Everything is stopped afterwards. A missing chromium is a
failure with the install command, not a skip.
"""

from __future__ import annotations

import json
import shutil
import time

import nbformat
import numpy as np
import pytest
from support.browser import browser_context
from support.paths import ROOT
from support.servers import ALL_CELLS_RAN_JS, KERNEL_IDLE_JS, RUN_IN_KERNEL, jupyterlab

import attnlib
from attnlib.explorers.kinds import blocks, training
from attnlib.plots import format_value

PLAYGROUND = ROOT / "chapters" / "playground.ipynb"
TIMEOUT_MS = 45_000

# JavaScript: the displayed text of each cell of a view of the first live explorer (without the
# screen-reader-only "changed from" text and the arrow), as rows of strings.
READ_VIEW = """(view) => {
  const t = document.querySelector(`.attnlib-live table[data-view="${view}"]`);
  if (!t) return null;
  const rows = [];
  for (const td of t.querySelectorAll('td[data-i][data-j]')) {
    const c = td.cloneNode(true);
    c.querySelectorAll('span').forEach(s => s.remove());
    const i = +td.dataset.i, j = +td.dataset.j;
    (rows[i] = rows[i] || [])[j] = c.textContent.trim();
  }
  return rows;
}"""


KERNEL_STATE = (
    "import json; print(json.dumps({'W_Q': ex.W_Q.tolist(), 'weights': ex.result.weights.tolist(), 'output': ex.result.output.tolist()}))"
)


#: A notebook with the training explorer (chapter 14) and the block explorer (chapter 15), as the chapters make them.
DATA_EXPLORERS = nbformat.v4.new_notebook(
    cells=[
        nbformat.v4.new_code_cell(
            "from attnlib.explorers import block_memory_explorer, training_explorer\nex_t = training_explorer()\nex_t"
        ),
        nbformat.v4.new_code_cell("ex_b = block_memory_explorer()\nex_b"),
    ],
    metadata={"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}},
)


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """A JupyterLab server serving a copy of the playground and the data explorers' notebook; yields (base_url, token)."""
    root = tmp_path_factory.mktemp("lab-root")
    shutil.copy(PLAYGROUND, root / "playground.ipynb")
    nbformat.write(DATA_EXPLORERS, root / "data-explorers.ipynb")
    with jupyterlab(root, tmp_path_factory.mktemp("lab-home")) as server:
        yield server


def _expected(W_Q: list[list[float]]) -> dict[str, list[list[str]]]:
    r = attnlib.self_attention(attnlib.running_example(), W_Q, np.eye(2), np.eye(2))
    return {"weights": _texts(r.weights), "output": _texts(r.output)}


def _texts(M) -> list[list[str]]:
    return [[format_value(float(v)) for v in row] for row in M]


def _page_views(page) -> dict[str, list[list[str]]]:
    return {view: page.evaluate(READ_VIEW, view) for view in ("weights", "output")}


def _page_W_Q(page) -> list[list[float]]:
    live = page.locator(".attnlib-live").first
    return [[float(live.locator(f"input.attnlib-W_Q-{i}-{j}").input_value()) for j in range(2)] for i in range(2)]


def _check_page_and_kernel(page, step: str) -> dict:
    """The page shows attnlib's numbers for its sliders, and the kernel's ex holds the same setting and numbers."""
    W_Q = _page_W_Q(page)
    want = _expected(W_Q)
    try:
        page.wait_for_function(f"() => JSON.stringify(({READ_VIEW})('weights')) === {_js(want['weights'])}", timeout=15_000)
    except Exception:  # show what the page has instead
        pytest.fail(f"{step}: weights on the page {page.evaluate(READ_VIEW, 'weights')} != attnlib's {want['weights']} for W_Q = {W_Q}")
    shown = _page_views(page)
    assert shown == want, f"{step}: page {shown} != attnlib {want}"
    # the widget manager sends one change at a time and holds the rest until the kernel is idle:
    # ask again until the last change has arrived
    deadline = time.monotonic() + 15
    while True:
        printed = page.evaluate(RUN_IN_KERNEL, KERNEL_STATE)
        assert "ERROR" not in printed, printed
        kernel = json.loads(printed.strip().splitlines()[-1])
        if kernel["W_Q"] == W_Q or time.monotonic() > deadline:
            break
        page.wait_for_timeout(100)
    assert _page_W_Q(page) == W_Q, f"{step}: the sliders moved while the kernel caught up"
    assert kernel["W_Q"] == W_Q, f"{step}: the kernel's W_Q {kernel['W_Q']} != the page's sliders {W_Q}"
    assert {"weights": _texts(kernel["weights"]), "output": _texts(kernel["output"])} == shown, f"{step}: kernel and page differ"
    return shown


def test_moving_a_slider_in_jupyterlab_updates_the_page_and_the_kernel(lab, tmp_path):
    base, token = lab
    started = time.monotonic()
    # a fresh chromium profile; every host but 127.0.0.1 is blocked
    with browser_context(tmp_path / "profile", viewport={"width": 1400, "height": 1000}) as (context, blocker):
        page = context.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda exc: errors.append(f"uncaught: {exc} {exc.stack}"))
        try:
            page.set_default_timeout(TIMEOUT_MS)
            page.goto(f"{base}/lab/tree/playground.ipynb?reset&token={token}")
            page.wait_for_function(KERNEL_IDLE_JS)
            print(f"{time.monotonic() - started:.1f}s kernel idle")
            page.evaluate("() => window.jupyterapp.commands.execute('notebook:run-all-cells')")
            # both explorers of the page are drawn by the front-end module and the kernel is done with every cell
            page.wait_for_function("() => document.querySelectorAll('.attnlib-live .attnlib-panel').length === 2")
            print(f"{time.monotonic() - started:.1f}s explorers drawn")
            page.wait_for_function(ALL_CELLS_RAN_JS)
            print(f"{time.monotonic() - started:.1f}s all cells ran")
            before = _check_page_and_kernel(page, "after run-all (ex.reset())")
            assert before["weights"][0] == ["0.4555", "0.2246", "0.3199"]

            live = page.locator(".attnlib-live").first
            slider = live.locator("input.attnlib-W_Q-0-0")
            assert slider.get_attribute("aria-label") == "W_Q[1,1]"
            slider.focus()
            pressed = time.monotonic()
            for _ in range(4):
                page.keyboard.press("ArrowRight")
            assert float(slider.input_value()) == pytest.approx(1.2), slider.input_value()
            after = _check_page_and_kernel(page, "4 right-arrow presses on W_Q[1,1]")
            print(f"4 key presses to page and kernel updated: {1000 * (time.monotonic() - pressed):.0f} ms")
            assert after != before
            # the moved cells are marked as changed on the page, and the live region names the move
            assert live.locator('table[data-view="weights"] td.attnlib-changed').count() >= 1
            assert "to 1.20" in live.locator(".attnlib-status").inner_text()

            # the mouse: click near the left end of W_Q[2,1]
            other = live.locator("input.attnlib-W_Q-1-0")
            box = other.bounding_box()
            page.mouse.click(box["x"] + box["width"] * 0.1, box["y"] + box["height"] / 2)
            assert float(other.input_value()) < -1.5, other.input_value()
            _check_page_and_kernel(page, "mouse click on W_Q[2,1]")
            live.screenshot(path=str(tmp_path / "explorer.png"))
            print(f"screenshot {tmp_path / 'explorer.png'}")
        except Exception:
            shot = tmp_path / "failure.png"
            page.screenshot(path=str(shot), full_page=True)
            print(f"screenshot of the failure: {shot}")
            raise
        assert not errors, errors
        assert blocker.blocked == [], f"JupyterLab asked another host: {blocker.blocked}"
    assert time.monotonic() - started < 120


def _js(rows: list[list[str]]) -> str:
    return json.dumps(json.dumps(rows, separators=(",", ":")))


def _kernel_json(page, code: str) -> dict:
    printed = page.evaluate(RUN_IN_KERNEL, code)
    assert "ERROR" not in printed, printed
    return json.loads(printed.strip().splitlines()[-1])


def _until_kernel(page, code: str, done, step: str) -> dict:
    """Ask the kernel until ``done(answer)`` (the widget manager sends one change at a time)."""
    deadline = time.monotonic() + 15
    while True:
        answer = _kernel_json(page, code)
        if done(answer) or time.monotonic() > deadline:
            return answer
        page.wait_for_timeout(100)


def _read_view_in(root: str) -> str:
    """READ_VIEW for the live explorer that ``root`` selects (not the page's first)."""
    return READ_VIEW.replace(".attnlib-live table", f"{root} table")


def test_the_training_and_block_explorers_follow_the_keyboard_in_jupyterlab(lab, tmp_path):
    """Chapter 14's and 15's explorers in JupyterLab: a key press changes the page's tables to attnlib's, and the kernel."""
    base, token = lab
    with browser_context(tmp_path / "profile-data", viewport={"width": 1400, "height": 1000}) as (context, blocker):
        page = context.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda exc: errors.append(f"uncaught: {exc}"))
        try:
            page.set_default_timeout(TIMEOUT_MS)
            page.goto(f"{base}/lab/tree/data-explorers.ipynb?reset&token={token}")
            page.wait_for_function(KERNEL_IDLE_JS)
            page.evaluate("() => window.jupyterapp.commands.execute('notebook:run-all-cells')")
            page.wait_for_function("() => document.querySelectorAll('.attnlib-live .attnlib-panel').length === 2")
            page.wait_for_function(ALL_CELLS_RAN_JS)
            data = training.training_data()

            # the training explorer: three steps to the right, 0 -> 30
            train_root = ".attnlib-live:has(.attnlib-kind-training)"
            step = page.locator(f"{train_root} input.attnlib-step")
            step.focus()
            for _ in range(3):
                page.keyboard.press("ArrowRight")
            assert step.get_attribute("aria-valuetext") == "30"
            view = training.training_view(data, 30)
            want = [[format_value(float(v), training.TABLE_DECIMALS) for v in row] for row in view["bilinear"]]
            page.wait_for_function(f"() => JSON.stringify(({_read_view_in(train_root)})('bilinear')) === {_js(want)}")
            weights = [[format_value(float(v), training.TABLE_DECIMALS) for v in row] for row in view["weights"]]
            assert page.evaluate(_read_view_in(train_root), "weights") == weights
            kernel = _until_kernel(page, "import json; print(json.dumps({'step': ex_t.step, 'loss': ex_t.result['loss']}))",
                                   lambda k: k["step"] == 30, "training step")  # fmt: skip
            assert kernel == {"step": 30, "loss": view["loss"]}

            # the block explorer: the sequence length one choice up (4096 -> 8192), then two steps of the loop
            block_root = ".attnlib-live:has(.attnlib-kind-blocks)"
            n = page.locator(f"{block_root} input.attnlib-n")
            n.focus()
            page.keyboard.press("ArrowRight")
            assert n.get_attribute("aria-valuetext") == "8,192"
            row = blocks.block_memory_table()["8192/128/float32"]
            page.wait_for_function(
                f"() => document.querySelector('{block_root} table[data-view=memory] td').textContent === {json.dumps(row['dense'])}"
            )
            block_step = page.locator(f"{block_root} input.attnlib-step")
            block_step.focus()
            page.keyboard.press("ArrowRight")
            page.keyboard.press("ArrowRight")
            assert block_step.input_value() == "3"
            code = (
                "import json; b = ex_b.block_at(); "
                "print(json.dumps({'n': ex_b.n, 'step': ex_b.step, 'dense': ex_b.result['dense'], 'keys': b.keys}))"
            )
            kernel = _until_kernel(page, code, lambda k: k["step"] == 3 and k["n"] == 8192, "block step")
            assert kernel == {"n": 8192, "step": 3, "dense": row["dense"], "keys": [256, 384]}
            title = page.locator(f"{block_root} svg.attnlib-blocks-picture title").text_content()
            assert "step 3 of 64: keys 257 to 384" in title, title
        except Exception:
            page.screenshot(path=str(tmp_path / "failure.png"), full_page=True)
            print(f"screenshot of the failure: {tmp_path / 'failure.png'}")
            raise
        assert not errors, errors
        assert blocker.blocked == [], f"JupyterLab asked another host: {blocker.blocked}"
