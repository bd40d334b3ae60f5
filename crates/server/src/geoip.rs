//! The GeoIP database: `<data dir>/geoip-country.mmdb` read at start, downloads that are
//! checked before they replace the file and are swapped into the answer snapshot, monthly
//! automatic updates, and the status and lookups the API shows.
//!
//! A download never disturbs the query path: fetching, unpacking and checking run on a
//! blocking thread, the file is replaced atomically (temp file, fsync, rename, fsync of the
//! directory), and the new database reaches the DNS workers through [`Manager::set_geo`], one
//! pointer swap. A failed or corrupt download leaves the old file and the old database in use.
//!
//! Settings live in the store's `settings` table under `geoip.*`, so the source, the switch and
//! the schedule survive restarts.

use std::io::{Read, Write};
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use geo::{GeoDb, Locate as _};
use store::StoreError;

use crate::manage::{Manager, now_secs, today_yyyymmdd};

/// DB-IP IP-to-Country Lite (CC BY 4.0), the default source.
pub const DEFAULT_URL: &str =
    "https://download.db-ip.com/free/dbip-country-lite-{year}-{month}.mmdb.gz";
/// The credit DB-IP's licence asks for wherever its data is shown.
pub const DBIP_ATTRIBUTION: &str = "IP Geolocation by DB-IP";
/// The file in the data dir.
pub const FILE_NAME: &str = "geoip-country.mmdb";

/// Largest download accepted (compressed or not).
const MAX_DOWNLOAD: u64 = 200 << 20;
/// Largest database accepted after unpacking.
const MAX_UNPACKED: u64 = 512 << 20;
/// One download, connection to last byte.
const DOWNLOAD_TIMEOUT: Duration = Duration::from_secs(600);
const CONNECT_TIMEOUT: Duration = Duration::from_secs(30);

const DAY: i64 = 86_400;
/// After a successful download, the next one is this much later.
const AFTER_SUCCESS: i64 = 30 * DAY;
/// After a failed automatic download, it is tried again this much later.
const AFTER_FAILURE: i64 = DAY;
/// With no database file yet, the first automatic download waits this long after the first
/// start, so that another source can be set first.
const FIRST_DOWNLOAD_DELAY: i64 = 600;

const KEY_URL: &str = "geoip.url";
const KEY_AUTO_UPDATE: &str = "geoip.auto_update";
const KEY_LAST_DOWNLOAD: &str = "geoip.last_download";
const KEY_LAST_RESULT: &str = "geoip.last_result";
const KEY_LAST_URL: &str = "geoip.last_url";
const KEY_LAST_ERROR: &str = "geoip.last_error";
const KEY_NEXT_DOWNLOAD: &str = "geoip.next_download";

