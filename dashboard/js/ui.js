// Small DOM helpers: elements, labelled fields, dialogs and error display. Text always goes in
// through textContent, never innerHTML, so nothing from the server is ever parsed as markup.

export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  // The server checks every value and names the field; the browser's own bubbles would hide
  // those messages.
  if (tag === "form") el.noValidate = true;
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key === "class") el.className = value;
    else if (key === "text") el.textContent = value;
    else if (key.startsWith("on")) el.addEventListener(key.slice(2), value);
    else if (key === "dataset") Object.assign(el.dataset, value);
    else if (key in el && typeof value !== "string") el[key] = value;
    else el.setAttribute(key, value === true ? "" : value);
  }
  append(el, children);
  return el;
}

// Replaces an element's children, skipping empty ones and flattening lists as h() does.
export function fill(el, ...children) {
  el.replaceChildren();
  append(el, children);
  return el;
}

function append(el, children) {
  for (const child of children.flat(Infinity)) {
    if (child === undefined || child === null || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
}

// A domain name as people write it: without the root's trailing dot.
export function bare(name) {
  return name.replace(/\.$/, "");
}

let ids = 0;
export function uid(prefix = "f") {
  ids += 1;
  return `${prefix}-${ids}`;
}

// A labelled input with a place for the server's message about it. `field` is the API's name
// for the value (e.g. `steering.check.port`), so errors land beside the right control.
export function field(label, input, { field: name, hint } = {}) {
  const id = input.id || uid();
  input.id = id;
  const error = h("p", { class: "field-error", id: `${id}-error`, role: "alert", hidden: true });
  const describedBy = [`${id}-error`];
  let hintEl = null;
  if (hint) {
    hintEl = h("p", { class: "hint", id: `${id}-hint`, text: hint });
    describedBy.push(`${id}-hint`);
  }
  input.setAttribute("aria-describedby", describedBy.join(" "));
  const wrap = h(
    "div",
    { class: "field", dataset: name ? { field: name } : {} },
    h("label", { for: id, text: label }),
    input,
    hintEl,
    error,
  );
  return wrap;
}

export function input(attrs = {}) {
  return h("input", { type: "text", ...attrs });
}

export function select(options, value, attrs = {}) {
  const el = h("select", attrs);
  for (const option of options) {
    const [v, text] = Array.isArray(option) ? option : [option, option];
    el.append(h("option", { value: v, text, selected: v === value }));
  }
  return el;
}

export function checkbox(label, checked, attrs = {}) {
  const id = attrs.id || uid();
  const box = h("input", { type: "checkbox", id, checked: !!checked, ...attrs });
  return h("div", { class: "field checkbox" }, box, h("label", { for: id, text: label }));
}

export function button(text, onclick, attrs = {}) {
  return h("button", { type: "button", onclick, ...attrs }, text);
}

// Clears earlier messages, then puts each of the server's problems beside the control whose
// field it names, or at the form's top when no control matches.
export function showErrors(container, err) {
  clearErrors(container);
  const general = container.querySelector(".form-error");
  const problems = err.errors || [{ field: err.field || "", message: err.message }];
  let firstInvalid = null;
  for (const problem of problems) {
    const target = findField(container, problem.field);
    const message = target && target.querySelector(".field-error");
    if (message) {
      message.textContent = message.hidden ? problem.message : `${message.textContent}; ${problem.message}`;
      message.hidden = false;
      const control = target.querySelector("input, select, textarea");
      if (control) {
        control.setAttribute("aria-invalid", "true");
        firstInvalid = firstInvalid || control;
      }
    } else if (general) {
      general.textContent = general.hidden ? problem.message : `${general.textContent}; ${problem.message}`;
      general.hidden = false;
    }
  }
  if (firstInvalid) firstInvalid.focus();
}

function findField(container, name) {
  if (!name) return null;
  // `steering.countries[2]` → `steering.countries` → `steering`.
  let key = name;
  while (key) {
    const found = container.querySelector(`[data-field="${CSS.escape(key)}"]`);
    if (found) return found;
    const cut = Math.max(key.lastIndexOf("."), key.lastIndexOf("["));
    if (cut <= 0) break;
    key = key.slice(0, cut);
  }
  return null;
}

export function clearErrors(container) {
  for (const el of container.querySelectorAll(".field-error, .form-error")) {
    el.textContent = "";
    el.hidden = true;
  }
  for (const el of container.querySelectorAll("[aria-invalid]")) el.removeAttribute("aria-invalid");
}

export function formError() {
  return h("p", { class: "form-error", role: "alert", hidden: true });
}

// A modal dialog on the native <dialog>: focus moves in, Escape closes, focus returns to the
// control that opened it.
export function openDialog(title, build, { wide = false } = {}) {
  const opener = document.activeElement;
  const titleId = uid("dialog-title");
  const dialog = h("dialog", { class: wide ? "wide" : "", "aria-labelledby": titleId });
  const close = () => dialog.close();
  const header = h(
    "header",
    {},
    h("h2", { id: titleId, text: title }),
    h("button", { type: "button", class: "icon", "aria-label": "Close", onclick: close }, "×"),
  );
  dialog.append(header);
  const body = h("div", { class: "dialog-body" });
  dialog.append(body);
  document.body.append(dialog);
  dialog.addEventListener("close", () => {
    dialog.remove();
    if (opener && opener.isConnected) opener.focus();
  });
  build(body, close);
  dialog.showModal();
  const first = body.querySelector("input:not([type=hidden]), select, textarea, button");
  if (first) first.focus();
  return dialog;
}

export function confirmDialog(title, message, confirmText = "Delete") {
  return new Promise((resolve) => {
    let answered = false;
    const dialog = openDialog(title, (body, close) => {
      body.append(
        h("p", { text: message }),
        h(
          "div",
          { class: "actions" },
          button("Cancel", () => close()),
          button(
            confirmText,
            () => {
              answered = true;
              close();
            },
            { class: "danger" },
          ),
        ),
      );
    });
    dialog.addEventListener("close", () => resolve(answered));
  });
}

let toastTimer = null;
export function toast(message, kind = "info") {
  const region = document.getElementById("toast");
  region.textContent = message;
  region.className = `toast ${kind}`;
  region.hidden = false;
  clearTimeout(toastTimer);
  toastTimer = setTimeout(() => {
    region.hidden = true;
  }, 4000);
}

export function healthDot(state, detail) {
  const known = ["up", "down"].includes(state) ? state : "unknown";
  const words = { up: "healthy", down: "unhealthy", unknown: "not checked yet" }[known];
  const label = detail ? `${words}: ${detail}` : words;
  return h("span", {
    class: `dot ${known}`,
    role: "img",
    "aria-label": label,
    title: label,
    dataset: { health: known },
  });
}

export function time(seconds) {
  if (!seconds) return "—";
  return new Date(seconds * 1000).toLocaleString();
}

export function ago(seconds) {
  if (!seconds) return "never";
  const d = Math.max(0, Math.round(Date.now() / 1000 - seconds));
  if (d < 60) return `${d} s ago`;
  if (d < 3600) return `${Math.round(d / 60)} min ago`;
  if (d < 86400) return `${Math.round(d / 3600)} h ago`;
  return `${Math.round(d / 86400)} d ago`;
}

export function table(headers, rows, { caption, empty = "Nothing here yet." } = {}) {
  const t = h("table");
  if (caption) t.append(h("caption", { text: caption }));
  t.append(h("thead", {}, h("tr", {}, headers.map((text) => h("th", { scope: "col", text })))));
  const body = h("tbody");
  if (rows.length === 0) {
    body.append(h("tr", {}, h("td", { colspan: headers.length, class: "empty", text: empty })));
  }
  for (const row of rows) body.append(row);
  t.append(body);
  return t;
}

export function pageHeader(title, ...actions) {
  return h("div", { class: "page-header" }, h("h1", { text: title }), h("div", { class: "actions" }, actions));
}
