// KnowSim replay: draws one run (or a pair side by side) turn by turn from the JSON element above.
// Every text from the run reaches the page through textContent or an attribute value, never as
// markup; nothing is fetched (the page's Content-Security-Policy forbids it anyway).
(function () {
  "use strict";
  var SVG = "http://www.w3.org/2000/svg";
  var NODE_W = 150, NODE_H = 62, PAD = 20;
  var data = JSON.parse(document.getElementById("knowsim-replay-data").textContent);
  var runs = data.runs || [];
  var modeBy = {};
  (data.modes || []).forEach(function (m) { modeBy[m.name] = m; });
  var C = data.colours || {};
  var maxTurn = 0;
  runs.forEach(function (r) { maxTurn = Math.max(maxTurn, r.turns.length); });
  var views = [];

  function el(tag, attrs, text) {
    var e = document.createElement(tag);
    if (attrs) { Object.keys(attrs).forEach(function (k) { e.setAttribute(k, attrs[k]); }); }
    if (text !== undefined && text !== null) { e.textContent = String(text); }
    return e;
  }
  function svg(tag, attrs, text) {
    var e = document.createElementNS(SVG, tag);
    if (attrs) { Object.keys(attrs).forEach(function (k) { e.setAttribute(k, String(attrs[k])); }); }
    if (text !== undefined && text !== null) { e.textContent = String(text); }
    return e;
  }
  function startOf(run, id) {
    return Object.prototype.hasOwnProperty.call(run.start, id) ? run.start[id] : 0;
  }
  function fmt(x, d) { return (typeof x === "number" && isFinite(x)) ? x.toFixed(d) : "–"; }
  function badge(modeName) {
    var m = modeBy[modeName];
    var b = el("span", { "class": "badge" }, modeName || "–");
    if (m) { b.style.background = m.colour; b.style.color = m.font; }
    return b;
  }

  // ------------------------------------------------------------------ one run's column
  function buildRun(run, i) {
    var col = el("section", { "class": "run", "data-run": String(i) });
    col.appendChild(el("h2", null, "Run " + run.run_id + " · " + run.level));
    col.appendChild(el("p", { "class": "question" }, run.question));
    var agents = run.agents.map(function (a) { return a[0] + " " + a[1]; }).join(" · ");
    col.appendChild(el("p", { "class": "meta" }, "question " + run.question_id + " · " + agents + " · seed " + run.seed +
      " · τ " + run.tau + " · preset " + run.preset + (run.stop_reason ? " · stopped: " + run.stop_reason : "")));
    col.appendChild(el("p", { "class": "meta" }, "KG " + run.metrics.KG + " · DC " + fmt(run.metrics.DC, 3) +
      " · CO " + fmt(run.metrics.CO, 3) + " · " + run.turns.length + " turn(s)"));
    if (run.fork_of) {
      col.appendChild(el("p", { "class": "meta", "data-role": "fork" }, "a fork of " +
        (run.parent_words || "run " + run.fork_of[0]) + " at turn " + run.fork_of[1]));
    }
    var status = el("p", { "class": "note", "data-role": "status" });
    col.appendChild(status);
    // two panes: the picture (graph, gauge) and the words (messages, modes and whys); side by side
    // for a single run on a wide screen, stacked in a pair
    var panes = el("div", { "class": "panes" });
    var pic = el("div", { "class": "pane" }), words = el("div", { "class": "pane" });
    panes.appendChild(pic); panes.appendChild(words); col.appendChild(panes);
    var graphBox = el("div", { "class": "graph" });
    pic.appendChild(graphBox);
    var g = buildGraph(run, i);
    graphBox.appendChild(g.root);
    pic.appendChild(el("h3", null, "Load"));
    var gauge = buildGauge(run);
    pic.appendChild(gauge.root);
    var gaugeText = el("p", { "class": "gauge-text", "data-role": "load" });
    pic.appendChild(gaugeText);
    words.appendChild(el("h3", null, "Messages"));
    var userBox = el("div", { "class": "msg user", "data-role": "user" });
    var asstBox = el("div", { "class": "msg assistant", "data-role": "assistant" });
    words.appendChild(el("div", { "class": "who" }, "user"));
    words.appendChild(userBox);
    words.appendChild(el("div", { "class": "who" }, "assistant"));
    words.appendChild(asstBox);
    words.appendChild(el("h3", null, "Each IU: failure mode and why"));
    var table = el("table", { "class": "ius" });
    var head = el("tr");
    ["IU", "concept", "before → after", "mode", "why"].forEach(function (h) { head.appendChild(el("th", null, h)); });
    var thead = el("thead"); thead.appendChild(head); table.appendChild(thead);
    var tbody = el("tbody"); table.appendChild(tbody);
    words.appendChild(table);
    var story = buildStory(run, i);
    col.appendChild(story.root);
    return { run: run, root: col, graph: g, gauge: gauge, gaugeText: gaugeText, user: userBox, assistant: asstBox,
             tbody: tbody, status: status, story: story };
  }

  // ------------------------------------------------------------------ one IU's story
  function buildStory(run, i) {
    var box = el("section", { "class": "story", "data-role": "story", "aria-label": "one IU's story" });
    box.appendChild(el("h3", null, "One IU's story over the run"));
    var pick = el("select", { "aria-label": "IU", "data-role": "story-pick" });
    pick.appendChild(el("option", { value: "" }, "Pick an IU (or click one in the graph or the table)"));
    run.graph.nodes.forEach(function (n) { pick.appendChild(el("option", { value: n.id }, n.id + " — " + n.concept)); });
    pick.addEventListener("change", function () { setIu(pick.value || null); });
    box.appendChild(pick);
    var head = el("p", { "class": "meta", "data-role": "story-head" });
    box.appendChild(head);
    var table = el("table", { "class": "ius story-table" });
    var tr = el("tr");
    ["", "turn", "state", "taught", "attempt", "load (share)", "carry", "ceiling", "mode", "DC", "words of the reply", "why"]
      .forEach(function (h) { tr.appendChild(el("th", null, h)); });
    var thead = el("thead"); thead.appendChild(tr); table.appendChild(thead);
    var body = el("tbody"); table.appendChild(body);
    box.appendChild(table);
    var note = el("p", { "class": "note", "data-role": "story-note" });
    box.appendChild(note);
    return { root: box, pick: pick, head: head, table: table, body: body, note: note };
  }

  function stateText(s) { var st = data.states[s] || data.states[0]; return st.glyph + " " + st.name; }

  function showStory(v, n) {
    var run = v.run, s = v.story, id = currentIu;
    var known = id && run.stories && Object.prototype.hasOwnProperty.call(run.stories, id);
    s.pick.value = known ? id : "";
    s.table.style.display = known ? "" : "none";
    while (s.body.firstChild) { s.body.removeChild(s.body.firstChild); }
    if (!known) {
      s.head.textContent = id ? id + " is not an IU of this run." : "";
      s.note.textContent = "";
      return;
    }
    var story = run.stories[id];
    var node = null;
    run.graph.nodes.forEach(function (nd) { if (nd.id === id) { node = nd; } });
    s.head.textContent = id + " — " + (node ? node.concept : "") + " · prerequisites: " +
      (story.prerequisites.length ? story.prerequisites.join(", ") : "none (a root IU)") + " · start: " +
      stateText(startOf(run, id));
    s.note.textContent = story.note;
    var start = el("tr", { "data-turn": "0" });
    [n === 0 ? "▶" : "", "0", stateText(startOf(run, id)), "", "", "", "", "", "", "", "", "starting state"]
      .forEach(function (x) { start.appendChild(el("td", null, x)); });
    s.body.appendChild(start);
    story.rows.forEach(function (r) {
      var t = {};
      (data.story_columns || []).forEach(function (name, k) { t[name] = r[k]; });
      var turn = turnOf(run, t.turn), iu = null;
      if (turn) { turn.ius.forEach(function (x) { if (x.id === id) { iu = x; } }); }
      var row = el("tr", { "data-turn": String(t.turn), "class": t.turn === n ? "current" : "" });
      var moved = iu ? (iu.pre === iu.post ? stateText(iu.post) : stateText(iu.pre) + " → " + stateText(iu.post)) : "";
      var load = (t.load && turn) ? fmt(t.load, 2) + " of " + fmt(turn.load, 1) +
        (turn.load ? " (" + Math.round(100 * t.load / turn.load) + "%)" : "") + (turn.overload ? " · OVERLOADED" : "") : "";
      var carry = (t.carry || t.prior_carry) ? fmt(t.carry, 2) + " (was " + fmt(t.prior_carry, 2) + ")" : "";
      var ceiling = stateText(t.ceiling) + (t.ceiling_used !== t.ceiling ? " (live " + stateText(t.ceiling_used) + ")" : "");
      // a quoted sentence is a span of the turn's reply (the file keeps the words once)
      var quoted = t.evidence.map(function (e) { return Array.isArray(e) && turn ? turn.assistant.slice(e[0], e[1]) : String(e); });
      var words = quoted.length ? quoted.join(" ") : (t.mentions ? "none are known" : "");
      [t.turn === n ? "▶" : "", String(t.turn), moved, t.teaching, t.attempt, load, carry, ceiling].forEach(function (x) {
        row.appendChild(el("td", null, x));
      });
      var tdm = el("td", { "class": "mode" });
      if (iu && iu.mode) { tdm.appendChild(badge(iu.mode)); } else { tdm.textContent = "–"; }
      row.appendChild(tdm);
      row.appendChild(el("td", null, t.dc));
      row.appendChild(el("td", { "class": "why", title: t.reason || "" }, words));
      row.appendChild(el("td", { "class": "why" }, iu ? iu.why : ""));
      row.addEventListener("click", function () { go(t.turn); });
      s.body.appendChild(row);
    });
  }

  function buildGraph(run, i) {
    var nodes = run.graph.nodes;
    var minX = 0, maxX = 0, maxY = 0;
    nodes.forEach(function (n) { minX = Math.min(minX, n.x); maxX = Math.max(maxX, n.x); maxY = Math.max(maxY, n.y); });
    var w = maxX - minX + NODE_W + 2 * PAD, h = maxY + NODE_H + 2 * PAD;
    var root = svg("svg", { viewBox: "0 0 " + w + " " + h, role: "img", "aria-label": "IU graph" });
    var ox = -minX + NODE_W / 2 + PAD, oy = NODE_H / 2 + PAD;
    var defs = svg("defs");
    var marker = svg("marker", { id: "arrow-" + i, viewBox: "0 0 10 10", refX: 10, refY: 5, markerWidth: 7,
                                 markerHeight: 7, orient: "auto-start-reverse" });
    marker.appendChild(svg("path", { d: "M 0 0 L 10 5 L 0 10 z", fill: C.edge }));
    defs.appendChild(marker); root.appendChild(defs);
    var pos = new Map();
    nodes.forEach(function (n) { pos.set(n.id, { x: n.x + ox, y: n.y + oy }); });
    run.graph.edges.forEach(function (e) {
      var a = pos.get(e[0]), b = pos.get(e[1]);
      if (!a || !b) { return; }
      var down = b.y >= a.y;
      root.appendChild(svg("line", { x1: a.x, y1: a.y + (down ? NODE_H / 2 : -NODE_H / 2), x2: b.x,
        y2: b.y + (down ? -NODE_H / 2 : NODE_H / 2), stroke: C.edge, "stroke-width": 1.5,
        "marker-end": "url(#arrow-" + i + ")" }));
    });
    var shapes = new Map();
    nodes.forEach(function (n) {
      var p = pos.get(n.id);
      var grp = svg("g", { "data-iu": n.id, transform: "translate(" + (p.x - NODE_W / 2) + "," + (p.y - NODE_H / 2) + ")" });
      var tip = svg("title");
      var rect = svg("rect", { width: NODE_W, height: NODE_H, rx: 7, ry: 7, stroke: C.border, "stroke-width": 1.5 });
      var head = svg("text", { x: NODE_W / 2, y: 18, "text-anchor": "middle", "font-size": 13, "font-weight": 600 });
      var lines = n.lines.map(function (line, k) {
        return svg("text", { x: NODE_W / 2, y: 35 + 14 * k, "text-anchor": "middle", "font-size": 12 }, line);
      });
      var modeRect = svg("rect", { x: NODE_W - 22, y: -8, width: 26, height: 16, rx: 3, stroke: C.border, "stroke-width": 1 });
      var modeText = svg("text", { x: NODE_W - 9, y: 4, "text-anchor": "middle", "font-size": 11, "font-weight": 700 });
      grp.appendChild(tip); grp.appendChild(rect); grp.appendChild(head);
      lines.forEach(function (t) { grp.appendChild(t); });
      grp.appendChild(modeRect); grp.appendChild(modeText);
      grp.style.cursor = "pointer";
      grp.addEventListener("click", function () { setIu(n.id); });
      root.appendChild(grp);
      shapes.set(n.id, { node: n, tip: tip, rect: rect, head: head, lines: lines, modeRect: modeRect, modeText: modeText });
    });
    return { root: root, shapes: shapes };
  }

  function buildGauge(run) {
    var W = 500, H = 44, top = run.gauge_top, tau = run.tau;
    function X(v) { return 10 + (W - 20) * Math.max(0, Math.min(v, top)) / top; }
    var root = svg("svg", { viewBox: "0 0 " + W + " " + H, role: "img", "aria-label": "load against capacity" });
    var near = (C.near_share || 0.75) * tau;
    root.appendChild(svg("rect", { x: X(0), y: 6, width: X(near) - X(0), height: 20, fill: C.ok }));
    root.appendChild(svg("rect", { x: X(near), y: 6, width: X(tau) - X(near), height: 20, fill: C.near }));
    root.appendChild(svg("rect", { x: X(tau), y: 6, width: X(top) - X(tau), height: 20, fill: C.over }));
    var bar = svg("rect", { x: X(0), y: 11, width: 0, height: 10, fill: C.bar });
    root.appendChild(bar);
    root.appendChild(svg("line", { x1: X(tau), x2: X(tau), y1: 2, y2: 30, stroke: C.threshold, "stroke-width": 3 }));
    root.appendChild(svg("text", { x: X(0), y: 42, "font-size": 11 }, "0"));
    root.appendChild(svg("text", { x: X(tau), y: 42, "font-size": 11, "text-anchor": "middle" }, "τ " + tau));
    root.appendChild(svg("text", { x: X(top), y: 42, "font-size": 11, "text-anchor": "end" }, String(top)));
    var box = el("div", { "class": "gauge" });
    box.appendChild(root);
    return { root: box, bar: bar, X: X };
  }

  // ------------------------------------------------------------------ showing a turn
  function turnOf(run, n) {
    for (var k = 0; k < run.turns.length; k++) { if (run.turns[k].turn === n) { return run.turns[k]; } }
    return null;
  }

  function showRun(v, n) {
    var run = v.run, shown = n, t = null, note = "";
    if (n > 0) {
      t = turnOf(run, n);
      if (!t && run.turns.length) {
        t = run.turns[run.turns.length - 1];
        shown = t.turn;
        note = "this run ended at turn " + shown + "; showing its last turn";
      }
    }
    v.status.textContent = n === 0 ? "the start: the learner's knowledge before the first turn" : note;
    v.root.setAttribute("data-turn", String(t ? t.turn : 0));
    var byId = new Map();
    if (t) { t.ius.forEach(function (iu) { byId.set(iu.id, iu); }); }
    v.graph.shapes.forEach(function (s, id) {
      var iu = byId.get(id);
      var state = iu ? iu.post : startOf(run, id);
      var st = data.states[state] || data.states[0];
      var moved = iu && iu.post !== iu.pre;
      s.rect.setAttribute("fill", st.colour);
      s.rect.setAttribute("stroke", moved ? C.changed : C.border);
      s.rect.setAttribute("stroke-width", moved ? 5 : (state === 3 ? 3 : 1.5));
      s.rect.setAttribute("stroke-dasharray", state === 0 ? "5 3" : "none");
      s.head.textContent = st.glyph + " " + id;
      s.head.setAttribute("fill", st.font);
      s.lines.forEach(function (l) { l.setAttribute("fill", st.font); });
      var m = iu && iu.mode ? modeBy[iu.mode] : null;
      s.modeRect.setAttribute("visibility", m ? "visible" : "hidden");
      s.modeText.setAttribute("visibility", m ? "visible" : "hidden");
      if (m) {
        s.modeRect.setAttribute("fill", m.colour);
        s.modeText.setAttribute("fill", m.font);
        s.modeText.textContent = m.letter;  // the vocabulary's letter, from the data (R P E O U)
      }
      s.tip.textContent = id + ": " + s.node.concept + "\n" + s.node.description + "\nstate: " + st.name +
        (iu ? "\n" + iu.why : "");
    });
    if (t) {
      v.gauge.bar.setAttribute("width", String(v.gauge.X(t.load) - v.gauge.X(0)));
      v.gaugeText.textContent = "turn " + t.turn + ": load " + fmt(t.load, 1) + " vs capacity τ " + t.tau +
        " · η " + fmt(t.efficiency, 2) + " · " + (t.overload ? "OVERLOADED" : "within capacity");
      v.user.textContent = t.user;
      v.assistant.textContent = t.assistant;
    } else {
      v.gauge.bar.setAttribute("width", "0");
      v.gaugeText.textContent = run.turns.length ? "no load before the first turn" : "this run has no turns yet";
      v.user.textContent = "";
      v.assistant.textContent = "";
    }
    while (v.tbody.firstChild) { v.tbody.removeChild(v.tbody.firstChild); }
    var rows = t ? t.ius : run.graph.nodes.map(function (nd) {
      var s0 = startOf(run, nd.id);
      return { id: nd.id, label: nd.id, mode: null, why: "starting state", pre: s0, post: s0 };
    });
    var concept = new Map();
    run.graph.nodes.forEach(function (nd) { concept.set(nd.id, nd.concept); });
    rows.forEach(function (iu) {
      var tr = el("tr", { "class": "iu", "data-iu": iu.id });
      tr.appendChild(el("td", null, iu.id));
      tr.appendChild(el("td", null, concept.has(iu.id) ? concept.get(iu.id) : ""));
      var pre = data.states[iu.pre] || data.states[0], post = data.states[iu.post] || data.states[0];
      tr.appendChild(el("td", null, pre.glyph + " " + pre.name + " → " + post.glyph + " " + post.name));
      var tdm = el("td", { "class": "mode" });
      if (iu.mode) { tdm.appendChild(badge(iu.mode)); } else { tdm.textContent = "–"; }
      tr.appendChild(tdm);
      tr.appendChild(el("td", { "class": "why" }, iu.why));
      tr.addEventListener("click", function () { setIu(iu.id); });
      v.tbody.appendChild(tr);
    });
  }

  var current = -1, currentIu = null;
  function clamp(n) { return Math.max(0, Math.min(maxTurn, n)); }
  function fromHash() {
    var m = /(?:^#|&)turn=(\d+)/.exec(location.hash || "");
    return m ? clamp(parseInt(m[1], 10)) : (maxTurn > 0 ? 1 : 0);
  }
  function iuFromHash() {
    var m = /(?:^#|&)iu=([^&]*)/.exec(location.hash || "");
    return m ? decodeURIComponent(m[1]) || null : null;
  }
  function hashOf(n) { return "#turn=" + n + (currentIu ? "&iu=" + encodeURIComponent(currentIu) : ""); }
  function setIu(id) {
    currentIu = id;
    views.forEach(function (v) { showStory(v, current); });
    if (hashOf(current) !== location.hash) { history.replaceState(null, "", hashOf(current)); }
    if (id && views.length) { views[0].story.root.scrollIntoView({ block: "nearest" }); }
  }
  function show(n) {
    current = clamp(n);
    views.forEach(function (v) { showRun(v, current); showStory(v, current); });
    document.getElementById("turn-label").textContent = current === 0 ? "Start (turn 0 of " + maxTurn + ")" :
      "Turn " + current + " of " + maxTurn;
    document.getElementById("prev").disabled = current <= 0;
    document.getElementById("next").disabled = current >= maxTurn;
    document.getElementById("scrub").value = String(current);
    document.body.setAttribute("data-turn", String(current));
  }
  function go(n) {
    n = clamp(n);
    show(n);  // draw first: hashchange fires later, and the address must never name a turn not shown
    if (hashOf(n) !== location.hash) { location.hash = hashOf(n).slice(1); }
  }

  function legend() {
    var box = document.getElementById("legend");
    box.appendChild(el("strong", null, "IU states:"));
    data.states.forEach(function (s) {
      var item = el("span", { "class": "item" });
      var sw = el("span", { "class": "swatch" }); sw.style.background = s.colour;
      item.appendChild(sw); item.appendChild(document.createTextNode(s.glyph + " " + s.name));
      box.appendChild(item);
    });
    var moved = el("span", { "class": "item" });
    var sw = el("span", { "class": "swatch" }); sw.style.borderColor = C.changed; sw.style.borderWidth = "3px";
    moved.appendChild(sw); moved.appendChild(document.createTextNode("moved this turn"));
    box.appendChild(moved);
    box.appendChild(el("strong", null, "Failure modes (letter on the node):"));
    data.modes.forEach(function (m) {
      var item = el("span", { "class": "item", title: m.meaning });
      item.appendChild(el("strong", null, m.letter + " "));
      item.appendChild(badge(m.name));
      item.appendChild(document.createTextNode(" " + m.meaning));
      box.appendChild(item);
    });
  }

  function metricWords() {
    var box = document.getElementById("metric-words"), words = data.metric_words || {};
    Object.keys(words).forEach(function (k) {
      var p = el("p");
      p.appendChild(el("strong", null, k + " — "));
      p.appendChild(document.createTextNode(words[k]));
      box.appendChild(p);
    });
  }

  var main = document.getElementById("runs");
  if (runs.length > 1) { main.className = "pair"; }
  runs.forEach(function (r, i) { var v = buildRun(r, i); views.push(v); main.appendChild(v.root); });
  document.title = "KnowSim replay · " + data.title;
  legend();
  metricWords();
  var scrub = document.getElementById("scrub");
  scrub.max = String(maxTurn);
  scrub.addEventListener("input", function () { go(parseInt(scrub.value, 10)); });
  document.getElementById("prev").addEventListener("click", function () { go(current - 1); });
  document.getElementById("next").addEventListener("click", function () { go(current + 1); });
  document.addEventListener("keydown", function (ev) {
    var tag = (ev.target && ev.target.tagName) || "";
    if (tag === "TEXTAREA" || (tag === "INPUT" && ev.target.type !== "range") || ev.altKey || ev.ctrlKey || ev.metaKey) { return; }
    if (ev.key === "ArrowRight") { ev.preventDefault(); go(current + 1); }
    else if (ev.key === "ArrowLeft") { ev.preventDefault(); go(current - 1); }
    else if (ev.key === "Home") { ev.preventDefault(); go(0); }
    else if (ev.key === "End") { ev.preventDefault(); go(maxTurn); }
  });
  // a link to a turn past the end (#turn=99) shows the last turn; the address is corrected to it in
  // place (replaceState: no history entry, no hashchange), so it never names a turn not shown
  function followHash() {
    var n = fromHash();
    currentIu = iuFromHash();
    show(n);
    var m = /(?:^#|&)turn=(\d+)/.exec(location.hash || "");
    if (m && m[1] !== String(n)) {
      history.replaceState(null, "", location.hash.replace(/((?:^#|&)turn=)\d+/, "$1" + n));
    }
  }
  window.addEventListener("hashchange", followHash);
  followHash();
})();
