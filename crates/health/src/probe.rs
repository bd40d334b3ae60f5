//! One probe of one target: `https`, `http`, `tcp`, `udp` or `icmp` (SPEC §5).
//!
//! Every probe returns an [`Outcome`]; failures never panic and carry a short reason in the
//! fixed wording the dashboard and logs show (`timeout after 3000 ms`, `status 503`,
//! `connection refused`, `TLS: certificate not valid for www.example.com`, ...).

use std::collections::HashMap;
use std::future::Future;
use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::pin::pin;
use std::sync::atomic::{AtomicU16, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Empty};
use hyper::header::{CONNECTION, HOST, HeaderValue, USER_AGENT};
use hyper::{Method, Request};
use hyper_util::rt::TokioIo;
use model::steering::{CheckConfig, CheckKind};
use regex::bytes::Regex;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};
use rustls::{CertificateError, ClientConfig, RootCertStore};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpStream, UdpSocket};
use tokio::time::timeout_at;
use tokio_rustls::TlsConnector;

/// The most of a body or reply that is read and matched.
pub const MAX_BODY: usize = 64 * 1024;

/// Sessions kept for TLS resumption (one per server name).
const TLS_SESSIONS: usize = 16 * 1024;

/// Compiled regexes kept; the cache is emptied when it grows past this (patterns are few).
const MAX_CACHED_REGEXES: usize = 1024;

/// The ICMP echo payload.
const ICMP_PAYLOAD: &[u8] = b"dnz health check";

const USER_AGENT_VALUE: &str = concat!("dnz/", env!("CARGO_PKG_VERSION"));

/// What to check.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Target {
    /// Where to connect (never a DNS lookup of `host`).
    pub address: IpAddr,
    /// Host header and TLS name (SNI); the lead computes it with `CheckConfig::effective_host`.
    pub host: String,
    pub config: CheckConfig,
}

/// The verdict of one probe.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Outcome {
    pub healthy: bool,
    /// The HTTP status, when a response came back (also when it was judged unhealthy).
    pub status: Option<u16>,
    /// From the start of the probe to its verdict (the echo round trip for `icmp`).
    pub latency: Duration,
    /// Why the probe failed; `None` when healthy.
    pub reason: Option<String>,
}

/// Errors building a [`Prober`].
#[derive(Debug, thiserror::Error)]
pub enum ProbeError {
    #[error("extra CA certificate {index}: {message}")]
    BadCa { index: usize, message: String },
    #[error("TLS setup: {0}")]
    Tls(#[from] rustls::Error),
}

/// Runs probes; cheap to clone (an `Arc` inside) and shared by all checks.
///
/// ICMP sockets are opened on first use, inside the tokio runtime of that first `icmp`
/// probe (their receive task runs there): use one `Prober` within one runtime.
#[derive(Clone)]
pub struct Prober {
    inner: Arc<Inner>,
}

struct Inner {
    tls: TlsConnector,
    regexes: Mutex<HashMap<String, Regex>>,
    /// surge-ping clients for IPv4 and IPv6, opened on first use.
    icmp: Mutex<[Option<surge_ping::Client>; 2]>,
    /// ICMP sequence numbers (and identifiers, on raw sockets): concurrent pings never collide.
    icmp_seq: AtomicU16,
}

impl std::fmt::Debug for Prober {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Prober").finish_non_exhaustive()
    }
}

/// A failed probe: the reason and, for HTTP, the status that came back.
struct Failure {
    reason: String,
    status: Option<u16>,
}

impl Failure {
    fn new(reason: impl Into<String>) -> Failure {
        Failure {
            reason: reason.into(),
            status: None,
        }
    }
}

