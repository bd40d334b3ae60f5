//! The HTTP API under `/api/v1`, `/healthz`, `/metrics`, the OpenAPI document, and (merged
//! from `dashboard`) the dashboard's files.
//!
//! Every route is authorised by [`Principal`]: a bearer token, or the dashboard's session
//! cookie with its CSRF token on writes. Typed errors become statuses and
//! `{error, field?, errors?}` bodies in one place, [`ApiError::into_response`].

use std::net::SocketAddr;
use std::sync::Arc;

use api::{ErrorBody, FieldProblem, Role};
use axum::extract::path::ErrorKind;
use axum::extract::rejection::{JsonRejection, PathRejection};
use axum::extract::{ConnectInfo, FromRequest, FromRequestParts, Path, Query, Request, State};
use axum::http::request::Parts;
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{delete, get, post};
use axum::{Json, Router};
use serde::Deserialize;
use store::Store;

use crate::auth::{self, LoginLimiter, Principal};
use crate::manage::{ManageError, Manager};
use crate::metrics::Metrics;

#[derive(Clone)]
pub struct AppState {
    pub manager: Arc<Manager>,
    pub metrics: Arc<Metrics>,
    pub limiter: Arc<LoginLimiter>,
    pub geoip: Arc<crate::geoip::GeoIp>,
    pub prober: ::health::probe::Prober,
}

impl AppState {
    fn store(&self) -> &Store {
        self.manager.store()
    }
}

/// Every way an API call can fail.
#[derive(Debug)]
pub enum ApiError {
    Unauthorized(String),
    Forbidden(String),
    BadRequest {
        message: String,
        field: Option<String>,
    },
    NotFound(String),
    Conflict {
        message: String,
        field: Option<String>,
    },
    Invalid(Vec<model::FieldError>),
    TooManyRequests(u64),
    /// The path exists, the method does not.
    MethodNotAllowed(String),
    Internal(String),
    /// An upstream server failed us (a GeoIP download); nothing was changed.
    BadGateway(String),
}

impl From<ManageError> for ApiError {
    fn from(e: ManageError) -> ApiError {
        match e {
            ManageError::NotFound(message) => ApiError::NotFound(message),
            ManageError::Invalid(errors) => ApiError::Invalid(errors),
            ManageError::Conflict { message, field } => ApiError::Conflict { message, field },
            ManageError::Store(e) => ApiError::Internal(e.to_string()),
        }
    }
}

impl From<store::StoreError> for ApiError {
    fn from(e: store::StoreError) -> ApiError {
        ApiError::Internal(e.to_string())
    }
}

impl From<anyhow::Error> for ApiError {
    fn from(e: anyhow::Error) -> ApiError {
        ApiError::Internal(format!("{e:#}"))
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let plain = |status: StatusCode, error: String, field: Option<String>| {
            (
                status,
                Json(ErrorBody {
                    error,
                    field,
                    errors: Vec::new(),
                }),
            )
                .into_response()
        };
        match self {
            ApiError::Unauthorized(message) => plain(StatusCode::UNAUTHORIZED, message, None),
            ApiError::Forbidden(message) => plain(StatusCode::FORBIDDEN, message, None),
            ApiError::BadRequest { message, field } => {
                plain(StatusCode::BAD_REQUEST, message, field)
            }
            ApiError::NotFound(message) => plain(StatusCode::NOT_FOUND, message, None),
            ApiError::Conflict { message, field } => plain(StatusCode::CONFLICT, message, field),
            ApiError::MethodNotAllowed(message) => {
                plain(StatusCode::METHOD_NOT_ALLOWED, message, None)
            }
            ApiError::TooManyRequests(wait) => {
                let mut response = plain(
                    StatusCode::TOO_MANY_REQUESTS,
                    format!("too many failed logins; try again in {wait} s"),
                    None,
                );
                if let Ok(value) = HeaderValue::from_str(&wait.to_string()) {
                    response.headers_mut().insert(header::RETRY_AFTER, value);
                }
                response
            }
            ApiError::Invalid(errors) => {
                let first = errors
                    .first()
                    .cloned()
                    .unwrap_or_else(|| model::FieldError::new("", "invalid"));
                let body = ErrorBody {
                    error: first.message.clone(),
                    field: Some(first.field.clone()).filter(|f| !f.is_empty()),
                    errors: errors
                        .into_iter()
                        .map(|e| FieldProblem {
                            field: e.field,
                            message: e.message,
                        })
                        .collect(),
                };
                (StatusCode::UNPROCESSABLE_ENTITY, Json(body)).into_response()
            }
            ApiError::Internal(message) => {
                tracing::error!(error = %message, "API call failed");
                plain(StatusCode::INTERNAL_SERVER_ERROR, message, None)
            }
            ApiError::BadGateway(message) => plain(StatusCode::BAD_GATEWAY, message, None),
        }
    }
}

