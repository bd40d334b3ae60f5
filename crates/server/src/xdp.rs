//! XDP fast path (Linux): an XDP program on a network interface hands UDP packets for our DNS
//! listeners to AF_XDP sockets, one per receive queue, and each worker answers them in place
//! and puts the answers straight on the interface's transmit path. The kernel's UDP socket
//! layer (socket lookup, queueing, route lookup, skb building per send) is skipped on both
//! sides; the answer code is the same as the socket workers'.
//!
//! Anything the program does not recognise (other ports and addresses, IPv4 options, fragments,
//! IPv6 extension headers, VLAN tags) goes on to the kernel as before, where the socket workers
//! still listen on the same addresses. The program is attached through a BPF link owned by this
//! process, so it is detached when dnz exits, however it exits.
//!
//! Unsafe code lives here: the `bpf` and AF_XDP system calls, and the rings shared with the
//! kernel. Every ring and frame access is bounded by the sizes this module asked for.
#![allow(unsafe_code)]

use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use libc::{
    AF_XDP, SOL_XDP, XDP_MMAP_OFFSETS, XDP_OPTIONS, XDP_OPTIONS_ZEROCOPY, XDP_PGOFF_RX_RING,
    XDP_PGOFF_TX_RING, XDP_RING_NEED_WAKEUP, XDP_RX_RING, XDP_TX_RING, XDP_UMEM_COMPLETION_RING,
    XDP_UMEM_FILL_RING, XDP_UMEM_PGOFF_COMPLETION_RING, XDP_UMEM_PGOFF_FILL_RING, XDP_UMEM_REG,
    XDP_USE_NEED_WAKEUP, xdp_desc as Desc, xdp_mmap_offsets, xdp_ring_offset,
};

use crate::dns::{DnsShared, Xorshift, answer_udp};

const BPF_MAP_CREATE: libc::c_long = 0;
const BPF_MAP_UPDATE_ELEM: libc::c_long = 2;
const BPF_PROG_LOAD: libc::c_long = 5;
const BPF_LINK_CREATE: libc::c_long = 28;
const BPF_MAP_TYPE_XSKMAP: u32 = 17;
const BPF_PROG_TYPE_XDP: u32 = 6;
const BPF_XDP: u32 = 37;
const XDP_PASS: i32 = 2;
const BPF_FUNC_REDIRECT_MAP: i32 = 51;

/// Frames per socket, and the size of each of its four rings: every frame fits in any ring, so
/// no ring can overflow. 1024 frames of 2 KiB: 2 MiB per receive queue.
const FRAMES: u32 = 1024;
const FRAME_SIZE: u32 = 2048;

const ETH_LEN: usize = 14;
const IPV4_LEN: usize = 20;
const IPV6_LEN: usize = 40;
const UDP_LEN: usize = 8;

fn bpf(cmd: libc::c_long, attr: &mut [u8; 128]) -> io::Result<RawFd> {
    // SAFETY: `attr` is a zeroed `union bpf_attr` prefix of 128 bytes (larger than every
    // command used here needs; the kernel checks that the unused tail is zero), and any
    // pointers written into it point at live buffers of the caller.
    let fd = unsafe { libc::syscall(libc::SYS_bpf, cmd, attr.as_mut_ptr(), attr.len() as u32) };
    if fd < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(fd as RawFd)
    }
}

fn put32(attr: &mut [u8; 128], at: usize, value: u32) {
    attr[at..at + 4].copy_from_slice(&value.to_ne_bytes());
}

fn put64(attr: &mut [u8; 128], at: usize, value: u64) {
    attr[at..at + 8].copy_from_slice(&value.to_ne_bytes());
}

/// # The XDP program
///
/// Written as eBPF instructions here rather than compiled from C, so that building dnz needs
/// no BPF toolchain. It redirects to the socket of the packet's receive queue every unfragmented
/// UDP packet whose destination is one of `listeners` (an unspecified address matches any), and
/// passes everything else on. `bpf_redirect_map` itself passes the packet when the queue has no
/// socket.
struct Program {
    insns: Vec<u64>,
    /// (instruction index, label) for jumps to patch once every label is placed.
    jumps: Vec<(usize, Label)>,
    labels: [Option<usize>; 4],
}

#[derive(Clone, Copy)]
enum Label {
    Pass = 0,
    Redirect = 1,
    Ipv4 = 2,
    Ipv6 = 3,
}

// Registers: r1 context, r2 packet start, r3 packet end, r4 scratch pointer, r5 loaded field,
// r6 saved context.
const MOV64_REG: u8 = 0xbf;
const MOV64_IMM: u8 = 0xb7;
const ADD64_IMM: u8 = 0x07;
const LDX_W: u8 = 0x61;
const LDX_H: u8 = 0x69;
const LDX_B: u8 = 0x71;
const JA: u8 = 0x05;
const JGT_REG: u8 = 0x2d;
const JEQ32_IMM: u8 = 0x16;
const JNE32_IMM: u8 = 0x56;
const AND32_IMM: u8 = 0x54;
const LD_IMM64: u8 = 0x18;
const CALL: u8 = 0x85;
const EXIT: u8 = 0x95;
const PSEUDO_MAP_FD: u8 = 1;

fn insn(code: u8, dst: u8, src: u8, off: i16, imm: i32) -> u64 {
    u64::from(code)
        | (u64::from(dst & 0xf) << 8)
        | (u64::from(src & 0xf) << 12)
        | (u64::from(off as u16) << 16)
        | (u64::from(imm as u32) << 32)
}

/// A network-order field as a little-endian load sees it, for comparing with an immediate.
fn le32(bytes: [u8; 4]) -> i32 {
    i32::from_le_bytes(bytes)
}

fn le16(bytes: [u8; 2]) -> i32 {
    i32::from(u16::from_le_bytes(bytes))
}

