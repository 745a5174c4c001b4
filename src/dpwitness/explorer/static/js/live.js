// The live panel. While a slider moves, the curves are computed and drawn in the page on every
// animation frame (gauss.js: plain formulas); the server answers, as fast as it can, with what
// only the project's code can say: the exact release, the witness, the sampler's real scale,
// 2000 releases from the exact sampler. Axes stay fixed while a slider is dragged (so a larger ε
// shows as a narrower, taller curve) and are fitted to the whole setting (f(D), d, Δ, ε and the
// mechanism) when the gesture ends or "Fit axes" is pressed. A value outside the server's range
// is refused in the page: every number and picture it would change says "not computed".
import { announce } from "./announce.js";
import { Panel, markPending, refuseAll } from "./answers.js";
import { drawBeyond } from "./beyond.js";
import { showCall } from "./code.js";
import { grid, histogram, laplaceDensity, normalDensity, unitDraw } from "./gauss.js";
import { errorText, fmt, setText, t } from "./i18n.js";
import { LIMITS, within } from "./limits.js";
import { emptyPlot, linePlot } from "./plot.js";
import { changed, probe, state } from "./state.js";

const $ = (id) => document.getElementById(id);
const POINTS = 241;
const GAUSS_MAX_EPSILON = LIMITS.gauss_epsilon[1];
//: Half-widths of the fitted axes: beyond 7.6·b a Laplace density keeps e^−7.6 < 0.05% of its mass,
//: beyond 4σ a Gaussian keeps 0.006%: ≥ 99.9% of every curve is in view after a fit.
const LAPLACE_HALF = 7.6, GAUSS_HALF = 4;
//: The ε slider moves on a log scale over the server's whole range, POSITIONS steps.
const POSITIONS = 400;
let errorBox = null;
let lastVerdict = null; // the badge's verdict last drawn: ok, miscalibrated, bad or none
let server = null; // the last answer drawn, for the setting in server.params
let axes = null; // fixed axes: { lo, hi, yMax, glo, ghi }
let ghost = null; // the curves of the previous setting (drawn faint)
let lastCurves = null;
let lastInput = 0;
let framePending = false;
let inFlight = false;
let wanted = false;
let gaussTimer = null;
let gaussExact = null; // the server's exact discrete Gaussian for gaussExact.key

function params() {
  const { epsilon, sensitivity, value, d, seed, tamper, releases } = state;
  return { epsilon, sensitivity, value, d, seed, tamper, releases, gauss_delta: state.gaussDelta };
}

const sameSetting = (p) => p && p.epsilon === Number(state.epsilon.toPrecision(6)) && p.sensitivity === Number(state.sensitivity.toPrecision(6))
  && p.value === Number(state.value.toPrecision(6)) && p.tamper === state.tamper;

// The live panel's numbers and the exact Gaussian: each answer only for the setting it was asked for.
//: What the live answer draws (numbers, badge, call, the dots and the loss histogram): pending until it arrives.
const livePanel = new Panel({
  key: () => JSON.stringify(params()),
  views: () => [document.querySelector("#live .results"), $("badge"), $("plot-dots"), $("plot-loss"), $("dots-text"), $("loss-text")],
});
const gaussPanel = new Panel({ key: () => gaussKey() });

// --- the server: one request at a time, always for the latest setting ------------------------
export async function update() {
  wanted = true;
  if (inFlight) return;
  while (wanted) {
    wanted = false;
    if (!state.valid) return; // refused in the page: nothing to ask
    inFlight = true;
    const turn = livePanel.begin();
    const started = performance.now();
    const slow = setTimeout(() => { $("redraw").textContent = t("common.loading"); }, 150);
    let data = null;
    try {
      data = await turn.get("live", params()); // null if the setting moved on or was refused meanwhile
    } catch (error) {
      refuse(errorText(error));
    } finally {
      clearTimeout(slow);
      inFlight = false;
    }
    if (data) {
      showError(null);
      const fetched = performance.now();
      server = data;
      if (axes && !axes.gaussFitted) fitAxes(); // the Gaussian's σ has arrived: its axes can be fitted
      drawNumbers(data);
      livePanel.shown();
      requestFrame();
      const ms = performance.now() - started;
      probe.redraws.push(ms);
      probe.fetchMs.push(fetched - started);
      probe.liveVersion += 1;
      setText($("redraw"), t("live.redraw", { ms: Math.round(ms) }));
      changed();
    }
  }
}

