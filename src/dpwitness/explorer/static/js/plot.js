// Small SVG plotting helpers. They draw numbers given to them; every plot gets a text
// alternative (aria-label: its title and a one-line summary of what it shows).
import { plain, t } from "./i18n.js";

const NS = "http://www.w3.org/2000/svg";
const drawers = new WeakMap();

// A new node, appended to `parent`.
function fresh(name, attrs = {}, parent = null, text = null) {
  const node = document.createElementNS(NS, name);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, String(v));
  if (text !== null) svgText(node, (node.dpwText = plain(String(text))));
  if (parent) parent.appendChild(node);
  return node;
}

// While a plot is drawn again (render), its nodes are kept: the n-th node drawn under a parent is
// the one drawn there last time when it has the same tag, with only what changed written (a drag
// redraws the live panel's four plots per frame: building them anew was most of a frame's script time and made the
// browser style every node again). `drawing` maps each parent to the node the next one drawn under
// it may reuse; what is left from there on is removed when the plot is done (finishDrawing).
let drawing = null;

function el(name, attrs = {}, parent = null, text = null) {
  if (!drawing || !parent) return fresh(name, attrs, parent, text);
  const next = drawing.has(parent) ? drawing.get(parent) : parent.firstElementChild;
  let node = next;
  if (node && node.localName === name) drawing.set(parent, node.nextElementSibling);
  else {
    node = document.createElementNS(NS, name);
    parent.insertBefore(node, next);
    drawing.set(parent, next);
  }
  let count = 0;
  for (const k in attrs) {
    const value = String(attrs[k]);
    if (node.getAttribute(k) !== value) node.setAttribute(k, value);
    count += 1;
  }
  if (node.attributes.length > count) for (const old of [...node.attributes]) if (!(old.name in attrs)) node.removeAttribute(old.name);
  const written = text === null ? null : plain(String(text));
  if ((node.dpwText ?? null) !== written) {
    node.textContent = "";
    if (written !== null) svgText(node, written);
    node.dpwText = written;
  }
  if (written === null) drawing.set(node, node.firstElementChild); // its own children are drawn by el too
  return node;
}

function finishDrawing() {
  for (const [parent, next] of drawing) {
    for (let node = next; node; ) {
      const after = node.nextElementSibling;
      if (node.parentNode === parent) node.remove();
      node = after;
    }
  }
}

// Text in a plot: "e^ε" and "e^−ε" set with a real superscript (a tspan), never a caret.
const POWER = /\^(\([^)]*\)|[−-]?[^\s=·),;]+)/g;
function svgText(node, text) {
  if (!text.includes("^")) {
    node.textContent = text;
    return;
  }
  let last = 0;
  for (const match of text.matchAll(POWER)) {
    if (match.index > last) node.appendChild(document.createTextNode(text.slice(last, match.index)));
    const sup = document.createElementNS(NS, "tspan");
    sup.setAttribute("baseline-shift", "super");
    sup.setAttribute("font-size", "75%");
    sup.textContent = match[1].replace(/^\((.*)\)$/, "$1");
    node.appendChild(sup);
    last = match.index + match[0].length;
  }
  if (last < text.length) node.appendChild(document.createTextNode(text.slice(last)));
}

const sizes = new WeakMap();
function size(svg) {
  let known = sizes.get(svg);
  if (!known) {
    const box = svg.getBoundingClientRect();
    known = { width: Math.max(200, box.width || 600), height: Math.max(120, box.height || 260) };
    // A plot drawn while detached has no size yet: its guess is not kept (see redrawPlaced).
    if (svg.isConnected && box.width > 0) sizes.set(svg, known);
  }
  return known;
}

// Draw again, at their real size, the plots under ``root`` that were drawn before it was placed in
// the page (the walkthrough builds a step off-screen, then swaps it in whole).
export function redrawPlaced(root) {
  for (const svg of root.querySelectorAll("svg")) {
    const draw = drawers.get(svg);
    if (draw && !sizes.has(svg)) draw();
  }
}

function niceStep(span, count) {
  const raw = span / Math.max(1, count);
  const power = Math.pow(10, Math.floor(Math.log10(raw)));
  const unit = raw / power;
  return (unit < 1.5 ? 1 : unit < 3 ? 2 : unit < 7 ? 5 : 10) * power;
}

function ticks(min, max, count) {
  if (!(max > min)) return [min];
  const step = niceStep(max - min, count);
  const out = [];
  for (let v = Math.ceil(min / step) * step; v <= max + step * 1e-9; v += step) out.push(Math.abs(v) < step * 1e-9 ? 0 : v);
  return out;
}

