// Beyond the source documents (after ViP, PETS 2022): choose a target and get ε; 100 possible
// releases as dots; the privacy-loss random variable of the exact releases; kε against zCDP.
import { debounce } from "./api.js";
import { Panel } from "./answers.js";
import { errorText, fmt, setText, t } from "./i18n.js";
import { emptyPlot, linePlot } from "./plot.js";
import { onChange, state } from "./state.js";

const $ = (id) => document.getElementById(id);
let inverse = null;

// "Choose a target, get ε": only the error target depends on the live setting (through Δ).
const errorTarget = () => $("inv-target").value === "error";
const inversePanel = new Panel({
  key: () => `${$("inv-target").value}|${$("inv-value").value}|${errorTarget() ? state.sensitivity : ""}`,
  follows: errorTarget,
  refused: () => { inverse = null; $("inv-result").textContent = t("common.not_computed"); $("inv-use").disabled = true; },
});
// kε against zCDP (asked for the setting's ε and k; zCDP stated at the server's one fixed δ); the
// dots and the loss histogram are drawn from the live panel's answer and cleared with it.
const compositionPanel = new Panel({
  key: () => `${state.epsilon}|${state.releases}`,
  views: () => [$("plot-kzcdp"), $("kzcdp-text")],
  refused: () => {
    for (const id of ["plot-dots", "plot-loss", "plot-kzcdp"]) emptyPlot($(id), t("common.not_computed"));
    for (const id of ["dots-text", "loss-text", "kzcdp-text"]) $(id).textContent = t("common.not_computed");
  },
});

async function solve() {
  const target = $("inv-target").value, value = Number($("inv-value").value);
  const turn = inversePanel.begin();
  if (target === "error" && !state.valid) return;
  if (target === "error" && state.sensitivity === 0) { inverse = null; setText($("inv-result"), t("live.no_noise")); $("inv-use").disabled = true; return; }
  try {
    const answer = await turn.get("beyond/inverse", { target, value, sensitivity: state.sensitivity > 0 ? state.sensitivity : 1 });
    if (!answer) return; // asked for a target, a value or a Δ that has changed, or a refused setting
    if (!answer.within) {
      inverse = null;
      setText($("inv-result"), t("beyond.inverse_outside", { eps: answer.epsilon, low: answer.range[0], high: answer.range[1] }));
      $("inv-use").disabled = true;
      return;
    }
    inverse = answer;
    setText($("inv-result"), t(`beyond.inverse_${target}`, { value: inverse.value, eps: inverse.epsilon, achieved: inverse.achieved, delta: inverse.sensitivity }));
    $("inv-use").disabled = false;
  } catch (error) {
    inverse = null;
    $("inv-result").textContent = errorText(error);
    $("inv-use").disabled = true;
  }
}

// 100 possible releases (the first 100 of the server's 2000 exact releases) as stacked dots.
export function drawBeyond(data) {
  const b = data.real.scale, f = data.params.value, w = data.claimed.half_width;
  const values = data.many_releases.slice(0, 100);
  if (!(b > 0) || values.length < 100) {
    for (const id of ["plot-dots", "plot-loss"]) emptyPlot($(id), t("live.no_noise"));
    $("dots-text").textContent = t("live.no_noise");
    $("loss-text").textContent = t("live.no_noise");
    return;
  }
  const lo = f - 4 * Math.max(b, w / 3), hi = f + 4 * Math.max(b, w / 3), bins = 24, width = (hi - lo) / bins;
  const height = new Array(bins).fill(0);
  const inside = [], outside = [];
  for (const v of values) {
    const i = Math.min(bins - 1, Math.max(0, Math.floor((v - lo) / width)));
    height[i] += 1;
    (Math.abs(v - f) <= w ? inside : outside).push({ x: lo + (i + 0.5) * width, y: height[i] });
  }
  linePlot($("plot-dots"), {
    title: t("beyond.dots_title"), xLabel: t("live.axis_z"), yLabel: t("beyond.dots_axis"), xMin: lo, xMax: hi, yMin: 0, yMax: Math.max(...height) + 1,
    alt: t("beyond.dots_text", { inside: inside.length, outside: outside.length, w }),
    series: [{ x: [f, f], y: [0, Math.max(...height) + 1], cls: "marker", label: `f(D) = ${fmt(f)}` }],
    points: [...inside.map((p) => ({ ...p, cls: "dot s0", r: 4 })), ...outside.map((p) => ({ ...p, cls: "dot s1", r: 4 }))],
    pointsLabel: t("beyond.dots_outside"), pointsClass: "dot s1",
  });
  $("plot-dots").dataset.inside = String(inside.length);
  setText($("dots-text"), t("beyond.dots_text", { inside: inside.length, outside: outside.length, w }));
  // The privacy-loss random variable L(z) = log p(z | D) − log p(z | D′) at each exact release z ~ M(D).
  const f2 = f - data.params.d;
  const losses = data.many_releases.map((z) => (Math.abs(z - f2) - Math.abs(z - f)) / b);
  const top = Math.max(Math.abs(data.params.d) / b, 1e-9);
  const edges = Array.from({ length: 22 }, (_, i) => -top * 1.05 + (i * 2.1 * top) / 21);
  const counts = new Array(21).fill(0);
  for (const v of losses) counts[Math.min(20, Math.max(0, Math.floor(((v + top * 1.05) / (2.1 * top)) * 21)))] += 1;
  const share = counts.map((c) => c / losses.length);
  const mean = losses.reduce((s, v) => s + v, 0) / losses.length;
  const max = Math.max(...losses);
  const kl = data.kl_divergence; // the exact expectation, from the server (privacy.accounting)
  linePlot($("plot-loss"), {
    title: t("beyond.loss_title"), xLabel: t("beyond.loss_axis"), yLabel: t("beyond.share"), xMin: edges[0], xMax: edges[21], yMin: 0, yMax: Math.max(...share) * 1.15,
    alt: t("beyond.loss_text", { n: losses.length, max, eps: state.epsilon, mean, kl }),
    bins: { edges, counts: share, cls: "hist", label: t("beyond.loss_label", { n: losses.length }) },
    series: [{ x: [state.epsilon, state.epsilon], y: [0, Math.max(...share) * 1.15], cls: "bound", label: "ε" }],
  });
  $("plot-loss").dataset.max = String(max);
  $("plot-loss").dataset.kl = String(kl);
  setText($("loss-text"), t("beyond.loss_text", { n: losses.length, max, eps: state.epsilon, mean, kl }));
}