function showError(message) {
  errorBox.hidden = !message;
  errorBox.textContent = message || "";
}

// --- refused settings: nothing old stays beside the new setting ----------------------------------
//: Every element whose text is derived from the setting (the server's numbers and the page's own).
const DERIVED = ["out-release", "release-notice", "out-illustration", "out-scale", "out-scale-real", "out-variance", "out-variance-real",
  "out-std", "out-std-real", "out-interval", "out-interval-real", "out-loss-claimed", "out-loss", "out-worst-claimed", "out-worst",
  "out-composition", "out-unbiased", "badge-detail", "gauss-summary", "gauss-witness", "live-call"];
const PLOTS = ["plot-density", "plot-ratio", "plot-gauss", "plot-gauss-delta"];

export function refuse(message) {
  server = null;
  gaussExact = null;
  clearTimeout(gaussTimer);
  showError(message);
  const none = t("common.not_computed");
  for (const id of DERIVED) {
    const node = $(id);
    node.textContent = none;
    node.classList.add("stale");
  }
  $("gauss-witness").dataset.state = "none";
  showCall("gauss-call", ""); // the exact Gaussian's call was for the previous setting
  $("tamper-detail").hidden = true;
  setText($("release-label"), t("live.release_none"));
  const badge = $("badge");
  badge.className = "badge none";
  badge.dataset.ok = "none";
  setText(badge, t("badge.none"));
  if (lastVerdict !== "none") announce(t("announce.none"));
  lastVerdict = "none";
  for (const id of PLOTS) emptyPlot($(id), none);
  $("numbers").classList.remove("tampered");
  $("live").dataset.stale = "true";
  refuseAll(); // every question asked for this setting is dropped; every panel clears what it drew
  probe.refusals += 1;
  changed();
}

function fresh() {
  for (const id of DERIVED) $(id).classList.remove("stale");
  delete $("live").dataset.stale;
}


// --- numbers from the server ---------------------------------------------------------------------
function drawNumbers(data) {
  fresh();
  const release = data.release;
  const c = data.claimed, r = data.real;
  setText($("release-label"), t("live.release", { seed: release.seed }));
  $("out-release").textContent = fmt(release.value, 6);
  setText($("release-notice"), t(release.seeded ? "live.notice_seeded" : "live.notice_secure"));
  $("out-scale").textContent = fmt(c.scale);
  $("out-scale-real").textContent = fmt(r.scale);
  $("out-variance").textContent = fmt(data.variance);
  $("out-variance-real").textContent = fmt(2 * r.scale * r.scale);
  $("out-std").textContent = fmt(data.std);
  $("out-std-real").textContent = fmt(Math.SQRT2 * r.scale);
  $("out-interval").textContent = `${fmt(release.value - c.half_width, 6)} … ${fmt(release.value + c.half_width, 6)} (± ${fmt(c.half_width)})`;
  $("out-interval-real").textContent = `${fmt(release.value - r.half_width, 6)} … ${fmt(release.value + r.half_width, 6)} (± ${fmt(r.half_width)})`;
  $("out-loss-claimed").textContent = fmt(c.loss_d);
  $("out-loss").textContent = fmt(r.loss_d);
  $("out-worst-claimed").textContent = fmt(data.composition.each); // ε claimed per release: 0 when Δ = 0 (no noise, nothing spent)
  $("out-worst").textContent = fmt(r.worst_log_ratio);
  const mismatch = data.params.tamper && !data.witness.scale_as_claimed; // the server's test, at the grid's tolerance
  $("numbers").classList.toggle("tampered", mismatch);
  const k = data.composition;
  $("out-composition").textContent =
    t("live.composition_value", { k: k.releases, eps: k.each, total: k.claimed_total }) +
    (data.params.tamper ? ` (${t("live.composition_real", { real: k.real_total })})` : "");
  const many = data.many_releases;
  const mean = many.length ? many.reduce((s, v) => s + v, 0) / many.length : NaN;
  setText($("out-unbiased"), t("live.unbiased_value", { n: many.length, mean, value: data.params.value }));
  drawBadge(data.witness);
  $("live-call").textContent = liveCall(data.params);
  drawBeyond(data);
}