pub(crate) type ApiResult<T> = Result<T, ApiError>;

/// A JSON body whose parse errors are ours: 400 with the serde message.
pub struct JsonBody<T>(pub T);

impl<S: Send + Sync, T: serde::de::DeserializeOwned> FromRequest<S> for JsonBody<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        match Json::<T>::from_request(req, state).await {
            Ok(Json(value)) => Ok(JsonBody(value)),
            Err(rejection) => {
                let message = match &rejection {
                    JsonRejection::JsonDataError(e) => format!("bad JSON body: {}", e.body_text()),
                    other => format!("bad JSON body: {}", other.body_text()),
                };
                Err(ApiError::BadRequest {
                    field: json_error_field(&message),
                    message,
                })
            }
        }
    }
}

/// Path parameters whose parse errors are ours: 400 with axum's message (which names the
/// value and the type wanted), not its plain-text body.
pub struct ApiPath<T>(pub T);

impl<S: Send + Sync, T: serde::de::DeserializeOwned + Send> FromRequestParts<S> for ApiPath<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        match Path::<T>::from_request_parts(parts, state).await {
            Ok(Path(value)) => Ok(ApiPath(value)),
            Err(rejection) => {
                let field = match &rejection {
                    PathRejection::FailedToDeserializePathParams(e) => match e.kind() {
                        ErrorKind::ParseErrorAtKey { key, .. }
                        | ErrorKind::InvalidUtf8InPathParam { key } => Some(key.clone()),
                        _ => None,
                    },
                    _ => None,
                };
                Err(ApiError::BadRequest {
                    message: rejection.body_text(),
                    field,
                })
            }
        }
    }
}

/// A text body (a zone file) whose errors are ours: 400 with the reason, not plain text.
pub struct TextBody(pub String);

impl<S: Send + Sync> FromRequest<S> for TextBody {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        String::from_request(req, state)
            .await
            .map(TextBody)
            .map_err(|rejection| ApiError::BadRequest {
                message: format!("bad body: {}", rejection.body_text()),
                field: None,
            })
    }
}

/// A method a path does not serve: the API's JSON error, not an empty 405.
async fn method_not_allowed(method: Method, uri: axum::http::Uri) -> ApiError {
    ApiError::MethodNotAllowed(format!("{method} is not allowed on {}", uri.path()))
}

/// The field a serde error is about: `missing field `x`` or a `path: reason` prefix.
fn json_error_field(message: &str) -> Option<String> {
    if let Some(rest) = message.split("missing field `").nth(1) {
        return rest.split('`').next().map(str::to_string);
    }
    let detail = message.split("target type: ").nth(1)?;
    let (path, _) = detail.split_once(": ")?;
    (!path.is_empty() && !path.contains(' ')).then(|| path.to_string())
}

impl FromRequestParts<AppState> for Principal {
    type Rejection = ApiError;