// Ticks of a log axis: powers of ten only (1, 10, 100 … never 3.162).
function decadeTicks(low, high) {
  const out = [];
  for (let p = Math.ceil(Math.log10(low) - 1e-9); p <= Math.floor(Math.log10(high) + 1e-9); p++) out.push(Math.pow(10, p));
  return out;
}

export function tickLabel(v) {
  const a = Math.abs(v);
  if (a !== 0 && (a >= 1e5 || a < 1e-3)) return v.toExponential(0);
  return String(Number(v.toPrecision(4)));
}

// A plot's accessible name: its title and its alternative text.
const labelOf = (spec) => plain([spec.title, spec.alt].filter(Boolean).join(". "));

// Empty the plot, size its viewBox to the element and label it; returns the size.
function blank(svg, label) {
  if (drawing) drawing.set(svg, svg.firstElementChild); // drawn again into its own nodes (el)
  else svg.replaceChildren();
  const { width, height } = size(svg);
  svg.setAttribute("viewBox", `0 0 ${width} ${height}`);
  svg.setAttribute("aria-label", label);
  return { width, height };
}

// The axes, grid and labels; returns the scales. `xlog`/`ylog` use log10 with decade ticks.
function frame(svg, spec, xr, yr) {
  const { width, height } = blank(svg, labelOf(spec));
  if (spec.ylog) svg.dataset.ylog = "true"; else delete svg.dataset.ylog;
  const left = spec.yLabel ? 58 : 16;
  const rows = layoutLegend(spec.legendItems || [], width - left - 12, svg);
  const m = { left, right: 12, top: 10 + 16 * rows.count, bottom: 40 };
  const w = width - m.left - m.right, h = height - m.top - m.bottom;
  const tx = (v) => (spec.xlog ? Math.log10(v) : v);
  const ty = (v) => (spec.ylog ? Math.log10(v) : v);
  const [x0, x1, y0, y1] = [tx(xr[0]), tx(xr[1]), ty(yr[0]), ty(yr[1])];
  const sx = (v) => m.left + ((tx(v) - x0) / (x1 - x0 || 1)) * w;
  const sy = (v) => m.top + h - ((ty(v) - y0) / (y1 - y0 || 1)) * h;
  const axis = el("g", { class: "axis" }, svg);
  // Categories (spec.xCategories: one name per whole x = 1, 2, …) are named, never given fractional ticks.
  const xt = spec.xCategories ? spec.xCategories.map((_, i) => i + 1) : spec.xlog ? decadeTicks(xr[0], xr[1]) : ticks(xr[0], xr[1], Math.max(2, Math.floor(w / 80)));
  for (const v of xt) {
    el("line", { class: "grid", x1: sx(v), x2: sx(v), y1: m.top, y2: m.top + h }, axis);
    fittedText(axis, { x: sx(v), y: m.top + h + 16, "text-anchor": "middle", class: "tick x" }, spec.xCategories ? spec.xCategories[v - 1] : tickLabel(v), { within: width });
  }
  if (!spec.noY) {
    const yt = spec.ylog ? decadeTicks(yr[0], yr[1]) : ticks(yr[0], yr[1], Math.max(2, Math.floor(h / 45)));
    for (const v of yt) {
      el("line", { class: "grid", x1: m.left, x2: m.left + w, y1: sy(v), y2: sy(v) }, axis);
      fittedText(axis, { x: m.left - 6, y: sy(v) + 4, "text-anchor": "end", class: "tick y" }, tickLabel(v), { room: m.left - 20 });
    }
  }
  el("line", { x1: m.left, x2: m.left + w, y1: m.top + h, y2: m.top + h }, axis);
  if (!spec.noY) el("line", { x1: m.left, x2: m.left, y1: m.top, y2: m.top + h }, axis);
  if (spec.xLabel) fittedText(axis, { x: m.left + w / 2, y: height - 6, "text-anchor": "middle", class: "axis-label x" }, spec.xLabel, { room: width - 4, within: width });
  if (spec.yLabel) {
    const middle = m.top + h / 2; // centred on the axis, within the svg's height
    fittedText(axis, { x: 12, y: middle, "text-anchor": "middle", transform: `rotate(-90 12 ${middle})`, class: "axis-label y" }, spec.yLabel, { room: 2 * Math.min(middle, height - middle) - 4 });
  }
  svg.dataset.plotTop = String(m.top);
  return { sx, sy, m, w, h, width, height, rows };
}

