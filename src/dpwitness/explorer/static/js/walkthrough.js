// The walkthrough: from the intuition to the worked example and beyond, each step with what,
// why and a picture. Numbers of the project's mechanism come from the server; smooth curves
// that follow a formula (densities, the Gaussian comparison, the edge-case sketches) are drawn
// in the page.
import { debounce } from "./api.js";
import { Panel, settingKey } from "./answers.js";
import { grid, histogram, laplaceDensity } from "./gauss.js";
import { errorText, fmt, setText, t } from "./i18n.js";
import { arrowFan, bars, flow, linePlot, numberLine, redrawPlaced } from "./plot.js";
import { onChange, state } from "./state.js";
import { laterSteps } from "./later.js";
import { setStep } from "./url.js";

const $ = (id) => document.getElementById(id);
const local = { query: "sum", relation: "add-remove", row: 1, replacement: 100, z: null, s0: 0, sw: 2, trap: false, total: 2, people: 1000, group: 4, clamp: 100, groups: 4, cap: 10, answers: {} };
let current = 0;
// Where the step being drawn puts its picture and controls (swapped in when complete).
let body = null;
let controls = null;

function h(tag, attrs = {}, text = null) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, v);
  if (text !== null) setText(node, text);
  return node;
}

// A slider of this step that moves one of the live panel's controls (the same state, the same checks).
function liveSlider(label, targetId, { min, max, step, value, text }) {
  const wrap = h("label");
  wrap.append(h("span", {}, label));
  const input = h("input", { type: "range", id: `walk-${targetId}`, min: String(min), max: String(max), step: String(step), value: String(value) });
  input.setAttribute("aria-valuetext", text(value));
  const shown = h("output", { for: `walk-${targetId}` }, text(value));
  input.addEventListener("input", () => {
    const target = document.getElementById(targetId);
    target.value = input.value;
    target.dispatchEvent(new Event("input"));
    shown.textContent = text(Number(input.value));
    input.setAttribute("aria-valuetext", text(Number(input.value)));
  });
  wrap.append(input, shown);
  controls.append(wrap);
}

// A slider local to this step.
function localSlider(label, key, { min, max, step, text }) {
  const wrap = h("label");
  wrap.append(h("span", {}, label));
  const input = h("input", { type: "range", id: `walk-${key}`, min: String(min), max: String(max), step: String(step), value: String(local[key]) });
  input.setAttribute("aria-valuetext", text(local[key]));
  const shown = h("output", { for: `walk-${key}` }, text(local[key]));
  input.addEventListener("input", debounce(() => { local[key] = Number(input.value); render(); }, 16));
  input.addEventListener("input", () => { shown.textContent = text(Number(input.value)); input.setAttribute("aria-valuetext", text(Number(input.value))); });
  wrap.append(input, shown);
  controls.append(wrap);
}

// The exact dpwitness call behind a panel's numbers, copyable.
function codeBlock(body, source) {
  const wrap = h("div", { class: "code" });
  const pre = h("pre", { tabindex: "0" });
  const code = h("code", {}, null);
  code.textContent = source;
  pre.append(code);
  const copy = h("button", { type: "button", class: "copy" }, t("common.copy"));
  copy.addEventListener("click", async () => {
    try { await navigator.clipboard.writeText(source); copy.textContent = t("common.copied"); } catch { copy.textContent = t("common.copy_failed"); }
  });
  wrap.append(h("p", { class: "muted small" }, t("common.call")), pre, copy);
  body.append(wrap);
}

function svg(cls = "plot") {
  const node = document.createElementNS("http://www.w3.org/2000/svg", "svg");
  node.setAttribute("class", cls);
  node.setAttribute("role", "img");
  return node;
}

function figure(body, caption, cls) {
  const fig = h("figure");
  const plot = svg(cls);
  fig.append(plot, h("figcaption", {}, caption));
  body.append(fig);
  return plot;
}

function table(rows, head, cls = "sheet") {
  const wrap = h("div", { class: "table-wrap", tabindex: "0" }); // scrollable at 375 px: reachable by keyboard
  const node = h("table", { class: cls });
  if (head) {
    const tr = h("tr");
    for (const cell of head) tr.append(h("th", { scope: "col" }, cell));
    node.append(tr);
  }
  for (const row of rows) {
    const tr = h("tr");
    row.forEach((cell, i) => tr.append(h(i === 0 ? "th" : "td", i === 0 ? { scope: "row" } : {}, cell)));
    node.append(tr);
  }
  wrap.append(node);
  return wrap;
}

function select(label, key, options, onPick) {
  const wrap = h("label");
  wrap.append(h("span", {}, label));
  const sel = h("select", { id: `walk-${key}` });
  for (const [value, text] of options) {
    const opt = h("option", { value }, text);
    if (String(local[key]) === String(value)) opt.selected = true;
    sel.append(opt);
  }
  sel.addEventListener("change", () => { onPick(sel.value); render(); });
  wrap.append(sel);
  controls.append(wrap);
}

function neighbourControls(withPerson) {
  select(t("step1.query"), "query", [["count", t("step1.query.count")], ["sum", t("step1.query.sum")]], (v) => (local.query = v));
  select(t("step1.relation"), "relation", [["add-remove", t("step1.relation.add-remove")], ["replace-one", t("step1.relation.replace-one")]], (v) => (local.relation = v));
  if (!withPerson) return;
  select(t("step1.person"), "row", PEOPLE.map((name, i) => [i, person(name)]), (v) => (local.row = Number(v)));
  if (local.relation === "replace-one") {
    const wrap = h("label");
    wrap.append(h("span", {}, t("step1.replacement")));
    const input = h("input", { type: "number", min: "0", max: "100", step: "1", value: String(local.replacement), id: "walk-replacement" });
    input.addEventListener("change", () => { local.replacement = Number(input.value); render(); });
    wrap.append(input);
    controls.append(wrap);
  }
}

function neighbourParams() {
  return { query: local.query, relation: local.relation, row: local.row, replacement: local.replacement };
}

// The fictional spreadsheet's people (compute.PEOPLE), named in the page's language.
const PEOPLE = ["Ana", "Ben", "Chen", "Dara", "Eli", "Fay"];
const person = (name) => (PEOPLE.includes(name) ? t(`people.${PEOPLE.indexOf(name)}`) : name);

const unit = () => t(local.query === "count" ? "unit.count" : "unit.sum");

