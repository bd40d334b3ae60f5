//! DNS listeners: one UDP socket per worker thread on each address (SO_REUSEPORT, so the
//! kernel spreads packets across cores), and a TCP listener per address on the async runtime.
//!
//! Workers load the current snapshot once per packet from an `ArcSwap`; they never wait for
//! management.

use std::io;
use std::net::{SocketAddr, UdpSocket};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use answer::{Client, Outcome, Transport};
use arc_swap::ArcSwap;
use model::Snapshot;
use socket2::{Domain, Protocol, Socket, Type};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;

use crate::metrics::Metrics;

/// What every listener shares.
pub struct DnsShared {
    pub snapshot: Arc<ArcSwap<Snapshot>>,
    pub metrics: Arc<Metrics>,
    pub stop: Arc<AtomicBool>,
}

/// A per-worker random source for weighted picks and rotation: cheap, unshared, and seeded
/// from the OS so workers differ.
pub(crate) struct Xorshift(u64);

impl Xorshift {
    pub(crate) fn seeded() -> Xorshift {
        Xorshift(rand::random::<u64>() | 1)
    }

    fn next(&mut self) -> u64 {
        // xorshift64* (Vigna, 2016).
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
}

/// A socket for `addr`; an IPv6 one is IPv6-only, so that `[::]:53` and `0.0.0.0:53` can
/// both be listened on (Linux makes `[::]` dual-stack by default, and its IPv4 half would take
/// the port from the other listener).
fn socket_for(addr: SocketAddr, kind: Type, protocol: Protocol) -> io::Result<Socket> {
    let socket = Socket::new(Domain::for_address(addr), kind, Some(protocol))?;
    if addr.is_ipv6() {
        socket.set_only_v6(true)?;
    }
    Ok(socket)
}

fn udp_socket(addr: SocketAddr) -> io::Result<UdpSocket> {
    let socket = socket_for(addr, Type::DGRAM, Protocol::UDP)?;
    socket.set_reuse_port(true)?;
    // A short timeout lets a worker notice shutdown between packets.
    socket.set_read_timeout(Some(Duration::from_millis(200)))?;
    let _ = socket.set_recv_buffer_size(4 << 20);
    socket.bind(&addr.into())?;
    Ok(socket.into())
}

/// The TCP listener on `addr` (IPv6-only for an IPv6 address, as the UDP sockets are).
pub fn bind_tcp(addr: SocketAddr) -> io::Result<tokio::net::TcpListener> {
    let socket = socket_for(addr, Type::STREAM, Protocol::TCP)?;
    socket.set_reuse_address(true)?;
    socket.set_nonblocking(true)?;
    socket.bind(&addr.into())?;
    socket.listen(1024)?;
    tokio::net::TcpListener::from_std(socket.into())
}

/// Binds `workers` UDP sockets on `addr` (the first decides the port when it is 0) and returns
/// the bound address and the sockets.
pub fn bind_udp(addr: SocketAddr, workers: usize) -> io::Result<(SocketAddr, Vec<UdpSocket>)> {
    let first = udp_socket(addr)?;
    let bound = first.local_addr()?;
    let mut sockets = vec![first];
    for _ in 1..workers {
        sockets.push(udp_socket(bound)?);
    }
    Ok((bound, sockets))
}

/// Runs one UDP worker until `stop` is set: a batch of queries in, a batch of answers out.
pub fn udp_worker(socket: UdpSocket, shared: Arc<DnsShared>) {
    let mut rng = Xorshift::seeded();
    let mut batch = crate::mmsg::Batch::new();
    while !shared.stop.load(Ordering::Relaxed) {
        let got = match batch.receive(&socket) {
            Ok(got) => got,
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock
                        | io::ErrorKind::TimedOut
                        | io::ErrorKind::Interrupted
                ) =>
            {
                continue;
            }
            Err(e) => {
                tracing::warn!(error = %e, "UDP receive failed");
                continue;
            }
        };
        // One snapshot for the whole batch: it was current when the batch arrived.
        let snapshot = shared.snapshot.load();
        for i in 0..got {
            shared.metrics.udp_queries.inc();
            let Some(peer) = batch.peer(i) else {
                continue;
            };
            let (query, response) = batch.prepare(i);
            if answer_udp(&shared, &snapshot, query, peer.ip(), &mut rng, response) {
                batch.commit(i);
            }
        }
        drop(snapshot);
        batch.send(&socket);
    }
}