// The exact dpwitness calls behind the panel's numbers (copyable).
function liveCall(p) {
  const make = p.tamper
    ? `from dpwitness.attacks.tamper import inverted_laplace\nmechanism = inverted_laplace(sensitivity=${p.sensitivity}, epsilon=${p.epsilon})  # red team`
    : `from dpwitness import Laplace\nmechanism = Laplace(sensitivity=${p.sensitivity}, epsilon=${p.epsilon})`;
  return `${make}\nrelease = mechanism.release(${p.value}, seed=${p.seed})  # seeded: reproducible, not for production\n`
    + `from dpwitness import witness\nprint(witness(mechanism))  # the badge\nmechanism.privacy_loss(${Math.abs(p.d)})  # loss for this d`;
}

function drawBadge(w) {
  const badge = $("badge");
  const privacyOk = w.worst_log_ratio <= w.claimed_epsilon * (1 + 1e-12);
  badge.dataset.ok = String(w.ok);
  const verdict = w.ok ? "ok" : privacyOk ? "miscalibrated" : "bad";
  badge.className = `badge ${verdict === "bad" ? "bad" : verdict === "ok" ? "ok" : "warn"}`;
  setText(badge, t(`badge.${verdict}`));
  // Only a changed verdict is announced (the first one, at load, is on screen already).
  if (verdict !== lastVerdict && lastVerdict !== null) announce(t(`announce.${verdict}`, { eps: w.claimed_epsilon }));
  lastVerdict = verdict;
  setText($("badge-detail"), t("badge.detail", {
    worst: fmt(w.worst_log_ratio, 6), eps: w.claimed_epsilon, var: fmt(w.variance, 6), expected: fmt(w.expected_variance, 6),
  }));
  const tamper = $("tamper-detail");
  tamper.hidden = !w.tamper;
  const same = w.tamper && w.scale_as_claimed; // the server's test, at the grid's tolerance
  if (w.tamper) setText(tamper, same ? t("red.tamper_same", { real: w.realised_scale }) : t("red.tamper_on", { real: w.realised_scale, claimed: w.claimed_scale, worst: w.worst_log_ratio }));
}

// --- curves drawn in the page, every animation frame ------------------------------------------
function requestFrame() {
  if (framePending) return;
  framePending = true;
  requestAnimationFrame(() => {
    framePending = false;
    performance.mark("dpw-frame-start");
    drawFrame();
    performance.measure("dpw-frame", "dpw-frame-start");
    probe.frames += 1;
  });
}

export function fitAxes() {
  if (!state.valid) return;
  const f1 = state.value, f2 = state.value - state.d;
  const low = Math.min(f1, f2), high = Math.max(f1, f2);
  const b = state.sensitivity > 0 ? realScale() : Math.max(1, Math.abs(f1) * 1e-3);
  const gauss = state.sensitivity > 0 ? gaussPicture() : null;
  const sigma = gauss ? gauss.sigma : b;
  axes = {
    lo: low - LAPLACE_HALF * b, hi: high + LAPLACE_HALF * b, yMax: 1.15 / (2 * b),
    glo: low - GAUSS_HALF * sigma, ghi: high + GAUSS_HALF * sigma, gaussFitted: state.sensitivity === 0 || gauss !== null,
  };
  ghost = null;
  $("fit-axes").dataset.needed = "false";
  requestFrame();
}