impl Program {
    fn build(map_fd: RawFd, listeners: &[SocketAddr]) -> Vec<u64> {
        let mut p = Program {
            insns: Vec::new(),
            jumps: Vec::new(),
            labels: [None; 4],
        };
        p.op(MOV64_REG, 6, 1, 0);
        p.op(LDX_W, 2, 1, 0); // xdp_md.data
        p.op(LDX_W, 3, 1, 4); // xdp_md.data_end
        p.op(MOV64_REG, 4, 2, 0);
        p.imm(ADD64_IMM, 4, (ETH_LEN + IPV4_LEN + UDP_LEN) as i32);
        p.jump_reg(JGT_REG, 4, 3, Label::Pass);
        p.load(LDX_H, 12); // ethertype
        p.jump_imm(JEQ32_IMM, le16([0x08, 0x00]), Label::Ipv4);
        p.jump_imm(JEQ32_IMM, le16([0x86, 0xdd]), Label::Ipv6);
        p.jump(Label::Pass);

        p.place(Label::Ipv4);
        p.load(LDX_B, ETH_LEN as i16); // version and header length: no options
        p.jump_imm(JNE32_IMM, 0x45, Label::Pass);
        p.load(LDX_B, (ETH_LEN + 9) as i16);
        p.jump_imm(JNE32_IMM, libc::IPPROTO_UDP, Label::Pass);
        p.load(LDX_H, (ETH_LEN + 6) as i16); // more-fragments flag and fragment offset
        p.imm(AND32_IMM, 5, le16([0x3f, 0xff]));
        p.jump_imm(JNE32_IMM, 0, Label::Pass);
        for listener in listeners {
            let SocketAddr::V4(v4) = listener else {
                continue;
            };
            p.matcher(ETH_LEN + IPV4_LEN, v4.port(), {
                let ip = v4.ip();
                (!ip.is_unspecified()).then(|| vec![(ETH_LEN + 16, ip.octets())])
            });
        }
        p.jump(Label::Pass);

        p.place(Label::Ipv6);
        p.op(MOV64_REG, 4, 2, 0);
        p.imm(ADD64_IMM, 4, (ETH_LEN + IPV6_LEN + UDP_LEN) as i32);
        p.jump_reg(JGT_REG, 4, 3, Label::Pass);
        p.load(LDX_B, (ETH_LEN + 6) as i16); // next header: UDP, no extension headers
        p.jump_imm(JNE32_IMM, libc::IPPROTO_UDP, Label::Pass);
        for listener in listeners {
            let SocketAddr::V6(v6) = listener else {
                continue;
            };
            p.matcher(ETH_LEN + IPV6_LEN, v6.port(), {
                let ip = v6.ip();
                (!ip.is_unspecified()).then(|| {
                    let octets = ip.octets();
                    (0..4)
                        .map(|i| {
                            let word = [
                                octets[4 * i],
                                octets[4 * i + 1],
                                octets[4 * i + 2],
                                octets[4 * i + 3],
                            ];
                            (ETH_LEN + 24 + 4 * i, word)
                        })
                        .collect()
                })
            });
        }
        p.jump(Label::Pass);

        p.place(Label::Redirect);
        p.op(LDX_W, 2, 6, 16); // xdp_md.rx_queue_index
        p.insns.push(insn(LD_IMM64, 1, PSEUDO_MAP_FD, 0, map_fd));
        p.insns.push(0);
        p.imm(MOV64_IMM, 3, XDP_PASS);
        p.insns.push(insn(CALL, 0, 0, 0, BPF_FUNC_REDIRECT_MAP));
        p.insns.push(insn(EXIT, 0, 0, 0, 0));

        p.place(Label::Pass);
        p.imm(MOV64_IMM, 0, XDP_PASS);
        p.insns.push(insn(EXIT, 0, 0, 0, 0));

        for (at, label) in std::mem::take(&mut p.jumps) {
            let target = p.labels[label as usize].expect("every label is placed");
            let off = (target as i64 - at as i64 - 1) as i16;
            p.insns[at] = (p.insns[at] & !(0xffff << 16)) | (u64::from(off as u16) << 16);
        }
        p.insns
    }

    /// Jumps to Redirect when the UDP destination port is `port` and each (offset, word) of
    /// the destination address matches; otherwise falls through to the next matcher.
    fn matcher(&mut self, udp_at: usize, port: u16, words: Option<Vec<(usize, [u8; 4])>>) {
        let mut skips = Vec::new();
        self.load(LDX_H, (udp_at + 2) as i16);
        skips.push(self.insns.len());
        self.insns
            .push(insn(JNE32_IMM, 5, 0, 0, le16(port.to_be_bytes())));
        for (at, word) in words.unwrap_or_default() {
            self.load(LDX_W, at as i16);
            skips.push(self.insns.len());
            self.insns.push(insn(JNE32_IMM, 5, 0, 0, le32(word)));
        }
        self.jump(Label::Redirect);
        let next = self.insns.len();
        for at in skips {
            let off = (next - at - 1) as i16;
            self.insns[at] |= u64::from(off as u16) << 16;
        }
    }

    fn op(&mut self, code: u8, dst: u8, src: u8, off: i16) {
        self.insns.push(insn(code, dst, src, off, 0));
    }

    fn imm(&mut self, code: u8, dst: u8, imm: i32) {
        self.insns.push(insn(code, dst, 0, 0, imm));
    }

    fn load(&mut self, code: u8, off: i16) {
        self.insns.push(insn(code, 5, 2, off, 0));
    }

    fn jump(&mut self, label: Label) {
        self.jumps.push((self.insns.len(), label));
        self.insns.push(insn(JA, 0, 0, 0, 0));
    }

    fn jump_imm(&mut self, code: u8, imm: i32, label: Label) {
        self.jumps.push((self.insns.len(), label));
        self.insns.push(insn(code, 5, 0, 0, imm));
    }

    fn jump_reg(&mut self, code: u8, dst: u8, src: u8, label: Label) {
        self.jumps.push((self.insns.len(), label));
        self.insns.push(insn(code, dst, src, 0, 0));
    }

