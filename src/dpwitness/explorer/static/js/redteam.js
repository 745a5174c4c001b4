// The red team's windows: membership inference, differencing, the floating-point leak.
import { debounce } from "./api.js";
import { Panel } from "./answers.js";
import { announce } from "./announce.js";
import { showCall } from "./code.js";
import { errorText, fmt, setText, t } from "./i18n.js";
import { bars, cells, emptyPlot, linePlot } from "./plot.js";
import { onChange, state } from "./state.js";

const $ = (id) => document.getElementById(id);
const pct = (v) => `${fmt(100 * v, 3)}%`;
let shownKey = ""; // the setting whose membership answer is on screen

function fail(id, error) {
  $(id).textContent = errorText(error);
}

function notComputed(...ids) {
  for (const id of ids) { setText($(id), t("common.not_computed")); $(id).classList.add("stale"); }
}

// Each window's answer only for the setting it was asked for (see answers.js).
const membershipKey = () => `${state.epsilon}|${state.sensitivity}|${state.tamper}`;
const membershipPanel = new Panel({
  key: membershipKey,
  refused: () => {
    shownKey = "";
    for (const id of ["plot-lr", "plot-roc"]) emptyPlot($(id), t("common.not_computed"));
    notComputed("membership-result");
  },
});
// The simulation, the differencing and the floating-point leak are run by a button: an answer
// dropped because the setting moved leaves "not computed" (press again), never the old numbers.
const simulationCleared = () => { notComputed("membership-sim"); showCall("membership-call", ""); };
const simulationPanel = new Panel({ key: () => `${membershipKey()}|${state.seed}`, refused: simulationCleared, moved: simulationCleared });
let differencingMode = "exact"; // the question asked last: exact answers (ε not used) or noisy ones
const differencingCleared = () => { notComputed("diff-result", "diff-result-d2", "diff-attack"); showCall("diff-call", ""); };
const differencingPanel = new Panel({
  key: () => `${differencingMode}|${differencingMode === "noisy" ? state.epsilon : ""}|${state.seed}`,
  follows: () => differencingMode === "noisy", // the exact answers do not depend on the live setting's ε
  refused: differencingCleared,
  moved: differencingCleared,
});
const floatingCleared = () => {
  notComputed("fp-result");
  $("fp-figure").hidden = true;
  $("fp-doubles-figure").hidden = true;
  showCall("fp-call", "");
};
const floatingPanel = new Panel({ key: () => `${state.epsilon}|${state.seed}`, refused: floatingCleared, moved: floatingCleared });

async function membership() {
  if (!state.valid) return; // cleared by the refusal (membershipPanel.refused)
  const key = membershipKey();
  if (key === shownKey) return;
  const turn = membershipPanel.begin();
  $("membership-result").classList.remove("stale");
  let data;
  try {
    const answer = await turn.get("redteam/membership", { epsilon: state.epsilon, sensitivity: state.sensitivity, tamper: state.tamper });
    if (!answer) return; // for a setting that has changed or been refused
    data = answer.analytic;
  } catch (error) {
    fail("membership-result", error);
    return;
  }
  shownKey = key;
  // A log axis: the cap e^ε and its mirror e^−ε stay visible whatever ε is.
  const high = Math.max(data.cap, data.max_likelihood_ratio) * 3, low = Math.min(1 / data.cap, ...data.likelihood_ratio) / 3;
  const lrSeries = data.no_noise
    ? [{ x: [-1, 1], y: [1, 1], cls: "s4", label: `${t("red.lr_label")} = 1` }]
    : [{ x: data.z, y: data.likelihood_ratio, cls: "s4", label: t("red.lr_label") }];
  linePlot($("plot-lr"), {
    title: t("red.membership_lr"), xLabel: t("live.axis_z"), yLabel: t("red.axis_lr_log"), yMin: low, yMax: high, ylog: true, legend: true,
    alt: t("alt.lr", { lr: fmt(data.max_likelihood_ratio), cap: fmt(data.cap) }),
    series: lrSeries,
    hlines: [{ y: data.cap, label: `e^ε = ${fmt(data.cap)}`, id: "cap" }, { y: 1 / data.cap, label: `e^−ε = ${fmt(1 / data.cap)}`, id: "floor" }, { y: 1, cls: "marker", id: "one" }],
  });
  linePlot($("plot-roc"), {
    title: t("red.membership_roc"), xLabel: t("red.axis_fpr"), yLabel: t("red.axis_tpr"), xMin: 0, xMax: 1, yMin: 0, yMax: 1, legend: true,
    alt: t("alt.roc", { tpr: pct(data.tpr_at_1pct), cap: pct(data.tpr_cap_at_1pct) }),
    series: [
      { x: data.roc.fpr, y: data.roc.tpr, cls: "s0", label: t("plot.best_test") },
      { x: data.bound.fpr, y: data.bound.tpr, cls: "bound", label: t("plot.dp_bound") },
      { x: [0, 1], y: [0, 1], cls: "marker", label: "" },
    ],
  });
  setText($("membership-result"), data.no_noise ? t("red.membership_no_noise", { cap: data.cap }) : t("red.membership_result", {
    lr: data.max_likelihood_ratio, cap: data.cap, tpr: pct(data.tpr_at_1pct), captpr: pct(data.tpr_cap_at_1pct),
  }));
}

