//! Saved images of compiled zones, one file per zone under `<data dir>/images`, so that a
//! restart reads each zone back instead of reading its records and compiling them again.
//!
//! An image is used only when it was written by this very binary, for the same zone id, at the
//! zone's current revision in the store (which the store changes with every write to what the
//! zone compiles from, whoever writes it). Anything else (another build, a stale or damaged
//! file) falls back to the store, so an image can make a start faster but never change what
//! is answered.

use std::collections::{HashMap, HashSet};
use std::io::{Read, Write};
use std::path::PathBuf;

use model::{Dname, ZoneSnapshot};

const MAGIC: &[u8; 16] = b"dnz zone image 1";

/// A zone read back from its image, with what the manager keeps besides.
#[derive(Debug)]
pub struct Loaded {
    pub zone: ZoneSnapshot,
    pub record_count: usize,
    pub steered: bool,
}

/// What an image says about itself, ahead of the zone.
struct Header {
    zone_id: i64,
    revision: i64,
    record_count: u64,
    steered: bool,
}

pub struct Images {
    dir: PathBuf,
    /// This binary: the linker's build ID (a hash of its contents), else its version, size and
    /// modification time. A rebuilt or upgraded binary may compile differently, so it does not
    /// trust images written by another.
    build: Vec<u8>,
    /// The revision each zone's image was last written or read at; held through a save, so
    /// saves never overlap.
    pub(crate) saved: tokio::sync::Mutex<HashMap<i64, i64>>,
}

impl Images {
    /// Images under `dir`, created if missing.
    pub fn open(dir: PathBuf) -> std::io::Result<Images> {
        std::fs::create_dir_all(&dir)?;
        let exe = std::env::current_exe()?;
        let build = match elf_build_id(&exe) {
            Some(id) => [b"gnu-build-id ".as_slice(), &id].concat(),
            None => {
                // Without a linker build ID: the version, size and mtime of the binary.
                let meta = std::fs::metadata(&exe)?;
                let modified = meta
                    .modified()?
                    .duration_since(std::time::UNIX_EPOCH)
                    .unwrap_or_default();
                format!(
                    "{} {} {}",
                    env!("CARGO_PKG_VERSION"),
                    meta.len(),
                    modified.as_nanos()
                )
                .into_bytes()
            }
        };
        Ok(Images {
            dir,
            build,
            saved: Default::default(),
        })
    }

    fn path(&self, zone_id: i64) -> PathBuf {
        self.dir.join(format!("zone-{zone_id}.image"))
    }

    fn header(&self, header: &Header) -> Vec<u8> {
        let mut bytes = MAGIC.to_vec();
        bytes.extend((self.build.len() as u16).to_le_bytes());
        bytes.extend(&self.build);
        bytes.extend(header.zone_id.to_le_bytes());
        bytes.extend(header.revision.to_le_bytes());
        bytes.extend(header.record_count.to_le_bytes());
        bytes.push(header.steered as u8);
        let crc = crc32fast::hash(&bytes);
        bytes.extend(crc.to_le_bytes());
        bytes
    }

    /// Zone `zone_id` at `revision` from its image. `Ok(None)` when there is no current image
    /// of this build; `Err` names what is wrong with one that should have been.
    pub fn read(
        &self,
        zone_id: i64,
        revision: i64,
        apex: &Dname,
    ) -> Result<Option<Loaded>, String> {
        let path = self.path(zone_id);
        let mut file = match std::fs::File::open(&path) {
            Ok(file) => file,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(format!("{}: {e}", path.display())),
        };
        let len = file
            .metadata()
            .map_err(|e| format!("{}: {e}", path.display()))?
            .len();
        // Magic, build, zone id and revision must be this build's and the zone's current ones;
        // then come the record count and the steering flag, and the header's CRC over it all.
        let prefix = self.header(&Header {
            zone_id,
            revision,
            record_count: 0,
            steered: false,
        });
        let mut found = vec![0u8; prefix.len()];
        if len < prefix.len() as u64 || file.read_exact(&mut found).is_err() {
            return Ok(None);
        }
        let fixed = prefix.len() - 13;
        if found[..fixed] != prefix[..fixed] {
            return Ok(None);
        }
        let (fields, crc) = found.split_at(prefix.len() - 4);
        if crc32fast::hash(fields).to_le_bytes() != crc || fields[fixed + 8] > 1 {
            return Err(format!("{}: the header is damaged", path.display()));
        }
        let record_count = u64::from_le_bytes(fields[fixed..fixed + 8].try_into().unwrap());
        let steered = fields[fixed + 8] == 1;
        let zone = model::snapshot::image::read(file, len - prefix.len() as u64)
            .map_err(|e| format!("{}: {e}", path.display()))?;
        if zone.apex != apex.to_lowercase() {
            return Err(format!("{}: the image is of {}", path.display(), zone.apex));
        }
        Ok(Some(Loaded {
            zone,
            record_count: record_count as usize,
            steered,
        }))
    }

