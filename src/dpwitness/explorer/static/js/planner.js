// The budget planner: split a total ε across three queries on the Adult table, see each one's
// expected error against ε and the plan's disclosure risk, then release it through a real
// dpwitness.Session whose ledger refuses a second release once the plan's budget is spent.
import { Panel } from "./answers.js";
import { readJSON } from "./api.js";
import { announce } from "./announce.js";
import { errorText, fmt, setText, t } from "./i18n.js";
import { linePlot } from "./plot.js";

const $ = (id) => document.getElementById(id);
const QUERIES = ["count", "mean", "histogram"];
const CLASSES = { count: "s0", mean: "s1", histogram: "s4" };
const plan = { total: 1, count: 0.2, mean: 0.5, histogram: 0.3, delta: 0, mechanism: { count: "laplace", histogram: "laplace" } };
const GAUSSIAN_QUERIES = ["count", "histogram"];
let planId = newId();
let last = null;

function newId() {
  const bytes = new Uint8Array(9);
  crypto.getRandomValues(bytes);
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

function params() {
  return {
    total_epsilon: plan.total, count_epsilon: plan.count, mean_epsilon: plan.mean, histogram_epsilon: plan.histogram,
    total_delta: plan.delta, count_mechanism: plan.mechanism.count, histogram_mechanism: plan.mechanism.histogram,
  };
}

// The composition total, drawn at once from the sliders (basic composition: the ledger's sum).
function drawTotal() {
  const sum = QUERIES.reduce((s, q) => s + plan[q], 0);
  const box = $("plan-composition");
  const over = sum > plan.total * (1 + 1e-12);
  box.classList.toggle("over", over);
  const gaussian = GAUSSIAN_QUERIES.filter((q) => plan.mechanism[q] === "gaussian" && plan[q] > 0).length;
  setText(box, t(over ? "plan.composition_over" : "plan.composition", {
    parts: QUERIES.map((q) => fmt(plan[q])).join(" + "), sum: Number(sum.toPrecision(6)), total: plan.total,
    dsum: gaussian ? plan.delta : 0, dtotal: plan.delta,
  }));
  $("plan-release").disabled = over;
}

// The plan's errors and risk, only for the plan on screen (its own sliders, not the live setting).
const planPanel = new Panel({ key: () => JSON.stringify(params()), follows: () => false });

async function refresh() {
  const turn = planPanel.begin();
  drawTotal();
  let data;
  try {
    data = await turn.get("planner", params());
  } catch (error) {
    $("plan-status").textContent = errorText(error);
    return;
  }
  if (!data) return; // for a plan that has changed since
  last = data;
  setText($("plan-data"), t(data.data === "adult" ? "plan.data_adult" : "plan.data_generated", { rows: String(data.rows) }));
  for (const q of data.queries) {
    // ε = 0 leaves the query out of the plan: no error to state (never "± NaN").
    setText($(`plan-${q.name}-info`), !(q.epsilon > 0) ? t("plan.left_out") : t(q.mechanism === "gaussian" ? "plan.gaussian_info" : `plan.${q.name}_info`, {
      delta: q.sensitivity.map((v) => fmt(v)).join(", "), sd: q.expected_sd ?? NaN, eps: q.epsilon, d: q.delta,
    }));
  }
  const series = [], points = [];
  for (const q of data.queries) {
    series.push({ x: q.curve.epsilon, y: q.curve.sd, cls: `${CLASSES[q.name]}${q.name === "histogram" ? " dashed" : ""}`, label: t(`plan.${q.name}`) });
    if (q.epsilon > 0) points.push({ x: q.epsilon, y: q.expected_sd, cls: `dot ${CLASSES[q.name]}` });
  }
  const ys = data.queries.flatMap((q) => q.curve.sd).filter((v) => v > 0);
  linePlot($("plot-plan-error"), {
    title: t("plan.plot_error"), xLabel: t("plan.axis_epsilon"), yLabel: t("plan.axis_sd"), xlog: true, ylog: true,
    xMin: 0.01, xMax: 10, yMin: Math.pow(10, Math.floor(Math.log10(Math.min(...ys)))), yMax: Math.pow(10, Math.ceil(Math.log10(Math.max(...ys)))),
    alt: t("alt.plan_error", { list: data.queries.map((q) => `${t(`plan.${q.name}`)} ${fmt(q.expected_sd)}`).join("; ") }),
    series, points,
  });
  const r = data.risk;
  linePlot($("plot-plan-risk"), {
    title: t("plan.plot_risk"), xLabel: t("plan.axis_prior"), yLabel: t("plan.axis_posterior"), xMin: 0, xMax: 1, yMin: 0, yMax: 1,
    alt: t("plan.risk_text", { eps: r.epsilon, delta: r.delta, p1: r.posterior_at_1pct, p50: r.posterior_at_half, adv: r.advantage, posterior_note: "" }),
    series: [{ x: r.prior, y: r.posterior, cls: "bound", label: t("plan.posterior_label", { eps: fmt(r.epsilon) }) }, { x: [0, 1], y: [0, 1], cls: "marker", label: t("plan.no_release") }],
  });
  const note = t(r.delta > 0 ? "plan.posterior_delta" : "plan.posterior_pure", { delta: r.delta });
  setText($("plan-risk"), t("plan.risk_text", { eps: r.epsilon, delta: r.delta, p1: r.posterior_at_1pct, p50: r.posterior_at_half, adv: r.advantage, posterior_note: note }));
  linePlot($("plot-plan-adv"), {
    title: t("plan.plot_advantage"), xLabel: t("plan.axis_epsilon"), yLabel: t("plan.axis_advantage"), xlog: true, xMin: 0.01, xMax: 10, yMin: 0, yMax: 1,
    alt: t("plan.advantage_text", { eps: r.epsilon, adv: r.advantage }),
    series: [{ x: r.advantage_curve.epsilon, y: r.advantage_curve.advantage, cls: "s4", label: r.delta > 0 ? `(e^ε − 1 + 2δ)/(e^ε + 1), δ = ${fmt(r.delta)}` : "tanh(ε/2)" }],
    points: [{ x: Math.max(r.epsilon, 0.01), y: r.advantage }],
  });
}

async function release() {
  setText($("plan-status"), t("common.loading"));
  const query = new URLSearchParams({ plan_id: planId, ...Object.fromEntries(Object.entries(params()).map(([k, v]) => [k, String(v)])) });
  const response = await fetch(`/api/planner/release?${query}`, { method: "POST" });
  const body = await readJSON(response);
  if (!response.ok) {
    setText($("plan-status"), response.status === 409 ? t("plan.refused_spent") : t("error.parameter", { name: t(`param.${body.parameter}`) }));
    $("plan-status").dataset.state = response.status === 409 ? "refused" : "error";
    announce($("plan-status").textContent);
    return;
  }
  $("plan-status").dataset.state = "released";
  setText($("plan-status"), t("plan.released", { spent: body.spent, total: body.total_epsilon, dspent: body.spent_delta, dtotal: body.total_delta }));
  announce(t("plan.released_short"));
  const rows = [];
  for (const answer of body.answers) {
    if (answer.value !== null && typeof answer.value === "object") {
      for (const [key, value] of Object.entries(answer.value)) rows.push([t("plan.answer_key", { query: t(`plan.${answer.name}`), key, name: t(`plan.category.${key}`) }), answer.epsilon, value, answer.interval[key]]);
    } else rows.push([t(`plan.${answer.name}`), answer.epsilon, answer.value, answer.interval]);
    if (answer.mechanism === "gaussian") rows[rows.length - 1][0] += ` (${t("plan.mech_gaussian")})`;
  }
  $("plan-answers").querySelector("tbody").replaceChildren(...rows.map(([label, eps, value, interval]) => {
    const tr = document.createElement("tr");
    for (const text of [label, fmt(eps), fmt(value, 6), interval ? `${fmt(interval[0], 6)} … ${fmt(interval[1], 6)}` : "—"]) {
      const td = document.createElement("td");
      setText(td, text); // a category is named in the page's language (English: the data's own value, as code)
      tr.append(td);
    }
    return tr;
  }));
  setText($("plan-ledger"), t("plan.ledger", { id: body.plan_id, spent: body.spent, remaining: body.remaining, relation: t(String(body.answers[0]?.neighbours || "").startsWith("replace") ? "plan.relation_replace" : "plan.relation_add_remove") }));
  $("plan-answers-card").hidden = false;
}

export function initPlanner() {
  const box = $("plan-queries");
  for (const q of QUERIES) {
    const wrap = document.createElement("div");
    wrap.className = "control plan-query";
    wrap.innerHTML = `<label for="plan-${q}"></label><div class="pair"><input type="range" id="plan-${q}" min="0" max="2" step="0.05"><output id="plan-${q}-out" for="plan-${q}"></output></div><p class="small muted" id="plan-${q}-info"></p>`;
    setText(wrap.querySelector("label"), t(`plan.${q}_label`));
    if (GAUSSIAN_QUERIES.includes(q)) {
      const label = document.createElement("label");
      label.className = "inline";
      label.textContent = `${t("plan.mechanism_label")} `;
      const select = document.createElement("select");
      select.id = `plan-${q}-mechanism`;
      for (const m of ["laplace", "gaussian"]) {
        const option = document.createElement("option");
        option.value = m;
        setText(option, t(`plan.mech_${m}`));
        select.append(option);
      }
      label.append(select);
      wrap.append(label);
    }
    box.append(wrap);
    const range = wrap.querySelector("input");
    range.value = String(plan[q]);
    wrap.querySelector("output").textContent = fmt(plan[q]);
    range.addEventListener("input", () => {
      plan[q] = Number(range.value);
      wrap.querySelector("output").textContent = fmt(plan[q]);
      drawTotal();
      requestAnimationFrame(refresh);
    });
  }
  $("plan-total").addEventListener("input", (e) => { plan.total = Number(e.target.value); refresh(); });
  // δ and the Gaussian option (counts and declared-key histograms; needs δ > 0).
  const deltaBox = $("plan-delta");
  for (const [value, label] of [["0", t("plan.delta_none")], ["0.000001", "10⁻⁶"], ["0.00001", "10⁻⁵"], ["0.001", "10⁻³"]]) {
    const option = document.createElement("option");
    option.value = value;
    option.textContent = label;
    deltaBox.append(option);
  }
  const syncMechanisms = () => {
    for (const q of GAUSSIAN_QUERIES) {
      const select = $(`plan-${q}-mechanism`);
      select.disabled = plan.delta === 0;
      if (plan.delta === 0) { select.value = "laplace"; plan.mechanism[q] = "laplace"; }
    }
  };
  deltaBox.addEventListener("change", () => { plan.delta = Number(deltaBox.value); syncMechanisms(); refresh(); });
  for (const q of GAUSSIAN_QUERIES) {
    const select = $(`plan-${q}-mechanism`);
    select.addEventListener("change", () => { plan.mechanism[q] = select.value; refresh(); });
  }
  syncMechanisms();
  $("plan-release").addEventListener("click", release);
  $("plan-new").addEventListener("click", () => {
    planId = newId();
    setText($("plan-status"), t("plan.new_done"));
    $("plan-status").dataset.state = "new";
    $("plan-answers-card").hidden = true;
  });
  return refresh();
}

export const plannerProbe = () => ({ planId, last });
