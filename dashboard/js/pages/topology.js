// The topology map: clients' places → steered names and load balancers → one Origin node per
// address, coloured by health. Plain SVG in three columns; each column is ordered by the
// average position of its neighbours on the left, which keeps most edges from crossing.

import { api } from "../api.js";
import { h, pageHeader, table } from "../ui.js";

const NS = "http://www.w3.org/2000/svg";
const ROW = 34;
const NODE_H = 24;
const COL_W = { place: 150, name: 230, origin: 190 };
const GAP = 190;
const POLL_MS = 3000;

function svg(tag, attrs = {}, ...children) {
  const el = document.createElementNS(NS, tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v !== undefined && v !== null) el.setAttribute(k, v);
  }
  for (const c of children.flat()) {
    if (c === null || c === undefined) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

// Orders `nodes` by the mean row of their left neighbours (`pos` maps id → row).
function byNeighbours(nodes, edges, pos) {
  const mean = new Map();
  for (const node of nodes) {
    const rows = edges.filter((e) => e.to === node.id && pos.has(e.from)).map((e) => pos.get(e.from));
    mean.set(node.id, rows.length ? rows.reduce((a, b) => a + b, 0) / rows.length : Infinity);
  }
  return [...nodes].sort((a, b) => mean.get(a.id) - mean.get(b.id) || a.id.localeCompare(b.id));
}

export function draw(topology) {
  const { places, names, origins, edges } = topology;
  const pos = new Map();
  const orderedPlaces = [...places];
  orderedPlaces.forEach((n, i) => pos.set(n.id, i));
  const orderedNames = byNeighbours(names, edges, pos);
  orderedNames.forEach((n, i) => pos.set(n.id, i));
  const orderedOrigins = byNeighbours(origins, edges, pos);
  orderedOrigins.forEach((n, i) => pos.set(n.id, i));

  const rows = Math.max(orderedPlaces.length, orderedNames.length, orderedOrigins.length, 1);
  const x = { place: 10, name: 10 + COL_W.place + GAP, origin: 10 + COL_W.place + GAP + COL_W.name + GAP };
  const width = x.origin + COL_W.origin + 10;
  const at = new Map();
  // Origins stack from the top (centred when another column is taller); each name sits level
  // with the middle of its origins and each place with the middle of its names, pushed down
  // only as far as needed to keep a row between nodes.
  const TOP = 40;
  orderedOrigins.forEach((n, i) => at.set(n.id, { x: x.origin, y: TOP + ((rows - orderedOrigins.length) * ROW) / 2 + i * ROW, kind: "origin" }));
  const settle = (column, kind, neighbours) => {
    let next = TOP;
    for (const n of column) {
      const ys = neighbours(n.id).map((id) => at.get(id)).filter(Boolean).map((p) => p.y);
      const wanted = ys.length ? ys.reduce((a, b) => a + b, 0) / ys.length : next;
      const y = Math.max(wanted, next);
      at.set(n.id, { x: x[kind], y, kind });
      next = y + ROW;
    }
  };
  settle(orderedNames, "name", (id) => edges.filter((e) => e.from === id).map((e) => e.to));
  settle(orderedPlaces, "place", (id) => edges.filter((e) => e.from === id).map((e) => e.to));
  const height = Math.max(...[...at.values()].map((p) => p.y), TOP) + NODE_H + 20;

  const healthOf = new Map(origins.map((o) => [o.id, o.health]));
  const root = svg("svg", {
    class: "topology",
    viewBox: `0 0 ${width} ${height}`,
    width,
    height,
    role: "img",
    "aria-labelledby": "topology-title topology-desc",
  });
  root.append(
    svg("title", { id: "topology-title" }, "Traffic topology"),
    svg("desc", { id: "topology-desc" }, `${places.length} client places, ${names.length} steered names and load balancers, ${origins.length} origins (${origins.filter((o) => o.health === "down").length} down).`),
  );
  for (const [kind, text] of [["place", "Clients' places"], ["name", "Names and load balancers"], ["origin", "Origins"]]) {
    root.append(svg("text", { x: x[kind], y: 18, class: "column-title" }, text));
  }

  const edgeLayer = svg("g", { class: "edges" });
  const labels = new Map();
  for (const edge of edges) {
    const a = at.get(edge.from);
    const b = at.get(edge.to);
    if (!a || !b) continue;
    const x1 = a.x + COL_W[a.kind];
    const y1 = a.y + NODE_H / 2;
    const x2 = b.x;
    const y2 = b.y + NODE_H / 2;
    const mid = (x1 + x2) / 2;
    const health = b.kind === "origin" ? healthOf.get(edge.to) : "";
    const path = svg("path", { d: `M${x1},${y1} C${mid},${y1} ${mid},${y2} ${x2},${y2}`, class: `edge ${health}`, "data-from": edge.from, "data-to": edge.to });
    if (edge.label) path.append(svg("title", {}, edge.label));
    edgeLayer.append(path);
    if (edge.label && b.kind === "origin") {
      labels.set(edge.to, [...(labels.get(edge.to) || []), edge.label]);
    }
  }
  // One label per origin, just before its box: every origin has a row of its own.
  for (const [id, texts] of labels) {
    const b = at.get(id);
    edgeLayer.append(svg("text", { x: b.x - 6, y: b.y + NODE_H / 2 - 3, class: "edge-label", "text-anchor": "end" }, texts.join(" · ")));
  }
  root.append(edgeLayer);

  const nodeLayer = svg("g", { class: "nodes" });
  const node = (n, kind, label, extra = {}) => {
    const p = at.get(n.id);
    const width = COL_W[kind];
    const clipped = label.length > width / 7.2 ? `${label.slice(0, Math.floor(width / 7.2) - 1)}…` : label;
    return svg(
      "g",
      { class: `node ${kind} ${extra.cls || ""}`, transform: `translate(${p.x},${p.y})`, "data-id": n.id, "data-kind": kind, ...extra.data },
      svg("title", {}, extra.title || label),
      svg("rect", { width, height: NODE_H, rx: 5 }),
      extra.dot ? svg("circle", { cx: 12, cy: NODE_H / 2, r: 5, class: "health" }) : null,
      svg("text", { x: extra.dot ? 24 : 8, y: NODE_H / 2 + 4 }, clipped),
    );
  };
  for (const n of orderedPlaces) nodeLayer.append(node(n, "place", n.label, { cls: n.kind }));
  for (const n of orderedNames) nodeLayer.append(node(n, "name", n.kind === "lb" ? `⚖ ${n.label}` : n.label, { cls: n.kind, title: `${n.kind === "lb" ? "Load balancer" : "Steered record"} ${n.label} in ${n.zone}` }));
  for (const n of orderedOrigins) {
    nodeLayer.append(
      node(n, "origin", `Origin ${n.address}`, {
        cls: n.health,
        dot: true,
        title: `Origin ${n.address}: ${n.health}`,
        data: { "data-health": n.health, "data-address": n.address },
      }),
    );
  }
  root.append(nodeLayer);
  return root;
}

export async function render(main) {
  const holder = h("div", { class: "topology-wrap loading", text: "Loading topology…" });
  const listing = h("details", { class: "topology-table" });
  main.append(
    pageHeader("Topology"),
    h(
      "p",
      { class: "sub" },
      "Where clients are sent: their places on the left, steered names and load balancers in the middle, one Origin per address on the right. ",
      h("span", { class: "legend" }, h("span", { class: "dot up" }), " up ", h("span", { class: "dot down" }), " down ", h("span", { class: "dot unknown" }), " not checked"),
    ),
    holder,
    listing,
  );
  const load = async () => {
    let topology;
    try {
      topology = await api.get("/topology");
    } catch (err) {
      holder.replaceChildren(h("p", { class: "form-error", role: "alert", text: err.message }));
      return;
    }
    holder.className = "topology-wrap";
    if (topology.names.length === 0) {
      holder.replaceChildren(h("p", { class: "empty", text: "Nothing is steered yet: steer a record or create a load balancer." }));
    } else {
      holder.replaceChildren(draw(topology));
    }
    const label = new Map([...topology.places, ...topology.names].map((n) => [n.id, n.label]));
    for (const o of topology.origins) label.set(o.id, `Origin ${o.address} (${o.health})`);
    const open = listing.open;
    listing.replaceChildren(
      h("summary", { text: "The same as a table" }),
      table(
        ["From", "To", "Rule"],
        topology.edges.map((e) => h("tr", {}, h("td", { text: label.get(e.from) || e.from }), h("td", { text: label.get(e.to) || e.to }), h("td", { text: e.label || "" }))),
        { caption: "Topology edges" },
      ),
    );
    listing.open = open;
  };
  await load();
  const timer = setInterval(() => !document.hidden && load(), POLL_MS);
  return () => clearInterval(timer);
}