    /// A bearer token first; otherwise the dashboard's session cookie, whose writes must
    /// carry the session's CSRF token.
    async fn from_request_parts(
        parts: &mut Parts,
        state: &AppState,
    ) -> Result<Self, Self::Rejection> {
        let bearer = parts
            .headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|h| h.strip_prefix("Bearer "))
            .map(str::trim);
        if let Some(token) = bearer {
            let found = state.store().find_token(&auth::hash_token(token)).await?;
            let Some(found) = found else {
                return Err(ApiError::Unauthorized("invalid or revoked token".into()));
            };
            return Ok(Principal {
                user: found.user,
                role: parse_role(&found.role)?,
                session: None,
            });
        }
        let cookies = parts
            .headers
            .get_all(header::COOKIE)
            .iter()
            .filter_map(|v| v.to_str().ok());
        let Some(id) = auth::session_cookie(cookies).filter(|id| !id.is_empty()) else {
            return Err(ApiError::Unauthorized(
                "authentication required: send Authorization: Bearer <token> or log in".into(),
            ));
        };
        let id_hash = auth::hash_token(id);
        let found = state
            .store()
            .find_session(&id_hash, crate::manage::now_secs())
            .await?;
        let Some(found) = found else {
            return Err(ApiError::Unauthorized(
                "session expired, log in again".into(),
            ));
        };
        // A cross-site page can make the browser send the cookie but cannot read the token.
        if !matches!(parts.method, Method::GET | Method::HEAD | Method::OPTIONS) {
            let sent = parts.headers.get(CSRF_HEADER).map(HeaderValue::as_bytes);
            if !sent.is_some_and(|sent| auth::constant_time_eq(sent, found.csrf.as_bytes())) {
                return Err(ApiError::Forbidden("missing or wrong CSRF token".into()));
            }
        }
        Ok(Principal {
            user: found.user,
            role: parse_role(&found.role)?,
            session: Some(auth::CookieSession {
                id_hash,
                csrf: found.csrf,
            }),
        })
    }
}

/// The header a cookie session's writes carry its CSRF token in.
const CSRF_HEADER: &str = "x-csrf-token";

fn parse_role(role: &str) -> ApiResult<Role> {
    Role::parse(role).ok_or_else(|| ApiError::Internal(format!("user has unknown role {role}")))
}

impl Principal {
    pub(crate) fn require(&self, role: Role) -> ApiResult<()> {
        if self.role >= role {
            Ok(())
        } else {
            Err(ApiError::Forbidden(format!(
                "{} is {}, this needs {}",
                self.user,
                self.role.as_str(),
                role.as_str()
            )))
        }
    }
}

pub fn router(state: AppState) -> Router {
    Router::new()
        .route("/healthz", get(|| async { "ok\n" }))
        .route("/metrics", get(metrics))
        .route("/api/v1/openapi.json", get(openapi))
        .route(
            "/api/v1/session",
            post(login).get(show_session).delete(logout),
        )
        .route("/api/v1/zones", get(list_zones).post(create_zone))
        .route("/api/v1/zones/{zone}", get(show_zone).delete(delete_zone))
        .route(
            "/api/v1/zones/{zone}/records",
            get(list_records).post(add_record).delete(delete_matching),
        )
        .route(
            "/api/v1/zones/{zone}/records/{id}",
            axum::routing::put(update_record).delete(delete_record),
        )
        .route(
            "/api/v1/zones/{zone}/records/{id}/steering",
            axum::routing::put(set_steering).delete(remove_steering),
        )
        .route("/api/v1/explain", get(explain))
        .route("/api/v1/checks/test", post(test_check))
        .route(
            "/api/v1/zones/{zone}/records/{id}/health-events",
            get(health_events),
        )
        .route("/api/v1/zones/{zone}/import", post(import_zone))
        .route("/api/v1/zones/{zone}/export", get(export_zone))
        .route("/api/v1/users", get(list_users).post(create_user))
        .route("/api/v1/users/{name}", delete(delete_user))
        .route("/api/v1/tokens", get(list_tokens).post(create_token))
        .route("/api/v1/tokens/{id}", delete(delete_token))
        .route(
            "/api/v1/settings/geoip",
            get(geoip_status).put(geoip_settings),
        )
        .route("/api/v1/settings/geoip/download", post(geoip_download))
        .route("/api/v1/geoip/lookup", get(geoip_lookup))
        .merge(crate::lb::routes())
        .merge(crate::topology::routes())
        // The dashboard's files, and the JSON 404 of unknown API paths.
        .merge(crate::dashboard::routes())
        // After every route: it is set on the routes registered so far.
        .method_not_allowed_fallback(method_not_allowed)
        // Zone files can be large (1,000,000 records is ~25 MiB); axum's own 2 MiB default
        // would refuse them before the layer below is asked.
        .layer(axum::extract::DefaultBodyLimit::max(64 << 20))
        .layer(tower_http::limit::RequestBodyLimitLayer::new(64 << 20))
        .with_state(state)
}

