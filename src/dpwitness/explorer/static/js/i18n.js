// The strings table comes from /api/strings (English fills any key a language lacks).
let table = {};
export const LANGUAGE_NAMES = { en: "English", zh: "中文" };

export async function loadStrings(lang) {
  const response = await fetch(`/api/strings?lang=${encodeURIComponent(lang)}`);
  const body = await response.json();
  if (!response.ok) throw new Error(body.detail || response.statusText);
  table = body.strings;
  document.documentElement.lang = body.lang === "zh" ? "zh-CN" : body.lang;
  for (const node of document.querySelectorAll("[data-i18n]")) node.textContent = t(node.dataset.i18n);
  for (const node of document.querySelectorAll("[data-i18n-label]")) node.setAttribute("aria-label", t(node.dataset.i18nLabel));
  document.title = t("page.title");
  return body;
}

// Translate `key`, filling {placeholders} from `vars` (numbers are formatted with fmt).
export function t(key, vars = {}) {
  const template = table[key] ?? key;
  return template.replace(/\{(\w+)\}/g, (_, name) => {
    const v = vars[name];
    if (v === undefined || v === null) return `{${name}}`;
    return typeof v === "number" ? fmt(v) : String(v);
  });
}

// Display formatting only (no computation): 4 significant digits, exponent when needed.
export function fmt(v, digits = 4) {
  if (v === null || v === undefined) return "—";
  if (typeof v !== "number") return String(v);
  if (!Number.isFinite(v)) return String(v);
  const a = Math.abs(v);
  if (a !== 0 && (a >= 1e6 || a < 1e-4)) return v.toExponential(digits - 1);
  return String(Number(v.toPrecision(digits)));
}