/// Why a download was refused; the old file and database stay in use.
#[derive(Debug, thiserror::Error)]
pub enum DownloadError {
    #[error("download failed: HTTP {status} from {url}")]
    Status { status: u16, url: String },
    #[error("download failed: HTTP 404 from {url} and from {previous} (the month before)")]
    NotFoundTwice { url: String, previous: String },
    #[error("download failed: {url}: {error}")]
    Transport { url: String, error: String },
    #[error("download failed: {url} is larger than {} MB", MAX_DOWNLOAD >> 20)]
    TooLarge { url: String },
    #[error("unpacking {url}: {reason}")]
    Unpack { url: String, reason: String },
    #[error("{error} (downloaded from {url})")]
    Database { url: String, error: geo::GeoError },
    #[error("writing {path}: {error}; the old file is kept")]
    Write { path: String, error: std::io::Error },
    #[error("the download task failed: {0}")]
    Task(String),
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl DownloadError {
    /// A store failure is ours (500); everything else is the source's fault (502).
    pub fn is_internal(&self) -> bool {
        matches!(self, DownloadError::Store(_) | DownloadError::Task(_))
    }

    /// The reason with passwords and license keys in URLs masked, for API answers.
    pub fn message(&self) -> String {
        redact(&self.to_string())
    }
}

/// Why a settings change was refused.
#[derive(Debug, thiserror::Error)]
pub enum SettingsError {
    #[error("{message}")]
    Invalid {
        field: &'static str,
        message: String,
    },
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Who asked for a download.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Trigger {
    /// The API (`dnz geoip download`, the dashboard's button).
    Manual,
    /// The monthly update.
    Scheduled,
}

/// What answers GeoDNS lookups now, for the status.
#[derive(Clone, Debug, Default)]
struct Loaded {
    info: Option<geo::DbInfo>,
    demo: bool,
}

/// The GeoIP database manager; one per server, shared by the API and the update task.
pub struct GeoIp {
    manager: Arc<Manager>,
    path: PathBuf,
    loaded: std::sync::Mutex<Loaded>,
    /// Downloads and settings changes one at a time.
    busy: tokio::sync::Mutex<()>,
    /// Wakes the update task when the schedule or the switch changed.
    changed: tokio::sync::Notify,
}

impl GeoIp {
    /// Loads `<data dir>/geoip-country.mmdb` (or, with `--demo` and no usable file, the demo
    /// database), makes sure an update is scheduled, and starts the monthly update task.
    pub async fn start(manager: Arc<Manager>, data_dir: &Path, demo: bool) -> Arc<GeoIp> {
        let geoip = Arc::new(GeoIp {
            manager,
            path: data_dir.join(FILE_NAME),
            loaded: std::sync::Mutex::new(Loaded::default()),
            busy: tokio::sync::Mutex::new(()),
            changed: tokio::sync::Notify::new(),
        });
        geoip.load_at_start(demo).await;
        if let Err(e) = geoip.schedule_first(demo).await {
            tracing::warn!(error = %e, "GeoIP update not scheduled");
        }
        tokio::spawn(geoip.clone().update_task());
        geoip
    }

    async fn load_at_start(&self, demo: bool) {
        if self.path.exists() {
            let path = self.path.clone();
            let opened = tokio::task::spawn_blocking(move || GeoDb::open(&path)).await;
            match opened {
                Ok(Ok(db)) => {
                    tracing::info!(
                        path = %self.path.display(),
                        database_type = %db.info.database_type,
                        "GeoIP database loaded"
                    );
                    self.swap_in(db, false);
                    return;
                }
                Ok(Err(e)) => {
                    tracing::error!(path = %self.path.display(), error = %e, "GeoIP database not loaded")
                }
                Err(e) => tracing::error!(error = %e, "GeoIP database not loaded"),
            }
        }
        if demo {
            // Only the demo: real placement needs a real database (`dnz geoip download`).
            match GeoDb::from_bytes(geo::demo::database()) {
                Ok(db) => self.swap_in(db, true),
                Err(e) => tracing::error!(error = %e, "demo GeoIP database not built"),
            }
        }
    }

    fn swap_in(&self, db: GeoDb, demo: bool) {
        let info = db.info.clone();
        self.manager.set_geo(Arc::new(db));
        self.manager
            .metrics()
            .geoip_build_epoch
            .set(info.build_epoch as i64);
        if let Ok(mut loaded) = self.loaded.lock() {
            *loaded = Loaded {
                info: Some(info),
                demo,
            };
        }
    }

    fn store(&self) -> &store::Store {
        self.manager.store()
    }

    async fn setting_i64(&self, key: &str) -> Result<Option<i64>, StoreError> {
        Ok(self
            .store()
            .setting(key)
            .await?
            .and_then(|v| v.trim().parse().ok()))
    }

    /// The source URL template.
    async fn url(&self) -> Result<String, StoreError> {
        Ok(self
            .store()
            .setting(KEY_URL)
            .await?
            .filter(|u| !u.trim().is_empty())
            .unwrap_or_else(|| DEFAULT_URL.to_string()))
    }

    async fn auto_update(&self) -> Result<bool, StoreError> {
        Ok(self.store().setting(KEY_AUTO_UPDATE).await?.as_deref() != Some("off"))
    }

    /// When nothing is scheduled yet: a month after the file was written (soon, if that has
    /// passed), or, with no file, shortly after the first start. The demo's synthetic
    /// database is not replaced behind the user's back.
    async fn schedule_first(&self, demo: bool) -> Result<(), StoreError> {
        if self.setting_i64(KEY_NEXT_DOWNLOAD).await?.is_some() {
            return Ok(());
        }
        if let Some(next) = self.first_schedule(demo, now_secs()) {
            self.store()
                .set_setting(KEY_NEXT_DOWNLOAD, &next.to_string())
                .await?;
        }
        Ok(())
    }