    fn place(&mut self, label: Label) {
        self.labels[label as usize] = Some(self.insns.len());
    }
}

/// The program attached to one interface, its socket map, and the link that keeps it attached
/// (closing the link detaches it).
pub struct Attached {
    pub ifindex: u32,
    pub queues: u32,
    map: OwnedFd,
    _program: OwnedFd,
    _link: OwnedFd,
}

fn owned(fd: RawFd) -> OwnedFd {
    // SAFETY: `fd` was just returned by the kernel and is owned by nobody else.
    unsafe { OwnedFd::from_raw_fd(fd) }
}

/// Receive queues of `interface`, from sysfs (at least one).
fn rx_queues(interface: &str) -> u32 {
    std::fs::read_dir(format!("/sys/class/net/{interface}/queues"))
        .map(|dir| {
            dir.filter_map(Result::ok)
                .filter(|e| e.file_name().to_string_lossy().starts_with("rx-"))
                .count() as u32
        })
        .unwrap_or(1)
        .max(1)
}

fn sysctl_is_on(path: &str) -> bool {
    std::fs::read_to_string(path).is_ok_and(|v| v.trim() == "1")
}

/// Loads the program for `listeners` (bound addresses: their ports are known) and attaches it
/// to `interface`.
pub fn attach(interface: &str, listeners: &[SocketAddr]) -> anyhow::Result<Attached> {
    use anyhow::Context;
    let name = std::ffi::CString::new(interface).context("interface name")?;
    // SAFETY: `name` is a valid C string.
    let ifindex = unsafe { libc::if_nametoindex(name.as_ptr()) };
    if ifindex == 0 {
        anyhow::bail!("--xdp {interface}: no such network interface");
    }
    // Answers leave through the interface's transmit path and come back in on the loopback
    // device as if from outside, where Linux drops 127.0.0.0/8 sources and destinations unless
    // told otherwise. Say so instead of answering into the void.
    let loopback = std::fs::read_to_string(format!("/sys/class/net/{interface}/flags"))
        .ok()
        .and_then(|f| u32::from_str_radix(f.trim().trim_start_matches("0x"), 16).ok())
        .is_some_and(|flags| flags & libc::IFF_LOOPBACK as u32 != 0);
    if loopback && listeners.iter().any(SocketAddr::is_ipv4) {
        for key in ["route_localnet", "accept_local"] {
            let path = format!("/proc/sys/net/ipv4/conf/{interface}/{key}");
            if !sysctl_is_on(&path) {
                anyhow::bail!(
                    "--xdp {interface}: answers to 127.0.0.0/8 over XDP need \
                     net.ipv4.conf.{interface}.route_localnet=1 and accept_local=1 \
                     ({path} is not 1)"
                );
            }
        }
    }
    let queues = rx_queues(interface);

    let mut attr = [0u8; 128];
    put32(&mut attr, 0, BPF_MAP_TYPE_XSKMAP);
    put32(&mut attr, 4, 4); // key: queue index
    put32(&mut attr, 8, 4); // value: socket fd
    put32(&mut attr, 12, queues);
    let map = owned(bpf(BPF_MAP_CREATE, &mut attr).map_err(|e| {
        anyhow::anyhow!(
            "--xdp {interface}: creating the socket map: {e} (XDP needs root, or CAP_BPF and \
             CAP_NET_ADMIN)"
        )
    })?);

    let insns = Program::build(map.as_raw_fd(), listeners);
    let license = c"Apache-2.0";
    let mut log = vec![0u8; 64 * 1024];
    let mut attr = [0u8; 128];
    put32(&mut attr, 0, BPF_PROG_TYPE_XDP);
    put32(&mut attr, 4, insns.len() as u32);
    put64(&mut attr, 8, insns.as_ptr() as u64);
    put64(&mut attr, 16, license.as_ptr() as u64);
    put32(&mut attr, 24, 1); // log level: only on failure is the log read
    put32(&mut attr, 28, log.len() as u32);
    put64(&mut attr, 32, log.as_mut_ptr() as u64);
    put32(&mut attr, 68, BPF_XDP); // expected attach type
    let program = owned(bpf(BPF_PROG_LOAD, &mut attr).map_err(|e| {
        let end = log.iter().position(|&b| b == 0).unwrap_or(0);
        anyhow::anyhow!(
            "--xdp {interface}: loading the XDP program: {e}: {}",
            String::from_utf8_lossy(&log[..end]).trim()
        )
    })?);

    let mut attr = [0u8; 128];
    put32(&mut attr, 0, program.as_raw_fd() as u32);
    put32(&mut attr, 4, ifindex);
    put32(&mut attr, 8, BPF_XDP);
    // Flags 0: the driver's native mode where it has one, generic mode otherwise.
    let link = owned(bpf(BPF_LINK_CREATE, &mut attr).map_err(|e| {
        let hint = if e.raw_os_error() == Some(libc::EBUSY) {
            " (another XDP program is attached to it)"
        } else {
            ""
        };
        anyhow::anyhow!("--xdp {interface}: attaching the XDP program: {e}{hint}")
    })?);
    Ok(Attached {
        ifindex,
        queues,
        map,
        _program: program,
        _link: link,
    })
}

impl Attached {
    /// Sends the packets of receive queue `queue` to `socket`.
    pub fn register(&self, queue: u32, socket: &XskSocket) -> io::Result<()> {
        let fd = socket.fd.as_raw_fd() as u32;
        let mut attr = [0u8; 128];
        put32(&mut attr, 0, self.map.as_raw_fd() as u32);
        put64(&mut attr, 8, (&raw const queue) as u64);
        put64(&mut attr, 16, (&raw const fd) as u64);
        bpf(BPF_MAP_UPDATE_ELEM, &mut attr).map(drop)
    }
}

/// A memory mapping, unmapped on drop.
struct Mapping {
    ptr: *mut u8,
    len: usize,
}

