// The dashboard shell: who is logged in, the navigation, and a hash router that gives each page
// a container and takes back its timers when the page is left.

import { api, setCsrf, whenUnauthorized } from "./api.js";
import { h } from "./ui.js";
import * as login from "./pages/login.js";
import * as zones from "./pages/zones.js";
import * as records from "./pages/records.js";
import * as healthLog from "./pages/health-log.js";
import * as lb from "./pages/lb.js";
import * as topology from "./pages/topology.js";
import * as explain from "./pages/explain.js";
import * as geoip from "./pages/geoip.js";
import * as users from "./pages/users.js";

const ROLES = ["viewer", "editor", "superadmin"];

export const session = {
  user: null,
  role: null,
  // Whether the logged-in user has at least `role`; the server enforces the same on every call.
  can(role) {
    return this.role !== null && ROLES.indexOf(this.role) >= ROLES.indexOf(role);
  },
};

const routes = [
  [/^\/login$/, login, { public: true }],
  [/^\/zones$/, zones, { nav: "dns" }],
  [/^\/zones\/([^/]+)$/, records, { nav: "dns" }],
  [/^\/zones\/([^/]+)\/records\/(\d+)\/health$/, healthLog, { nav: "dns" }],
  [/^\/load-balancing$/, lb, { nav: "lb" }],
  [/^\/load-balancing\/([^/]+)$/, lb, { nav: "lb" }],
  [/^\/topology$/, topology, { nav: "topology" }],
  [/^\/explain$/, explain, { nav: "explain" }],
  [/^\/settings\/geoip$/, geoip, { nav: "settings", role: "superadmin" }],
  [/^\/settings\/users$/, users, { nav: "settings", role: "superadmin" }],
];

const NAV = [
  ["dns", "#/zones", "DNS"],
  ["lb", "#/load-balancing", "Load balancing"],
  ["topology", "#/topology", "Topology"],
  ["explain", "#/explain", "Explain"],
  ["settings", "#/settings/geoip", "Settings", "superadmin"],
];

let leave = null;

export function go(path) {
  if (location.hash === `#${path}`) route();
  else location.hash = path;
}

function renderNav(active) {
  const nav = document.getElementById("nav");
  nav.replaceChildren();
  if (!session.user) return;
  const list = h("ul");
  for (const [key, href, text, role] of NAV) {
    if (role && !session.can(role)) continue;
    list.append(
      h("li", {}, h("a", { href, "aria-current": key === active ? "page" : false, text })),
    );
  }
  nav.append(list);
  const who = document.getElementById("who");
  who.replaceChildren(
    h("span", { class: "user", text: `${session.user} (${session.role})` }),
    h("button", { type: "button", class: "link", onclick: logout, text: "Log out" }),
  );
}

async function logout() {
  try {
    await api.del("/session");
  } catch {
    // Logged out either way: the cookie is gone or about to expire.
  }
  session.user = null;
  session.role = null;
  setCsrf(null);
  document.getElementById("who").replaceChildren();
  go("/login");
}

export async function loadSession() {
  try {
    const s = await api.get("/session");
    session.user = s.user;
    session.role = s.role;
    setCsrf(s.csrf);
    return true;
  } catch {
    session.user = null;
    session.role = null;
    return false;
  }
}

async function route() {
  if (leave) {
    leave();
    leave = null;
  }
  const path = location.hash.replace(/^#/, "") || "/zones";
  const main = document.getElementById("view");
  let found = null;
  let params = [];
  for (const [pattern, page, opts] of routes) {
    const m = path.match(pattern);
    if (m) {
      found = [page, opts];
      params = m.slice(1).map(decodeURIComponent);
      break;
    }
  }
  if (!found) {
    go("/zones");
    return;
  }
  const [page, opts] = found;
  if (!opts.public && !session.user) {
    if (!(await loadSession())) {
      sessionStorage.setItem("dnz.after-login", path);
      go("/login");
      return;
    }
  }
  renderNav(opts.nav);
  main.replaceChildren();
  if (opts.role && !session.can(opts.role)) {
    main.append(h("p", { class: "notice", text: `This page needs the ${opts.role} role.` }));
    return;
  }
  const cleanup = await page.render(main, params, { session, go, loadSession });
  leave = typeof cleanup === "function" ? cleanup : null;
  const heading = main.querySelector("h1");
  document.title = heading ? `${heading.textContent} · dnz` : "dnz";
}

whenUnauthorized(() => {
  session.user = null;
  session.role = null;
  if (!location.hash.startsWith("#/login")) {
    sessionStorage.setItem("dnz.after-login", location.hash.replace(/^#/, ""));
    go("/login");
  }
});

window.addEventListener("hashchange", route);
route();
