//! A test PKI (a CA and leaf certificates made by rcgen) and a small HTTPS origin on loopback
//! that health checks can probe, stop and start again on the same port.

use std::net::SocketAddr;
use std::sync::Arc;

use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DnType, ExtendedKeyUsagePurpose, IsCa,
    KeyPair,
};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// A CA and the certificate it signed for one host.
pub struct TestPki {
    pub ca_pem: String,
    cert: CertificateDer<'static>,
    key: Vec<u8>,
}

impl TestPki {
    pub fn new(host: &str) -> TestPki {
        let mut ca_params = CertificateParams::new(Vec::<String>::new()).expect("CA params");
        ca_params
            .distinguished_name
            .push(DnType::CommonName, "dnz test CA");
        ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        let ca = CertifiedIssuer::self_signed(ca_params, KeyPair::generate().expect("CA key"))
            .expect("CA");
        let mut params = CertificateParams::new(vec![host.to_string()]).expect("leaf params");
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        let key = KeyPair::generate().expect("leaf key");
        let cert = params.signed_by(&key, &ca).expect("leaf");
        TestPki {
            ca_pem: ca.pem(),
            cert: cert.der().clone(),
            key: key.serialize_der(),
        }
    }
}

/// An HTTPS server answering `200 ok` to every request, on its own thread and runtime.
pub struct HttpsOrigin {
    pub addr: SocketAddr,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl HttpsOrigin {
    /// Serves on `addr` (port 0 for any free port).
    pub fn start(pki: &TestPki, addr: SocketAddr) -> HttpsOrigin {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let config = rustls::ServerConfig::builder()
            .with_no_client_auth()
            .with_single_cert(
                vec![pki.cert.clone()],
                PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(pki.key.clone())),
            )
            .expect("server TLS config");
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
        let listener = std::net::TcpListener::bind(addr).expect("bind HTTPS origin");
        listener.set_nonblocking(true).expect("nonblocking");
        let addr = listener.local_addr().expect("local addr");
        let (stop, mut stopped) = tokio::sync::oneshot::channel::<()>();
        let thread = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("runtime");
            runtime.block_on(async move {
                let listener = tokio::net::TcpListener::from_std(listener).expect("listener");
                loop {
                    tokio::select! {
                        _ = &mut stopped => break,
                        accepted = listener.accept() => {
                            let Ok((stream, _)) = accepted else { continue };
                            let acceptor = acceptor.clone();
                            tokio::spawn(async move {
                                let Ok(mut tls) = acceptor.accept(stream).await else { return };
                                let mut buf = vec![0u8; 8192];
                                let mut seen = Vec::new();
                                // Read the request head, then answer and close.
                                while !seen.windows(4).any(|w| w == b"\r\n\r\n") {
                                    match tls.read(&mut buf).await {
                                        Ok(0) | Err(_) => return,
                                        Ok(n) => seen.extend_from_slice(&buf[..n]),
                                    }
                                }
                                let _ = tls
                                    .write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\nconnection: close\r\n\r\nok")
                                    .await;
                                let _ = tls.shutdown().await;
                            });
                        }
                    }
                }
            });
        });
        HttpsOrigin {
            addr,
            stop: Some(stop),
            thread: Some(thread),
        }
    }

    /// Stops serving and frees the port.
    pub fn stop(mut self) {
        self.shutdown();
    }

    fn shutdown(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl Drop for HttpsOrigin {
    fn drop(&mut self) {
        self.shutdown();
    }
}
