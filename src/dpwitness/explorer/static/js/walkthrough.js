// The walkthrough: seven steps, each with what, why and a picture computed by the server.
import { debounce, getJSON } from "./api.js";
import { fmt, t } from "./i18n.js";
import { arrowFan, bars, linePlot, numberLine } from "./plot.js";
import { onChange, state } from "./state.js";

const $ = (id) => document.getElementById(id);
const local = { query: "sum", relation: "add-remove", row: 1, replacement: 100, z: null };
let current = 0;
// Where the step being drawn puts its picture and controls (swapped in when complete).
let body = null;
let controls = null;

function h(tag, attrs = {}, text = null) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, v);
  if (text !== null) node.textContent = text;
  return node;
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
  select(t("step1.person"), "row", [0, 1, 2, 3, 4, 5].map((i) => [i, ["Ana", "Ben", "Chen", "Dara", "Eli", "Fay"][i]]), (v) => (local.row = Number(v)));
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

const unit = () => t(local.query === "count" ? "unit.count" : "unit.sum");

async function stepNeighbour(body) {
  neighbourControls(true);
  const data = await getJSON("walkthrough/neighbour", neighbourParams());
  const table = h("table", { class: "sheet" });
  table.append(h("caption", {}, t("step1.table_caption")));
  const head = h("tr");
  head.append(h("th", { scope: "col" }, t("step1.col_name")), h("th", { scope: "col" }, t("step1.col_age")));
  table.append(head);
  data.people.forEach((p, i) => {
    const row = h("tr", i === data.row ? { class: "changed" } : {});
    const changedTo = i === data.row ? (data.relation === "add-remove" ? ` → ${t("step1.removed")}` : ` → ${fmt(local.replacement)}`) : "";
    row.append(h("td", {}, p.name), h("td", {}, `${fmt(p.age)}${changedTo}`));
    table.append(row);
  });
  body.append(table, h("p", { id: "step-result" }, t("step1.result", { f1: data.f_d1, f2: data.f_d2, gap: data.gap })));
  const plot = figure(body, t("step1.plot"));
  numberLine(plot, {
    title: t("step1.plot"), xLabel: t("step1.axis", { unit: unit() }),
    points: [{ x: data.f_d1, label: `f(D) = ${fmt(data.f_d1)}` }, { x: data.f_d2, label: `f(D′) = ${fmt(data.f_d2)}` }],
    bracket: [data.f_d2, data.f_d1, t("plot.gap", { gap: data.gap })],
  });
}

async function stepSensitivity(body) {
  neighbourControls(false);
  const data = await getJSON("walkthrough/neighbour", neighbourParams());
  body.append(h("p", { id: "step-result" }, t("step2.result", { longest: data.longest_arrow, delta: data.sensitivity })));
  const longest = Math.max(...data.fan.map((a) => Math.abs(a.delta)));
  const arrows = data.fan.map((a) => ({
    delta: a.delta,
    longest: Math.abs(a.delta) === longest && longest > 0,
    label: a.change === "remove" ? t("step2.arrow_remove", { person: a.person })
      : a.change === "add" ? t("step2.arrow_add", { age: a.age }) : t("step2.arrow_replace", { person: a.person, age: a.age }),
  }));
  const plot = figure(body, t("step2.plot"), "plot tall");
  plot.style.height = `${Math.max(260, 22 * (arrows.length + 2) + 50)}px`;
  arrowFan(plot, { title: t("step2.plot"), xLabel: t("step2.axis", { unit: unit() }), arrows, delta: data.sensitivity });
}

async function stepDefinition(body) {
  const data = await getJSON("live", { ...state, releases: 1 });
  const c = data.curves;
  if (c.no_noise) { body.append(h("p", {}, t("live.no_noise"))); return; }
  const eps = data.params.epsilon;
  body.append(h("p", { id: "step-result" }, t("step3.result", { eps, low: 1 / data.exp_epsilon, high: data.exp_epsilon, max: c.max_abs_log_ratio })));
  linePlot(figure(body, t("step3.plot_density", { f1: c.f1, f2: c.f2 })), {
    title: t("step3.plot_density", { f1: c.f1, f2: c.f2 }), xLabel: t("live.axis_z"), yLabel: t("live.axis_density"), yMin: 0, legend: true,
    series: [{ x: c.z, y: c.density_1, cls: "s0", label: "p(z | D)" }, { x: c.z, y: c.density_2, cls: "s1", label: "p(z | D′)" }],
  });
  const top = Math.max(data.exp_epsilon, ...c.ratio) * 1.2;
  linePlot(figure(body, t("step3.plot_ratio")), {
    title: t("step3.plot_ratio"), xLabel: t("live.axis_z"), yLabel: t("live.axis_ratio"), yMin: 0, yMax: top, legend: true,
    series: [{ x: c.z, y: c.ratio, cls: "s4", label: "p(z | D) / p(z | D′)" }],
    hlines: [{ y: data.exp_epsilon, label: `e^ε = ${fmt(data.exp_epsilon)}` }, { y: 1 / data.exp_epsilon, label: `e^−ε = ${fmt(1 / data.exp_epsilon)}` }],
  });
}