// --- text sizes: measured together, kept, never read between the writes that build a plot ----------
// Reading a text's size makes the browser lay the page out first if anything changed since the last
// layout. Read label by label while a plot was being built (append, measure, append, measure…), the
// live panel forced about 60 layouts per animation frame while ε was dragged (issue 29's regression).
// So the width of a text is measured once per page language and class, all the missing ones
// together (one layout), and kept for every plot: a class sets the same font in every plot svg
// (explorer.css), and getComputedTextLength is in the svg's own units, whatever its scale. The
// fitting is arithmetic on those widths. Digits count as "0" (plots set
// figures tabular, every digit one width), so a label whose number changes on every frame of a drag
// ("release at 42.13") is measured once, not once per frame.
const ESTIMATE = (text) => [...plain(text)].reduce((s, ch) => s + (ch.charCodeAt(0) > 0x2e80 ? 12 : 6.5), 0);
//: Plots are set in the system's fonts (no web font to arrive later), so a width once measured holds.
const measuredTexts = new Map(); // language + class + shape of the text → { width, font }
const SIZES_KEPT = 1024;

// The width and font size (px) of texts ([text, class] pairs) as plots draw them, measured in `svg`; width null
// while the svg is not laid out (detached) and for no text.
function textSizes(svg, texts) {
  const known = measuredTexts;
  const lang = document.documentElement.lang;
  const shape = (text) => String(text).replace(/[0-9]/g, "0");
  const key = ([text, cls]) => `${lang}\n${cls}\n${shape(text)}`;
  const missing = new Map();
  for (const item of texts) if (item[0] !== "" && !known.has(key(item))) missing.set(key(item), item);
  if (missing.size) {
    // The layout is paid for now: measure the shapes a moving number takes next as well (one digit
    // more or fewer, the sign), so that a drag that crosses 9.99 → 10.0 does not pay again.
    for (const [text, cls] of [...missing.values()]) {
      for (const near of nearShapes(shape(text))) if (!known.has(key([near, cls]))) missing.set(key([near, cls]), [near, cls]);
    }
    performance.mark("dpw-measure", { detail: [...missing.keys()] }); // bench/bench_explorer_frames.py counts these
    const probes = [...missing.values()].map(([text, cls]) => fresh("text", { x: 0, y: -100, class: cls }, svg, shape(text)));
    const sizes = probes.map((probe) => { // all reads after all writes: one layout
      try { return { width: probe.getComputedTextLength(), font: parseFloat(getComputedStyle(probe).fontSize) || 12 }; } catch { return null; }
    });
    for (const probe of probes) probe.remove();
    if (known.size + missing.size > SIZES_KEPT) known.clear();
    [...missing.keys()].forEach((k, i) => { if (sizes[i] && sizes[i].width > 0) known.set(k, sizes[i]); });
  }
  return texts.map((item) => known.get(key(item)) || { width: null, font: 12 });
}

// The shapes next to a text's (digits as "0"): its first run of digits one longer and, when longer
// than one, one shorter; without its leading minus, or with one when it starts with a digit.
function nearShapes(text) {
  const run = /0+/.exec(text);
  if (!run) return [];
  const at = run.index;
  const shapes = [text.slice(0, at) + "0" + text.slice(at)];
  if (run[0].length > 1) shapes.push(text.slice(0, at) + text.slice(at + 1));
  if (/^[-−]/.test(text)) shapes.push(text.slice(1)); // tick labels write "-", fmt() writes "−"
  else if (at === 0) shapes.push("-" + text, "−" + text);
  return shapes;
}

// A text of the plot being built that must fit, once the plot is built (settle): `room` px along its
// line (a smaller font, then squeezed; never cut off) and/or, unrotated, inside [1, within − 1]
// horizontally (moved in, never clipped by the svg's box). `probe`: the class it is measured with.
let toFit = [];
function fittedText(parent, attrs, text, { room, within, probe = attrs.class }) {
  const node = el("text", attrs, parent, text);
  toFit.push({ node, text: String(text), probe, anchor: attrs["text-anchor"] || "start", x: Number(attrs.x), room, within });
  return node;
}

