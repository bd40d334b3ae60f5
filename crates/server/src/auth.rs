//! Users, passwords, API tokens, dashboard sessions and roles (SPEC §11).
//!
//! Tokens are 32 random bytes shown once and stored as SHA-256 digests: they carry full entropy,
//! so a slow hash adds nothing. Passwords use argon2 off the async threads. Dashboard sessions
//! are the same kind of secret in an HttpOnly cookie, with a CSRF token that every write must
//! echo in a header (a cross-site page can make the browser send the cookie, not read the token).

use std::collections::HashMap;
use std::net::IpAddr;
use std::path::Path;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use anyhow::Context;
use api::Role;
use argon2::Argon2;
use argon2::password_hash::phc::PasswordHash;
use argon2::password_hash::{PasswordHasher, PasswordVerifier};
use rand::RngCore;
use sha2::{Digest, Sha256};
use store::Store;

/// Who is calling.
#[derive(Clone, Debug)]
pub struct Principal {
    pub user: String,
    pub role: Role,
    /// Set when the caller came with a session cookie rather than a bearer token.
    pub session: Option<CookieSession>,
}

/// The dashboard session a request came with.
#[derive(Clone, Debug)]
pub struct CookieSession {
    pub id_hash: Vec<u8>,
    pub csrf: String,
}

/// The cookie that carries a dashboard session id.
pub const SESSION_COOKIE: &str = "dnz_session";

/// How long a dashboard session lasts: 12 hours, then the user logs in again.
pub const SESSION_SECS: i64 = 12 * 60 * 60;

/// A new session id (the cookie's value) and CSRF token: 32 random bytes each, as hex.
pub fn new_session() -> (String, String) {
    (random_hex(32), random_hex(32))
}

/// Compares secrets in time that depends on their length only, so a caller cannot learn a
/// CSRF token byte by byte from response times.
pub fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let diff = a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y));
    std::hint::black_box(diff) == 0
}

/// The value of the session cookie among a request's `Cookie` headers.
pub fn session_cookie<'a>(cookie_headers: impl Iterator<Item = &'a str>) -> Option<&'a str> {
    cookie_headers
        .flat_map(|header| header.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(name, _)| *name == SESSION_COOKIE)
        .map(|(_, value)| value.trim().trim_matches('"'))
}

/// `Set-Cookie` for a new session; `secure` when the client reached us over HTTPS (through a
/// proxy that says so), since a Secure cookie is never sent over plain HTTP.
pub fn session_set_cookie(id: &str, secure: bool) -> String {
    let mut cookie =
        format!("{SESSION_COOKIE}={id}; Path=/; HttpOnly; SameSite=Strict; Max-Age={SESSION_SECS}");
    if secure {
        cookie.push_str("; Secure");
    }
    cookie
}

/// `Set-Cookie` that makes the browser forget the session.
pub fn session_clear_cookie() -> String {
    format!("{SESSION_COOKIE}=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0")
}

pub fn hash_token(token: &str) -> Vec<u8> {
    Sha256::digest(token.as_bytes()).to_vec()
}

