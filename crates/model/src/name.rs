//! Domain names in wire format: parsing from text relative to an origin, printing, and the
//! case-insensitive comparisons that zone lookups need.

use std::fmt;
use std::str::FromStr;

/// An absolute domain name in uncompressed wire format, case as written.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Dname(Box<[u8]>);

/// Why a name was not accepted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NameError {
    #[error("empty name")]
    Empty,
    #[error("bad name {0:?}: {1}")]
    Syntax(String, String),
}

impl Dname {
    pub fn root() -> Dname {
        Dname(Box::new([0]))
    }

    /// Takes wire bytes that are known to be a valid uncompressed name.
    pub fn from_wire_unchecked(wire: &[u8]) -> Dname {
        Dname(wire.into())
    }

    /// Checks and takes wire bytes (labels ≤ 63, total ≤ 255, ends in the root label).
    pub fn from_wire(wire: &[u8]) -> Option<Dname> {
        if wire_name_len(wire)? != wire.len() {
            return None;
        }
        Some(Dname(wire.into()))
    }

    /// Parses `text`: absolute when it ends in a dot, `@` for the origin, else relative to
    /// `origin`.
    pub fn parse(text: &str, origin: &Dname) -> Result<Dname, NameError> {
        let text = text.trim();
        if text.is_empty() {
            return Err(NameError::Empty);
        }
        if text == "@" {
            return Ok(origin.clone());
        }
        // A dot ends the name only when unescaped: after an even number of backslashes.
        let trailing_backslashes = |s: &str| s.bytes().rev().take_while(|&b| b == b'\\').count();
        if trailing_backslashes(text) % 2 == 1 {
            // The dot appended below would be escaped by it and glued into the last label.
            return Err(NameError::Syntax(
                text.to_string(),
                "it ends in a lone backslash".into(),
            ));
        }
        let absolute = text
            .strip_suffix('.')
            .is_some_and(|rest| trailing_backslashes(rest) % 2 == 0);
        let full = if absolute {
            text.to_string()
        } else if origin.is_root() {
            format!("{text}.")
        } else {
            format!("{text}.{origin}")
        };
        let parsed = domain::base::Name::<Vec<u8>>::from_str(&full)
            .map_err(|e| NameError::Syntax(text.to_string(), e.to_string()))?;
        Ok(Dname(parsed.into_octets().into_boxed_slice()))
    }

    /// Parses an absolute name (a trailing dot is optional).
    pub fn parse_absolute(text: &str) -> Result<Dname, NameError> {
        Dname::parse(text, &Dname::root())
    }

    pub fn as_wire(&self) -> &[u8] {
        &self.0
    }

    /// The wire bytes, without copying.
    pub fn into_wire(self) -> Box<[u8]> {
        self.0
    }

    pub fn is_root(&self) -> bool {
        self.0.len() == 1
    }

    /// The same name in lower case, the form the snapshot indexes by.
    pub fn to_lowercase(&self) -> Dname {
        Dname(self.0.to_ascii_lowercase().into_boxed_slice())
    }

    pub fn label_count(&self) -> usize {
        label_offsets(&self.0).count()
    }

    /// True when `self` equals `other` or lies below it, ignoring case.
    pub fn is_within(&self, other: &Dname) -> bool {
        let (a, b) = (self.as_wire(), other.as_wire());
        if b.len() > a.len() {
            return false;
        }
        let start = a.len() - b.len();
        // The suffix must start on a label boundary.
        label_offsets(a).any(|off| off == start) && a[start..].eq_ignore_ascii_case(b)
    }

    /// The first label is `*`.
    pub fn is_wildcard(&self) -> bool {
        self.0.len() >= 2 && self.0[0] == 1 && self.0[1] == b'*'
    }

    /// The name without its first label; the root has no parent.
    pub fn parent(&self) -> Option<Dname> {
        if self.is_root() {
            return None;
        }
        let skip = 1 + self.0[0] as usize;
        Some(Dname(self.0[skip..].into()))
    }

    pub fn eq_ignore_case(&self, other: &Dname) -> bool {
        self.0.eq_ignore_ascii_case(&other.0)
    }

    /// Text relative to `origin` (`@` for the origin itself), or absolute when outside it.
    pub fn to_relative_string(&self, origin: &Dname) -> String {
        if self.eq_ignore_case(origin) {
            return "@".to_string();
        }
        if self.is_within(origin) && !origin.is_root() {
            let keep = self.0.len() - origin.0.len();
            let mut out = String::new();
            write_labels(&self.0[..keep], &mut out);
            return out;
        }
        self.to_string()
    }
}