// The Gaussian panel's numbers, computed by the server (dpwitness.privacy.accounting): the analytic
// Gaussian's σ for (ε, δ) and its δ(ε) for the shift d, from the last answer. While a slider moves,
// that answer's picture (its ε, σ, d and δ together, so the shaded area is the δ it states) is drawn
// at the current f(D) until the answer for the new setting arrives.
function gaussPicture() {
  return server && server.gaussian ? server.gaussian : null;
}

// The 95% half-width for a Laplace scale b: the server's, scaled with b (it is proportional to b).
function halfWidth(b) {
  return server && server.scale > 0 ? server.half_width * (b / server.scale) : null;
}

// Share of a Laplace(centre, b) density's mass inside [lo, hi].
function laplaceMass(lo, hi, centre, b) {
  const cdf = (x) => (x < centre ? 0.5 * Math.exp((x - centre) / b) : 1 - 0.5 * Math.exp(-(x - centre) / b));
  return cdf(hi) - cdf(lo);
}

function realScale() {
  const claimed = state.sensitivity / state.epsilon;
  if (server && sameSetting(server.params)) return server.real.scale;
  return state.tamper ? state.epsilon / state.sensitivity : claimed; // the red team's inversion, until the server says
}

function drawFrame() {
  if (!state.valid) return;
  if (!axes) fitAxes();
  const eps = state.epsilon, delta = state.sensitivity, f1 = state.value, f2 = state.value - state.d;
  const xMin = axes.lo, xMax = axes.hi;
  const yMax = axes.yMax;
  const z = grid(xMin, xMax, POINTS);
  const noNoise = delta === 0;
  $("no-noise").hidden = !noNoise;
  const b = noNoise ? 0 : realScale();
  // The axes stay put during a drag; when the curve leaves them, the Fit button says so.
  const massInView = noNoise ? (f1 >= xMin && f1 <= xMax ? 1 : 0) : Math.min(laplaceMass(xMin, xMax, f1, b), laplaceMass(xMin, xMax, f2, b));
  const peakCut = !noNoise && 1 / (2 * b) > yMax;
  $("fit-axes").dataset.needed = String(massInView < 0.999 || peakCut);
  $("plot-density").dataset.epsilon = String(eps); // the ε this picture is drawn for (tests: every drag step)
  $("plot-density").dataset.massInView = String(massInView);
  $("plot-density").dataset.peakInView = String(!peakCut);
  const p1 = noNoise ? null : z.map((v) => laplaceDensity(v, f1, b));
  const p2 = noNoise ? null : z.map((v) => laplaceDensity(v, f2, b));
  const ratio = noNoise ? z.map(() => 0) : z.map((v) => (Math.abs(v - f2) - Math.abs(v - f1)) / b);
  const key = `${eps}|${delta}|${f1}|${f2}|${state.tamper}`;
  const u = unitDraw(state.seed);
  const illustration = f1 + u * b;
  setText($("out-illustration"), t("live.illustration_value", { u, b, x: illustration }));
  // 2000 releases from the exact sampler; while the setting moves, the last batch rescaled.
  let bins = null;
  if (server && !noNoise) {
    const exact = sameSetting(server.params);
    const from = server.params, fromB = server.real.scale;
    const values = exact || !(fromB > 0) ? server.many_releases : server.many_releases.map((v) => f1 + (v - from.value) * (b / fromB));
    bins = { ...histogram(values, xMin, xMax, 60), cls: "hist", label: t(exact ? "plot.hist_exact" : "plot.hist_rescaled", { n: values.length }) };
  }
  const release = server && sameSetting(server.params) ? server.release.value : null;
  const vlines = [];
  if (release !== null) vlines.push({ x: release, cls: "marker release", id: "release", label: t("plot.release_at", { x: fmt(release, 5) }) });
  if (!noNoise) vlines.push({ x: illustration, cls: "marker illus", id: "illus", label: t("plot.illustration_at", { x: fmt(illustration, 5) }) });
  const series = [];
  if (ghost && ghost.p1) series.push({ x: ghost.z, y: ghost.p1, cls: "ghost", label: t("plot.ghost") });
  if (noNoise) series.push({ x: [f1, f1], y: [0, yMax], cls: "s0 spike", label: t("plot.point_mass", { f: fmt(f1) }) });
  else series.push({ x: z, y: p1, cls: "s0", label: "p(z | D)" }, { x: z, y: p2, cls: "s1", label: "p(z | D′)" });
  const title = t("live.plot_density", { f1: fmt(f1), f2: fmt(f2) });
  linePlot($("plot-density"), {
    title, xLabel: t("live.axis_z"), yLabel: t("live.axis_density"), xMin, xMax, yMin: 0, yMax, clip: true,
    alt: noNoise ? t("alt.density_zero", { f: fmt(f1) }) : t("alt.density", { b: fmt(b), peak: fmt(1 / (2 * b)), w: fmt(halfWidth(b)) }),
    series, bins, vlines,
  });
  setText($("cap-density"), title);
  const ySpan = Math.max(6, 1.25 * eps);
  const ratioSeries = [];
  if (ghost && ghost.ratio) ratioSeries.push({ x: ghost.z, y: ghost.ratio, cls: "ghost", label: t("plot.ghost") });
  ratioSeries.push({ x: z, y: ratio, cls: "s4", label: "log p(z | D) − log p(z | D′)" });
  const worst = noNoise ? 0 : Math.abs(state.d) / b;
  linePlot($("plot-ratio"), {
    title: t("live.plot_ratio"), xLabel: t("live.axis_z"), yLabel: t("live.axis_log_ratio"), xMin, xMax, yMin: -ySpan, yMax: ySpan, clip: true,
    alt: t("alt.ratio", { worst: fmt(worst), eps: fmt(eps), verdict: t(worst <= eps * (1 + 1e-9) ? "alt.inside" : "alt.outside") }),
    series: ratioSeries,
    hlines: [{ y: eps, label: "+ε", id: "eps" }, { y: -eps, label: "−ε", id: "-eps" }],
  });
  $("plot-ratio").dataset.maxAbs = String(Math.max(...ratio.map(Math.abs)));
  drawGaussian(noNoise);
  lastCurves = { key, z, p1, ratio };
}

