// A zone's records: add, edit, delete; steered records carry a badge and a health dot that
// follow the server by polling every two seconds.

import { api, enc } from "../api.js";
import { h, bare, field, input, select, button, formError, showErrors, clearErrors, openDialog, confirmDialog, table, pageHeader, toast, healthDot, ago } from "../ui.js";
import { steeringDialog, steeringSummary } from "../steering.js";

const TYPES = ["A", "AAAA", "CNAME", "MX", "TXT", "NS", "SRV", "CAA", "PTR", "DS", "SSHFP", "TLSA", "HTTPS", "SVCB", "NAPTR"];
const POLL_MS = 2000;

export async function render(main, [name], { session }) {
  const zone = bare(name);
  const canEdit = session.can("editor");
  const info = h("p", { class: "sub" });
  const holder = h("div", { class: "loading", text: "Loading records…" });
  const exportLink = h("a", { class: "button", href: `/api/v1/zones/${enc(zone)}/export`, download: `${zone}.zone`, text: "Export zone file" });
  main.append(
    h("nav", { class: "crumbs", "aria-label": "Breadcrumb" }, h("a", { href: "#/zones", text: "Zones" }), " / ", zone),
    pageHeader(zone, exportLink),
    info,
  );
  if (canEdit) main.append(addForm(zone, () => refresh(true)));
  main.append(holder);

  let current = null;
  let shape = "";
  let rows = new Map();

  async function refresh(force = false) {
    let records;
    try {
      const [z, list] = await Promise.all([api.get(`/zones/${enc(zone)}`), api.get(`/zones/${enc(zone)}/records`)]);
      info.textContent = `Serial ${z.serial} · ${z.record_count} records · default TTL ${z.default_ttl} s`;
      records = list;
    } catch (err) {
      holder.replaceChildren(h("p", { class: "form-error", role: "alert", text: err.message }));
      return;
    }
    current = records;
    // Rebuild the table only when records changed; otherwise touch just the health cells so
    // focus and scrolling stay where the user left them.
    const nextShape = JSON.stringify(records.map((r) => [r.id, r.name, r.type, r.ttl, r.value, r.steering]));
    if (force || nextShape !== shape) {
      shape = nextShape;
      rows = new Map();
      const body = records.map((record) => {
        const row = recordRow(zone, record, canEdit, () => refresh(true));
        rows.set(record.id, row);
        return row;
      });
      const t = table(["Name", "Type", "TTL", "Value", "Steering", ""], body, { caption: `Records of ${zone}`, empty: "No records yet." });
      t.classList.add("records");
      holder.replaceChildren(t);
      holder.className = "";
    } else {
      for (const record of records) {
        const row = rows.get(record.id);
        if (row) row.querySelector(".steering-cell").replaceChildren(...steeringCell(zone, record));
      }
    }
  }

  await refresh(true);
  const timer = setInterval(() => {
    if (!document.hidden && current !== null) refresh();
  }, POLL_MS);
  return () => clearInterval(timer);
}

function steeringCell(zone, record) {
  if (!record.steering) return [];
  const health = record.health;
  const detail = health ? [health.reason, health.checked ? `checked ${ago(health.checked)}` : null].filter(Boolean).join(", ") : "no health check";
  return [
    health ? healthDot(health.state, detail) : h("span", { class: "dot none", role: "img", "aria-label": "no health check", title: "no health check", dataset: { health: "none" } }),
    h("span", { class: "badge", title: "Traffic steering", text: `Steered: ${steeringSummary(record.steering)}` }),
    health && health.state === "down" && health.reason ? h("span", { class: "reason", text: health.reason }) : null,
    record.steering.check ? h("a", { class: "small", href: `#/zones/${enc(zone)}/records/${record.id}/health`, text: "Health log" }) : null,
  ].filter(Boolean);
}