async function stepLaplace(body) {
  const data = await getJSON("walkthrough/tails", { epsilon: state.epsilon, sensitivity: state.sensitivity || 1 });
  const last = data.z.length - 1;
  body.append(h("p", { id: "step-result" }, t("step4.result", { b: data.scale, sigma: data.sigma, lap: data.laplace_log_ratio[last], gauss: data.gauss_log_ratio[last] })));
  const lows = [...data.laplace_log_density_1, ...data.laplace_log_density_2];
  linePlot(figure(body, t("step4.plot_log")), {
    title: t("step4.plot_log"), xLabel: t("live.axis_z"), yLabel: "log p(z)", yMin: Math.min(...lows), legend: true,
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
    series: [{ x: data.z, y: data.laplace_log_ratio, cls: "s0", label: t("plot.laplace") }, { x: data.z, y: data.gauss_log_ratio, cls: "s2", label: t("plot.gauss") }],
    hlines: [{ y: data.epsilon, label: "+ε" }, { y: -data.epsilon, label: "−ε" }],
  });
}

async function stepDerivation(body) {
  if (!(state.sensitivity > 0)) { body.append(h("p", {}, t("live.no_noise"))); return; }
  const b = state.sensitivity / state.epsilon; // only to place the z slider; every shown number comes from the server
  if (local.z === null || Math.abs(local.z - state.value) > 8 * b) local.z = state.value + 1.5 * b;
  const wrap = h("label");
  wrap.append(h("span", {}, t("step5.z")));
  const input = h("input", { type: "range", id: "walk-z", min: String(state.value - 6 * b), max: String(state.value + 6 * b), step: String(b / 20), value: String(local.z) });
  const shown = h("output", { for: "walk-z" }, fmt(local.z));
  input.addEventListener("input", () => { shown.textContent = fmt(Number(input.value)); });
  input.addEventListener("input", debounce(() => { local.z = Number(input.value); render(); }, 30));
  wrap.append(input, shown);
  controls.append(wrap);
  const data = await getJSON("walkthrough/derivation", { epsilon: state.epsilon, sensitivity: state.sensitivity, value: state.value, d: state.d, z: local.z });
  const box = h("div", { class: "derivation", id: "step-result" });
  box.append(
    h("p", {}, t("step5.line1", { d2: data.distance_2, d1: data.distance_1, gap: data.distance_gap })),
    h("p", {}, t("step5.line2", { shift: data.shift, delta: data.sensitivity })),
    h("p", {}, t("step5.line3", { gap: data.distance_gap, b: data.scale, log: data.log_ratio })),
    h("p", {}, t("step5.line4", { bound: data.bound, eps: data.epsilon, verdict: t(data.holds ? "step5.holds" : "step5.fails") })),
  );
  body.append(box);
  numberLine(figure(body, t("step5.plot"), "plot short"), {
    title: t("step5.plot"), xLabel: t("live.axis_z"),
    points: [{ x: data.f1, label: "f(D)" }, { x: data.f2, label: "f(D′)" }, { x: data.z, label: `z = ${fmt(data.z)}` }],
  });
}