/// The OpenAPI document, kept beside the router; a test checks it lists every route.
pub const OPENAPI: &str = include_str!("openapi.json");

async fn openapi() -> impl IntoResponse {
    ([(header::CONTENT_TYPE, "application/json")], OPENAPI)
}

async fn metrics(State(state): State<AppState>) -> impl IntoResponse {
    (
        [(
            header::CONTENT_TYPE,
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
        )],
        state.metrics.render(),
    )
}

/// Logs in with a password: a new API token, or with `cookie` a dashboard session.
async fn login(
    State(state): State<AppState>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    headers: HeaderMap,
    JsonBody(body): JsonBody<api::Login>,
) -> ApiResult<Response> {
    if let Some(wait) = state.limiter.blocked(peer.ip()) {
        return Err(ApiError::TooManyRequests(wait));
    }
    let user = state.store().find_user(&body.name).await?;
    let verified = match &user {
        Some(user) => {
            auth::verify_password(body.password.clone(), user.password_hash.clone()).await
        }
        None => false,
    };
    let Some(user) = user.filter(|_| verified) else {
        state.limiter.failed(peer.ip());
        return Err(ApiError::Unauthorized("wrong user name or password".into()));
    };
    state.limiter.succeeded(peer.ip());
    let now = crate::manage::now_secs();
    // Logins are rare and sessions few, so this is where old ones are swept.
    state.store().delete_expired_sessions(now).await?;
    let role = Role::parse(&user.role).unwrap_or(Role::Viewer);
    if !body.cookie {
        let token = auth::new_token();
        state
            .store()
            .create_token(user.id, "login", &auth::hash_token(&token), now)
            .await?;
        return Ok(Json(api::Session {
            user: user.name,
            role,
            token: Some(token),
            csrf: None,
        })
        .into_response());
    }
    let (id, csrf) = auth::new_session();
    state
        .store()
        .create_session(
            &auth::hash_token(&id),
            user.id,
            &csrf,
            now,
            now + auth::SESSION_SECS,
        )
        .await?;
    let cookie = auth::session_set_cookie(&id, forwarded_https(&headers));
    let cookie = HeaderValue::from_str(&cookie)
        .map_err(|e| ApiError::Internal(format!("session cookie: {e}")))?;
    let session = api::Session {
        user: user.name,
        role,
        token: None,
        csrf: Some(csrf),
    };
    Ok(([(header::SET_COOKIE, cookie)], Json(session)).into_response())
}

/// The client reached the proxy in front of us over HTTPS (`X-Forwarded-Proto: https`).
fn forwarded_https(headers: &HeaderMap) -> bool {
    headers
        .get("x-forwarded-proto")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(',').next())
        .is_some_and(|proto| proto.trim().eq_ignore_ascii_case("https"))
}

/// Who is calling; a cookie session also gets its CSRF token back (after a page reload).
async fn show_session(who: Principal) -> Json<api::Session> {
    Json(api::Session {
        user: who.user,
        role: who.role,
        token: None,
        csrf: who.session.map(|s| s.csrf),
    })
}

/// Ends a cookie session; a bearer token stays valid (tokens are revoked under /tokens).
async fn logout(State(state): State<AppState>, who: Principal) -> ApiResult<Response> {
    let Some(session) = who.session else {
        return Ok(StatusCode::NO_CONTENT.into_response());
    };
    state.store().delete_session(&session.id_hash).await?;
    let cookie = HeaderValue::from_str(&auth::session_clear_cookie())
        .map_err(|e| ApiError::Internal(format!("session cookie: {e}")))?;
    Ok((StatusCode::NO_CONTENT, [(header::SET_COOKIE, cookie)]).into_response())
}

async fn list_zones(
    State(state): State<AppState>,
    who: Principal,
) -> ApiResult<Json<Vec<api::Zone>>> {
    who.require(Role::Viewer)?;
    Ok(Json(state.manager.list_zones().await))
}

async fn create_zone(
    State(state): State<AppState>,
    who: Principal,
    JsonBody(body): JsonBody<api::ZoneCreate>,
) -> ApiResult<(StatusCode, Json<api::Zone>)> {
    who.require(Role::Editor)?;
    Ok((
        StatusCode::CREATED,
        Json(state.manager.create_zone(&body).await?),
    ))
}