function settle(svg) {
  const jobs = toFit;
  toFit = [];
  const sizes = textSizes(svg, jobs.map((job) => [job.text, job.probe]));
  jobs.forEach(({ node, anchor, x, room, within }, i) => {
    const { width, font } = sizes[i];
    if (!(width > 0)) return; // not laid out: drawn again once placed (redrawPlaced)
    let scale = 1;
    if (room > 0 && width > room) {
      node.style.fontSize = `${Math.max(9, (font * room) / width)}px`;
      node.setAttribute("textLength", String(room)); // exactly `room`, also below the 9 px floor
      node.setAttribute("lengthAdjust", "spacingAndGlyphs");
      scale = room / width;
    }
    if (within === undefined) return;
    const start = anchor === "middle" ? x - width / 2 : anchor === "end" ? x - width : x;
    const left = x + (start - x) * scale, right = left + width * scale; // shrunk about its anchor
    if (left < 1) node.setAttribute("x", String(x + (1 - left)));
    else if (right > within - 1) node.setAttribute("x", String(x - (right - (within - 1))));
  });
}

// Place legend items left to right above the plot area, wrapping when the plot is narrow.
function layoutLegend(items, width, svg) {
  const placed = [];
  let x = 0, row = 0;
  const sizes = textSizes(svg, items.map((item) => [item.label, "legend-probe"]));
  for (const [i, item] of items.entries()) {
    const cost = 30 + (sizes[i].width ?? ESTIMATE(item.label));
    if (x > 0 && x + cost > width) { x = 0; row += 1; }
    placed.push({ ...item, x, row });
    x += cost;
  }
  return { placed, count: items.length ? row + 1 : 0 };
}

function legend(svg, f) {
  const g = el("g", { class: "legend" }, svg);
  for (const item of f.rows.placed) {
    const x = f.m.left + item.x, y = 12 + 16 * item.row;
    if (item.swatch === "rect") el("rect", { class: item.cls, x, y: y - 5, width: 18, height: 10 }, g);
    else if (item.swatch === "dot") el("circle", { class: item.cls, cx: x + 9, cy: y, r: 4 }, g);
    else el("line", { class: item.cls, x1: x, x2: x + 18, y1: y, y2: y }, g);
    fittedText(g, { x: x + 22, y: y + 4, class: item.id ? `label-${item.id}` : "" }, item.label, { room: f.width - (x + 22) - 2, probe: "legend-probe" });
  }
}

function render(svg, draw) {
  const drawAndFit = () => {
    const outer = drawing;
    drawing = new Map();
    try {
      draw();
      finishDrawing();
    } finally {
      drawing = outer;
      settle(svg);
    }
  };
  drawers.set(svg, drawAndFit);
  delete svg.dataset.empty;
  drawAndFit();
}

// A plot with nothing to show for this setting: no old curve left, and a sentence saying why.
export function emptyPlot(svg, message) {
  drawers.delete(svg);
  const { width, height } = blank(svg, message);
  svg.dataset.empty = "true";
  el("text", { x: width / 2, y: height / 2, "text-anchor": "middle", class: "empty-note" }, svg, message);
  tables.set(svg, null);
  refreshTable(svg);
}

// --- a data table behind every plot (built when opened, from the numbers last drawn) ----------------
const tables = new WeakMap();
const TABLE_ROWS = 11;

function sampleIndices(n) {
  if (n <= TABLE_ROWS) return [...Array(n).keys()];
  return Array.from({ length: TABLE_ROWS }, (_, i) => Math.round((i * (n - 1)) / (TABLE_ROWS - 1)));
}

function cell(tag, text, attrs = {}) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, v);
  node.textContent = text;
  return node;
}

const num = (v) => (typeof v === "number" && Number.isFinite(v) ? tickLabel(v) : "—");

// Rows of the table for a line plot: x and every labelled series (and histogram, and points).
function lineRows(spec) {
  const series = (spec.series || []).filter((s) => s.label && s.x && s.x.length > 2);
  if (!series.length) {
    if (spec.bins) {
      const b = spec.bins;
      return { head: [plain(spec.xLabel || "x"), plain(b.label || "")], rows: b.counts.map((c, i) => [`${num(b.edges[i])} … ${num(b.edges[i + 1])}`, num(c)]) };
    }
    const points = (spec.series || []).filter((s) => s.label);
    return { head: [plain(spec.xLabel || "x"), plain(spec.yLabel || "y")], rows: points.map((s) => [num(s.x[0]), `${num(s.y[s.y.length - 1])} (${plain(s.label)})`]) };
  }
  const first = series[0];
  const idx = sampleIndices(first.x.length);
  const head = [plain(spec.xLabel || "x"), ...series.map((s) => plain(s.label))];
  const rows = idx.map((i) => [num(first.x[i]), ...series.map((s) => (s.y.length === first.y.length ? num(s.y[i]) : "—"))]);
  return { head, rows };
}