async function simulate() {
  if (!state.valid) { simulationCleared(); return; }
  const turn = simulationPanel.begin();
  $("membership-sim").classList.remove("stale");
  setText($("membership-sim"), t("common.loading"));
  try {
    const answer = await turn.get("redteam/membership", { epsilon: state.epsilon, sensitivity: state.sensitivity, simulate: true, seed: state.seed });
    if (!answer) return;
    const sim = answer.simulation;
    const [low, high] = sim.tpr_at_1pct_interval;
    setText($("membership-sim"), t("red.membership_sim_result", {
      trials: sim.trials, delta: sim.sensitivity, age: sim.target_value, auc: sim.auc, tpr: pct(sim.tpr_at_1pct), low: pct(low), high: pct(high), adv: sim.advantage, bound: sim.bound,
    }));
    announce(t("red.membership_sim_short", { tpr: pct(sim.tpr_at_1pct) }));
    showCall("membership-call", sim.call);
  } catch (error) {
    fail("membership-sim", error);
  }
}

async function differencing(noisy) {
  if (noisy && !state.valid) { differencingCleared(); return; }
  differencingMode = noisy ? "noisy" : "exact";
  const turn = differencingPanel.begin();
  $("diff-exact").setAttribute("aria-pressed", String(!noisy));
  $("diff-noisy").setAttribute("aria-pressed", String(noisy));
  for (const id of ["diff-result", "diff-result-d2", "diff-attack"]) $(id).classList.remove("stale");
  setText($("diff-result"), t("common.loading"));
  let data;
  try {
    data = await turn.get("redteam/differencing", noisy ? { epsilon: state.epsilon, seed: state.seed } : { seed: state.seed });
  } catch (error) {
    fail("diff-result", error);
    return;
  }
  if (!data) return;
  const rows = data.patients.map((p, i) => {
    const tr = document.createElement("tr");
    if (i === data.patients.length - 1) tr.className = "changed";
    for (const v of [t("red.patient_name", { n: i + 1 }), String(p.diagnosis), String(data.patients_d2[i].diagnosis)]) {
      const td = document.createElement("td");
      td.textContent = v;
      tr.append(td);
    }
    return tr;
  });
  $("diabetes").querySelector("tbody").replaceChildren(...rows);
  for (const [name, id] of [["d1", "diff-result"], ["d2", "diff-result-d2"]]) {
    const part = data[name], label = name === "d1" ? "D" : "D′";
    const e = part.exact, n = part.noisy;
    setText($(id), noisy
      ? t("red.differencing_noisy_result", { db: label, eps: data.epsilon, b: n.scale, q5: n.q5, q4: n.q4, diff: n.difference, guess: n.guess, verdict: t(n.right ? "red.right" : "red.wrong") })
      : t("red.differencing_exact_result", { db: label, q5: e.q5, q4: e.q4, diff: e.difference }));
  }
  announce(noisy ? t("red.differencing_noisy_short") : t("red.differencing_exact_short"));
  showCall("diff-call", data.call);
  const a = data.attack;
  setText($("diff-attack"), noisy
    ? t("red.differencing_attack", { p: a.success_probability, bound: a.bound, trials: a.trials, eps: data.epsilon })
    : t("red.differencing_exact_verdict"));
}

async function floatingPoint() {
  $("fp-result").classList.remove("stale");
  setText($("fp-result"), t("common.loading"));
  if (!state.valid) { $("fp-result").textContent = t("common.not_computed"); return; }
  const turn = floatingPanel.begin();
  try {
    const data = await turn.get("redteam/floating-point", { epsilon: state.epsilon, seed: state.seed });
    if (!data) return;
    setText($("fp-result"), t("red.floating_result", { naive: pct(data.naive_rate), ours: pct(data.dpwitness_rate), samples: data.samples, x: 0, y: 1, eps: state.epsilon }));
    announce(t("red.floating_short", { naive: pct(data.naive_rate) }));
    $("fp-figure").hidden = false;
    bars($("plot-fp"), {
      title: t("red.floating_plot"), xLabel: t("red.floating_plot"), max: 1,
      alt: t("red.floating_result", { naive: pct(data.naive_rate), ours: pct(data.dpwitness_rate), samples: data.samples, x: 0, y: 1, eps: state.epsilon }),
      bars: [{ label: t("red.naive"), value: data.naive_rate, text: pct(data.naive_rate), cls: "bar1" }, { label: t("red.dpwitness"), value: data.dpwitness_rate, text: pct(data.dpwitness_rate), cls: "bar0" }],
    });
    // Reachable and unreachable doubles: consecutive doubles near x + η, which the naive sampler can output from x and from x′.
    const w = data.doubles;
    $("fp-doubles-figure").hidden = false;
    const infinite = w.cells.filter((c) => c.infinite_loss).length;
    cells($("plot-fp-doubles"), {
      title: t("red.doubles_title", { n: w.cells.length, start: w.start }), columns: w.cells.length,
      alt: t("red.doubles_alt", { n: w.cells.length, inf: infinite }),
      rows: [
        { label: `x = ${fmt(data.value)}`, on: w.cells.map((c) => c.from_value), cls: "s0" },
        { label: `x′ = ${fmt(data.neighbour)}`, on: w.cells.map((c) => c.from_neighbour), cls: "s1" },
      ],
      marked: w.cells.map((c) => c.infinite_loss),
      xLabel: t("red.doubles_axis", { start: fmt(w.start, 17), ulp: w.ulp }),
      legend: t("red.doubles_legend"),
    });
    $("fp-doubles-figure").dataset.infinite = String(infinite);
    showCall("fp-call", data.call);
  } catch (error) {
    fail("fp-result", error);
  }
}

export function initRedTeam() {
  $("membership-run").addEventListener("click", simulate);
  $("diff-exact").addEventListener("click", () => differencing(false));
  $("diff-noisy").addEventListener("click", () => differencing(true));
  $("fp-run").addEventListener("click", floatingPoint);
  onChange(debounce(membership, 80));
  return Promise.all([membership(), differencing(false)]);
}