    fn first_schedule(&self, demo: bool, now: i64) -> Option<i64> {
        match file_modified(&self.path) {
            Some(modified) => Some((modified + AFTER_SUCCESS).max(now + 60)),
            None if demo => None,
            None => Some(now + FIRST_DOWNLOAD_DELAY),
        }
    }

    /// Sleeps until the next download is due, runs it, and starts over; a change of the
    /// switch or the schedule wakes it early.
    async fn update_task(self: Arc<GeoIp>) {
        loop {
            let due = async {
                if !self.auto_update().await? {
                    return Ok::<_, StoreError>(None);
                }
                self.setting_i64(KEY_NEXT_DOWNLOAD).await
            }
            .await;
            let wait = match due {
                Ok(Some(next)) => Some((next - now_secs()).max(0)),
                Ok(None) => None,
                Err(e) => {
                    tracing::warn!(error = %e, "GeoIP update schedule not readable; trying again in a minute");
                    Some(60)
                }
            };
            match wait {
                Some(0) => {
                    if let Err(e) = self.download(Trigger::Scheduled).await
                        && e.is_internal()
                    {
                        // The schedule may not have moved: do not spin.
                        tokio::time::sleep(Duration::from_secs(60)).await;
                    }
                }
                Some(secs) => {
                    // Capped so that a changed wall clock is noticed within an hour.
                    let sleep = Duration::from_secs(secs.clamp(1, 3600) as u64);
                    tokio::select! {
                        _ = tokio::time::sleep(sleep) => {}
                        _ = self.changed.notified() => {}
                    }
                }
                None => self.changed.notified().await,
            }
        }
    }

    /// Downloads the database from the configured source, checks it, replaces the file and
    /// swaps it in. On failure the old file and database stay, and the reason is recorded.
    pub async fn download(&self, trigger: Trigger) -> Result<api::GeoIpStatus, DownloadError> {
        let guard = self.busy.lock().await;
        let template = self.url().await?;
        let now = now_secs();
        let today = today_yyyymmdd();
        let (year, month) = (today / 10_000, today / 100 % 100);
        let path = self.path.clone();
        let fetched =
            tokio::task::spawn_blocking(move || fetch_check_install(&template, year, month, &path))
                .await
                .unwrap_or_else(|e| Err(DownloadError::Task(e.to_string())));
        let store = self.store();
        store
            .set_setting(KEY_LAST_DOWNLOAD, &now.to_string())
            .await?;
        match fetched {
            Ok((db, url)) => {
                let info = db.info.clone();
                self.swap_in(db, false);
                store.set_setting(KEY_LAST_RESULT, "ok").await?;
                store.set_setting(KEY_LAST_URL, &url).await?;
                store.set_setting(KEY_LAST_ERROR, "").await?;
                store
                    .set_setting(KEY_NEXT_DOWNLOAD, &(now + AFTER_SUCCESS).to_string())
                    .await?;
                tracing::info!(
                    url = %redact(&url),
                    database_type = %info.database_type,
                    build_epoch = info.build_epoch,
                    size = info.size,
                    "GeoIP database updated"
                );
                self.changed.notify_one();
                drop(guard);
                Ok(self.status().await?)
            }
            Err(error) => {
                let message = redact(&error.to_string());
                store.set_setting(KEY_LAST_RESULT, "failed").await?;
                store.set_setting(KEY_LAST_ERROR, &message).await?;
                if trigger == Trigger::Scheduled {
                    store
                        .set_setting(KEY_NEXT_DOWNLOAD, &(now + AFTER_FAILURE).to_string())
                        .await?;
                }
                tracing::warn!(error = %message, "GeoIP download failed; the old database stays in use");
                Err(error)
            }
        }
    }