function refreshTable(svg) {
  const details = svg.nextElementSibling && svg.nextElementSibling.classList.contains("plot-data") ? svg.nextElementSibling : null;
  if (!details || !details.open) return;
  const data = tables.get(svg);
  const body = details.querySelector(".table-wrap");
  body.replaceChildren();
  if (!data) { body.append(cell("p", svg.getAttribute("aria-label") || "")); return; }
  const table = document.createElement("table");
  table.className = "sheet";
  table.append(cell("caption", plain(data.caption)));
  const tr = document.createElement("tr");
  for (const h of data.head) tr.append(cell("th", h, { scope: "col" }));
  table.append(tr);
  for (const row of data.rows) {
    const line = document.createElement("tr");
    row.forEach((v, i) => line.append(cell(i === 0 ? "th" : "td", v, i === 0 ? { scope: "row" } : {})));
    table.append(line);
  }
  body.append(table);
}

// Keep `data` ({caption, head, rows}) as the table behind `svg`; the <details> is made once.
function attachTable(svg, data) {
  tables.set(svg, data);
  let details = svg.nextElementSibling;
  if (!details || !details.classList || !details.classList.contains("plot-data")) {
    if (!svg.parentNode) return;
    details = document.createElement("details");
    details.className = "plot-data";
    details.append(cell("summary", t("plot.data_table")));
    const wrap = document.createElement("div");
    wrap.className = "table-wrap";
    wrap.tabIndex = 0;
    details.append(wrap);
    details.addEventListener("toggle", () => refreshTable(svg));
    svg.after(details);
  }
  refreshTable(svg);
}

// Redraw every plot at its new size when the window is resized.
const observer = typeof ResizeObserver === "undefined" ? null : new ResizeObserver((entries) => {
  for (const entry of entries) {
    sizes.delete(entry.target);
    const draw = drawers.get(entry.target);
    if (draw) draw();
  }
});

function pathOf(f, xs, ys, spec, yr) {
  let d = "";
  let pen = false;
  const inside = (v) => v >= yr[0] - 1e-12 && v <= yr[1] + 1e-12;
  for (let i = 0; i < xs.length; i++) {
    let v = ys[i];
    if (!Number.isFinite(v) || (spec.ylog && v <= 0)) { pen = false; continue; }
    if (!inside(v)) {
      if (!spec.clip) { pen = false; continue; }
      v = Math.min(Math.max(v, yr[0]), yr[1]);
    }
    d += `${pen ? "L" : "M"}${f.sx(xs[i]).toFixed(1)},${f.sy(v).toFixed(1)}`;
    pen = true;
  }
  return d;
}

