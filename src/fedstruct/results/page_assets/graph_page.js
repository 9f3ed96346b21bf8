/* fedstruct's graph page (fedstruct/results/graph_page.py): search a variable, show
   its neighbourhood to a depth, an overview (the whole graph or a map of its clusters),
   filters by mark, bootstrap frequency, site agreement and the method's confidence.
   Drawn with Cytoscape.js; everything it shows is in the JSON of #graph-data. */
(function () {
  "use strict";

  var clock = { script: Math.round(performance.now()) };  // ms since the navigation began
  var D = JSON.parse(document.getElementById("graph-data").textContent);
  clock.data = Math.round(performance.now());
  var names = D.names;
  var edges = D.edges;
  var N = names.length;
  var EPS = 1e-9;

  var byName = new Map();
  names.forEach(function (n, i) { byName.set(n, i); });
  var lower = names.map(function (n) { return n.toLowerCase(); });
  var incident = names.map(function () { return []; });
  edges.forEach(function (e, k) { incident[e.a].push(k); incident[e.b].push(k); });
  var kindOf = {};
  D.kinds.forEach(function (k) { kindOf[k.token] = k; });
  var clustered = D.clusters.length > 0;
  var clusterOf = new Array(N).fill(-1);
  D.clusters.forEach(function (c, k) {
    c.members.forEach(function (i) { clusterOf[i] = k; });
  });

  // ------------------------------------------------------------------ page state
  var state = {
    ready: false, view: null, selected: null, cluster: null, depth: 1,
    nodes: 0, edges: 0, hidden: 0, left_out: 0, matches: [], errors: [], warnings: [],
    ms: null,
    clock: clock
  };
  var stateEl = document.getElementById("page-state");
  function report() {
    state.errors = window.__pageErrors || [];
    state.warnings = window.__pageWarnings || [];
    stateEl.textContent = JSON.stringify(state);
  }
  window.__reportState = report;

  function $(id) { return document.getElementById(id); }
  function el(tag, attrs, children) {
    var node = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (key) {
      if (key === "text") { node.textContent = attrs[key]; }
      else if (key === "onclick") { node.addEventListener("click", attrs[key]); }
      else { node.setAttribute(key, attrs[key]); }
    });
    (children || []).forEach(function (c) {
      node.appendChild(typeof c === "string" ? document.createTextNode(c) : c);
    });
    return node;
  }
  function fmt(x) { return (Math.round(x * 1000) / 1000).toString(); }
  function runs(share) { return String(Math.round(share * D.replicates)); }

  // --------------------------------------------------------------------- filters
  var filter = { marks: {}, minFreq: 0, minAgree: 0, minWeight: 0 };
  D.kinds.forEach(function (k) { filter.marks[k.token] = true; });

  function atLeast(value, least) {
    return least <= 0 || (value !== null && value >= least - EPS);
  }
  function agreement(e) { return e.s === null ? null : e.s[0] / e.s[1]; }
  function passes(e) {
    return filter.marks[e.m] === true && atLeast(e.f, filter.minFreq) &&
      atLeast(agreement(e), filter.minAgree) && atLeast(e.w, filter.minWeight);
  }

  // ----------------------------------------------------------------- the drawing
  var measure = document.createElement("canvas").getContext("2d");
  measure.font = "12px system-ui, sans-serif";
  function textWidth(text) { return measure.measureText(text).width; }

  function endStyle(c) {
    if (c === "<" || c === ">") { return ["triangle", "filled"]; }
    if (c === "o") { return ["circle", "hollow"]; }
    return ["none", "filled"];
  }

  var cy = cytoscape({
    container: $("graph"),
    elements: [],
    minZoom: 0.03,
    maxZoom: 5,
    style: [
      { selector: "node", style: {
        "shape": "round-rectangle", "width": "data(w)", "height": 22,
        "label": "data(label)", "font-size": 12, "text-valign": "center",
        "text-halign": "center", "background-color": "#f6f6f2", "border-width": 1,
        "border-color": "#3a3a3a", "min-zoomed-font-size": 4 } },
      { selector: "node.centre", style: {
        "border-width": 3, "border-color": "#1f4e9a", "background-color": "#e3ecf9" } },
      { selector: "node.cluster", style: {
        "height": "data(h)", "text-wrap": "wrap", "background-color": "#eef3ea",
        "border-color": "#5b7f4a" } },
      { selector: "edge", style: {
        "curve-style": "straight", "width": "data(width)", "line-color": "data(color)",
        "line-style": "data(style)", "source-arrow-shape": "data(sa)",
        "target-arrow-shape": "data(ta)", "source-arrow-fill": "data(sf)",
        "target-arrow-fill": "data(tf)", "source-arrow-color": "data(color)",
        "target-arrow-color": "data(color)", "arrow-scale": 1.3 } },
      { selector: "edge.link", style: {
        "label": "data(label)", "font-size": 11, "text-background-color": "#ffffff",
        "text-background-opacity": 0.85, "text-background-padding": 2,
        "curve-style": "straight" } },
      { selector: ":selected", style: { "overlay-opacity": 0.18, "overlay-color": "#1f4e9a" } }
    ]
  });

  function variableNode(i, extra) {
    var data = { id: "v" + i, label: names[i], w: textWidth(names[i]) + 16, index: i };
    Object.keys(extra || {}).forEach(function (key) { data[key] = extra[key]; });
    return { group: "nodes", data: data };
  }
  function edgeElement(k) {
    var e = edges[k];
    var kind = kindOf[e.m];
    var left = endStyle(e.m.charAt(0));
    var right = endStyle(e.m.charAt(2));
    return { group: "edges", data: {
      id: "e" + k, source: "v" + e.a, target: "v" + e.b, index: k, color: kind.color,
      style: kind.dashed ? "dashed" : "solid", sa: left[0], sf: left[1], ta: right[0],
      tf: right[1], width: e.f === null ? 2 : 1 + 3 * e.f } };
  }
  function onCircle(elements) {
    var nodes = elements.filter(function (x) { return x.group === "nodes"; });
    var radius = 40 * Math.sqrt(nodes.length) + 40;
    nodes.forEach(function (x, k) {
      var angle = 2 * Math.PI * k / Math.max(1, nodes.length);
      x.position = { x: radius * Math.cos(angle), y: radius * Math.sin(angle) };
    });
    return elements;
  }
  function fitView() {
    // The variables fill the view (edges lie between them), a small graph at most at 1.5x.
    cy.fit(cy.nodes(), 30);
    if (cy.zoom() > 1.5) {
      cy.zoom(1.5);
      cy.center(cy.nodes());
    }
  }

  function draw(elements, layout) {
    clock.draw = Math.round(performance.now());
    cy.batch(function () {
      cy.elements().remove();
      cy.add(elements);
    });
    clock.added = Math.round(performance.now());
    cy.layout(layout).run();
    clock.laid = Math.round(performance.now());
    fitView();
    clock.fit = Math.round(performance.now());
    state.nodes = cy.nodes().length;
    state.edges = cy.edges().length;
  }
  function force(edgeLength, repulsion) {
    return { name: "cose", randomize: false, animate: false, fit: false,
      nodeDimensionsIncludeLabels: true, idealEdgeLength: function () { return edgeLength; },
      nodeRepulsion: function () { return repulsion; }, nodeOverlap: 20, gravity: 0.4,
      componentSpacing: 60, numIter: 1000 };
  }
  var FORCE = force(70, 9000);
  var FORCE_MAP = force(170, 600000);
  FORCE_MAP.numIter = 300;

  // ------------------------------------------------------------------- the views
  var current = null;  // re-drawn when a filter changes

  function inducedEdges(members) {
    var inside = new Set(members);
    var shown = [];
    var hidden = 0;
    members.forEach(function (v) {
      incident[v].forEach(function (k) {
        var e = edges[k];
        var other = e.a === v ? e.b : e.a;
        if (other < v || !inside.has(other)) { return; }
        if (passes(e)) { shown.push(k); } else { hidden += 1; }
      });
    });
    return { shown: shown, hidden: hidden };
  }

  function neighbourhood(centre, depth) {
    var dist = new Map([[centre, 0]]);
    var frontier = [centre];
    for (var d = 1; d <= depth && frontier.length; d++) {
      var next = [];
      frontier.forEach(function (v) {
        incident[v].forEach(function (k) {
          var e = edges[k];
          if (!passes(e)) { return; }
          var u = e.a === v ? e.b : e.a;
          if (!dist.has(u)) { dist.set(u, d); next.push(u); }
        });
      });
      frontier = next;
    }
    return dist;
  }

  // More passing edges than this between variables at the same distance from the centre
  // (a ring's chords, e.g. neighbours that are all adjacent) are left out unless asked
  // for: the edges from ring to ring, which the search followed, are always drawn.
  var RING_EDGES = 400;
  var ringsAsked = false;

  function showNeighbourhood(centre, depth) {
    current = function () { showNeighbourhood(centre, depth); };
    var dist = neighbourhood(centre, depth);
    var members = Array.from(dist.keys());
    var induced = inducedEdges(members);
    var chord = function (k) { return dist.get(edges[k].a) === dist.get(edges[k].b); };
    var chords = induced.shown.filter(chord).length;
    var leftOut = chords > RING_EDGES && !ringsAsked ? chords : 0;
    var drawn = leftOut ? induced.shown.filter(function (k) { return !chord(k); }) :
      induced.shown;
    var elements = members.map(function (i) {
      var node = variableNode(i, { dist: dist.get(i) });
      if (i === centre) { node.classes = "centre"; }
      return node;
    }).concat(drawn.map(edgeElement));
    var deepest = 0;
    dist.forEach(function (d) { deepest = Math.max(deepest, d); });
    draw(elements, { name: "concentric", animate: false, fit: false, avoidOverlap: true,
      minNodeSpacing: 60, levelWidth: function () { return 1; },
      concentric: function (n) { return deepest + 1 - n.data("dist"); } });
    Object.assign(state, { view: "neighbourhood", selected: names[centre], cluster: null,
      depth: depth, hidden: induced.hidden, left_out: leftOut });
    status("Neighbourhood of " + names[centre] + " to depth " + depth + ": " +
      state.nodes + " variables, " + state.edges + " edges" + hiddenNote(induced.hidden) +
      ". Click a variable to centre on it, an edge to read it.", leftOut ? [
      " The " + leftOut + " edges between variables at the same distance are not drawn " +
      "(too many to read; their variables' lists have them): ",
      el("button", { "class": "link", text: "draw them", onclick: function () {
        ringsAsked = true;
        redraw();
      } })] : []);
    variableDetails(centre);
    cy.$("#v" + centre).select();
  }

  function showCluster(k) {
    current = function () { showCluster(k); };
    var members = D.clusters[k].members;
    var induced = inducedEdges(members);
    var elements = members.map(function (i) { return variableNode(i); })
      .concat(induced.shown.map(edgeElement));
    draw(onCircle(elements), FORCE);
    Object.assign(state, { view: "cluster", selected: null, cluster: D.clusters[k].label,
      hidden: induced.hidden, left_out: 0 });
    status("Cluster " + D.clusters[k].title + ": " + state.nodes + " variables, " +
      state.edges + " edges inside" + hiddenNote(induced.hidden) + " (" +
      linkedCount(k) + " edges to other clusters, listed on the right).");
    clusterDetails(k);
  }

  function showWhole() {
    current = showWhole;
    var members = names.map(function (_, i) { return i; });
    var induced = inducedEdges(members);
    var elements = members.map(function (i) { return variableNode(i); })
      .concat(induced.shown.map(edgeElement));
    draw(onCircle(elements), FORCE);
    Object.assign(state, { view: "whole", selected: null, cluster: null,
      hidden: induced.hidden, left_out: 0 });
    status("The whole graph: " + state.nodes + " variables, " + state.edges + " edges" +
      hiddenNote(induced.hidden) + ". Find a variable to see its neighbourhood.");
    summaryDetails();
  }

  function clusterLinks() {
    // Edges between clusters that pass the filters, counted per pair of clusters.
    var counts = new Map();
    edges.forEach(function (e) {
      var i = clusterOf[e.a];
      var j = clusterOf[e.b];
      if (i === j || i < 0 || j < 0 || !passes(e)) { return; }
      var key = Math.min(i, j) + "," + Math.max(i, j);
      counts.set(key, (counts.get(key) || 0) + 1);
    });
    return counts;
  }

  function showClusterMap() {
    current = showClusterMap;
    var elements = D.clusters.map(function (c, k) {
      var label = c.label + " · " + c.members.length + "\n" + (c.title.indexOf("small") >= 0 ?
        "small parts" : c.hub);
      var width = Math.max(textWidth(c.label + " · " + c.members.length),
        textWidth(label.split("\n")[1])) + 18;
      return { group: "nodes", classes: "cluster", data: { id: "c" + k, label: label,
        w: width, h: 40, cluster: k } };
    });
    var links = 0;
    clusterLinks().forEach(function (count, key) {
      var pair = key.split(",");
      links += count;
      elements.push({ group: "edges", classes: "link", data: { id: "l" + key,
        source: "c" + pair[0], target: "c" + pair[1], label: String(count),
        color: "#9a9a9a", style: "solid", sa: "none", sf: "filled", ta: "none",
        tf: "filled", width: 1 + Math.log2(count) } });
    });
    draw(onCircle(elements), FORCE_MAP);
    Object.assign(state, { view: "clusters", selected: null, cluster: null, hidden: 0,
      left_out: 0 });
    status("Map of " + D.clusters.length + " clusters (" + N + " variables" +
      (D.isolated && D.isolated.length ? ", " + D.isolated.length + " without edges" : "") +
      "); a link's number counts the edges between two clusters (" + links +
      " in all). Click a cluster to open it, or find a variable.");
    summaryDetails();
  }

  function overview() { if (clustered) { showClusterMap(); } else { showWhole(); } }

  function hiddenNote(hidden) {
    return hidden ? " (" + hidden + " more hidden by the filters)" : "";
  }
  function linkedCount(k) {
    var total = 0;
    D.links.forEach(function (l) { if (l[0] === k || l[1] === k) { total += l[2]; } });
    return total;
  }
  function status(text, more) {
    var line = $("status");
    line.textContent = text;
    (more || []).forEach(function (part) {
      line.appendChild(typeof part === "string" ? document.createTextNode(part) : part);
    });
  }

  // --------------------------------------------------------------- detail panel
  function nameButton(i) {
    return el("button", { "class": "link", text: names[i], onclick: function () {
      select(i, state.depth);
    } });
  }
  function clusterButton(k) {
    return el("button", { "class": "link", text: D.clusters[k].label, onclick: function () {
      setHash({ cluster: D.clusters[k].label });
      showCluster(k);
      report();
    } });
  }
  function details(title, children) {
    $("details-title").textContent = title;
    var body = $("details-body");
    body.textContent = "";
    children.forEach(function (c) { body.appendChild(c); });
  }
  function edgeNumbers(e) {
    var parts = [];
    if (e.f !== null) { parts.push("in " + runs(e.f) + " of " + D.replicates + " runs"); }
    if (e.s !== null) { parts.push(e.s[0] + "/" + e.s[1] + " sites"); }
    if (e.w !== null) { parts.push("confidence " + fmt(e.w)); }
    return parts.length ? " (" + parts.join(", ") + ")" : "";
  }
  function edgeLine(k) {
    var e = edges[k];
    var item = el("li", {}, [nameButton(e.a), " ", el("span", { "class": "mono",
      text: e.m }), " ", nameButton(e.b), el("span", { "class": "muted",
      text: edgeNumbers(e) + (passes(e) ? "" : " — hidden by the filters") })]);
    item.addEventListener("dblclick", function () { edgeDetails(k); });
    return item;
  }

  function variableDetails(i) {
    var mine = incident[i].slice().sort(function (x, y) {
      return (passes(edges[y]) - passes(edges[x])) || (x - y);
    });
    var parts = [el("p", { "class": "muted", text: mine.length + " edges" +
      (clustered && clusterOf[i] >= 0 ? "; in cluster " : "") })];
    if (clustered && clusterOf[i] >= 0) { parts[0].appendChild(clusterButton(clusterOf[i])); }
    parts.push(el("ul", { "class": "edges" }, mine.map(edgeLine)));
    details(names[i], parts);
  }

  function edgeDetails(k) {
    var e = edges[k];
    var kind = kindOf[e.m];
    var A = names[e.a];
    var B = names[e.b];
    // "A" and "B" of the meaning become the names (a function: a name is taken as it is).
    var meaning = kind.meaning.replace(/\b[AB]\b/g, function (end) {
      return end === "A" ? A : B;
    });
    var parts = [el("p", {}, [el("span", { "class": "swatch" + (kind.dashed ? " dashed" : ""),
      style: "border-color:" + kind.color }), kind.name]), el("p", { text: meaning })];
    if (e.f !== null) {
      var shares = Object.keys(e.p || {}).map(function (p) { return p + " " + fmt(e.p[p]); });
      parts.push(el("p", { text: "Adjacent in " + runs(e.f) + " of the " + D.replicates +
        " resampled runs" + (shares.length ? "; marks " + shares.join(", ") : "") + "." }));
    }
    if (e.s !== null) {
      parts.push(el("p", { text: e.s[0] + " of the " + e.s[1] +
        " sites that hold both variables have the edge in their own graph." }));
    }
    if (e.w !== null) { parts.push(el("p", { text: "The method's confidence: " + fmt(e.w) })); }
    parts.push(el("p", {}, ["Centre on ", nameButton(e.a), " or ", nameButton(e.b)]));
    details(A + " " + e.m + " " + B, parts);
  }

  function clusterDetails(k) {
    var c = D.clusters[k];
    var linked = D.links.filter(function (l) { return l[0] === k || l[1] === k; })
      .map(function (l) { return [l[0] === k ? l[1] : l[0], l[2]]; })
      .sort(function (x, y) { return y[1] - x[1] || x[0] - y[0]; });
    var parts = [el("p", { "class": "muted", text: c.inside + " edges inside" })];
    if (linked.length) {
      parts.push(el("p", {}, ["Edges to other clusters:"]));
      parts.push(el("ul", { "class": "edges" }, linked.map(function (l) {
        return el("li", {}, [clusterButton(l[0]), " " + l[1] + " edges"]);
      })));
    }
    parts.push(el("p", {}, ["Variables:"]));
    parts.push(el("ul", { "class": "edges" }, c.members.map(function (i) {
      return el("li", {}, [nameButton(i)]);
    })));
    details(c.title, parts);
  }

  function summaryDetails() {
    var parts = [el("p", { text: "Find a variable to see its neighbourhood, or click one." })];
    if (clustered) {
      parts.push(el("p", {}, ["Clusters, largest first:"]));
      parts.push(el("ul", { "class": "edges" }, D.clusters.map(function (c, k) {
        return el("li", {}, [clusterButton(k), " " + c.title.slice(c.label.length + 3)]);
      })));
    }
    details("Overview", parts);
  }

  cy.on("tap", "node", function (ev) {
    var data = ev.target.data();
    if (data.cluster !== undefined) {
      setHash({ cluster: D.clusters[data.cluster].label });
      showCluster(data.cluster);
    } else {
      select(data.index, state.depth);
    }
    report();
  });
  cy.on("tap", "edge", function (ev) {
    var data = ev.target.data();
    if (data.index !== undefined) { edgeDetails(data.index); }
  });

  // ---------------------------------------------------------------------- search
  function find(query) {
    var q = query.trim();
    if (!q) { return []; }
    if (byName.has(q)) { return [byName.get(q)]; }
    var ql = q.toLowerCase();
    var exact = [];
    var part = [];
    lower.forEach(function (n, i) {
      if (n === ql) { exact.push(i); } else if (n.indexOf(ql) >= 0) { part.push(i); }
    });
    return exact.length ? exact : part;
  }

  function select(i, depth) {
    $("search").value = names[i];
    $("matches").textContent = "";
    state.matches = [names[i]];
    setHash({ search: names[i], depth: depth });
    showNeighbourhood(i, depth);
    report();
  }

  function search(query, depth) {
    var found = find(query);
    state.matches = found.slice(0, 50).map(function (i) { return names[i]; });
    if (found.length === 1) { select(found[0], depth); return; }
    var box = $("matches");
    box.textContent = "";
    if (!found.length) {
      box.appendChild(el("span", { "class": "error", text: "No variable matches '" +
        query.trim() + "'." }));
    } else {
      box.appendChild(el("span", { text: found.length + " variables match; pick one: " }));
      found.slice(0, 50).forEach(function (i, n) {
        if (n) { box.appendChild(document.createTextNode(", ")); }
        box.appendChild(nameButton(i));
      });
      if (found.length > 50) { box.appendChild(document.createTextNode(", …")); }
    }
    state.selected = null;
    report();
  }

  // --------------------------------------------------------------- the fragment
  function readHash() {
    var out = {};
    location.hash.replace(/^#/, "").split("&").forEach(function (part) {
      if (!part) { return; }
      var at = part.indexOf("=");
      var key = at < 0 ? part : part.slice(0, at);
      var value = at < 0 ? "" : part.slice(at + 1);
      try { out[decodeURIComponent(key)] = decodeURIComponent(value); }
      catch (err) { out[key] = value; }
    });
    return out;
  }
  function setHash(fields) {
    var parts = Object.keys(fields).map(function (k) {
      return encodeURIComponent(k) + "=" + encodeURIComponent(String(fields[k]));
    });
    try { history.replaceState(null, "", "#" + parts.join("&")); } catch (err) { /* file: */ }
  }

  // ---------------------------------------------------------------- the controls
  function setUp() {
    $("title").textContent = D.title;
    var facts = [N + " variables", edges.length + " edges"];
    if (D.replicates) { facts.push("edge frequencies over " + D.replicates + " resampled runs"); }
    if (D.sites) { facts.push(D.sites + " sites' own graphs"); }
    if (clustered) { facts.push(D.clusters.length + " clusters"); }
    $("summary").textContent = facts.join(" · ");
    var list = $("names");
    names.forEach(function (n) { list.appendChild(el("option", { value: n })); });
    $("overview").textContent = clustered ? "Cluster map" : "Whole graph";
    $("overview").addEventListener("click", function () { setHash({}); overview(); report(); });
    $("search-form").addEventListener("submit", function (ev) {
      ev.preventDefault();
      search($("search").value, Number($("depth").value));
    });
    $("depth").addEventListener("change", function () {
      state.depth = Number($("depth").value);
      if (state.view === "neighbourhood") { select(byName.get(state.selected), state.depth); }
    });
    var marks = $("mark-filter");
    D.kinds.forEach(function (k) {
      var count = edges.filter(function (e) { return e.m === k.token; }).length;
      var box = el("input", { type: "checkbox", "data-token": k.token });
      box.checked = filter.marks[k.token];
      box.addEventListener("change", function () {
        filter.marks[k.token] = box.checked;
        redraw();
      });
      marks.appendChild(el("label", {}, [box, " ", el("span", { "class": "swatch" +
        (k.dashed ? " dashed" : ""), style: "border-color:" + k.color }), el("code",
        { text: k.token }), " " + k.name + " (" + count + ")"]));
    });
    var meanings = $("meanings");
    D.kinds.forEach(function (k) {
      meanings.appendChild(el("dt", {}, [el("span", { "class": "swatch" +
        (k.dashed ? " dashed" : ""), style: "border-color:" + k.color }),
        "A " + k.token + " B"]));
      meanings.appendChild(el("dd", { text: k.meaning }));
    });
    slider("freq-filter", "min-freq", "minFreq", D.replicates !== null);
    slider("agree-filter", "min-agree", "minAgree", edges.some(function (e) {
      return e.s !== null;
    }));
    slider("weight-filter", "min-weight", "minWeight", D.weights);
    $("replicates").textContent = D.replicates || "";
  }

  function slider(fieldset, id, key, shown) {
    $(fieldset).hidden = !shown;
    var input = $(id);
    input.value = String(filter[key]);
    $(id + "-out").textContent = String(filter[key]);
    input.addEventListener("input", function () {
      filter[key] = Number(input.value);
      $(id + "-out").textContent = input.value;
      redraw();
    });
  }

  function redraw() {
    if (current) { current(); }
    report();
  }

  function applyHash(fields) {
    if (fields.marks !== undefined) {
      var wanted = new Set(fields.marks.split(","));
      Object.keys(filter.marks).forEach(function (t) { filter.marks[t] = wanted.has(t); });
      document.querySelectorAll("#mark-filter input").forEach(function (box) {
        box.checked = filter.marks[box.getAttribute("data-token")];
      });
    }
    [["minfreq", "minFreq", "min-freq"], ["minagree", "minAgree", "min-agree"],
      ["minweight", "minWeight", "min-weight"]].forEach(function (f) {
      if (fields[f[0]] !== undefined && !isNaN(Number(fields[f[0]]))) {
        filter[f[1]] = Number(fields[f[0]]);
        $(f[2]).value = fields[f[0]];
        $(f[2] + "-out").textContent = fields[f[0]];
      }
    });
    if (fields.rings !== undefined) { ringsAsked = fields.rings === "1"; }
    var depth = Math.max(1, Math.min(5, Math.floor(Number(fields.depth || 1)) || 1));
    state.depth = depth;
    $("depth").value = String(depth);
    if (fields.search !== undefined) {
      $("search").value = fields.search;
      overviewIfNothing(function () { search(fields.search, depth); });
      return;
    }
    if (fields.cluster !== undefined) {
      var k = D.clusters.findIndex(function (c) { return c.label === fields.cluster; });
      if (k >= 0) { showCluster(k); return; }
    }
    overview();
  }

  function overviewIfNothing(run) {
    run();
    if (state.view === null) { overview(); }
  }

  function refit() {
    cy.resize();
    fitView();
  }
  window.addEventListener("load", refit);
  window.addEventListener("resize", refit);

  setUp();
  clock.setup = Math.round(performance.now());
  applyHash(readHash());
  state.ready = true;
  state.ms = Math.round(performance.now());
  report();
  // The first frame with the view drawn: after the next animation frame has painted.
  requestAnimationFrame(function () {
    setTimeout(function () {
      clock.painted = Math.round(performance.now());
      report();
    }, 0);
  });
  window.addEventListener("hashchange", function () { applyHash(readHash()); report(); });
})();