impl Prober {
    /// `extra_ca_pem`: extra trusted CA certificates (PEM text, each entry may hold several)
    /// on top of webpki-roots, for private PKI and tests.
    pub fn new(extra_ca_pem: &[String]) -> Result<Prober, ProbeError> {
        let mut roots = RootCertStore {
            roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
        };
        for (index, pem) in extra_ca_pem.iter().enumerate() {
            let bad = |message: String| ProbeError::BadCa { index, message };
            let mut found = 0;
            for cert in CertificateDer::pem_slice_iter(pem.as_bytes()) {
                let cert = cert.map_err(|e| bad(format!("not valid PEM: {e}")))?;
                roots
                    .add(cert)
                    .map_err(|e| bad(format!("not a usable CA certificate: {e}")))?;
                found += 1;
            }
            if found == 0 {
                return Err(bad("no CERTIFICATE block in the PEM text".into()));
            }
        }
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut config = ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()?
            .with_root_certificates(roots)
            .with_no_client_auth();
        config.resumption = rustls::client::Resumption::in_memory_sessions(TLS_SESSIONS);
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        Ok(Prober {
            inner: Arc::new(Inner {
                tls: TlsConnector::from(Arc::new(config)),
                regexes: Mutex::new(HashMap::new()),
                icmp: Mutex::new([None, None]),
                icmp_seq: AtomicU16::new(0),
            }),
        })
    }

    /// Runs one check of `target`. Never panics; a failure is an unhealthy [`Outcome`].
    pub async fn probe(&self, target: &Target) -> Outcome {
        let start = Instant::now();
        let config = &target.config;
        let limit = Duration::from_millis(u64::from(config.timeout_ms));
        let deadline = tokio::time::Instant::now() + limit;
        let timed_out = || Failure::new(format!("timeout after {} ms", config.timeout_ms));
        let result: Result<(Option<u16>, Option<Duration>), Failure> = match config.kind {
            CheckKind::Https | CheckKind::Http => {
                match timeout_at(deadline, self.http(target)).await {
                    Ok(Ok(status)) => Ok((Some(status), None)),
                    Ok(Err(failure)) => Err(failure),
                    Err(_) => Err(timed_out()),
                }
            }
            CheckKind::Tcp => self.tcp(target, deadline).await.map(|()| (None, None)),
            CheckKind::Udp => self.udp(target, deadline).await.map(|()| (None, None)),
            CheckKind::Icmp => self
                .icmp(target.address, limit)
                .await
                .map(|rtt| (None, Some(rtt))),
        };
        match result {
            Ok((status, rtt)) => Outcome {
                healthy: true,
                status,
                latency: rtt.unwrap_or_else(|| start.elapsed()),
                reason: None,
            },
            Err(failure) => Outcome {
                healthy: false,
                status: failure.status,
                latency: start.elapsed(),
                reason: Some(failure.reason),
            },
        }
    }

    /// The compiled regex for `pattern`, from the cache.
    fn regex(&self, pattern: &str) -> Result<Regex, Failure> {
        let mut cache = self
            .inner
            .regexes
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some(regex) = cache.get(pattern) {
            return Ok(regex.clone());
        }
        let regex = Regex::new(pattern)
            .map_err(|e| Failure::new(format!("invalid regex {pattern}: {e}")))?;
        if cache.len() >= MAX_CACHED_REGEXES {
            cache.clear();
        }
        cache.insert(pattern.to_string(), regex.clone());
        Ok(regex)
    }

    /// `https` and `http`: one request over our own connection to the target's address.
    /// Returns the status when healthy. The caller bounds it with the timeout.
    async fn http(&self, target: &Target) -> Result<u16, Failure> {
        let config = &target.config;
        let body_regex = config.body.as_deref().map(|p| self.regex(p)).transpose()?;
        let tcp = TcpStream::connect(SocketAddr::new(target.address, config.port))
            .await
            .map_err(|e| io_failure(&e, &target.host))?;
        let _ = tcp.set_nodelay(true);
        if config.kind == CheckKind::Https {
            let name = ServerName::try_from(target.host.clone())
                .map_err(|_| Failure::new(format!("TLS: {:?} is not a valid name", target.host)))?;
            let tls = self
                .inner
                .tls
                .connect(name, tcp)
                .await
                .map_err(|e| io_failure(&e, &target.host))?;
            exchange(tls, target, body_regex.as_ref()).await
        } else {
            exchange(tcp, target, body_regex.as_ref()).await
        }
    }

