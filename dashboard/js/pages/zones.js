import { api, enc } from "../api.js";
import { h, bare, field, input, button, formError, showErrors, clearErrors, openDialog, confirmDialog, table, pageHeader, toast } from "../ui.js";

export async function render(main, _params, { session, go }) {
  const list = h("div", { class: "loading", text: "Loading zones…" });
  const actions = [];
  if (session.can("editor")) {
    actions.push(button("Create zone", () => createDialog(go), { class: "primary" }));
    actions.push(button("Import zone file", () => importDialog(go)));
  }
  main.append(pageHeader("Zones", actions), list);
  await load(list, session, go);
}

async function load(list, session, go) {
  let zones;
  try {
    zones = await api.get("/zones");
  } catch (err) {
    list.replaceWith(h("p", { class: "form-error", role: "alert", text: err.message }));
    return;
  }
  const rows = zones.map((zone) => {
    const name = bare(zone.name);
    return h(
      "tr",
      {},
      h("td", {}, h("a", { href: `#/zones/${enc(name)}`, text: name })),
      h("td", { class: "num", text: zone.record_count }),
      h("td", { class: "num", text: zone.serial }),
      h("td", { class: "num", text: zone.default_ttl }),
      h(
        "td",
        { class: "row-actions" },
        session.can("editor")
          ? button(
              "Delete",
              async () => {
                if (!(await confirmDialog("Delete zone", `Delete ${name} and all its records?`))) return;
                try {
                  await api.del(`/zones/${enc(name)}`);
                  toast(`Deleted ${name}`);
                  go("/zones");
                } catch (err) {
                  toast(err.message, "error");
                }
              },
              { class: "danger small", "aria-label": `Delete zone ${name}` },
            )
          : null,
      ),
    );
  });
  list.replaceWith(table(["Zone", "Records", "Serial", "Default TTL", ""], rows, { caption: "Zones served", empty: "No zones yet." }));
}

function createDialog(go) {
  openDialog("Create zone", (body, close) => {
    const name = input({ name: "name", placeholder: "example.com", required: true });
    const ttl = input({ name: "default_ttl", type: "number", min: 0, placeholder: "3600" });
    const ns = input({ name: "ns", placeholder: "ns1.example.com., ns2.example.com." });
    const error = formError();
    const form = h(
      "form",
      {},
      error,
      field("Zone name", name, { field: "name" }),
      field("Default TTL (s)", ttl, { field: "default_ttl" }),
      field("Name servers", ns, { field: "ns", hint: "Comma separated; default ns1 and ns2 in the zone." }),
      h("div", { class: "actions" }, button("Cancel", close), h("button", { type: "submit", class: "primary", text: "Create" })),
    );
    form.addEventListener("submit", async (event) => {
      event.preventDefault();
      clearErrors(form);
      const spec = { name: name.value.trim() };
      if (ttl.value !== "") spec.default_ttl = Number(ttl.value);
      const servers = ns.value.split(",").map((s) => s.trim()).filter(Boolean);
      if (servers.length) spec.ns = servers;
      try {
        const zone = await api.post("/zones", spec);
        close();
        toast(`Created ${zone.name}`);
        go(`/zones/${enc(bare(zone.name))}`);
      } catch (err) {
        showErrors(form, err);
      }
    });
    body.append(form);
  });
}

function importDialog(go) {
  openDialog(
    "Import zone file",
    (body, close) => {
      const name = input({ name: "zone", placeholder: "example.com", required: true });
      const file = h("input", { type: "file", accept: ".zone,.txt,.db,text/plain" });
      const text = h("textarea", { rows: 12, spellcheck: false, placeholder: "$ORIGIN example.com.\n@ 3600 IN SOA …" });
      file.addEventListener("change", async () => {
        if (file.files[0]) text.value = await file.files[0].text();
      });
      const error = formError();
      const form = h(
        "form",
        {},
        h("p", { class: "hint", text: "The file replaces the zone's records; steering of records that stay the same is kept. A bad file changes nothing." }),
        error,
        field("Zone name", name, { field: "name" }),
        field("Zone file", file),
        field("Contents", text, { field: "file" }),
        h("div", { class: "actions" }, button("Cancel", close), h("button", { type: "submit", class: "primary", text: "Import" })),
      );
      form.addEventListener("submit", async (event) => {
        event.preventDefault();
        clearErrors(form);
        try {
          const result = await api.post(`/zones/${enc(name.value.trim())}/import`, text.value);
          close();
          toast(`Imported ${result.records} records into ${result.zone}`);
          go(`/zones/${enc(bare(result.zone))}`);
        } catch (err) {
          // Zone file problems name lines, not form fields: list them all at the top.
          showErrors(form, { errors: err.errors.map((e) => ({ field: e.field === "name" ? "name" : "", message: e.field && e.field !== "name" ? `${e.field}: ${e.message}` : e.message })) });
        }
      });
      body.append(form);
    },
    { wide: true },
  );
}