async function stepNeighbour(body, turn) {
  neighbourControls(true);
  const data = await turn.get("walkthrough/neighbour", neighbourParams());
  if (!data) return; // superseded, or the setting moved or was refused: render() draws nothing
  const table = h("table", { class: "sheet" });
  table.append(h("caption", {}, t("step1.table_caption")));
  const head = h("tr");
  head.append(h("th", { scope: "col" }, t("step1.col_name")), h("th", { scope: "col" }, t("step1.col_age")));
  table.append(head);
  data.people.forEach((p, i) => {
    const row = h("tr", i === data.row ? { class: "changed" } : {});
    const changedTo = i === data.row ? (data.relation === "add-remove" ? ` → ${t("step1.removed")}` : ` → ${fmt(local.replacement)}`) : "";
    row.append(h("td", {}, person(p.name)), h("td", {}, `${fmt(p.age)}${changedTo}`));
    table.append(row);
  });
  body.append(table, h("p", { id: "step-result" }, t("step1.result", { f1: data.f_d1, f2: data.f_d2, gap: data.gap })));
  const plot = figure(body, t("step1.plot"));
  numberLine(plot, {
    title: t("step1.plot"), xLabel: t("step1.axis", { unit: unit() }), alt: t("step1.result", { f1: data.f_d1, f2: data.f_d2, gap: data.gap }),
    points: [{ x: data.f_d1, label: `f(D) = ${fmt(data.f_d1)}` }, { x: data.f_d2, label: `f(D′) = ${fmt(data.f_d2)}` }],
    bracket: [data.f_d2, data.f_d1, t("plot.gap", { gap: data.gap })],
  });
}

async function stepSensitivity(body, turn) {
  neighbourControls(false);
  const data = await turn.get("walkthrough/neighbour", neighbourParams());
  if (!data) return; // superseded, or the setting moved or was refused: render() draws nothing
  const longest = Math.max(...data.fan.map((a) => Math.abs(a.delta)));
  const caption = t("step2.plot", { longest, delta: data.sensitivity });
  body.append(h("p", { id: "step-result" }, t(longest === data.sensitivity ? "step2.result_equal" : "step2.result_less", { longest, delta: data.sensitivity })));
  const arrows = data.fan.map((a) => ({
    delta: a.delta,
    longest: Math.abs(a.delta) === longest && longest > 0,
    label: a.change === "remove" ? t("step2.arrow_remove", { person: person(a.person) })
      : a.change === "add" ? t("step2.arrow_add", { age: a.age }) : t("step2.arrow_replace", { person: person(a.person), age: a.age }),
  }));
  const plot = figure(body, caption, "plot tall");
  plot.parentElement.querySelector("figcaption").id = "step2-caption";
  plot.style.height = `${Math.max(280, 22 * (arrows.length + 2) + 70)}px`;
  arrowFan(plot, {
    title: caption, alt: caption, xLabel: t("step2.axis", { unit: unit() }), arrows, delta: data.sensitivity,
    legendArrow: t("step2.legend_arrow"), legendLongest: t("step2.legend_longest", { longest }), legendDelta: t("step2.legend_delta", { delta: data.sensitivity }),
  });
}

// The live panel's setting, for the steps that follow it (Δ > 0: the steps that draw noise say
// what is true at Δ = 0 instead, never a silent Δ = 1).
function live() {
  const eps = state.epsilon, delta = state.sensitivity;
  return { eps, delta, b: delta / eps, f1: state.value, f2: state.value - state.d };
}

// Δ = 0: no noise is needed (b = 0); said in place of a step's pictures. True if so.
function noNoise(body) {
  if (state.sensitivity > 0) return false;
  body.append(h("p", { id: "step-result", class: "no-noise" }, t("walk.no_noise")));
  codeBlock(body, `from dpwitness import Laplace\nmechanism = Laplace(sensitivity=0, epsilon=${fmt(state.epsilon)})\nmechanism.scale, mechanism.privacy_loss(0)  # 0, 0: no noise, nothing spent`);
  return true;
}

function twoDensities(body, caption, { eps, b, f1, f2 }, extra = {}) {
  const z = grid(Math.min(f1, f2) - 8 * b, Math.max(f1, f2) + 8 * b, 241);
  const p1 = z.map((v) => laplaceDensity(v, f1, b)), p2 = z.map((v) => laplaceDensity(v, f2, b));
  linePlot(figure(body, caption), {
    title: caption, xLabel: t("live.axis_z"), yLabel: t("live.axis_density"), yMin: 0, yMax: 1.15 / (2 * b),
    alt: t("alt.two_densities", { f1: fmt(f1), f2: fmt(f2), b: fmt(b), eps: fmt(eps) }),
    series: [{ x: z, y: p1, cls: "s0", label: "p(z | D)" }, { x: z, y: p2, cls: "s1", label: "p(z | D′)" }],
    ...extra(z, p1, p2),
  });
  return z;
}

async function stepDefinition(body) {
  if (noNoise(body)) return;
  const L = live();
  const { eps, b, f1, f2 } = L;
  body.append(h("p", { class: "formula", id: "set-form" }, t("step3.set_form")), h("p", { class: "formula" }, t("step3.density_form")));
  body.append(h("p", { id: "side-knowledge" }, t("step3.side_knowledge")), h("p", { id: "discrete" }, t("step3.discrete")));
  // The set S = [s, s + w] (the learner drags both, in units of b from f(D)): its two probabilities from the Laplace CDF.
  localSlider(t("step3.s_start"), "s0", { min: -6, max: 6, step: 0.25, text: (v) => `s = f(D) ${v < 0 ? "−" : "+"} ${fmt(Math.abs(v))}·b` });
  localSlider(t("step3.s_width"), "sw", { min: 0.25, max: 8, step: 0.25, text: (v) => `w = ${fmt(v)}·b` });
  const s0 = f1 + local.s0 * b, s1 = s0 + local.sw * b;
  const cdf = (x, c) => (x < c ? 0.5 * Math.exp((x - c) / b) : 1 - 0.5 * Math.exp(-(x - c) / b));
  const pr1 = cdf(s1, f1) - cdf(s0, f1), pr2 = cdf(s1, f2) - cdf(s0, f2);
  body.append(h("p", { id: "step-result" }, t("step3.result", { eps, s0, s1, pr1, pr2, ratio: pr1 / pr2, cap: Math.exp(eps) })));
  body.querySelector("#step-result").dataset.ratio = String(pr1 / pr2);
  twoDensities(body, t("step3.plot_set"), L, (z, p1, p2) => ({
    areas: [
      { x: z, low: z.map(() => 0), high: z.map((v, i) => (v >= s0 && v <= s1 ? p1[i] : 0)), cls: "set-area", label: `Pr[A(D) ∈ S] = ${fmt(pr1)}` },
      { x: z, low: z.map(() => 0), high: z.map((v, i) => (v >= s0 && v <= s1 ? p2[i] : 0)), cls: "set-area2", label: `Pr[A(D′) ∈ S] = ${fmt(pr2)}` },
    ],
  }));
  const z = grid(Math.min(f1, f2) - 8 * b, Math.max(f1, f2) + 8 * b, 241);
  const ratio = z.map((v) => Math.exp((Math.abs(v - f2) - Math.abs(v - f1)) / b));
  const cap = Math.exp(eps);
  linePlot(figure(body, t("step3.plot_ratio")), {
    title: t("step3.plot_ratio"), xLabel: t("live.axis_z"), yLabel: t("live.axis_ratio"), ylog: true, yMin: Math.min(0.1, 1 / cap / 2), yMax: Math.max(10, cap * 2),
    alt: t("alt.ratio_cap", { cap: fmt(cap) }),
    series: [{ x: z, y: ratio, cls: "s4", label: "p(z | D) / p(z | D′)" }],
    hlines: [{ y: cap, label: `e^ε = ${fmt(cap)}` }, { y: 1 / cap, label: `e^−ε = ${fmt(1 / cap)}` }],
  });
  codeBlock(body, `from dpwitness import Laplace\nmechanism = Laplace(sensitivity=${fmt(L.delta)}, epsilon=${fmt(eps)})\nmechanism.privacy_loss(${fmt(Math.abs(f1 - f2))})  # ≤ ε`);
}