function drawGaussian(noNoise) {
  const gauss = noNoise ? null : gaussPicture();
  const f1 = state.value;
  const box = $("plot-gauss");
  const xMin = axes.glo, xMax = axes.ghi, yMax = 1;
  const z = grid(xMin, xMax, POINTS);
  if (noNoise) {
    $("plot-gauss-delta").replaceChildren();
    linePlot(box, { title: t("live.plot_gauss"), xLabel: t("live.axis_z"), xMin, xMax, yMin: 0, yMax, alt: t("alt.density_zero", { f: fmt(f1) }), series: [{ x: [f1, f1], y: [0, yMax], cls: "s0 spike", label: t("plot.point_mass", { f: fmt(f1) }) }] });
    setText($("gauss-summary"), t("live.no_noise"));
    return;
  }
  if (!gauss) { // no answer from the server yet: nothing to draw that the library has computed
    $("plot-gauss-delta").replaceChildren();
    emptyPlot(box, t("common.loading"));
    setText($("gauss-summary"), t("common.loading"));
    return;
  }
  // L2 sensitivity of a scalar query equals its L1 sensitivity. σ and δ(ε) for the shift come
  // from the server (the analytic Gaussian; the exact sampler's σ is stated by the witness below).
  const { epsilon: eps, delta, sigma, delta_at_shift: hockey } = gauss;
  const f2 = f1 - gauss.d;
  const factor = Math.exp(eps);
  const p = z.map((v) => normalDensity(v, f1, sigma));
  const q = z.map((v) => factor * normalDensity(v, f2, sigma));
  // Its own axes (the Gaussian for a small δ is wider than the Laplace), fitted with the others;
  // its height follows the curves so that both are always whole.
  const gaussMax = 1.25 * Math.max(...q, ...p) || 1;
  linePlot(box, {
    title: t("live.plot_gauss"), xLabel: t("live.axis_z"), yLabel: t("live.axis_density"), xMin, xMax, yMin: 0, yMax: gaussMax, clip: true,
    alt: t("alt.gauss", { sigma: fmt(sigma), delta: fmt(hockey), eps: fmt(eps) }),
    areas: [{ x: z, low: q, high: p, cls: "delta-area", id: "delta", label: t("plot.delta_area", { delta: fmt(hockey, 3) }) }],
    series: [{ x: z, y: p, cls: "s0", label: "p(z | D)" }, { x: z, y: q, cls: "s3", label: "e^ε · p(z | D′)" }],
  });
  // The integrand of δ on its own axis: invisible at the densities' scale, it is the point.
  const excess = z.map((_, i) => Math.max(0, p[i] - q[i]));
  const top = Math.max(...excess);
  // The shaded area, integrated over what is in view: it is the δ the legend states.
  const step = (xMax - xMin) / (POINTS - 1);
  let area = 0;
  for (let i = 1; i < POINTS; i++) area += 0.5 * (excess[i - 1] + excess[i]) * step;
  box.dataset.deltaInView = String(area);
  box.dataset.delta = String(hockey);
  linePlot($("plot-gauss-delta"), {
    title: t("live.plot_gauss_delta"), xLabel: t("live.axis_z"), yLabel: "p − e^ε·q", xMin, xMax, yMin: 0, yMax: top > 0 ? top * 1.2 : 1,
    alt: t("alt.gauss_delta", { delta: fmt(hockey, 3) }),
    areas: [{ x: z, low: z.map(() => 0), high: excess, cls: "delta-area", id: "delta-zoom", label: t("plot.delta_area", { delta: fmt(hockey, 3) }) }],
    series: [],
  });
  setText($("gauss-summary"), t("live.gauss_summary", { sigma, b: state.sensitivity / eps, delta: hockey, target: delta, eps }));
}

