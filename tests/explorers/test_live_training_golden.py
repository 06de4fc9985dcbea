"""The live training explorer's trainer (``static/live_training.js``, composed) against attnlib.induction's training, in node.

From the same :class:`attnlib.induction.PortableRandom` seed the JavaScript draws the same starting
weights and the same batches as :func:`attnlib.induction.train_induction`; then every step's loss (whole
batch, first halves, repeated halves) must agree to a relative 1e-9, and so must the weights after the
last step. The chapter's model is run for 100 steps; smaller models try other widths, heads, learning-rate
schedules and the one-layer model.
"""

from __future__ import annotations

import json
import shutil
import subprocess

import numpy as np
import pytest

from attnlib import induction
from attnlib.explorers.frontend import module_source
from attnlib.training import Adam

REL = 1e-9

RUNNER = r"""
import { readFileSync } from "node:fs";
const [modulePath, casesPath] = process.argv.slice(2);
const { kit } = await import(modulePath);
const out = JSON.parse(readFileSync(casesPath, "utf8")).map((c) => {
  const t = new kit.Trainer(c);
  for (let s = 0; s < c.nSteps; s++) t.trainStep();
  const params = {};
  for (const [name] of kit.shapesOf(t.m)) params[name] = Array.from(t.p[name]);
  return { losses: t.losses, first: t.first, second: t.second, params };
});
process.stdout.write(JSON.stringify(out));
"""

BOOK = induction.BOOK
CASES = [
    # chapter 17's model and data, its learning rate falling as in the chapter (over 100 steps here)
    {
        "vocab": BOOK["vocab_size"],
        "nPositions": BOOK["n_positions"],
        "dModel": BOOK["d_model"],
        "nHeads": BOOK["n_heads"],
        "nLayers": 2,
        "halfLengths": list(BOOK["half_lengths"]),
        "nSequences": BOOK["n_sequences"],
        "lr": BOOK["lr"],
        "finalLr": BOOK["final_lr"],
        "nSteps": 100,
        "seed": 0,
    },
    # two and three heads, other widths, a constant learning rate
    {
        "vocab": 20,
        "nPositions": 24,
        "dModel": 16,
        "nHeads": 2,
        "nLayers": 2,
        "halfLengths": [2, 6],
        "nSequences": 8,
        "lr": 0.01,
        "finalLr": None,
        "nSteps": 100,
        "seed": 3,
    },
    {
        "vocab": 12,
        "nPositions": 16,
        "dModel": 12,
        "nHeads": 3,
        "nLayers": 2,
        "halfLengths": [3, 5],
        "nSequences": 5,
        "lr": 0.03,
        "finalLr": 0.001,
        "nSteps": 60,
        "seed": 2**32 - 1,
    },
    # the one-layer model (the chapter's contrast), with the chapter's data and two heads
    {
        "vocab": BOOK["vocab_size"],
        "nPositions": BOOK["n_positions"],
        "dModel": 16,
        "nHeads": 2,
        "nLayers": 1,
        "halfLengths": list(BOOK["half_lengths"]),
        "nSequences": 8,
        "lr": BOOK["lr"],
        "finalLr": None,
        "nSteps": 100,
        "seed": 11,
    },
]


def reference(case: dict) -> induction.InductionRun:
    model = induction.InductionModel(case["vocab"], case["nPositions"], case["dModel"], case["nHeads"], case["nLayers"])
    params = model.init(induction.PortableRandom(case["seed"]))
    probe = induction.repeated_tokens(2, case["vocab"], tuple(case["halfLengths"]), seed=0)
    return induction.train_induction(
        model,
        params,
        Adam(lr=case["lr"]),
        case["nSteps"],
        case["nSequences"],
        tuple(case["halfLengths"]),
        probe,
        seed=induction.PortableRandom(case["seed"]),
        final_lr=case["finalLr"],
    )