async function stepLaplace(body, turn) {
  if (noNoise(body)) return;
  liveSlider(t("step4.slide_d"), "shift", { min: -1, max: 1, step: 0.05, value: state.dRatio, text: (r) => t("live.d_value", { d: fmt(r * state.sensitivity), r: fmt(r) }) });
  const L = live();
  // every picture and the text for the same d (the slider's): f(D) = d, f(D′) = 0 in the server's tails
  const data = await turn.get("walkthrough/tails", { epsilon: state.epsilon, sensitivity: state.sensitivity, d: state.d });
  if (!data) return; // superseded, or the setting moved or was refused: render() draws nothing
  const last = data.z.length - 1;
  const result = t("step4.result", { b: data.scale, sigma: data.sigma, d: data.d, lap: data.tail_log_ratio, gauss: data.gauss_log_ratio[last] });
  body.append(h("p", { id: "step-result", "data-d": String(data.d), "data-log-ratio": String(data.tail_log_ratio) }, result));
  twoDensities(body, t("step4.plot_densities"), L, () => ({}));
  const lows = [...data.laplace_log_density_1, ...data.laplace_log_density_2];
  linePlot(figure(body, t("step4.plot_log")), {
    title: t("step4.plot_log"), xLabel: t("live.axis_z"), yLabel: "log p(z)", yMin: Math.min(...lows), legend: true,
    alt: t("alt.tents", { b: fmt(data.scale), eps: fmt(data.epsilon) }),
    series: [
      { x: data.z, y: data.laplace_log_density_2, cls: "s0", label: t("plot.laplace_f0") },
      { x: data.z, y: data.laplace_log_density_1, cls: "s1", label: t("plot.laplace_fd") },
      { x: data.z, y: data.gauss_log_density_2, cls: "s2", label: t("plot.gauss_f0") },
      { x: data.z, y: data.gauss_log_density_1, cls: "s3", label: t("plot.gauss_fd") },
    ],
  });
  const span = Math.max(...data.gauss_log_ratio.map(Math.abs), data.epsilon) * 1.05;
  linePlot(figure(body, t("step4.plot_ratio")), {
    title: t("step4.plot_ratio"), xLabel: t("live.axis_z"), yLabel: t("live.axis_log_ratio"), yMin: -span, yMax: span, legend: true,
    alt: result,
    series: [{ x: data.z, y: data.laplace_log_ratio, cls: "s0", label: t("plot.laplace") }, { x: data.z, y: data.gauss_log_ratio, cls: "s2", label: t("plot.gauss") }],
    hlines: [{ y: data.epsilon, label: "+ε" }, { y: -data.epsilon, label: "−ε" }],
  });
}

async function stepFormula(body, turn) {
  if (noNoise(body)) return;
  const data = await turn.get("live", { ...state, tamper: false, releases: 1 });
  if (!data) return; // superseded, or the setting moved or was refused: render() draws nothing
  const b = data.claimed.scale, f = data.params.value, many = data.many_releases;
  const mean = many.reduce((s, v) => s + v, 0) / many.length;
  const variance = many.reduce((s, v) => s + (v - mean) ** 2, 0) / (many.length - 1);
  body.append(
    h("p", { class: "formula", id: "density-formula" }, t("step5.formula")),
    h("p", { id: "step-result" }, t("step5.result", { b, f, variance: data.variance, std: data.std, n: many.length, mean, sample_var: variance })),
  );
  const z = grid(f - 8 * b, f + 8 * b, 241);
  const p = z.map((v) => laplaceDensity(v, f, b));
  const hist = histogram(many, f - 8 * b, f + 8 * b, 48);
  linePlot(figure(body, t("step5.plot")), {
    title: t("step5.plot"), xLabel: t("live.axis_z"), yLabel: t("live.axis_density"), yMin: 0, yMax: 1.2 / (2 * b), xMin: f - 8 * b, xMax: f + 8 * b,
    alt: t("step5.result", { b, f, variance: data.variance, std: data.std, n: many.length, mean, sample_var: variance }),
    bins: { ...hist, label: t("plot.hist_exact", { n: many.length }) },
    series: [{ x: z, y: p, cls: "s0", label: "p(z) = e^(−|z − f|/b) / 2b" }],
    vlines: [{ x: f, cls: "marker release", label: `f(D) = ${fmt(f)}` }, { x: mean, cls: "marker illus", label: t("step5.mean_label", { mean: fmt(mean, 5) }) }],
  });
}

async function stepDerivation(body, turn) {
  if (!(state.sensitivity > 0)) { body.append(h("p", {}, t("live.no_noise"))); return; }
  const b = state.sensitivity / state.epsilon; // only to place the z slider; every shown number comes from the server
  if (local.z === null || Math.abs(local.z - state.value) > 8 * b) local.z = state.value + 1.5 * b;
  const wrap = h("label");
  wrap.append(h("span", {}, t("step6.z")));
  const input = h("input", { type: "range", id: "walk-z", min: String(state.value - 6 * b), max: String(state.value + 6 * b), step: String(b / 20), value: String(local.z) });
  const shown = h("output", { for: "walk-z" }, fmt(local.z));
  input.addEventListener("input", () => { shown.textContent = fmt(Number(input.value)); });
  input.addEventListener("input", debounce(() => { local.z = Number(input.value); render(); }, 30));
  wrap.append(input, shown);
  controls.append(wrap);
  const data = await turn.get("walkthrough/derivation", { epsilon: state.epsilon, sensitivity: state.sensitivity, value: state.value, d: state.d, z: local.z });
  if (!data) return; // superseded, or the setting moved or was refused: render() draws nothing
  const box = h("div", { class: "derivation", id: "step-result" });
  box.append(
    h("p", {}, t("step6.line1", { d2: data.distance_2, d1: data.distance_1, gap: data.distance_gap })),
    h("p", {}, t("step6.line2", { shift: data.shift, delta: data.sensitivity })),
    h("p", {}, t("step6.line3", { gap: data.distance_gap, b: data.scale, log: data.log_ratio })),
    h("p", {}, t("step6.line4", { bound: data.bound, eps: data.epsilon, verdict: t(data.holds ? "step6.holds" : "step6.fails") })),
  );
  body.append(box);
  // The two shifted tents on a log scale, the output z marked: the vertical gap at z is the log ratio.
  const b2 = data.scale;
  const zs = grid(Math.min(data.f1, data.f2, data.z) - 5 * b2, Math.max(data.f1, data.f2, data.z) + 5 * b2, 241);
  const logp = (v, c) => -Math.abs(v - c) / b2 - Math.log(2 * b2);
  const l1 = logp(data.z, data.f1), l2 = logp(data.z, data.f2);
  linePlot(figure(body, t("step6.plot")), {
    title: t("step6.plot"), xLabel: t("live.axis_z"), yLabel: "log p(z)",
    alt: t("step6.line3", { gap: data.distance_gap, b: data.scale, log: data.log_ratio }),
    series: [
      { x: zs, y: zs.map((v) => logp(v, data.f1)), cls: "s0", label: "log p(z | D)" },
      { x: zs, y: zs.map((v) => logp(v, data.f2)), cls: "s1", label: "log p(z | D′)" },
      { x: [data.z, data.z], y: [Math.min(l1, l2), Math.max(l1, l2)], cls: "arrow longest", label: t("step6.gap_label", { log: fmt(data.log_ratio) }) },
    ],
    vlines: [{ x: data.z, cls: "marker", label: `z = ${fmt(data.z)}` }],
    points: [{ x: data.z, y: l1, cls: "dot s0" }, { x: data.z, y: l2, cls: "dot s1" }],
  });
}

