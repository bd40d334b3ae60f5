// The health check settings, shared by the steering dialog and pool origins. Empty inputs are
// left out so the server's defaults (SPEC §5) apply.

import { h, field, input, select } from "./ui.js";

const KINDS = [
  ["none", "No health check"],
  ["https", "HTTPS"],
  ["http", "HTTP"],
  ["tcp", "TCP connect"],
  ["udp", "UDP"],
  ["icmp", "ICMP echo"],
];

// Which inputs each kind uses.
const USES = {
  http: ["port", "host", "path", "method", "status", "body"],
  https: ["port", "host", "path", "method", "status", "body"],
  tcp: ["port", "payload", "body"],
  udp: ["port", "payload", "body"],
  icmp: [],
  none: [],
};

// `prefix` is how the API names the check in errors (`steering.check.`).
export function checkForm(spec, prefix, { disabled = false } = {}) {
  const check = spec || {};
  const kind = select(KINDS, check.kind || "none", { name: "kind", disabled });
  const num = (name, value, attrs = {}) =>
    input({ name, type: "number", value: value ?? "", disabled, ...attrs });
  const text = (name, value, attrs = {}) => input({ name, value: value ?? "", disabled, ...attrs });
  const inputs = {
    port: num("port", check.port, { min: 1, max: 65535, placeholder: "443 / 80" }),
    host: text("host", check.host, { placeholder: "the record's name" }),
    path: text("path", check.path, { placeholder: "/" }),
    method: select(["GET", "HEAD"], check.method || "GET", { name: "method", disabled }),
    status: text("status", check.status, { placeholder: "200-399" }),
    body: text("body", check.body, { placeholder: "regular expression (optional)" }),
    payload: text("payload", check.payload, { placeholder: "bytes to send" }),
    interval: num("interval", check.interval, { min: 1, max: 3600, placeholder: "30" }),
    timeout: num("timeout", check.timeout, { min: 1, placeholder: "5000" }),
    down_after: num("down_after", check.down_after, { min: 1, max: 10, placeholder: "3" }),
    up_after: num("up_after", check.up_after, { min: 1, max: 10, placeholder: "2" }),
  };
  const labels = {
    port: "Port",
    host: "Host name (Host header and TLS name)",
    path: "Path",
    method: "Method",
    status: "Healthy status codes",
    body: "Body must match",
    payload: "Payload",
    interval: "Interval (s)",
    timeout: "Timeout (ms)",
    down_after: "Down after failures",
    up_after: "Up after passes",
  };
  const wraps = {};
  for (const [name, el] of Object.entries(inputs)) {
    wraps[name] = field(labels[name], el, { field: `${prefix}${name}` });
  }
  const timing = ["interval", "timeout", "down_after", "up_after"];
  const element = h(
    "fieldset",
    { class: "check" },
    h("legend", { text: "Health check" }),
    field("Check", kind, { field: `${prefix}kind` }),
    h("div", { class: "grid" }, Object.keys(inputs).filter((n) => !timing.includes(n)).map((n) => wraps[n])),
    h("div", { class: "grid timing" }, timing.map((n) => wraps[n])),
  );
  const sync = () => {
    const uses = USES[kind.value] || [];
    for (const [name, wrap] of Object.entries(wraps)) {
      wrap.hidden = kind.value === "none" || (!timing.includes(name) && !uses.includes(name));
    }
  };
  kind.addEventListener("change", sync);
  sync();

  // The check as the API takes it, or null for none.
  const read = () => {
    if (kind.value === "none") return null;
    const out = { kind: kind.value };
    const uses = USES[kind.value];
    for (const [name, el] of Object.entries(inputs)) {
      if (!uses.includes(name) && !timing.includes(name)) continue;
      const value = el.value.trim();
      if (value === "") continue;
      if (name === "method" && value === "GET") continue;
      out[name] = el.type === "number" ? Number(value) : value;
    }
    return out;
  };
  return { element, read, kind };
}
