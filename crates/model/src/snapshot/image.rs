//! A compiled zone as bytes, so that a restart can read it back instead of compiling it again.
//!
//! The image holds [`ZoneSnapshot`]'s arrays as they are, slot table and hash seed included,
//! so reading one hashes nothing. Everything is little-endian and bounded by the length the
//! caller says the input has; a CRC-32 of all of it comes last and is verified before anything
//! is parsed. A damaged image is an error, never a panic or an index that points outside its
//! arrays. Zones with load balancers have no
//! image: their compile depends on the PoP, which is not the zone's.

use std::io::{self, Read, Seek, SeekFrom, Write};

use smallvec::SmallVec;

use super::{
    Additional, EMPTY, NO_EXTRA, NameHasher, NodeData, NodeExtra, NodeIndex, Rrset, Steered,
    SteeredMember, ZoneSnapshot,
};
use crate::name::Dname;
use crate::rdata::{Rdata, Rtype};

/// Why an image was not read back.
#[derive(Debug, thiserror::Error)]
pub enum ImageError {
    #[error("reading: {0}")]
    Io(#[from] io::Error),
    #[error("the image is damaged: {0}")]
    Damaged(&'static str),
}

/// Writes `zone`'s image; `Ok(false)` (and nothing written) for a zone that has none.
pub fn write<W: Write>(zone: &ZoneSnapshot, out: W) -> io::Result<bool> {
    if zone.nodes.extras.iter().any(|extra| extra.lb.is_some()) {
        return Ok(false);
    }
    let mut out = Out {
        inner: out,
        buf: Vec::with_capacity(Out::<W>::CHUNK + 1024),
        crc: crc32fast::Hasher::new(),
    };
    out.name(&zone.apex)?;
    out.rrset(&zone.soa)?;
    out.rrset(&zone.negative_soa)?;
    out.bytes(&[zone.has_cuts as u8, zone.apex_labels])?;
    out.u32(zone.serial)?;
    let index = &zone.nodes;
    out.u64(index.hasher.seed)?;
    out.u64(index.home as u64)?;
    out.u64(index.names.len() as u64)?;
    out.bytes(&index.names)?;
    out.u64(index.nodes.len() as u64)?;
    for node in index.nodes.iter() {
        out.u32(node.name)?;
        out.u32(node.first_rrset)?;
        out.u32(node.extra)?;
        out.u16(node.rrset_count)?;
        out.bytes(&[node.name_len, node.flags])?;
    }
    out.u64(index.slots.len() as u64)?;
    for &slot in index.slots.iter() {
        out.u64(slot)?;
    }
    out.u64(index.rrsets.len() as u64)?;
    for rrset in index.rrsets.iter() {
        out.rrset(rrset)?;
    }
    out.u64(index.extras.len() as u64)?;
    for extra in index.extras.iter() {
        out.u32(extra.additionals.len() as u32)?;
        for (rtype, found) in extra.additionals.iter() {
            out.u16(rtype.to_int())?;
            out.u32(found.len() as u32)?;
            for additional in found.iter() {
                out.name(&additional.owner)?;
                out.rrset(&additional.rrset)?;
            }
        }
    }
    out.flush()?;
    let crc = out.crc.finalize();
    out.inner.write_all(&crc.to_le_bytes())?;
    out.inner.flush()?;
    Ok(true)
}

/// Reads an image that `write` wrote, from `input`'s position on; `len` is how many bytes it
/// holds from there. The checksum is verified in a first pass, so that no count read from a
/// damaged image can ask for memory; each count is also bounded by `len`.
pub fn read(mut input: impl Read + Seek, len: u64) -> Result<ZoneSnapshot, ImageError> {
    let start = input.stream_position()?;
    let body = len.checked_sub(4).ok_or(ImageError::Damaged("too short"))?;
    let mut crc = crc32fast::Hasher::new();
    let mut buf = vec![0u8; 1 << 16];
    let mut left = body;
    while left > 0 {
        let n = left.min(buf.len() as u64) as usize;
        input.read_exact(&mut buf[..n])?;
        crc.update(&buf[..n]);
        left -= n as u64;
    }
    let mut stored = [0u8; 4];
    input.read_exact(&mut stored)?;
    if u32::from_le_bytes(stored) != crc.finalize() {
        return Err(ImageError::Damaged("checksum mismatch"));
    }
    input.seek(SeekFrom::Start(start))?;
    let mut input = In {
        inner: io::BufReader::with_capacity(1 << 16, input),
        left: body,
        scratch: vec![0; 65535],
    };
    let apex = input.name()?;
    let soa = input.rrset()?;
    let negative_soa = input.rrset()?;
    let [has_cuts, apex_labels] = input.array()?;
    let serial = input.u32()?;
    let seed = input.u64()?;
    let home = input.u64()? as usize;
    let names_len = input.count64(1)?;
    let mut names = vec![0u8; names_len].into_boxed_slice();
    input.fill(&mut names)?;
    let node_count = input.count64(16)?;
    let mut nodes = Vec::with_capacity(node_count);
    input.each(node_count, 16, |b| {
        nodes.push(NodeData {
            name: u32::from_le_bytes(b[0..4].try_into().unwrap()),
            first_rrset: u32::from_le_bytes(b[4..8].try_into().unwrap()),
            extra: u32::from_le_bytes(b[8..12].try_into().unwrap()),
            rrset_count: u16::from_le_bytes(b[12..14].try_into().unwrap()),
            name_len: b[14],
            flags: b[15],
        })
    })?;
    let slot_count = input.count64(8)?;
    let mut slots = Vec::with_capacity(slot_count);
    input.each(slot_count, 8, |b| {
        slots.push(u64::from_le_bytes(b.try_into().unwrap()))
    })?;
    // An RRset takes at least 11 bytes (type, TTL, count, steering flag).
    let rrset_count = input.count64(11)?;
    let mut rrsets = Vec::with_capacity(rrset_count);
    for _ in 0..rrset_count {
        rrsets.push(input.rrset()?);
    }
    let extra_count = input.count64(4)?;
    let mut extras = Vec::with_capacity(extra_count);
    for _ in 0..extra_count {
        let kinds = input.count32(6)?;
        let mut additionals = Vec::with_capacity(kinds);
        for _ in 0..kinds {
            let rtype = Rtype::from_int(input.u16()?);
            let count = input.count32(12)?;
            let mut found = Vec::with_capacity(count);
            for _ in 0..count {
                let owner = input.name()?;
                let rrset = input.rrset()?;
                found.push(Additional { owner, rrset });
            }
            additionals.push((rtype, found.into_boxed_slice()));
        }
        extras.push(NodeExtra {
            additionals: additionals.into_boxed_slice(),
            lb: None,
        });
    }
    if input.left != 0 {
        return Err(ImageError::Damaged("bytes after the end"));
    }
    let index = NodeIndex {
        names,
        rrsets: rrsets.into_boxed_slice(),
        nodes: nodes.into_boxed_slice(),
        extras: extras.into_boxed_slice(),
        slots: slots.into_boxed_slice(),
        home,
        hasher: NameHasher::with_seed(seed),
    };
    check(&index)?;
    Ok(ZoneSnapshot {
        apex,
        soa,
        negative_soa,
        nodes: index,
        has_cuts: has_cuts != 0,
        serial,
        apex_labels,
    })
}

/// What lookups rely on without checking: every offset and index inside its array, and an
/// empty slot that ends every probe.
fn check(index: &NodeIndex) -> Result<(), ImageError> {
    for node in index.nodes.iter() {
        if node.name as usize + node.name_len as usize > index.names.len()
            || node.first_rrset as usize + node.rrset_count as usize > index.rrsets.len()
            || (node.extra != NO_EXTRA && node.extra as usize >= index.extras.len())
        {
            return Err(ImageError::Damaged("a node points outside the image"));
        }
    }
    if index.slots.is_empty() {
        return if index.nodes.is_empty() {
            Ok(())
        } else {
            Err(ImageError::Damaged("nodes without slots"))
        };
    }
    if index.home >= index.slots.len() || index.slots[index.slots.len() - 1] != EMPTY {
        return Err(ImageError::Damaged("the slot table has no end"));
    }
    let nodes = index.nodes.len() as u64;
    if index
        .slots
        .iter()
        .any(|&slot| slot != EMPTY && slot & 0xffff_ffff >= nodes)
    {
        return Err(ImageError::Damaged("a slot points outside the nodes"));
    }
    Ok(())
}

/// Fields are gathered into a buffer that is summed and written whole: CRC-32 over a few bytes
/// at a time runs at a fraction of its speed over a long run.
struct Out<W: Write> {
    inner: W,
    buf: Vec<u8>,
    crc: crc32fast::Hasher,
}

impl<W: Write> Out<W> {
    const CHUNK: usize = 1 << 16;

    fn flush(&mut self) -> io::Result<()> {
        self.crc.update(&self.buf);
        self.inner.write_all(&self.buf)?;
        self.buf.clear();
        Ok(())
    }

    fn bytes(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.buf.extend_from_slice(bytes);
        if self.buf.len() >= Self::CHUNK {
            self.flush()?;
        }
        Ok(())
    }

    fn u16(&mut self, value: u16) -> io::Result<()> {
        self.bytes(&value.to_le_bytes())
    }

    fn u32(&mut self, value: u32) -> io::Result<()> {
        self.bytes(&value.to_le_bytes())
    }

    fn u64(&mut self, value: u64) -> io::Result<()> {
        self.bytes(&value.to_le_bytes())
    }

    fn name(&mut self, name: &Dname) -> io::Result<()> {
        self.bytes(&[name.as_wire().len() as u8])?;
        self.bytes(name.as_wire())
    }

    fn rrset(&mut self, rrset: &Rrset) -> io::Result<()> {
        self.u16(rrset.rtype.to_int())?;
        self.u32(rrset.ttl)?;
        self.u32(rrset.rdatas.len() as u32)?;
        for rdata in &rrset.rdatas {
            self.u16(rdata.as_wire().len() as u16)?;
            self.bytes(rdata.as_wire())?;
        }
        let Some(steered) = &rrset.steered else {
            return self.bytes(&[0]);
        };
        self.bytes(&[1, steered.has_place as u8, steered.has_weight as u8])?;
        self.u32(steered.members.len() as u32)?;
        for member in &steered.members {
            self.bytes(&[member.countries.len() as u8])?;
            for country in member.countries.iter() {
                self.bytes(&country.0)?;
            }
            self.bytes(&[
                member.continents,
                member.backup as u8,
                member.weight.is_some() as u8,
                member.check.is_some() as u8,
            ])?;
            self.u32(member.weight.unwrap_or(0))?;
            self.u64(member.check.unwrap_or(0))?;
        }
        Ok(())
    }
}

/// The second pass over an image whose checksum is verified. It is not summed again: a saved
/// image is replaced by renaming a new file over it, so an open one never changes.
struct In<R: Read> {
    inner: io::BufReader<R>,
    /// Bytes before the checksum not yet read.
    left: u64,
    /// Room for the longest rdata.
    scratch: Vec<u8>,
}

impl<R: Read> In<R> {
    fn fill(&mut self, buf: &mut [u8]) -> Result<(), ImageError> {
        self.left = self
            .left
            .checked_sub(buf.len() as u64)
            .ok_or(ImageError::Damaged("truncated"))?;
        self.inner.read_exact(buf)?;
        Ok(())
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N], ImageError> {
        let mut bytes = [0u8; N];
        self.fill(&mut bytes)?;
        Ok(bytes)
    }

    fn u16(&mut self) -> Result<u16, ImageError> {
        Ok(u16::from_le_bytes(self.array()?))
    }

    fn u32(&mut self) -> Result<u32, ImageError> {
        Ok(u32::from_le_bytes(self.array()?))
    }

    fn u64(&mut self) -> Result<u64, ImageError> {
        Ok(u64::from_le_bytes(self.array()?))
    }

    /// `count` items of at least `size` bytes each, refused when the rest of the image cannot
    /// hold them.
    fn count(&self, count: u64, size: u64) -> Result<usize, ImageError> {
        match count.checked_mul(size) {
            Some(bytes) if bytes <= self.left => Ok(count as usize),
            _ => Err(ImageError::Damaged("a count larger than the image")),
        }
    }

    fn count64(&mut self, size: u64) -> Result<usize, ImageError> {
        let count = self.u64()?;
        self.count(count, size)
    }

    fn count32(&mut self, size: u64) -> Result<usize, ImageError> {
        let count = self.u32()?;
        self.count(count.into(), size)
    }

    /// Calls `each` with `count` items of `size` bytes, read a buffer at a time.
    fn each(
        &mut self,
        count: usize,
        size: usize,
        mut each: impl FnMut(&[u8]),
    ) -> Result<(), ImageError> {
        let mut buf = vec![0u8; size * 4096];
        let mut done = 0;
        while done < count {
            let n = (count - done).min(4096);
            let chunk = &mut buf[..n * size];
            self.fill(chunk)?;
            chunk.chunks_exact(size).for_each(&mut each);
            done += n;
        }
        Ok(())
    }

    fn name(&mut self) -> Result<Dname, ImageError> {
        let [len] = self.array()?;
        let mut wire = std::mem::take(&mut self.scratch);
        self.fill(&mut wire[..len as usize])?;
        let name = Dname::from_wire(&wire[..len as usize]);
        self.scratch = wire;
        name.ok_or(ImageError::Damaged("a malformed name"))
    }

    fn rrset(&mut self) -> Result<Rrset, ImageError> {
        let rtype = Rtype::from_int(self.u16()?);
        let ttl = self.u32()?;
        let count = self.count32(2)?;
        let mut rdatas: SmallVec<[Rdata; 1]> = SmallVec::with_capacity(count);
        let mut wire = std::mem::take(&mut self.scratch);
        for _ in 0..count {
            let len = self.u16()? as usize;
            self.fill(&mut wire[..len])?;
            rdatas.push(Rdata::new(&wire[..len]));
        }
        self.scratch = wire;
        // Answers parse the names inside these (for compression and CNAME chains); the rest
        // is copied as it is.
        if matches!(
            rtype,
            Rtype::NS | Rtype::CNAME | Rtype::PTR | Rtype::MX | Rtype::SOA
        ) && rdatas
            .iter()
            .any(|rdata| Rdata::from_wire(rtype, rdata.as_wire()).is_err())
        {
            return Err(ImageError::Damaged("malformed record data"));
        }
        let [steered] = self.array()?;
        let steered = match steered {
            0 => None,
            1 => Some(Box::new(self.steered(rdatas.len())?)),
            _ => return Err(ImageError::Damaged("a bad steering flag")),
        };
        Ok(Rrset {
            rtype,
            ttl,
            rdatas,
            steered,
        })
    }

    fn steered(&mut self, rdatas: usize) -> Result<Steered, ImageError> {
        let [has_place, has_weight] = self.array()?;
        let count = self.u32()? as usize;
        // Steering's masks hold one bit per record.
        if count != rdatas {
            return Err(ImageError::Damaged(
                "steering members do not match the records",
            ));
        }
        let mut members = Vec::with_capacity(count);
        for _ in 0..count {
            let [n] = self.array()?;
            let mut countries = Vec::with_capacity(n as usize);
            for _ in 0..n {
                countries.push(geo::Country(self.array()?));
            }
            let [continents, backup, has_weight, has_check] = self.array()?;
            let weight = self.u32()?;
            let check = self.u64()?;
            members.push(SteeredMember {
                countries: countries.into_boxed_slice(),
                continents,
                weight: (has_weight != 0).then_some(weight),
                backup: backup != 0,
                check: (has_check != 0).then_some(check),
            });
        }
        Ok(Steered {
            members,
            has_place: has_place != 0,
            has_weight: has_weight != 0,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::steering::{CheckSpec, SteeringSpec, Validate as _};

    const ZONE: &str = r#"
$ORIGIN example.com.
@        3600 IN SOA   ns1 hostmaster 7 7200 3600 1209600 300
@        3600 IN NS    ns1
@        3600 IN MX    10 mail
ns1      3600 IN A     192.0.2.1
ns1      3600 IN AAAA  2001:db8::1
mail     3600 IN A     192.0.2.25
www      300  IN A     192.0.2.80
www      300  IN A     192.0.2.81
www      300  IN A     192.0.2.82
www      3600 IN TXT   "a text longer than twenty-two bytes, so it is not inline"
*.wild   3600 IN A     192.0.2.99
a.b.c    3600 IN TXT   "deep"
sub      3600 IN NS    ns.sub
ns.sub   3600 IN A     192.0.2.53
alias    3600 IN CNAME www
"#;

    fn zone() -> crate::ZoneConfig {
        let origin = Dname::parse_absolute("example.com").unwrap();
        let parsed = crate::zonefile::parse(ZONE, &origin, 3600).expect("zone parses");
        let mut zone = parsed.into_zone(origin).expect("SOA");
        let spec = |countries: &[&str], weight, check: bool| SteeringSpec {
            countries: countries.iter().map(|c| c.to_string()).collect(),
            continents: vec!["EU".into()],
            weight,
            backup: countries.is_empty(),
            check: check.then(|| CheckSpec {
                kind: "tcp".into(),
                port: Some(443),
                ..Default::default()
            }),
        };
        let www: Vec<_> = zone
            .records
            .iter_mut()
            .filter(|r| r.name.to_string().starts_with("www") && r.rtype == Rtype::A)
            .collect();
        let steering = [
            spec(&["ID", "SG"], Some(3), true),
            spec(&["DE"], None, false),
            spec(&[], Some(1), true),
        ];
        for (record, spec) in www.into_iter().zip(steering) {
            record.steering = Some(Box::new(spec.validate("").unwrap()));
        }
        assert_eq!(zone.validate(&|_| String::new()), []);
        zone
    }

    fn image(zone: &ZoneSnapshot) -> Vec<u8> {
        let mut bytes = Vec::new();
        assert!(write(zone, &mut bytes).unwrap());
        bytes
    }

    #[test]
    fn an_image_reads_back_as_the_zone_it_was_written_from() {
        let compiled = ZoneSnapshot::compile(&zone());
        assert!(compiled.nodes.rrsets.iter().any(|r| r.steered.is_some()));
        assert!(!compiled.nodes.extras.is_empty(), "MX and NS additionals");
        let bytes = image(&compiled);
        let read = read(io::Cursor::new(&bytes[..]), bytes.len() as u64).unwrap();
        assert_eq!(format!("{read:?}"), format!("{compiled:?}"));
        // The slot table was read, not rebuilt: the same seed finds every name.
        for index in 0..compiled.nodes.nodes.len() {
            let name = compiled.nodes.at(index).name();
            assert_eq!(read.node(name).map(|n| n.name()), Some(name));
        }
        assert!(read.node(b"\x07missing\x07example\x03com\x00").is_none());
    }

    #[test]
    fn a_zone_with_a_load_balancer_has_no_image() {
        let mut zone = zone();
        super::super::tests::add_load_balancer(&mut zone);
        assert_eq!(zone.validate(&|_| String::new()), []);
        let mut bytes = Vec::new();
        assert!(!write(&ZoneSnapshot::compile(&zone), &mut bytes).unwrap());
        assert!(bytes.is_empty());
    }

    #[test]
    fn a_damaged_or_short_image_is_an_error() {
        let bytes = image(&ZoneSnapshot::compile(&zone()));
        for len in 0..bytes.len() {
            assert!(
                read(io::Cursor::new(&bytes[..len]), len as u64).is_err(),
                "cut at {len}"
            );
        }
        // The length the caller gives bounds every count.
        assert!(read(io::Cursor::new(&bytes[..]), bytes.len() as u64 - 1).is_err());
        assert!(read(io::Cursor::new(&bytes[..]), bytes.len() as u64 + 1).is_err());
        for at in 0..bytes.len() {
            for bit in [0x01, 0x80] {
                let mut damaged = bytes.clone();
                damaged[at] ^= bit;
                assert!(
                    read(io::Cursor::new(&damaged[..]), damaged.len() as u64).is_err(),
                    "bit {bit:#x} of byte {at}"
                );
            }
        }
    }

    /// Found while writing the `image` fuzz target: MX data `0 10 \x05mail\x01 \xc0\x00`
    /// parses as a name (`mail\x01.`, the pointer to the zero byte of the preference), and the
    /// answer path panicked slicing a 192-byte "label" from the pointer. `Rdata::from_wire`
    /// refuses such data now; this checks that an image holding it is refused too.
    #[test]
    fn a_compressed_name_in_record_data_is_refused_even_with_a_good_checksum() {
        let compressed: [(Rtype, &[u8]); 3] = [
            (Rtype::MX, b"\x00\x0a\x05mail\x01\xc0\x00"),
            (Rtype::CNAME, b"\x02\x00b\xc0\x01"),
            (
                Rtype::SOA,
                b"\x01a\x00\x01b\xc0\x02\0\0\0\x07\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0",
            ),
        ];
        for (rtype, wire) in compressed {
            let mut bad = ZoneSnapshot::compile(&zone());
            let mut rrsets = bad.nodes.rrsets.to_vec();
            let at = rrsets.iter().position(|r| r.rtype == Rtype::MX).unwrap();
            rrsets[at].rtype = rtype;
            rrsets[at].rdatas[0] = Rdata::new(wire);
            bad.nodes.rrsets = rrsets.into_boxed_slice();
            let bytes = image(&bad);
            assert!(
                matches!(
                    read(io::Cursor::new(&bytes[..]), bytes.len() as u64),
                    Err(ImageError::Damaged("malformed record data"))
                ),
                "{rtype}"
            );
        }
        // The zone's own, uncompressed data reads.
        let good = ZoneSnapshot::compile(&zone());
        let bytes = image(&good);
        assert!(read(io::Cursor::new(&bytes[..]), bytes.len() as u64).is_ok());
    }

    #[test]
    fn indexes_outside_the_arrays_are_refused_even_with_a_good_checksum() {
        let compiled = ZoneSnapshot::compile(&zone());
        let mut bad = compiled.clone();
        let mut nodes = bad.nodes.nodes.to_vec();
        nodes[1].first_rrset = bad.nodes.rrsets.len() as u32;
        bad.nodes.nodes = nodes.into_boxed_slice();
        let bytes = image(&bad);
        assert!(matches!(
            read(io::Cursor::new(&bytes[..]), bytes.len() as u64),
            Err(ImageError::Damaged("a node points outside the image"))
        ));
        let mut bad = compiled.clone();
        let mut slots = bad.nodes.slots.to_vec();
        *slots.last_mut().unwrap() = 0;
        bad.nodes.slots = slots.into_boxed_slice();
        let bytes = image(&bad);
        assert!(matches!(
            read(io::Cursor::new(&bytes[..]), bytes.len() as u64),
            Err(ImageError::Damaged("the slot table has no end"))
        ));
        let mut bad = compiled;
        let mut slots = bad.nodes.slots.to_vec();
        let used = slots.iter().position(|&s| s != EMPTY).unwrap();
        slots[used] |= 0xffff;
        bad.nodes.slots = slots.into_boxed_slice();
        let bytes = image(&bad);
        assert!(matches!(
            read(io::Cursor::new(&bytes[..]), bytes.len() as u64),
            Err(ImageError::Damaged("a slot points outside the nodes"))
        ));
    }
}
