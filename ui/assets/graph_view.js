// KnowSim IU graph (ES module served from /app/static/vendor/, imported by a tiny loader): vis-network kept on the element; a rerun only re-colours nodes in place.
// Every text (ids, concepts, descriptions) arrives in `data` and reaches the page only through
// textContent or vis-network's canvas labels — never innerHTML.
const LOADING = (window.__ksVisLoading = window.__ksVisLoading || {});
const REGISTRY = (window.__knowsim = window.__knowsim || {});
const TWEEN_MS = 150;
const COMPACT_X = 0.45; // compact graphs (side by side): labels are ids only, so columns sit closer
const SMALL_Y = 0.5; // a graph drawn with ids only because its labels would be too small: rows sit closer too

function loadVis(url) {
  if (window.vis && window.vis.Network) return Promise.resolve(window.vis);
  if (!LOADING[url]) {
    LOADING[url] = new Promise((resolve, reject) => {
      const s = document.createElement("script");
      s.src = url;
      s.onload = () => resolve(window.vis);
      s.onerror = () => { delete LOADING[url]; reject(new Error("could not load " + url)); };
      document.head.appendChild(s);
    });
  }
  return LOADING[url];
}

function hexToRgb(h) { const n = parseInt(h.slice(1), 16); return [(n >> 16) & 255, (n >> 8) & 255, n & 255]; }
function mix(a, b, t) {
  const x = hexToRgb(a), y = hexToRgb(b);
  return "#" + x.map((v, i) => Math.round(v + (y[i] - v) * t).toString(16).padStart(2, "0")).join("");
}

// ``small``: a graph whose labels would be drawn below the minimum size when fitted shows ids only,
// in a tighter layout (the concept is in the hover line); a compact graph (side by side) always does
function item(d, n, i, small) {
  const st = d.states ? d.states[i] : null;
  const sty = st === null ? d.plain : d.styles[st];
  const changed = d.changed.includes(n[0]);
  const ring = changed ? d.changedColour : d.borderColour; // the selection is drawn outside (drawSelection)
  const ids = d.compact || small;
  return {
    id: n[0], x: ids ? Math.round(n[4] * COMPACT_X) : n[4], y: small && !d.compact ? Math.round(n[5] * SMALL_Y) : n[5],
    state: st, changed: changed,
    label: (sty.g ? sty.g + " " : "") + n[0] + (ids ? "" : "\n" + n[1]),
    color: { background: sty.c, border: ring, highlight: { background: sty.c, border: ring },
             hover: { background: sty.c, border: ring } },
    font: { color: sty.f },
    borderWidth: sty.bw + (changed ? 3 : 0),
    shapeProperties: { borderDashes: sty.d ? [5, 4] : false },
    shadow: changed ? { enabled: true, color: d.changedColour, size: 12, x: 0, y: 0 } : false,
  };
}

function modeOf(d, id) {
  if (!d.modes) return null;
  const i = d.nodes.findIndex((m) => m[0] === id);
  return i >= 0 && d.modes[i] !== null && d.modes[i] !== undefined ? d.modeStyles[d.modes[i]] : null;
}

function describe(d, id) {
  const n = d.nodes.find((m) => m[0] === id);
  const m = modeOf(d, id);
  return n ? n[0] + ": " + n[2] + (m ? " · this turn: " + m.n : "") + (n[3] ? " — " + n[3] : "") : "";
}

