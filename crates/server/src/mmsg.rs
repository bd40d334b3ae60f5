//! Batched UDP I/O: `recvmmsg` takes every datagram waiting on the socket (up to `BATCH`) in
//! one system call and `sendmmsg` sends the answers in one more. Under load this spreads the
//! syscall entry and socket checks over the batch; with one packet waiting it costs what
//! `recvfrom` + `sendto` did.
//!
//! Unsafe code lives here (and in `heap`, one libc call): the two calls, and reading the kernel's
//! socket addresses. Every pointer handed to the kernel points into this struct's own boxed
//! arrays, set again before each call, and lengths come from those arrays.
#![allow(unsafe_code)]

use std::io;
use std::mem::{MaybeUninit, size_of};
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr, SocketAddrV4, SocketAddrV6, UdpSocket};
use std::os::fd::AsRawFd;

/// Datagrams per system call. Knot uses 64 on Linux; 32 keeps a batch's answers within the
/// socket buffer even for 1232-byte responses.
pub const BATCH: usize = 32;
/// Large enough for any query we answer (EDNS payloads above this are refused by the parser
/// as FORMERR only if the query itself is longer, which no resolver sends).
pub const MAX_QUERY: usize = 4096;

pub struct Batch {
    queries: Box<[[u8; MAX_QUERY]; BATCH]>,
    peers: Box<[libc::sockaddr_storage; BATCH]>,
    iov: Box<[libc::iovec; BATCH]>,
    headers: Box<[libc::mmsghdr; BATCH]>,
    received: usize,
    /// Answers to send: (index of the query, so its peer address is reused; the bytes).
    answers: Vec<(usize, Vec<u8>)>,
    pending: usize,
}

impl Batch {
    pub fn new() -> Batch {
        // SAFETY: all four are plain C data for which all-zero bytes are a valid value.
        let zeroed = |_| unsafe { MaybeUninit::<libc::mmsghdr>::zeroed().assume_init() };
        Batch {
            queries: vec![[0u8; MAX_QUERY]; BATCH]
                .into_boxed_slice()
                .try_into()
                .unwrap_or_else(|_| unreachable!()),
            peers: Box::new(
                [unsafe { MaybeUninit::<libc::sockaddr_storage>::zeroed().assume_init() }; BATCH],
            ),
            iov: Box::new(
                [libc::iovec {
                    iov_base: std::ptr::null_mut(),
                    iov_len: 0,
                }; BATCH],
            ),
            headers: Box::new(std::array::from_fn(zeroed)),
            received: 0,
            answers: (0..BATCH).map(|_| (0, Vec::with_capacity(4096))).collect(),
            pending: 0,
        }
    }

    /// Waits (up to the socket's read timeout) for at least one datagram, then takes all that
    /// are waiting, up to `BATCH`. Returns how many.
    pub fn receive(&mut self, socket: &UdpSocket) -> io::Result<usize> {
        for i in 0..BATCH {
            self.iov[i] = libc::iovec {
                iov_base: self.queries[i].as_mut_ptr().cast(),
                iov_len: MAX_QUERY,
            };
            let header = &mut self.headers[i].msg_hdr;
            header.msg_name = (&raw mut self.peers[i]).cast();
            header.msg_namelen = size_of::<libc::sockaddr_storage>() as libc::socklen_t;
            header.msg_iov = &raw mut self.iov[i];
            header.msg_iovlen = 1;
            header.msg_control = std::ptr::null_mut();
            header.msg_controllen = 0;
            header.msg_flags = 0;
            self.headers[i].msg_len = 0;
        }
        // SAFETY: every header points at this batch's own buffers, sized as declared above.
        let got = unsafe {
            libc::recvmmsg(
                socket.as_raw_fd(),
                self.headers.as_mut_ptr(),
                BATCH as libc::c_uint,
                libc::MSG_WAITFORONE,
                std::ptr::null_mut(),
            )
        };
        if got < 0 {
            self.received = 0;
            return Err(io::Error::last_os_error());
        }
        self.received = got as usize;
        Ok(self.received)
    }

    /// Who sent query `i` of the last `receive` (None for an address family we do not serve,
    /// which the caller drops).
    pub fn peer(&self, i: usize) -> Option<SocketAddr> {
        peer(&self.peers[i])
    }

    /// Query `i` of the last `receive`, and an empty buffer for its answer; the answer is sent
    /// only if `commit(i)` follows.
    pub fn prepare(&mut self, i: usize) -> (&[u8], &mut Vec<u8>) {
        let len = (self.headers[i].msg_len as usize).min(MAX_QUERY);
        let out = &mut self.answers[self.pending].1;
        out.clear();
        (&self.queries[i][..len], out)
    }

    /// Queues the buffer `prepare` handed out as the answer to query `i`.
    pub fn commit(&mut self, i: usize) {
        self.answers[self.pending].0 = i;
        self.pending += 1;
    }

