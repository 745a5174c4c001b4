// Small SVG plotting helpers: they only draw numbers computed by the server.
const NS = "http://www.w3.org/2000/svg";
const drawers = new WeakMap();

function el(name, attrs = {}, parent = null, text = null) {
  const node = document.createElementNS(NS, name);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, String(v));
  if (text !== null) node.textContent = text;
  if (parent) parent.appendChild(node);
  return node;
}

function size(svg) {
  const box = svg.getBoundingClientRect();
  return { width: Math.max(200, box.width || 600), height: Math.max(120, box.height || 260) };
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

export function tickLabel(v) {
  const a = Math.abs(v);
  if (a !== 0 && (a >= 1e5 || a < 1e-3)) return v.toExponential(0);
  return String(Number(v.toPrecision(4)));
}

function frame(svg, spec, xr, yr) {
  svg.replaceChildren();
  const { width, height } = size(svg);
  svg.setAttribute("viewBox", `0 0 ${width} ${height}`);
  if (spec.title) svg.setAttribute("aria-label", spec.title);
  const rows = layoutLegend(spec.legendItems || [], width - (spec.yLabel ? 58 : 16) - 12);
  const m = { left: spec.yLabel ? 58 : 16, right: 12, top: 10 + 16 * rows.count, bottom: 40 };
  const w = width - m.left - m.right, h = height - m.top - m.bottom;
  const ylog = Boolean(spec.ylog);
  const ty = (v) => (ylog ? Math.log10(v) : v);
  const [y0, y1] = [ty(yr[0]), ty(yr[1])];
  const sx = (v) => m.left + ((v - xr[0]) / (xr[1] - xr[0] || 1)) * w;
  const sy = (v) => m.top + h - ((ty(v) - y0) / (y1 - y0 || 1)) * h;
  const axis = el("g", { class: "axis" }, svg);
  const xt = ticks(xr[0], xr[1], Math.max(2, Math.floor(w / 80)));
  for (const v of xt) {
    el("line", { class: "grid", x1: sx(v), x2: sx(v), y1: m.top, y2: m.top + h }, axis);
    el("text", { x: sx(v), y: m.top + h + 16, "text-anchor": "middle" }, axis, tickLabel(v));
  }
  if (!spec.noY) {
    const yt = ylog ? ticks(Math.ceil(y0), Math.floor(y1), 6).map((p) => Math.pow(10, p)) : ticks(yr[0], yr[1], Math.max(2, Math.floor(h / 45)));
    for (const v of yt) {
      el("line", { class: "grid", x1: m.left, x2: m.left + w, y1: sy(v), y2: sy(v) }, axis);
      el("text", { x: m.left - 6, y: sy(v) + 4, "text-anchor": "end" }, axis, tickLabel(v));
    }
  }
  el("line", { x1: m.left, x2: m.left + w, y1: m.top + h, y2: m.top + h }, axis);
  if (!spec.noY) el("line", { x1: m.left, x2: m.left, y1: m.top, y2: m.top + h }, axis);
  if (spec.xLabel) el("text", { x: m.left + w / 2, y: height - 6, "text-anchor": "middle" }, axis, spec.xLabel);
  if (spec.yLabel) {
    el("text", { x: 12, y: m.top + h / 2, "text-anchor": "middle", transform: `rotate(-90 12 ${m.top + h / 2})` }, axis, spec.yLabel);
  }
  return { sx, sy, m, w, h, width, height, rows };
}

// Place legend items left to right, wrapping to a new row when the plot is narrow.
function layoutLegend(items, width) {
  const placed = [];
  let x = 0, row = 0;
  for (const item of items) {
    const size = 30 + item.label.length * 6.5;
    if (x > 0 && x + size > width) { x = 0; row += 1; }
    placed.push({ ...item, x, row });
    x += size;
  }
  return { placed, count: items.length ? row + 1 : 0 };
}

function legend(svg, f) {
  const g = el("g", { class: "legend" }, svg);
  for (const item of f.rows.placed) {
    const x = f.m.left + item.x, y = 12 + 16 * item.row;
    el("line", { class: item.cls, x1: x, x2: x + 18, y1: y, y2: y }, g);
    el("text", { x: x + 22, y: y + 4 }, g, item.label);
  }
}

function render(svg, draw) {
  drawers.set(svg, draw);
  draw();
}

// Redraw every plot at its new width when the window is resized.
const observer = typeof ResizeObserver === "undefined" ? null : new ResizeObserver((entries) => {
  for (const entry of entries) {
    const draw = drawers.get(entry.target);
    if (draw) draw();
  }
});

export function linePlot(svg, spec) {
  if (observer) observer.observe(svg);
  render(svg, () => {
    const xs = spec.series.flatMap((s) => s.x);
    const ys = spec.series.flatMap((s) => s.y).filter((v) => Number.isFinite(v) && (!spec.ylog || v > 0));
    const xr = [spec.xMin ?? Math.min(...xs), spec.xMax ?? Math.max(...xs)];
    let yr = [spec.yMin ?? Math.min(...ys, ...(spec.hlines || []).map((l) => l.y)), spec.yMax ?? Math.max(...ys, ...(spec.hlines || []).map((l) => l.y))];
    if (yr[0] === yr[1]) yr = [yr[0] - 1, yr[1] + 1];
    const legendItems = spec.series.filter((s) => s.label).concat((spec.hlines || []).filter((l) => l.legend).map((l) => ({ cls: l.cls || "bound", label: l.legend })));
    const f = frame(svg, { ...spec, legendItems }, xr, yr);
    const inside = (v) => v >= yr[0] - 1e-12 && v <= yr[1] + 1e-12;
    for (const line of spec.hlines || []) {
      el("line", { class: line.cls || "bound", x1: f.m.left, x2: f.m.left + f.w, y1: f.sy(line.y), y2: f.sy(line.y) }, svg);
      if (line.label) el("text", { x: f.m.left + f.w - 4, y: f.sy(line.y) - 4, "text-anchor": "end" }, svg, line.label);
    }
    for (const line of spec.vlines || []) {
      el("line", { class: "marker", x1: f.sx(line.x), x2: f.sx(line.x), y1: f.m.top, y2: f.m.top + f.h }, svg);
      if (line.label) el("text", { x: f.sx(line.x) + 3, y: f.m.top + 12 }, svg, line.label);
    }
    for (const s of spec.series) {
      let d = "";
      let pen = false;
      for (let i = 0; i < s.x.length; i++) {
        const v = s.y[i];
        if (!Number.isFinite(v) || (spec.ylog && v <= 0) || !inside(v)) { pen = false; continue; }
        d += `${pen ? "L" : "M"}${f.sx(s.x[i]).toFixed(1)},${f.sy(v).toFixed(1)}`;
        pen = true;
      }
      el("path", { class: s.cls, d, "data-series": s.label || "" }, svg);
    }
    legend(svg, f);
  });
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
}

export function arrowFan(svg, spec) {
  if (observer) observer.observe(svg);
  render(svg, () => {
    const deltas = spec.arrows.map((a) => a.delta).concat([0, spec.delta, -spec.delta]);
    const lim = Math.max(1, ...deltas.map(Math.abs)) * 1.1;
    const f = frame(svg, { ...spec, noY: true }, [-lim, lim], [0, 1]);
    const n = spec.arrows.length;
    const rowH = f.h / (n + 1);
    el("line", { class: "marker", x1: f.sx(0), x2: f.sx(0), y1: f.m.top, y2: f.m.top + f.h }, svg);
    spec.arrows.forEach((a, i) => {
      const y = f.m.top + rowH * (i + 0.5);
      const x0 = f.sx(0), x1 = f.sx(a.delta);
      const dir = a.delta >= 0 ? 1 : -1;
      const cls = a.longest ? "arrow longest" : "arrow";
      el("path", { class: cls, d: `M${x0},${y}H${x1}` + (a.delta !== 0 ? `M${x1 - dir * 6},${y - 4}L${x1},${y}L${x1 - dir * 6},${y + 4}` : "") }, svg);
      const left = a.delta < 0;
      el("text", { x: left ? x0 + 6 : x0 - 6, y: y + 4, "text-anchor": left ? "start" : "end" }, svg, a.label);
    });
    const y = f.m.top + rowH * (n + 0.4);
    el("path", { class: "arrow longest", d: `M${f.sx(0)},${y}H${f.sx(spec.delta)}` }, svg);
    el("text", { x: f.sx(spec.delta), y: y - 6, "text-anchor": spec.delta > 0 ? "end" : "start" }, svg, `Δ = ${tickLabel(spec.delta)}`);
  });
}

export function bars(svg, spec) {
  if (observer) observer.observe(svg);
  render(svg, () => {
    const values = spec.bars.map((b) => b.value);
    const max = spec.max ?? Math.max(...values) * 1.1;
    const min = spec.log ? Math.min(...values.filter((v) => v > 0)) / 2 : 0;
    const tx = (v) => (spec.log ? Math.log10(Math.max(v, min)) : v);
    const xr = [tx(min), tx(max)];
    const f = frame(svg, { ...spec, noY: true, xLabel: spec.xLabel }, xr, [0, 1]);
    if (spec.log) {
      // relabel the ticks as powers of ten
      for (const text of svg.querySelectorAll(".axis text")) {
        const v = Number(text.textContent);
        if (Number.isFinite(v) && text.getAttribute("text-anchor") === "middle" && text.textContent !== spec.xLabel) text.textContent = tickLabel(Math.pow(10, v));
      }
    }
    const n = spec.bars.length;
    const rowH = f.h / n;
    spec.bars.forEach((b, i) => {
      const top = f.m.top + rowH * i;
      const x0 = f.sx(xr[0]), x1 = f.sx(tx(b.value));
      el("text", { x: x0 + 2, y: top + 14 }, svg, `${b.label}: ${tickLabel(b.value)}`);
      el("rect", { class: b.cls || `bar${i % 2}`, x: x0, y: top + 20, width: Math.max(2, x1 - x0), height: Math.max(6, rowH - 28) }, svg);
    });
  });
}