// A small sketch of one edge case: two Laplace densities (or a point mass) on a log ratio scale.
// Every sketch on the same axes (x and y), so that "flat and wide" looks flat and wide and a tall
// narrow peak looks tall and narrow; a curve higher than the axes is clipped at the top.
function mini(container, title, { b, f1, f2, eps, spike = false }, axes) {
  const fig = h("figure");
  const plot = svg("plot");
  fig.append(plot, h("figcaption", {}, title));
  container.append(fig);
  const z = grid(axes.xMin, axes.xMax, 241);
  const series = spike
    ? [{ x: [f1, f1], y: [0, axes.yMax], cls: "s0 spike", label: "" }]
    : [{ x: z, y: z.map((v) => laplaceDensity(v, f1, b)), cls: "s0", label: "" }, { x: z, y: z.map((v) => laplaceDensity(v, f2, b)), cls: "s1", label: "" }];
  linePlot(plot, { title, alt: title, xLabel: "z", xMin: axes.xMin, xMax: axes.xMax, yMin: 0, yMax: axes.yMax, series, clip: true, yLabel: t("live.axis_density") });
  plot.dataset.axes = `${axes.xMin}|${axes.xMax}|${axes.yMax}`;
  return eps;
}

async function stepEdges(body, turn) {
  const data = await turn.get("walkthrough/edge-cases", { epsilon: state.epsilon, sensitivity: state.sensitivity || 1 });
  if (!data) return; // superseded, or the setting moved or was refused: render() draws nothing
  setText($("step-what"), t("step7.what", { delta: data.sensitivity, eps: data.epsilon }));
  const list = h("ul", { class: "edge-list", id: "step-result" });
  const n = data.negative, f = data.far_tail;
  for (const text of [
    t("step7.d0", { loss: data.d_zero_loss }),
    t("step7.negative", { z: n.z, fwd: n.forward, bwd: n.backward, loss: n.loss }),
    t("step7.tails", { z: f.z, lap: f.laplace_log_ratio, gauss: f.gauss_log_ratio }),
    t("step7.small", { eps: data.small_epsilon.epsilon, b: data.small_epsilon.scale, w: data.small_epsilon.half_width }),
    t("step7.large", { eps: data.large_epsilon.epsilon, b: data.large_epsilon.scale, w: data.large_epsilon.half_width }),
    t("step7.zero"),
  ]) list.append(h("li", {}, text));
  const D = data.sensitivity, e = data.epsilon, b = D / e;
  const minis = h("div", { class: "minis", id: "edge-pictures" });
  const large = data.large_epsilon.epsilon, small = data.small_epsilon.epsilon;
  // Shared axes: x wide enough for the setting's own curve (±7.6·b), y tall enough for its peak,
  // so the ε = 0.01 curve is a flat line near 0 and the ε → ∞ curve a spike clipped at the top.
  const shared = { xMin: -Math.max(3 * D, 7.6 * b), xMax: D + Math.max(3 * D, 7.6 * b), yMax: 1.6 / (2 * b) };
  mini(minis, t("step7.pic_d0"), { b, f1: 0, f2: 0, eps: e }, shared);
  mini(minis, t("step7.pic_negative"), { b, f1: 0, f2: D, eps: e }, shared);
  mini(minis, t("step7.pic_small", { eps: small }), { b: D / small, f1: D, f2: 0, eps: small }, shared);
  mini(minis, t("step7.pic_large", { eps: large }), { b: D / large, f1: D, f2: 0, eps: large }, shared);
  mini(minis, t("step7.pic_zero"), { b: 1, f1: 0, f2: 0, eps: e, spike: true }, shared);
  const rows = data.relations.map((r) => [t(`step7.query.${r.key || r.query}`), fmt(r.add_remove), fmt(r.replace_one)]);
  body.append(list, minis, h("p", {}, t("step7.relations")), table(rows, [t("step7.col_query"), t("step7.col_add"), t("step7.col_replace")]));
}

function stepComposition(body) {
  liveSlider(t("step8.choose_k"), "releases", { min: 1, max: 50, step: 1, value: state.releases, text: (k) => t("live.k_value", { k }) });
  const eps = state.epsilon, k = Math.max(1, state.releases);
  const K = Math.max(k, 10);
  body.append(
    h("p", { class: "formula" }, t("step8.formula")),
    h("p", { id: "step-result" }, t("step8.result", { k, eps, total: k * eps, factor: Math.exp(k * eps) })),
    h("p", { class: "muted" }, t("step8.policy")),
  );
  const ks = Array.from({ length: K }, (_, i) => i + 1);
  linePlot(figure(body, t("step8.plot")), {
    title: t("step8.plot"), xLabel: t("step8.axis_k"), yLabel: t("step8.axis_total"), xMin: 0.5, xMax: K + 0.5, yMin: 0, yMax: K * eps * 1.1,
    alt: t("step8.result", { k, eps, total: k * eps, factor: Math.exp(k * eps) }),
    bins: { edges: [0.5, ...ks.map((i) => i + 0.5)], counts: ks.map((i) => i * eps), cls: "hist", label: t("step8.bars") },
    series: [{ x: [0.5, K + 0.5], y: [0.5 * eps, (K + 0.5) * eps], cls: "bound", label: "k·ε" }],
    points: [{ x: k, y: k * eps, r: 6 }],
  });
  // Log-ratios add: the log ratio of k releases at the same output offsets is the sum of k tents.
  const b = 1 / eps;
  const z = grid(-6 * b, 6 * b, 241);
  const one = z.map((v) => (Math.abs(v) - Math.abs(v - 1)) / b);
  linePlot(figure(body, t("step8.plot_add")), {
    title: t("step8.plot_add"), xLabel: t("live.axis_z"), yLabel: t("live.axis_log_ratio"), yMin: -k * eps * 1.2, yMax: k * eps * 1.2,
    alt: t("step8.plot_add"),
    series: [{ x: z, y: one, cls: "s4", label: t("step8.one") }, { x: z, y: one.map((v) => k * v), cls: "s0", label: t("step8.k_same", { k }) }],
    hlines: [{ y: eps, label: "ε" }, { y: k * eps, label: "kε" }],
  });
}

