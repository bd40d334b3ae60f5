//! The HTTP side: requests to `/api/v1`, with error statuses turned into [`Failure::Api`] and
//! transport trouble into a message that names the server.

use std::time::Duration;

use api::ErrorBody;
use serde::Serialize;
use ureq::http::Response;
use ureq::{Agent, Body};

use crate::config::TokenSource;
use crate::error::Failure;
use crate::json::Json;

/// Bodies larger than this are refused (a record list of a very large zone fits).
const MAX_BODY: u64 = 512 * 1024 * 1024;
/// An error body is a short JSON object; anything longer is not worth reading.
const MAX_ERROR_BODY: u64 = 64 * 1024;

pub(crate) struct Client {
    agent: Agent,
    server: String,
    token: Option<(String, TokenSource)>,
}

impl Client {
    /// `server` is already normalized (scheme checked, no trailing slash).
    pub(crate) fn new(
        server: String,
        token: Option<(String, TokenSource)>,
    ) -> Result<Client, Failure> {
        if server.starts_with("https://") {
            // The workspace builds ureq without a TLS stack.
            return Err(Failure::usage(format!(
                "{server}: this build of dnz speaks plain http:// only; \
                 reach an https server through a tunnel or a local proxy"
            )));
        }
        let config = Agent::config_builder()
            // Error statuses carry the ErrorBody to show.
            .http_status_as_error(false)
            // The API never redirects; following one could carry the token elsewhere.
            .max_redirects(0)
            .timeout_connect(Some(Duration::from_secs(10)))
            // A big zone import is validated before the answer comes.
            .timeout_recv_response(Some(Duration::from_secs(300)))
            .user_agent(concat!("dnz-cli/", env!("CARGO_PKG_VERSION")))
            .build();
        Ok(Client {
            agent: Agent::new_with_config(config),
            server,
            token,
        })
    }

    pub(crate) fn server(&self) -> &str {
        &self.server
    }

    fn url(&self, path: &str) -> String {
        format!("{}/api/v1/{path}", self.server)
    }

    /// Adds what every request carries: what it accepts back, and the token when there is one.
    fn prepare<B>(
        &self,
        request: ureq::RequestBuilder<B>,
        accept: &str,
    ) -> ureq::RequestBuilder<B> {
        let request = request.header("Accept", accept);
        match &self.token {
            Some((token, _)) => request.header("Authorization", format!("Bearer {token}")),
            None => request,
        }
    }

    /// `GET`, JSON back.
    pub(crate) fn get(&self, path: &str) -> Result<Json, Failure> {
        let request = self.prepare(self.agent.get(self.url(path)), "application/json");
        let response = self.check(request.call())?;
        read_json(response)
    }

    /// `GET` with query parameters (encoded by ureq), JSON back.
    pub(crate) fn get_query(&self, path: &str, query: &[(&str, &str)]) -> Result<Json, Failure> {
        let mut request = self.prepare(self.agent.get(self.url(path)), "application/json");
        for (key, value) in query {
            request = request.query(key, value);
        }
        let response = self.check(request.call())?;
        read_json(response)
    }

    /// `PUT` a JSON body, JSON back.
    pub(crate) fn put_json(&self, path: &str, body: &impl Serialize) -> Result<Json, Failure> {
        let request = self.prepare(self.agent.put(self.url(path)), "application/json");
        let response = self.check(request.send_json(body))?;
        read_json(response)
    }

    /// `GET`, text back (zone export).
    pub(crate) fn get_text(&self, path: &str) -> Result<Vec<u8>, Failure> {
        let request = self.prepare(self.agent.get(self.url(path)), "text/plain");
        let mut response = self.check(request.call())?;
        response
            .body_mut()
            .with_config()
            .limit(MAX_BODY)
            .read_to_vec()
            .map_err(|e| Failure::runtime(format!("reading the response: {e}")))
    }

    /// `POST` a JSON body, JSON back.
    pub(crate) fn post_json(&self, path: &str, body: &impl Serialize) -> Result<Json, Failure> {
        let request = self.prepare(self.agent.post(self.url(path)), "application/json");
        let response = self.check(request.send_json(body))?;
        read_json(response)
    }

    /// `POST` a text body (zone import), JSON back.
    pub(crate) fn post_text(&self, path: &str, body: &[u8]) -> Result<Json, Failure> {
        let request = self
            .prepare(self.agent.post(self.url(path)), "application/json")
            .content_type("text/plain; charset=utf-8");
        let response = self.check(request.send(body))?;
        read_json(response)
    }

