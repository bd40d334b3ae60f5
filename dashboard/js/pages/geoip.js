// Settings → General → GeoIP database: status, source, Download, Update monthly, Look up.

import { api } from "../api.js";
import { h, field, input, button, checkbox, formError, showErrors, clearErrors, pageHeader, toast, time, fill } from "../ui.js";
import { settingsTabs } from "./users.js";

export async function render(main) {
  const status = h("div", { class: "loading", text: "Loading…" });
  const url = input({ name: "url", type: "url", placeholder: "the DB-IP IP to Country Lite monthly file" });
  const monthly = checkbox("Update monthly", false, { name: "auto_update" });
  const monthlyBox = monthly.querySelector("input");
  const sourceForm = h(
    "form",
    { class: "card" },
    h("h2", { text: "Source" }),
    formError(),
    field("Download URL", url, { field: "url", hint: "Empty: the default DB-IP address for this month (last month when not published yet)." }),
    h("div", { dataset: { field: "auto_update" } }, monthly),
    h("div", { class: "actions" }, h("button", { type: "submit", text: "Save source" }), button("Download", () => download(), { class: "primary" })),
  );
  const lookupIp = input({ name: "ip", placeholder: "203.0.113.7", required: true });
  const lookupOut = h("div", { class: "lookup-result", role: "status", "aria-live": "polite" });
  const lookupForm = h(
    "form",
    { class: "card" },
    h("h2", { text: "Look up an address" }),
    formError(),
    h("div", { class: "row" }, field("IP address", lookupIp, { field: "ip" }), h("div", { class: "actions" }, h("button", { type: "submit", text: "Look up" }))),
    lookupOut,
  );

  const show = (s) => {
    url.value = s.default_url ? "" : s.url;
    monthlyBox.checked = s.auto_update;
    status.className = "card";
    fill(
      status,
      h("h2", { text: "Status" }),
      h(
        "dl",
        { class: "facts" },
        h("dt", { text: "Database" }),
        h("dd", { text: s.loaded ? `${s.description || s.database_type || "loaded"}${s.demo ? " (demo)" : ""}` : "none loaded" }),
        h("dt", { text: "File" }),
        h("dd", { text: `${s.path}${s.file_size ? ` · ${(s.file_size / 1048576).toFixed(1)} MiB` : ""}` }),
        h("dt", { text: "Built" }),
        h("dd", { text: time(s.build_epoch) }),
        h("dt", { text: "Source" }),
        h("dd", { text: s.url }),
        h("dt", { text: "Last download" }),
        h("dd", { text: s.last_download ? `${time(s.last_download)}: ${s.last_result || ""}${s.last_error ? ` (${s.last_error})` : ""}` : "never" }),
        h("dt", { text: "Next download" }),
        h("dd", { text: s.auto_update ? time(s.next_download) : "off" }),
      ),
      s.attribution ? h("p", { class: "attribution", text: s.attribution }) : null,
      h("p", { class: "attribution" }, "IP geolocation by ", h("a", { href: "https://db-ip.com", rel: "noopener", text: "DB-IP" }), " (IP to Country Lite, CC BY 4.0)."),
    );
  };

  const load = async () => {
    try {
      show(await api.get("/settings/geoip"));
    } catch (err) {
      status.replaceChildren(h("p", { class: "form-error", role: "alert", text: err.message }));
    }
  };

  const download = async () => {
    clearErrors(sourceForm);
    toast("Downloading…");
    try {
      const s = await api.post("/settings/geoip/download");
      show(s);
      toast(s.last_error ? `Download failed: ${s.last_error}` : "GeoIP database downloaded and loaded", s.last_error ? "error" : "info");
    } catch (err) {
      showErrors(sourceForm, err);
      toast("Download failed", "error");
    }
  };

  sourceForm.addEventListener("submit", async (event) => {
    event.preventDefault();
    clearErrors(sourceForm);
    try {
      show(await api.put("/settings/geoip", { url: url.value.trim() || "default", auto_update: monthlyBox.checked }));
      toast("Source saved");
    } catch (err) {
      showErrors(sourceForm, err);
    }
  });
  monthlyBox.addEventListener("change", async () => {
    try {
      show(await api.put("/settings/geoip", { auto_update: monthlyBox.checked }));
      toast(monthlyBox.checked ? "Monthly updates on" : "Monthly updates off");
    } catch (err) {
      showErrors(sourceForm, err);
    }
  });
  lookupForm.addEventListener("submit", async (event) => {
    event.preventDefault();
    clearErrors(lookupForm);
    try {
      const r = await api.get(`/geoip/lookup?ip=${encodeURIComponent(lookupIp.value.trim())}`);
      lookupOut.replaceChildren(
        h(
          "dl",
          { class: "facts", dataset: { country: r.country || "" } },
          h("dt", { text: "Country" }),
          h("dd", { text: r.country || "—" }),
          h("dt", { text: "Continent" }),
          h("dd", { text: r.continent || "—" }),
          h("dt", { text: "Network" }),
          h("dd", { text: r.network || "—" }),
          h("dt", { text: "Result" }),
          h("dd", { text: r.status }),
        ),
      );
    } catch (err) {
      lookupOut.replaceChildren();
      showErrors(lookupForm, err);
    }
  });

  main.append(settingsTabs("geoip"), pageHeader("GeoIP database"), status, sourceForm, lookupForm);
  await load();
}