async function stepWorked(body, turn) {
  const data = await turn.get("walkthrough/worked-example", { epsilon: 1 });
  if (!data) return; // superseded, or the setting moved or was refused: render() draws nothing
  setText($("step-what"), t("step9.what", { n: data.n, low: data.bounds[0], high: data.bounds[1], delta: data.sensitivity, b: data.scale, std: data.std, w: data.half_width }));
  const trap = data.trap_no_division, p = data.trap_private_n;
  const box = h("div", { id: "step-result" });
  box.append(
    h("p", { class: "formula" }, t("step9.numbers", { delta: data.sensitivity, b: data.scale, std: data.std, w: data.half_width })),
    h("p", {}, t("step9.public_n", { n: data.n })),
    h("p", { id: "trap1" }, t("step9.trap1", { delta: trap.sensitivity, b: trap.scale, std: trap.std, factor: trap.factor, n: data.n, w: data.half_width, wrong: data.half_width * trap.factor })),
    h("p", {}, t("step9.trap2", { sdelta: p.sum_sensitivity, sb: p.sum_scale, cdelta: p.count_sensitivity, cb: p.count_scale, half: p.epsilon_each })),
    h("p", { class: "muted" }, t("step9.witness", { delta: data.sensitivity, eps: data.epsilon, verdict: data.witness_ok ? t("badge.ok") : t("badge.bad") })),
  );
  body.append(box);
  const b = data.scale, mu = 38.6;
  const z = grid(mu - 1, mu + 1, 241);
  linePlot(figure(body, t("step9.plot_density")), {
    title: t("step9.plot_density"), xLabel: t("step9.axis_mean"), yLabel: t("live.axis_density"), yMin: 0, yMax: 1.2 / (2 * b),
    alt: t("step9.numbers", { delta: data.sensitivity, b: data.scale, std: data.std, w: data.half_width }),
    areas: [{ x: z, low: z.map(() => 0), high: z.map((v) => (Math.abs(v - mu) <= data.half_width ? laplaceDensity(v, mu, b) : 0)), cls: "set-area", label: t("step9.band", { w: fmt(data.half_width) }) }],
    series: [{ x: z, y: z.map((v) => laplaceDensity(v, mu, b)), cls: "s0", label: t("step9.release_density") }],
  });
  bars(figure(body, t("step9.plot"), "plot short"), {
    title: t("step9.plot"), xLabel: t("step9.axis"), log: true, alt: t("step9.trap1", { delta: trap.sensitivity, b: trap.scale, std: trap.std, factor: trap.factor, n: data.n, w: data.half_width, wrong: data.half_width * trap.factor }),
    bars: [{ label: t("step9.correct"), value: data.half_width }, { label: t("step9.wrong"), value: data.half_width * trap.factor }],
  });
}

function stepDifferencing(body) {
  const eps = state.epsilon, b = 1 / eps;
  body.append(
    table([["Q4 = x₁ + … + x₄", "2", "2"], ["Q5 = x₁ + … + x₅", "3", "2"], ["Q5 − Q4 = x₅", "1", "0"]], ["", "D", "D′"]),
    h("p", { id: "step-result" }, t("step10.result", { eps, total: 2 * eps, b })),
  );
  // Noisy Q5 − Q4 is the true difference plus the difference of two Laplace(b) draws, whose
  // density is (1 + |x|/b)·e^(−|x|/b) / 4b.
  const diffDensity = (x) => (1 + Math.abs(x) / b) * Math.exp(-Math.abs(x) / b) / (4 * b);
  const z = grid(-6 * b, 1 + 6 * b, 241);
  linePlot(figure(body, t("step10.plot")), {
    title: t("step10.plot"), xLabel: t("step10.axis"), yLabel: t("live.axis_density"), yMin: 0, alt: t("step10.result", { eps, total: 2 * eps, b }),
    series: [{ x: z, y: z.map((v) => diffDensity(v - 1)), cls: "s0", label: t("step10.d1") }, { x: z, y: z.map((v) => diffDensity(v)), cls: "s1", label: t("step10.d2") }],
    vlines: [{ x: 0.5, cls: "marker", label: t("step10.threshold") }],
  });
  const link = h("a", { href: "#redteam" }, t("step10.link"));
  body.append(h("p", {}, "").appendChild(link).parentNode);
}

async function stepVector(body, turn) {
  select(t("step1.relation"), "relation", [["add-remove", t("step1.relation.add-remove")], ["replace-one", t("step1.relation.replace-one")]], (v) => (local.relation = v));
  const data = await turn.get("walkthrough/vector", { relation: local.relation, epsilon: state.epsilon, seed: state.seed });
  if (!data) return; // superseded, or the setting moved or was refused: render() draws nothing
  body.append(
    h("p", { class: "formula" }, t("step11.formula")),
    h("p", { id: "step-result" }, t("step11.result", { delta: data.sensitivity, eps: data.epsilon, b: data.scale, k: data.draws, young: data.younger_than_20 })),
  );
  const rows = data.groups.map((g, i) => [g, fmt(data.counts[i]), fmt(data.noisy[i], 4)]);
  body.append(table(rows, [t("step11.col_group"), t("step11.col_true"), t("step11.col_noisy")]));
  const n = data.groups.length;
  const xs = data.groups.map((_, i) => i + 1);
  linePlot(figure(body, t("step11.plot")), {
    title: t("step11.plot"), xLabel: t("step11.axis"), yLabel: t("unit.count"), xMin: 0.5, xMax: n + 0.5, xCategories: data.groups,
    yMin: Math.min(0, ...data.noisy) - 1, yMax: Math.max(...data.counts, ...data.noisy) + 1,
    alt: t("step11.result", { delta: data.sensitivity, eps: data.epsilon, b: data.scale, k: data.draws, young: data.younger_than_20 }),
    bins: { edges: [0.5, ...xs.map((i) => i + 0.5)], counts: data.counts, cls: "hist", label: t("step11.col_true") },
    points: xs.map((x, i) => ({ x, y: data.noisy[i], cls: "dot s1", r: 6 })), pointsLabel: t("step11.col_noisy"), pointsClass: "dot s1",
  });
  codeBlock(body, `from dpwitness import Laplace\nLaplace(sensitivity=${fmt(data.sensitivity)}, epsilon=${fmt(data.epsilon)}, dimension=${data.draws}).release(counts, seed=${state.seed})`);
  // The second trap: replace-one neighbours calibrated with the add/remove Δ; the witness turns red.
  const trap = data.trap;
  const box = h("div", { class: "card inner", id: "trap" });
  const label = h("label", { class: "check" });
  const check = h("input", { type: "checkbox", id: "walk-trap" });
  check.checked = local.trap;
  check.addEventListener("change", () => { local.trap = check.checked; render(); });
  label.append(check, h("span", {}, t("step11.trap_label")));
  box.append(h("h4", {}, t("step11.trap_heading")), label);
  const holds = !local.trap || trap.holds; // the verdict is the server's (privacy_loss of the true Δ)
  const verdict = h("p", { class: `badge ${holds ? "ok" : "bad"}`, id: "trap-witness", "data-ok": String(holds) },
    holds ? t("step11.trap_ok", { delta: trap.true_sensitivity, b: trap.correct_scale, eps: data.epsilon })
      : t("step11.trap_bad", { delta: trap.calibrated_sensitivity, truth: trap.true_sensitivity, b: trap.scale, loss: trap.worst_loss, eps: data.epsilon }));
  box.append(verdict);
  body.append(box);
  await younger(body, turn);
}

