// Number formatting of the explorers: the browser's copy of attnlib.formatting.format_value
// (the golden test compares the two on hundreds of values), and the inverse used to tell up from down.

/**
 * One number as attnlib.formatting.format_value writes it: `decimals` places, rounded half to even on the
 * exact binary value (as Python does), "-0.0000" written "0.0000", -inf as the style's text.
 */
export function formatValue(v, style) {
  const decimals = style && style.decimals !== undefined ? style.decimals : 4;
  if (v === -Infinity) return (style && style.neg_inf) || "\u2212\u221e";
  if (!Number.isFinite(v)) return String(v);
  const neg = v < 0;
  const a = Math.abs(v);
  let text = a.toFixed(decimals);
  // a tie at the last place (exactly ...5 in the binary value): Python keeps the even digit, toFixed rounds up
  const scaled = a * 10 ** decimals;
  if (a < 1e21 && Math.abs(scaled - Math.floor(scaled) - 0.5) < 1e-6) {
    const exact = a.toFixed(Math.min(100, decimals + 60));
    const cut = exact.indexOf(".") + 1 + decimals;
    if (/^50*$/.test(exact.slice(cut))) {
      const kept = exact.slice(0, cut).replace(/\.$/, "");
      if (Number(kept[kept.length - 1]) % 2 === 0) text = kept;
    }
  }
  if (neg && Number(text) !== 0) text = "-" + text;
  return text;
}

/** The number a shown text stands for (the style's text for -inf reads back as -Infinity). */
export function parseShown(text, style) {
  return text === ((style && style.neg_inf) || "\u2212\u221e") ? -Infinity : Number(text);
}


/** A count and its noun, the noun plural unless the count is exactly one: "1 value", "0 values", "3 values". */
export function countOf(n, noun) {
  return `${n} ${noun}${n === 1 ? "" : "s"}`;
}
