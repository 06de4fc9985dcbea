// The scale-comparison explorer (kind "scale_comparison", chapter 7): the running example stretched
// by a factor, attending to itself without scaling and with the scores divided by sqrt(d).
import { rowSums, scaleComparisonViews, snap } from "./compute.js";
import { MatrixView, read, slider, focusedLayout, listen, countChanged } from "./dom.js";
import { formatValue } from "./format.js";

// the range when the data does not say (Python sends it as `length_range`)
const LENGTH = { min: 0.25, max: 6, step: 0.25 };

function renderScaleComparison({ model, el: host }) {
  const title = read(model, "title", "Unscaled against scaled, as the vectors grow");
  const L = focusedLayout(host, model, title, "scale_comparison", ["length"]);
  const tokens = read(model, "tokens", []);
  const range = read(model, "length_range", LENGTH);
  const control = slider({
    label: "length factor", name: "length \u00d7", value: read(model, "length", 1), ...range,
    onInput: (v) => {
      const old = read(model, "length", 1), value = snap(v, range);
      L.change({ length: value }, `length factor moved from ${old.toFixed(2)} to ${value.toFixed(2)}`);
    },
  });
  control.input.classList.add("attnlib-length");
  L.controls.prepend(control.el);
  const rawView = new MatrixView("unscaled", L.style);
  const scaledView = new MatrixView("scaled", L.style);
  L.show(rawView.table, scaledView.table);

  function draw() {
    const length = read(model, "length", 1);
    control.set(length);
    L.message.show(read(model, "error", ""));
    const r = scaleComparisonViews(read(model, "X", []), length);
    const f = (v) => formatValue(v, L.style);
    const changed = countChanged(
      rawView.update(r.raw.weights, { rows: tokens, cols: tokens, caption: "weights without scaling", vmin: 0, vmax: 1, rowSums: rowSums(r.raw.weights) }),
      scaledView.update(r.scaled.weights, {
        rows: tokens, cols: tokens, caption: `weights, scores divided by \u221a${r.X[0].length} = ${f(r.divisor)}`, vmin: 0, vmax: 1, rowSums: rowSums(r.scaled.weights),
      }),
    );
    const maxes = (W) => W.map((w) => f(Math.max(...w))).join(", ");
    L.facts.textContent = `Vectors stretched by ${length.toFixed(2)}: the scores grow by ${f(length * length)}. `
      + `Largest weight per row, unscaled: ${maxes(r.raw.weights)}; scaled: ${maxes(r.scaled.weights)}.`;
    L.say(changed, `Largest weights unscaled: ${maxes(r.raw.weights)}; scaled: ${maxes(r.scaled.weights)}.`);
  }
  draw();
  return listen(model, ["length", "error"], draw, () => L.status.dispose());
}

export function acceptLink(model, obj) {
  const v = obj.length, range = read(model, "length_range", LENGTH);
  if (typeof v !== "number" || !Number.isFinite(v) || v < range.min || v > range.max) return [{}, [`length must be a number in [${range.min}, ${range.max}]`]];
  return [{ length: snap(v, range) }, []];
}

export default { render: renderScaleComparison };
