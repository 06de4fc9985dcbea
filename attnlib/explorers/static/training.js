// The training explorer (kind "training", chapter 14): a slider over the recorded steps of a training
// run (computed by attnlib in Python, passed as data), showing that step's attention map of one
// held-out sequence, the learned bilinear form W_Q W_K^T and the loss.
import { trainingView } from "./compute.js";
import { el, MatrixView, read, choiceSlider, focusedLayout, listen, saveSoon } from "./dom.js";
import { formatValue } from "./format.js";
import { checkChoice } from "./link.js";

function renderTraining({ model, el: host }) {
  const title = read(model, "title", "Training: attention learns to look one token back");
  const L = focusedLayout(host, model, title, "training", ["step"]);
  const steps = read(model, "steps", [0]);
  const decimals = read(model, "decimals", 2);
  let lastChange = "initial setting";
  const control = choiceSlider({
    label: "training step", choices: steps, value: read(model, "step", steps[0]), cls: "attnlib-step",
    onChange: (v) => {
      lastChange = `training step changed from ${read(model, "step", steps[0])} to ${v}`;
      model.set("step", v);
      saveSoon(model);
    },
  });
  L.controls.prepend(control.el);
  const weightsView = new MatrixView("weights", L.style);
  const bilinearView = new MatrixView("bilinear", L.style);
  L.views.append(el("div", { class: "attnlib-cell" }, weightsView.table), el("div", { class: "attnlib-cell" }, bilinearView.table));

  function draw() {
    const step = read(model, "step", steps[0]);
    control.set(step);
    const data = {};
    for (const key of ["steps", "losses", "previous", "weights", "bilinear"]) data[key] = read(model, key, []);
    const r = trainingView(data, step);
    L.message.show(read(model, "error", "") || (r ? "" : `no recorded state for step ${step}`));
    if (!r) return;
    const tokens = read(model, "tokens", []), features = read(model, "features", []);
    const f = (v) => formatValue(v, L.style);
    let changed = weightsView.update(r.weights, {
      rows: tokens, cols: tokens, caption: `attention weights of one held-out sequence at step ${r.step}`, vmin: 0, vmax: 1,
      rowSums: r.weights.map((w) => w.reduce((a, b) => a + b, 0)), decimals,
    });
    changed += bilinearView.update(r.bilinear, { rows: features, cols: features, caption: "W_Q W_K^T (rows: query features, columns: key features)", decimals });
    L.facts.textContent = `Step ${r.step} of ${steps[steps.length - 1]}: loss ${f(r.loss)} on the held-out batch; `
      + `mean weight on the previous token ${f(r.previous)}.`;
    L.status.say(`Last change: ${lastChange} \u2014 ${changed} value(s) changed.`, `${lastChange}. Loss ${f(r.loss)}, weight on the previous token ${f(r.previous)}.`);
  }
  draw();
  return listen(model, ["step", "error"], draw, () => L.status.dispose());
}

export function acceptLink(model, obj) {
  const p = checkChoice("step", obj.step, read(model, "steps", []));
  return p ? [{}, [p]] : [{ step: obj.step }, []];
}

export default { render: renderTraining };