// SAFETY: the mapping is plain memory; which thread touches it is up to its owner.
unsafe impl Send for Mapping {}

impl Mapping {
    fn new(len: usize, fd: RawFd, offset: libc::off_t) -> io::Result<Mapping> {
        let flags = if fd < 0 {
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS
        } else {
            libc::MAP_SHARED | libc::MAP_POPULATE
        };
        // SAFETY: a fresh mapping of `len` bytes; the kernel checks fd and offset.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                flags,
                fd,
                offset,
            )
        };
        if ptr == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        Ok(Mapping {
            ptr: ptr.cast(),
            len,
        })
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: `ptr` and `len` are the mapping made in `new`.
        unsafe { libc::munmap(self.ptr.cast(), self.len) };
    }
}

/// One ring shared with the kernel: a producer and a consumer index and `FRAMES` entries of
/// `T` (a frame address, or a descriptor).
struct Ring<T> {
    _mapping: Mapping,
    producer: *const AtomicU32,
    consumer: *const AtomicU32,
    flags: *const AtomicU32,
    entries: *mut T,
}

// SAFETY: see Mapping; the ring is used by the one worker that owns its socket.
unsafe impl<T> Send for Ring<T> {}

impl<T> Ring<T> {
    fn map(fd: RawFd, offsets: xdp_ring_offset, pgoff: libc::off_t) -> io::Result<Ring<T>> {
        let len = offsets.desc as usize + FRAMES as usize * size_of::<T>();
        let mapping = Mapping::new(len, fd, pgoff)?;
        let at = |off: u64| {
            // SAFETY: the kernel's offsets lie within the ring it mapped.
            unsafe { mapping.ptr.add(off as usize) }
        };
        Ok(Ring {
            producer: at(offsets.producer).cast(),
            consumer: at(offsets.consumer).cast(),
            flags: at(offsets.flags).cast(),
            entries: at(offsets.desc).cast(),
            _mapping: mapping,
        })
    }

    fn producer(&self) -> &AtomicU32 {
        // SAFETY: an aligned u32 in the live mapping, written by the kernel concurrently: only
        // ever accessed atomically.
        unsafe { &*self.producer }
    }

    fn consumer(&self) -> &AtomicU32 {
        // SAFETY: as for `producer`.
        unsafe { &*self.consumer }
    }

    fn needs_wakeup(&self) -> bool {
        // SAFETY: as for `producer`.
        unsafe { &*self.flags }.load(Ordering::Relaxed) & XDP_RING_NEED_WAKEUP != 0
    }

    fn entry(&self, index: u32) -> *mut T {
        // SAFETY: the index is reduced to the ring's `FRAMES` entries.
        unsafe { self.entries.add((index % FRAMES) as usize) }
    }
}

/// An AF_XDP socket bound to one receive queue, with its frames (UMEM) and rings.
pub struct XskSocket {
    fd: OwnedFd,
    /// In copy mode every transmit takes a system call; only zero-copy drivers keep the
    /// TX ring's need-wakeup flag.
    zero_copy: bool,
    umem: Mapping,
    rx: Ring<Desc>,
    tx: Ring<Desc>,
    fill: Ring<u64>,
    completion: Ring<u64>,
}

impl XskSocket {
    pub fn open(ifindex: u32, queue: u32) -> io::Result<XskSocket> {
        // SAFETY: plain socket creation.
        let raw = unsafe { libc::socket(AF_XDP, libc::SOCK_RAW | libc::SOCK_CLOEXEC, 0) };
        if raw < 0 {
            return Err(io::Error::last_os_error());
        }
        let fd = owned(raw);
        let umem = Mapping::new((FRAMES * FRAME_SIZE) as usize, -1, 0)?;
        let set = |option: libc::c_int, value: *const libc::c_void, len: usize| {
            // SAFETY: `value` points at `len` readable bytes.
            let r =
                unsafe { libc::setsockopt(raw, SOL_XDP, option, value, len as libc::socklen_t) };
            if r < 0 {
                Err(io::Error::last_os_error())
            } else {
                Ok(())
            }
        };
        let reg = libc::xdp_umem_reg {
            addr: umem.ptr as u64,
            len: umem.len as u64,
            chunk_size: FRAME_SIZE,
            headroom: 0,
            flags: 0,
            tx_metadata_len: 0,
        };
        set(XDP_UMEM_REG, (&raw const reg).cast(), size_of_val(&reg))?;
        for option in [
            XDP_UMEM_FILL_RING,
            XDP_UMEM_COMPLETION_RING,
            XDP_RX_RING,
            XDP_TX_RING,
        ] {
            let size = FRAMES;
            set(option, (&raw const size).cast(), 4)?;
        }
        // SAFETY: plain old data, all zeros until the kernel fills it in.
        let mut offsets: xdp_mmap_offsets = unsafe { std::mem::zeroed() };
        let mut len = size_of_val(&offsets) as libc::socklen_t;
        // SAFETY: `offsets` is a writable `struct xdp_mmap_offsets` of `len` bytes.
        if unsafe {
            libc::getsockopt(
                raw,
                SOL_XDP,
                XDP_MMAP_OFFSETS,
                (&raw mut offsets).cast(),
                &mut len,
            )
        } < 0
        {
            return Err(io::Error::last_os_error());
        }
        let socket = XskSocket {
            rx: Ring::map(raw, offsets.rx, XDP_PGOFF_RX_RING)?,
            tx: Ring::map(raw, offsets.tx, XDP_PGOFF_TX_RING)?,
            fill: Ring::map(raw, offsets.fr, XDP_UMEM_PGOFF_FILL_RING as libc::off_t)?,
            completion: Ring::map(
                raw,
                offsets.cr,
                XDP_UMEM_PGOFF_COMPLETION_RING as libc::off_t,
            )?,
            umem,
            fd,
            zero_copy: false,
        };
        // Every frame starts in the fill ring, ready for the kernel to receive into.
        for i in 0..FRAMES {
            // SAFETY: the fill ring has FRAMES entries and is not yet shared with the kernel.
            unsafe { *socket.fill.entry(i) = u64::from(i * FRAME_SIZE) };
        }
        socket.fill.producer().store(FRAMES, Ordering::Release);

        let addr = libc::sockaddr_xdp {
            sxdp_family: AF_XDP as u16,
            sxdp_flags: XDP_USE_NEED_WAKEUP,
            sxdp_ifindex: ifindex,
            sxdp_queue_id: queue,
            sxdp_shared_umem_fd: 0,
        };
        let addr_len = size_of_val(&addr) as libc::socklen_t;
        // SAFETY: `addr` is a complete sockaddr_xdp.
        if unsafe { libc::bind(raw, (&raw const addr).cast(), addr_len) } < 0 {
            return Err(io::Error::last_os_error());
        }
        let mut options = 0u32;
        let mut len = 4 as libc::socklen_t;
        // SAFETY: `options` is a writable `struct xdp_options` (one u32).
        let zero_copy = unsafe {
            libc::getsockopt(
                raw,
                SOL_XDP,
                XDP_OPTIONS,
                (&raw mut options).cast(),
                &mut len,
            )
        } == 0
            && options & XDP_OPTIONS_ZEROCOPY != 0;
        Ok(XskSocket {
            zero_copy,
            ..socket
        })
    }