    /// `tcp`: a connection opens; with a payload (or a body regex, for banners) a reply is
    /// read and matched.
    async fn tcp(&self, target: &Target, deadline: tokio::time::Instant) -> Result<(), Failure> {
        let config = &target.config;
        let timed_out = || Failure::new(format!("timeout after {} ms", config.timeout_ms));
        let regex = config.body.as_deref().map(|p| self.regex(p)).transpose()?;
        let addr = SocketAddr::new(target.address, config.port);
        let mut stream = match timeout_at(deadline, TcpStream::connect(addr)).await {
            Ok(Ok(stream)) => stream,
            Ok(Err(e)) => return Err(io_failure(&e, &target.host)),
            Err(_) => return Err(timed_out()),
        };
        if config.payload.is_none() && regex.is_none() {
            return Ok(());
        }
        if let Some(payload) = &config.payload {
            match timeout_at(deadline, stream.write_all(payload.as_bytes())).await {
                Ok(Ok(())) => {}
                Ok(Err(e)) => return Err(io_failure(&e, &target.host)),
                Err(_) => return Err(timed_out()),
            }
        }
        // Read until the regex matches (or, without one, until the first bytes), the peer
        // closes, 64 KiB, or the deadline.
        let mut reply = Vec::new();
        let mut chunk = vec![0u8; 16 * 1024];
        loop {
            let wanted = (MAX_BODY - reply.len()).min(chunk.len());
            match timeout_at(deadline, stream.read(&mut chunk[..wanted])).await {
                Ok(Ok(0)) | Err(_) => break,
                Ok(Ok(n)) => {
                    reply.extend_from_slice(&chunk[..n]);
                    match &regex {
                        None => return Ok(()),
                        Some(regex) if regex.is_match(&reply) => return Ok(()),
                        Some(_) if reply.len() >= MAX_BODY => break,
                        Some(_) => {}
                    }
                }
                Ok(Err(e)) if reply.is_empty() => return Err(io_failure(&e, &target.host)),
                Ok(Err(_)) => break,
            }
        }
        match &regex {
            _ if reply.is_empty() => Err(Failure::new("no reply")),
            Some(regex) if !regex.is_match(&reply) => Err(reply_mismatch(regex)),
            _ => Ok(()),
        }
    }

    /// `udp`: the payload goes out from a fresh socket; a (matching) reply must come back.
    async fn udp(&self, target: &Target, deadline: tokio::time::Instant) -> Result<(), Failure> {
        let config = &target.config;
        let regex = config.body.as_deref().map(|p| self.regex(p)).transpose()?;
        let Some(payload) = &config.payload else {
            return Err(Failure::new("a udp check needs a payload to send"));
        };
        let local: SocketAddr = match target.address {
            IpAddr::V4(_) => (Ipv4Addr::UNSPECIFIED, 0).into(),
            IpAddr::V6(_) => (Ipv6Addr::UNSPECIFIED, 0).into(),
        };
        let io_err = |e: io::Error| io_failure(&e, &target.host);
        let socket = UdpSocket::bind(local).await.map_err(io_err)?;
        // Connected: only the target's datagrams are received, and an ICMP port
        // unreachable comes back as "connection refused".
        socket
            .connect(SocketAddr::new(target.address, config.port))
            .await
            .map_err(io_err)?;
        socket.send(payload.as_bytes()).await.map_err(io_err)?;
        let mut buf = vec![0u8; MAX_BODY];
        let n = match timeout_at(deadline, socket.recv(&mut buf)).await {
            Ok(Ok(n)) => n,
            Ok(Err(e)) => return Err(io_err(e)),
            Err(_) => return Err(Failure::new("no reply")),
        };
        match regex {
            Some(regex) if !regex.is_match(&buf[..n]) => Err(reply_mismatch(&regex)),
            _ => Ok(()),
        }
    }