const gaussKey = () => `${Number(state.sensitivity.toPrecision(6))}|${Number(state.epsilon.toPrecision(6))}|${state.gaussDelta}`;

// The exact Gaussian takes seconds to build: asked for once the setting has rested for 0.4 s,
// and only while its panel is on screen.
let gaussVisible = false;
function scheduleGaussian() {
  clearTimeout(gaussTimer);
  if (gaussVisible) gaussTimer = setTimeout(fetchGaussian, 400);
}

// The exact witness's text belongs to one setting: cleared the moment the setting changes.
function clearGaussWitness() {
  if (gaussExact && gaussExact.key === gaussKey()) return;
  showCall("gauss-call", "");
  const box = $("gauss-witness");
  box.dataset.state = "pending";
  setText(box, t("live.gauss_exact_pending"));
}

async function fetchGaussian() {
  if (!state.valid) return;
  const key = gaussKey();
  if (gaussExact && gaussExact.key === key) return;
  const box = $("gauss-witness");
  box.classList.remove("stale");
  if (state.sensitivity === 0) {
    box.dataset.state = "range";
    setText(box, t("live.no_noise"));
    return;
  }
  if (!(state.epsilon <= GAUSS_MAX_EPSILON)) { // the exact Gaussian is calibrated for ε ≤ 5 (noise.GAUSS_EPSILON_RANGE)
    box.dataset.state = "range";
    setText(box, t("live.gauss_exact_range", { max: GAUSS_MAX_EPSILON }));
    return;
  }
  box.dataset.state = "loading";
  setText(box, t("live.gauss_exact_loading"));
  const turn = gaussPanel.begin();
  try {
    const data = await turn.get("gaussian", { epsilon: state.epsilon, sensitivity: state.sensitivity, delta: state.gaussDelta });
    if (!data) return; // the setting moved on (its own pending text is shown) or was refused
    gaussExact = { key, data };
    const w = data.witness;
    box.dataset.state = w.ok ? "ok" : "bad";
    setText(box, t("live.gauss_exact", { sigma: data.sigma, analytic: data.analytic_sigma, sampled: data.delta_sampled, delta: data.delta, eps: data.epsilon, verdict: t(w.ok ? "live.gauss_verdict_ok" : "live.gauss_verdict_bad") }));
    showCall("gauss-call", data.call);
    requestFrame();
  } catch (error) {
    box.dataset.state = "error";
    setText(box, t("live.gauss_exact_unavailable", { message: errorText(error) }));
  }
}

