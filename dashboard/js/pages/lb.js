// Load balancing: a zone's pools of origins (with their health) and its load balancers.

import { api, enc } from "../api.js";
import { h, bare, field, input, select, button, checkbox, formError, showErrors, clearErrors, openDialog, confirmDialog, table, pageHeader, toast, healthDot } from "../ui.js";
import { checkForm } from "../check-form.js";

const POLL_MS = 3000;
const HEALTH = { healthy: "up", unhealthy: "down" };

export async function render(main, [param], { session, go }) {
  const zone = param && bare(param);
  let zones;
  try {
    zones = await api.get("/zones");
  } catch (err) {
    main.append(h("p", { class: "form-error", role: "alert", text: err.message }));
    return;
  }
  if (!zone && zones.length) {
    go(`/load-balancing/${enc(bare(zones[0].name))}`);
    return;
  }
  const names = zones.map((z) => bare(z.name));
  const picker = select(names, zone, { name: "zone" });
  picker.addEventListener("change", () => go(`/load-balancing/${enc(picker.value)}`));
  main.append(pageHeader("Load balancing", field("Zone", picker)));
  if (!zone) {
    main.append(h("p", { class: "notice", text: "Create a zone first; pools and load balancers live in a zone." }));
    return;
  }
  const canEdit = session.can("editor");
  const poolsHolder = h("div", { class: "loading", text: "Loading pools…" });
  const lbsHolder = h("div", { class: "loading", text: "Loading load balancers…" });
  let pools = [];
  let shape = "";

  const refresh = async (force = false) => {
    let lbs;
    try {
      [pools, lbs] = await Promise.all([api.get(`/zones/${enc(zone)}/pools`), api.get(`/zones/${enc(zone)}/load-balancers`)]);
    } catch (err) {
      poolsHolder.replaceChildren(h("p", { class: "form-error", role: "alert", text: err.message }));
      return;
    }
    // Health changes redraw only the dots; anything else redraws the lists.
    const next = JSON.stringify([pools.map((p) => ({ ...p, origins: p.origins.map((o) => ({ ...o, health: null, check_state: null })) })), lbs]);
    if (!force && next === shape) {
      for (const pool of pools) {
        for (const origin of pool.origins) {
          const cell = poolsHolder.querySelector(`[data-origin="${origin.id}"] .health-cell`);
          if (cell) cell.replaceChildren(...originHealth(origin));
        }
      }
      return;
    }
    shape = next;
    poolsHolder.className = "";
    poolsHolder.replaceChildren(...pools.map((pool) => poolCard(zone, pool, canEdit, () => refresh(true))));
    if (pools.length === 0) poolsHolder.append(h("p", { class: "empty", text: "No pools yet." }));
    lbsHolder.className = "";
    lbsHolder.replaceChildren(lbTable(zone, lbs, pools, canEdit, () => refresh(true)));
  };

  main.append(
    h(
      "section",
      { "aria-labelledby": "pools-title" },
      h("div", { class: "page-header" }, h("h2", { id: "pools-title", text: "Pools" }), canEdit ? button("Create pool", () => poolDialog(zone, null, () => refresh(true)), { class: "primary" }) : null),
      poolsHolder,
    ),
    h(
      "section",
      { "aria-labelledby": "lbs-title" },
      h("div", { class: "page-header" }, h("h2", { id: "lbs-title", text: "Load balancers" }), canEdit ? button("Create load balancer", () => lbDialog(zone, null, pools, () => refresh(true)), { class: "primary" }) : null),
      lbsHolder,
    ),
  );
  await refresh(true);
  const timer = setInterval(() => !document.hidden && refresh(), POLL_MS);
  return () => clearInterval(timer);
}

function originHealth(origin) {
  const state = HEALTH[origin.health] || "unknown";
  const reason = origin.check_state && origin.check_state.reason;
  return [healthDot(origin.check ? state : "unknown", origin.check ? reason : "no health check"), ` ${origin.check ? origin.health : "not checked"}`];
}

function poolSpec(pool) {
  return {
    name: pool.name,
    enabled: pool.enabled,
    algorithm: pool.algorithm,
    location: pool.location || undefined,
    origins: pool.origins.map((o) => ({ address: o.address, enabled: o.enabled, weight: o.weight, priority: o.priority, check: o.check || undefined })),
  };
}

