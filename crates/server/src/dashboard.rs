//! The web dashboard: the plain HTML, CSS and JS of `dashboard/` compiled into the binary and
//! served at `/`. It talks to the server only through the public `/api/v1`.
//!
//! Every dashboard response carries a strict Content-Security-Policy (only our own scripts,
//! styles and API; no framing), so a bug in the page cannot load or send anything elsewhere.
//! Unknown paths under `/api/` keep the API's JSON 404.

use axum::Router;
use axum::body::Body;
use axum::http::{HeaderValue, Method, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use rust_embed::RustEmbed;

use crate::http::{ApiError, AppState};

/// The dashboard's files. Its browser tests and their node_modules stay out of the binary.
/// (A debug build reads the folder at run time, a release build embeds it.)
#[derive(RustEmbed)]
#[folder = "../../dashboard/"]
#[exclude = "tests/*"]
#[exclude = "node_modules/*"]
#[exclude = "*/node_modules/*"]
struct Assets;

const CONTENT_SECURITY_POLICY: &str = "default-src 'self'; img-src 'self' data:; \
    style-src 'self'; script-src 'self'; connect-src 'self'; frame-ancestors 'none'; \
    base-uri 'none'; form-action 'self'";

/// The fallback of the whole router: dashboard files, else a 404 (JSON under `/api/`).
pub fn routes() -> Router<AppState> {
    Router::new().fallback(serve)
}

async fn serve(method: Method, uri: Uri) -> Response {
    let path = uri.path();
    if path == "/api" || path.starts_with("/api/") {
        return ApiError::NotFound("no such endpoint".into()).into_response();
    }
    let Some(file) = asset_path(path).and_then(|name| Some((Assets::get(&name)?, name))) else {
        return secured(
            StatusCode::NOT_FOUND,
            "text/plain; charset=utf-8",
            Body::from("not found\n"),
        );
    };
    let (file, name) = file;
    if method != Method::GET && method != Method::HEAD {
        let mut response = secured(
            StatusCode::METHOD_NOT_ALLOWED,
            "text/plain; charset=utf-8",
            Body::from("method not allowed\n"),
        );
        response
            .headers_mut()
            .insert(header::ALLOW, HeaderValue::from_static("GET, HEAD"));
        return response;
    }
    let length = file.data.len();
    let body = if method == Method::HEAD {
        Body::empty()
    } else {
        Body::from(file.data)
    };
    let mut response = secured(StatusCode::OK, content_type(&name), body);
    let headers = response.headers_mut();
    // The files change with the binary; revalidating is cheap and never serves a stale UI.
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    headers.insert(header::CONTENT_LENGTH, HeaderValue::from(length));
    response
}

/// The file a URL path names, relative to `dashboard/`; `None` for anything that could step
/// outside it.
fn asset_path(path: &str) -> Option<String> {
    let relative = path.strip_prefix('/')?;
    let mut name = relative.to_string();
    if name.is_empty() || name.ends_with('/') {
        name.push_str("index.html");
    }
    let safe = name
        .split('/')
        .all(|segment| !segment.is_empty() && segment != "." && segment != "..")
        && !name.contains(['\\', '\0', '%']);
    safe.then_some(name)
}

fn content_type(name: &str) -> &'static str {
    let extension = name.rsplit_once('.').map(|(_, e)| e).unwrap_or("");
    match extension.to_ascii_lowercase().as_str() {
        "html" => "text/html; charset=utf-8",
        "css" => "text/css; charset=utf-8",
        "js" | "mjs" => "text/javascript; charset=utf-8",
        "svg" => "image/svg+xml",
        "png" => "image/png",
        "json" => "application/json",
        "ico" => "image/x-icon",
        "txt" => "text/plain; charset=utf-8",
        _ => "application/octet-stream",
    }
}

/// A response with the dashboard's security headers.
fn secured(status: StatusCode, content_type: &'static str, body: Body) -> Response {
    let mut response = (status, body).into_response();
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CONTENT_SECURITY_POLICY),
    );
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_stay_inside_the_dashboard() {
        assert_eq!(asset_path("/").as_deref(), Some("index.html"));
        assert_eq!(asset_path("/js/app.js").as_deref(), Some("js/app.js"));
        assert_eq!(asset_path("/js/").as_deref(), Some("js/index.html"));
        for bad in [
            "/../Cargo.toml",
            "/js/../../x",
            "//etc/passwd",
            "/a\\b",
            "/%2e%2e/x",
            "/./x",
        ] {
            assert_eq!(asset_path(bad), None, "{bad}");
        }
    }

    #[test]
    fn content_types_by_extension() {
        assert_eq!(content_type("index.html"), "text/html; charset=utf-8");
        assert_eq!(content_type("js/app.MJS"), "text/javascript; charset=utf-8");
        assert_eq!(content_type("logo.svg"), "image/svg+xml");
        assert_eq!(content_type("README"), "application/octet-stream");
    }

    #[test]
    fn browser_tests_are_not_embedded() {
        assert!(
            Assets::iter()
                .all(|name| !name.starts_with("tests/") && !name.contains("node_modules"))
        );
    }
}
