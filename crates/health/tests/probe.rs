//! Probes against real servers on loopback: HTTPS and HTTP (hyper + tokio-rustls, with a test
//! CA made by rcgen), TCP, UDP and ICMP.

use std::convert::Infallible;
use std::net::{IpAddr, Ipv4Addr};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use bytes::Bytes;
use health::{Outcome, Prober, Target};
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::header::{HOST, LOCATION, USER_AGENT};
use hyper::service::service_fn;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use model::steering::{CheckConfig, CheckKind, StatusSet};
use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DnType, ExtendedKeyUsagePurpose, IsCa,
    KeyPair, date_time_ymd,
};
use rustls::ServerConfig;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, UdpSocket};
use tokio_rustls::TlsAcceptor;

const LOCALHOST: IpAddr = IpAddr::V4(Ipv4Addr::LOCALHOST);
const WWW: &str = "www.example.test";

/// A test CA and three leaf certificates signed by it.
struct Pki {
    ca_pem: String,
    ca_der: CertificateDer<'static>,
    www: (CertificateDer<'static>, Vec<u8>),
    other: (CertificateDer<'static>, Vec<u8>),
    www_expired: (CertificateDer<'static>, Vec<u8>),
}

fn pki() -> &'static Pki {
    static PKI: OnceLock<Pki> = OnceLock::new();
    PKI.get_or_init(|| {
        let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
        ca_params
            .distinguished_name
            .push(DnType::CommonName, "dnz test CA");
        ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        let ca = CertifiedIssuer::self_signed(ca_params, KeyPair::generate().unwrap()).unwrap();
        let leaf = |name: &str, expired: bool| {
            let mut params = CertificateParams::new(vec![name.to_string()]).unwrap();
            params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
            if expired {
                params.not_before = date_time_ymd(2020, 1, 1);
                params.not_after = date_time_ymd(2021, 1, 1);
            }
            let key = KeyPair::generate().unwrap();
            let cert = params.signed_by(&key, &ca).unwrap();
            (cert.der().clone(), key.serialize_der())
        };
        Pki {
            ca_pem: ca.pem(),
            ca_der: ca.der().clone(),
            www: leaf(WWW, false),
            other: leaf("other.example.test", false),
            www_expired: leaf(WWW, true),
        }
    })
}

fn prober() -> Prober {
    Prober::new(&[pki().ca_pem.clone()]).unwrap()
}

fn check(kind: CheckKind, port: u16) -> CheckConfig {
    CheckConfig {
        kind,
        port,
        host: None,
        path: "/".into(),
        head: false,
        status: StatusSet(vec![(200, 399)]),
        body: None,
        payload: None,
        interval_secs: 30,
        timeout_ms: 3000,
        down_after: 3,
        up_after: 2,
    }
}

fn target(config: CheckConfig) -> Target {
    Target {
        address: LOCALHOST,
        host: WWW.into(),
        config,
    }
}

#[track_caller]
fn assert_healthy(outcome: &Outcome) {
    assert!(outcome.healthy, "{outcome:?}");
    assert_eq!(outcome.reason, None);
}

#[track_caller]
fn assert_reason(outcome: &Outcome, reason: &str) {
    assert!(!outcome.healthy, "{outcome:?}");
    assert_eq!(outcome.reason.as_deref(), Some(reason), "{outcome:?}");
}

async fn handle(request: Request<Incoming>) -> Result<Response<Full<Bytes>>, Infallible> {
    let text = |status: StatusCode, body: String| {
        let mut response = Response::new(Full::new(Bytes::from(body)));
        *response.status_mut() = status;
        response
    };
    let header = |name| {
        request
            .headers()
            .get(name)
            .and_then(|v: &hyper::header::HeaderValue| v.to_str().ok())
            .unwrap_or("-")
            .to_string()
    };
    Ok(match request.uri().path() {
        "/ok" => text(StatusCode::OK, "healthy".into()),
        "/fail" => text(StatusCode::SERVICE_UNAVAILABLE, "sick".into()),
        "/redirect" => {
            let mut response = text(StatusCode::MOVED_PERMANENTLY, String::new());
            response
                .headers_mut()
                .insert(LOCATION, "/ok".parse().unwrap());
            response
        }
        "/slow" => {
            tokio::time::sleep(Duration::from_secs(3)).await;
            text(StatusCode::OK, "late".into())
        }
        "/echo" => text(
            StatusCode::OK,
            format!(
                "{} {} host={} ua={}",
                request.method(),
                request.uri(),
                header(HOST),
                header(USER_AGENT)
            ),
        ),
        _ => text(StatusCode::NOT_FOUND, "no such page".into()),
    })
}

/// Serves the handlers over HTTP, or over HTTPS with `cert`, on 127.0.0.1:0.
async fn serve(cert: Option<&(CertificateDer<'static>, Vec<u8>)>) -> u16 {
    let acceptor = cert.map(|(der, key)| {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.clone()));
        let config = ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(vec![der.clone(), pki().ca_der.clone()], key)
            .unwrap();
        TlsAcceptor::from(Arc::new(config))
    });
    let listener = TcpListener::bind((LOCALHOST, 0)).await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        loop {
            let Ok((tcp, _)) = listener.accept().await else {
                return;
            };
            let acceptor = acceptor.clone();
            tokio::spawn(async move {
                let http = hyper::server::conn::http1::Builder::new();
                match acceptor {
                    Some(acceptor) => {
                        if let Ok(tls) = acceptor.accept(tcp).await {
                            let _ = http
                                .serve_connection(TokioIo::new(tls), service_fn(handle))
                                .await;
                        }
                    }
                    None => {
                        let _ = http
                            .serve_connection(TokioIo::new(tcp), service_fn(handle))
                            .await;
                    }
                }
            });
        }
    });
    port
}