    /// The frame at `addr` (as the kernel gives it: the frame's start plus any headroom), up
    /// to the end of its chunk.
    fn frame(&mut self, addr: u64) -> &mut [u8] {
        let addr = (addr as usize).min(self.umem.len);
        let end = (addr / FRAME_SIZE as usize + 1) * FRAME_SIZE as usize;
        // SAFETY: [addr, end) lies within one chunk of the UMEM, which the kernel handed back
        // to us through the RX ring and does not touch until we give it back.
        unsafe {
            std::slice::from_raw_parts_mut(self.umem.ptr.add(addr), end.min(self.umem.len) - addr)
        }
    }

    fn must_kick(&self) -> bool {
        !self.zero_copy || self.tx.needs_wakeup()
    }

    fn kick(&self) {
        // SAFETY: a zero-length send on our own socket asks the kernel to transmit the TX ring.
        unsafe {
            libc::sendto(
                self.fd.as_raw_fd(),
                std::ptr::null(),
                0,
                libc::MSG_DONTWAIT,
                std::ptr::null(),
                0,
            )
        };
    }

    /// Returns transmitted frames to the fill ring; returns how many.
    fn recycle(&mut self) -> u32 {
        let done = self.completion.producer().load(Ordering::Acquire);
        let mut at = self.completion.consumer().load(Ordering::Relaxed);
        let mut fill = self.fill.producer().load(Ordering::Relaxed);
        while at != done {
            // SAFETY: entries between consumer and producer are the kernel's completions.
            unsafe {
                let addr = *self.completion.entry(at);
                *self.fill.entry(fill) = chunk_start(addr);
            }
            at = at.wrapping_add(1);
            fill = fill.wrapping_add(1);
        }
        let returned = at.wrapping_sub(self.completion.consumer().load(Ordering::Relaxed));
        self.completion.consumer().store(at, Ordering::Release);
        self.fill.producer().store(fill, Ordering::Release);
        returned
    }

    fn refill(&mut self, addr: u64) {
        let fill = self.fill.producer().load(Ordering::Relaxed);
        // SAFETY: frames in circulation never exceed the ring's size.
        unsafe { *self.fill.entry(fill) = chunk_start(addr) };
        self.fill
            .producer()
            .store(fill.wrapping_add(1), Ordering::Release);
    }

    /// A zero-copy driver that found the fill ring empty stops receiving until told there are
    /// frames again (copy mode never sets the flag).
    fn wake_rx(&self) {
        if self.zero_copy && self.fill.needs_wakeup() {
            // SAFETY: a zero-length receive on our own socket only wakes the driver.
            unsafe {
                libc::recvfrom(
                    self.fd.as_raw_fd(),
                    std::ptr::null_mut(),
                    0,
                    libc::MSG_DONTWAIT,
                    std::ptr::null_mut(),
                    std::ptr::null_mut(),
                )
            };
        }
    }

    fn wait(&self, timeout_ms: i32) {
        let mut poll = libc::pollfd {
            fd: self.fd.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one valid pollfd.
        unsafe { libc::poll(&mut poll, 1, timeout_ms) };
    }
}

/// The start of the frame chunk holding `addr` (a descriptor's address includes headroom).
fn chunk_start(addr: u64) -> u64 {
    addr - addr % u64::from(FRAME_SIZE)
}

/// Where a received packet came from and went to, and where its DNS payload lies.
#[derive(Debug, PartialEq, Eq)]
pub struct Packet {
    pub source: SocketAddr,
    pub destination: SocketAddr,
    pub payload: std::ops::Range<usize>,
}

fn ones_sum(mut sum: u32, bytes: &[u8]) -> u32 {
    let mut chunks = bytes.chunks_exact(2);
    for pair in &mut chunks {
        sum += u32::from(u16::from_be_bytes([pair[0], pair[1]]));
    }
    if let [last] = chunks.remainder() {
        sum += u32::from(*last) << 8;
    }
    sum
}

fn fold(mut sum: u32) -> u16 {
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    sum as u16
}

/// The UDP checksum of `udp` (header and payload, its checksum field zero) between `source`
/// and `destination`; over a packet with its checksum in place, 0 when that is right.
fn udp_checksum(source: IpAddr, destination: IpAddr, udp: &[u8]) -> u16 {
    let mut sum = ones_sum(0, udp);
    match (source, destination) {
        (IpAddr::V4(s), IpAddr::V4(d)) => {
            sum = ones_sum(sum, &s.octets());
            sum = ones_sum(sum, &d.octets());
        }
        (IpAddr::V6(s), IpAddr::V6(d)) => {
            sum = ones_sum(sum, &s.octets());
            sum = ones_sum(sum, &d.octets());
        }
        _ => {}
    }
    sum += u32::from(libc::IPPROTO_UDP as u16) + udp.len() as u32;
    !fold(sum)
}

fn unicast(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(ip) => !(ip.is_unspecified() || ip.is_multicast() || ip.is_broadcast()),
        IpAddr::V6(ip) => !(ip.is_unspecified() || ip.is_multicast()),
    }
}