    /// `icmp`: an echo reply must come back. One lost echo is retried: a second echo goes
    /// out at half the timeout, and either reply counts. Returns the round trip.
    async fn icmp(&self, address: IpAddr, limit: Duration) -> Result<Duration, Failure> {
        let client = self.icmp_client(address)?;
        let seq = self.inner.icmp_seq.fetch_add(2, Ordering::Relaxed);
        let ping = |seq: u16, wait: Duration| {
            let client = client.clone();
            async move {
                let mut pinger = client
                    .pinger(address, surge_ping::PingIdentifier(seq))
                    .await;
                pinger.timeout(wait);
                pinger
                    .ping(surge_ping::PingSequence(seq), ICMP_PAYLOAD)
                    .await
            }
        };
        let first = pin!(ping(seq, limit));
        let second = pin!(async {
            tokio::time::sleep(limit / 2).await;
            ping(seq.wrapping_add(1), limit - limit / 2).await
        });
        let result = match race(first, second).await {
            Raced::First(Ok(reply), _) | Raced::Second(Ok(reply), _) => Ok(reply),
            // Only a lost echo is worth the second one; a send error is final.
            Raced::First(Err(surge_ping::SurgeError::Timeout { .. }), second) => second.await,
            Raced::First(Err(e), _) => Err(e),
            Raced::Second(Err(_), first) => first.await,
        };
        match result {
            Ok((_packet, rtt)) => Ok(rtt),
            Err(surge_ping::SurgeError::Timeout { .. }) => Err(Failure::new("no reply")),
            Err(surge_ping::SurgeError::IOError(e)) => Err(Failure::new(format!(
                "ICMP: {}",
                first_line(&e.to_string())
            ))),
            Err(e) => Err(Failure::new(format!("ICMP: {e}"))),
        }
    }

    /// The shared ICMP client for the address family, opened on first use.
    fn icmp_client(&self, address: IpAddr) -> Result<surge_ping::Client, Failure> {
        let (slot, kind) = match address {
            IpAddr::V4(_) => (0, surge_ping::ICMP::V4),
            IpAddr::V6(_) => (1, surge_ping::ICMP::V6),
        };
        let mut clients = self
            .inner
            .icmp
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some(client) = &clients[slot] {
            return Ok(client.clone());
        }
        // Datagram ICMP sockets first (net.ipv4.ping_group_range), raw ones otherwise.
        let config = surge_ping::Config::builder().kind(kind).build();
        let client = surge_ping::Client::new(&config).map_err(|e| {
            Failure::new(if e.kind() == io::ErrorKind::PermissionDenied {
                "ICMP: cannot open an ICMP socket: permission denied (needs CAP_NET_RAW or \
                 net.ipv4.ping_group_range)"
                    .to_string()
            } else {
                format!(
                    "ICMP: cannot open an ICMP socket: {}",
                    first_line(&e.to_string())
                )
            })
        })?;
        clients[slot] = Some(client.clone());
        Ok(client)
    }
}

/// Sends the one request over `io` and judges the response.
async fn exchange<S>(io: S, target: &Target, body_regex: Option<&Regex>) -> Result<u16, Failure>
where
    S: AsyncRead + AsyncWrite + Send + Unpin + 'static,
{
    let config = &target.config;
    let other = |e: hyper::Error| Failure::new(hyper_reason(&e, &target.host));
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(io))
        .await
        .map_err(other)?;
    let request = build_request(target)?;
    let work = async {
        let response = sender.send_request(request).await.map_err(other)?;
        let status = response.status().as_u16();
        if !config.status.contains(status) {
            return Err(Failure {
                reason: format!("status {status}"),
                status: Some(status),
            });
        }
        if let Some(regex) = body_regex.filter(|_| !config.head) {
            let mut body = response.into_body();
            let mut text = Vec::new();
            while text.len() < MAX_BODY {
                match body.frame().await {
                    None => break,
                    Some(Ok(frame)) => {
                        if let Some(data) = frame.data_ref() {
                            let room = MAX_BODY - text.len();
                            text.extend_from_slice(&data[..data.len().min(room)]);
                        }
                    }
                    Some(Err(e)) => {
                        return Err(Failure {
                            reason: hyper_reason(&e, &target.host),
                            status: Some(status),
                        });
                    }
                }
            }
            if !regex.is_match(&text) {
                return Err(Failure {
                    reason: format!("body does not match {}", regex.as_str()),
                    status: Some(status),
                });
            }
        }
        Ok(status)
    };
    // Drive the connection alongside the request; no task is spawned, so a timeout drops
    // the whole exchange.
    match race(pin!(work), pin!(conn)).await {
        Raced::First(verdict, _) => verdict,
        // The connection ended first (closed, or failed): the request side has the verdict.
        Raced::Second(_, work) => work.await,
    }
}