// the failure mode of each IU explained this turn: a lettered badge in the failure palette at the
// node's top-right corner, drawn on the canvas after vis-network (numbers and our own letters only)
function drawBadges(g, ctx) {
  const d = g.data;
  if (!d.modes) return;
  const k0 = 1 / Math.max(g.network.getScale(), 0.05); // the same size on screen at any zoom
  const r = 8 * k0;
  ctx.save();
  ctx.font = "bold " + (10 * k0) + "px sans-serif"; ctx.textAlign = "center"; ctx.textBaseline = "middle";
  d.nodes.forEach((n, i) => {
    const k = d.modes[i];
    if (k === null || k === undefined || !g.network.body.nodes[n[0]]) return;
    const s = d.modeStyles[k];
    const b = g.network.getBoundingBox(n[0]);
    const x = b.right - 2, y = b.top + 2;
    ctx.beginPath(); ctx.arc(x, y, r, 0, 2 * Math.PI);
    ctx.fillStyle = s.c; ctx.fill();
    ctx.lineWidth = 1.5 * k0; ctx.strokeStyle = "#FFFFFF"; ctx.stroke();
    ctx.fillStyle = s.f; ctx.fillText(s.t, x, y + 0.5);
  });
  ctx.restore();
  g.badges = d.modes.filter((k) => k !== null && k !== undefined).length;
}

// the selected IU: a ring just outside its box, the same width on screen at any zoom, so even a small
// node keeps its state colour and border (a thicker border of its own would cover a small node)
function drawSelection(g, ctx) {
  const id = g.data.selected;
  if (!id || !g.network.body.nodes[id]) return;
  const k0 = 1 / Math.max(g.network.getScale(), 0.05);
  const b = g.network.getBoundingBox(id);
  const gap = 3 * k0;
  ctx.save();
  ctx.lineWidth = 3 * k0; ctx.strokeStyle = g.data.selectedColour;
  ctx.beginPath();
  if (ctx.roundRect) ctx.roundRect(b.left - gap, b.top - gap, b.right - b.left + 2 * gap, b.bottom - b.top + 2 * gap, 6 * k0);
  else ctx.rect(b.left - gap, b.top - gap, b.right - b.left + 2 * gap, b.bottom - b.top + 2 * gap);
  ctx.stroke();
  ctx.restore();
}

function edgeItems(d) {
  const marked = new Set((d.marked || []).map((e) => e[0] + "\u0000" + e[1]));
  return d.edges.map((e, i) => {
    const m = marked.has(e[0] + "\u0000" + e[1]);
    return { id: i, from: e[0], to: e[1], arrows: "to", dashes: m ? [8, 5] : false, width: m ? 3 : 1,
             color: { color: m ? d.selectedColour : d.edgeColour } };
  });
}

// The whole graph in view: fitted on the first drawing and whenever the canvas changes size. Where a
// minimum label size is asked for, a graph whose fitted labels would fall below it is drawn with ids
// only (tighter, so larger); a compact graph (side by side, ids only) never zooms out below it and
// pans instead — its canvas is made tall enough for every row (ui/common/graph_view.py).
function fitView(g, box) {
  const d = g.data, net = g.network;
  if (!box.clientWidth || !box.clientHeight) return;
  g.fittedTo = box.clientWidth + "x" + box.clientHeight;
  if (d.compact || !d.minScale) {
    net.fit({ animation: false });
    if (d.compact && d.minScale && net.getScale() < d.minScale) net.moveTo({ scale: d.minScale, animation: false });
    return;
  }
  const draw = (small) => {
    if (g.small !== small) { g.small = small; g.nodes.update(d.nodes.map((n, i) => item(d, n, i, small))); }
    net.fit({ animation: false });
  };
  draw(false);
  if (net.getScale() < d.minScale) draw(true);
  g.info.textContent = d.selected ? describe(d, d.selected) : hintOf(g);
}

function hintOf(g) { return g.small && g.data.hintSmall ? g.data.hintSmall : g.data.hint; }