    /// Changes the source and the monthly switch; only the fields given.
    pub async fn update_settings(
        &self,
        settings: &api::GeoIpSettings,
    ) -> Result<api::GeoIpStatus, SettingsError> {
        let url = match settings.url.as_deref().map(str::trim) {
            None => None,
            Some(url) if url.eq_ignore_ascii_case("default") => Some(String::new()),
            Some(url) => Some(validate_url(url).map_err(|message| SettingsError::Invalid {
                field: "url",
                message,
            })?),
        };
        {
            let _guard = self.busy.lock().await;
            if let Some(url) = url {
                self.store().set_setting(KEY_URL, &url).await?;
            }
            if let Some(on) = settings.auto_update {
                self.store()
                    .set_setting(KEY_AUTO_UPDATE, if on { "on" } else { "off" })
                    .await?;
                if on && self.setting_i64(KEY_NEXT_DOWNLOAD).await?.is_none() {
                    let next = self
                        .first_schedule(false, now_secs())
                        .unwrap_or_else(|| now_secs() + FIRST_DOWNLOAD_DELAY);
                    self.store()
                        .set_setting(KEY_NEXT_DOWNLOAD, &next.to_string())
                        .await?;
                }
            }
        }
        self.changed.notify_one();
        Ok(self.status().await?)
    }

    /// What the database is, where it comes from, and when it is updated.
    pub async fn status(&self) -> Result<api::GeoIpStatus, StoreError> {
        let url = self.url().await?;
        let auto_update = self.auto_update().await?;
        let text = |v: Option<String>| v.filter(|v| !v.is_empty());
        let store = self.store();
        let metadata = std::fs::metadata(&self.path).ok();
        let loaded = self.loaded.lock().map(|l| l.clone()).unwrap_or_default();
        let info = loaded.info.as_ref();
        Ok(api::GeoIpStatus {
            path: self.path.display().to_string(),
            file_size: metadata.as_ref().map(|m| m.len()),
            file_modified: file_modified(&self.path),
            loaded: info.is_some(),
            demo: loaded.demo,
            database_type: info.map(|i| i.database_type.clone()),
            description: info
                .map(|i| i.description.clone())
                .filter(|d| !d.is_empty()),
            build_epoch: info.map(|i| i.build_epoch as i64),
            default_url: url == DEFAULT_URL,
            attribution: url
                .to_ascii_lowercase()
                .contains("db-ip.com")
                .then(|| DBIP_ATTRIBUTION.to_string()),
            url: redact(&url),
            auto_update,
            last_download: self.setting_i64(KEY_LAST_DOWNLOAD).await?,
            last_result: text(store.setting(KEY_LAST_RESULT).await?),
            last_url: text(store.setting(KEY_LAST_URL).await?).map(|u| redact(&u)),
            last_error: text(store.setting(KEY_LAST_ERROR).await?),
            next_download: if auto_update {
                self.setting_i64(KEY_NEXT_DOWNLOAD).await?
            } else {
                None
            },
        })
    }

