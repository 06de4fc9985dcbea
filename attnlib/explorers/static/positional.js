// The positional explorer (kind "positional", chapter 11): the sinusoidal table (from attnlib, passed
// in `tables`) for a chosen d_model, one position t outlined, and its dot product with every position.
import { positionalViews } from "./compute.js";
import { MatrixView, read, choiceSetting, focusedLayout, listen, countChanged } from "./dom.js";
import { formatValue } from "./format.js";
import { checkChoice } from "./link.js";

function renderPositional({ model, el: host }) {
  const title = read(model, "title", "Sinusoidal positions");
  const L = focusedLayout(host, model, title, "positional", ["position", "d_model"]);
  const dChoices = read(model, "d_model_choices", [2, 4, 6, 8, 10, 12, 14, 16]);
  const nPositions = (read(model, "tables", {})[String(dChoices[0])] || []).length || 12;
  const positions = Array.from({ length: nPositions }, (_, t) => t);
  const posControl = choiceSetting(L, { key: "position", label: "position t", choices: positions, fallback: 1, cls: "attnlib-position" });
  const dControl = choiceSetting(L, { key: "d_model", label: "d_model", choices: dChoices, fallback: 2, cls: "attnlib-d-model" });
  L.controls.prepend(posControl.el, dControl.el);
  const peView = new MatrixView("pe", L.style);
  const simView = new MatrixView("similarity", L.style);
  L.show(peView.table, simView.table);

  function draw() {
    const t = read(model, "position", 1), d = read(model, "d_model", 2);
    posControl.set(t);
    dControl.set(d);
    L.message.show(read(model, "error", ""));
    const table = read(model, "tables", {})[String(d)];
    const r = positionalViews(table, t);
    const cols = Array.from({ length: d }, (_, c) => `${c % 2 === 0 ? "sin" : "cos"} \u03c9${Math.floor(c / 2)}`);
    const rows = positions.map((p) => `t=${p}`);
    const f = (v) => formatValue(v, L.style);
    const changed = countChanged(
      peView.update(table, { rows, cols, caption: `PE for positions 0\u2013${nPositions - 1}, d_model = ${d} (row t outlined)`, vmin: -1, vmax: 1, highlightRow: t }),
      simView.update(r.similarity.map((v) => [v]), { rows, cols: [`PE(t=${t})\u00b7PE`], caption: "dot product with every position" }),
    );
    const freqs = read(model, "frequencies", {})[String(d)] || [];
    L.facts.textContent = `PE(t=${t}) = (${r.pe.map(f).join(", ")}). Frequencies \u03c9 = ${freqs.map(f).join(", ")}.`;
    L.say(changed, `PE(t=${t}) = ${r.pe.map(f).join(", ")}.`);
  }
  draw();
  return listen(model, ["position", "d_model", "error"], draw, () => L.status.dispose());
}

export function acceptLink(model, obj) {
  const values = {}, problems = [];
  const tables = read(model, "tables", {});
  const first = tables[Object.keys(tables)[0]] || [];
  const nPositions = first.length || 12;
  if ("position" in obj) {
    const p = Number.isInteger(obj.position) && obj.position >= 0 && obj.position < nPositions ? "" : `position must be an integer 0..${nPositions - 1}`;
    if (p) problems.push(p); else values.position = obj.position;
  }
  if ("d_model" in obj) {
    const p = checkChoice("d_model", obj.d_model, read(model, "d_model_choices", []));
    if (p) problems.push(p); else values.d_model = obj.d_model;
  }
  return [values, problems];
}

export default { render: renderPositional };
