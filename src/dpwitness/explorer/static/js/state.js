// The live panel's settings, shared with the walkthrough and the red team.
export const state = { epsilon: 0.5, sensitivity: 1, value: 42, d: 1, seed: 1, tamper: false, releases: 1 };
const listeners = [];

export function onChange(fn) {
  listeners.push(fn);
}

export function changed() {
  for (const fn of listeners) fn(state);
}

// What tests and curious users can read: timings of each redraw (ms) and a version counter.
export const probe = (window.dpwExplorer = { ready: false, redraws: [], fetchMs: [], liveVersion: 0, loadMs: null });