// Lines (series), filled areas (areas: y from `low` to `high`), histogram bars (bins),
// horizontal and vertical reference lines. Markers' labels go in the legend, never on a curve.
export function linePlot(svg, spec) {
  if (observer) observer.observe(svg);
  render(svg, () => {
    const series = spec.series || [];
    let xr = [spec.xMin, spec.xMax];
    if (xr[0] === undefined || xr[1] === undefined) {
      const xs = series.flatMap((s) => s.x);
      xr = [spec.xMin ?? Math.min(...xs), spec.xMax ?? Math.max(...xs)];
    }
    let yr = [spec.yMin, spec.yMax];
    if (yr[0] === undefined || yr[1] === undefined) {
      const ys = series.flatMap((s) => s.y).filter((v) => Number.isFinite(v) && (!spec.ylog || v > 0));
      const hs = (spec.hlines || []).map((l) => l.y);
      yr = [spec.yMin ?? Math.min(...ys, ...hs), spec.yMax ?? Math.max(...ys, ...hs)];
    }
    if (yr[0] === yr[1]) yr = [yr[0] - 1, yr[1] + 1];
    const legendItems = [
      ...(spec.areas || []).filter((a) => a.label).map((a) => ({ cls: a.cls, label: a.label, swatch: "rect" })),
      ...(spec.bins && spec.bins.label ? [{ cls: spec.bins.cls || "hist", label: spec.bins.label, swatch: "rect" }] : []),
      ...series.filter((s) => s.label).map((s) => ({ cls: s.cls, label: s.label })),
      ...(spec.pointsLabel ? [{ cls: spec.pointsClass || "dot", label: spec.pointsLabel, swatch: "dot" }] : []),
      ...(spec.hlines || []).filter((l) => l.legend).map((l) => ({ cls: l.cls || "bound", label: l.legend })),
      ...(spec.vlines || []).filter((l) => l.label).map((l) => ({ cls: l.cls || "marker", label: l.label, id: l.id })),
    ];
    const f = frame(svg, { ...spec, legendItems }, xr, yr);
    const clipId = `clip-${svg.id || Math.random().toString(36).slice(2)}`;
    const defs = el("defs", {}, svg);
    el("rect", { x: f.m.left, y: f.m.top, width: f.w, height: f.h }, el("clipPath", { id: clipId }, defs));
    const body = el("g", { "clip-path": `url(#${clipId})` }, svg);
    if (spec.bins) {
      const b = spec.bins;
      let d = "";
      for (let i = 0; i < b.counts.length; i++) {
        if (!(b.counts[i] > 0)) continue;
        const xa = f.sx(b.edges[i]), xb = f.sx(b.edges[i + 1]), y = f.sy(Math.min(b.counts[i], yr[1]));
        const base = f.sy(Math.min(Math.max(yr[0], 0), yr[1])).toFixed(1); // bars stand on 0
        d += `M${xa.toFixed(1)},${base}V${y.toFixed(1)}H${xb.toFixed(1)}V${base}Z`;
      }
      el("path", { class: b.cls || "hist", d, "data-hist": "true" }, body);
    }
    for (const a of spec.areas || []) {
      let d = "";
      const n = a.x.length;
      let open = false;
      let back = [];
      const flush = () => {
        if (open) { d += back.reverse().join("") + "Z"; open = false; back = []; }
      };
      for (let i = 0; i < n; i++) {
        if (a.high[i] > a.low[i]) {
          const x = f.sx(a.x[i]).toFixed(1);
          const yh = f.sy(Math.min(a.high[i], yr[1])).toFixed(1), yl = f.sy(Math.max(a.low[i], yr[0])).toFixed(1);
          d += `${open ? "L" : "M"}${x},${yh}`;
          back.push(`L${x},${yl}`);
          open = true;
        } else flush();
      }
      flush();
      el("path", { class: a.cls, d, "data-area": a.id || "" }, body);
    }
    const labelled = []; // [y, right end] of the reference lines' labels already placed
    const hlines = (spec.hlines || []).filter((line) => line.y >= yr[0] && line.y <= yr[1]);
    const labelSizes = textSizes(svg, hlines.map((line) => [line.label || "", "hlabel"]));
    for (const [i, line] of hlines.entries()) {
      el("line", { class: line.cls || "bound", x1: f.m.left, x2: f.m.left + f.w, y1: f.sy(line.y), y2: f.sy(line.y), "data-h": line.id || "" }, body);
      if (!line.label) continue;
      // two lines close together (ε and kε at k = 1): the second label goes left of the first
      let right = f.m.left + f.w - 4;
      for (const [y, end] of labelled) if (Math.abs(y - f.sy(line.y)) < 14) right = Math.min(right, end - 10);
      el("text", { x: right, y: f.sy(line.y) - 4, "text-anchor": "end", class: "hlabel" }, body, line.label);
      labelled.push([f.sy(line.y), right - (labelSizes[i].width ?? ESTIMATE(line.label))]);
    }
    for (const line of spec.vlines || []) {
      el("line", { class: line.cls || "marker", x1: f.sx(line.x), x2: f.sx(line.x), y1: f.m.top, y2: f.m.top + f.h, "data-v": line.id || "" }, body);
    }
    for (const s of series) {
      el("path", { class: s.cls, d: pathOf(f, s.x, s.y, spec, yr), "data-series": s.label || s.id || "" }, body);
    }
    for (const p of spec.points || []) {
      el("circle", { cx: f.sx(p.x), cy: f.sy(p.y), r: p.r || 4, class: p.cls || "dot" }, body);
    }
    legend(svg, f);
  });
  attachTable(svg, { caption: spec.title || "", ...lineRows(spec) });
}

export function numberLine(svg, spec) {
  if (observer) observer.observe(svg);
  render(svg, () => {
    const xs = spec.points.map((p) => p.x);
    const lo = Math.min(...xs), hi = Math.max(...xs);
    const pad = Math.max((hi - lo) * 0.25, 1);
    const f = frame(svg, { ...spec, noY: true }, [lo - pad, hi + pad], [0, 1]);
    const y = f.m.top + f.h * 0.6;
    if (spec.bracket) {
      const [a, b, label] = spec.bracket;
      const yb = f.m.top + f.h * 0.25;
      el("path", { class: "arrow longest", d: `M${f.sx(a)},${yb + 8}V${yb}H${f.sx(b)}V${yb + 8}` }, svg);
      el("text", { x: (f.sx(a) + f.sx(b)) / 2, y: yb - 6, "text-anchor": "middle" }, svg, label);
    }
    spec.points.forEach((p, i) => {
      el("circle", { cx: f.sx(p.x), cy: y, r: 6, class: p.cls || "", fill: ["#1f6fd1", "#d9731a", "#6a3fb5"][i % 3] }, svg);
      el("text", { x: f.sx(p.x), y: y + 22 + (i % 2) * 14, "text-anchor": "middle" }, svg, p.label);
    });
  });
  attachTable(svg, { caption: spec.title || "", head: [plain(spec.xLabel || ""), ""], rows: spec.points.map((p) => [plain(p.label), tickLabel(p.x)]) });
}

