// The strings table comes from /api/strings (English fills any key a language lacks).
// Text between $…$ in a string is TeX, typeset offline by the vendored KaTeX (static/vendor/katex).
let table = {};
export const LANGUAGE_NAMES = { en: "English", zh: "中文" };

export async function loadStrings(lang) {
  const response = await fetch(`/api/strings?lang=${encodeURIComponent(lang)}`);
  const body = await response.json();
  if (!response.ok) throw new Error(body.detail || response.statusText);
  table = body.strings;
  document.documentElement.lang = body.lang === "zh" ? "zh-CN" : body.lang;
  for (const node of document.querySelectorAll("[data-i18n]")) setText(node, t(node.dataset.i18n));
  for (const node of document.querySelectorAll("[data-i18n-label]")) node.setAttribute("aria-label", plain(t(node.dataset.i18nLabel)));
  document.title = t("page.title");
  return body;
}

export const language = () => (document.documentElement.lang.startsWith("zh") ? "zh" : "en");

// Translate `key`, filling {placeholders} from `vars` (numbers are formatted with fmt).
export function t(key, vars = {}) {
  const template = table[key] ?? key;
  return template.replace(/\{(\w+)\}/g, (whole, name) => {
    const v = vars[name];
    if (v === undefined || v === null) return whole;
    return typeof v === "number" ? fmt(v) : String(v);
  });
}

// What a refused request says, in the page's language: never the server's (Python) wording.
export function errorText(error) {
  if (error && error.code === "budget") return t("error.budget");
  if (error && error.parameter) return t("error.parameter", { name: t(`param.${error.parameter}`) });
  return t("error.other");
}

const SUPERSCRIPT = { "-": "⁻", 0: "⁰", 1: "¹", 2: "²", 3: "³", 4: "⁴", 5: "⁵", 6: "⁶", 7: "⁷", 8: "⁸", 9: "⁹" };

// m × 10ⁿ with trailing zeros dropped (1 × 10⁻⁵ is written 10⁻⁵).
function scientific(v, digits) {
  const [m, e] = v.toExponential(digits - 1).split("e");
  const mantissa = String(Number(m));
  const power = `10${String(Number(e)).replace(/[-0-9]/g, (c) => SUPERSCRIPT[c])}`;
  if (mantissa === "1") return power;
  if (mantissa === "-1") return `−${power}`;
  return `${mantissa} × ${power}`;
}

// Display formatting only (no computation): `digits` significant digits; a power of ten when the
// number is very large or small, or when rounding would otherwise print false zeros (22030 for e^10).
export function fmt(v, digits = 4) {
  if (v === null || v === undefined) return "—";
  if (typeof v !== "number") return String(v);
  if (Number.isNaN(v)) return "—";
  if (!Number.isFinite(v)) return v > 0 ? "∞" : "−∞";
  const a = Math.abs(v);
  if (a !== 0 && (a >= 1e6 || a < 1e-4)) return scientific(v, digits);
  const rounded = Number(v.toPrecision(digits));
  if (a >= 10 ** digits && rounded !== v) return scientific(v, digits);
  return String(rounded);
}

// --- typeset mathematics ---------------------------------------------------------------------------
const typeset = new Map();
function tex(source) {
  let html = typeset.get(source);
  if (html === undefined) {
    html = window.katex
      ? window.katex.renderToString(source, { throwOnError: false, strict: "ignore", output: "htmlAndMathml" })
      : escapeHtml(source);
    typeset.set(source, html);
  }
  return html;
}

function escapeHtml(text) {
  return text.replace(/[&<>"]/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" })[c]);
}

// Put `text` into `node`: plain text, with every $…$ part typeset by KaTeX.
// Text between backticks is code (an identifier, a command): set in <code>.
export function setText(node, text) {
  if (!text.includes("$") && !text.includes("`")) {
    node.textContent = text;
    return node;
  }
  const code = (part) => escapeHtml(part).replace(/`([^`]*)`/g, "<code>$1</code>");
  node.innerHTML = text.split("$").map((part, i) => (i % 2 ? tex(part) : code(part))).join("");
  return node;
}

// The text without its TeX markers, for attributes (aria-label) where markup cannot go.
export function plain(text) {
  return text.includes("$") || text.includes("`") ? text.replace(/\$([^$]*)\$/g, (_, m) => texToPlain(m)).replace(/`/g, "") : text;
}

const TEX_WORDS = {
  "\\varepsilon": "ε", "\\epsilon": "ε", "\\delta": "δ", "\\Delta": "Δ", "\\sigma": "σ", "\\eta": "η", "\\le": "≤", "\\ge": "≥",
  "\\in": "∈", "\\cdot": "·", "\\times": "×", "\\infty": "∞", "\\sum": "Σ", "\\ln": "ln", "\\log": "log", "\\Pr": "Pr",
  "\\mathrm": "", "\\text": "", "\\operatorname": "", "\\lvert": "|", "\\rvert": "|", "\\left": "", "\\right": "", "\\quad": " ", "\\,": " ",
  "\\approx": "≈", "\\tanh": "tanh", "\\to": "→", "\\sim": "~", "\\mid": "|", "\\pm": "±", "\\ldots": "…", "\\dots": "…", "\\sqrt": "√", "\\lVert": "‖", "\\rVert": "‖",
};
function texToPlain(source) {
  let s = source.replace(/([_^])\{([^{}]*)\}/g, "$1$2").replace(/\\d?frac\{([^{}]*)\}\{([^{}]*)\}/g, "($1)/($2)");
  for (const [k, v] of Object.entries(TEX_WORDS)) s = s.split(k).join(v);
  return s.replace(/[{}]/g, "").replace(/\s+/g, " ").trim();
}
