// A record's health check log: its current state and every change, newest first.

import { api, enc } from "../api.js";
import { h, bare, table, pageHeader, healthDot, time, ago } from "../ui.js";
import { steeringSummary } from "../steering.js";

export async function render(main, [zone, id]) {
  const holder = h("div", { class: "loading", text: "Loading…" });
  main.append(
    h("nav", { class: "crumbs", "aria-label": "Breadcrumb" }, h("a", { href: "#/zones", text: "Zones" }), " / ", h("a", { href: `#/zones/${enc(zone)}`, text: zone }), " / health log"),
    holder,
  );
  const load = async () => {
    try {
      const [records, events] = await Promise.all([api.get(`/zones/${enc(zone)}/records`), api.get(`/zones/${enc(zone)}/records/${id}/health-events`)]);
      const record = records.find((r) => String(r.id) === String(id));
      if (!record) throw new Error(`record ${id} is not in ${zone}`);
      const health = record.health || { state: "unknown" };
      const rows = [...events]
        .sort((a, b) => b.time - a.time)
        .map((e) =>
          h(
            "tr",
            {},
            h("td", { text: time(e.time) }),
            h("td", {}, healthDot(e.old_state), ` ${e.old_state} → `, healthDot(e.new_state), ` ${e.new_state}`),
            h("td", { text: e.status ?? "—" }),
            h("td", { text: e.latency_ms !== undefined && e.latency_ms !== null ? `${e.latency_ms} ms` : "—" }),
            h("td", { text: e.reason || "" }),
          ),
        );
      holder.className = "";
      holder.replaceChildren(
        pageHeader(`Health log: ${bare(record.fqdn)} ${record.type} ${record.value}`),
        h(
          "dl",
          { class: "facts" },
          h("dt", { text: "Now" }),
          h("dd", {}, healthDot(health.state, health.reason), ` ${health.state}${health.since ? ` since ${time(health.since)}` : ""}`),
          h("dt", { text: "Last check" }),
          h("dd", { text: `${ago(health.checked)}${health.status ? ` · status ${health.status}` : ""}${health.latency_ms !== undefined ? ` · ${health.latency_ms} ms` : ""}${health.reason ? ` · ${health.reason}` : ""}` }),
          h("dt", { text: "Steering" }),
          h("dd", { text: record.steering ? steeringSummary(record.steering) : "none" }),
        ),
        table(["Time", "Change", "Status", "Latency", "Reason"], rows, { caption: "State changes", empty: "No changes recorded yet." }),
      );
    } catch (err) {
      holder.replaceChildren(h("p", { class: "form-error", role: "alert", text: err.message }));
    }
  };
  await load();
  const timer = setInterval(() => !document.hidden && load(), 3000);
  return () => clearInterval(timer);
}
