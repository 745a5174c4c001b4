// The setting and the language live in the URL (?lang=zh&eps=0.5&sens=1&f=42&d=1&k=1&gd=0.01&seed=1&tamper=1&step=3),
// so a setting can be shared and survives a language switch. Read once at start; written (replaceState)
// whenever the setting changes.
import { state } from "./state.js";

const KEYS = { eps: "epsilon", sens: "sensitivity", f: "value", d: "dRatio", k: "releases", gd: "gaussDelta", seed: "seed" };
const DEFAULTS = { ...state };

export function readUrl() {
  const query = new URLSearchParams(location.search);
  for (const [short, key] of Object.entries(KEYS)) {
    if (!query.has(short)) continue;
    const raw = query.get(short);
    const value = raw.trim() === "" ? NaN : Number(raw);
    state[key] = key === "releases" || key === "seed" ? Math.round(value) : value;
  }
  if (!(state.dRatio >= -1 && state.dRatio <= 1)) state.dRatio = DEFAULTS.dRatio;
  if (!(state.releases >= 1)) state.releases = 1;
  if (!(state.seed >= 0)) state.seed = DEFAULTS.seed;
  if (query.has("tamper")) state.tamper = query.get("tamper") === "1" || query.get("tamper") === "true";
  const step = Number(query.get("step"));
  return { lang: query.get("lang") || "en", step: Number.isInteger(step) && step >= 1 ? step : 1 };
}

let step = 1;
export function setStep(n) {
  step = n;
  writeUrl();
}

// The current page state as a query string (only what differs from the defaults).
export function queryString(lang) {
  const query = new URLSearchParams();
  if (lang) query.set("lang", lang);
  // a value the page refused (an empty box: NaN) is never written: the URL keeps only what can be read back
  for (const [short, key] of Object.entries(KEYS)) if (state[key] !== DEFAULTS[key] && Number.isFinite(state[key])) query.set(short, String(state[key]));
  if (state.tamper) query.set("tamper", "1");
  if (step !== 1) query.set("step", String(step));
  return query.toString();
}

let timer = null;
export function writeUrl() {
  clearTimeout(timer);
  timer = setTimeout(() => {
    const lang = new URLSearchParams(location.search).get("lang");
    const text = queryString(lang);
    history.replaceState(null, "", `${location.pathname}${text ? `?${text}` : ""}${location.hash}`);
  }, 150);
}