async function stepEdges(body) {
  const data = await getJSON("walkthrough/edge-cases", { epsilon: state.epsilon, sensitivity: state.sensitivity || 1 });
  $("step-what").textContent = t("step6.what", { delta: data.sensitivity, eps: data.epsilon });
  const list = h("ul", { class: "edge-list", id: "step-result" });
  const n = data.negative, f = data.far_tail;
  for (const text of [
    t("step6.d0", { loss: data.d_zero_loss }),
    t("step6.negative", { z: n.z, fwd: n.forward, bwd: n.backward, loss: n.loss }),
    t("step6.tails", { z: f.z, lap: f.laplace_log_ratio, gauss: f.gauss_log_ratio }),
    t("step6.small", { eps: data.small_epsilon.epsilon, b: data.small_epsilon.scale, w: data.small_epsilon.half_width }),
    t("step6.large", { eps: data.large_epsilon.epsilon, b: data.large_epsilon.scale, w: data.large_epsilon.half_width }),
    t("step6.zero", { guarantee: data.zero_sensitivity.guarantee }),
  ]) list.append(h("li", {}, text));
  const table = h("table", { class: "sheet" });
  const head = h("tr");
  head.append(h("th", { scope: "col" }, t("step6.col_query")), h("th", { scope: "col" }, t("step6.col_add")), h("th", { scope: "col" }, t("step6.col_replace")));
  table.append(head);
  for (const r of data.relations) {
    const row = h("tr");
    row.append(h("td", {}, r.query), h("td", {}, fmt(r.add_remove)), h("td", {}, fmt(r.replace_one)));
    table.append(row);
  }
  body.append(list, h("p", {}, t("step6.relations")), table);
}

async function stepWorked(body) {
  const data = await getJSON("walkthrough/worked-example", { epsilon: 1 });
  $("step-what").textContent = t("step7.what", { n: data.n, low: data.bounds[0], high: data.bounds[1], delta: data.sensitivity, b: data.scale, std: data.std, w: data.half_width });
  const trap = data.trap_no_division, p = data.trap_private_n;
  const box = h("div", { id: "step-result" });
  box.append(
    h("p", {}, t("step7.trap1", { delta: trap.sensitivity, b: trap.scale, std: trap.std, factor: trap.factor })),
    h("p", {}, t("step7.trap2", { sdelta: p.sum_sensitivity, sb: p.sum_scale, cdelta: p.count_sensitivity, cb: p.count_scale, half: p.epsilon_each })),
    h("p", { class: "muted" }, t("step7.witness", { delta: data.sensitivity, eps: data.epsilon, verdict: data.witness_ok ? t("badge.ok") : t("badge.bad") })),
  );
  body.append(box);
  bars(figure(body, t("step7.plot"), "plot short"), {
    title: t("step7.plot"), xLabel: t("step7.axis"), log: true,
    bars: [{ label: t("step7.correct"), value: data.half_width }, { label: t("step7.wrong"), value: data.half_width * trap.factor }],
  });
}

const STEPS = [
  { key: "step1", draw: stepNeighbour },
  { key: "step2", draw: stepSensitivity },
  { key: "step3", draw: stepDefinition, live: true },
  { key: "step4", draw: stepLaplace, live: true },
  { key: "step5", draw: stepDerivation, live: true },
  { key: "step6", draw: stepEdges }, // not redrawn on every change: it builds two extra samplers (ε = 0.01 and 100) per Δ
  { key: "step7", draw: stepWorked },
];

let renderSeq = 0;
export async function render() {
  const mine = ++renderSeq;
  const step = STEPS[current];
  $("step-count").textContent = t("common.step_of", { n: current + 1, total: STEPS.length });
  $("step-title").textContent = t(`${step.key}.title`);
  $("step-what").textContent = t(`${step.key}.what`);
  $("step-why").textContent = t(`${step.key}.why`);
  $("step-prev").disabled = current === 0;
  $("step-next").disabled = current === STEPS.length - 1;
  for (const [i, button] of [...$("step-list").querySelectorAll("button")].entries()) button.setAttribute("aria-current", i === current ? "step" : "false");
  const focused = document.activeElement && document.activeElement.id;
  body = h("div", { id: "step-body" });
  controls = h("div", { id: "step-controls", class: "controls" });
  const myBody = body, myControls = controls;
  try {
    await step.draw(myBody);
  } catch (error) {
    myBody.replaceChildren(h("p", { class: "error", role: "alert" }, t("common.error", { message: error.message })));
  }
  if (mine !== renderSeq) return;
  $("step-controls").replaceWith(myControls);
  $("step-body").replaceWith(myBody);
  $("step").dataset.step = String(current + 1);
  if (focused && focused.startsWith("walk-") && document.getElementById(focused)) document.getElementById(focused).focus();
}

export function go(index) {
  current = Math.max(0, Math.min(STEPS.length - 1, index));
  return render();
}

export function initWalkthrough() {
  const list = $("step-list");
  STEPS.forEach((step, i) => {
    const item = h("li");
    const button = h("button", { type: "button", id: `step-button-${i + 1}` }, t(`${step.key}.title`));
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
