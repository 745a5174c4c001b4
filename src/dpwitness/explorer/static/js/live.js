// The live panel. While a slider moves, the curves are computed and drawn in the page on every
// animation frame (gauss.js: plain formulas); the server answers, as fast as it can, with what
// only the project's code can say: the exact release, the witness, the sampler's real scale,
// 2000 releases from the exact sampler. Axes stay fixed while ε moves ("Fit axes" refits them).
import { getJSON } from "./api.js";
import { analyticSigma, gaussianDelta, grid, histogram, laplaceDensity, normalDensity, unitDraw } from "./gauss.js";
import { fmt, t } from "./i18n.js";
import { linePlot } from "./plot.js";
import { changed, probe, state } from "./state.js";

const $ = (id) => document.getElementById(id);
const POINTS = 241;
const GAUSS_MAX_EPSILON = 5;
let errorBox = null;
let server = null; // the last answer drawn, for the setting in server.params
let axes = null; // fixed axes: { centre, sensitivity }
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
  return { epsilon, sensitivity, value, d, seed, tamper, releases };
}

const sameSetting = (p) => p && p.epsilon === Number(state.epsilon.toPrecision(6)) && p.sensitivity === Number(state.sensitivity.toPrecision(6))
  && p.value === Number(state.value.toPrecision(6)) && p.tamper === state.tamper;

// --- the server: one request at a time, always for the latest setting ------------------------
export async function update() {
  wanted = true;
  if (inFlight) return;
  while (wanted) {
    wanted = false;
    inFlight = true;
    const started = performance.now();
    const slow = setTimeout(() => { $("redraw").textContent = t("common.loading"); }, 150);
    let data = null;
    try {
      data = await getJSON("live", params());
      showError(null);
    } catch (error) {
      if (!wanted) showError(error.message);
    } finally {
      clearTimeout(slow);
      inFlight = false;
    }
    if (data && !wanted) {
      const fetched = performance.now();
      server = data;
      drawNumbers(data);
      requestFrame();
      const ms = performance.now() - started;
      probe.redraws.push(ms);
      probe.fetchMs.push(fetched - started);
      probe.liveVersion += 1;
      $("redraw").textContent = t("live.redraw", { ms: Math.round(ms) });
      changed();
    }
  }
}

function showError(message) {
  errorBox.hidden = !message;
  errorBox.textContent = message ? t("common.error", { message }) : "";
}

// --- numbers from the server ---------------------------------------------------------------------
function drawNumbers(data) {
  const release = data.release;
  const c = data.claimed, r = data.real;
  $("release-label").textContent = t("live.release", { seed: release.seed });
  $("out-release").textContent = fmt(release.value, 6);
  $("release-notice").textContent = release.notice;
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
  const mismatch = data.params.tamper && Math.abs(r.scale - c.scale) > 1e-9 * Math.max(1, c.scale);
  $("numbers").classList.toggle("tampered", mismatch);
  const k = data.composition;
  $("out-composition").textContent =
    t("live.composition_value", { k: k.releases, eps: k.each, total: k.claimed_total }) +
    (data.params.tamper ? ` (${t("live.composition_real", { real: k.real_total })})` : "");
  const many = data.many_releases;
  const mean = many.length ? many.reduce((s, v) => s + v, 0) / many.length : NaN;
  $("out-unbiased").textContent = t("live.unbiased_value", { n: many.length, mean, value: data.params.value });
  drawBadge(data.witness);
}

function drawBadge(w) {
  const badge = $("badge");
  const privacyOk = w.worst_log_ratio <= w.claimed_epsilon * (1 + 1e-12);
  badge.className = `badge ${w.ok ? "ok" : "bad"}`;
  badge.dataset.ok = String(w.ok);
  badge.textContent = w.ok ? t("badge.ok") : privacyOk ? t("badge.miscalibrated") : t("badge.bad");
  $("badge-detail").textContent = t("badge.detail", {
    worst: fmt(w.worst_log_ratio, 6), eps: w.claimed_epsilon, var: fmt(w.variance, 6), expected: fmt(w.expected_variance, 6),
  });
  const tamper = $("tamper-detail");
  tamper.hidden = !w.tamper;
  if (w.tamper) tamper.textContent = t("red.tamper_on", { real: w.realised_scale, claimed: w.claimed_scale, worst: w.worst_log_ratio });
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
  axes = { centre: Number.isFinite(state.value) ? state.value : 0, sensitivity: state.sensitivity > 0 ? state.sensitivity : 1 };
  ghost = null;
  requestFrame();
}

function realScale() {
  const claimed = state.sensitivity / state.epsilon;
  if (server && sameSetting(server.params)) return server.real.scale;
  return state.tamper ? state.epsilon / state.sensitivity : claimed; // the red team's inversion, until the server says
}

