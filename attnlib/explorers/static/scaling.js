// The scaling explorer (kind "scaling", chapter 5): the seeded scores of one query against six keys
// (computed by attnlib in Python, passed in `samples`), divided by sqrt(d_k), and both softmaxes.
import { rowSums, scalingViews } from "./compute.js";
import { MatrixView, read, choiceSetting, focusedLayout, listen, countChanged } from "./dom.js";
import { formatValue } from "./format.js";
import { checkChoice } from "./link.js";

function renderScaling({ model, el: host }) {
  const title = read(model, "title", "Scaling: the dimension d_k of queries and keys");
  const L = focusedLayout(host, model, title, "scaling", ["dk"]);
  const choices = read(model, "dk_choices", [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024]);
  const control = choiceSetting(L, { key: "dk", label: "d_k", choices, fallback: 2, cls: "attnlib-dk" });
  L.controls.prepend(control.el);
  const scoresView = new MatrixView("scores", L.style);
  const weightsView = new MatrixView("weights", L.style);
  L.show(scoresView.table, weightsView.table);

  function draw() {
    const dk = read(model, "dk", 2);
    control.set(dk);
    const sample = read(model, "samples", {})[String(dk)];
    L.message.show(read(model, "error", "") || (sample ? "" : `no sample for d_k = ${dk}`));
    if (!sample) return;
    const r = scalingViews(sample.raw_scores, dk);
    const keys = r.raw.map((_, j) => `k${j + 1}`);
    const f = (v) => formatValue(v, L.style);
    const changed = countChanged(
      scoresView.update([r.raw, r.scaled], { rows: ["q\u00b7k", "q\u00b7k/\u221ad_k"], cols: keys, caption: "scores of one query against six keys" }),
      weightsView.update([r.weightsRaw, r.weightsScaled], {
        rows: ["unscaled", "scaled"], cols: keys, caption: "softmax weights", vmin: 0, vmax: 1,
        rowSums: rowSums([r.weightsRaw, r.weightsScaled]),
      }),
    );
    const maxRaw = Math.max(...r.weightsRaw), maxScaled = Math.max(...r.weightsScaled);
    const text = `d_k = ${dk}. Spread (standard deviation) of the scores of random vectors: ${f(sample.spread_raw)} unscaled `
      + `(about \u221ad_k = ${f(Math.sqrt(dk))}), ${f(sample.spread_scaled)} after dividing by \u221ad_k. `
      + `Largest weight of the query: ${f(maxRaw)} unscaled, ${f(maxScaled)} scaled.`;
    L.facts.textContent = text;
    L.say(changed, `Weights unscaled: ${r.weightsRaw.map(f).join(", ")}; scaled: ${r.weightsScaled.map(f).join(", ")}.`);
  }
  draw();
  return listen(model, ["dk", "samples", "error"], draw, () => L.status.dispose());
}

export function acceptLink(model, obj) {
  const p = checkChoice("d_k", obj.dk, read(model, "dk_choices", []));
  return p ? [{}, [p]] : [{ dk: obj.dk }, []];
}

export default { render: renderScaling };
