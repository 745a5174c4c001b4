// The walkthrough's later steps (issue 29): parallel composition, the privacy unit and contribution
// bounding, the exponential mechanism (report-noisy-max) and where real deployments put ε. Each has
// a picture, a live control and a predict-then-reveal question; every number is the server's
// (explorer/lessons.py). The helpers are the walkthrough's own, handed in (one code path).
import { fmt, t } from "./i18n.js";
import { bars, linePlot } from "./plot.js";
import { state } from "./state.js";

export function laterSteps({ h, figure, localSlider, epsilonSlider, predict, formula, table, local }) {
  async function stepParallel(body, turn) {
    epsilonSlider();
    localSlider(t("parallel.groups"), "groups", { min: 1, max: 20, step: 1, text: (v) => t("parallel.groups_value", { k: v }) });
    const data = await turn.get("walkthrough/parallel", { epsilon: state.epsilon, groups: local.groups });
    if (!data) return; // superseded, or the setting moved or was refused: render() draws nothing
    const words = { k: data.groups, eps: data.epsilon, par: data.parallel_loss, seq: data.sequential_loss, w: data.half_width, wk: data.split_half_width };
    body.append(h("p", { id: "step-result", "data-parallel": String(data.parallel_loss), "data-sequential": String(data.sequential_loss) }, t("parallel.result", words)));
    formula(body, data.formula);
    linePlot(figure(body, t("parallel.plot")), {
      title: t("parallel.plot"), alt: t("parallel.result", words), xLabel: t("parallel.axis_k"), yLabel: t("parallel.axis_loss"),
      xMin: 0.5, xMax: data.sizes.length + 0.5, yMin: 0, yMax: Math.max(...data.sequential_curve) * 1.1, legend: true,
      series: [
        { x: data.sizes, y: data.sequential_curve, cls: "s1", label: t("parallel.sequential") },
        { x: data.sizes, y: data.parallel_curve, cls: "s0", label: t("parallel.parallel") },
      ],
      points: [{ x: data.groups, y: data.parallel_loss, r: 6 }, { x: data.groups, y: data.sequential_loss, r: 6 }],
    });
    // which answer is right is read from the server's numbers: the loss nearest the parallel one
    const choices = [data.epsilon, data.groups * data.epsilon, data.epsilon / data.groups];
    const right = choices.reduce((best, v, i) => (Math.abs(v - data.parallel_loss) < Math.abs(choices[best] - data.parallel_loss) ? i : best), 0);
    predict(body, "predict-parallel", t("parallel.q", { k: data.groups, eps: data.epsilon }),
      [t("parallel.q_a0", { eps: data.epsilon }), t("parallel.q_a1", { loss: choices[1] }), t("parallel.q_a2", { loss: choices[2] })], right, t("parallel.q_why", words));
  }

  async function stepContribution(body, turn) {
    epsilonSlider();
    localSlider(t("unit.cap"), "cap", { min: 1, max: 40, step: 1, text: (v) => t("unit.cap_value", { c: v }) });
    const data = await turn.get("walkthrough/contribution", { epsilon: state.epsilon, cap: local.cap });
    if (!data) return; // superseded, or the setting moved or was refused: render() draws nothing
    const words = {
      n: data.people, mean: data.mean_rows, median: data.median_rows, largest: data.largest, total: data.true_total, p: data.rows_p,
      c: data.cap, eps: data.epsilon, delta: data.sensitivity, amount: data.amount, sum_delta: data.sum_sensitivity,
      bias: Math.abs(data.bias), dropped: data.dropped_people, std: data.noise_std, rmse: data.rmse, best: data.best_cap, best_rmse: data.best_rmse,
    };
    body.append(h("p", { id: "step-result", "data-best": String(data.best_cap), "data-delta": String(data.sensitivity) }, t("unit.result", words)));
    formula(body, data.formula);
    const positive = [...data.bias_curve, ...data.noise_curve].filter((v) => v > 0);
    linePlot(figure(body, t("unit.plot")), {
      title: t("unit.plot"), alt: t("unit.result", words), xLabel: t("unit.axis_c"), yLabel: t("unit.axis_error"), ylog: true, legend: true,
      xMin: 0, xMax: data.caps.length + 1, yMin: Math.max(0.1, Math.min(...positive) / 2), yMax: Math.max(...data.rmse_curve) * 2,
      series: [
        { x: data.caps, y: data.bias_curve.map((v) => Math.max(v, 0.1)), cls: "s1", label: t("unit.bias") },
        { x: data.caps, y: data.noise_curve, cls: "s2", label: t("unit.noise") },
        { x: data.caps, y: data.rmse_curve, cls: "s0", label: t("unit.rmse") },
      ],
      vlines: [{ x: data.best_cap, cls: "marker", label: t("unit.best", { best: data.best_cap }) }],
      points: [{ x: data.cap, y: data.rmse, r: 6 }],
    });
    const right = data.best_cap <= 1 ? 0 : data.best_cap >= data.largest ? 2 : 1;
    predict(body, "predict-unit", t("unit.q", { largest: data.largest, median: data.median_rows, eps: data.epsilon }),
      [t("unit.q_a0"), t("unit.q_a1"), t("unit.q_a2", { largest: data.largest })], right, t("unit.q_why", words));
  }

  async function stepNoisyMax(body, turn) {
    epsilonSlider();
    const data = await turn.get("walkthrough/noisy-max", { epsilon: state.epsilon });
    if (!data) return; // superseded, or the setting moved or was refused: render() draws nothing
    const names = data.counts.map((_, i) => t(`noisymax.cat${i}`));
    const p = data.probabilities;
    const top = p[data.top];
    const others = Math.max(...p.filter((_, i) => i !== data.top));
    const words = { eps: data.epsilon, name: names[data.top], count: data.counts[data.top], p: top, scale: data.gumbel_scale, second: names[1], count2: data.counts[1], p2: p[1] };
    body.append(h("p", { id: "step-result", "data-top": String(top) }, t("noisymax.result", words)));
    formula(body, data.formula);
    body.append(table(data.counts.map((c, i) => [names[i], fmt(c), fmt(p[i])]), [t("noisymax.col_cat"), t("noisymax.col_count"), t("noisymax.col_p")]));
    const bar = figure(body, t("noisymax.plot"), "plot tall");
    bars(bar, {
      title: t("noisymax.plot"), alt: t("noisymax.result", words), xLabel: t("noisymax.axis_p"), max: 1,
      bars: data.counts.map((c, i) => ({ label: `${names[i]} (${fmt(c)})`, value: p[i], text: fmt(p[i]), cls: "bar0" })),
    });
    linePlot(figure(body, t("noisymax.curve")), {
      title: t("noisymax.curve"), alt: t("noisymax.result", words), xLabel: "ε", yLabel: t("noisymax.axis_top"), xlog: true, yMin: 0, yMax: 1.05,
      series: [{ x: data.epsilons, y: data.top_curve, cls: "s0", label: names[data.top] }],
      points: [{ x: data.epsilon, y: top, r: 6 }],
    });
    const right = top >= 0.9 ? 0 : top - others < 0.01 ? 2 : 1;
    predict(body, "predict-noisymax", t("noisymax.q", { eps: data.epsilon, name: names[data.top], count: data.counts[data.top], count2: data.counts[1] }),
      [t("noisymax.q_a0"), t("noisymax.q_a1"), t("noisymax.q_a2")], right, t("noisymax.q_why", words));
  }

  async function stepDeployments(body, turn) {
    epsilonSlider();
    const data = await turn.get("walkthrough/deployments", { epsilon: state.epsilon });
    if (!data) return; // superseded, or the setting moved or was refused: render() draws nothing
    const rows = data.deployments;
    body.append(h("p", { id: "step-result", "data-count": String(rows.length) }, t("deploy.result", { eps: data.epsilon, post: data.posterior, factor: data.factor })));
    const post = (r) => (r.posterior_gap < 1e-4 ? `1 − ${fmt(r.posterior_gap)}` : fmt(r.posterior)); // never a rounded "1"
    const wrap = table(rows.map((r) => [t(`deploy.${r.key}`), fmt(r.epsilon), r.delta > 0 ? fmt(r.delta) : "0", t("deploy.unit_period", { unit: t(`deploy.unit_${r.unit}`), period: t(`deploy.period_${r.period}`) }), post(r), ""]),
      [t("deploy.col_who"), "ε", "δ", t("deploy.col_unit"), t("deploy.col_post"), t("deploy.col_source")]);
    wrap.querySelector("table").id = "deploy-table";
    [...wrap.querySelectorAll("tr")].slice(1).forEach((tr, i) => {
      const link = h("a", { href: rows[i].url, rel: "noopener" }, null);
      const code = h("code", {}, null);
      code.textContent = rows[i].url; // the primary source, as its address
      link.append(code);
      tr.lastElementChild.append(link);
    });
    body.append(wrap, h("p", { class: "small", id: "deploy-note" }, t("deploy.note")));
    formula(body, data.formula);
    bars(figure(body, t("deploy.plot"), "plot tall"), {
      title: t("deploy.plot"), alt: t("deploy.result", { eps: data.epsilon, post: data.posterior, factor: data.factor }), xLabel: "ε", log: true,
      bars: [...rows.map((r) => ({ label: t(`deploy.${r.key}`), value: r.epsilon })), { label: t("deploy.yours"), value: data.epsilon, cls: "bar-you" }],
    });
    const linkedin = rows.find((r) => r.key === "linkedin");
    const right = linkedin.posterior > 0.999 ? 2 : linkedin.posterior > 0.9 ? 1 : 0;
    predict(body, "predict-deploy", t("deploy.q", { eps: linkedin.epsilon }), [t("deploy.q_a0"), t("deploy.q_a1"), t("deploy.q_a2")], right,
      t("deploy.q_why", { eps: linkedin.epsilon, post: post(linkedin), factor: linkedin.factor }));
  }

  return [
    { key: "parallel", draw: stepParallel, live: true },
    { key: "unit", draw: stepContribution, live: true },
    { key: "noisymax", draw: stepNoisyMax, live: true },
    { key: "deploy", draw: stepDeployments, live: true },
  ];
}