async fn show_zone(
    State(state): State<AppState>,
    who: Principal,
    ApiPath(zone): ApiPath<String>,
) -> ApiResult<Json<api::Zone>> {
    who.require(Role::Viewer)?;
    Ok(Json(state.manager.zone(&zone).await?))
}

async fn delete_zone(
    State(state): State<AppState>,
    who: Principal,
    ApiPath(zone): ApiPath<String>,
) -> ApiResult<StatusCode> {
    who.require(Role::Editor)?;
    state.manager.delete_zone(&zone).await?;
    Ok(StatusCode::NO_CONTENT)
}

async fn list_records(
    State(state): State<AppState>,
    who: Principal,
    ApiPath(zone): ApiPath<String>,
) -> ApiResult<Json<Vec<api::Record>>> {
    who.require(Role::Viewer)?;
    Ok(Json(state.manager.records(&zone).await?))
}

async fn add_record(
    State(state): State<AppState>,
    who: Principal,
    ApiPath(zone): ApiPath<String>,
    JsonBody(body): JsonBody<api::RecordSpec>,
) -> ApiResult<(StatusCode, Json<api::Record>)> {
    who.require(Role::Editor)?;
    Ok((
        StatusCode::CREATED,
        Json(state.manager.add_record(&zone, &body).await?),
    ))
}

async fn update_record(
    State(state): State<AppState>,
    who: Principal,
    ApiPath((zone, id)): ApiPath<(String, i64)>,
    JsonBody(body): JsonBody<api::RecordSpec>,
) -> ApiResult<Json<api::Record>> {
    who.require(Role::Editor)?;
    Ok(Json(state.manager.update_record(&zone, id, &body).await?))
}

async fn delete_record(
    State(state): State<AppState>,
    who: Principal,
    ApiPath((zone, id)): ApiPath<(String, i64)>,
) -> ApiResult<StatusCode> {
    who.require(Role::Editor)?;
    state.manager.delete_record(&zone, id).await?;
    Ok(StatusCode::NO_CONTENT)
}

#[derive(Deserialize)]
struct MatchQuery {
    name: String,
    #[serde(rename = "type")]
    rtype: String,
    value: Option<String>,
}

async fn delete_matching(
    State(state): State<AppState>,
    who: Principal,
    ApiPath(zone): ApiPath<String>,
    query: Result<Query<MatchQuery>, axum::extract::rejection::QueryRejection>,
) -> ApiResult<Json<Vec<api::Record>>> {
    who.require(Role::Editor)?;
    let Query(query) = query.map_err(|e| ApiError::BadRequest {
        message: e.body_text(),
        field: None,
    })?;
    Ok(Json(
        state
            .manager
            .delete_matching(&zone, &query.name, &query.rtype, query.value.as_deref())
            .await?,
    ))
}

async fn set_steering(
    State(state): State<AppState>,
    who: Principal,
    ApiPath((zone, id)): ApiPath<(String, i64)>,
    JsonBody(body): JsonBody<api::SteeringSpec>,
) -> ApiResult<Json<api::Record>> {
    who.require(Role::Editor)?;
    Ok(Json(
        state.manager.set_steering(&zone, id, Some(&body)).await?,
    ))
}

async fn remove_steering(
    State(state): State<AppState>,
    who: Principal,
    ApiPath((zone, id)): ApiPath<(String, i64)>,
) -> ApiResult<Json<api::Record>> {
    who.require(Role::Editor)?;
    Ok(Json(state.manager.set_steering(&zone, id, None).await?))
}

/// Runs one check now without saving (the dashboard's and CLI's "Test now").
async fn test_check(
    State(state): State<AppState>,
    who: Principal,
    JsonBody(body): JsonBody<api::CheckTest>,
) -> ApiResult<Json<api::CheckResult>> {
    use model::steering::Validate as _;
    who.require(Role::Editor)?;
    let address: std::net::IpAddr = body.address.parse().map_err(|_| {
        ApiError::Invalid(vec![model::FieldError::new(
            "address",
            format!("{:?} is not an IP address", body.address),
        )])
    })?;
    let check = body.check.validate("check.").map_err(ApiError::Invalid)?;
    let host = match (&check.host, &body.name) {
        (Some(host), _) => host.clone(),
        (None, Some(name)) => name.trim_end_matches('.').to_string(),
        (None, None) => address.to_string(),
    };
    let target = ::health::probe::Target {
        address,
        host,
        config: check,
    };
    Ok(Json(crate::health::test_check(&state.prober, target).await))
}