// "How many people are younger than 20?": the Chinese source's example through Session.sql,
// several possible releases, then clamped at 0 and rounded: post-processing is free.
async function younger(body, turn) {
  const data = await turn.get("walkthrough/younger-than-20", { epsilon: state.epsilon, seed: state.seed });
  if (!data) return; // superseded, or the setting moved or was refused: render() draws nothing
  const box = h("div", { id: "younger" });
  box.append(h("h4", {}, t("step11.young_heading")), h("p", {}, t("step11.young_intro", { eps: data.epsilon, b: data.scale, k: data.cases[0].noisy.length })));
  const sql = h("pre", { class: "sql", tabindex: "0" });
  const code = h("code");
  code.textContent = data.sql;
  sql.append(code);
  box.append(sql);
  for (const c of data.cases) {
    const rows = c.noisy.map((v, i) => [t("step11.young_draw", { i: i + 1 }), fmt(v, 5), fmt(c.clamped[i], 5), fmt(c.rounded[i])]);
    const caption = t(c.name === "table" ? "step11.young_case_table" : "step11.young_case_sheet", { rows: String(c.rows), truth: c.true });
    const wrap = table(rows, [t("step11.young_col_release"), t("step11.young_col_noisy"), t("step11.young_col_clamped"), t("step11.young_col_rounded")]);
    wrap.querySelector("table").prepend(h("caption", {}, caption));
    wrap.dataset.case = c.name;
    box.append(wrap);
  }
  box.append(h("p", {}, t("step11.post_free")));
  body.append(box);
  codeBlock(body, data.call);
}

function stepSummary(body) {
  const eps = state.epsilon, delta = state.sensitivity;
  const b = delta > 0 ? delta / eps : 0;
  flow(figure(body, t("step12.plot"), "plot summary"), {
    title: t("step12.plot"), alt: t("step12.alt", { delta, eps, b }),
    boxes: [
      { lines: [t("step12.box_data"), "D ~ D′"] },
      { lines: [t("step12.box_query"), `f(D), Δ = ${fmt(delta)}`] },
      { lines: [t("step12.box_noise"), `b = Δ/ε = ${fmt(b)}`], cls: "noise" },
      { lines: [t("step12.box_release"), "f(D) + Lap(b)"] },
      { lines: [t("step12.box_promise"), `≤ e^ε = ${fmt(Math.exp(eps))}`], cls: "key" },
    ],
  });
  body.append(h("p", { id: "step-result" }, t("step12.retelling")));
}

function stepSymbols(body) {
  const rows = ["epsilon", "delta", "scale", "d", "f", "neighbours", "k", "gauss_delta"].map((k) => [t(`step13.${k}.symbol`), t(`step13.${k}.meaning`), t(`step13.${k}.role`)]);
  const wrap = table(rows, [t("step13.col_symbol"), t("step13.col_meaning"), t("step13.col_role")], "sheet symbols");
  wrap.id = "step-result";
  body.append(wrap);
}

function stepRecall(body) {
  const box = h("div", { class: "recall", id: "step-result" });
  for (let i = 1; i <= 7; i++) {
    const item = h("details");
    item.append(h("summary", {}, t(`step14.q${i}`)), h("p", {}, t(`step14.a${i}`)));
    box.append(item);
  }
  body.append(box);
}

// The live panel's ε slider, mirrored in a step (its position, the same state and checks).
function epsilonSlider() {
  liveSlider(t("walk.epsilon"), "epsilon", { min: 0, max: 400, step: 1, value: Number($("epsilon").value), text: () => `ε = ${fmt(state.epsilon)}` });
}

// Predict, then reveal: the learner picks an answer; only then does the page say whether it was
// right and why (with the server's numbers). The pick survives a redraw for a new setting.
function predict(body, id, question, choices, correct, explanation) {
  const box = h("fieldset", { class: "predict", id });
  box.append(h("legend", {}, question));
  const row = h("div", { class: "choices" });
  choices.forEach((text, i) => {
    const button = h("button", { type: "button", class: "choice", id: `${id}-choice-${i}`, "aria-pressed": String(local.answers[id] === i) }, text);
    button.addEventListener("click", () => { local.answers[id] = i; reveal(); });
    row.append(button);
  });
  const feedback = h("p", { class: "feedback", id: `${id}-feedback`, role: "status" });
  box.append(row, feedback);
  function reveal() {
    const picked = local.answers[id];
    for (const [i, button] of [...row.children].entries()) button.setAttribute("aria-pressed", String(i === picked));
    if (picked === undefined) { feedback.hidden = true; return; }
    feedback.hidden = false;
    feedback.className = `feedback ${picked === correct ? "right" : "wrong"}`;
    feedback.dataset.correct = String(picked === correct);
    setText(feedback, `${t(picked === correct ? "predict.right" : "predict.wrong", { answer: choices[correct] })} ${explanation}`);
  }
  reveal();
  body.append(box);
}

function formula(body, text) {
  body.append(h("p", { class: "formula" }, text)); // the server's formula (TeX), typeset
}

