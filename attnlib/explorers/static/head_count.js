// The head-count explorer (kind "head_count", chapter 8): a seeded 4-token example of width 8 split
// across 1, 2, 4 or 8 heads; one weights table per head; the parameter count (from attnlib) stays.
import { multiHead } from "./compute.js";
import { el, MatrixView, read, choiceSetting, focusedLayout, listen, countChanged } from "./dom.js";
import { formatValue } from "./format.js";
import { checkChoice } from "./link.js";

function renderHeadCount({ model, el: host }) {
  const title = read(model, "title", "Number of heads");
  const L = focusedLayout(host, model, title, "head_count", ["n_heads"]);
  const tokens = read(model, "tokens", []);
  const choices = read(model, "head_choices", [1, 2, 4, 8]);
  const control = choiceSetting(L, { key: "n_heads", label: "number of heads", choices, fallback: 2, cls: "attnlib-heads" });
  L.controls.prepend(control.el);
  let views = [];

  function draw() {
    const h = read(model, "n_heads", 2);
    control.set(h);
    L.message.show(read(model, "error", ""));
    const X = read(model, "X", []);
    const r = multiHead(X, read(model, "W_Q"), read(model, "W_K"), read(model, "W_V"), read(model, "W_O"), h);
    if (views.length !== h) {
      views = Array.from({ length: h }, (_, k) => new MatrixView(`head${k}`, L.style));
      L.views.replaceChildren(...views.map((v) => el("div", { class: "attnlib-cell" }, v.table)));
    }
    const d = X[0].length;
    const changed = countChanged(...r.weights.map((W, k) => views[k].update(W, {
      rows: tokens, cols: tokens, caption: `head ${k + 1}: weights (columns ${k * r.dHead + 1}\u2013${(k + 1) * r.dHead})`, vmin: 0, vmax: 1,
    })));
    const params = read(model, "param_counts", {})[String(h)];
    L.facts.textContent = `Heads: ${h}, each of width d_head = ${d} / ${h} = ${r.dHead} and with its own row of weights for each token. `
      + `Parameters of the block: 4 \u00b7 ${d}\u00b2 = ${params}, whatever the number of heads.`;
    const first = r.weights[0][0].map((v) => formatValue(v, L.style)).join(", ");
    L.say(changed, `Heads: ${h}; head 1, row ${tokens[0]}: ${first}.`);
  }
  draw();
  return listen(model, ["n_heads", "error"], draw, () => L.status.dispose());
}

export function acceptLink(model, obj) {
  const p = checkChoice("number of heads", obj.n_heads, read(model, "head_choices", [1, 2, 4, 8]));
  return p ? [{}, [p]] : [{ n_heads: obj.n_heads }, []];
}

export default { render: renderHeadCount };