    /// `DELETE` with query parameters (encoded by ureq); JSON back (empty for 204).
    pub(crate) fn delete(&self, path: &str, query: &[(&str, &str)]) -> Result<Json, Failure> {
        let mut request = self.prepare(self.agent.delete(self.url(path)), "application/json");
        for (key, value) in query {
            request = request.query(key, value);
        }
        let response = self.check(request.call())?;
        read_json(response)
    }

    /// Turns transport errors and non-2xx statuses into failures.
    fn check(
        &self,
        result: Result<Response<Body>, ureq::Error>,
    ) -> Result<Response<Body>, Failure> {
        let mut response = result.map_err(|e| self.transport_failure(e))?;
        let status = response.status();
        if status.is_success() {
            return Ok(response);
        }
        let text = response
            .body_mut()
            .with_config()
            .limit(MAX_ERROR_BODY)
            .lossy_utf8(true)
            .read_to_string()
            .unwrap_or_default();
        let body = error_body(status.as_u16(), status.canonical_reason(), &text);
        let hint = match (status.as_u16(), &self.token) {
            (401, Some((_, source))) => Some(format!(
                "the token came from {source}; run `dnz login` or pass --token"
            )),
            (401, None) => Some("no token was sent; run `dnz login` or pass --token".into()),
            _ => None,
        };
        Err(Failure::Api {
            status: status.as_u16(),
            body,
            hint,
        })
    }

    fn transport_failure(&self, error: ureq::Error) -> Failure {
        let server = &self.server;
        let why = match &error {
            ureq::Error::Io(e) => match e.kind() {
                std::io::ErrorKind::ConnectionRefused => {
                    "connection refused (is `dnz serve` running there?)".to_string()
                }
                _ => e.to_string(),
            },
            ureq::Error::HostNotFound => "host not found".to_string(),
            ureq::Error::Timeout(_) => "timed out".to_string(),
            other => other.to_string(),
        };
        Failure::runtime(format!("cannot talk to the dnz server at {server}: {why}"))
    }
}

/// A success body as JSON; an empty body (204) is `Null`.
fn read_json(mut response: Response<Body>) -> Result<Json, Failure> {
    let bytes = response
        .body_mut()
        .with_config()
        .limit(MAX_BODY)
        .read_to_vec()
        .map_err(|e| Failure::runtime(format!("reading the response: {e}")))?;
    Json::new(bytes)
}

/// The server's [`ErrorBody`]; for anything else in front of it (a proxy's HTML page) the
/// status and the start of the text.
pub(crate) fn error_body(status: u16, reason: Option<&str>, text: &str) -> ErrorBody {
    if let Ok(body) = serde_json::from_str::<ErrorBody>(text) {
        return body;
    }
    let mut error = format!("HTTP {status}");
    if let Some(reason) = reason {
        error.push(' ');
        error.push_str(reason);
    }
    let first_line = text.lines().map(str::trim).find(|l| !l.is_empty());
    if let Some(line) = first_line {
        let snippet: String = line.chars().take(200).collect();
        error.push_str(": ");
        error.push_str(&snippet);
    }
    ErrorBody {
        error,
        field: None,
        errors: Vec::new(),
    }
}

/// One path segment, percent-encoded (names and ids from the command line).
pub(crate) fn segment(text: &str) -> String {
    // `.` and `..` would be collapsed as dot segments; encode them whole.
    if text == "." || text == ".." {
        return text.replace('.', "%2E");
    }
    let mut out = String::with_capacity(text.len());
    for byte in text.bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'.' | b'_' | b'~') {
            out.push(byte as char);
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segments_are_encoded() {
        assert_eq!(segment("example.com."), "example.com.");
        assert_eq!(segment("a b/c?d"), "a%20b%2Fc%3Fd");
        assert_eq!(segment("."), "%2E");
        assert_eq!(segment("bü"), "b%C3%BC");
    }

    #[test]
    fn error_bodies() {
        let body = error_body(
            422,
            Some("Unprocessable Entity"),
            r#"{"error":"bad","field":"ttl"}"#,
        );
        assert_eq!(body.error, "bad");
        assert_eq!(body.field.as_deref(), Some("ttl"));
        let body = error_body(502, Some("Bad Gateway"), "\n<html>oops</html>\n");
        assert_eq!(body.error, "HTTP 502 Bad Gateway: <html>oops</html>");
        assert_eq!(error_body(500, None, "").error, "HTTP 500");
    }

    #[test]
    fn https_is_refused_clearly() {
        let err = Client::new("https://a".into(), None)
            .err()
            .map(|e| e.render());
        assert!(err.is_some_and(|e| e.contains("plain http://")));
    }
}
