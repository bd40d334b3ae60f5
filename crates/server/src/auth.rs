//! Users, passwords, API tokens and roles (SPEC §11).
//!
//! Tokens are 32 random bytes shown once and stored as SHA-256 digests: they carry full entropy,
//! so a slow hash adds nothing. Passwords use argon2 off the async threads.

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