/// Offsets of each label start in a wire name, the root label excluded.
pub fn label_offsets(wire: &[u8]) -> impl Iterator<Item = usize> + '_ {
    let mut pos = 0usize;
    std::iter::from_fn(move || {
        let len = *wire.get(pos)? as usize;
        if len == 0 {
            return None;
        }
        let here = pos;
        pos += 1 + len;
        Some(here)
    })
}

/// Length of the uncompressed wire name at the start of `wire`, if it is valid.
pub fn wire_name_len(wire: &[u8]) -> Option<usize> {
    let mut pos = 0usize;
    loop {
        let len = *wire.get(pos)? as usize;
        if len > 63 {
            return None;
        }
        pos += 1 + len;
        if pos > 255 {
            return None;
        }
        if len == 0 {
            return Some(pos);
        }
    }
}

fn write_labels(wire: &[u8], out: &mut String) {
    let mut pos = 0;
    while pos < wire.len() && wire[pos] != 0 {
        let len = wire[pos] as usize;
        if pos > 0 {
            out.push('.');
        }
        for &b in &wire[pos + 1..pos + 1 + len] {
            match b {
                b'.' | b'\\' | b'(' | b')' | b';' | b'"' | b'@' | b'$' => {
                    out.push('\\');
                    out.push(b as char);
                }
                0x21..=0x7e => out.push(b as char),
                _ => out.push_str(&format!("\\{b:03}")),
            }
        }
        pos += 1 + len;
    }
}

impl fmt::Display for Dname {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_root() {
            return f.write_str(".");
        }
        let mut out = String::new();
        write_labels(&self.0, &mut out);
        out.push('.');
        f.write_str(&out)
    }
}

impl fmt::Debug for Dname {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Dname({self})")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_relative_absolute_and_origin() {
        let origin = Dname::parse_absolute("example.com").unwrap();
        assert_eq!(
            Dname::parse("www", &origin).unwrap().to_string(),
            "www.example.com."
        );
        assert_eq!(
            Dname::parse("@", &origin).unwrap().to_string(),
            "example.com."
        );
        assert_eq!(Dname::parse("a.b.", &origin).unwrap().to_string(), "a.b.");
        let www = Dname::parse("WWW", &origin).unwrap();
        assert!(www.is_within(&origin));
        assert_eq!(www.to_relative_string(&origin), "WWW");
        let other = Dname::parse_absolute("notexample.com").unwrap();
        assert!(!other.is_within(&origin));
        assert!(Dname::parse("a..b", &origin).is_err());
    }

    #[test]
    fn escapes_round_trip() {
        let origin = Dname::root();
        let name = Dname::parse("a\\.b.c\\032d.", &origin).unwrap();
        assert_eq!(name.label_count(), 2);
        assert_eq!(name.to_string(), "a\\.b.c\\032d.");
        assert_eq!(Dname::parse(&name.to_string(), &origin).unwrap(), name);
    }

    /// A trailing lone backslash used to escape the dot appended to make the name absolute:
    /// `a\` became the one-label zone `a\..`, and `www\` in example.com the name
    /// `www\.example.com.` outside it.
    #[test]
    fn a_trailing_backslash_is_refused_and_an_escaped_one_ends_a_name() {
        let origin = Dname::parse_absolute("example.com").unwrap();
        for text in ["a\\", "www\\", "a\\\\\\", "\\"] {
            let error = Dname::parse(text, &origin).unwrap_err().to_string();
            assert!(error.contains("lone backslash"), "{text}: {error}");
            assert!(Dname::parse_absolute(text).is_err(), "{text}");
        }
        // An escaped backslash before the final dot: absolute, one label `a\`.
        let name = Dname::parse("a\\\\.", &origin).unwrap();
        assert_eq!(
            (name.label_count(), name.to_string().as_str()),
            (1, "a\\\\.")
        );
        // An escaped backslash at the end of a relative name.
        let name = Dname::parse("a\\\\", &origin).unwrap();
        assert_eq!(name.to_string(), "a\\\\.example.com.");
        // An escaped dot at the end: still relative.
        let name = Dname::parse("a\\.", &origin).unwrap();
        assert_eq!(name.to_string(), "a\\..example.com.");
    }
}