/// Answers one UDP query from `source` into `response` and counts the outcome; whether there
/// is an answer to send. Shared by the socket and XDP workers.
pub(crate) fn answer_udp(
    shared: &DnsShared,
    snapshot: &Snapshot,
    query: &[u8],
    source: std::net::IpAddr,
    rng: &mut Xorshift,
    response: &mut Vec<u8>,
) -> bool {
    let client = Client {
        source,
        random: rng.next(),
    };
    let outcome = answer::respond_to(snapshot, query, Transport::Udp, &client, response);
    shared.metrics.count(outcome);
    matches!(outcome, Outcome::Respond { .. })
}

/// Accepts DNS TCP connections until `shutdown` fires.
pub async fn tcp_listener(
    listener: TcpListener,
    shared: Arc<DnsShared>,
    idle: Duration,
    max_connections: usize,
    mut shutdown: tokio::sync::watch::Receiver<bool>,
) {
    let slots = Arc::new(Semaphore::new(max_connections));
    let mut tasks = tokio::task::JoinSet::new();
    loop {
        tokio::select! {
            _ = shutdown.changed() => break,
            accepted = listener.accept() => {
                let (stream, peer) = match accepted {
                    Ok(accepted) => accepted,
                    Err(e) => {
                        tracing::warn!(error = %e, "TCP accept failed");
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        continue;
                    }
                };
                let Ok(permit) = slots.clone().try_acquire_owned() else {
                    shared.metrics.tcp_refused.inc();
                    drop(stream);
                    continue;
                };
                let shared = shared.clone();
                let shutdown = shutdown.clone();
                tasks.spawn(async move {
                    shared.metrics.tcp_open.inc();
                    if let Err(e) = tcp_connection(stream, &shared, idle, shutdown).await {
                        tracing::debug!(error = %e, %peer, "TCP connection ended");
                    }
                    shared.metrics.tcp_open.dec();
                    drop(permit);
                });
            }
            Some(_) = tasks.join_next(), if !tasks.is_empty() => {}
        }
    }
    // Let connections finish the query in hand.
    let _ = tokio::time::timeout(Duration::from_secs(5), async {
        while tasks.join_next().await.is_some() {}
    })
    .await;
}

/// Serves length-prefixed queries (RFC 1035 §4.2.2, RFC 7766) one after another until the
/// client closes, goes idle, or the server stops.
async fn tcp_connection(
    mut stream: TcpStream,
    shared: &DnsShared,
    idle: Duration,
    mut shutdown: tokio::sync::watch::Receiver<bool>,
) -> io::Result<()> {
    let _ = stream.set_nodelay(true);
    let peer = stream
        .peer_addr()
        .map(|a| a.ip())
        .unwrap_or(std::net::IpAddr::from([0u8, 0, 0, 0]));
    let mut packet = vec![0u8; 65535];
    let mut response = Vec::with_capacity(65535);
    loop {
        let mut len_bytes = [0u8; 2];
        tokio::select! {
            _ = shutdown.changed() => return Ok(()),
            read = tokio::time::timeout(idle, stream.read_exact(&mut len_bytes)) => {
                match read {
                    Err(_) => return Ok(()),
                    Ok(Err(e)) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(()),
                    Ok(other) => { other?; }
                }
            }
        }
        let len = u16::from_be_bytes(len_bytes) as usize;
        match tokio::time::timeout(idle, stream.read_exact(&mut packet[..len])).await {
            Err(_) => return Ok(()),
            Ok(read) => {
                read?;
            }
        }
        shared.metrics.tcp_queries.inc();
        let outcome = {
            let snapshot = shared.snapshot.load();
            let client = Client {
                source: peer,
                random: rand::random(),
            };
            answer::respond_to(
                &snapshot,
                &packet[..len],
                Transport::Tcp,
                &client,
                &mut response,
            )
        };
        shared.metrics.count(outcome);
        match outcome {
            Outcome::Respond { .. } => {
                let mut framed = Vec::with_capacity(response.len() + 2);
                framed.extend_from_slice(&(response.len() as u16).to_be_bytes());
                framed.extend_from_slice(&response);
                stream.write_all(&framed).await?;
            }
            // A packet we cannot answer leaves the stream in an unknown state: close it.
            Outcome::Drop => return Ok(()),
        }
    }
}