fn random_hex(n_bytes: usize) -> String {
    let mut bytes = vec![0u8; n_bytes];
    rand::rng().fill_bytes(&mut bytes);
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

pub fn new_token() -> String {
    format!("dnz_{}", random_hex(32))
}

pub async fn hash_password(password: String) -> anyhow::Result<String> {
    tokio::task::spawn_blocking(move || {
        let hash: std::result::Result<PasswordHash, _> =
            Argon2::default().hash_password(password.as_bytes());
        hash.map(|h| h.to_string())
            .map_err(|e| anyhow::anyhow!("hashing password: {e}"))
    })
    .await?
}

pub async fn verify_password(password: String, hash: String) -> bool {
    tokio::task::spawn_blocking(move || {
        PasswordHash::new(&hash).is_ok_and(|parsed| {
            Argon2::default()
                .verify_password(password.as_bytes(), &parsed)
                .is_ok()
        })
    })
    .await
    .unwrap_or(false)
}

/// First start on an empty store: create `admin`, print its password once, and write an API
/// token to `<data dir>/admin.token` (mode 0600).
pub async fn bootstrap(store: &Store, data_dir: &Path) -> anyhow::Result<()> {
    if store.count_users().await? > 0 {
        return Ok(());
    }
    let password = random_hex(12);
    let hash = hash_password(password.clone()).await?;
    let now = crate::manage::now_secs();
    let user_id = store
        .create_user("admin", &hash, Role::Superadmin.as_str(), now)
        .await?;
    let token = new_token();
    store
        .create_token(user_id, "admin.token", &hash_token(&token), now)
        .await?;
    let path = data_dir.join("admin.token");
    write_private(&path, &format!("{token}\n"))
        .with_context(|| format!("writing {}", path.display()))?;
    // Printed once, on purpose: this is the only place the password is shown.
    eprintln!("Created superadmin \"admin\" with password {password}");
    eprintln!("An API token for admin is in {}", path.display());
    Ok(())
}

fn write_private(path: &Path, text: &str) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)?;
    file.write_all(text.as_bytes())?;
    file.sync_all()
}

/// Failed logins per client address: after `LIMIT` in `WINDOW`, logins are refused until the
/// window passes.
pub struct LoginLimiter {
    failures: Mutex<HashMap<IpAddr, (u32, Instant)>>,
}

const LIMIT: u32 = 5;
const WINDOW: Duration = Duration::from_secs(60);

impl LoginLimiter {
    pub fn new() -> LoginLimiter {
        LoginLimiter {
            failures: Mutex::new(HashMap::new()),
        }
    }

    /// Seconds to wait, when this address must wait.
    pub fn blocked(&self, ip: IpAddr) -> Option<u64> {
        let failures = self.failures.lock().ok()?;
        let (count, since) = failures.get(&ip)?;
        let left = WINDOW.checked_sub(since.elapsed())?;
        (*count >= LIMIT).then_some(left.as_secs().max(1))
    }

    pub fn failed(&self, ip: IpAddr) {
        if let Ok(mut failures) = self.failures.lock() {
            let entry = failures.entry(ip).or_insert((0, Instant::now()));
            if entry.1.elapsed() > WINDOW {
                *entry = (0, Instant::now());
            }
            entry.0 += 1;
        }
    }

    pub fn succeeded(&self, ip: IpAddr) {
        if let Ok(mut failures) = self.failures.lock() {
            failures.remove(&ip);
        }
    }
}

impl Default for LoginLimiter {
    fn default() -> Self {
        LoginLimiter::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn session_cookie_is_found_among_others() {
        let headers = ["theme=dark; dnz_session=abc123", "other=1"];
        assert_eq!(session_cookie(headers.into_iter()), Some("abc123"));
        assert_eq!(session_cookie(["a=1", "b=2"].into_iter()), None);
        // A cookie whose name only ends in ours is not ours.
        assert_eq!(session_cookie(["xdnz_session=1"].into_iter()), None);
    }

    #[test]
    fn csrf_comparison() {
        assert!(constant_time_eq(b"abcd", b"abcd"));
        assert!(!constant_time_eq(b"abcd", b"abce"));
        assert!(!constant_time_eq(b"abcd", b"abc"));
        assert!(!constant_time_eq(b"", b"a"));
    }

    #[test]
    fn cookies_are_http_only_and_strict() {
        let (id, csrf) = new_session();
        assert_eq!((id.len(), csrf.len()), (64, 64));
        assert_ne!(id, csrf);
        assert_eq!(
            session_set_cookie("ff", true),
            "dnz_session=ff; Path=/; HttpOnly; SameSite=Strict; Max-Age=43200; Secure"
        );
        assert_eq!(
            session_clear_cookie(),
            "dnz_session=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0"
        );
    }
}