    /// Writes zone `zone_id`'s image at `revision` (through a new file renamed into place, so
    /// a crash leaves the old image or the new one). A zone that has no image (one with load
    /// balancers) loses any old one.
    pub fn write(
        &self,
        zone_id: i64,
        revision: i64,
        record_count: usize,
        steered: bool,
        zone: &ZoneSnapshot,
    ) -> std::io::Result<()> {
        let path = self.path(zone_id);
        let partial = path.with_extension("partial");
        let header = self.header(&Header {
            zone_id,
            revision,
            record_count: record_count as u64,
            steered,
        });
        let written = std::fs::File::create(&partial).and_then(|mut file| {
            file.write_all(&header)?;
            model::snapshot::image::write(zone, &mut file)
        });
        match written {
            Ok(true) => std::fs::rename(&partial, &path),
            Ok(false) => {
                let _ = std::fs::remove_file(&partial);
                match std::fs::remove_file(&path) {
                    Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
                    _ => Ok(()),
                }
            }
            // A full disk leaves no partial file behind; the old image, if any, stays stale
            // and unused.
            Err(e) => {
                let _ = std::fs::remove_file(&partial);
                Err(e)
            }
        }
    }

    /// Removes the images of zones that are gone.
    pub fn retain(&self, zone_ids: &HashSet<i64>) {
        let Ok(entries) = std::fs::read_dir(&self.dir) else {
            return;
        };
        for entry in entries.flatten() {
            let name = entry.file_name();
            let id = name
                .to_str()
                .and_then(|n| n.strip_prefix("zone-"))
                .and_then(|n| n.split('.').next())
                .and_then(|n| n.parse::<i64>().ok());
            if id.is_some_and(|id| !zone_ids.contains(&id)) {
                let _ = std::fs::remove_file(entry.path());
            }
        }
    }
}

