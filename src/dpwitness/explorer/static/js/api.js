// The server's JSON convention (dpwitness.common.encoding): ±∞ arrive as "inf"/"-inf", NaN as null.
const infinite = (key, value) => (value === "inf" ? Infinity : value === "-inf" ? -Infinity : value);
export const readJSON = async (response) => JSON.parse(await response.text(), infinite);

// GET a JSON endpoint; a 4xx answer becomes an Error carrying the server's parameter and code
// (the page words it from its own strings table: see i18n.errorText).
export async function getJSON(path, params = {}, signal = undefined) {
  const response = await fetch(apiUrl(path, params), { signal });
  const body = await readJSON(response);
  if (!response.ok) throw refusal(response, body);
  return body;
}

// The address of a JSON endpoint with its parameters (those left undefined or null are left out).
export function apiUrl(path, params = {}) {
  const query = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== null) query.set(k, String(v));
  return `/api/${path}?${query}`;
}

export function refusal(response, body) {
  const error = new Error(body.detail || response.statusText);
  error.status = response.status;
  error.parameter = body.parameter || null;
  error.code = body.code || null;
  return error;
}

// Run `fn` once input has been quiet for `ms` milliseconds.
export function debounce(fn, ms) {
  let timer = null;
  return (...args) => {
    clearTimeout(timer);
    timer = setTimeout(() => fn(...args), ms);
  };
}