async fn health_events(
    State(state): State<AppState>,
    who: Principal,
    ApiPath((zone, id)): ApiPath<(String, i64)>,
) -> ApiResult<Json<Vec<api::HealthEvent>>> {
    who.require(Role::Viewer)?;
    state.manager.has_record(&zone, id).await?;
    let events = state.store().health_events(id).await?;
    Ok(Json(
        events
            .into_iter()
            .map(|e| api::HealthEvent {
                time: e.time,
                old_state: e.old_state,
                new_state: e.new_state,
                reason: e.reason,
                status: e.status,
                latency_ms: e.latency_ms,
            })
            .collect(),
    ))
}

#[derive(Deserialize)]
struct ExplainQuery {
    name: String,
    #[serde(rename = "type", default = "default_explain_type")]
    rtype: String,
    client: String,
    /// `24` (the client's own /24) or `203.0.113.0/24`.
    ecs: Option<String>,
}

fn default_explain_type() -> String {
    "A".into()
}

/// Parses the ECS argument of explain: a prefix length for the client's own address, or CIDR.
fn parse_ecs(text: &str, client: std::net::IpAddr) -> Result<(std::net::IpAddr, u8), ApiError> {
    let invalid = || {
        ApiError::Invalid(vec![model::FieldError::new(
            "ecs",
            format!("{text:?} is not a prefix length or ADDRESS/PREFIX"),
        )])
    };
    let (address, prefix) = match text.split_once('/') {
        Some((address, prefix)) => (address.parse().map_err(|_| invalid())?, prefix),
        None => (client, text),
    };
    Ok((address, prefix.parse().map_err(|_| invalid())?))
}

async fn explain(
    State(state): State<AppState>,
    who: Principal,
    query: Result<Query<ExplainQuery>, axum::extract::rejection::QueryRejection>,
) -> ApiResult<Json<api::Explain>> {
    who.require(Role::Viewer)?;
    let Query(query) = query.map_err(|e| ApiError::BadRequest {
        message: e.body_text(),
        field: None,
    })?;
    let client: std::net::IpAddr = query.client.parse().map_err(|_| {
        ApiError::Invalid(vec![model::FieldError::new(
            "client",
            format!("{:?} is not an IP address", query.client),
        )])
    })?;
    let ecs = query
        .ecs
        .as_deref()
        .map(|text| parse_ecs(text, client))
        .transpose()?;
    let snapshot = state.manager.snapshot();
    crate::explain::explain(
        &snapshot,
        &query.name,
        &query.rtype,
        client,
        ecs,
        rand::random(),
    )
    .map(Json)
    .map_err(|e| ApiError::Invalid(vec![model::FieldError::new(e.field, e.message)]))
}

async fn import_zone(
    State(state): State<AppState>,
    who: Principal,
    ApiPath(zone): ApiPath<String>,
    TextBody(body): TextBody,
) -> ApiResult<Json<api::ImportResult>> {
    who.require(Role::Editor)?;
    Ok(Json(state.manager.import(&zone, &body).await?))
}

async fn export_zone(
    State(state): State<AppState>,
    who: Principal,
    ApiPath(zone): ApiPath<String>,
) -> ApiResult<Response> {
    who.require(Role::Viewer)?;
    let text = state.manager.export(&zone).await?;
    Ok(([(header::CONTENT_TYPE, "text/dns; charset=utf-8")], text).into_response())
}

async fn list_users(
    State(state): State<AppState>,
    who: Principal,
) -> ApiResult<Json<Vec<api::User>>> {
    who.require(Role::Superadmin)?;
    let users = state.store().list_users().await?;
    Ok(Json(
        users
            .into_iter()
            .map(|u| api::User {
                role: Role::parse(&u.role).unwrap_or(Role::Viewer),
                name: u.name,
            })
            .collect(),
    ))
}

