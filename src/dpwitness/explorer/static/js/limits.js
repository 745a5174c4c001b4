// The parameter ranges the server enforces, embedded in the page by the server itself
// (compute.limits): every control is validated here with the same numbers before anything is asked.
const node = document.getElementById("dpw-limits");
export const LIMITS = node ? JSON.parse(node.textContent) : { epsilon: [0.01, 100], sensitivity: [0, 1e6], value: [-1e9, 1e9], releases: [1, 1000], gauss_epsilon: [0.001, 5] };

// Is `value` a number inside the range of `name`?
export function within(name, value) {
  const [low, high] = LIMITS[name];
  return typeof value === "number" && Number.isFinite(value) && value >= low && value <= high;
}