async function composition() {
  if (!state.valid) return;
  const k = Math.max(1, state.releases);
  const turn = compositionPanel.begin();
  let data;
  try {
    data = await turn.get("beyond/composition", { epsilon: state.epsilon, releases: Math.max(50, Math.min(100, k)) });
  } catch (error) {
    emptyPlot($("plot-kzcdp"), errorText(error));
    $("kzcdp-text").textContent = errorText(error);
    return;
  }
  if (!data) return; // for an ε or k that has changed, or a refused setting
  const i = Math.min(k, data.k.length) - 1;
  const which = data.crossover === null
    ? t("beyond.kzcdp_basic_smaller", { kmax: data.k.length })
    : t("beyond.kzcdp_zcdp_smaller", { crossover: data.crossover, delta: data.delta });
  const text = t("beyond.kzcdp_text", { k: data.k[i], eps: data.epsilon, basic: data.basic[i], krho: data.k[i] * data.rho, zcdp: data.zcdp[i], delta: data.delta, which });
  // at k = 1 the two dots can sit close together: their labels are the legend's, never on the dots
  linePlot($("plot-kzcdp"), {
    title: t("beyond.kzcdp_title"), xLabel: t("step8.axis_k"), yLabel: t("step8.axis_total"), yMin: 0, legend: true,
    alt: text,
    series: [{ x: data.k, y: data.basic, cls: "s1", label: t("beyond.basic") }, { x: data.k, y: data.zcdp, cls: "s0", label: t("beyond.zcdp_at", { delta: data.delta }) }],
    points: [{ x: data.k[i], y: data.basic[i], cls: "dot s1" }, { x: data.k[i], y: data.zcdp[i], cls: "dot s0" }],
  });
  $("plot-kzcdp").dataset.zcdp = String(data.zcdp[i]);
  $("plot-kzcdp").dataset.basic = String(data.basic[i]);
  setText($("kzcdp-text"), text);
  compositionPanel.shown();
}

export function initBeyond() {
  $("inv-target").addEventListener("change", () => {
    $("inv-value").value = { error: "5", posterior: "0.05", advantage: "0.2" }[$("inv-target").value];
    solve();
  });
  $("inv-value").addEventListener("input", debounce(solve, 120));
  $("inv-use").addEventListener("click", () => {
    if (!inverse) return;
    const box = $("epsilon-n");
    box.value = String(inverse.epsilon);
    box.dispatchEvent(new Event("input"));
    box.dispatchEvent(new Event("change"));
  });
  onChange(debounce(composition, 80));
  // The error target depends on Δ: re-solved when Δ moves (never a "with Δ = 1" left beside Δ = 3).
  let solvedFor = state.sensitivity;
  onChange(debounce(() => {
    if ($("inv-target").value === "error" && state.valid && (state.sensitivity !== solvedFor || !inverse)) { solvedFor = state.sensitivity; solve(); }
  }, 120));
  return Promise.all([solve(), composition()]);
}
