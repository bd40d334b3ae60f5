import { api, setCsrf } from "../api.js";
import { h, field, input, formError, showErrors, clearErrors } from "../ui.js";

export async function render(main, _params, { session, go }) {
  const name = input({ name: "name", autocomplete: "username", required: true });
  const password = input({ name: "password", type: "password", autocomplete: "current-password", required: true });
  const error = formError();
  const form = h(
    "form",
    { class: "login card", "aria-labelledby": "login-title" },
    h("h1", { id: "login-title", text: "Log in to dnz" }),
    error,
    field("User name", name, { field: "name" }),
    field("Password", password, { field: "password" }),
    h("div", { class: "actions" }, h("button", { type: "submit", class: "primary", text: "Log in" })),
  );
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    clearErrors(form);
    try {
      const s = await api.post("/session", { name: name.value, password: password.value, cookie: true });
      session.user = s.user;
      session.role = s.role;
      setCsrf(s.csrf);
      const next = sessionStorage.getItem("dnz.after-login") || "/zones";
      sessionStorage.removeItem("dnz.after-login");
      go(next === "/login" ? "/zones" : next);
    } catch (err) {
      showErrors(form, err);
      password.select();
    }
  });
  main.append(form);
  name.focus();
}