// --- controls -----------------------------------------------------------------------------------
// A change after a pause starts a new gesture: the curve it leaves behind becomes the ghost.
function changedByUser() {
  validate();
  syncControls();
  if (!state.valid) return;
  markPending();
  clearGaussWitness();
  scheduleGaussian();
  const now = performance.now();
  if (lastCurves && now - lastInput > 400) ghost = lastCurves;
  lastInput = now;
  requestFrame();
  update();
}

//: The number boxes, what they set and the range they must respect (the server's).
const FIELDS = [
  { key: "epsilon", box: "epsilon-n", limit: "epsilon", name: "ε" },
  { key: "sensitivity", box: "sensitivity-n", limit: "sensitivity", name: "Δ" },
  { key: "value", box: "value", limit: "value", name: "f(D)" },
];

// Check every control against the server's ranges; a refused one is marked and named.
export function validate() {
  const problems = [];
  for (const field of FIELDS) {
    const ok = within(field.limit, state[field.key]);
    const box = $(field.box);
    box.setAttribute("aria-invalid", String(!ok));
    if (!ok) {
      const [low, high] = LIMITS[field.limit];
      problems.push(t("error.range", { name: field.name, low, high }));
    }
  }
  const was = state.valid;
  state.valid = problems.length === 0;
  if (!state.valid) refuse(problems.join(" "));
  else if (!was) showError(null);
  return state.valid;
}

const logLow = () => Math.log10(LIMITS.epsilon[0]), logHigh = () => Math.log10(LIMITS.epsilon[1]);
export const epsilonToPosition = (eps) => Math.round(((Math.log10(eps) - logLow()) / (logHigh() - logLow())) * POSITIONS);
export const positionToEpsilon = (pos) => Number((10 ** (logLow() + (pos / POSITIONS) * (logHigh() - logLow()))).toPrecision(3));

// Slider and box show the same setting; Δ beyond the slider's end is marked on the slider;
// the tamper switch is off and disabled where there is no noise to tamper with (Δ = 0).
export function syncControls() {
  const eps = $("epsilon"), sens = $("sensitivity");
  // A refused ε: the slider goes to the end it passed (a number beyond the range) or is marked refused
  // (no number at all), never left at the previous setting's position.
  const [low, high] = LIMITS.epsilon;
  if (Number.isFinite(state.epsilon)) eps.value = String(epsilonToPosition(Math.min(Math.max(state.epsilon, low), high)));
  eps.dataset.refused = String(!within("epsilon", state.epsilon));
  sens.dataset.refused = String(!within("sensitivity", state.sensitivity));
  eps.setAttribute("aria-valuetext", Number.isFinite(state.epsilon) ? `ε = ${fmt(state.epsilon)}` : t("common.not_computed"));
  const sensMax = Number(sens.max);
  if (Number.isFinite(state.sensitivity)) sens.value = String(Math.min(Math.max(state.sensitivity, 0), sensMax));
  const beyond = state.sensitivity > sensMax;
  sens.dataset.beyond = String(beyond);
  sens.setAttribute("aria-valuetext", Number.isFinite(state.sensitivity)
    ? (beyond ? t("live.beyond_slider", { v: `Δ = ${fmt(state.sensitivity)}` }) : `Δ = ${fmt(state.sensitivity)}`) : t("common.not_computed"));
  const tamper = $("tamper");
  const meaningless = !(state.sensitivity > 0);
  if (meaningless && state.tamper) state.tamper = false;
  tamper.checked = state.tamper;
  tamper.disabled = meaningless;
  tamper.closest(".tamper-switch").dataset.disabled = String(meaningless);
  syncShift();
  $("releases").value = String(state.releases);
  setText($("releases-out"), t("live.k_value", { k: state.releases }));
  $("releases").setAttribute("aria-valuetext", t("live.k_value", { k: state.releases }));
}