function poolCard(zone, pool, canEdit, changed) {
  const save = (spec) => api.put(`/zones/${enc(zone)}/pools/${pool.id}`, spec);
  const rows = pool.origins.map((origin, idx) =>
    h(
      "tr",
      { dataset: { origin: origin.id } },
      h("td", { class: "health-cell" }, originHealth(origin)),
      h("td", { class: "mono", text: origin.address }),
      h("td", { class: "num", text: origin.weight }),
      h("td", { class: "num", text: origin.priority }),
      h("td", { text: origin.enabled ? "yes" : "no" }),
      h("td", { text: origin.check ? origin.check.kind : "none" }),
      h(
        "td",
        { class: "row-actions" },
        canEdit
          ? [
              button("Edit", () => originDialog(zone, pool, idx, changed), { class: "small", "aria-label": `Edit origin ${origin.address}` }),
              button(
                "Remove",
                async () => {
                  if (!(await confirmDialog("Remove origin", `Remove ${origin.address} from ${pool.name}?`, "Remove"))) return;
                  const spec = poolSpec(pool);
                  spec.origins.splice(idx, 1);
                  try {
                    await save(spec);
                    changed();
                  } catch (err) {
                    toast(err.message, "error");
                  }
                },
                { class: "small danger", "aria-label": `Remove origin ${origin.address}` },
              ),
            ]
          : null,
      ),
    ),
  );
  const result = h("div", { class: "test-result", role: "status", "aria-live": "polite" });
  return h(
    "article",
    { class: "card pool", "aria-label": `Pool ${pool.name}` },
    h(
      "header",
      {},
      h("h3", { text: pool.name }),
      h("span", { class: "badge", text: `${pool.algorithm}${pool.enabled ? "" : " · disabled"}${pool.location ? ` · ${pool.location.latitude}, ${pool.location.longitude}` : ""}` }),
      h(
        "div",
        { class: "actions" },
        canEdit
          ? [
              button(
                "Check now",
                async () => {
                  result.textContent = "Checking…";
                  try {
                    const checks = await api.post(`/zones/${enc(zone)}/pools/${pool.id}/check`);
                    result.replaceChildren(h("ul", {}, checks.map((c) => h("li", {}, healthDot(c.result.healthy ? "up" : "down"), ` ${c.address}: ${c.result.healthy ? "healthy" : "unhealthy"}${c.result.status ? ` · ${c.result.status}` : ""} · ${c.result.latency_ms} ms${c.result.reason ? ` · ${c.result.reason}` : ""}`))));
                  } catch (err) {
                    result.textContent = err.message;
                  }
                },
                { class: "small", "aria-label": `Check origins of ${pool.name} now` },
              ),
              button("Add origin", () => originDialog(zone, pool, null, changed), { class: "small", "aria-label": `Add origin to ${pool.name}` }),
              button("Edit pool", () => poolDialog(zone, pool, changed), { class: "small", "aria-label": `Edit pool ${pool.name}` }),
              button(
                "Delete",
                async () => {
                  if (!(await confirmDialog("Delete pool", `Delete pool ${pool.name}?`))) return;
                  try {
                    await api.del(`/zones/${enc(zone)}/pools/${pool.id}`);
                    changed();
                  } catch (err) {
                    toast(err.message, "error");
                  }
                },
                { class: "small danger", "aria-label": `Delete pool ${pool.name}` },
              ),
            ]
          : null,
      ),
    ),
    table(["Health", "Address", "Weight", "Priority", "Enabled", "Check", ""], rows, { caption: `Origins of ${pool.name}`, empty: "No origins." }),
    result,
  );
}