// One arrow per possible one-person change; the longest arrow on this table is orange and
// labelled with its length; Δ (the worst case over every table) is the separate red bar.
export function arrowFan(svg, spec) {
  if (observer) observer.observe(svg);
  render(svg, () => {
    const deltas = spec.arrows.map((a) => a.delta).concat([0, spec.delta, -spec.delta]);
    const lim = Math.max(1, ...deltas.map(Math.abs)) * 1.1;
    const legendItems = [{ cls: "arrow", label: spec.legendArrow }, { cls: "arrow longest-here", label: spec.legendLongest }, { cls: "arrow delta", label: spec.legendDelta }];
    const f = frame(svg, { ...spec, noY: true, legendItems }, [-lim, lim], [0, 1]);
    const n = spec.arrows.length;
    const rowH = f.h / (n + 1);
    el("line", { class: "marker", x1: f.sx(0), x2: f.sx(0), y1: f.m.top, y2: f.m.top + f.h }, svg);
    spec.arrows.forEach((a, i) => {
      const y = f.m.top + rowH * (i + 0.5);
      const x0 = f.sx(0), x1 = f.sx(a.delta);
      const dir = a.delta >= 0 ? 1 : -1;
      const cls = a.longest ? "arrow longest-here" : "arrow";
      el("path", { class: cls, "data-longest": String(Boolean(a.longest)), d: `M${x0},${y}H${x1}` + (a.delta !== 0 ? `M${x1 - dir * 6},${y - 4}L${x1},${y}L${x1 - dir * 6},${y + 4}` : "") }, svg);
      const left = a.delta < 0;
      el("text", { x: left ? x0 + 6 : x0 - 6, y: y + 4, "text-anchor": left ? "start" : "end" }, svg, a.longest ? `${a.label} (${tickLabel(Math.abs(a.delta))})` : a.label);
    });
    const y = f.m.top + rowH * (n + 0.4);
    el("path", { class: "arrow delta", d: `M${f.sx(0)},${y}H${f.sx(spec.delta)}`, "data-delta": String(spec.delta) }, svg);
    el("text", { x: f.sx(spec.delta), y: y - 6, "text-anchor": spec.delta > 0 ? "end" : "start" }, svg, `Δ = ${tickLabel(spec.delta)}`);
    legend(svg, f);
  });
  attachTable(svg, { caption: spec.title || "", head: [plain(spec.legendArrow || ""), plain(spec.xLabel || "")], rows: [...spec.arrows.map((a) => [plain(a.label), tickLabel(a.delta)]), ["Δ", tickLabel(spec.delta)]] });
}

// Horizontal bars; with `log`, a log10 axis whose ticks are powers of ten.
export function bars(svg, spec) {
  if (observer) observer.observe(svg);
  render(svg, () => {
    const values = spec.bars.map((b) => b.value);
    let xr;
    if (spec.log) {
      const positive = values.filter((v) => v > 0);
      xr = [Math.pow(10, Math.floor(Math.log10(Math.min(...positive)))), Math.pow(10, Math.ceil(Math.log10(Math.max(...positive)) + 1e-9))];
    } else xr = [0, spec.max ?? Math.max(...values) * 1.1];
    const f = frame(svg, { ...spec, noY: true, xlog: Boolean(spec.log) }, xr, [0, 1]);
    const n = spec.bars.length;
    const rowH = f.h / n;
    spec.bars.forEach((b, i) => {
      const top = f.m.top + rowH * i;
      const x0 = f.sx(xr[0]), x1 = f.sx(Math.max(b.value, xr[0]));
      el("text", { x: x0 + 2, y: top + 14 }, svg, `${b.label}: ${b.text || tickLabel(b.value)}`);
      el("rect", { class: b.cls || `bar${i % 2}`, x: x0, y: top + 20, width: Math.max(2, x1 - x0), height: Math.max(6, rowH - 28) }, svg);
    });
  });
  attachTable(svg, { caption: spec.title || "", head: [plain(spec.xLabel || ""), ""], rows: spec.bars.map((b) => [plain(b.label), b.text || tickLabel(b.value)]) });
}