/// The GNU build ID note of a 64-bit little-endian ELF file: the linker's hash of the binary.
fn elf_build_id(path: &std::path::Path) -> Option<Vec<u8>> {
    use std::io::{Seek, SeekFrom};
    const PT_NOTE: u32 = 4;
    const NT_GNU_BUILD_ID: u32 = 3;
    let mut file = std::fs::File::open(path).ok()?;
    let mut header = [0u8; 64];
    file.read_exact(&mut header).ok()?;
    if header[..4] != *b"\x7fELF" || header[4] != 2 || header[5] != 1 {
        return None;
    }
    let u16_at = |b: &[u8], at: usize| u16::from_le_bytes([b[at], b[at + 1]]);
    let u32_at = |b: &[u8], at: usize| u32::from_le_bytes(b[at..at + 4].try_into().unwrap());
    let u64_at = |b: &[u8], at: usize| u64::from_le_bytes(b[at..at + 8].try_into().unwrap());
    let (phoff, phentsize, phnum) = (
        u64_at(&header, 0x20),
        u16_at(&header, 0x36) as usize,
        u16_at(&header, 0x38) as usize,
    );
    if phentsize < 56 || phnum > 256 {
        return None;
    }
    let mut table = vec![0u8; phentsize * phnum];
    file.seek(SeekFrom::Start(phoff)).ok()?;
    file.read_exact(&mut table).ok()?;
    for entry in table.chunks_exact(phentsize) {
        let (offset, size) = (u64_at(entry, 8), u64_at(entry, 32));
        if u32_at(entry, 0) != PT_NOTE || size > 1 << 16 {
            continue;
        }
        let mut notes = vec![0u8; size as usize];
        file.seek(SeekFrom::Start(offset)).ok()?;
        file.read_exact(&mut notes).ok()?;
        let mut at = 0;
        while at + 12 <= notes.len() {
            let name_len = u32_at(&notes, at) as usize;
            let desc_len = u32_at(&notes, at + 4) as usize;
            let kind = u32_at(&notes, at + 8);
            let name = at + 12;
            let desc = name + name_len.next_multiple_of(4);
            let end = desc.checked_add(desc_len.next_multiple_of(4))?;
            if end > notes.len() {
                break;
            }
            if kind == NT_GNU_BUILD_ID && notes[name..name + name_len] == *b"GNU\0" {
                return Some(notes[desc..desc + desc_len].to_vec());
            }
            at = end;
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn zone() -> ZoneSnapshot {
        let apex = Dname::parse_absolute("unit.test").unwrap();
        let text = "@ 300 IN SOA ns1 host 1 2 3 4 5\n@ 300 IN NS ns1\nns1 300 IN A 192.0.2.1\n";
        let parsed = model::zonefile::parse(text, &apex, 300).unwrap();
        ZoneSnapshot::compile(&parsed.into_zone(apex).unwrap())
    }

    fn images(dir: &std::path::Path, build: &str) -> Images {
        Images {
            dir: dir.to_path_buf(),
            build: build.as_bytes().to_vec(),
            saved: Default::default(),
        }
    }

    #[test]
    fn the_build_is_the_linker_build_id() {
        let exe = std::env::current_exe().unwrap();
        let id = elf_build_id(&exe).expect("the test binary has a build ID");
        assert!(id.len() >= 8, "{id:?}");
        let readelf = std::process::Command::new("readelf")
            .arg("-n")
            .arg(&exe)
            .output();
        if let Ok(out) = readelf {
            let text = String::from_utf8_lossy(&out.stdout);
            let hex: String = id.iter().map(|b| format!("{b:02x}")).collect();
            assert!(
                text.contains(&format!("Build ID: {hex}")),
                "{hex} not in {text}"
            );
        }
        assert_eq!(elf_build_id(std::path::Path::new("/etc/hostname")), None);
    }

    #[test]
    fn only_this_build_zone_and_revision_read_an_image() {
        let dir = tempfile::tempdir().unwrap();
        let apex = Dname::parse_absolute("unit.test").unwrap();
        let ours = images(dir.path(), "0.1.0 1 2");
        ours.write(7, 41, 3, true, &zone()).unwrap();
        let loaded = ours.read(7, 41, &apex).unwrap().expect("read back");
        assert_eq!((loaded.record_count, loaded.steered), (3, true));
        assert!(loaded.zone.node(b"\x03ns1\x04unit\x04test\x00").is_some());
        assert!(
            ours.read(7, 42, &apex).unwrap().is_none(),
            "another revision"
        );
        assert!(
            ours.read(8, 41, &apex).unwrap().is_none(),
            "another zone id"
        );
        let rebuilt = images(dir.path(), "0.1.0 1 3");
        assert!(
            rebuilt.read(7, 41, &apex).unwrap().is_none(),
            "another build"
        );
        let other = Dname::parse_absolute("other.test").unwrap();
        assert!(
            ours.read(7, 41, &other)
                .unwrap_err()
                .contains("the image is of unit.test")
        );
        // The header's count and flag are covered by its checksum.
        let path = dir.path().join("zone-7.image");
        let mut bytes = std::fs::read(&path).unwrap();
        let flag = MAGIC.len() + 2 + "0.1.0 1 2".len() + 24;
        bytes[flag] = 0;
        std::fs::write(&path, &bytes).unwrap();
        assert!(
            ours.read(7, 41, &apex)
                .unwrap_err()
                .contains("header is damaged")
        );
        ours.retain(&HashSet::new());
        assert!(!path.exists());
    }
}
