// The live panel's settings, shared by every part of the page. d is kept as a fraction of Δ
// (dRatio), so that d follows Δ when Δ moves. `valid` is false while any control holds a value
// outside the server's range: then nothing is computed and every number derived from the setting
// says so (never the previous setting's values beside the new one).
export const state = { epsilon: 0.5, sensitivity: 1, value: 42, dRatio: 1, seed: 1, tamper: false, releases: 1, gaussDelta: 0.01, valid: true };
Object.defineProperty(state, "d", {
  get() { return Number((this.dRatio * this.sensitivity).toPrecision(6)); },
  enumerable: true,
});
const listeners = [];

export function onChange(fn) {
  listeners.push(fn);
}

export function changed() {
  for (const fn of listeners) fn(state);
}

// What tests and curious users can read: server round trips (ms), frames drawn in the page,
// a version counter per server answer drawn, the load time, and the answers dropped because they
// arrived for a setting that had moved on or been refused (their /api/… addresses).
export const probe = (window.dpwExplorer = { ready: false, redraws: [], fetchMs: [], frames: 0, liveVersion: 0, refusals: 0, loadMs: null, dropped: [] });