function poolDialog(zone, pool, changed) {
  openDialog(pool ? `Edit pool ${pool.name}` : "Create pool", (body, close) => {
    const name = input({ name: "name", value: pool ? pool.name : "", required: true });
    const algorithm = select([["weighted", "weighted"], ["failover", "failover (by priority)"]], pool ? pool.algorithm : "weighted", { name: "algorithm" });
    const enabled = checkbox("Enabled", pool ? pool.enabled : true);
    const lat = input({ name: "latitude", type: "number", step: "any", value: pool && pool.location ? pool.location.latitude : "" });
    const lon = input({ name: "longitude", type: "number", step: "any", value: pool && pool.location ? pool.location.longitude : "" });
    const form = h(
      "form",
      {},
      formError(),
      field("Pool name", name, { field: "name" }),
      field("Algorithm", algorithm, { field: "algorithm" }),
      enabled,
      h("fieldset", { dataset: { field: "location" } }, h("legend", { text: "Location (for proximity steering)" }), h("div", { class: "grid" }, field("Latitude", lat), field("Longitude", lon)), h("p", { class: "field-error", role: "alert", hidden: true })),
      h("div", { class: "actions" }, button("Cancel", close), h("button", { type: "submit", class: "primary", text: pool ? "Save" : "Create" })),
    );
    form.addEventListener("submit", async (event) => {
      event.preventDefault();
      clearErrors(form);
      const spec = pool ? poolSpec(pool) : { origins: [] };
      spec.name = name.value.trim();
      spec.algorithm = algorithm.value;
      spec.enabled = enabled.querySelector("input").checked;
      spec.location = lat.value !== "" || lon.value !== "" ? { latitude: Number(lat.value), longitude: Number(lon.value) } : undefined;
      try {
        if (pool) await api.put(`/zones/${enc(zone)}/pools/${pool.id}`, spec);
        else await api.post(`/zones/${enc(zone)}/pools`, spec);
        close();
        toast(pool ? "Pool saved" : `Created pool ${spec.name}`);
        changed();
      } catch (err) {
        showErrors(form, err);
      }
    });
    body.append(form);
  });
}

function originDialog(zone, pool, idx, changed) {
  const origin = idx === null ? null : pool.origins[idx];
  const at = idx === null ? pool.origins.length : idx;
  const prefix = `origins[${at}].`;
  openDialog(
    origin ? `Edit origin ${origin.address}` : `Add origin to ${pool.name}`,
    (body, close) => {
      const address = input({ name: "address", value: origin ? origin.address : "", placeholder: "192.0.2.10 or 2001:db8::10", required: true });
      const weight = input({ name: "weight", type: "number", min: 0, value: origin ? origin.weight : "", placeholder: "1" });
      const priority = input({ name: "priority", type: "number", min: 0, value: origin ? origin.priority : "", placeholder: "0" });
      const enabled = checkbox("Enabled", origin ? origin.enabled : true);
      const check = checkForm(origin ? origin.check : null, `${prefix}check.`);
      const form = h(
        "form",
        {},
        formError(),
        h("div", { class: "grid" }, field("Address", address, { field: `${prefix}address` }), field("Weight", weight, { field: `${prefix}weight` }), field("Priority", priority, { field: `${prefix}priority`, hint: "Failover pools answer the lowest priority that is healthy." })),
        enabled,
        check.element,
        h("div", { class: "actions" }, button("Cancel", close), h("button", { type: "submit", class: "primary", text: "Save" })),
      );
      form.addEventListener("submit", async (event) => {
        event.preventDefault();
        clearErrors(form);
        const spec = poolSpec(pool);
        const next = { address: address.value.trim(), enabled: enabled.querySelector("input").checked };
        if (weight.value !== "") next.weight = Number(weight.value);
        if (priority.value !== "") next.priority = Number(priority.value);
        const c = check.read();
        if (c) next.check = c;
        spec.origins[at] = next;
        try {
          await api.put(`/zones/${enc(zone)}/pools/${pool.id}`, spec);
          close();
          toast("Origin saved");
          changed();
        } catch (err) {
          showErrors(form, err);
        }
      });
      body.append(form);
    },
    { wide: true },
  );
}

function rulesText(rules) {
  return (rules || []).map((r) => `${r.kind}:${r.key}=${r.pools.join(",")}`).join("\n");
}

function parseRules(text) {
  const rules = [];
  for (const [n, raw] of text.split("\n").entries()) {
    const line = raw.trim();
    if (!line) continue;
    const m = line.match(/^(\w+):([^=\s]+)\s*=\s*(.+)$/);
    if (!m) throw { errors: [{ field: "rules", message: `line ${n + 1}: write kind:key=pool1,pool2 (e.g. country:DE=eu-pool)` }] };
    rules.push({ kind: m[1], key: m[2], pools: m[3].split(",").map((s) => s.trim()).filter(Boolean) });
  }
  return rules;
}

