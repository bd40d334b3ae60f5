// Settings → Users and API tokens (superadmin).

import { api, enc } from "../api.js";
import { h, field, input, select, button, formError, showErrors, clearErrors, confirmDialog, table, pageHeader, toast, time } from "../ui.js";

export function settingsTabs(active) {
  const tab = (key, href, text) => h("li", {}, h("a", { href, "aria-current": key === active ? "page" : false, text }));
  return h("nav", { class: "tabs", "aria-label": "Settings" }, h("ul", {}, tab("geoip", "#/settings/geoip", "GeoIP database"), tab("users", "#/settings/users", "Users and API tokens")));
}

export async function render(main, _params, { session, go }) {
  const usersHolder = h("div", { class: "loading", text: "Loading users…" });
  const tokensHolder = h("div", { class: "loading", text: "Loading tokens…" });
  const reload = () => go("/settings/users");

  const name = input({ name: "name", required: true, autocomplete: "off" });
  const password = input({ name: "password", type: "password", required: true, autocomplete: "new-password" });
  const role = select([["viewer", "viewer"], ["editor", "editor"], ["superadmin", "superadmin"]], "viewer", { name: "role" });
  const userForm = h(
    "form",
    { class: "card inline", "aria-label": "Add a user" },
    h("h2", { text: "Add a user" }),
    formError(),
    h("div", { class: "row" }, field("User name", name, { field: "name" }), field("Password", password, { field: "password" }), field("Role", role, { field: "role" }), h("div", { class: "actions" }, h("button", { type: "submit", class: "primary", text: "Add user" }))),
  );
  userForm.addEventListener("submit", async (event) => {
    event.preventDefault();
    clearErrors(userForm);
    try {
      await api.post("/users", { name: name.value.trim(), password: password.value, role: role.value });
      toast(`Added ${name.value.trim()}`);
      reload();
    } catch (err) {
      showErrors(userForm, err);
    }
  });

  const tokenName = input({ name: "name", required: true, placeholder: "ci-deploy" });
  const tokenUser = input({ name: "user", placeholder: session.user });
  const shown = h("div", { class: "token-once", role: "status", "aria-live": "polite" });
  const tokenForm = h(
    "form",
    { class: "card inline", "aria-label": "Create an API token" },
    h("h2", { text: "Create an API token" }),
    formError(),
    h("div", { class: "row" }, field("Token name", tokenName, { field: "name" }), field("For user", tokenUser, { field: "user" }), h("div", { class: "actions" }, h("button", { type: "submit", class: "primary", text: "Create token" }))),
    shown,
  );
  tokenForm.addEventListener("submit", async (event) => {
    event.preventDefault();
    clearErrors(tokenForm);
    const body = { name: tokenName.value.trim() };
    if (tokenUser.value.trim()) body.user = tokenUser.value.trim();
    try {
      const t = await api.post("/tokens", body);
      const value = h("input", { readonly: true, value: t.token, class: "mono", id: "new-token" });
      shown.replaceChildren(h("label", { for: "new-token", text: "Copy the token now; it is shown only once:" }), value);
      value.select();
      await loadTokens();
    } catch (err) {
      showErrors(tokenForm, err);
    }
  });

  const loadUsers = async () => {
    const users = await api.get("/users");
    usersHolder.className = "";
    usersHolder.replaceChildren(
      table(
        ["User", "Role", ""],
        users.map((u) =>
          h(
            "tr",
            {},
            h("td", { text: u.name }),
            h("td", { text: u.role }),
            h(
              "td",
              { class: "row-actions" },
              u.name === session.user
                ? h("span", { class: "hint", text: "you" })
                : button(
                    "Delete",
                    async () => {
                      if (!(await confirmDialog("Delete user", `Delete ${u.name} and their tokens?`))) return;
                      try {
                        await api.del(`/users/${enc(u.name)}`);
                        reload();
                      } catch (err) {
                        toast(err.message, "error");
                      }
                    },
                    { class: "small danger", "aria-label": `Delete user ${u.name}` },
                  ),
            ),
          ),
        ),
        { caption: "Users" },
      ),
    );
  };
  const loadTokens = async () => {
    const tokens = await api.get("/tokens");
    tokensHolder.className = "";
    tokensHolder.replaceChildren(
      table(
        ["Name", "User", "Created", ""],
        tokens.map((t) =>
          h(
            "tr",
            {},
            h("td", { text: t.name }),
            h("td", { text: t.user }),
            h("td", { text: time(t.created) }),
            h(
              "td",
              { class: "row-actions" },
              button(
                "Revoke",
                async () => {
                  if (!(await confirmDialog("Revoke token", `Revoke ${t.name} of ${t.user}?`, "Revoke"))) return;
                  try {
                    await api.del(`/tokens/${t.id}`);
                    await loadTokens();
                  } catch (err) {
                    toast(err.message, "error");
                  }
                },
                { class: "small danger", "aria-label": `Revoke token ${t.name} of ${t.user}` },
              ),
            ),
          ),
        ),
        { caption: "API tokens", empty: "No tokens." },
      ),
    );
  };

  main.append(settingsTabs("users"), pageHeader("Users and API tokens"), userForm, usersHolder, tokenForm, tokensHolder);
  try {
    await Promise.all([loadUsers(), loadTokens()]);
  } catch (err) {
    usersHolder.replaceChildren(h("p", { class: "form-error", role: "alert", text: err.message }));
  }
}
