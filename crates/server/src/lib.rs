//! `dnz serve`: the DNS listeners, the HTTP API, and the control plane that keeps the answer
//! snapshot in step with the store.
//!
//! Data plane: UDP workers (threads) and TCP tasks read `Arc<ArcSwap<Snapshot>>`.
//! Control plane: API → [`manage::Manager`] → store → compile → swap.

pub mod auth;
pub mod config;
pub mod dashboard;
pub mod demo;
pub mod dns;
pub mod explain;
pub mod geoip;
pub mod health;
mod heap;
pub mod http;
pub mod images;
pub mod lb;
pub mod manage;
pub mod metrics;
mod mmsg;
pub mod topology;
pub mod xdp;

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use anyhow::Context;
use arc_swap::ArcSwap;
use model::Snapshot;

pub use config::{ServeArgs, ServeConfig};

/// Where a running server listens (ports resolved when 0 was asked for).
#[derive(Clone, Debug)]
pub struct Bound {
    pub dns: Vec<SocketAddr>,
    pub http: SocketAddr,
}

/// Runs the server until SIGTERM or SIGINT; `on_bound` hears the bound addresses first.
pub async fn run(config: ServeConfig, on_bound: impl FnOnce(&Bound)) -> anyhow::Result<()> {
    heap::map_large_blocks();
    std::fs::create_dir_all(&config.data_dir)
        .with_context(|| format!("creating data dir {}", config.data_dir.display()))?;
    let store = store::Store::open_url(&config.database)
        .await
        .with_context(|| format!("opening {}", config.database))?;
    auth::bootstrap(&store, &config.data_dir).await?;
    let metrics = Arc::new(metrics::Metrics::new());
    let snapshot = Arc::new(ArcSwap::from_pointee(Snapshot::empty()));
    let images = match images::Images::open(config.data_dir.join("images")) {
        Ok(images) => Some(Arc::new(images)),
        Err(e) => {
            tracing::warn!(error = %e, "zone images are off: every start compiles the zones");
            None
        }
    };
    let manager = Arc::new(
        manage::Manager::load(store.clone(), snapshot.clone(), metrics.clone(), images).await?,
    );
    manager.set_pop(Arc::new(config.pop.clone()));
    if config.demo {
        demo::load(&manager).await?;
    }
    let image_task = manager.keep_images();
    // `<data dir>/geoip-country.mmdb` (or the demo's), and its monthly updates.
    let geoip = geoip::GeoIp::start(manager.clone(), &config.data_dir, config.demo).await;
    if config.version_bind.is_some() || config.server_id.is_some() {
        let chaos = model::snapshot::Chaos::new(
            config.version_bind.as_deref(),
            config.server_id.as_deref(),
        );
        manager.set_chaos(chaos);
    }

    let stop = Arc::new(AtomicBool::new(false));
    let shared = Arc::new(dns::DnsShared {
        snapshot: snapshot.clone(),
        metrics: metrics.clone(),
        stop: stop.clone(),
    });
    let (shutdown_tx, shutdown_rx) = tokio::sync::watch::channel(false);

    let mut bound = Bound {
        dns: Vec::new(),
        http: config.http,
    };
    let mut workers = Vec::new();
    let mut tcp_tasks = Vec::new();
    for addr in &config.dns {
        let (udp_addr, sockets, tcp) = bind_dns(*addr, config.workers).await?;
        bound.dns.push(udp_addr);
        for (idx, socket) in sockets.into_iter().enumerate() {
            let shared = shared.clone();
            workers.push(spawn_worker(format!("dns-udp-{idx}"), move || {
                dns::udp_worker(socket, shared)
            })?);
        }
        tcp_tasks.push(tokio::spawn(dns::tcp_listener(
            tcp,
            shared.clone(),
            config.tcp_idle_timeout,
            config.tcp_max_connections,
            shutdown_rx.clone(),
        )));
    }

    // XDP: after every listener is bound, so the program matches the ports they got.
    let mut attached = Vec::new();
    for interface in &config.xdp {
        let program = xdp::attach(interface, &bound.dns)?;
        for queue in 0..program.queues {
            let socket = xdp::XskSocket::open(program.ifindex, queue)
                .and_then(|socket| program.register(queue, &socket).map(|()| socket))
                .with_context(|| format!("--xdp {interface}: AF_XDP socket for queue {queue}"))?;
            let shared = shared.clone();
            workers.push(spawn_worker(format!("dns-xdp-{queue}"), move || {
                xdp::xdp_worker(socket, shared)
            })?);
        }
        tracing::info!(interface = %interface, queues = program.queues, "answering UDP over XDP");
        attached.push(program);
    }

    // Health checks: extra trusted CAs for private PKI, then one task per distinct target.
    let mut extra_ca = Vec::new();
    for path in &config.check_ca {
        extra_ca.push(
            std::fs::read_to_string(path)
                .with_context(|| format!("reading --check-ca {}", path.display()))?,
        );
    }
    let prober = ::health::probe::Prober::new(&extra_ca)
        .map_err(|e| anyhow::anyhow!("health checks: {e}"))?;
    let runner = health::HealthRunner::new(
        manager.clone(),
        prober.clone(),
        metrics.clone(),
        config.check_concurrency,
    );
    let health_task = runner.start().await?;

    let state = http::AppState {
        manager: manager.clone(),
        metrics: metrics.clone(),
        limiter: Arc::new(auth::LoginLimiter::new()),
        geoip: geoip.clone(),
        prober: prober.clone(),
    };
    let listener = tokio::net::TcpListener::bind(config.http)
        .await
        .with_context(|| format!("binding HTTP {}", config.http))?;
    bound.http = listener.local_addr()?;
    // Handlers first, then the "listening" line: a SIGTERM sent as soon as that line is read
    // must find them installed, or it kills the process without a clean stop.
    let signals = Signals::install();
    tracing::info!(dns = ?bound.dns, http = %bound.http, workers = config.workers, "dnz serving");
    on_bound(&bound);

    let mut http_shutdown = shutdown_rx.clone();
    let http_server = axum::serve(
        listener,
        http::router(state).into_make_service_with_connect_info::<SocketAddr>(),
    )
    .with_graceful_shutdown(async move {
        let _ = http_shutdown.changed().await;
    });
    let http_task = tokio::spawn(async move { http_server.await });

    signals.wait().await;
    tracing::info!("shutting down: finishing in-flight queries and writes");
    let _ = shutdown_tx.send(true);
    stop.store(true, Ordering::Relaxed);
    for task in tcp_tasks {
        let _ = task.await;
    }
    match http_task.await {
        Ok(Err(e)) => tracing::warn!(error = %e, "HTTP server ended with an error"),
        Err(e) => tracing::warn!(error = %e, "HTTP task failed"),
        Ok(Ok(())) => {}
    }
    for worker in workers {
        let _ = worker.join();
    }
    drop(attached);
    health_task.abort();
    // The last changes' images, so the next start need not compile them.
    manager.save_images().await;
    image_task.abort();
    store.close().await;
    tracing::info!("stopped");
    Ok(())
}