    /// What GeoDNS sees for an address, from the database answering queries now.
    pub fn lookup(&self, address: IpAddr) -> api::GeoLookup {
        let snapshot = self.manager.snapshot();
        crate::explain::describe_place(address, &snapshot.geo.locate(address))
    }
}

fn file_modified(path: &Path) -> Option<i64> {
    let modified = std::fs::metadata(path).ok()?.modified().ok()?;
    modified
        .duration_since(std::time::UNIX_EPOCH)
        .ok()
        .map(|d| d.as_secs() as i64)
}

/// Checks a source URL: `http` or `https`, with a host; `{year}` and `{month}` allowed.
fn validate_url(url: &str) -> Result<String, String> {
    if url.len() > 2048 {
        return Err("a URL has at most 2048 characters".into());
    }
    let filled = fill(url, 2000, 1);
    let uri: ureq::http::Uri = filled
        .parse()
        .map_err(|e| format!("{url:?} is not a URL: {e}"))?;
    match uri.scheme_str() {
        Some(s) if s.eq_ignore_ascii_case("http") || s.eq_ignore_ascii_case("https") => {}
        _ => {
            return Err(format!(
                "{url:?}: the URL must start with http:// or https://"
            ));
        }
    }
    if uri.host().is_none_or(str::is_empty) {
        return Err(format!("{url:?}: the URL has no host"));
    }
    Ok(url.to_string())
}

/// Fills `{year}` (4 digits) and `{month}` (2 digits).
fn fill(template: &str, year: u32, month: u32) -> String {
    template
        .replace("{year}", &format!("{year:04}"))
        .replace("{month}", &format!("{month:02}"))
}

fn previous_month(year: u32, month: u32) -> (u32, u32) {
    if month <= 1 {
        (year - 1, 12)
    } else {
        (year, month - 1)
    }
}

/// Masks secrets a source URL may carry: a password in the user info, a `license_key`.
fn redact(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for (i, word) in text.split(' ').enumerate() {
        if i > 0 {
            out.push(' ');
        }
        out.push_str(&redact_url(word));
    }
    out
}

fn redact_url(word: &str) -> String {
    let mut word = word.to_string();
    if let Some(scheme_end) = word.find("://") {
        let rest = &word[scheme_end + 3..];
        let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
        if let Some(at) = rest[..authority_end].rfind('@')
            && let Some(colon) = rest[..at].find(':')
        {
            let start = scheme_end + 3 + colon + 1;
            let end = scheme_end + 3 + at;
            word.replace_range(start..end, "***");
        }
    }
    if let Some(pos) = word.find("license_key=") {
        let start = pos + "license_key=".len();
        let end = word[start..]
            .find(['&', '#', ')', ';', ','])
            .map_or(word.len(), |e| start + e);
        word.replace_range(start..end, "***");
    }
    word
}

enum Fetched {
    Body(Vec<u8>),
    NotFound,
}

fn agent() -> ureq::Agent {
    let config = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(DOWNLOAD_TIMEOUT))
        .timeout_connect(Some(CONNECT_TIMEOUT))
        .user_agent(concat!("dnz/", env!("CARGO_PKG_VERSION")))
        .build();
    ureq::Agent::new_with_config(config)
}

fn get(agent: &ureq::Agent, url: &str) -> Result<Fetched, DownloadError> {
    let transport = |error: String| DownloadError::Transport {
        url: url.to_string(),
        error,
    };
    let mut response = agent
        .get(url)
        .call()
        .map_err(|e| transport(e.to_string()))?;
    let status = response.status().as_u16();
    if status == 404 {
        return Ok(Fetched::NotFound);
    }
    if !(200..300).contains(&status) {
        return Err(DownloadError::Status {
            status,
            url: url.to_string(),
        });
    }
    response
        .body_mut()
        .with_config()
        .limit(MAX_DOWNLOAD)
        .read_to_vec()
        .map(Fetched::Body)
        .map_err(|e| match e {
            ureq::Error::BodyExceedsLimit(_) => DownloadError::TooLarge {
                url: url.to_string(),
            },
            other => transport(format!("reading the body: {other}")),
        })
}

/// Fetches this month's file (the month before's on a 404), unpacks and checks it, then
/// replaces the file. Returns the database and the URL it came from.
fn fetch_check_install(
    template: &str,
    year: u32,
    month: u32,
    path: &Path,
) -> Result<(GeoDb, String), DownloadError> {
    let agent = agent();
    let url = fill(template, year, month);
    let (bytes, url) = match get(&agent, &url)? {
        Fetched::Body(bytes) => (bytes, url),
        Fetched::NotFound if template.contains("{year}") || template.contains("{month}") => {
            let (year, month) = previous_month(year, month);
            let previous = fill(template, year, month);
            tracing::info!(url = %redact(&url), "GeoIP database not published yet; trying the month before");
            match get(&agent, &previous)? {
                Fetched::Body(bytes) => (bytes, previous),
                Fetched::NotFound => return Err(DownloadError::NotFoundTwice { url, previous }),
            }
        }
        Fetched::NotFound => return Err(DownloadError::Status { status: 404, url }),
    };
    let mmdb = unpack(&url, bytes).map_err(|reason| DownloadError::Unpack {
        url: url.clone(),
        reason,
    })?;
    let db = GeoDb::from_bytes(mmdb.clone()).map_err(|error| DownloadError::Database {
        url: url.clone(),
        error,
    })?;
    // The check above opened, verified and found country data; make sure lookups run.
    let _ = db.locate(IpAddr::from([8, 8, 8, 8]));
    let _ = db.locate(IpAddr::from([0x2001, 0x4860, 0, 0, 0, 0, 0, 0x8888]));
    install(path, &mmdb).map_err(|error| DownloadError::Write {
        path: path.display().to_string(),
        error,
    })?;
    Ok((db, url))
}

const GZIP_MAGIC: [u8; 2] = [0x1f, 0x8b];
/// Starts the metadata section at the end of every `.mmdb` file.
const MMDB_METADATA_MARKER: &[u8] = b"\xab\xcd\xefMaxMind.com";

fn is_gzip(bytes: &[u8]) -> bool {
    bytes.starts_with(&GZIP_MAGIC)
}

fn is_tar(bytes: &[u8]) -> bool {
    bytes.get(257..262) == Some(b"ustar")
}

fn looks_like_mmdb(bytes: &[u8]) -> bool {
    let tail = &bytes[bytes.len().saturating_sub(128 << 10)..];
    tail.windows(MMDB_METADATA_MARKER.len())
        .any(|w| w == MMDB_METADATA_MARKER)
}

/// The `.mmdb` inside a download: gzip and tar are recognised by their magic bytes and by the
/// URL's path suffix, so a URL without a suffix works too.
fn unpack(url: &str, bytes: Vec<u8>) -> Result<Vec<u8>, String> {
    let path = url
        .split(['?', '#'])
        .next()
        .unwrap_or(url)
        .to_ascii_lowercase();
    let says_tar = path.ends_with(".tar.gz") || path.ends_with(".tgz") || path.ends_with(".tar");
    let says_gzip = path.ends_with(".gz") || path.ends_with(".tgz");
    let mut data = bytes;
    if is_gzip(&data) {
        data = gunzip(&data)?;
    } else if says_gzip && !looks_like_mmdb(&data) {
        return Err(format!(
            "not a gzip file ({} bytes that start with {})",
            data.len(),
            hex_prefix(&data)
        ));
    }
    if is_tar(&data) || (says_tar && !looks_like_mmdb(&data)) {
        data = first_mmdb_in_tar(&data)?;
    }
    Ok(data)
}

fn hex_prefix(bytes: &[u8]) -> String {
    if bytes.is_empty() {
        return "nothing".into();
    }
    bytes
        .iter()
        .take(4)
        .map(|b| format!("{b:02x}"))
        .collect::<Vec<_>>()
        .join(" ")
}

fn gunzip(bytes: &[u8]) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    flate2::read::MultiGzDecoder::new(bytes)
        .take(MAX_UNPACKED + 1)
        .read_to_end(&mut out)
        .map_err(|e| format!("gzip: {e}"))?;
    if out.len() as u64 > MAX_UNPACKED {
        return Err(format!("unpacked larger than {} MB", MAX_UNPACKED >> 20));
    }
    Ok(out)
}