/// A port that was bound and closed: nothing listens there.
async fn closed_port() -> u16 {
    let listener = TcpListener::bind((LOCALHOST, 0)).await.unwrap();
    listener.local_addr().unwrap().port()
}

/// A UDP port that was bound and closed.
async fn closed_udp_port() -> u16 {
    let socket = UdpSocket::bind((LOCALHOST, 0)).await.unwrap();
    socket.local_addr().unwrap().port()
}

fn http_check(kind: CheckKind, port: u16, path: &str) -> CheckConfig {
    CheckConfig {
        path: path.into(),
        ..check(kind, port)
    }
}

#[tokio::test]
async fn https_passes_with_a_valid_certificate_and_body() {
    let port = serve(Some(&pki().www)).await;
    let prober = prober();
    let outcome = prober
        .probe(&target(CheckConfig {
            body: Some("^heal+thy$".into()),
            ..http_check(CheckKind::Https, port, "/ok")
        }))
        .await;
    assert_healthy(&outcome);
    assert_eq!(outcome.status, Some(200));
    assert!(outcome.latency < Duration::from_secs(3));

    // Again, through the same prober (TLS session resumption), and with HEAD.
    let outcome = prober
        .probe(&target(CheckConfig {
            head: true,
            ..http_check(CheckKind::Https, port, "/ok")
        }))
        .await;
    assert_healthy(&outcome);
    assert_eq!(outcome.status, Some(200));
}

#[tokio::test]
async fn https_judges_status_and_body() {
    let port = serve(Some(&pki().www)).await;
    let prober = prober();
    let probe = |path: &str, status: &str, body: Option<&str>| {
        let config = CheckConfig {
            status: StatusSet::parse(status).unwrap(),
            body: body.map(Into::into),
            ..http_check(CheckKind::Https, port, path)
        };
        let prober = prober.clone();
        async move { prober.probe(&target(config)).await }
    };
    let outcome = probe("/fail", "200-399", None).await;
    assert_reason(&outcome, "status 503");
    assert_eq!(outcome.status, Some(503));
    assert_reason(
        &probe("/ok", "200-399", Some("^sick")).await,
        "body does not match ^sick",
    );
    // Redirects are never followed: a 301 is judged by the status list.
    let outcome = probe("/redirect", "200-399", None).await;
    assert_healthy(&outcome);
    assert_eq!(outcome.status, Some(301));
    assert_reason(&probe("/redirect", "200", None).await, "status 301");
    assert_healthy(&probe("/fail", "200,5xx", None).await);
}

#[tokio::test]
async fn https_rejects_a_certificate_for_another_host() {
    let port = serve(Some(&pki().other)).await;
    let outcome = prober()
        .probe(&target(http_check(CheckKind::Https, port, "/ok")))
        .await;
    assert_reason(&outcome, "TLS: certificate not valid for www.example.test");
    assert_eq!(outcome.status, None);
}

#[tokio::test]
async fn https_rejects_an_expired_certificate() {
    let port = serve(Some(&pki().www_expired)).await;
    let outcome = prober()
        .probe(&target(http_check(CheckKind::Https, port, "/ok")))
        .await;
    assert_reason(&outcome, "TLS: certificate expired");
}

