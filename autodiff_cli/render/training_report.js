// The training report's script (render/training_report.py): draws the curves, the model over its
// inputs, the parameter histograms and heat maps from the JSON in #report-data.  Loads nothing.
"use strict";
(function () {
  const data = JSON.parse(document.getElementById("report-data").textContent);
  const SVG = "http://www.w3.org/2000/svg";
  // The colours come from render/palette.py, as the graph's and the step-through page's do: a
  // value blue and a gradient vermillion, a negative entry blue and a positive one orange.
  const PALETTE = data.palette, COLOURS = PALETTE.series;
  const W = 560, H = 240, PAD = {left: 64, right: 12, top: 12, bottom: 34};

  function el(name, attrs, parent, ns) {
    const node = ns ? document.createElementNS(SVG, name) : document.createElement(name);
    for (const key in attrs) node.setAttribute(key, attrs[key]);
    if (parent) parent.appendChild(node);
    return node;
  }
  function text(parent, x, y, words, attrs) {
    const node = el("text", Object.assign({x: x, y: y}, attrs || {}), parent, true);
    node.textContent = words;
    return node;
  }
  function fmt(x) {
    if (x === null || x === undefined) return "";
    const a = Math.abs(x);
    if (a !== 0 && (a < 1e-3 || a >= 1e5)) return x.toExponential(2);
    return String(Number(x.toPrecision(4)));
  }

  // --- line charts -------------------------------------------------------------------------------

  // Round ticks: multiples of 1, 2 or 5 x 10^k, about `count` of them over [lo, hi], and the
  // axis widened to the ticks around the data, so that every tick sits on a round number.
  function niceStep(span, count) {
    const raw = span / Math.max(1, count), power = Math.pow(10, Math.floor(Math.log10(raw)));
    const unit = raw / power;
    return (unit <= 1 ? 1 : unit <= 2 ? 2 : unit <= 5 ? 5 : 10) * power;
  }
  function niceTicks(lo, hi, count) {
    const step = niceStep(hi - lo, count);
    const first = Math.floor(lo / step + 1e-9), last = Math.ceil(hi / step - 1e-9);
    const ticks = [];
    for (let k = first; k <= last; k++) ticks.push(k * step);
    return {ticks: ticks, step: step};
  }
  // Round ticks inside a fixed range (a picture computed over it, a histogram's bins): no
  // widening, so the ends themselves get no label unless they are round.
  function insideTicks(lo, hi, count) {
    if (!(hi > lo)) return {ticks: [lo], step: Math.abs(lo) || 1};
    const step = niceStep(hi - lo, count), slack = (hi - lo) * 1e-9;
    const ticks = [];
    for (let k = Math.ceil((lo - slack) / step); k * step <= hi + slack; k++) ticks.push(k * step);
    return {ticks: ticks, step: step};
  }
  // A tick's label: as many decimals as the step needs, so 0.25 and 0.5 but never 0.5885;
  // powers of ten beyond 1e-3 to 1e5 in e-notation (2e-4, 1e6).
  function tickLabel(value, step) {
    if (Math.abs(value) < step * 1e-6) return "0";
    const a = Math.abs(value);
    if (a < 1e-3 || a >= 1e5) {
      const digits = Math.max(0, Math.round(Math.log10(a)) - Math.floor(Math.log10(step) + 1e-9));
      return value.toExponential(Math.min(digits, 3)).replace(/\.?0+e/, "e").replace("e+", "e");
    }
    const decimals = Math.max(0, -Math.floor(Math.log10(step) + 1e-9));
    return value.toFixed(decimals);
  }
  // Log axis ticks (exponents): every decade, or every few over many; 2 and 5 between them
  // when the axis spans less than two decades.
  function logTicks(lo, hi) {
    const first = Math.floor(lo + 1e-9), last = Math.ceil(hi - 1e-9);
    const every = Math.max(1, Math.ceil((last - first) / 6));
    const ticks = [];
    for (let k = first; k <= last; k += every) ticks.push(k);
    if (last - first < 2) {
      for (let k = first; k < last; k++) ticks.push(k + Math.log10(2), k + Math.log10(5));
      ticks.sort((a, b) => a - b);
    }
    return {ticks: ticks, lo: first, hi: Math.max(last, first + 1)};
  }
  function logLabel(exponent) {
    const value = Math.pow(10, exponent), rounded = Number(value.toPrecision(1));
    return rounded >= 1e-3 && rounded < 1e5 ? String(rounded) : rounded.toExponential(0).replace("e+", "e");
  }

  // series: [{name, xs, ys, dashed}]; a log chart leaves out values that are not positive.  The
  // key is drawn under the plot, where it covers no curve.
  function lineChart(container, series, log, yLabel) {
    container.textContent = "";
    const svg = el("svg", {viewBox: `0 0 ${W} ${H}`, width: W, height: H, role: "img",
                          "aria-label": yLabel}, container, true);
    const keep = (y) => y !== null && isFinite(y) && (!log || y > 0);
    let x0 = Infinity, x1 = -Infinity, y0 = Infinity, y1 = -Infinity;
    for (const s of series) {
      s.xs.forEach((x, i) => {
        if (!keep(s.ys[i])) return;
        const y = log ? Math.log10(s.ys[i]) : s.ys[i];
        x0 = Math.min(x0, x); x1 = Math.max(x1, x); y0 = Math.min(y0, y); y1 = Math.max(y1, y);
      });
    }
    if (!isFinite(x0)) { text(svg, W / 2, H / 2, "nothing to draw", {"text-anchor": "middle"}); return svg; }
    if (x1 === x0) { x1 = x0 + 1; }
    if (y1 === y0) { y0 -= log ? 1 : Math.max(0.5, Math.abs(y0) / 2); y1 += log ? 1 : Math.max(0.5, Math.abs(y1) / 2); }
    // steps: round ticks from 0 (the first step is 1, beside 0)
    const xTicks = niceTicks(x0 <= 1 ? 0 : x0, x1, 5);
    x0 = xTicks.ticks[0]; x1 = xTicks.ticks[xTicks.ticks.length - 1];
    let yTicks, yText;
    if (log) {
      const found = logTicks(y0, y1);
      yTicks = found.ticks; y0 = found.lo; y1 = found.hi;
      yText = logLabel;
    } else {
      const found = niceTicks(y0, y1, 4);
      yTicks = found.ticks; y0 = yTicks[0]; y1 = yTicks[yTicks.length - 1];
      yText = (y) => tickLabel(y, found.step);
    }
    const px = (x) => PAD.left + (x - x0) / (x1 - x0) * (W - PAD.left - PAD.right);
    const py = (y) => H - PAD.bottom - (y - y0) / (y1 - y0) * (H - PAD.top - PAD.bottom);
    el("rect", {x: PAD.left, y: PAD.top, width: W - PAD.left - PAD.right, height: H - PAD.top - PAD.bottom,
                class: "frame"}, svg, true);
    yTicks.forEach((y) => {
      text(svg, PAD.left - 4, py(y) + 4, yText(y), {"text-anchor": "end", class: "tick y-tick"});
      el("line", {x1: PAD.left - 3, x2: PAD.left, y1: py(y), y2: py(y), class: "frame"}, svg, true);
    });
    xTicks.ticks.forEach((x) => {
      text(svg, px(x), H - PAD.bottom + 14, tickLabel(x, xTicks.step), {"text-anchor": "middle", class: "tick x-tick"});
      el("line", {x1: px(x), x2: px(x), y1: H - PAD.bottom, y2: H - PAD.bottom + 3, class: "frame"}, svg, true);
    });
    text(svg, (W + PAD.left) / 2, H - 4, "step", {"text-anchor": "middle", class: "tick"});
    const key = el("div", {class: "key"}, container);
    series.forEach((s, k) => {
      const points = [];
      s.xs.forEach((x, i) => { if (keep(s.ys[i])) points.push(`${px(x).toFixed(1)},${py(log ? Math.log10(s.ys[i]) : s.ys[i]).toFixed(1)}`); });
      const colour = s.colour || COLOURS[k % COLOURS.length];
      el("polyline", {points: points.join(" "), fill: "none", stroke: colour, "stroke-width": 1.6,
                      "stroke-dasharray": s.dashed ? "5 3" : "none", class: "series", "data-name": s.name}, svg, true);
      const entry = el("span", {class: "key-entry"}, key);
      const swatch = el("svg", {width: 22, height: 10, "aria-hidden": "true"}, entry, true);
      el("line", {x1: 1, x2: 21, y1: 5, y2: 5, stroke: colour, "stroke-width": 2, "stroke-dasharray": s.dashed ? "5 3" : "none"},
         swatch, true);
      el("span", {}, entry).textContent = s.name;
    });
    svg.dataset.log = log ? "true" : "false";
    return svg;
  }

  const logBox = document.getElementById("log-scale");
  function drawCurves() {
    const log = logBox.checked;
    const series = [];
    if (data.history_steps.length) series.push({name: "training loss", xs: data.history_steps, ys: data.history_loss});
    else series.push({name: "training loss", xs: data.steps, ys: data.train_loss});
    if (data.validation_loss.some((v) => v !== null)) {
      series.push({name: "validation loss", xs: data.steps, ys: data.validation_loss, dashed: true});
    }
    lineChart(document.getElementById("loss-chart"), series, log, "loss by step");
    const metrics = document.getElementById("metric-charts");
    metrics.textContent = "";
    // A metric and its validation_ twin share a chart, as the losses do.
    const names = Object.keys(data.metrics).sort();
    names.filter((name) => !(name.startsWith("validation_") && names.includes(name.slice(11)))).forEach((name) => {
      const box = el("div", {class: "chart"}, metrics);
      el("h3", {}, box).textContent = name;
      const holder = el("div", {}, box);
      const series = [{name: name, xs: data.steps, ys: data.metrics[name]}];
      const twin = "validation_" + name;
      if (names.includes(twin)) series.push({name: "validation " + name, xs: data.steps, ys: data.metrics[twin], dashed: true});
      lineChart(holder, series, log, name + " by step");
    });
  }
  logBox.addEventListener("change", drawCurves);

  function drawGradientNorms() {
    const series = [{name: "all parameters", xs: data.steps, ys: data.grad_norm, colour: "#111"}];
    data.groups.slice(0, 9).forEach((g) => series.push({name: g.name, xs: data.kept_steps, ys: g.grad_norm, dashed: true}));
    lineChart(document.getElementById("grad-chart"), series, true, "gradient norm by step (log scale)");
    const box = document.getElementById("activity");
    if (!data.activity.length) return;
    el("h3", {}, box).textContent = `Activation layers at step ${data.activity_step}`;
    const table = el("table", {}, box);
    const head = el("tr", {}, el("thead", {}, table));
    ["layer", "op", "units", "dead (relu)", "share at 0 (relu)", "share near a limit (tanh, sigmoid)"].forEach((h) => {
      el("th", {}, head).textContent = h;
    });
    const body = el("tbody", {}, table);
    data.activity.forEach((a) => {
      const row = el("tr", {}, body);
      [a.name, a.op, a.units, a.op === "relu" ? a.dead : "", a.op === "relu" ? fmt(a.zero_share) : "",
       a.op === "relu" ? "" : fmt(a.near_limit)].forEach((v) => { el("td", {}, row).textContent = v; });
    });
  }

  // --- the model over its inputs -----------------------------------------------------------------

  const SIDE = 360;
  const view = data.view;
  let surfaceRange = null;
  // A frame's values: sent as integer steps of its range (render/training_report.py, quantized).
  function decoded(frame) {
    if (Array.isArray(frame)) return frame.map((c) => (c < 0 ? null : c));  // class numbers
    const span = (frame.hi - frame.lo) / data.quant;
    return frame.q.map((q) => (q < 0 ? null : frame.lo + q * span));
  }
  if (view) view.frames = view.frames.map(decoded);
  if (view && view.kind === "surface") {
    let lo = Infinity, hi = -Infinity;
    for (const f of view.frames) for (const v of f) if (v !== null) { lo = Math.min(lo, v); hi = Math.max(hi, v); }
    for (const p of view.points) { lo = Math.min(lo, p[2]); hi = Math.max(hi, p[2]); }
    surfaceRange = hi > lo ? [lo, hi] : [lo - 1, lo + 1];
  }
  function ramp(t) { return `rgb(${rampRgb(t).join(",")})`; }
  function rgb(hex) { return [1, 3, 5].map((k) => parseInt(hex.slice(k, k + 2), 16)); }
  function rampRgb(t) {  // dark blue to yellow, through teal: readable in grey too
    t = Math.max(0, Math.min(1, t));
    return [Math.round(40 + 210 * t * t), Math.round(30 + 200 * t), Math.round(120 + 60 * Math.sin(Math.PI * t) - 80 * t)];
  }
  // [r, g, b, a] of a grid value: the boundary's two sides (above the level the positive colour,
  // orange, below it the negative one, blue, as the graph draws signs; paler near it), a
  // class's colour, or the surface's ramp.
  function fieldColour(v) {
    if (v === null) return [255, 255, 255, 0];
    if (view.kind === "classes") return [...rgb(COLOURS[v % COLOURS.length]), 90];
    if (view.kind === "surface") return [...rampRgb((v - surfaceRange[0]) / (surfaceRange[1] - surfaceRange[0])), 255];
    const d = v - view.level, t = Math.min(1, Math.abs(d) / (view.level === 0.5 ? 0.5 : 1));
    return [...(d >= 0 ? PALETTE.positive : PALETTE.negative), Math.round(40 + 120 * t)];
  }
  function pointColour(label) {
    if (view.kind === "classes") return COLOURS[label % COLOURS.length];
    if (view.kind === "surface") return ramp((label - surfaceRange[0]) / (surfaceRange[1] - surfaceRange[0]));
    return `rgb(${(label > (view.level === 0.5 ? 0.5 : 0) ? PALETTE.positive : PALETTE.negative).join(",")})`;
  }

  // The level set of the grid at view.level, as segments through the cells (marching squares).
  function contour(frame, n) {
    const at = (i, j) => frame[j * n + i];
    const pos = (i, j) => [i / (n - 1) * SIDE, SIDE - j / (n - 1) * SIDE];
    const parts = [];
    for (let j = 0; j < n - 1; j++) {
      for (let i = 0; i < n - 1; i++) {
        const corners = [[i, j], [i + 1, j], [i + 1, j + 1], [i, j + 1]];
        const values = corners.map(([a, b]) => at(a, b));
        if (values.some((v) => v === null)) continue;
        const crossings = [];
        for (let e = 0; e < 4; e++) {
          const va = values[e] - view.level, vb = values[(e + 1) % 4] - view.level;
          if ((va < 0) !== (vb < 0)) {
            const t = va / (va - vb), [ia, ja] = corners[e], [ib, jb] = corners[(e + 1) % 4];
            crossings.push(pos(ia + t * (ib - ia), ja + t * (jb - ja)));
          }
        }
        for (let c = 0; c + 1 < crossings.length; c += 2) {
          parts.push(`M${crossings[c][0].toFixed(1)},${crossings[c][1].toFixed(1)}L${crossings[c + 1][0].toFixed(1)},${crossings[c + 1][1].toFixed(1)}`);
        }
      }
    }
    return parts.join("");
  }
  // Between cells of different classes: the edges where the argmax changes.
  function classEdges(frame, n) {
    const step = SIDE / (n - 1), parts = [];
    for (let j = 0; j < n; j++) {
      for (let i = 0; i < n; i++) {
        const x = i * step, y = SIDE - j * step;
        if (i + 1 < n && frame[j * n + i] !== frame[j * n + i + 1]) parts.push(`M${(x + step / 2).toFixed(1)},${(y - step / 2).toFixed(1)}v${step.toFixed(1)}`);
        if (j + 1 < n && frame[j * n + i] !== frame[(j + 1) * n + i]) parts.push(`M${(x - step / 2).toFixed(1)},${(y - step / 2).toFixed(1)}h${step.toFixed(1)}`);
      }
    }
    return parts.join("");
  }

  let modelParts = null;
  function setUpModel() {
    const box = document.getElementById("model-view");
    const note = document.getElementById("model-note");
    if (!view) { note.textContent = data.view_note ? `No picture of the model: ${data.view_note}.` : ""; return; }
    const title = document.getElementById("model-title");
    const what = {boundary: "decision boundary", classes: "predicted class", surface: "fitted surface", curve: "fitted curve"}[view.kind];
    title.textContent = `The model: ${view.prediction}, its ${what}, over the data`;
    const holder = el("div", {class: "model-holder"}, box);
    let canvas = null;
    if (view.kind !== "curve") {
      canvas = el("canvas", {width: SIDE, height: SIDE, id: "model-field"}, holder);
    }
    const svg = el("svg", {viewBox: `-50 -10 ${SIDE + 60} ${SIDE + 50}`, width: SIDE + 60, height: SIDE + 50, id: "model-svg"}, holder, true);
    const [x0, x1] = view.x_range, [y0, y1] = view.y_range;
    const px = (x) => (x - x0) / (x1 - x0) * SIDE, py = (y) => SIDE - (y - y0) / (y1 - y0) * SIDE;
    el("rect", {x: 0, y: 0, width: SIDE, height: SIDE, class: "frame"}, svg, true);
    text(svg, SIDE / 2, SIDE + 30, view.features[0], {"text-anchor": "middle"});
    text(svg, -40, SIDE / 2, view.kind === "curve" ? view.prediction : view.features[1], {"text-anchor": "middle", transform: `rotate(-90 -40 ${SIDE / 2})`});
    const xTicks = insideTicks(x0, x1, 5), yTicks = insideTicks(y0, y1, 5);
    xTicks.ticks.forEach((v) => {
      el("line", {x1: px(v), x2: px(v), y1: SIDE, y2: SIDE + 4, class: "tick-mark"}, svg, true);
      text(svg, px(v), SIDE + 15, tickLabel(v, xTicks.step), {"text-anchor": "middle", class: "tick x-tick"});
    });
    yTicks.ticks.forEach((v) => {
      el("line", {x1: -4, x2: 0, y1: py(v), y2: py(v), class: "tick-mark"}, svg, true);
      text(svg, -6, py(v) + 4, tickLabel(v, yTicks.step), {"text-anchor": "end", class: "tick y-tick"});
    });
    const line = el("path", {id: view.kind === "curve" ? "fitted-curve" : "boundary", class: "boundary", d: ""}, svg, true);
    const held = el("g", {class: "points held-out"}, svg, true);
    view.validation_points.forEach((p) => {  // hollow: rows training did not see
      el("circle", {cx: px(p[0]).toFixed(1), cy: py(p[1]).toFixed(1), r: 3.4, fill: "#fff", "stroke-width": 1.6,
                    stroke: view.kind === "curve" ? "#555" : pointColour(p[p.length - 1]), class: "held"}, held, true);
    });
    const dots = el("g", {class: "points"}, svg, true);
    view.points.forEach((p) => {
      const y = p[1];
      el("circle", {cx: px(p[0]).toFixed(1), cy: py(y).toFixed(1), r: 3.4,
                    fill: view.kind === "curve" ? "#555" : pointColour(p[p.length - 1]), class: "point"}, dots, true);
    });
    modelParts = {canvas: canvas, line: line, px: px, py: py};
  }
  function drawModel(step) {
    if (!view || !modelParts) return;
    const index = nearest(view.steps, step);
    const frame = view.frames[index], n = view.size;
    const note = document.getElementById("model-note");
    const points = view.kind === "curve" ? (view.label ? `; the points are the rows' ${view.features[0]} and ${view.label}.` : ".")
      : (view.label ? `; the points are the rows, coloured by ${view.label}.` : ".");
    const held = view.validation_points.length ? " Hollow points are held-out rows." : "";
    note.textContent = `At step ${view.steps[index]}` + points + held;
    if (view.kind === "curve") {
      const xs = [], [x0, x1] = view.x_range;
      const d = [];
      frame.forEach((v, i) => {
        if (v === null) return;
        const x = x0 + (x1 - x0) * i / (n - 1);
        d.push(`${d.length ? "L" : "M"}${modelParts.px(x).toFixed(1)},${modelParts.py(v).toFixed(1)}`);
        xs.push(x);
      });
      modelParts.line.setAttribute("d", d.join(""));
      return;
    }
    // One pixel per grid point, scaled up smoothly: the grid's first and last points sit on the
    // frame's edges, so the image reaches half a cell beyond them on every side.
    const small = document.createElement("canvas");
    small.width = n; small.height = n;
    const sctx = small.getContext("2d"), image = sctx.createImageData(n, n);
    for (let j = 0; j < n; j++) {
      for (let i = 0; i < n; i++) {
        const rgba = fieldColour(frame[j * n + i]), at = ((n - 1 - j) * n + i) * 4;
        for (let c = 0; c < 4; c++) image.data[at + c] = rgba[c];
      }
    }
    sctx.putImageData(image, 0, 0);
    const ctx = modelParts.canvas.getContext("2d"), cell = SIDE / (n - 1);
    ctx.clearRect(0, 0, SIDE, SIDE);
    ctx.imageSmoothingEnabled = view.kind !== "classes";
    ctx.drawImage(small, -cell / 2, -cell / 2, SIDE + cell, SIDE + cell);
    modelParts.line.setAttribute("d", view.kind === "classes" ? classEdges(frame, n) : view.kind === "boundary" ? contour(frame, n) : "");
  }

  // --- parameters: histograms and heat maps ------------------------------------------------------

  function histogram(container, counts, range, colour, label) {
    const w = 220, h = 80;
    const svg = el("svg", {viewBox: `0 0 ${w} ${h + 16}`, width: w, height: h + 16, class: "histogram", role: "img",
                          "aria-label": label}, container, true);
    const most = Math.max(1, ...counts);
    const bw = w / counts.length;
    counts.forEach((c, i) => {
      const bh = c / most * h;
      el("rect", {x: (i * bw).toFixed(1), y: (h - bh).toFixed(1), width: (bw - 1).toFixed(1), height: bh.toFixed(1), fill: colour}, svg, true);
    });
    const ticks = insideTicks(range[0], range[1], 3);
    let marks = ticks.ticks.map((v) => [v, tickLabel(v, ticks.step)]);
    // A range far narrower than its values (one parameter's gradient: -2.448e-17 to -2.448e-17)
    // gives labels that read alike: one label, the middle, as it is.
    if (new Set(marks.map((m) => m[1])).size < marks.length) marks = [[(range[0] + range[1]) / 2, null]];
    marks.forEach(([v, words]) => {
      const x = range[1] > range[0] ? (v - range[0]) / (range[1] - range[0]) * w : w / 2;
      el("line", {x1: x, x2: x, y1: h, y2: h + 3, class: "tick-mark"}, svg, true);
      const anchor = x < 12 ? "start" : x > w - 12 ? "end" : "middle";
      text(svg, x, h + 14, words === null ? fmt(v) : words, {"text-anchor": anchor, class: "tick"});
    });
    return svg;
  }
  // White at 0, towards orange (positive) or blue (negative) by the size against `scale`: the
  // layer graph's heat maps (palette.heat_colour).
  function heatColour(v, scale) {
    if (v === null) return "#fff";
    const t = Math.min(1, Math.abs(v) / scale), end = v > 0 ? PALETTE.positive : PALETTE.negative;
    return `rgb(${end.map((c) => Math.round(255 + (c - 255) * t)).join(",")})`;
  }
  function heatValues(sent) { return sent.q.map((q) => q * sent.scale / data.heat_quant); }
  function heatMap(canvas, entries, shape, side) {  // entries: numbers, drawn relative to the largest magnitude
    const rows = shape[0], cols = shape[1];
    const scale = Math.max(1e-300, ...entries.map(Math.abs));
    const ctx = canvas.getContext("2d");
    ctx.clearRect(0, 0, canvas.width, canvas.height);
    if (side) {  // each row an image: side x side, laid out in a grid
      const per = Math.ceil(Math.sqrt(rows)), px = Math.max(2, Math.floor(canvas.width / (per * (side + 1))));
      for (let r = 0; r < rows; r++) {
        const ox = (r % per) * (side + 1) * px, oy = Math.floor(r / per) * (side + 1) * px;
        for (let k = 0; k < cols; k++) {
          ctx.fillStyle = heatColour(entries[r * cols + k], scale);
          ctx.fillRect(ox + (k % side) * px, oy + Math.floor(k / side) * px, px, px);
        }
      }
      return;
    }
    const cw = canvas.width / cols, ch = canvas.height / rows;
    for (let r = 0; r < rows; r++) {
      for (let k = 0; k < cols; k++) {
        ctx.fillStyle = heatColour(entries[r * cols + k], scale);
        ctx.fillRect(k * cw, r * ch, Math.ceil(cw), Math.ceil(ch));
      }
    }
  }
  function heatSize(g) {
    const rows = g.shape[0], cols = g.shape[1];
    if (g.image_side) {
      const per = Math.ceil(Math.sqrt(rows)), px = Math.max(2, Math.floor(240 / (per * (g.image_side + 1))));
      return [per * (g.image_side + 1) * px, Math.ceil(rows / per) * (g.image_side + 1) * px];
    }
    const cell = Math.max(3, Math.min(16, Math.floor(240 / Math.max(rows, cols))));
    return [cols * cell, rows * cell];
  }

  const groupParts = [];
  function setUpGroups() {
    const box = document.getElementById("groups");
    data.groups.forEach((g) => {
      const card = el("div", {class: "group"}, box);
      const head = el("h4", {}, card);
      head.textContent = `${g.name} [${g.shape.join(", ")}]`;
      if (g.members.length > 1 || g.members[0] !== g.name) {
        el("p", {class: "members"}, card).textContent = g.members.join(", ");
      }
      const hists = el("div", {class: "hists"}, card);
      const parts = {g: g, hists: hists, heat: null};
      if (g.heat_steps.length) {
        const maps = el("div", {class: "heat"}, card);
        const [w, h] = heatSize(g);
        const values = el("figure", {}, maps), grads = el("figure", {}, maps);
        const change = el("figure", {}, maps);
        parts.heat = [el("canvas", {width: w, height: h, class: "heat-values"}, values),
                      el("canvas", {width: w, height: h, class: "heat-grads"}, grads),
                      el("canvas", {width: w, height: h, class: "heat-change"}, change)];
        parts.heatCaptions = [el("figcaption", {}, values), el("figcaption", {}, grads), el("figcaption", {}, change)];
      }
      groupParts.push(parts);
    });
  }
  function drawGroups(step) {
    const index = nearest(data.kept_steps, step);
    groupParts.forEach((parts) => {
      const g = parts.g;
      parts.hists.textContent = "";
      const a = el("figure", {}, parts.hists), b = el("figure", {}, parts.hists);
      histogram(a, g.value_hist[index], g.value_range, PALETTE.value, `${g.name} values`);
      el("figcaption", {}, a).textContent = `values (rms ${fmt(g.value_rms[index])})`;
      histogram(b, g.grad_hist[index], g.grad_range[index], PALETTE.gradient, `${g.name} gradients`);
      el("figcaption", {}, b).textContent = `gradients (norm ${fmt(g.grad_norm[index])})`;
      if (parts.heat) {
        const k = nearest(g.heat_steps, step);
        const now = heatValues(g.heat_values[k]), first = heatValues(g.heat_values[0]);
        heatMap(parts.heat[0], now, g.shape, g.image_side);
        heatMap(parts.heat[1], heatValues(g.heat_grads[k]), g.shape, g.image_side);
        heatMap(parts.heat[2], now.map((v, i) => v - first[i]), g.shape, g.image_side);
        parts.heatCaptions[2].textContent = `what training changed: values at step ${g.heat_steps[k]} minus step ${g.heat_steps[0]}`;
        const how = g.image_side ? `each row as a ${g.image_side} x ${g.image_side} image` : "rows by columns";
        parts.heatCaptions[0].textContent = `values at step ${g.heat_steps[k]}, ${how}: orange +, blue -, ` +
          `the strongest ±${fmt(g.heat_values[k].scale)}`;
        parts.heatCaptions[1].textContent = `gradients at step ${g.heat_steps[k]}, the strongest ±${fmt(g.heat_grads[k].scale)}`;
      }
    });
  }

  // --- the slider ---------------------------------------------------------------------------------

  function nearest(steps, step) {  // the last recorded index at or before step (else the first)
    let best = 0;
    for (let i = 0; i < steps.length; i++) if (steps[i] <= step) best = i;
    return best;
  }
  const slider = document.getElementById("step-slider");
  const label = document.getElementById("step-label");
  function show() {
    // The slider goes through the steps whose parameters were kept (every recorded one, unless
    // a long run recorded more than memory allows: then every other, spread over the run).
    const kept = data.kept_steps;
    const step = kept.length ? kept[Number(slider.value)] : 0;
    label.textContent = kept.length ? `step ${step} of ${kept[kept.length - 1]}` : "nothing recorded";
    drawModel(step);
    drawGroups(step);
  }
  slider.max = String(Math.max(0, data.kept_steps.length - 1));
  slider.value = slider.max;
  slider.addEventListener("input", show);
  let timer = null;
  const play = document.getElementById("play");
  play.addEventListener("click", () => {
    if (timer !== null) { clearInterval(timer); timer = null; play.textContent = "play"; return; }
    if (Number(slider.value) >= Number(slider.max)) slider.value = "0";
    play.textContent = "pause";
    timer = setInterval(() => {
      if (Number(slider.value) >= Number(slider.max)) { clearInterval(timer); timer = null; play.textContent = "play"; return; }
      slider.value = String(Number(slider.value) + 1);
      show();
    }, 150);
  });

  // The row's graph is as wide as Graphviz laid it out (thousands of pixels for a network): drawn
  // to the page's width, with a button for its full size in a scrolling box.
  function setUpGraph() {
    const box = document.getElementById("row-graph");
    if (!box) return;
    box.classList.add("fit");
    const button = el("button", {type: "button", id: "graph-size"}, null);
    button.textContent = "full size";
    box.parentNode.insertBefore(button, box);
    button.addEventListener("click", () => {
      const fit = box.classList.toggle("fit");
      button.textContent = fit ? "full size" : "fit to the page";
    });
  }

  drawCurves();
  drawGradientNorms();
  setUpGraph();
  setUpModel();
  setUpGroups();
  show();
  document.body.dataset.ready = "true";
})();