fn first_mmdb_in_tar(bytes: &[u8]) -> Result<Vec<u8>, String> {
    let mut archive = tar::Archive::new(bytes);
    let entries = archive.entries().map_err(|e| format!("tar: {e}"))?;
    for entry in entries {
        let mut entry = entry.map_err(|e| format!("tar: {e}"))?;
        let is_mmdb = entry.header().entry_type().is_file()
            && entry
                .path()
                .ok()
                .and_then(|p| p.extension().map(|e| e.eq_ignore_ascii_case("mmdb")))
                .unwrap_or(false);
        if !is_mmdb {
            continue;
        }
        let mut out = Vec::new();
        (&mut entry)
            .take(MAX_UNPACKED + 1)
            .read_to_end(&mut out)
            .map_err(|e| format!("tar: {e}"))?;
        if out.len() as u64 > MAX_UNPACKED {
            return Err(format!("unpacked larger than {} MB", MAX_UNPACKED >> 20));
        }
        return Ok(out);
    }
    Err("the tar archive holds no .mmdb file".into())
}

/// Replaces `path` atomically: a temp file in the same directory, fsync, rename, fsync of the
/// directory. Readers see the old file or the new one, never a part.
fn install(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| FILE_NAME.to_string());
    let temp = dir.join(format!(".{name}.{}.tmp", std::process::id()));
    let result = (|| {
        let mut file = std::fs::File::create(&temp)?;
        file.write_all(bytes)?;
        file.sync_all()?;
        drop(file);
        std::fs::rename(&temp, path)?;
        std::fs::File::open(dir)?.sync_all()
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&temp);
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn mmdb() -> Vec<u8> {
        geo::demo::database()
    }

    fn gz(bytes: &[u8]) -> Vec<u8> {
        let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        encoder.write_all(bytes).unwrap();
        encoder.finish().unwrap()
    }

    fn tar_gz(files: &[(&str, &[u8])]) -> Vec<u8> {
        let mut builder = tar::Builder::new(Vec::new());
        for (name, bytes) in files {
            let mut header = tar::Header::new_gnu();
            header.set_size(bytes.len() as u64);
            header.set_mode(0o644);
            header.set_cksum();
            builder.append_data(&mut header, name, *bytes).unwrap();
        }
        gz(&builder.into_inner().unwrap())
    }

    #[test]
    fn dates_fill_the_template() {
        assert_eq!(
            fill(DEFAULT_URL, 2026, 3),
            "https://download.db-ip.com/free/dbip-country-lite-2026-03.mmdb.gz"
        );
        assert_eq!(previous_month(2026, 1), (2025, 12));
        assert_eq!(previous_month(2026, 11), (2026, 10));
    }

    #[test]
    fn urls_are_checked() {
        assert!(validate_url(DEFAULT_URL).is_ok());
        assert!(validate_url("http://127.0.0.1:8080/db").is_ok());
        assert!(validate_url("ftp://example.com/db.mmdb").is_err());
        assert!(validate_url("example.com/db.mmdb").is_err());
        assert!(validate_url("https:///db").is_err());
        assert!(validate_url("http://a b/").is_err());
    }

    #[test]
    fn secrets_are_masked() {
        assert_eq!(
            redact("download failed: https://123:secret@download.maxmind.com/x?suffix=tar.gz"),
            "download failed: https://123:***@download.maxmind.com/x?suffix=tar.gz"
        );
        assert_eq!(
            redact("https://h/app?edition_id=GeoLite2-Country&license_key=abc&suffix=tar.gz"),
            "https://h/app?edition_id=GeoLite2-Country&license_key=***&suffix=tar.gz"
        );
        assert_eq!(redact(DEFAULT_URL), DEFAULT_URL);
    }

    #[test]
    fn gzip_and_tar_by_magic_and_by_suffix() {
        let db = mmdb();
        assert_eq!(unpack("http://h/a.mmdb", db.clone()).unwrap(), db);
        assert_eq!(unpack("http://h/a.mmdb.gz", gz(&db)).unwrap(), db);
        assert_eq!(unpack("http://h/download", gz(&db)).unwrap(), db);
        let archive = tar_gz(&[
            ("GeoLite2-Country_20260101/LICENSE.txt", b"licence"),
            ("GeoLite2-Country_20260101/GeoLite2-Country.mmdb", &db),
            ("GeoLite2-Country_20260101/other.mmdb", b"second"),
        ]);
        assert_eq!(unpack("http://h/a.tar.gz", archive.clone()).unwrap(), db);
        assert_eq!(
            unpack("http://h/download?suffix=tar.gz", archive).unwrap(),
            db
        );
        // A .gz URL that the server already unpacked still works.
        assert_eq!(unpack("http://h/a.mmdb.gz", db.clone()).unwrap(), db);
        let err = unpack("http://h/a.mmdb.gz", b"garbage".to_vec()).unwrap_err();
        assert!(err.starts_with("not a gzip file"), "{err}");
        let err = unpack("http://h/a.tar.gz", tar_gz(&[("README", b"x")])).unwrap_err();
        assert_eq!(err, "the tar archive holds no .mmdb file");
        let err = unpack("http://h/a.gz", b"\x1f\x8bbroken".to_vec()).unwrap_err();
        assert!(err.starts_with("gzip:"), "{err}");
    }

    #[test]
    fn install_replaces_the_file_whole() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(FILE_NAME);
        install(&path, b"one").unwrap();
        install(&path, b"two").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"two");
        let names: BTreeMap<_, _> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| (e.unwrap().file_name(), ()))
            .collect();
        assert_eq!(names.len(), 1, "no temp file is left: {names:?}");
    }
}