// A diagram of boxes joined by arrows, left to right (a column when narrow). The svg is sized to
// its boxes (never 240 px tall boxes with small text, never arrows drawn across the text), and each
// box is as wide as its longest line needs.
const FLOW_LINE = 20, FLOW_PAD = 12, FLOW_GAP = 22;
export function flow(svg, spec) {
  if (observer) observer.observe(svg);
  render(svg, () => {
    const n = spec.boxes.length;
    const most = Math.max(...spec.boxes.map((b) => b.lines.length));
    const bh = most * FLOW_LINE + 2 * FLOW_PAD;
    const { width } = blank(svg, labelOf(spec));
    const vertical = width < 720;
    const wanted = vertical ? n * bh + (n - 1) * FLOW_GAP + 4 : bh + 8;
    svg.style.height = `${wanted}px`;
    svg.setAttribute("viewBox", `0 0 ${width} ${wanted}`); // drawn at its real size: 15 px text is 15 px
    const bw = vertical ? Math.min(width - 4, 360) : (width - FLOW_GAP * (n - 1) - 4) / n;
    spec.boxes.forEach((b, i) => {
      const x = vertical ? (width - bw) / 2 : 2 + i * (bw + FLOW_GAP), y = vertical ? 2 + i * (bh + FLOW_GAP) : 4;
      el("rect", { x, y, width: bw, height: bh, rx: 8, class: `box ${b.cls || ""}` }, svg);
      b.lines.forEach((line, j) => {
        el("text", { x: x + bw / 2, y: y + FLOW_PAD + FLOW_LINE * (j + 0.5) + 5 + ((most - b.lines.length) * FLOW_LINE) / 2, "text-anchor": "middle", class: j === 0 ? "box-title flow-text" : "flow-text" }, svg, line);
      });
      if (i < n - 1) {
        // in the gap between two boxes only: from one box's edge to the next one's
        const d = vertical ? `M${x + bw / 2},${y + bh + 2}V${y + bh + FLOW_GAP - 2}m-5,-6l5,6l5,-6` : `M${x + bw + 2},${y + bh / 2}H${x + bw + FLOW_GAP - 2}m-6,-5l6,5l-6,5`;
        el("path", { class: "arrow", d }, svg);
      }
    });
  });
}

// A strip of consecutive cells in rows (e.g. doubles × inputs): filled where `on`, a mark on columns `marked`.
export function cells(svg, spec) {
  if (observer) observer.observe(svg);
  render(svg, () => {
    const { width, height } = blank(svg, labelOf(spec));
    const left = 70, top = 40, n = spec.columns, rows = spec.rows.length; // row 1: the legend; row 2: the ∞ marks
    const cw = (width - left - 8) / n, ch = Math.min(28, (height - top - 30) / rows);
    spec.rows.forEach((row, r) => {
      el("text", { x: left - 6, y: top + r * ch + ch * 0.65, "text-anchor": "end" }, svg, row.label);
      row.on.forEach((on, i) => {
        el("rect", { x: left + i * cw + 1, y: top + r * ch + 2, width: Math.max(1, cw - 2), height: ch - 4, class: on ? `cell on ${row.cls}` : "cell off", "data-on": String(on) }, svg);
      });
    });
    (spec.marked || []).forEach((m, i) => {
      if (m) el("text", { x: left + i * cw + cw / 2, y: top - 6, "text-anchor": "middle", class: "cell-mark" }, svg, "∞");
    });
    // the axis label from the svg's left edge, on two lines (split after its comma) where one is too long
    const below = top + rows * ch + 18, room = width - 8, label = spec.xLabel || "";
    const parts = (textSizes(svg, [[label, "small"]])[0].width ?? ESTIMATE(label)) > room && label.includes(", ") ? [label.slice(0, label.indexOf(", ") + 1), label.slice(label.indexOf(", ") + 2)] : [label];
    parts.forEach((part, i) => fittedText(svg, { x: 4, y: below + 14 * i, class: "small" }, part, { room }));
    fittedText(svg, { x: width - 4, y: 13, "text-anchor": "end", class: "small cells-legend" }, spec.legend || "", { room: width - 8 });
  });
  attachTable(svg, { caption: spec.title || "", head: ["", ...spec.rows.map((r) => plain(r.label))], rows: spec.rows[0].on.map((_, i) => [String(i), ...spec.rows.map((r) => (r.on[i] ? "✔" : "—"))]) });
}