async fn create_user(
    State(state): State<AppState>,
    who: Principal,
    JsonBody(body): JsonBody<api::UserCreate>,
) -> ApiResult<(StatusCode, Json<api::User>)> {
    who.require(Role::Superadmin)?;
    let name = body.name.trim();
    if name.is_empty()
        || name.len() > 64
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "._-@".contains(c))
    {
        return Err(ApiError::Invalid(vec![model::FieldError::new(
            "name",
            "a user name is 1 to 64 letters, digits or . _ - @",
        )]));
    }
    if body.password.len() < 8 {
        return Err(ApiError::Invalid(vec![model::FieldError::new(
            "password",
            "a password has at least 8 characters",
        )]));
    }
    if state.store().find_user(name).await?.is_some() {
        return Err(ApiError::Conflict {
            message: format!("user {name} already exists"),
            field: Some("name".into()),
        });
    }
    let hash = auth::hash_password(body.password).await?;
    state
        .store()
        .create_user(name, &hash, body.role.as_str(), crate::manage::now_secs())
        .await?;
    Ok((
        StatusCode::CREATED,
        Json(api::User {
            name: name.to_string(),
            role: body.role,
        }),
    ))
}

async fn delete_user(
    State(state): State<AppState>,
    who: Principal,
    ApiPath(name): ApiPath<String>,
) -> ApiResult<StatusCode> {
    who.require(Role::Superadmin)?;
    if name == who.user {
        return Err(ApiError::Conflict {
            message: "you cannot delete yourself".into(),
            field: Some("name".into()),
        });
    }
    if !state.store().delete_user(&name).await? {
        return Err(ApiError::NotFound(format!("no user {name}")));
    }
    Ok(StatusCode::NO_CONTENT)
}

fn to_api_token(token: store::StoredToken) -> api::Token {
    api::Token {
        id: token.id,
        name: token.name,
        user: token.user,
        created: token.created,
        token: None,
    }
}

async fn list_tokens(
    State(state): State<AppState>,
    who: Principal,
) -> ApiResult<Json<Vec<api::Token>>> {
    let only = (who.role < Role::Superadmin).then_some(who.user.as_str());
    Ok(Json(
        state
            .store()
            .list_tokens(only)
            .await?
            .into_iter()
            .map(to_api_token)
            .collect(),
    ))
}

async fn create_token(
    State(state): State<AppState>,
    who: Principal,
    JsonBody(body): JsonBody<api::TokenCreate>,
) -> ApiResult<(StatusCode, Json<api::Token>)> {
    let user_name = body.user.clone().unwrap_or_else(|| who.user.clone());
    if user_name != who.user {
        who.require(Role::Superadmin)?;
    }
    if body.name.trim().is_empty() {
        return Err(ApiError::Invalid(vec![model::FieldError::new(
            "name",
            "a token needs a name",
        )]));
    }
    let user = state.store().find_user(&user_name).await?.ok_or_else(|| {
        ApiError::Invalid(vec![model::FieldError::new(
            "user",
            format!("no user {user_name}"),
        )])
    })?;
    let secret = auth::new_token();
    let now = crate::manage::now_secs();
    let id = state
        .store()
        .create_token(user.id, body.name.trim(), &auth::hash_token(&secret), now)
        .await?;
    Ok((
        StatusCode::CREATED,
        Json(api::Token {
            id,
            name: body.name.trim().to_string(),
            user: user.name,
            created: now,
            token: Some(secret),
        }),
    ))
}

async fn delete_token(
    State(state): State<AppState>,
    who: Principal,
    ApiPath(id): ApiPath<i64>,
) -> ApiResult<StatusCode> {
    let only = (who.role < Role::Superadmin).then_some(who.user.as_str());
    if !state.store().delete_token(id, only).await? {
        return Err(ApiError::NotFound(format!("no token {id}")));
    }
    Ok(StatusCode::NO_CONTENT)
}

// ---- GeoIP -------------------------------------------------------------------------------

impl From<crate::geoip::SettingsError> for ApiError {
    fn from(e: crate::geoip::SettingsError) -> ApiError {
        match e {
            crate::geoip::SettingsError::Invalid { field, message } => {
                ApiError::Invalid(vec![model::FieldError::new(field, message)])
            }
            crate::geoip::SettingsError::Store(e) => e.into(),
        }
    }
}

