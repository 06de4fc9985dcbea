// The link codec of the explorers: a setting as base64url JSON in the page address (#e1=...), and the
// checks a setting read from a link must pass before a kind uses it (acceptLink in each kind's module).

/** Encode an object as base64url JSON (for the URL fragment). */
export function encodeState(obj) {
  const bytes = new TextEncoder().encode(JSON.stringify(obj));
  let s = "";
  for (const b of bytes) s += String.fromCharCode(b);
  return btoa(s).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

/** Decode base64url JSON; throws on bad input. */
export function decodeState(text) {
  const b64 = text.replace(/-/g, "+").replace(/_/g, "/");
  const bin = atob(b64 + "===".slice((b64.length + 3) % 4));
  const bytes = Uint8Array.from(bin, (c) => c.charCodeAt(0));
  return JSON.parse(new TextDecoder().decode(bytes));
}

// ---- checks for values that come from a link ---------------------------------------------------

/** A finite-number matrix of shape rows x cols with entries in [min, max]; returns an error text or "". */
export function checkMatrix(name, v, rows, cols, min, max) {
  if (!Array.isArray(v) || v.length !== rows || !v.every((r) => Array.isArray(r) && r.length === cols)) {
    return `${name} must be a ${rows} x ${cols} matrix`;
  }
  for (const r of v) for (const x of r) {
    if (typeof x !== "number" || !Number.isFinite(x)) return `${name} has an entry that is not a finite number`;
    if (x < min - 1e-9 || x > max + 1e-9) return `${name} has an entry outside [${min}, ${max}]`;
  }
  return "";
}

export function checkChoice(name, v, choices) {
  return choices.includes(v) ? "" : `${name} must be one of ${choices.join(", ")}`;
}

export function checkCells(name, v, n) {
  if (!Array.isArray(v) || v.length !== n || !v.every((r) => Array.isArray(r) && r.length === n && r.every((x) => typeof x === "boolean"))) {
    return `${name} must be a ${n} x ${n} grid of true/false`;
  }
  return "";
}

