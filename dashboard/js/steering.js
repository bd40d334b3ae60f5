// The Traffic steering… dialog of an A or AAAA record: where it answers, its weight, backup,
// its health check with Test now, Save and Remove steering (which keeps the record).

import { api, enc } from "./api.js";
import { h, bare, field, input, button, checkbox, formError, showErrors, clearErrors, openDialog, toast, uid } from "./ui.js";
import { COUNTRIES, CONTINENTS } from "./places.js";
import { checkForm } from "./check-form.js";

export function steeringDialog(zone, record, { canEdit, onSaved }) {
  openDialog(
    `Traffic steering: ${bare(record.fqdn)} ${record.type} ${record.value}`,
    (body, close) => {
      const spec = record.steering || {};
      const disabled = !canEdit;
      const countries = new Set(spec.countries || []);

      // Countries: a search box over a checkbox list, with the chosen ones above it.
      const chosen = h("ul", { class: "chips", "aria-label": "Chosen countries" });
      const search = input({ type: "search", placeholder: "Germany, DE, …", disabled, autocomplete: "off" });
      const listId = uid("countries");
      search.setAttribute("aria-controls", listId);
      const list = h("div", { class: "country-list", id: listId, role: "group", "aria-label": "Countries" });
      const boxes = new Map();
      const renderChosen = () => {
        chosen.replaceChildren(
          ...[...countries].sort().map((code) =>
            h(
              "li",
              {},
              code,
              disabled
                ? null
                : h(
                    "button",
                    {
                      type: "button",
                      class: "icon",
                      "aria-label": `Remove ${code}`,
                      onclick: () => {
                        countries.delete(code);
                        const box = boxes.get(code);
                        if (box) box.checked = false;
                        renderChosen();
                      },
                    },
                    "×",
                  ),
            ),
          ),
        );
        if (countries.size === 0) chosen.append(h("li", { class: "none", text: "No countries" }));
      };
      for (const country of COUNTRIES) {
        const id = uid("c");
        const box = h("input", { type: "checkbox", id, value: country.code, checked: countries.has(country.code), disabled });
        box.addEventListener("change", () => {
          if (box.checked) countries.add(country.code);
          else countries.delete(country.code);
          renderChosen();
        });
        boxes.set(country.code, box);
        list.append(
          h("div", { class: "option", dataset: { search: `${country.code} ${country.name}`.toLowerCase() } }, box, h("label", { for: id, text: `${country.name} (${country.code})` })),
        );
      }
      search.addEventListener("input", () => {
        const q = search.value.trim().toLowerCase();
        for (const option of list.children) option.hidden = q !== "" && !option.dataset.search.includes(q);
      });
      // Enter in the search box picks the single (or exact) match instead of submitting.
      search.addEventListener("keydown", (event) => {
        if (event.key !== "Enter") return;
        event.preventDefault();
        const visible = [...list.children].filter((o) => !o.hidden);
        const q = search.value.trim().toUpperCase();
        const exact = visible.find((o) => o.querySelector("input").value === q);
        const pick = exact || (visible.length === 1 ? visible[0] : null);
        if (pick) {
          const box = pick.querySelector("input");
          box.checked = true;
          countries.add(box.value);
          renderChosen();
          search.value = "";
          search.dispatchEvent(new Event("input"));
        }
      });
      renderChosen();

      const continentBoxes = CONTINENTS.map(([code, name]) =>
        checkbox(`${name} (${code})`, (spec.continents || []).includes(code), { value: code, disabled }),
      );
      const weight = input({ name: "weight", type: "number", min: 0, max: 1000000, value: spec.weight ?? "", placeholder: "1", disabled });
      const backup = checkbox("Backup: answer only when no other record of this name is healthy", spec.backup, { disabled, name: "backup" });
      const check = checkForm(spec.check, "steering.check.", { disabled });
      const error = formError();
      const result = h("div", { class: "test-result", role: "status", "aria-live": "polite" });

      const read = () => {
        const out = {};
        if (countries.size) out.countries = [...countries].sort();
        const continents = continentBoxes.map((w) => w.querySelector("input")).filter((b) => b.checked).map((b) => b.value);
        if (continents.length) out.continents = continents;
        if (weight.value.trim() !== "") out.weight = Number(weight.value);
        if (backup.querySelector("input").checked) out.backup = true;
        const c = check.read();
        if (c) out.check = c;
        return out;
      };

      const testNow = async () => {
        clearErrors(form);
        const c = check.read();
        if (!c) {
          result.replaceChildren(h("p", { class: "hint", text: "Choose a health check first." }));
          return;
        }
        result.replaceChildren(h("p", { class: "hint", text: "Testing…" }));
        try {
          const r = await api.post("/checks/test", { address: record.value, name: record.fqdn, check: c });
          result.replaceChildren(
            h(
              "dl",
              { class: r.healthy ? "verdict up" : "verdict down", dataset: { verdict: r.healthy ? "healthy" : "unhealthy" } },
              h("dt", { text: "Verdict" }),
              h("dd", { text: r.healthy ? "Healthy" : "Unhealthy" }),
              h("dt", { text: "Status" }),
              h("dd", { text: r.status ?? "—" }),
              h("dt", { text: "Latency" }),
              h("dd", { text: `${r.latency_ms} ms` }),
              h("dt", { text: "Reason" }),
              h("dd", { text: r.reason || (r.healthy ? "check passed" : "—") }),
            ),
          );
        } catch (err) {
          result.replaceChildren();
          // The test endpoint names fields `check.port`; the form knows them as `steering.check.port`.
          showErrors(form, { errors: err.errors.map((e) => ({ ...e, field: e.field ? `steering.${e.field}` : "" })) });
        }
      };

      const save = async (event) => {
        event.preventDefault();
        clearErrors(form);
        try {
          const saved = await api.put(`/zones/${enc(zone)}/records/${record.id}/steering`, read());
          close();
          toast("Steering saved");
          onSaved(saved);
        } catch (err) {
          // The dialog stays open with everything as typed.
          showErrors(form, err);
        }
      };

      const remove = async () => {
        clearErrors(form);
        try {
          await api.del(`/zones/${enc(zone)}/records/${record.id}/steering`);
          close();
          toast("Steering removed; the record stays");
          onSaved(null);
        } catch (err) {
          showErrors(form, err);
        }
      };

      const form = h(
        "form",
        { class: "steering" },
        error,
        h(
          "fieldset",
          { dataset: { field: "steering.countries" } },
          h("legend", { text: "Countries" }),
          h("p", { class: "hint", text: "Answer clients from these countries (none: everywhere, unless continents are set)." }),
          chosen,
          field("Search countries", search),
          list,
          h("p", { class: "field-error", role: "alert", hidden: true }),
        ),
        h(
          "fieldset",
          { class: "continents", dataset: { field: "steering.continents" } },
          h("legend", { text: "Continents" }),
          h("div", { class: "grid" }, continentBoxes),
          h("p", { class: "field-error", role: "alert", hidden: true }),
        ),
        h(
          "div",
          { class: "grid" },
          field("Weight", weight, { field: "steering.weight", hint: "Share among the healthy records that match; 0 answers only when all left are 0." }),
          h("div", { dataset: { field: "steering.backup" } }, backup),
        ),
        check.element,
        result,
        canEdit
          ? h(
              "div",
              { class: "actions" },
              button("Test now", testNow),
              record.steering ? button("Remove steering", remove, { class: "danger" }) : null,
              h("span", { class: "spacer" }),
              button("Cancel", close),
              h("button", { type: "submit", class: "primary", text: "Save" }),
            )
          : h("div", { class: "actions" }, h("p", { class: "hint", text: "Viewers can look but not change steering." }), button("Close", close)),
      );
      form.addEventListener("submit", canEdit ? save : (e) => e.preventDefault());
      body.append(form);
    },
    { wide: true },
  );
}

// A short summary of a record's steering for its badge.
export function steeringSummary(spec) {
  const parts = [];
  const places = [...(spec.countries || []), ...(spec.continents || [])];
  parts.push(places.length ? places.join(", ") : "everywhere");
  if (spec.weight !== undefined && spec.weight !== null) parts.push(`weight ${spec.weight}`);
  if (spec.backup) parts.push("backup");
  if (spec.check) parts.push(spec.check.kind);
  return parts.join(" · ");
}