#[tokio::test]
async fn https_rejects_an_unknown_ca() {
    let port = serve(Some(&pki().www)).await;
    let outcome = Prober::new(&[])
        .unwrap()
        .probe(&target(http_check(CheckKind::Https, port, "/ok")))
        .await;
    assert!(!outcome.healthy);
    let reason = outcome.reason.unwrap();
    eprintln!("unknown CA: {reason}");
    assert!(
        reason.starts_with("TLS: ") && reason.contains("UnknownIssuer"),
        "{reason}"
    );
}

#[tokio::test]
async fn https_times_out() {
    let port = serve(Some(&pki().www)).await;
    let outcome = prober()
        .probe(&target(CheckConfig {
            timeout_ms: 300,
            ..http_check(CheckKind::Https, port, "/slow")
        }))
        .await;
    assert_reason(&outcome, "timeout after 300 ms");
    assert!(outcome.latency >= Duration::from_millis(300));
    assert!(outcome.latency < Duration::from_secs(2), "{outcome:?}");
}

#[tokio::test]
async fn https_and_http_refused() {
    let port = closed_port().await;
    for kind in [CheckKind::Https, CheckKind::Http] {
        let outcome = prober().probe(&target(http_check(kind, port, "/ok"))).await;
        assert_reason(&outcome, "connection refused");
    }
}

#[tokio::test]
async fn http_passes_and_fails() {
    let port = serve(None).await;
    let prober = prober();
    let probe = |config: CheckConfig| {
        let prober = prober.clone();
        async move { prober.probe(&target(config)).await }
    };
    let outcome = probe(CheckConfig {
        body: Some("healthy".into()),
        ..http_check(CheckKind::Http, port, "/ok")
    })
    .await;
    assert_healthy(&outcome);
    assert_eq!(outcome.status, Some(200));
    let outcome = probe(CheckConfig {
        head: true,
        body: Some("never checked for HEAD".into()),
        ..http_check(CheckKind::Http, port, "/ok")
    })
    .await;
    assert_healthy(&outcome);
    assert_reason(
        &probe(http_check(CheckKind::Http, port, "/fail")).await,
        "status 503",
    );
    assert_reason(
        &probe(CheckConfig {
            body: Some("^unhealthy$".into()),
            ..http_check(CheckKind::Http, port, "/ok")
        })
        .await,
        "body does not match ^unhealthy$",
    );
    assert_reason(
        &probe(CheckConfig {
            status: StatusSet::parse("200").unwrap(),
            ..http_check(CheckKind::Http, port, "/redirect")
        })
        .await,
        "status 301",
    );
    assert_reason(
        &probe(CheckConfig {
            timeout_ms: 300,
            ..http_check(CheckKind::Http, port, "/slow")
        })
        .await,
        "timeout after 300 ms",
    );
}

#[tokio::test]
async fn http_sends_method_path_host_and_user_agent() {
    let port = serve(None).await;
    let prober = prober();
    let user_agent = format!("dnz/{}", env!("CARGO_PKG_VERSION"));
    let expected = format!("^GET /echo\\?x=1 host=www\\.example\\.test:{port} ua={user_agent}$");
    let outcome = prober
        .probe(&target(CheckConfig {
            body: Some(expected),
            ..http_check(CheckKind::Http, port, "/echo?x=1")
        }))
        .await;
    assert_healthy(&outcome);
    // HEAD is sent as HEAD: the 404 of an unknown path proves the request reached the server.
    let outcome = prober
        .probe(&target(CheckConfig {
            head: true,
            ..http_check(CheckKind::Http, port, "/missing")
        }))
        .await;
    assert_reason(&outcome, "status 404");
}

/// A line-oriented TCP server: answers `PING` with `+PONG`, keeps the connection open.
async fn tcp_server() -> u16 {
    let listener = TcpListener::bind((LOCALHOST, 0)).await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            tokio::spawn(async move {
                let (read, mut write) = tcp.into_split();
                let mut lines = BufReader::new(read).lines();
                while let Ok(Some(line)) = lines.next_line().await {
                    let reply = if line == "PING" {
                        "+PONG\r\n"
                    } else {
                        "-ERR\r\n"
                    };
                    if write.write_all(reply.as_bytes()).await.is_err() {
                        return;
                    }
                }
            });
        }
    });
    port
}