    /// Sends every queued answer; returns how many the kernel refused (each is skipped, as a
    /// failed `sendto` was).
    pub fn send(&mut self, socket: &UdpSocket) -> usize {
        let count = self.pending;
        self.pending = 0;
        for (slot, (query, bytes)) in self.answers[..count].iter_mut().enumerate() {
            self.iov[slot] = libc::iovec {
                iov_base: bytes.as_mut_ptr().cast(),
                iov_len: bytes.len(),
            };
            let header = &mut self.headers[slot].msg_hdr;
            header.msg_name = (&raw mut self.peers[*query]).cast();
            header.msg_namelen = match self.peers[*query].ss_family as libc::c_int {
                libc::AF_INET6 => size_of::<libc::sockaddr_in6>(),
                _ => size_of::<libc::sockaddr_in>(),
            } as libc::socklen_t;
            header.msg_iov = &raw mut self.iov[slot];
            header.msg_iovlen = 1;
            header.msg_control = std::ptr::null_mut();
            header.msg_controllen = 0;
            header.msg_flags = 0;
        }
        let mut sent = 0;
        let mut failed = 0;
        while sent < count {
            // SAFETY: headers [sent, count) were filled above and point into this batch.
            let n = unsafe {
                libc::sendmmsg(
                    socket.as_raw_fd(),
                    self.headers[sent..].as_mut_ptr(),
                    (count - sent) as libc::c_uint,
                    0,
                )
            };
            if n > 0 {
                sent += n as usize;
                continue;
            }
            let error = io::Error::last_os_error();
            if error.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            // The first unsent answer failed on its own (a bad route, a full buffer): skip it,
            // as the single-packet loop did, and carry on with the rest.
            tracing::debug!(error = %error, "UDP send failed");
            failed += 1;
            sent += 1;
        }
        failed
    }
}

fn peer(storage: &libc::sockaddr_storage) -> Option<SocketAddr> {
    match storage.ss_family as libc::c_int {
        libc::AF_INET => {
            // SAFETY: the kernel wrote a sockaddr_in here (ss_family says so), and
            // sockaddr_storage is large and aligned enough for it.
            let v4 =
                unsafe { &*(storage as *const libc::sockaddr_storage).cast::<libc::sockaddr_in>() };
            let ip = Ipv4Addr::from(u32::from_be(v4.sin_addr.s_addr));
            Some(SocketAddr::V4(SocketAddrV4::new(
                ip,
                u16::from_be(v4.sin_port),
            )))
        }
        libc::AF_INET6 => {
            // SAFETY: as above, for sockaddr_in6.
            let v6 = unsafe {
                &*(storage as *const libc::sockaddr_storage).cast::<libc::sockaddr_in6>()
            };
            let ip = Ipv6Addr::from(v6.sin6_addr.s6_addr);
            Some(SocketAddr::V6(SocketAddrV6::new(
                ip,
                u16::from_be(v6.sin6_port),
                v6.sin6_flowinfo,
                v6.sin6_scope_id,
            )))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn a_batch_receives_every_waiting_datagram_and_answers_each_sender() {
        let server = UdpSocket::bind("127.0.0.1:0").unwrap();
        server
            .set_read_timeout(Some(Duration::from_secs(2)))
            .unwrap();
        let clients: Vec<UdpSocket> = (0..5)
            .map(|_| UdpSocket::bind("127.0.0.1:0").unwrap())
            .collect();
        for (n, client) in clients.iter().enumerate() {
            client
                .send_to(&[n as u8; 3], server.local_addr().unwrap())
                .unwrap();
        }
        let v6 = UdpSocket::bind("[::1]:0").ok();
        let mut batch = Batch::new();
        let mut seen = 0;
        while seen < clients.len() {
            let got = batch.receive(&server).unwrap();
            for i in 0..got {
                let from = batch.peer(i).unwrap();
                let n = clients
                    .iter()
                    .position(|c| c.local_addr().unwrap() == from)
                    .unwrap();
                let (bytes, out) = batch.prepare(i);
                assert_eq!(bytes, &[n as u8; 3]);
                out.extend_from_slice(b"answer");
                out.push(n as u8);
                batch.commit(i);
                seen += 1;
            }
            assert_eq!(batch.send(&server), 0);
        }
        for (n, client) in clients.iter().enumerate() {
            client
                .set_read_timeout(Some(Duration::from_secs(2)))
                .unwrap();
            let mut buf = [0u8; 16];
            let (len, from) = client.recv_from(&mut buf).unwrap();
            assert_eq!(from, server.local_addr().unwrap());
            assert_eq!(&buf[..len], [b"answer".as_slice(), &[n as u8]].concat());
        }
        // IPv6 addresses survive the round trip through sockaddr_storage too.
        if let Some(v6) = v6 {
            let server6 = UdpSocket::bind("[::1]:0").unwrap();
            server6
                .set_read_timeout(Some(Duration::from_secs(2)))
                .unwrap();
            v6.send_to(b"q6", server6.local_addr().unwrap()).unwrap();
            assert_eq!(batch.receive(&server6).unwrap(), 1);
            assert_eq!(batch.peer(0), Some(v6.local_addr().unwrap()));
            assert_eq!(batch.prepare(0).0, b"q6");
        }
    }

    #[test]
    fn a_timeout_is_an_error_not_a_batch() {
        let server = UdpSocket::bind("127.0.0.1:0").unwrap();
        server
            .set_read_timeout(Some(Duration::from_millis(50)))
            .unwrap();
        let mut batch = Batch::new();
        let error = batch.receive(&server).unwrap_err();
        assert!(
            matches!(
                error.kind(),
                io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
            ),
            "{error}"
        );
    }
}