function recordRow(zone, record, canEdit, changed) {
  const steerable = record.type === "A" || record.type === "AAAA";
  const label = `${record.name} ${record.type} ${record.value}`;
  const actions = [];
  if (steerable) {
    actions.push(
      button("Traffic steering…", () => steeringDialog(zone, record, { canEdit, onSaved: changed }), {
        class: "small",
        "aria-label": `Traffic steering for ${label}`,
      }),
    );
  }
  if (canEdit) {
    actions.push(button("Edit", () => editDialog(zone, record, changed), { class: "small", "aria-label": `Edit ${label}` }));
    actions.push(
      button(
        "Delete",
        async () => {
          if (!(await confirmDialog("Delete record", `Delete ${label}?`))) return;
          try {
            await api.del(`/zones/${enc(zone)}/records/${record.id}`);
            toast(`Deleted ${label}`);
            changed();
          } catch (err) {
            toast(err.message, "error");
          }
        },
        { class: "small danger", "aria-label": `Delete ${label}` },
      ),
    );
  }
  return h(
    "tr",
    { dataset: { record: record.id, name: record.name, type: record.type, value: record.value } },
    h("td", { text: record.name }),
    h("td", { text: record.type }),
    h("td", { class: "num", text: record.ttl }),
    h("td", { class: "value", text: record.value }),
    h("td", {}, h("div", { class: "steering-cell" }, steeringCell(zone, record))),
    h("td", { class: "row-actions" }, actions),
  );
}

function recordInputs(record = {}) {
  return {
    name: input({ name: "name", value: record.name ?? "", placeholder: "www or @", required: true }),
    type: select(TYPES, record.type || "A", { name: "type" }),
    value: input({ name: "value", value: record.value ?? "", placeholder: "192.0.2.1", required: true }),
    ttl: input({ name: "ttl", type: "number", min: 0, value: record.ttl ?? "", placeholder: "zone default" }),
  };
}

function readRecord(inputs, steering) {
  const spec = { name: inputs.name.value.trim(), type: inputs.type.value, value: inputs.value.value.trim() };
  if (inputs.ttl.value !== "") spec.ttl = Number(inputs.ttl.value);
  if (steering) spec.steering = steering;
  return spec;
}

function addForm(zone, changed) {
  const inputs = recordInputs();
  const error = formError();
  const form = h(
    "form",
    { class: "inline card", "aria-label": "Add a record" },
    h("h2", { text: "Add a record" }),
    error,
    h(
      "div",
      { class: "row" },
      field("Name", inputs.name, { field: "name" }),
      field("Type", inputs.type, { field: "type" }),
      field("Value", inputs.value, { field: "value" }),
      field("TTL (s)", inputs.ttl, { field: "ttl" }),
      h("div", { class: "actions" }, h("button", { type: "submit", class: "primary", text: "Add record" })),
    ),
  );
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    clearErrors(form);
    try {
      const record = await api.post(`/zones/${enc(zone)}/records`, readRecord(inputs));
      toast(`Added ${record.name} ${record.type} ${record.value}`);
      inputs.value.value = "";
      changed();
    } catch (err) {
      // Nothing is cleared on failure: the user fixes the named field and tries again.
      showErrors(form, err);
    }
  });
  return form;
}

function editDialog(zone, record, changed) {
  openDialog(`Edit ${record.name} ${record.type}`, (body, close) => {
    const inputs = recordInputs(record);
    const error = formError();
    const form = h(
      "form",
      {},
      error,
      field("Name", inputs.name, { field: "name" }),
      field("Type", inputs.type, { field: "type" }),
      field("Value", inputs.value, { field: "value" }),
      field("TTL (s)", inputs.ttl, { field: "ttl" }),
      record.steering ? h("p", { class: "hint", text: "The record's traffic steering is kept." }) : null,
      h("div", { class: "actions" }, button("Cancel", close), h("button", { type: "submit", class: "primary", text: "Save" })),
    );
    form.addEventListener("submit", async (event) => {
      event.preventDefault();
      clearErrors(form);
      try {
        await api.put(`/zones/${enc(zone)}/records/${record.id}`, readRecord(inputs, record.steering));
        close();
        toast("Record saved");
        changed();
      } catch (err) {
        showErrors(form, err);
      }
    });
    body.append(form);
  });
}