/// Reads a frame the program redirected: Ethernet, then IPv4 without options or IPv6 without
/// extension headers, then UDP. None for anything malformed, cut short, or with a bad IPv4
/// header checksum, as the kernel would have dropped it.
pub fn parse(frame: &[u8]) -> Option<Packet> {
    let ethertype = u16::from_be_bytes(frame.get(12..14)?.try_into().ok()?);
    let (source, destination, udp_at, udp_end) = match ethertype {
        0x0800 => {
            let ip = frame.get(ETH_LEN..ETH_LEN + IPV4_LEN)?;
            if ip[0] != 0x45 || ip[9] != libc::IPPROTO_UDP as u8 || fold(ones_sum(0, ip)) != 0xffff
            {
                return None;
            }
            let total = usize::from(u16::from_be_bytes([ip[2], ip[3]]));
            let source = Ipv4Addr::from(<[u8; 4]>::try_from(&ip[12..16]).ok()?);
            let destination = Ipv4Addr::from(<[u8; 4]>::try_from(&ip[16..20]).ok()?);
            (
                IpAddr::V4(source),
                IpAddr::V4(destination),
                ETH_LEN + IPV4_LEN,
                ETH_LEN + total,
            )
        }
        0x86dd => {
            let ip = frame.get(ETH_LEN..ETH_LEN + IPV6_LEN)?;
            if ip[0] >> 4 != 6 || ip[6] != libc::IPPROTO_UDP as u8 {
                return None;
            }
            let payload = usize::from(u16::from_be_bytes([ip[4], ip[5]]));
            let source = Ipv6Addr::from(<[u8; 16]>::try_from(&ip[8..24]).ok()?);
            let destination = Ipv6Addr::from(<[u8; 16]>::try_from(&ip[24..40]).ok()?);
            (
                IpAddr::V6(source),
                IpAddr::V6(destination),
                ETH_LEN + IPV6_LEN,
                ETH_LEN + IPV6_LEN + payload,
            )
        }
        _ => return None,
    };
    let udp = frame.get(udp_at..udp_end)?;
    let udp_len = usize::from(u16::from_be_bytes(udp.get(4..6)?.try_into().ok()?));
    if udp_len < UDP_LEN || udp_len > udp.len() {
        return None;
    }
    let udp = &udp[..udp_len];
    let source_port = u16::from_be_bytes([udp[0], udp[1]]);
    let destination_port = u16::from_be_bytes([udp[2], udp[3]]);
    // What the kernel would not deliver or we could not answer: port 0, or a source or
    // destination that is not one host (a reply from a broadcast address, or to one, must not
    // leave).
    if source_port == 0 || destination_port == 0 || !unicast(source) || !unicast(destination) {
        return None;
    }
    // The UDP checksum is not verified: packets from this host's own sockets carry only a
    // partial one (the loopback device never completes it), and NICs check it in hardware.
    Some(Packet {
        source: SocketAddr::new(source, source_port),
        destination: SocketAddr::new(destination, destination_port),
        payload: udp_at + UDP_LEN..udp_at + udp_len,
    })
}

/// Turns the frame of `packet` into its answer: `answer` after new Ethernet, IP and UDP
/// headers going back the way the query came. Returns the frame's length, or None when the
/// answer does not fit in the frame.
pub fn write_reply(frame: &mut [u8], packet: &Packet, answer: &[u8]) -> Option<usize> {
    let udp_at = match packet.source {
        SocketAddr::V4(_) => ETH_LEN + IPV4_LEN,
        SocketAddr::V6(_) => ETH_LEN + IPV6_LEN,
    };
    let udp_len = UDP_LEN + answer.len();
    let total = udp_at + udp_len;
    if total > frame.len() || udp_len > usize::from(u16::MAX) - IPV4_LEN {
        return None;
    }
    // Ethernet: back to the sender's address, from the one it sent to.
    let (dst, src) = frame[..12].split_at_mut(6);
    dst.swap_with_slice(src);
    match (packet.source.ip(), packet.destination.ip()) {
        (IpAddr::V4(to), IpAddr::V4(from)) => {
            let ip = &mut frame[ETH_LEN..ETH_LEN + IPV4_LEN];
            ip[0] = 0x45;
            ip[1] = 0;
            ip[2..4].copy_from_slice(&((IPV4_LEN + udp_len) as u16).to_be_bytes());
            // ID 0 with DF set: an atomic datagram (RFC 6864 §4.1), as Linux sends.
            ip[4..6].copy_from_slice(&[0, 0]);
            ip[6..8].copy_from_slice(&[0x40, 0]);
            ip[8] = 64;
            ip[9] = libc::IPPROTO_UDP as u8;
            ip[10..12].copy_from_slice(&[0, 0]);
            ip[12..16].copy_from_slice(&from.octets());
            ip[16..20].copy_from_slice(&to.octets());
            let sum = !fold(ones_sum(0, ip));
            ip[10..12].copy_from_slice(&sum.to_be_bytes());
        }
        (IpAddr::V6(to), IpAddr::V6(from)) => {
            let ip = &mut frame[ETH_LEN..ETH_LEN + IPV6_LEN];
            ip[0..4].copy_from_slice(&[0x60, 0, 0, 0]);
            ip[4..6].copy_from_slice(&(udp_len as u16).to_be_bytes());
            ip[6] = libc::IPPROTO_UDP as u8;
            ip[7] = 64;
            ip[8..24].copy_from_slice(&from.octets());
            ip[24..40].copy_from_slice(&to.octets());
        }
        _ => return None,
    }
    let udp = &mut frame[udp_at..total];
    udp[0..2].copy_from_slice(&packet.destination.port().to_be_bytes());
    udp[2..4].copy_from_slice(&packet.source.port().to_be_bytes());
    udp[4..6].copy_from_slice(&(udp_len as u16).to_be_bytes());
    udp[6..8].copy_from_slice(&[0, 0]);
    udp[UDP_LEN..].copy_from_slice(answer);
    let sum = match udp_checksum(packet.destination.ip(), packet.source.ip(), udp) {
        0 => 0xffff,
        sum => sum,
    };
    udp[6..8].copy_from_slice(&sum.to_be_bytes());
    Some(total)
}

