// The live panel and the blue team's badge: one request per control change, then draw.
import { debounce, getJSON } from "./api.js";
import { fmt, t } from "./i18n.js";
import { linePlot } from "./plot.js";
import { changed, probe, state } from "./state.js";

const $ = (id) => document.getElementById(id);
let sequence = 0;
let errorBox = null;

function params() {
  const { epsilon, sensitivity, value, d, seed, tamper, releases } = state;
  return { epsilon, sensitivity, value, d, seed, tamper, releases };
}

export async function update() {
  const mine = ++sequence;
  const started = performance.now();
  // A setting never computed before may take a moment (the sampler's tables are built once).
  const slow = setTimeout(() => { if (mine === sequence) $("redraw").textContent = t("common.loading"); }, 150);
  let data;
  try {
    data = await getJSON("live", params());
  } catch (error) {
    if (mine === sequence) showError(error.message);
    return;
  } finally {
    clearTimeout(slow);
  }
  if (mine !== sequence) return; // a newer change is on its way
  const fetched = performance.now();
  showError(null);
  draw(data);
  const ms = performance.now() - started;
  probe.redraws.push(ms);
  probe.fetchMs.push(fetched - started);
  probe.liveVersion += 1;
  $("redraw").textContent = t("live.redraw", { ms: Math.round(ms) });
  changed();
}

function showError(message) {
  errorBox.hidden = !message;
  errorBox.textContent = message ? t("common.error", { message }) : "";
}

function draw(data) {
  const release = data.release;
  const [low, high] = release.interval;
  $("release-label").textContent = t("live.release", { seed: release.seed });
  $("out-release").textContent = fmt(release.value, 6);
  $("release-notice").textContent = release.notice;
  $("out-scale").textContent = fmt(data.scale);
  $("out-variance").textContent = fmt(data.variance);
  $("out-std").textContent = fmt(data.std);
  $("out-interval").textContent = `${fmt(low, 6)} … ${fmt(high, 6)} (± ${fmt(data.half_width)})`;
  $("out-loss").textContent = fmt(data.privacy_loss_d);
  const c = data.composition;
  $("out-composition").textContent =
    t("live.composition_value", { k: c.releases, eps: c.each, total: c.claimed_total }) +
    (data.params.tamper ? ` (${t("live.composition_real", { real: c.real_total })})` : "");
  drawBadge(data.witness);
  drawCurves(data);
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

function drawCurves(data) {
  const c = data.curves;
  $("no-noise").hidden = !c.no_noise;
  const eps = data.params.epsilon;
  $("cap-density").textContent = t("live.plot_density", { f1: c.f1, f2: c.f2 });
  $("cap-ratio").textContent = t("live.plot_ratio");
  if (c.no_noise) {
    $("plot-density").replaceChildren();
    $("plot-ratio").replaceChildren();
    return;
  }
  linePlot($("plot-density"), {
    title: t("live.plot_density", { f1: c.f1, f2: c.f2 }),
    xLabel: t("live.axis_z"), yLabel: t("live.axis_density"), yMin: 0,
    series: [{ x: c.z, y: c.density_1, cls: "s0", label: "p(z | D)" }, { x: c.z, y: c.density_2, cls: "s1", label: "p(z | D′)" }],
    vlines: [{ x: data.release.value, label: t("plot.release") }],
    legend: true,
  });
  const span = Math.max(eps, c.max_abs_log_ratio) * 1.25;
  linePlot($("plot-ratio"), {
    title: t("live.plot_ratio"),
    xLabel: t("live.axis_z"), yLabel: t("live.axis_log_ratio"), yMin: -span, yMax: span,
    series: [{ x: c.z, y: c.log_ratio, cls: "s4", label: "log p(z | D) − log p(z | D′)" }],
    hlines: [{ y: eps, label: "+ε" }, { y: -eps, label: "−ε" }],
    legend: true,
  });
}

function bindPair(rangeId, numberId, key) {
  const range = $(rangeId), number = numberId ? $(numberId) : null;
  const set = (raw) => {
    state[key] = raw === "" ? NaN : Number(raw);
    if (key === "sensitivity") syncShift();
    if (key === "d") $("shift-out").textContent = fmt(state.d);
    if (key === "releases") $("releases-out").textContent = String(state.releases);
    schedule();
  };
  range.addEventListener("input", () => { if (number) number.value = range.value; set(range.value); });
  if (number) number.addEventListener("input", () => { range.value = number.value; set(number.value); });
}

function syncShift() {
  const shift = $("shift");
  const delta = Number.isFinite(state.sensitivity) ? Math.max(0, state.sensitivity) : 0;
  shift.min = String(-delta);
  shift.max = String(delta);
  shift.step = String(delta > 0 ? delta / 20 : 1);
  shift.disabled = delta === 0;
  if (Math.abs(state.d) > delta) state.d = Math.sign(state.d) * delta || 0;
  shift.value = String(state.d);
  $("shift-out").textContent = fmt(state.d);
}

const schedule = debounce(update, 30);

export function initLive() {
  errorBox = document.createElement("p");
  errorBox.className = "error";
  errorBox.setAttribute("role", "alert");
  errorBox.id = "live-error";
  errorBox.hidden = true;
  $("controls").prepend(errorBox);
  bindPair("epsilon", "epsilon-n", "epsilon");
  bindPair("sensitivity", "sensitivity-n", "sensitivity");
  bindPair("shift", null, "d");
  bindPair("releases", null, "releases");
  $("value").addEventListener("input", (e) => { state.value = e.target.value === "" ? NaN : Number(e.target.value); schedule(); });
  $("tamper").addEventListener("change", (e) => { state.tamper = e.target.checked; update(); });
  $("resample").addEventListener("click", () => { state.seed += 1; update(); });
  syncShift();
  return update();
}
