// Explain: how dnz would answer a query from a given client, through the same code as the
// DNS path.

import { api } from "../api.js";
import { h, field, input, select, formError, showErrors, clearErrors, pageHeader, fill } from "../ui.js";

export async function render(main) {
  const name = input({ name: "name", placeholder: "www.example.com", required: true });
  const type = select(["A", "AAAA", "CNAME", "MX", "TXT", "NS", "SOA", "SRV", "CAA", "ANY"], "A", { name: "type" });
  const client = input({ name: "client", placeholder: "203.0.113.7", required: true });
  const ecs = input({ name: "ecs", placeholder: "optional: 24 or 198.51.100.0/24" });
  const out = h("section", { class: "explain-result", "aria-live": "polite", "aria-label": "Decision" });
  const form = h(
    "form",
    { class: "card" },
    formError(),
    h(
      "div",
      { class: "row" },
      field("Name", name, { field: "name" }),
      field("Type", type, { field: "type" }),
      field("Client address", client, { field: "client" }),
      field("EDNS Client Subnet", ecs, { field: "ecs" }),
      h("div", { class: "actions" }, h("button", { type: "submit", class: "primary", text: "Explain" })),
    ),
  );
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    clearErrors(form);
    const q = new URLSearchParams({ name: name.value.trim(), type: type.value, client: client.value.trim() });
    if (ecs.value.trim()) q.set("ecs", ecs.value.trim());
    try {
      const r = await api.get(`/explain?${q}`);
      const where = r.client
        ? [r.client.country, r.client.continent].filter(Boolean).join(", ") || r.client.status
        : "unknown";
      fill(
        out,
        h("h2", { text: r.query }),
        h(
          "dl",
          { class: "facts" },
          h("dt", { text: "Response code" }),
          h("dd", { text: r.rcode }),
          h("dt", { text: "Client located" }),
          h("dd", { text: `${where}${r.client && r.client.network ? ` (network ${r.client.network})` : ""}` }),
          h("dt", { text: "ECS scope" }),
          h("dd", { text: `/${r.ecs_scope}` }),
        ),
        h("h3", { text: "Answer" }),
        r.answer.length ? h("pre", { class: "answer", text: r.answer.join("\n") }) : h("p", { text: "(empty)" }),
        r.authority.length ? [h("h3", { text: "Authority" }), h("pre", { text: r.authority.join("\n") })] : null,
        h("h3", { text: "Steps" }),
        h("ol", { class: "steps" }, r.steps.map((s) => h("li", { text: s }))),
      );
    } catch (err) {
      out.replaceChildren();
      showErrors(form, err);
    }
  });
  main.append(pageHeader("Explain a query"), h("p", { class: "sub", text: "How dnz answers a name for a client, step by step, with the same code that answers DNS queries." }), form, out);
}
