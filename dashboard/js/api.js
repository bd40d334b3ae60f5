// The dashboard's only way to the server: the public /api/v1, with the session cookie and the
// session's CSRF token on every write.

let csrf = null;

export class ApiError extends Error {
  constructor(status, body) {
    super((body && body.error) || `request failed with status ${status}`);
    this.status = status;
    this.field = (body && body.field) || null;
    // Every problem the server listed, each naming its field.
    this.errors = (body && body.errors && body.errors.length ? body.errors : null) || [
      { field: this.field || "", message: this.message },
    ];
  }
}

export function setCsrf(token) {
  csrf = token || null;
}

// Called when the session ends under us (expired or logged out elsewhere).
let onUnauthorized = () => {};
export function whenUnauthorized(fn) {
  onUnauthorized = fn;
}

export async function request(method, path, body, { raw = false } = {}) {
  const headers = { Accept: "application/json" };
  if (method !== "GET" && csrf) headers["X-CSRF-Token"] = csrf;
  let payload;
  if (body !== undefined) {
    if (typeof body === "string") {
      headers["Content-Type"] = "text/plain";
      payload = body;
    } else {
      headers["Content-Type"] = "application/json";
      payload = JSON.stringify(body);
    }
  }
  let response;
  try {
    response = await fetch(`/api/v1${path}`, {
      method,
      headers,
      body: payload,
      credentials: "same-origin",
    });
  } catch (e) {
    throw new ApiError(0, { error: `the server cannot be reached (${e.message})` });
  }
  if (response.status === 204) return null;
  const text = await response.text();
  let data = null;
  if (!raw || !response.ok) {
    try {
      data = text ? JSON.parse(text) : null;
    } catch {
      data = { error: text || response.statusText };
    }
  }
  if (!response.ok) {
    if (response.status === 401 && path !== "/session") onUnauthorized();
    throw new ApiError(response.status, data);
  }
  return raw ? text : data;
}

export const api = {
  get: (path) => request("GET", path),
  post: (path, body) => request("POST", path, body),
  put: (path, body) => request("PUT", path, body),
  del: (path) => request("DELETE", path),
  text: (path) => request("GET", path, undefined, { raw: true }),
};

export const enc = encodeURIComponent;