function lbTable(zone, lbs, pools, canEdit, changed) {
  const rows = lbs.map((lb) =>
    h(
      "tr",
      {},
      h("td", { text: bare(lb.fqdn) }),
      h("td", { text: lb.pools.join(", ") }),
      h("td", { text: lb.fallback || "—" }),
      h("td", { text: `${lb.steering || "off"}${lb.rules && lb.rules.length ? ` · ${lb.rules.length} rules` : ""}` }),
      h("td", { text: lb.affinity || "none" }),
      h("td", { class: "num", text: lb.ttl ?? 30 }),
      h("td", { text: lb.enabled === false ? "disabled" : "enabled" }),
      h(
        "td",
        { class: "row-actions" },
        canEdit
          ? [
              button("Edit", () => lbDialog(zone, lb, pools, changed), { class: "small", "aria-label": `Edit load balancer ${lb.name}` }),
              button(
                "Delete",
                async () => {
                  if (!(await confirmDialog("Delete load balancer", `Delete ${lb.fqdn}?`))) return;
                  try {
                    await api.del(`/zones/${enc(zone)}/load-balancers/${lb.id}`);
                    changed();
                  } catch (err) {
                    toast(err.message, "error");
                  }
                },
                { class: "small danger", "aria-label": `Delete load balancer ${lb.name}` },
              ),
            ]
          : null,
      ),
    ),
  );
  return table(["Name", "Pools", "Fallback", "Steering", "Affinity", "TTL", "State", ""], rows, { caption: "Load balancers", empty: "No load balancers yet." });
}

function lbDialog(zone, lb, pools, changed) {
  openDialog(
    lb ? `Edit load balancer ${bare(lb.fqdn)}` : "Create load balancer",
    (body, close) => {
      const names = pools.map((p) => p.name);
      const name = input({ name: "name", value: lb ? lb.name : "", placeholder: "www", required: true });
      const poolList = input({ name: "pools", value: lb ? lb.pools.join(", ") : "", placeholder: names.join(", "), required: true });
      const fallback = select([["", "none"], ...names.map((n) => [n, n])], lb ? lb.fallback || "" : "", { name: "fallback" });
      const steering = select(["off", "random", "geographic", "proximity"], lb ? lb.steering || "off" : "off", { name: "steering" });
      const locateBy = select(["pop", "resolver"], lb ? lb.locate_by || "pop" : "pop", { name: "locate_by" });
      const affinity = select(["none", "client-ip"], lb ? lb.affinity || "none" : "none", { name: "affinity" });
      const ttl = input({ name: "ttl", type: "number", min: 5, max: 3600, value: lb && lb.ttl !== undefined ? lb.ttl : "", placeholder: "30" });
      const rules = h("textarea", { rows: 4, spellcheck: false, placeholder: "country:DE=eu-pool\ncontinent:NA=us-pool,eu-pool\npop:fra=eu-pool" });
      rules.value = lb ? rulesText(lb.rules) : "";
      const enabled = checkbox("Enabled", lb ? lb.enabled !== false : true);
      const form = h(
        "form",
        {},
        formError(),
        h(
          "div",
          { class: "grid" },
          field("Name", name, { field: "name" }),
          field("Default pools, in order", poolList, { field: "pools", hint: names.length ? `Pools of ${zone}: ${names.join(", ")}` : "Create a pool first." }),
          field("Fallback pool", fallback, { field: "fallback" }),
          field("Steering", steering, { field: "steering" }),
          field("Locate clients by", locateBy, { field: "locate_by" }),
          field("Session affinity", affinity, { field: "affinity" }),
          field("TTL (s)", ttl, { field: "ttl" }),
        ),
        field("Rules, one per line (geographic steering)", rules, { field: "rules" }),
        enabled,
        h("div", { class: "actions" }, button("Cancel", close), h("button", { type: "submit", class: "primary", text: lb ? "Save" : "Create" })),
      );
      form.addEventListener("submit", async (event) => {
        event.preventDefault();
        clearErrors(form);
        try {
          const spec = {
            name: name.value.trim(),
            enabled: enabled.querySelector("input").checked,
            pools: poolList.value.split(",").map((s) => s.trim()).filter(Boolean),
            rules: parseRules(rules.value),
            steering: steering.value,
            locate_by: locateBy.value,
            affinity: affinity.value,
          };
          if (fallback.value) spec.fallback = fallback.value;
          if (ttl.value !== "") spec.ttl = Number(ttl.value);
          if (lb) await api.put(`/zones/${enc(zone)}/load-balancers/${lb.id}`, spec);
          else await api.post(`/zones/${enc(zone)}/load-balancers`, spec);
          close();
          toast(lb ? "Load balancer saved" : `Created ${spec.name}`);
          changed();
        } catch (err) {
          showErrors(form, err);
        }
      });
      body.append(form);
    },
    { wide: true },
  );
}
