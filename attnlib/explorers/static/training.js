// The training explorer (kind "training", chapter 14): a slider over the recorded steps of a training
// run (computed by attnlib in Python, passed as data), showing that step's attention map of one
// held-out sequence, the learned bilinear form W_Q W_K^T and the loss.
import { rowSums, trainingView } from "./compute.js";
import { MatrixView, read, choiceSetting, focusedLayout, listen, countChanged } from "./dom.js";
import { formatValue } from "./format.js";
import { checkChoice } from "./link.js";

function renderTraining({ model, el: host }) {
  const title = read(model, "title", "Training: attention learns to look one token back");
  const L = focusedLayout(host, model, title, "training", ["step"]);
  const steps = read(model, "steps", [0]);
  const decimals = read(model, "decimals", 2);
  const control = choiceSetting(L, { key: "step", label: "training step", choices: steps, fallback: steps[0], cls: "attnlib-step" });
  L.controls.prepend(control.el);
  const weightsView = new MatrixView("weights", L.style);
  const bilinearView = new MatrixView("bilinear", L.style);
  L.show(weightsView.table, bilinearView.table);

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
    const changed = countChanged(
      weightsView.update(r.weights, {
        rows: tokens, cols: tokens, caption: `attention weights of one held-out sequence at step ${r.step}`, vmin: 0, vmax: 1,
        rowSums: rowSums(r.weights), decimals,
      }),
      bilinearView.update(r.bilinear, { rows: features, cols: features, caption: "W_Q W_K\u1d40 (rows: query features, columns: key features)", decimals }),
    );
    L.facts.textContent = `Step ${r.step} of ${steps[steps.length - 1]}: loss ${f(r.loss)} on the held-out batch; `
      + `mean weight on the previous token ${f(r.previous)}.`;
    L.say(changed, `Loss ${f(r.loss)}, weight on the previous token ${f(r.previous)}.`);
  }
  draw();
  return listen(model, ["step", "error"], draw, () => L.status.dispose());
}

export function acceptLink(model, obj) {
  const p = checkChoice("step", obj.step, read(model, "steps", []));
  return p ? [{}, [p]] : [{ step: obj.step }, []];
}

export default { render: renderTraining };