function drawFrame() {
  if (!axes) fitAxes();
  const eps = state.epsilon, delta = state.sensitivity, f1 = state.value, f2 = state.value - state.d;
  if (!(eps > 0 && delta >= 0 && Number.isFinite(f1) && Number.isFinite(f2))) return;
  const span = 12 * axes.sensitivity;
  const xMin = axes.centre - span, xMax = axes.centre + span;
  const yMax = 0.75 / axes.sensitivity;
  const z = grid(xMin, xMax, POINTS);
  const noNoise = delta === 0;
  $("no-noise").hidden = !noNoise;
  const b = noNoise ? 0 : realScale();
  const p1 = noNoise ? null : z.map((v) => laplaceDensity(v, f1, b));
  const p2 = noNoise ? null : z.map((v) => laplaceDensity(v, f2, b));
  const ratio = noNoise ? z.map(() => 0) : z.map((v) => (Math.abs(v - f2) - Math.abs(v - f1)) / b);
  const key = `${eps}|${delta}|${f1}|${f2}|${state.tamper}`;
  const u = unitDraw(state.seed);
  const illustration = f1 + u * b;
  $("out-illustration").textContent = t("live.illustration_value", { u, b, x: illustration });
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
    alt: noNoise ? t("alt.density_zero", { f: fmt(f1) }) : t("alt.density", { b: fmt(b), peak: fmt(1 / (2 * b)), w: fmt(b * Math.log(20)) }),
    series, bins, vlines,
  });
  $("cap-density").textContent = title;
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
  drawGaussian(z, xMin, xMax, yMax, noNoise);
  lastCurves = { key, z, p1, ratio };
}

function drawGaussian(z, xMin, xMax, yMax, noNoise) {
  const eps = state.epsilon, delta = state.gaussDelta, f1 = state.value, f2 = state.value - state.d;
  const box = $("plot-gauss");
  if (noNoise) {
    $("plot-gauss-delta").replaceChildren();
    linePlot(box, { title: t("live.plot_gauss"), xLabel: t("live.axis_z"), xMin, xMax, yMin: 0, yMax, alt: t("alt.density_zero", { f: fmt(f1) }), series: [{ x: [f1, f1], y: [0, yMax], cls: "s0 spike", label: t("plot.point_mass", { f: fmt(f1) }) }] });
    $("gauss-summary").textContent = t("live.no_noise");
    return;
  }
  // L2 sensitivity of a scalar query equals its L1 sensitivity. The analytic σ is computed here
  // on every frame; once the server has built the project's exact discrete Gaussian for this
  // setting, its σ (the noise really sampled) is drawn instead.
  const exact = gaussExact && gaussExact.key === gaussKey() ? gaussExact.data : null;
  const sigma = exact ? exact.sigma : analyticSigma(state.sensitivity, eps, delta);
  const factor = Math.exp(eps);
  const p = z.map((v) => normalDensity(v, f1, sigma));
  const q = z.map((v) => factor * normalDensity(v, f2, sigma));
  const shift = Math.abs(state.d);
  const hockey = shift > 0 ? gaussianDelta(sigma, shift, eps) : 0;
  // Its own height (the Gaussian for a small δ is much wider than the Laplace); x as fixed as the Laplace panel's.
  const gaussMax = 1.25 * Math.max(...q, ...p);
  linePlot(box, {
    title: t("live.plot_gauss"), xLabel: t("live.axis_z"), yLabel: t("live.axis_density"), xMin, xMax, yMin: 0, yMax: gaussMax, clip: true,
    alt: t("alt.gauss", { sigma: fmt(sigma), delta: fmt(hockey), eps: fmt(eps) }),
    areas: [{ x: z, low: q, high: p, cls: "delta-area", id: "delta", label: t("plot.delta_area", { delta: fmt(hockey, 3) }) }],
    series: [{ x: z, y: p, cls: "s0", label: "p(z | D)" }, { x: z, y: q, cls: "s3", label: "e^ε · p(z | D′)" }],
  });
  // The integrand of δ on its own axis: invisible at the densities' scale, it is the point.
  const excess = z.map((_, i) => Math.max(0, p[i] - q[i]));
  const top = Math.max(...excess);
  linePlot($("plot-gauss-delta"), {
    title: t("live.plot_gauss_delta"), xLabel: t("live.axis_z"), yLabel: "p − e^ε·q", xMin, xMax, yMin: 0, yMax: top > 0 ? top * 1.2 : 1,
    alt: t("alt.gauss_delta", { delta: fmt(hockey, 3) }),
    areas: [{ x: z, low: z.map(() => 0), high: excess, cls: "delta-area", id: "delta-zoom", label: t("plot.delta_area", { delta: fmt(hockey, 3) }) }],
    series: [],
  });
  $("gauss-summary").textContent = t("live.gauss_summary", { sigma, b: state.sensitivity / eps, delta: hockey, target: delta, eps });
}

