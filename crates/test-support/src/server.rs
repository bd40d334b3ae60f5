//! A `dnz serve` process for one test: its own data dir, ports chosen by the OS, killed on drop.

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The `dnz` binary built for this test run.
pub fn dnz_binary() -> PathBuf {
    if let Ok(path) = std::env::var("CARGO_BIN_EXE_dnz") {
        return PathBuf::from(path);
    }
    // Integration tests of other crates: the binary sits next to the test executable's dir.
    let exe = std::env::current_exe().expect("test executable path");
    let target_dir = exe.parent().and_then(Path::parent).expect("target dir");
    let candidate = target_dir.join("dnz");
    assert!(
        candidate.exists(),
        "dnz binary not built at {}: run `cargo build -p dnz` first",
        candidate.display()
    );
    candidate
}

/// A loopback port free for TCP and UDP right now, for a peer that must be told its port.
pub fn free_port() -> u16 {
    for _ in 0..50 {
        let Ok(tcp) = std::net::TcpListener::bind("127.0.0.1:0") else {
            continue;
        };
        let Ok(port) = tcp.local_addr().map(|a| a.port()) else {
            continue;
        };
        if std::net::UdpSocket::bind(("127.0.0.1", port)).is_ok() {
            return port;
        }
    }
    panic!("no free loopback port");
}

/// Finds a program a test needs. Outside CI a missing one returns `None` (the caller skips with a
/// message); under `CI=true` it panics, so CI never passes by skipping.
pub fn require_program(name: &str) -> Option<PathBuf> {
    let found = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .chain([PathBuf::from("/usr/sbin"), PathBuf::from("/sbin")])
            .map(|dir| dir.join(name))
            .find(|p| p.is_file())
    });
    if found.is_none() {
        if std::env::var("CI").is_ok_and(|v| v == "true") {
            panic!(
                "{name} is required under CI=true but is not installed (scripts/test installs it)"
            );
        }
        eprintln!("skipping: {name} is not installed (scripts/test installs it)");
    }
    found
}

pub struct DnzServer {
    pub child: Child,
    pub dns: SocketAddr,
    pub http: SocketAddr,
    pub data_dir: PathBuf,
    pub token: String,
    _temp: Option<tempfile::TempDir>,
}

impl DnzServer {
    /// Starts a server with a fresh data dir.
    pub fn start(extra_args: &[&str]) -> DnzServer {
        let temp = tempfile::tempdir().expect("temp dir");
        let data_dir = temp.path().to_path_buf();
        let mut server = DnzServer::start_in(&data_dir, extra_args);
        server._temp = Some(temp);
        server
    }

    /// Starts a server on an existing data dir (for restarts); the caller keeps the dir.
    pub fn start_in(data_dir: &Path, extra_args: &[&str]) -> DnzServer {
        let mut child = Command::new(dnz_binary())
            .args([
                "serve",
                "--dns",
                "127.0.0.1:0",
                "--http",
                "127.0.0.1:0",
                "--data-dir",
            ])
            .arg(data_dir)
            .args(extra_args)
            .env("DNZ_LOG", "warn")
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start dnz serve");
        let stdout = child.stdout.take().expect("stdout");
        let mut line = String::new();
        let mut reader = BufReader::new(stdout);
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            line.clear();
            if reader.read_line(&mut line).unwrap_or(0) == 0 {
                let status = child.try_wait().ok().flatten();
                panic!("dnz serve exited before listening: {status:?}");
            }
            if line.starts_with("listening ") {
                break;
            }
            assert!(Instant::now() < deadline, "dnz serve did not start");
        }
        // Keep draining stdout so the server never blocks on a full pipe.
        std::thread::spawn(move || for _ in reader.lines() {});
        let field = |key: &str| -> SocketAddr {
            let value = line
                .split_whitespace()
                .find_map(|w| w.strip_prefix(key))
                .expect("address in listening line");
            value
                .split(',')
                .next()
                .unwrap_or(value)
                .parse()
                .expect("socket address")
        };
        let dns = field("dns=");
        let http = field("http=");
        let token = std::fs::read_to_string(data_dir.join("admin.token"))
            .expect("admin.token")
            .trim()
            .to_string();
        DnzServer {
            child,
            dns,
            http,
            data_dir: data_dir.to_path_buf(),
            token,
            _temp: None,
        }
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}{}", self.http, path)
    }

    fn agent() -> ureq::Agent {
        ureq::Agent::config_builder()
            .http_status_as_error(false)
            .build()
            .new_agent()
    }

    /// Sends an API request with the admin token (or `token`); returns status and body text.
    pub fn api(
        &self,
        method: &str,
        path: &str,
        body: Option<&str>,
        token: Option<&str>,
    ) -> (u16, String) {
        let token = token.unwrap_or(&self.token);
        let agent = DnzServer::agent();
        let url = self.url(path);
        let auth = format!("Bearer {token}");
        let result = match (method, body) {
            ("GET", _) => agent.get(&url).header("Authorization", &auth).call(),
            ("DELETE", _) => agent.delete(&url).header("Authorization", &auth).call(),
            ("POST", Some(body)) => agent
                .post(&url)
                .header("Authorization", &auth)
                .header(
                    "Content-Type",
                    if body.starts_with(['{', '[']) {
                        "application/json"
                    } else {
                        "text/plain"
                    },
                )
                .send(body),
            ("PUT", Some(body)) => agent
                .put(&url)
                .header("Authorization", &auth)
                .header("Content-Type", "application/json")
                .send(body),
            _ => panic!("unsupported request {method} {body:?}"),
        };
        let mut response = result.unwrap_or_else(|e| panic!("{method} {url}: {e}"));
        let status = response.status().as_u16();
        let text = response.body_mut().read_to_string().unwrap_or_default();
        (status, text)
    }

    /// An API call that must succeed (2xx); returns the body.
    pub fn api_ok(&self, method: &str, path: &str, body: Option<&str>) -> String {
        let (status, text) = self.api(method, path, body, None);
        assert!(
            (200..300).contains(&status),
            "{method} {path} -> {status}: {text}"
        );
        text
    }

    /// Runs the `dnz` CLI against this server with the admin token.
    pub fn cli(&self, args: &[&str]) -> std::process::Output {
        Command::new(dnz_binary())
            .args([
                "--server",
                &format!("http://{}", self.http),
                "--token",
                &self.token,
            ])
            .args(args)
            .output()
            .expect("run dnz cli")
    }

    /// Sends SIGTERM and waits for a clean exit.
    pub fn stop(mut self) -> std::process::ExitStatus {
        let pid = self.child.id().to_string();
        let _ = Command::new("kill").args(["-TERM", &pid]).status();
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if let Ok(Some(status)) = self.child.try_wait() {
                return status;
            }
            assert!(
                Instant::now() < deadline,
                "dnz serve did not stop on SIGTERM"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// SIGKILL, as a crash.
    pub fn kill9(mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for DnzServer {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}