async function stepLinked(body, turn) {
  epsilonSlider();
  localSlider(t("linked.total"), "total", { min: 0.5, max: 10, step: 0.5, text: (v) => t("linked.total_value", { total: v }) });
  const data = await turn.get("walkthrough/linked", { epsilon: state.epsilon, sensitivity: state.sensitivity, total: local.total });
  if (!data) return; // superseded, or the setting moved or was refused: render() draws nothing
  const { error: e, roc: r, posterior: p, budget: g } = data;
  body.append(h("p", { id: "step-result" }, t("linked.result", { eps: data.epsilon, w: e.half_width, post: p.bound, adv: r.advantage_cap, left: g.left, total: g.total })));
  const grid4 = h("div", { class: "linked", id: "linked-panels" });
  body.append(grid4);
  const panel = (id, caption, draw, formulaText, note) => {
    const cell = h("div", { class: "linked-panel", id });
    const plot = figure(cell, caption);
    draw(plot);
    formula(cell, formulaText);
    cell.append(h("p", { class: "small" }, note));
    grid4.append(cell);
  };
  const xs = e.z.length > 1 ? e.z : [-1, 0, 1];
  panel("linked-error", t("linked.error_plot"), (plot) => linePlot(plot, {
    title: t("linked.error_plot"), alt: t("linked.error_note", { b: e.scale, w: e.half_width }), xLabel: t("linked.axis_error"), yLabel: t("live.axis_density"), yMin: 0,
    series: [{ x: xs, y: e.z.length > 1 ? e.density : [0, 0, 0], cls: "s0", label: "Lap(b)" }],
    vlines: e.half_width > 0 ? [{ x: -e.half_width, cls: "marker", label: `−w` }, { x: e.half_width, cls: "marker", label: `w = ${fmt(e.half_width)}` }] : [],
  }), e.formula, t("linked.error_note", { b: e.scale, w: e.half_width }));
  panel("linked-roc", t("linked.roc_plot"), (plot) => linePlot(plot, {
    title: t("linked.roc_plot"), alt: t("linked.roc_note", { adv: r.advantage_cap, tpr: r.tpr_at_1pct }), xLabel: t("linked.axis_fpr"), yLabel: t("linked.axis_tpr"), xMin: 0, xMax: 1, yMin: 0, yMax: 1, legend: true,
    series: [{ x: r.fpr, y: r.tpr, cls: "s0", label: t("linked.roc_best") }, { x: r.bound_fpr, y: r.bound_tpr, cls: "bound", label: t("linked.roc_cap") }, { x: [0, 1], y: [0, 1], cls: "s4", label: t("linked.roc_guess") }],
  }), r.formula, t("linked.roc_note", { adv: r.advantage_cap, tpr: r.tpr_at_1pct }));
  panel("linked-posterior", t("linked.posterior_plot"), (plot) => linePlot(plot, {
    title: t("linked.posterior_plot"), alt: t("linked.posterior_note", { post: p.bound }), xLabel: t("linked.axis_prior"), yLabel: t("linked.axis_posterior"), xMin: 0, xMax: 1, yMin: 0, yMax: 1,
    series: [{ x: p.curve_prior, y: p.curve_posterior, cls: "s1", label: t("linked.posterior_cap") }, { x: [0, 1], y: [0, 1], cls: "s4", label: t("linked.no_change") }],
    points: [{ x: p.prior, y: p.bound, r: 6 }],
  }), p.formula, t("linked.posterior_note", { post: p.bound }));
  panel("linked-budget", t("linked.budget_plot"), (plot) => bars(plot, {
    title: t("linked.budget_plot"), alt: t("linked.budget_note", { left: g.left, total: g.total, k: g.releases }), xLabel: "ε", max: Math.max(g.total, g.spent) * 1.1,
    bars: [{ label: t("linked.spent"), value: g.spent }, { label: t("linked.left"), value: g.left }],
  }), g.formula, t(g.over ? "linked.budget_over" : "linked.budget_note", { left: g.left, total: g.total, k: g.releases }));
  // Doubling ε: what happens to the error and to the posterior (the server's numbers for ε and 2ε are in the panels).
  predict(body, "predict-linked", t("linked.q"), [t("linked.q_a0"), t("linked.q_a1"), t("linked.q_a2")], 1, t("linked.q_why", { eps: data.epsilon, w: e.half_width, post: p.bound, eps2: data.doubled.epsilon, w2: data.doubled.half_width, post2: data.doubled.posterior }));
}

async function stepRandomizedResponse(body, turn) {
  epsilonSlider();
  localSlider(t("rr.people"), "people", { min: 100, max: 100000, step: 100, text: (v) => t("rr.people_value", { n: v }) });
  const data = await turn.get("walkthrough/randomized-response", { epsilon: state.epsilon, people: local.people });
  if (!data) return; // superseded, or the setting moved or was refused: render() draws nothing
  body.append(h("p", { id: "step-result", "data-truth": String(data.truth) }, t("rr.result", { eps: data.epsilon, p: data.truth, yy: data.yes_if_yes, yn: data.yes_if_no, ratio: data.ratio, n: data.people, local: data.local_half_width, central: data.central_half_width })));
  formula(body, data.formula_truth);
  formula(body, data.formula_answers);
  formula(body, data.formula_local);
  formula(body, data.formula_central);
  linePlot(figure(body, t("rr.plot")), {
    title: t("rr.plot"), alt: t("rr.result", { eps: data.epsilon, p: data.truth, yy: data.yes_if_yes, yn: data.yes_if_no, ratio: data.ratio, n: data.people, local: data.local_half_width, central: data.central_half_width }),
    xLabel: t("rr.axis_n"), yLabel: t("rr.axis_error"), xlog: true, ylog: true, legend: true,
    yMin: Math.min(data.central_half_width, ...data.local_curve) / 2, yMax: Math.max(data.central_half_width, ...data.local_curve) * 2,
    series: [{ x: data.sizes, y: data.local_curve, cls: "s1", label: t("rr.local") }, { x: data.sizes, y: data.central_curve, cls: "s0", label: t("rr.central") }],
    points: [{ x: data.people, y: data.local_half_width, r: 6 }],
  });
  const central = data.central_half_width < data.local_half_width ? 1 : 0;
  predict(body, "predict-rr", t("rr.q", { n: data.people, eps: data.epsilon }), [t("rr.q_a0"), t("rr.q_a1")], central, t("rr.q_why", { local: data.local_half_width, central: data.central_half_width, factor: data.local_half_width / data.central_half_width }));
}

async function stepGroup(body, turn) {
  epsilonSlider();
  localSlider(t("group.size"), "group", { min: 1, max: 20, step: 1, text: (v) => t("group.size_value", { k: v }) });
  const data = await turn.get("walkthrough/group", { epsilon: state.epsilon, size: local.group });
  if (!data) return; // superseded, or the setting moved or was refused: render() draws nothing
  body.append(h("p", { id: "step-result", "data-loss": String(data.loss) }, t("group.result", { k: data.size, eps: data.epsilon, loss: data.loss, factor: data.factor, post: data.posterior })));
  formula(body, data.formula);
  const K = data.sizes.length;
  linePlot(figure(body, t("group.plot")), {
    title: t("group.plot"), alt: t("group.result", { k: data.size, eps: data.epsilon, loss: data.loss, factor: data.factor, post: data.posterior }),
    xLabel: t("group.axis_k"), yLabel: t("group.axis_loss"), xMin: 0.5, xMax: K + 0.5, yMin: 0, yMax: Math.max(...data.losses) * 1.1,
    bins: { edges: [0.5, ...data.sizes.map((k) => k + 0.5)], counts: data.losses, cls: "hist", label: t("group.bars") },
    points: [{ x: data.size, y: data.loss, r: 6 }],
  });
  predict(body, "predict-group", t("group.q", { k: data.size, eps: data.epsilon }), [t("group.q_a0", { eps: data.epsilon }), t("group.q_a1", { loss: data.size * data.epsilon }), t("group.q_a2", { loss: data.size * data.size * data.epsilon })], 1, t("group.q_why", { k: data.size, loss: data.loss, factor: data.factor }));
}

