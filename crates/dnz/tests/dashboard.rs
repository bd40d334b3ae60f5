//! The dashboard end to end in a real browser: `node dashboard/tests/e2e.mjs` drives Debian's
//! Chromium through playwright-core against a real `dnz serve`, a real HTTPS origin for health
//! checks and a local server of the real DB-IP country database.
//!
//! The script asks this test for what a browser cannot do by writing `@@ COMMAND` lines on its
//! stdout; each gets exactly one JSON line back on its stdin:
//!
//! - `@@ stop-origin`, `@@ start-origin`: stop the HTTPS origin, start it again on its port;
//! - `@@ dig NAME TYPE`: `dig +short` against dnz, `{"ok":true,"answers":[…]}`;
//! - `@@ dig-subnet NAME TYPE SUBNET`: the same with `+subnet=SUBNET` (ECS);
//! - failures are `{"ok":false,"error":"…"}`.
//!
//! Every other line the script prints is echoed here prefixed `e2e: `.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde_json::json;
use test_support::tls::{HttpsOrigin, TestPki};
use test_support::{DnzServer, files, free_port, require_program};

const ORIGIN_HOST: &str = "www.shop.test";
/// The whole browser run, from spawning node to its exit.
const SCRIPT_LIMIT: Duration = Duration::from_secs(6 * 60);
const USERS: [(&str, &str, &str, &str); 3] = [
    ("SUPERADMIN", "ops", "ops-password-1", "superadmin"),
    ("EDITOR", "ed", "ed-password-1", "editor"),
    ("VIEWER", "viewer", "viewer-password-1", "viewer"),
];

fn repo_root() -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    root.canonicalize().unwrap_or(root)
}

fn under_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true")
}

/// Like `require_program`, for things that are not programs on PATH.
fn require_path(path: PathBuf, what: &str, install: &str) -> Option<PathBuf> {
    if path.exists() {
        return Some(path);
    }
    if under_ci() {
        panic!(
            "{what} is required under CI=true but {} is missing ({install})",
            path.display()
        );
    }
    eprintln!(
        "skipping: {what} is missing at {} ({install})",
        path.display()
    );
    None
}

// ---- the script and its control commands --------------------------------------------------

/// What the control commands act on.
struct Peers {
    pki: TestPki,
    origin_addr: SocketAddr,
    origin: Option<HttpsOrigin>,
    dig: PathBuf,
    dns: SocketAddr,
}

impl Peers {
    /// One `@@` command → its JSON reply.
    fn handle(&mut self, command: &str) -> serde_json::Value {
        let words: Vec<&str> = command.split_whitespace().collect();
        let result = match words.as_slice() {
            ["stop-origin"] => match self.origin.take() {
                Some(origin) => {
                    origin.stop();
                    Ok(None)
                }
                None => Err("the origin is not running".to_string()),
            },
            ["start-origin"] => {
                if self.origin.is_some() {
                    Err("the origin is already running".to_string())
                } else {
                    self.origin = Some(HttpsOrigin::start(&self.pki, self.origin_addr));
                    Ok(None)
                }
            }
            ["dig", name, rtype] => self.dig(name, rtype, None).map(Some),
            ["dig-subnet", name, rtype, subnet] => self.dig(name, rtype, Some(subnet)).map(Some),
            _ => Err(format!("unknown command: {command}")),
        };
        match result {
            Ok(None) => json!({"ok": true}),
            Ok(Some(answers)) => json!({"ok": true, "answers": answers}),
            Err(error) => json!({"ok": false, "error": error}),
        }
    }

    fn dig(&self, name: &str, rtype: &str, subnet: Option<&str>) -> Result<Vec<String>, String> {
        // Plain words only: the script must not be able to pass dig options or servers.
        for word in [name, rtype].into_iter().chain(subnet) {
            if word.starts_with(['+', '-', '@']) {
                return Err(format!("not a name, type or subnet: {word}"));
            }
        }
        let mut dig = Command::new(&self.dig);
        dig.arg(format!("@{}", self.dns.ip()))
            .args(["-p", &self.dns.port().to_string(), "+short", "+time=3"])
            .args(["+tries=1", name, rtype]);
        if let Some(subnet) = subnet {
            dig.arg(format!("+subnet={subnet}"));
        }
        let output = dig.output().map_err(|e| format!("dig: {e}"))?;
        let stdout = String::from_utf8_lossy(&output.stdout);
        if !output.status.success() {
            let stderr = String::from_utf8_lossy(&output.stderr);
            return Err(format!(
                "dig exited with {}: {} {}",
                output.status,
                stdout.trim(),
                stderr.trim()
            ));
        }
        Ok(stdout
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty() && !l.starts_with(';'))
            .map(String::from)
            .collect())
    }
}

/// The node process; stopped (SIGTERM, then SIGKILL) if the test ends while it still runs.
struct Script(Child);

