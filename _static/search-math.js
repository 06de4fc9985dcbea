// Readable math in the search page's snippets.
//
// Sphinx's search page cuts each result's snippet out of the page's HTML as text; the book's math is
// there as the LaTeX that MathJax typesets (`\(\mathrm{softmax}(QK^\top/\sqrt{d_k})\)`), so snippets
// showed raw LaTeX. This file hands Sphinx the page with each math element's LaTeX rewritten as plain
// text (softmax(QKᵀ/√dₖ)): the common commands become their symbols, sub- and superscripts become
// Unicode ones where Unicode has them, braces and the remaining backslashes go. Pages other than the
// search page have no `Search` and are left alone. Jupyter Book adds every .js file in _static/ to
// every page; tests/web/test_web_front.py checks the snippets.
(() => {
  const SYMBOLS = {
    top: "ᵀ", sqrt: "√", times: "×", cdot: "·", sum: "Σ", prod: "Π", infty: "∞", in: "∈", le: "≤",
    leq: "≤", ge: "≥", geq: "≥", ne: "≠", neq: "≠", approx: "≈", to: "→", rightarrow: "→", mapsto: "↦",
    alpha: "α", beta: "β", gamma: "γ", delta: "δ", epsilon: "ε", varepsilon: "ε", theta: "θ",
    lambda: "λ", mu: "μ", pi: "π", sigma: "σ", tau: "τ", phi: "φ", omega: "ω", Delta: "Δ", Sigma: "Σ",
    partial: "∂", nabla: "∇", ldots: "…", dots: "…", cdots: "⋯", odot: "⊙", otimes: "⊗", pm: "±",
    log: "log", exp: "exp", max: "max", min: "min", quad: " ", qquad: " ", left: "", right: "",
  };
  const SUB = { 0: "₀", 1: "₁", 2: "₂", 3: "₃", 4: "₄", 5: "₅", 6: "₆", 7: "₇", 8: "₈", 9: "₉",
    a: "ₐ", e: "ₑ", h: "ₕ", i: "ᵢ", j: "ⱼ", k: "ₖ", l: "ₗ", m: "ₘ", n: "ₙ", o: "ₒ", p: "ₚ", r: "ᵣ",
    s: "ₛ", t: "ₜ", u: "ᵤ", v: "ᵥ", x: "ₓ", "+": "₊", "-": "₋", "=": "₌", "(": "₍", ")": "₎" };
  const SUP = { 0: "⁰", 1: "¹", 2: "²", 3: "³", 4: "⁴", 5: "⁵", 6: "⁶", 7: "⁷", 8: "⁸", 9: "⁹",
    i: "ⁱ", n: "ⁿ", T: "ᵀ", "+": "⁺", "-": "⁻", "=": "⁼", "(": "⁽", ")": "⁾", "ᵀ": "ᵀ" };

  /** A script (sub or super) in Unicode if every character has one, else as _(...) or ^(...). */
  const script = (body, table, mark) => {
    const chars = [...body];
    if (chars.length && chars.every((c) => c in table)) return chars.map((c) => table[c]).join("");
    return chars.length === 1 ? mark + body : `${mark}(${body})`;
  };

  /** Plain text for a LaTeX formula as the book writes them. */
  const readable = (latex) => {
    let s = latex.replace(/^\\\(|\\\)$|^\\\[|\\\]$|^\$\$?|\$\$?$/g, "").trim();
    s = s.replace(/\\(?:mathrm|text|operatorname|mathbf|mathit|boldsymbol|mathcal|mathbb)\s*\{([^{}]*)\}/g, "$1");
    s = s.replace(/\\frac\s*\{([^{}]*)\}\s*\{([^{}]*)\}/g, "($1)/($2)");
    s = s.replace(/\\sqrt\s*\{([^{}]*)\}/g, (_, x) => "√" + ([...x].length > 1 && !/^[a-z]_/.test(x) ? `(${x})` : x));
    s = s.replace(/\\([A-Za-z]+)/g, (m, name) => (name in SYMBOLS ? SYMBOLS[name] : name));
    s = s.replace(/\\[,;:! ]/g, " ").replace(/\\([{}_%$#&])/g, "$1");
    for (let k = 0; k < 3; k++) {  // scripts, innermost braces first
      s = s.replace(/_\{([^{}]*)\}|_(\S)/g, (_, a, b) => script(a ?? b, SUB, "_"));
      s = s.replace(/\^\{([^{}]*)\}|\^(\S)/g, (_, a, b) => script(a ?? b, SUP, "^"));
    }
    return s.replace(/[{}]/g, "").replace(/\s+/g, " ").trim();
  };

  const patch = () => {
    if (typeof Search === "undefined" || !Search.htmlToText || Search.htmlToText.attnlibMath) return;
    const original = Search.htmlToText;
    Search.htmlToText = (htmlString, anchor) => {
      const doc = new DOMParser().parseFromString(htmlString, "text/html");
      doc.querySelectorAll(".math").forEach((m) => { m.textContent = ` ${readable(m.textContent)} `; });
      return original(doc.documentElement.outerHTML, anchor);
    };
    Search.htmlToText.attnlibMath = true;
  };
  window.attnlibReadableMath = readable;
  patch();
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", patch);
})();