async function stepClamp(body, turn) {
  epsilonSlider();
  localSlider(t("clamp.bound"), "clamp", { min: 5, max: 500, step: 5, text: (v) => t("clamp.bound_value", { c: v }) });
  const data = await turn.get("walkthrough/clamp", { epsilon: state.epsilon, bound: local.clamp });
  if (!data) return; // superseded, or the setting moved or was refused: render() draws nothing
  body.append(h("p", { id: "step-result", "data-best": String(data.best_bound) }, t("clamp.result", { n: data.people, mean: data.true_mean, largest: data.largest, c: data.bound, bias: Math.abs(data.bias), std: data.noise_std, rmse: data.rmse, best: data.best_bound, best_rmse: data.best_rmse, eps: data.epsilon })));
  formula(body, data.formula);
  const top = Math.max(...data.rmse_curve.filter((v) => v > 0)) * 1.5;
  linePlot(figure(body, t("clamp.plot")), {
    title: t("clamp.plot"), alt: t("clamp.result", { n: data.people, mean: data.true_mean, largest: data.largest, c: data.bound, bias: Math.abs(data.bias), std: data.noise_std, rmse: data.rmse, best: data.best_bound, best_rmse: data.best_rmse, eps: data.epsilon }),
    xLabel: t("clamp.axis_c"), yLabel: t("clamp.axis_error"), xlog: true, ylog: true, yMin: Math.max(1e-3, data.best_rmse / 20), yMax: top, legend: true,
    series: [
      { x: data.bounds, y: data.bias_curve.map((v) => Math.max(v, 1e-6)), cls: "s1", label: t("clamp.bias") },
      { x: data.bounds, y: data.noise_curve, cls: "s2", label: t("clamp.noise") },
      { x: data.bounds, y: data.rmse_curve, cls: "s0", label: t("clamp.rmse") },
    ],
    vlines: [{ x: data.best_bound, cls: "marker", label: t("clamp.best", { best: fmt(data.best_bound) }) }, { x: data.largest, cls: "marker illus", label: t("clamp.largest") }],
    points: [{ x: data.bound, y: data.rmse, r: 6 }],
  });
  const below = data.best_bound < data.largest ? 1 : 0;
  predict(body, "predict-clamp", t("clamp.q", { largest: data.largest, eps: data.epsilon }), [t("clamp.q_a0"), t("clamp.q_a1")], below, t("clamp.q_why", { best: data.best_bound, best_rmse: data.best_rmse, largest: data.largest }));
}

const STEPS = [
  { key: "step1", draw: stepNeighbour },
  { key: "step2", draw: stepSensitivity },
  { key: "step3", draw: stepDefinition, live: true },
  { key: "step4", draw: stepLaplace, live: true },
  { key: "step5", draw: stepFormula, live: true },
  { key: "step6", draw: stepDerivation, live: true },
  { key: "step7", draw: stepEdges }, // not redrawn on every change: it builds two extra samplers (ε = 0.01 and 100) per Δ
  { key: "step8", draw: stepComposition, live: true },
  { key: "step9", draw: stepWorked },
  { key: "step10", draw: stepDifferencing, live: true },
  { key: "step11", draw: stepVector, live: true },
  { key: "step12", draw: stepSummary, live: true },
  { key: "linked", draw: stepLinked, live: true },
  { key: "rr", draw: stepRandomizedResponse, live: true },
  { key: "group", draw: stepGroup, live: true },
  { key: "clamp", draw: stepClamp, live: true },
  ...laterSteps({ h, figure, localSlider, epsilonSlider, predict, formula, table, local }),
  { key: "step13", draw: stepSymbols },
  { key: "step14", draw: stepRecall },
];

export const STEP_COUNT = STEPS.length;

// One question at a time for the step on screen; the live steps' questions follow the live setting.
const walkPanel = new Panel({
  key: () => `${current}|${STEPS[current].live ? settingKey() : ""}`,
  follows: () => STEPS[current].live,
  refused: () => render(), // a live step says at once that it is not computed for this setting
  views: () => [$("step-body"), $("step-controls")],
});

export async function render() {
  const turn = walkPanel.begin();
  const step = STEPS[current];
  setText($("step-count"), t("common.step_of", { n: current + 1, total: STEPS.length }));
  setText($("step-title"), t(`${step.key}.title`));
  setText($("step-what"), t(`${step.key}.what`));
  setText($("step-why"), t(`${step.key}.why`));
  $("step-prev").disabled = current === 0;
  $("step-next").disabled = current === STEPS.length - 1;
  for (const [i, button] of [...$("step-list").querySelectorAll("button")].entries()) {
    if (i === current) {
      button.setAttribute("aria-current", "step");
      const list = $("step-list");
      if (list.scrollWidth > list.clientWidth) list.scrollLeft = button.offsetLeft - list.offsetLeft - 8;
    } else button.removeAttribute("aria-current");
  }
  const focused = document.activeElement && document.activeElement.id;
  body = h("div", { id: "step-body" });
  controls = h("div", { id: "step-controls", class: "controls" });
  const myBody = body, myControls = controls;
  try {
    if (step.live && !state.valid) myBody.append(h("p", { class: "stale", id: "step-result" }, t("common.not_computed_step")));
    else await step.draw(myBody, turn);
  } catch (error) {
    myBody.replaceChildren(h("p", { class: "error stale", role: "alert" }, errorText(error)));
  }
  if (!turn.current) return; // a newer render, or the setting moved or was refused while drawing
  $("step-controls").replaceWith(myControls);
  $("step-body").replaceWith(myBody);
  redrawPlaced(myBody);
  $("step").dataset.step = String(current + 1);
  walkPanel.shown();
  if (focused && focused.startsWith("walk-") && document.getElementById(focused)) document.getElementById(focused).focus();
}

export function go(index, focus = false) {
  current = Math.max(0, Math.min(STEPS.length - 1, index));
  setStep(current + 1);
  const done = render();
  if (focus) done.then(() => $("step-title").focus());
  return done;
}

export function initWalkthrough() {
  const list = $("step-list");
  STEPS.forEach((step, i) => {
    const item = h("li");
    const button = h("button", { type: "button", id: `step-button-${i + 1}` }, t(`${step.key}.title`));
    button.addEventListener("keydown", (e) => { if (e.key === "Enter" || e.key === " ") { e.preventDefault(); go(i, true); } });
    button.addEventListener("click", () => go(i));
    item.append(button);
    list.append(item);
  });
  $("step-prev").addEventListener("click", () => go(current - 1));
  $("step-next").addEventListener("click", () => go(current + 1));
  const refresh = debounce(() => { if (STEPS[current].live) render(); }, 60);
  onChange(refresh);
  return render();
}