impl From<crate::geoip::DownloadError> for ApiError {
    fn from(e: crate::geoip::DownloadError) -> ApiError {
        if e.is_internal() {
            ApiError::Internal(e.message())
        } else {
            ApiError::BadGateway(e.message())
        }
    }
}

async fn geoip_status(
    State(state): State<AppState>,
    who: Principal,
) -> ApiResult<Json<api::GeoIpStatus>> {
    who.require(Role::Viewer)?;
    Ok(Json(state.geoip.status().await?))
}

async fn geoip_settings(
    State(state): State<AppState>,
    who: Principal,
    JsonBody(body): JsonBody<api::GeoIpSettings>,
) -> ApiResult<Json<api::GeoIpStatus>> {
    who.require(Role::Superadmin)?;
    Ok(Json(state.geoip.update_settings(&body).await?))
}

async fn geoip_download(
    State(state): State<AppState>,
    who: Principal,
) -> ApiResult<Json<api::GeoIpStatus>> {
    who.require(Role::Superadmin)?;
    Ok(Json(
        state.geoip.download(crate::geoip::Trigger::Manual).await?,
    ))
}

#[derive(Deserialize)]
struct GeoLookupQuery {
    ip: Option<String>,
}

async fn geoip_lookup(
    State(state): State<AppState>,
    who: Principal,
    query: Result<Query<GeoLookupQuery>, axum::extract::rejection::QueryRejection>,
) -> ApiResult<Json<api::GeoLookup>> {
    who.require(Role::Viewer)?;
    let Query(query) = query.map_err(|e| ApiError::BadRequest {
        message: e.body_text(),
        field: None,
    })?;
    let text = query.ip.unwrap_or_default();
    let address: std::net::IpAddr = text.trim().parse().map_err(|_| {
        ApiError::Invalid(vec![model::FieldError::new(
            "ip",
            format!("{text:?} is not an IP address"),
        )])
    })?;
    Ok(Json(state.geoip.lookup(address)))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every `.route(path, methods)` in the router's sources, as (path, method) pairs.
    fn routes_in(source: &str) -> Vec<(String, String)> {
        // This module's own text names `.route(` too.
        let source = source.split("#[cfg(test)]").next().unwrap_or(source);
        let mut out = Vec::new();
        for (start, _) in source.match_indices(".route(") {
            let rest = &source[start + ".route(".len()..];
            let mut depth = 1;
            let end = rest
                .char_indices()
                .find(|&(_, c)| {
                    match c {
                        '(' => depth += 1,
                        ')' => depth -= 1,
                        _ => {}
                    }
                    depth == 0
                })
                .map_or(rest.len(), |(idx, _)| idx);
            let call = &rest[..end];
            let path = call.split('"').nth(1).expect("a route path").to_string();
            for method in ["get", "post", "put", "delete"] {
                let named = call.match_indices(&format!("{method}(")).any(|(idx, _)| {
                    !call[..idx].ends_with(|c: char| c.is_alphanumeric() || c == '_')
                });
                if named {
                    out.push((path.clone(), method.to_string()));
                }
            }
        }
        out
    }

    #[test]
    fn openapi_lists_every_route_and_method() {
        let doc: serde_json::Value = serde_json::from_str(OPENAPI).expect("openapi.json parses");
        let mut routes = Vec::new();
        for source in [
            include_str!("http.rs"),
            include_str!("lb.rs"),
            include_str!("topology.rs"),
        ] {
            routes.extend(routes_in(source));
        }
        assert!(
            routes.len() > 40,
            "the route scan found too few: {routes:?}"
        );
        for (path, method) in &routes {
            assert!(
                doc["paths"][path][method].is_object(),
                "openapi.json lacks {} {path}",
                method.to_uppercase()
            );
        }
        let paths = doc["paths"].as_object().expect("paths");
        for (path, methods) in paths {
            for method in methods.as_object().expect("methods").keys() {
                assert!(
                    routes.iter().any(|(p, m)| p == path && m == method),
                    "openapi.json lists {} {path}, which no route serves",
                    method.to_uppercase()
                );
            }
        }
    }
}
