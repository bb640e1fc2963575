// edgeproxy console, charts: stacked bar charts written as SVG by hand. No charting
// library: the console has no build step and vendors nothing, the charts need only bars,
// an axis and a legend (about a hundred lines), and SVG made with createElementNS takes
// every label as text, so a hostile name can never become markup. Each bar's segments
// carry a <title> (the browser's tooltip: series, period, value) and the chart has a
// role="img" with a label; the numbers themselves stand in a table beside it.
"use strict";

(() => {
  const NS = "http://www.w3.org/2000/svg";
  const COLORS = 6; // series classes s0..s5 (style.css); "other" is s-other
  const [W, H, LEFT, BOTTOM, TOP] = [600, 140, 52, 22, 8];

  function svg(tag, attrs = {}, text) {
    const node = document.createElementNS(NS, tag);
    for (const [name, value] of Object.entries(attrs)) node.setAttribute(name, String(value));
    if (text !== undefined) node.textContent = String(text);
    return node;
  }

  // A round top for the axis: 1, 2 or 5 times a power of ten.
  function niceTop(max) {
    if (!(max > 0)) return 1;
    const power = 10 ** Math.floor(Math.log10(max));
    for (const step of [1, 2, 5, 10]) if (step * power >= max) return step * power;
    return 10 * power;
  }

  // periods: the x axis (labels); series: [{name, cls, values (one per period)}];
  // whole: the values are counts (grid lines only at whole numbers).
  function stacked(title, periods, series, format, whole) {
    const totals = periods.map((_, i) => series.reduce((sum, s) => sum + (s.values[i] || 0), 0));
    const top = niceTop(Math.max(0, ...totals));
    const plotW = W - LEFT - 4;
    const plotH = H - BOTTOM - TOP;
    const slot = plotW / Math.max(1, periods.length);
    const barW = Math.max(1, slot * 0.7);
    const root = svg("svg", { class: "chart", viewBox: `0 0 ${W} ${H}`, role: "img", "aria-label": `${title}: ${format(totals.reduce((a, b) => a + b, 0))} in all` });
    root.append(svg("title", {}, title));
    for (const f of [0, 0.5, 1]) {
      if (whole && !Number.isInteger(top * f)) continue; // no line at 2.5 requests
      const text = format(top * f);
      const y = TOP + plotH * (1 - f);
      root.append(svg("line", { class: "grid-line", x1: LEFT, y1: y, x2: W - 4, y2: y }));
      root.append(svg("text", { class: "axis", x: LEFT - 4, y: y + 4, "text-anchor": "end" }, text));
    }
    periods.forEach((period, i) => {
      let y = TOP + plotH;
      const x = LEFT + i * slot + (slot - barW) / 2;
      for (const s of series) {
        const v = s.values[i] || 0;
        if (v <= 0) continue;
        const h = (v / top) * plotH;
        y -= h;
        const rect = svg("rect", { class: "seg " + s.cls, x: x.toFixed(2), y: y.toFixed(2), width: barW.toFixed(2), height: Math.max(0.5, h).toFixed(2), "data-series": s.name, "data-period": period });
        rect.append(svg("title", {}, `${s.name} · ${period}: ${format(v)}`));
        root.append(rect);
      }
    });
    const every = Math.max(1, Math.ceil(periods.length / 6)); // at most about six labels
    periods.forEach((period, i) => {
      if (i % every) return;
      root.append(svg("text", { class: "axis", x: LEFT + i * slot + slot / 2, y: H - 6, "text-anchor": "middle" }, period));
    });
    return root;
  }

  window.edgeproxyCharts = { stacked, COLORS };
})();