fn build_request(target: &Target) -> Result<Request<Empty<Bytes>>, Failure> {
    let config = &target.config;
    let default_port = if config.kind == CheckKind::Https {
        443
    } else {
        80
    };
    let host = if target.host.parse::<Ipv6Addr>().is_ok() {
        format!("[{}]", target.host)
    } else {
        target.host.clone()
    };
    let host = if config.port == default_port {
        host
    } else {
        format!("{host}:{}", config.port)
    };
    let host = HeaderValue::try_from(host)
        .map_err(|_| Failure::new(format!("{:?} is not a valid Host header", target.host)))?;
    Request::builder()
        .method(if config.head {
            Method::HEAD
        } else {
            Method::GET
        })
        .uri(config.path.as_str())
        .header(HOST, host)
        .header(USER_AGENT, HeaderValue::from_static(USER_AGENT_VALUE))
        .header(CONNECTION, HeaderValue::from_static("close"))
        .body(Empty::new())
        .map_err(|e| Failure::new(format!("bad request {}: {e}", config.path)))
}

/// Runs two futures until the first finishes.
async fn race<A, B>(mut a: A, mut b: B) -> Raced<A, B>
where
    A: Future + Unpin,
    B: Future + Unpin,
{
    tokio::select! {
        biased;
        out = &mut a => Raced::First(out, b),
        out = &mut b => Raced::Second(out, a),
    }
}

/// The output of the future that finished first, and the other one, still pending.
enum Raced<A: Future, B: Future> {
    First(A::Output, B),
    Second(B::Output, A),
}

fn reply_mismatch(regex: &Regex) -> Failure {
    Failure::new(format!("reply does not match {}", regex.as_str()))
}

fn first_line(text: &str) -> &str {
    text.lines()
        .next()
        .unwrap_or(text)
        .trim_end_matches(['.', ':'])
}

/// The reason for an I/O error of a probe: refused connections and TLS errors have fixed
/// wording.
fn io_failure(error: &io::Error, host: &str) -> Failure {
    if error.kind() == io::ErrorKind::ConnectionRefused {
        return Failure::new("connection refused");
    }
    if let Some(tls) = error
        .get_ref()
        .and_then(|inner| inner.downcast_ref::<rustls::Error>())
    {
        return Failure::new(tls_reason(tls, host));
    }
    Failure::new(error.to_string())
}

fn tls_reason(error: &rustls::Error, host: &str) -> String {
    match error {
        rustls::Error::InvalidCertificate(
            CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
        ) => format!("TLS: certificate not valid for {host}"),
        rustls::Error::InvalidCertificate(
            CertificateError::Expired | CertificateError::ExpiredContext { .. },
        ) => "TLS: certificate expired".to_string(),
        other => format!("TLS: {other}"),
    }
}

/// The reason for a hyper error: an I/O error inside it is judged like one of ours.
fn hyper_reason(error: &hyper::Error, host: &str) -> String {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(error);
    while let Some(e) = source {
        if let Some(io) = e.downcast_ref::<io::Error>() {
            return io_failure(io, host).reason;
        }
        source = e.source();
    }
    error.to_string()
}
