// GET a JSON endpoint; a 4xx answer becomes an Error carrying the server's message.
export async function getJSON(path, params = {}, signal = undefined) {
  const query = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== null) query.set(k, String(v));
  const response = await fetch(`/api/${path}?${query}`, { signal });
  const body = await response.json();
  if (!response.ok) throw new Error(body.detail || response.statusText);
  return body;
}

// Run `fn` once input has been quiet for `ms` milliseconds.
export function debounce(fn, ms) {
  let timer = null;
  return (...args) => {
    clearTimeout(timer);
    timer = setTimeout(() => fn(...args), ms);
  };
}
