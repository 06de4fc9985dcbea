"""Helpers for the live explorers in a browser: read the setting back from the controls on the page,
read the numbers the page shows, and compute what attnlib says those numbers must be."""

from __future__ import annotations

import numpy as np

from attnlib.core import attention
from attnlib.explorers import kinds
from attnlib.plots import format_value

# JavaScript: everything about the live explorer number `index` of the page, read from the DOM only
# (controls and tables), plus the data embedded by the notebook cell.
READ_EXPLORER_JS = """
(index) => {
  const div = document.querySelectorAll('div.attnlib-explorer')[index];
  const live = div.querySelector('.attnlib-live');
  const data = JSON.parse(div.querySelector('script.attnlib-state').textContent);
  const text = (td) => { const c = td.cloneNode(true); c.querySelectorAll('span').forEach(s => s.remove()); return c.textContent.trim(); };
  const tables = {};
  if (live) for (const t of live.querySelectorAll('table.attnlib-view')) {
    const rows = [];
    for (const tr of t.querySelectorAll('tbody tr')) {
      const msg = tr.querySelector('td.attnlib-message');
      rows.push(msg ? {message: msg.textContent.trim()} : [...tr.querySelectorAll('td[data-j]')].map(text));
    }
    tables[t.dataset.view] = rows;
  }
  const controls = {};
  if (live) {
    for (const input of live.querySelectorAll('input[type=range]')) {
      const name = input.getAttribute('aria-label');
      controls[name] = input.hasAttribute('aria-valuetext') ? input.getAttribute('aria-valuetext') : Number(input.value);
    }
    const dk = live.querySelector('select.attnlib-dk');
    if (dk) controls.dk = Number(dk.value);
    const mode = live.querySelector('.attnlib-mask-modes input:checked');
    if (mode) controls.mask_mode = mode.value;
    const cells = [...live.querySelectorAll('.attnlib-mask-grid input[type=checkbox]')];
    if (cells.length) {
      const n = Math.round(Math.sqrt(cells.length));
      controls.mask_cells = Array.from({length: n}, (_, i) => cells.slice(i * n, i * n + n).map(c => c.checked));
    }
  }
  const error = live ? (live.querySelector('.attnlib-error:not([hidden])') || {}).textContent || '' : '';
  return {kind: div.dataset.attnlibKind, data, controls, tables, error, mounted: div.classList.contains('attnlib-mounted')};
}
"""


def _texts(M) -> list[list[str]]:
    return [[format_value(float(v)) for v in row] for row in np.atleast_2d(np.asarray(M, dtype=float))]


def attention_setting(info: dict) -> dict:
    """The attention explorer's state as the page's controls show it (data from the embedded JSON)."""
    data, c = info["data"], info["controls"]
    d = len(data["X"][0])
    state = {k: data[k] for k in ("X", "tokens", "W_Q", "W_K", "W_V", "dk", "mask_mode", "mask_cells")}
    for name in kinds.attention.W_NAMES:
        if f"{name}[1,1]" in c:
            state[name] = [[c[f"{name}[{i + 1},{j + 1}]"] for j in range(d)] for i in range(d)]
    for key in ("dk", "mask_mode", "mask_cells"):
        if key in c:
            state[key] = c[key]
    return state


def expected_tables(info: dict) -> dict:
    """What attnlib says every table of this explorer must show, for the setting read from its controls."""
    kind, data, c = info["kind"], info["data"], info["controls"]
    if kind == "attention":
        ref = kinds.attention.reference_views(attention_setting(info))
        out = {}
        for view in ("Q", "K", "V", "scores", "scaled"):
            out[view] = _texts(ref[view])
        for view in ("weights", "output"):
            out[view] = [{"message": m} if m else _texts([row])[0] for row, m in zip(ref[view], ref["messages"])]
        return {k: v for k, v in out.items() if k in info["tables"]}
    if kind == "scaling":
        dk = int(c["d_k"])
        v = kinds.scaling.scaling_view(data["samples"][str(dk)]["raw_scores"], dk)
        return {"scores": _texts(np.vstack([v["raw"], v["scaled"]])), "weights": _texts(np.vstack([v["raw_weights"], v["scaled_weights"]]))}
    if kind == "scale_comparison":
        X = np.asarray(data["X"]) * float(c["length factor"])
        return {"unscaled": _texts(attention(X, X, X, scale=False).weights), "scaled": _texts(attention(X, X, X, scale=True).weights)}
    if kind == "head_count":
        h = int(c["number of heads"])
        arrays = {k: np.asarray(data[k]) for k in ("X", "W_Q", "W_K", "W_V", "W_O")}
        _, weights = kinds.head_count.head_count_result(arrays, h)
        return {f"head{r}": _texts(weights[r]) for r in range(h)}
    if kind == "positional":
        t, d = int(c["position t"]), int(c["d_model"])
        table = np.asarray(data["tables"][str(d)])
        return {"pe": _texts(table), "similarity": _texts(kinds.positional.positional_similarity(table, t)[:, None])}
    if kind == "training":
        view = kinds.training.training_view(data, int(c["training step"]))
        return {"weights": _texts(view["weights"]), "bilinear": _texts(view["bilinear"])}
    if kind == "blocks":
        n, b = int(str(c["sequence length n"]).replace(",", "")), int(c["block size (keys per step)"])
        row = kinds.blocks.block_memory_table()[f"{n}/{b}/{c['number format']}"]
        return {"memory": [[row["dense"]], [row["blocked"]], [f"{row['ratio']}\u00d7 less"]]}
    raise AssertionError(f"unknown kind {kind}")


def mismatches(info: dict) -> dict:
    """Tables whose shown numbers differ from attnlib's (empty when the page is right)."""
    want = expected_tables(info)
    bad = {}
    for view, rows in want.items():
        shown = info["tables"].get(view)
        if shown != rows:
            bad[view] = {"page": shown, "attnlib": rows}
    return bad