function syncShift() {
  const delta = Number.isFinite(state.sensitivity) ? Math.max(0, state.sensitivity) : 0;
  $("shift").disabled = delta === 0;
  $("shift").value = String(state.dRatio);
  const text = t("live.d_value", { d: fmt(state.d), r: fmt(state.dRatio) });
  $("shift-out").textContent = text;
  $("shift").setAttribute("aria-valuetext", text);
}

const number = (raw) => (String(raw).trim() === "" ? NaN : Number(raw));

export function initLive() {
  errorBox = document.createElement("p");
  errorBox.className = "error";
  errorBox.setAttribute("role", "alert");
  errorBox.id = "live-error";
  errorBox.hidden = true;
  $("sticky").append(errorBox);
  const eps = $("epsilon");
  eps.min = "0"; eps.max = String(POSITIONS); eps.step = "1";
  const epsBox = $("epsilon-n");
  epsBox.min = String(LIMITS.epsilon[0]); epsBox.max = String(LIMITS.epsilon[1]);
  const sensBox = $("sensitivity-n");
  sensBox.min = String(LIMITS.sensitivity[0]); sensBox.max = String(LIMITS.sensitivity[1]);
  $("value").min = String(LIMITS.value[0]); $("value").max = String(LIMITS.value[1]);
  $("releases").max = String(Math.min(50, LIMITS.releases[1]));
  eps.addEventListener("input", () => { state.epsilon = positionToEpsilon(Number(eps.value)); epsBox.value = String(state.epsilon); changedByUser(); });
  epsBox.addEventListener("input", () => { state.epsilon = number(epsBox.value); changedByUser(); });
  $("sensitivity").addEventListener("input", (e) => { state.sensitivity = Number(e.target.value); sensBox.value = e.target.value; changedByUser(); });
  sensBox.addEventListener("input", () => { state.sensitivity = number(sensBox.value); changedByUser(); });
  for (const id of ["epsilon", "epsilon-n", "sensitivity", "sensitivity-n", "value", "shift"]) $(id).addEventListener("change", fitAxes);
  $("shift").addEventListener("input", (e) => { state.dRatio = Number(e.target.value); changedByUser(); });
  $("releases").addEventListener("input", (e) => { state.releases = Number(e.target.value); changedByUser(); });
  $("value").addEventListener("input", (e) => { state.value = number(e.target.value); changedByUser(); });
  $("gauss-delta").addEventListener("change", (e) => { state.gaussDelta = Number(e.target.value); changedByUser(); fitAxes(); });
  $("tamper").addEventListener("change", (e) => { state.tamper = e.target.checked; changedByUser(); fitAxes(); });
  $("resample").addEventListener("click", () => { state.seed += 1; changedByUser(); });
  $("fit-axes").addEventListener("click", fitAxes);
  $("live-call-copy").addEventListener("click", async () => {
    try { await navigator.clipboard.writeText($("live-call").textContent); $("live-call-copy").textContent = t("common.copied"); } catch { $("live-call-copy").textContent = t("common.copy_failed"); }
  });
  // The setting may come from the URL: show it in every control.
  epsBox.value = String(state.epsilon);
  sensBox.value = String(state.sensitivity);
  $("value").value = String(state.value);
  $("gauss-delta").value = String(state.gaussDelta);
  syncControls();
  if (typeof IntersectionObserver !== "undefined") {
    new IntersectionObserver((entries) => {
      gaussVisible = entries.some((e) => e.isIntersecting);
      scheduleGaussian();
    }).observe($("plot-gauss"));
  }
  if (!validate()) return Promise.resolve();
  clearGaussWitness();
  requestFrame();
  return update();
}