#[tokio::test]
async fn tcp_connects_and_matches_replies() {
    let port = tcp_server().await;
    let prober = prober();
    assert_healthy(&prober.probe(&target(check(CheckKind::Tcp, port))).await);
    assert_reason(
        &prober
            .probe(&target(check(CheckKind::Tcp, closed_port().await)))
            .await,
        "connection refused",
    );
    // The reply matches: healthy at once, though the server keeps the connection open.
    let outcome = prober
        .probe(&target(CheckConfig {
            payload: Some("PING\r\n".into()),
            body: Some(r"^\+PONG".into()),
            ..check(CheckKind::Tcp, port)
        }))
        .await;
    assert_healthy(&outcome);
    assert!(outcome.latency < Duration::from_secs(2), "{outcome:?}");
    // Without a regex, any reply will do.
    assert_healthy(
        &prober
            .probe(&target(CheckConfig {
                payload: Some("PING\r\n".into()),
                ..check(CheckKind::Tcp, port)
            }))
            .await,
    );
    assert_reason(
        &prober
            .probe(&target(CheckConfig {
                payload: Some("HELLO\r\n".into()),
                body: Some(r"^\+PONG".into()),
                timeout_ms: 300,
                ..check(CheckKind::Tcp, port)
            }))
            .await,
        r"reply does not match ^\+PONG",
    );
    // The server never answers an unfinished line.
    assert_reason(
        &prober
            .probe(&target(CheckConfig {
                payload: Some("PING".into()),
                timeout_ms: 300,
                ..check(CheckKind::Tcp, port)
            }))
            .await,
        "no reply",
    );
}

#[tokio::test]
async fn udp_needs_a_matching_reply() {
    let echo = UdpSocket::bind((LOCALHOST, 0)).await.unwrap();
    let echo_port = echo.local_addr().unwrap().port();
    tokio::spawn(async move {
        let mut buf = [0u8; 1500];
        while let Ok((n, from)) = echo.recv_from(&mut buf).await {
            let _ = echo.send_to(&buf[..n], from).await;
        }
    });
    let silent = UdpSocket::bind((LOCALHOST, 0)).await.unwrap();
    let silent_port = silent.local_addr().unwrap().port();
    let prober = prober();
    let udp = |port: u16, body: Option<&str>| CheckConfig {
        payload: Some("hello dnz".into()),
        body: body.map(Into::into),
        timeout_ms: 300,
        ..check(CheckKind::Udp, port)
    };
    assert_healthy(&prober.probe(&target(udp(echo_port, None))).await);
    assert_healthy(&prober.probe(&target(udp(echo_port, Some("^hello")))).await);
    assert_reason(
        &prober.probe(&target(udp(echo_port, Some("^bye")))).await,
        "reply does not match ^bye",
    );
    // ICMP port unreachable comes back on the connected socket.
    assert_reason(
        &prober
            .probe(&target(udp(closed_udp_port().await, None)))
            .await,
        "connection refused",
    );
    let outcome = prober.probe(&target(udp(silent_port, None))).await;
    assert_reason(&outcome, "no reply");
    assert!(outcome.latency >= Duration::from_millis(300));
    drop(silent);
}

#[tokio::test]
async fn icmp_echo_to_loopback() {
    let outcome = prober()
        .probe(&Target {
            address: LOCALHOST,
            host: "127.0.0.1".into(),
            config: CheckConfig {
                timeout_ms: 1000,
                ..check(CheckKind::Icmp, 80)
            },
        })
        .await;
    eprintln!("icmp to 127.0.0.1: {outcome:?}");
    match &outcome.reason {
        // Without CAP_NET_RAW or a ping_group_range that admits us, the reason says so; as
        // root, raw ICMP sockets always open.
        Some(reason) if reason.starts_with("ICMP: cannot open an ICMP socket") && !is_root() => {
            assert!(!outcome.healthy)
        }
        _ => assert_healthy(&outcome),
    }
}

fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            let line = status.lines().find(|l| l.starts_with("Uid:"))?.to_string();
            // Real, effective, saved, filesystem: the effective one decides.
            line.split_whitespace().nth(2).map(|uid| uid == "0")
        })
        .unwrap_or(false)
}

#[test]
fn bad_extra_ca_is_an_error() {
    assert!(Prober::new(&["not pem".into()]).is_err());
    assert!(
        Prober::new(&["-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n".into()])
            .is_err()
    );
    assert!(Prober::new(&[pki().ca_pem.clone()]).is_ok());
}