const gaussKey = () => `${Number(state.sensitivity.toPrecision(6))}|${Number(state.epsilon.toPrecision(6))}|${state.gaussDelta}`;

// The exact Gaussian takes seconds to build: asked for once the setting has rested for 0.4 s,
// and only while its panel is on screen.
let gaussVisible = false;
function scheduleGaussian() {
  clearTimeout(gaussTimer);
  if (gaussVisible) gaussTimer = setTimeout(fetchGaussian, 400);
}

async function fetchGaussian() {
  const key = gaussKey();
  if (gaussExact && gaussExact.key === key) return;
  const box = $("gauss-witness");
  if (!(state.epsilon <= GAUSS_MAX_EPSILON)) { // the exact Gaussian is calibrated for ε ≤ 5 (noise.GAUSS_EPSILON_RANGE)
    box.dataset.state = "range";
    box.textContent = t("live.gauss_exact_range", { max: GAUSS_MAX_EPSILON });
    return;
  }
  box.dataset.state = "loading";
  box.textContent = t("live.gauss_exact_loading");
  try {
    const data = await getJSON("gaussian", { epsilon: state.epsilon, sensitivity: state.sensitivity, delta: state.gaussDelta });
    if (key !== gaussKey()) return;
    gaussExact = { key, data };
    const w = data.witness;
    box.dataset.state = w.ok ? "ok" : "bad";
    box.textContent = t("live.gauss_exact", { sigma: data.sigma, analytic: data.analytic_sigma, sampled: data.delta_sampled, delta: data.delta, eps: data.epsilon, verdict: w.verdict });
    requestFrame();
  } catch (error) {
    if (key !== gaussKey()) return;
    box.dataset.state = "error";
    box.textContent = t("live.gauss_exact_unavailable", { message: error.message });
  }
}

// --- controls -----------------------------------------------------------------------------------
// A change after a pause starts a new gesture: the curve it leaves behind becomes the ghost.
function changedByUser() {
  scheduleGaussian();
  const now = performance.now();
  if (lastCurves && now - lastInput > 400) ghost = lastCurves;
  lastInput = now;
  requestFrame();
  update();
}

function bindPair(rangeId, numberId, key) {
  const range = $(rangeId), number = $(numberId);
  const set = (raw) => {
    state[key] = raw === "" ? NaN : Number(raw);
    if (key === "sensitivity") syncShift();
    changedByUser();
  };
  range.addEventListener("input", () => { number.value = range.value; set(range.value); });
  number.addEventListener("input", () => { range.value = number.value; set(number.value); });
}

function syncShift() {
  const delta = Number.isFinite(state.sensitivity) ? Math.max(0, state.sensitivity) : 0;
  $("shift").disabled = delta === 0;
  $("shift-out").textContent = t("live.d_value", { d: fmt(state.d), r: fmt(state.dRatio) });
}

export function initLive() {
  errorBox = document.createElement("p");
  errorBox.className = "error";
  errorBox.setAttribute("role", "alert");
  errorBox.id = "live-error";
  errorBox.hidden = true;
  $("sticky").append(errorBox);
  bindPair("epsilon", "epsilon-n", "epsilon");
  bindPair("sensitivity", "sensitivity-n", "sensitivity");
  $("sensitivity-n").addEventListener("change", fitAxes);
  $("shift").addEventListener("input", (e) => { state.dRatio = Number(e.target.value); syncShift(); changedByUser(); });
  $("releases").addEventListener("input", (e) => { state.releases = Number(e.target.value); $("releases-out").textContent = String(state.releases); changedByUser(); });
  $("value").addEventListener("input", (e) => { state.value = e.target.value === "" ? NaN : Number(e.target.value); changedByUser(); });
  $("value").addEventListener("change", fitAxes);
  $("gauss-delta").addEventListener("change", (e) => { state.gaussDelta = Number(e.target.value); changedByUser(); });
  $("tamper").addEventListener("change", (e) => { state.tamper = e.target.checked; changedByUser(); });
  $("resample").addEventListener("click", () => { state.seed += 1; changedByUser(); });
  $("fit-axes").addEventListener("click", fitAxes);
  syncShift();
  requestFrame();
  if (typeof IntersectionObserver !== "undefined") {
    new IntersectionObserver((entries) => {
      gaussVisible = entries.some((e) => e.isIntersecting);
      scheduleGaussian();
    }).observe($("plot-gauss"));
  }
  return update();
}
