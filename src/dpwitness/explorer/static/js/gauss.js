// Continuous curves drawn in the page while a slider moves: Laplace and Gaussian densities,
// log ratios, and the analytic Gaussian mechanism's σ for (ε, δ) (Balle & Wang 2018).
// The project has no Gaussian mechanism yet, so the Gaussian panel is this page's arithmetic;
// the exact witness for δ is to be wired to dpwitness.mechanisms.additive.Gaussian once it exists.

// erfc with relative error < 1.2e-7 (Numerical Recipes' erfcc), enough for δ down to 1e-12.
function erfc(x) {
  const z = Math.abs(x);
  const t = 1 / (1 + 0.5 * z);
  const r = t * Math.exp(-z * z - 1.26551223 + t * (1.00002368 + t * (0.37409196 + t * (0.09678418 + t * (-0.18628806 +
    t * (0.27886807 + t * (-1.13520398 + t * (1.48851587 + t * (-0.82215223 + t * 0.17087277)))))))));
  return x >= 0 ? r : 2 - r;
}

export const normalCdf = (x) => 0.5 * erfc(-x / Math.SQRT2);

// δ(ε) of a Gaussian of std σ for L2 sensitivity Δ: the hockey-stick divergence
// ∫ max(0, p − e^ε q) = Φ(Δ/2σ − εσ/Δ) − e^ε Φ(−Δ/2σ − εσ/Δ).
export function gaussianDelta(sigma, sensitivity, epsilon) {
  const a = sensitivity / (2 * sigma), c = (epsilon * sigma) / sensitivity;
  return Math.max(0, normalCdf(a - c) - Math.exp(epsilon) * normalCdf(-a - c));
}

// The smallest σ with δ(ε) ≤ δ (bisection on log σ; δ(ε) falls as σ grows).
export function analyticSigma(sensitivity, epsilon, delta) {
  let lo = Math.log(sensitivity * 1e-3), hi = Math.log(sensitivity * 1e3);
  for (let i = 0; i < 80; i++) {
    const mid = (lo + hi) / 2;
    if (gaussianDelta(Math.exp(mid), sensitivity, epsilon) > delta) lo = mid; else hi = mid;
  }
  return Math.exp(hi);
}

export function grid(low, high, count) {
  const out = new Array(count);
  const step = (high - low) / (count - 1);
  for (let i = 0; i < count; i++) out[i] = low + i * step;
  return out;
}

export const laplaceDensity = (z, centre, b) => Math.exp(-Math.abs(z - centre) / b) / (2 * b);
export const normalDensity = (z, centre, s) => Math.exp(-((z - centre) ** 2) / (2 * s * s)) / (s * Math.sqrt(2 * Math.PI));

// One fixed unit Laplace draw per seed (page-only illustration, not a release): u = F⁻¹(v).
export function unitDraw(seed) {
  const v = ((Math.sin(seed * 12.9898 + 78.233) * 43758.5453) % 1 + 1) % 1 || 0.5;
  return v < 0.5 ? Math.log(2 * v) : -Math.log(2 * (1 - v));
}

// Histogram of `values` over [low, high] in `count` bins, as a density (area 1 over all values).
export function histogram(values, low, high, count) {
  const edges = grid(low, high, count + 1);
  const counts = new Array(count).fill(0);
  const width = (high - low) / count;
  for (const v of values) {
    const i = Math.floor((v - low) / width);
    if (i >= 0 && i < count) counts[i] += 1;
  }
  const scale = 1 / (values.length * width);
  return { edges, counts: counts.map((c) => c * scale) };
}