impl Script {
    fn stop(&mut self) {
        if !matches!(self.0.try_wait(), Ok(None)) {
            return;
        }
        // SIGTERM first: playwright closes the browser it started on it.
        let pid = self.0.id().to_string();
        let _ = Command::new("kill").args(["-TERM", &pid]).status();
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            if !matches!(self.0.try_wait(), Ok(None)) {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

impl Drop for Script {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Forwards `reader`'s lines to `lines` (lossy: a stray byte must not end the protocol).
fn read_lines(reader: impl Read + Send + 'static, lines: mpsc::Sender<String>) -> JoinHandle<()> {
    std::thread::spawn(move || {
        let mut reader = BufReader::new(reader);
        let mut line = Vec::new();
        loop {
            line.clear();
            match reader.read_until(b'\n', &mut line) {
                Ok(0) | Err(_) => break,
                Ok(_) => {
                    let text = String::from_utf8_lossy(&line);
                    if lines.send(text.trim_end().to_string()).is_err() {
                        break;
                    }
                }
            }
        }
    })
}

fn reply(stdin: &mut ChildStdin, value: &serde_json::Value) {
    // A script that already exited cannot read the reply; its exit status tells why.
    let _ = writeln!(stdin, "{value}").and_then(|()| stdin.flush());
}

#[test]
fn dashboard_end_to_end_in_chromium() {
    let root = repo_root();
    let Some(node) = require_program("node") else {
        return;
    };
    let chromium = Path::new("/usr/bin/chromium");
    let Some(chromium) = (if chromium.is_file() {
        Some(chromium.to_path_buf())
    } else {
        require_program("chromium")
    }) else {
        return;
    };
    let Some(_) = require_path(
        root.join("dashboard/tests/node_modules/playwright-core"),
        "playwright-core",
        "npm ci --prefix dashboard/tests; scripts/test runs it",
    ) else {
        return;
    };
    let Some(dig) = require_program("dig") else {
        return;
    };
    let Some(mmdb) = files::dbip_country_mmdb() else {
        return;
    };

    let pki = TestPki::new(ORIGIN_HOST);
    let dir = tempfile::tempdir().unwrap();
    let ca = dir.path().join("ca.pem");
    std::fs::write(&ca, &pki.ca_pem).unwrap();
    let origin_addr: SocketAddr = format!("127.0.0.1:{}", free_port()).parse().unwrap();
    let origin = HttpsOrigin::start(&pki, origin_addr);

    let files = files::FileServer::start();
    files.put("/dbip-country.mmdb", 200, mmdb);

    let server = DnzServer::start(&["--check-ca", ca.to_str().unwrap()]);
    for (_, name, password, role) in USERS {
        let body = json!({"name": name, "password": password, "role": role}).to_string();
        server.api_ok("POST", "/api/v1/users", Some(&body));
    }

    // Relative DNZ_SCREENSHOTS (docs/screenshots) is meant from the repo root, not crates/dnz.
    let screenshots = std::env::var_os("DNZ_SCREENSHOTS")
        .map(|dir| root.join(dir))
        .unwrap_or_else(|| files::target_dir().join("dashboard-screenshots"));

    let mut command = Command::new(node);
    command
        .arg(root.join("dashboard/tests/e2e.mjs"))
        .current_dir(&root)
        .env("DNZ_URL", format!("http://{}", server.http))
        .env("DNZ_DNS", server.dns.to_string())
        .env("DNZ_ORIGIN_PORT", origin_addr.port().to_string())
        .env("DNZ_GEOIP_URL", files.url("/dbip-country.mmdb"))
        .env("CHROMIUM", &chromium)
        .env("SCREENSHOT_DIR", &screenshots)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (role, name, password, _) in USERS {
        command
            .env(format!("DNZ_{role}_USER"), name)
            .env(format!("DNZ_{role}_PASSWORD"), password);
    }
    let mut script = Script(command.spawn().expect("start node"));
    let mut stdin = script.0.stdin.take().unwrap();
    let (out_tx, out_rx) = mpsc::channel();
    let stdout = read_lines(script.0.stdout.take().unwrap(), out_tx);
    let (err_tx, err_rx) = mpsc::channel::<String>();
    let stderr = read_lines(script.0.stderr.take().unwrap(), err_tx);
    let echo_stderr = std::thread::spawn(move || {
        for line in err_rx {
            eprintln!("e2e: {line}");
        }
    });

    let mut peers = Peers {
        pki,
        origin_addr,
        origin: Some(origin),
        dig,
        dns: server.dns,
    };
    let deadline = Instant::now() + SCRIPT_LIMIT;
    let mut last_line = String::new();
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match out_rx.recv_timeout(left) {
            Ok(line) => match line.strip_prefix("@@ ") {
                Some(command) => {
                    let answer = peers.handle(command);
                    eprintln!("e2e: @@ {command} -> {answer}");
                    reply(&mut stdin, &answer);
                }
                None => {
                    eprintln!("e2e: {line}");
                    if !line.trim().is_empty() {
                        last_line = line;
                    }
                }
            },
            // stdout closed: the script is exiting.
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
            Err(mpsc::RecvTimeoutError::Timeout) => {
                script.stop();
                panic!("e2e.mjs did not finish within {SCRIPT_LIMIT:?}; stopped it");
            }
        }
    }
    drop(stdin);
    let status = loop {
        if let Some(status) = script.0.try_wait().expect("wait for node") {
            break status;
        }
        if Instant::now() > deadline {
            script.stop();
            panic!("e2e.mjs did not exit within {SCRIPT_LIMIT:?}; stopped it");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let _ = stdout.join();
    let _ = stderr.join();
    let _ = echo_stderr.join();

    assert!(
        status.success(),
        "e2e.mjs failed ({status}); screenshots in {}",
        screenshots.display()
    );
    let steps: usize = last_line
        .strip_prefix("e2e: ")
        .and_then(|rest| rest.strip_suffix(" steps passed"))
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("e2e.mjs ended without `e2e: N steps passed`: {last_line:?}"));
    assert!(steps >= 1, "{last_line}");
    drop(files);
}