function build(vis, box, info, d, setStateValue) {
  const nodes = new vis.DataSet(d.nodes.map((n, i) => item(d, n, i, false)));
  const edges = new vis.DataSet(edgeItems(d));
  const net = new vis.Network(box, { nodes, edges }, {
    physics: false, layout: { hierarchical: false },
    interaction: { hover: true, keyboard: false, dragNodes: false, selectable: d.selectable, zoomView: true },
    // chosen: false: the selection ring is ours (item()); vis-network's own doubles the border, which on
    // a small node covers its state colour
    // no width constraint: the labels arrive broken into lines at word boundaries (wrap_label), and a
    // constraint made vis-network cut a long word anywhere ("Expectation-maximizin" / "g")
    nodes: { shape: "box", margin: 8, chosen: false, font: { size: 15, face: "sans-serif" } },
    edges: { color: { color: d.edgeColour }, smooth: { type: "cubicBezier", forceDirection: "vertical", roundness: 0.4 } },
  });
  const g = { sig: d.sig, nodes, edges, network: net, data: d, rev: null, marks: JSON.stringify(d.marked || []),
              info, small: false };
  net.on("click", (p) => {
    if (g.data.selectable && p.nodes.length) {
      info.textContent = describe(g.data, p.nodes[0]);
      setStateValue("selected", p.nodes[0]);
    }
  });
  net.on("hoverNode", (p) => { info.textContent = describe(g.data, p.node); });
  net.on("afterDrawing", (ctx) => { drawSelection(g, ctx); drawBadges(g, ctx); });
  net.on("blurNode", () => { info.textContent = g.data.selected ? describe(g.data, g.data.selected) : hintOf(g); });
  net.once("afterDrawing", () => { g.drawn = true; fitView(g, box); });
  // a column that settles after the first drawing (or had no size yet), or a window resized: fit again
  g.resizer = new ResizeObserver(() => {
    if (g.drawn && g.fittedTo !== box.clientWidth + "x" + box.clientHeight) fitView(g, box);
  });
  g.resizer.observe(box);
  return g;
}

function recolour(g, d) {
  const target = d.nodes.map((n, i) => item(d, n, i, g.small));
  const before = new Map(g.nodes.get().map((n) => [n.id, n.color.background]));
  const moving = target.filter((t) => before.get(t.id) && before.get(t.id) !== t.color.background);
  const marks = JSON.stringify(d.marked || []);
  if (marks !== g.marks) { g.edges.update(edgeItems(d)); g.marks = marks; } // Simulate steps never pay for this
  const finish = () => {
    g.nodes.update(target);
    g.rev = d.rev;
    g.appliedAt = performance.now();
  };
  if (!moving.length || document.hidden) { finish(); g.network.redraw(); return; }
  g.nodes.update(target.map((t) => ({ ...t, color: { ...t.color, background: before.get(t.id) || t.color.background } })));
  const t0 = performance.now();
  const frame = (now) => {
    const k = Math.min(1, (now - t0) / TWEEN_MS);
    if (k >= 1 || g.data !== d) { if (g.data === d) finish(); return; }
    g.nodes.update(moving.map((t) => ({ id: t.id, color: { ...t.color, background: mix(before.get(t.id), t.color.background, k) } })));
    requestAnimationFrame(frame);
  };
  requestAnimationFrame(frame);
}

export default function render(component) {
  const { data, parentElement, setStateValue } = component;
  const box = parentElement.querySelector(".ks-canvas");
  const info = parentElement.querySelector(".ks-info");
  box.style.height = data.height + "px";
  loadVis(data.lib).then((vis) => {
    let g = box.__ks;
    if (!g || g.sig !== data.sig) {
      if (g) { g.resizer.disconnect(); g.network.destroy(); }
      g = box.__ks = build(vis, box, info, data, setStateValue);
      g.rev = data.rev;
      g.appliedAt = performance.now();
    } else {
      g.receivedAt = performance.now();
      g.data = data;
      recolour(g, data);
    }
    g.data = data;
    REGISTRY[data.key] = g;
    box.dataset.rev = data.rev;
    info.textContent = data.selected ? describe(data, data.selected) : hintOf(g);
  }).catch((e) => { info.textContent = "The graph could not be drawn: " + e.message; });
}

// the loader (ui/common/graph_view.py) calls this directly once the module is loaded: an update is drawn in
// the same task, without a dynamic import() round trip that queues it behind the rest of the rerun
(window.__ksGraphRender ||= {})[import.meta.url] = render;
