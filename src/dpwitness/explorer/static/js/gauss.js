// Curves drawn in the page while a slider moves: densities, grids and histograms only. The privacy
// math (the analytic Gaussian's σ for (ε, δ), its δ(ε) for a shift, interval half-widths) is the
// server's (dpwitness.privacy.accounting, sent with each /api/live answer): the page has no copy of it.

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