/// Starts a DNS worker thread named `name`.
fn spawn_worker(
    name: String,
    work: impl FnOnce() + Send + 'static,
) -> anyhow::Result<std::thread::JoinHandle<()>> {
    std::thread::Builder::new()
        .name(name.clone())
        .spawn(work)
        .with_context(|| format!("starting DNS worker {name}"))
}

/// Binds UDP (one socket per worker) and TCP on the same address. With port 0 the UDP socket
/// picks the port and TCP may find it taken by someone else: then both are tried again.
async fn bind_dns(
    addr: SocketAddr,
    workers: usize,
) -> anyhow::Result<(
    SocketAddr,
    Vec<std::net::UdpSocket>,
    tokio::net::TcpListener,
)> {
    let attempts = if addr.port() == 0 { 20 } else { 1 };
    let mut last_error = None;
    for _ in 0..attempts {
        let (udp_addr, sockets) =
            dns::bind_udp(addr, workers).with_context(|| format!("binding DNS UDP {addr}"))?;
        match dns::bind_tcp(udp_addr) {
            Ok(tcp) => return Ok((udp_addr, sockets, tcp)),
            Err(e) => {
                last_error =
                    Some(anyhow::Error::new(e).context(format!("binding DNS TCP {udp_addr}")))
            }
        }
    }
    Err(last_error.unwrap_or_else(|| anyhow::anyhow!("binding DNS {addr}")))
}

/// SIGTERM and SIGINT, listened for from the moment they are installed.
struct Signals {
    streams: Option<(tokio::signal::unix::Signal, tokio::signal::unix::Signal)>,
}

impl Signals {
    fn install() -> Signals {
        use tokio::signal::unix::{SignalKind, signal};
        let streams = match (
            signal(SignalKind::terminate()),
            signal(SignalKind::interrupt()),
        ) {
            (Ok(term), Ok(int)) => Some((term, int)),
            _ => None,
        };
        Signals { streams }
    }

    async fn wait(self) {
        let Some((mut term, mut int)) = self.streams else {
            let _ = tokio::signal::ctrl_c().await;
            return;
        };
        tokio::select! {
            _ = term.recv() => {}
            _ = int.recv() => {}
        }
    }
}