/// Answers the packets of one receive queue until `stop` is set.
pub fn xdp_worker(mut socket: XskSocket, shared: Arc<DnsShared>) {
    let mut random = Xorshift::seeded();
    let mut answer = Vec::with_capacity(4096);
    // Frames handed to the TX ring and not yet back through the completion ring.
    let mut in_flight = 0u32;
    while !shared.stop.load(Ordering::Relaxed) {
        in_flight -= socket.recycle();
        socket.wake_rx();
        let ready = socket.rx.producer().load(Ordering::Acquire);
        let mut at = socket.rx.consumer().load(Ordering::Relaxed);
        if ready == at {
            if in_flight > 0 {
                // Answers the kernel has not sent yet, or frames it has not given back: ask
                // again soon, so the fill ring never runs dry while we sleep.
                if socket.must_kick() {
                    socket.kick();
                }
                socket.wait(1);
            } else {
                socket.wait(200);
            }
            continue;
        }
        let snapshot = shared.snapshot.load();
        let mut tx = socket.tx.producer().load(Ordering::Relaxed);
        let mut queued = 0;
        while at != ready {
            // SAFETY: entries between the RX consumer and producer are the kernel's.
            let desc = unsafe { *socket.rx.entry(at) };
            at = at.wrapping_add(1);
            shared.metrics.xdp_queries.inc();
            let frame = socket.frame(desc.addr);
            let len = (desc.len as usize).min(frame.len());
            let Some(packet) = parse(&frame[..len]) else {
                shared.metrics.dropped.inc();
                socket.refill(desc.addr);
                continue;
            };
            answer.clear();
            let query = &frame[packet.payload.clone()];
            let reply = answer_udp(
                &shared,
                &snapshot,
                query,
                packet.source.ip(),
                &mut random,
                &mut answer,
            )
            .then(|| write_reply(frame, &packet, &answer))
            .flatten();
            let Some(reply_len) = reply else {
                socket.refill(desc.addr);
                continue;
            };
            // SAFETY: frames in circulation never exceed the TX ring's size.
            unsafe {
                *socket.tx.entry(tx) = Desc {
                    addr: desc.addr,
                    len: reply_len as u32,
                    options: 0,
                }
            };
            tx = tx.wrapping_add(1);
            queued += 1;
        }
        drop(snapshot);
        socket.rx.consumer().store(at, Ordering::Release);
        if queued > 0 {
            in_flight += queued;
            socket.tx.producer().store(tx, Ordering::Release);
            if socket.must_kick() {
                socket.kick();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn query_frame(source: SocketAddr, destination: SocketAddr, payload: &[u8]) -> Vec<u8> {
        // Built the way a sender would, then read back by `parse`: write_reply's header writer
        // run on a frame "from" the destination produces exactly such a packet.
        let mut frame = vec![0u8; 2048];
        frame[0..6].copy_from_slice(&[2, 0, 0, 0, 0, 1]);
        frame[6..12].copy_from_slice(&[2, 0, 0, 0, 0, 2]);
        let ethertype: u16 = if source.is_ipv4() { 0x0800 } else { 0x86dd };
        frame[12..14].copy_from_slice(&ethertype.to_be_bytes());
        let reversed = Packet {
            source: destination,
            destination: source,
            payload: 0..0,
        };
        let len = write_reply(&mut frame, &reversed, payload).unwrap();
        frame.truncate(len);
        frame
    }

    #[test]
    fn a_reply_goes_back_to_the_sender_with_valid_checksums() {
        for (client, server) in [
            ("192.0.2.7:40000", "198.51.100.53:53"),
            ("[2001:db8::7]:40000", "[2001:db8::53]:5353"),
        ] {
            let client: SocketAddr = client.parse().unwrap();
            let server: SocketAddr = server.parse().unwrap();
            let mut frame = query_frame(client, server, b"query bytes");
            let packet = parse(&frame).expect("a well-formed query");
            assert_eq!(packet.source, client);
            assert_eq!(packet.destination, server);
            assert_eq!(&frame[packet.payload.clone()], b"query bytes");
            // The sender's MAC addresses swap places. The answer is written over the query,
            // within the frame's chunk.
            let before = frame[..12].to_vec();
            frame.resize(FRAME_SIZE as usize, 0);
            let len = write_reply(&mut frame, &packet, b"the answer!!").unwrap();
            assert_eq!(&frame[..6], &before[6..12]);
            assert_eq!(&frame[6..12], &before[..6]);
            let reply = parse(&frame[..len]).expect("the reply parses");
            assert_eq!(reply.source, server);
            assert_eq!(reply.destination, client);
            assert_eq!(&frame[reply.payload.clone()], b"the answer!!");
            // The UDP checksum sums to zero over the packet, as a receiver checks it.
            let udp = &frame[reply.payload.start - UDP_LEN..reply.payload.end];
            assert_ne!(&udp[6..8], &[0, 0]);
            assert_eq!(udp_checksum(server.ip(), client.ip(), udp), 0);
        }
    }

    #[test]
    fn damaged_or_foreign_frames_are_refused() {
        let client: SocketAddr = "192.0.2.7:40000".parse().unwrap();
        let server: SocketAddr = "198.51.100.53:53".parse().unwrap();
        let good = query_frame(client, server, b"abcdef");
        assert!(parse(&good).is_some());
        // A flipped address bit breaks the IPv4 header checksum.
        let mut bad = good.clone();
        bad[ETH_LEN + 15] ^= 1;
        assert!(parse(&bad).is_none());
        // An IPv6 packet whose header says another next protocol.
        let mut v6 = query_frame(
            "[2001:db8::7]:1".parse().unwrap(),
            "[2001:db8::53]:53".parse().unwrap(),
            b"x",
        );
        assert!(parse(&v6).is_some());
        v6[ETH_LEN + 6] = 0; // a hop-by-hop extension header
        assert!(parse(&v6).is_none());
        // Cut short, a UDP length past the packet, another protocol, IPv4 options, ARP.
        assert!(parse(&good[..good.len() - 1]).is_none());
        let mut long = good.clone();
        long[ETH_LEN + IPV4_LEN + 4..ETH_LEN + IPV4_LEN + 6].copy_from_slice(&[0x10, 0]);
        assert!(parse(&long).is_none());
        let mut tcp = good.clone();
        tcp[ETH_LEN + 9] = libc::IPPROTO_TCP as u8;
        assert!(parse(&tcp).is_none());
        let mut options = good.clone();
        options[ETH_LEN] = 0x46;
        assert!(parse(&options).is_none());
        let mut arp = good;
        arp[12..14].copy_from_slice(&[0x08, 0x06]);
        assert!(parse(&arp).is_none());
        // Nothing is answered from or to an address that is not one host, or to port 0.
        for (from, to) in [
            ("192.0.2.7:0", "198.51.100.53:53"),
            ("192.0.2.7:4000", "198.51.100.53:0"),
            ("255.255.255.255:4000", "198.51.100.53:53"),
            ("0.0.0.0:4000", "198.51.100.53:53"),
            ("192.0.2.7:4000", "255.255.255.255:53"),
            ("192.0.2.7:4000", "224.0.0.251:53"),
            ("[ff02::fb]:4000", "[2001:db8::53]:53"),
            ("[2001:db8::7]:4000", "[ff02::1]:53"),
        ] {
            let frame = query_frame(from.parse().unwrap(), to.parse().unwrap(), b"q");
            assert!(parse(&frame).is_none(), "{from} -> {to}");
        }
        assert!(parse(&[]).is_none());
    }

    #[test]
    fn random_and_mangled_frames_never_panic() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand::rngs::StdRng::seed_from_u64(7);
        let good = query_frame(
            "192.0.2.7:40000".parse().unwrap(),
            "198.51.100.53:53".parse().unwrap(),
            b"0123456789abcdef",
        );
        let good6 = query_frame(
            "[2001:db8::7]:40000".parse().unwrap(),
            "[2001:db8::53]:53".parse().unwrap(),
            b"0123456789abcdef",
        );
        let mut parsed = 0;
        for round in 0..20_000 {
            // Half pure noise, half a real query with a few bytes changed (some also cut short).
            let mut frame = if round % 2 == 0 {
                let len = rng.random_range(0..200);
                (0..len).map(|_| rng.random()).collect::<Vec<u8>>()
            } else {
                let mut frame = if round % 4 == 1 {
                    good.clone()
                } else {
                    good6.clone()
                };
                for _ in 0..rng.random_range(1..4) {
                    let at = rng.random_range(0..frame.len());
                    frame[at] = rng.random();
                }
                if round % 8 == 3 {
                    frame.truncate(rng.random_range(0..=frame.len()));
                }
                frame
            };
            let len = frame.len();
            if let Some(packet) = parse(&frame) {
                parsed += 1;
                assert!(packet.payload.start <= packet.payload.end && packet.payload.end <= len);
                frame.resize(FRAME_SIZE as usize, 0);
                let answer = vec![0xab; rng.random_range(0..1500)];
                if let Some(reply) = write_reply(&mut frame, &packet, &answer) {
                    assert!(reply <= frame.len());
                    assert_eq!(
                        parse(&frame[..reply]).map(|p| p.payload.len()),
                        Some(answer.len()),
                        "{packet:?} {:02x?}",
                        &frame[..64]
                    );
                }
            }
        }
        // Mangled queries whose changes missed every checked field still parse.
        assert!(parsed > 1_000, "{parsed}");
    }

    #[test]
    fn an_answer_too_big_for_the_frame_is_not_written() {
        let client: SocketAddr = "192.0.2.7:40000".parse().unwrap();
        let server: SocketAddr = "198.51.100.53:53".parse().unwrap();
        let mut frame = query_frame(client, server, b"q");
        frame.resize(100, 0);
        let packet = parse(&frame[..ETH_LEN + IPV4_LEN + UDP_LEN + 1]).unwrap();
        assert_eq!(write_reply(&mut frame, &packet, &[0u8; 100]), None);
        assert!(write_reply(&mut frame, &packet, &[0u8; 50]).is_some());
    }

    #[test]
    fn the_program_jumps_stay_inside_it() {
        let listeners: Vec<SocketAddr> = vec![
            "127.0.0.1:5300".parse().unwrap(),
            "0.0.0.0:53".parse().unwrap(),
            "[::1]:5300".parse().unwrap(),
        ];
        let insns = Program::build(3, &listeners);
        let mut i = 0;
        while i < insns.len() {
            let code = (insns[i] & 0xff) as u8;
            if code == LD_IMM64 {
                i += 2;
                continue;
            }
            let jump = code & 0x07 == 0x05 || code & 0x07 == 0x06;
            if jump && code != CALL && code != EXIT {
                let off = ((insns[i] >> 16) & 0xffff) as u16 as i16;
                let target = i as i64 + 1 + i64::from(off);
                assert!(
                    target > i as i64 && (target as usize) < insns.len(),
                    "jump at {i} to {target}"
                );
            }
            i += 1;
        }
        assert_eq!((insns[insns.len() - 1] & 0xff) as u8, EXIT);
    }
}