@pytest.fixture(scope="module")
def node_runs(tmp_path_factory):
    node = shutil.which("node")
    assert node, "node is missing: the golden test evaluates the trainer's JavaScript in node (apt-get install nodejs)"
    tmp = tmp_path_factory.mktemp("live_training")
    (tmp / "runner.mjs").write_text(RUNNER)
    (tmp / "cases.json").write_text(json.dumps(CASES))
    module_file = tmp / "live_training.mjs"
    module_file.write_text(module_source("live_training"))  # composed as anywidget loads it
    module = module_file.as_uri()
    proc = subprocess.run([node, str(tmp / "runner.mjs"), module, str(tmp / "cases.json")], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def relative(got, expected) -> float:
    got, expected = np.asarray(got, dtype=float), np.asarray(expected, dtype=float)
    assert got.shape == expected.shape, (got.shape, expected.shape)
    return float(np.max(np.abs(got - expected) / np.maximum(np.abs(expected), 1e-300)))


@pytest.mark.parametrize("index", range(len(CASES)))
def test_every_step_s_loss_equals_attnlib_s_training(node_runs, index):
    case, got = CASES[index], node_runs[index]
    run = reference(case)
    assert len(got["losses"]) == case["nSteps"]
    for key, expected in (("losses", run.losses), ("first", run.first_half), ("second", run.second_half)):
        worst = relative(got[key], expected)
        step = int(np.argmax(np.abs(np.asarray(got[key]) - expected) / np.abs(expected)))
        assert worst < REL, f"{key}: relative difference {worst:.2e} at step {step} (node {got[key][step]!r}, attnlib {expected[step]!r})"
    for name, expected in run.final_params.items():
        size = np.max(np.abs(expected))
        worst = np.max(np.abs(np.asarray(got["params"][name]).reshape(expected.shape) - expected)) / size
        assert worst < REL, f"{name} after the last step: {worst:.2e} of its largest entry"
    # the loss moved: a trainer that never updates would fail the comparison above, and this says so plainly
    assert run.losses[-10:].mean() < run.losses[:10].mean()


def test_a_different_seed_gives_a_different_run(node_runs):
    """The comparison above can fail: the same model from another seed starts elsewhere."""
    other = reference({**CASES[1], "seed": 4, "nSteps": 3})
    assert relative(node_runs[1]["losses"][:3], other.losses) > 1e-3


def test_weights_sent_back_by_the_page_become_attnlib_s_model(node_runs):
    """What the page sends at a pause (its weights as rows) is, through the explorer, the model attnlib trained."""
    from attnlib.explorers import live_training_explorer

    case, got = CASES[0], node_runs[0]
    run = reference(case)
    ex = live_training_explorer()  # the book's setting: width 32, one head, two layers, seed 0
    shapes = induction.book_model().shapes()
    rows = {name: np.asarray(got["params"][name]).reshape(shape).tolist() for name, shape in shapes.items()}
    ex.set_state({"trained": {"step": case["nSteps"], "params": rows}})
    assert ex.error == ""
    model, params = ex.trained_model()
    assert model == induction.book_model()
    for name, expected in run.final_params.items():
        assert np.max(np.abs(params[name] - expected)) < REL * np.max(np.abs(expected)), name
    first, second, _ = induction.half_losses(model, params, induction.book_probe())
    assert np.isfinite(first) and np.isfinite(second)
    ex.seed = 1  # another setting: the weights were not trained with it
    with pytest.raises(ValueError, match="trained"):
        ex.trained_model()
    ex.set_state({"trained": {"step": 3, "params": {**rows, "W_U": rows["P"]}}})  # a matrix of the wrong shape
    assert ex.error.startswith("trained") and ex.trained == {}


FORMED_RUNNER = r"""
import { readFileSync } from "node:fs";
const [modulePath, dataPath] = process.argv.slice(2);
const { kit } = await import(modulePath);
const data = JSON.parse(readFileSync(dataPath, "utf8"));
const settings = { lr: 0.015, n_layers: 2, n_heads: 1, d_model: 32, seed: 0 };
const LIMIT = 1500;
// as the worker does: stepAndWatch, with the views made at a "report" every `every` steps (a fast and a slow machine)
const watched = (every) => {
  const t = kit.trainerFor(data, settings);
  while (!t.formed && t.step < LIMIT) {
    kit.stepAndWatch(t, data);
    if (t.step % every === 0) kit.liveViews(t, data, false);
  }
  return t.formed ? { step: t.formed.step, second: t.formed.second, drop: t.formed.drop } : null;
};
// the rule itself at every step from step 1, with no shortcut: the first step at which it holds
const t = kit.trainerFor(data, settings);
let first = null;
while (first === null && t.step < LIMIT) {
  t.trainStep();
  const v = kit.liveViews(t, data, false);
  if (kit.formed(v, data)) first = { step: v.step, second: v.second, drop: v.drop };
}
process.stdout.write(JSON.stringify({ every1: watched(1), every37: watched(37), first }));
"""


@pytest.mark.slow
def test_the_head_is_named_formed_at_the_same_step_however_often_the_worker_reports(tmp_path):
    """Referee R21 item 5: the formed rule is tested at every step (stepAndWatch), not at the ~250 ms reports.

    Two runs of the same settings, one reporting after every step and one every 37 steps (a slow and a
    fast machine's slices), name the same step, and it is the first step at which the rule holds when it is
    tested after every step from the start.
    """
    from attnlib.explorers import live_training_explorer
    from attnlib.explorers.kinds.live_training import GOAL

    node = shutil.which("node")
    assert node, "node is missing"
    (tmp_path / "runner.mjs").write_text(FORMED_RUNNER)
    (tmp_path / "data.json").write_text(json.dumps(live_training_explorer().data))
    module_file = tmp_path / "live_training.mjs"
    module_file.write_text(module_source("live_training"))
    proc = subprocess.run(
        [node, str(tmp_path / "runner.mjs"), module_file.as_uri(), str(tmp_path / "data.json")],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    got = json.loads(proc.stdout)
    assert got["first"] is not None, "the head never formed within 1500 steps"
    print(f"\nformed at step {got['first']['step']} (drop at {got['first']['drop']}); reports every step / every 37 steps: {got}")
    assert got["every1"] == got["every37"] == got["first"]
    assert 0 <= got["first"]["drop"] < got["first"]["step"]
    assert got["first"]["second"] < GOAL * np.log(BOOK["vocab_size"])
