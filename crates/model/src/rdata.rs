//! Record data: parsed from presentation text (RFC 1035 §5.1 and RFC 3597 generic form) into
//! uncompressed wire bytes, validated by parsing those bytes back, and printed again.

use std::fmt::Write as _;

use bytes::Bytes;
use domain::base::ParseRecordData;
use domain::base::name::{Name, ParsedName};
use domain::base::rdata::ComposeRecordData;
use domain::base::zonefile_fmt::{DisplayKind, ZonefileFmt};
use domain::rdata::ZoneRecordData;
use domain::zonefile::inplace::{Entry, Zonefile};
use octseq_parser::Parser;

pub use domain::base::iana::Rtype;

use crate::name::{Dname, wire_name_len};

// domain re-exports octseq's parser under its own path.
mod octseq_parser {
    pub use domain::dep::octseq::Parser;
}

/// Rdata in uncompressed wire format, case as written.
///
/// Short data (an A or AAAA address, most MX and TXT) is held inline: a zone of a million
/// addresses keeps two copies of each (the records and the answer snapshot), and a boxed
/// four-byte slice costs a 32-byte heap block on top of its pointer.
#[derive(Clone)]
pub struct Rdata(Repr);

/// Bytes held without a heap block; 22 keeps `Rdata` at 24 bytes.
const INLINE: usize = 22;

#[derive(Clone)]
enum Repr {
    Inline { len: u8, bytes: [u8; INLINE] },
    Heap(Box<[u8]>),
}

impl Rdata {
    pub fn new(wire: &[u8]) -> Rdata {
        if wire.len() <= INLINE {
            let mut bytes = [0u8; INLINE];
            bytes[..wire.len()].copy_from_slice(wire);
            Rdata(Repr::Inline {
                len: wire.len() as u8,
                bytes,
            })
        } else {
            Rdata(Repr::Heap(wire.into()))
        }
    }
}

impl PartialEq for Rdata {
    fn eq(&self, other: &Rdata) -> bool {
        self.as_wire() == other.as_wire()
    }
}

impl Eq for Rdata {}

impl std::hash::Hash for Rdata {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.as_wire().hash(state);
    }
}

impl PartialOrd for Rdata {
    fn partial_cmp(&self, other: &Rdata) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Rdata {
    fn cmp(&self, other: &Rdata) -> std::cmp::Ordering {
        self.as_wire().cmp(other.as_wire())
    }
}

impl std::fmt::Debug for Rdata {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Rdata({})", hex(self.as_wire()))
    }
}

/// Why rdata was not accepted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RdataError {
    #[error("unknown record type {0:?}")]
    UnknownType(String),
    #[error("type {0} cannot be stored as a record")]
    TypeNotAllowed(String),
    #[error("bad {rtype} data {value:?}: {reason}")]
    Malformed {
        rtype: String,
        value: String,
        reason: String,
    },
}

/// Parses a type mnemonic or `TYPEnnn`.
pub fn parse_rtype(text: &str) -> Result<Rtype, RdataError> {
    text.trim()
        .to_ascii_uppercase()
        .parse::<Rtype>()
        .map_err(|_| RdataError::UnknownType(text.to_string()))
}

/// Types that the server makes itself or that are not data.
pub fn rtype_allowed(rtype: Rtype) -> bool {
    !matches!(
        rtype,
        Rtype::SOA
            | Rtype::OPT
            | Rtype::TSIG
            | Rtype::TKEY
            | Rtype::AXFR
            | Rtype::IXFR
            | Rtype::ANY
            | Rtype::RRSIG
            | Rtype::NSEC
            | Rtype::NSEC3
            | Rtype::NSEC3PARAM
    ) && rtype.to_int() != 0
        && !(128..=255).contains(&rtype.to_int())
}

impl Rdata {
    /// Parses presentation-format rdata of `rtype`; relative names are completed with `origin`.
    pub fn parse(rtype: Rtype, text: &str, origin: &Dname) -> Result<Rdata, RdataError> {
        let malformed = |reason: String| RdataError::Malformed {
            rtype: rtype.to_string(),
            value: text.to_string(),
            reason,
        };
        if text.contains(['\n', '\r']) {
            return Err(malformed("line breaks are not allowed".into()));
        }
        let origin_name = Name::<Bytes>::from_octets(Bytes::copy_from_slice(origin.as_wire()))
            .map_err(|e| malformed(e.to_string()))?;
        let mut zonefile = Zonefile::new();
        zonefile.set_origin(origin_name);
        zonefile.extend_from_slice(format!("@ 0 IN {rtype} {text}\n").as_bytes());
        let record = match zonefile.next_entry() {
            Ok(Some(Entry::Record(record))) => record,
            Ok(_) => return Err(malformed("no data".into())),
            Err(e) => return Err(malformed(strip_position(&e.to_string()))),
        };
        if !matches!(zonefile.next_entry(), Ok(None)) {
            return Err(malformed("unexpected text after the data".into()));
        }
        let mut wire = Vec::new();
        use domain::base::rdata::ComposeRecordData;
        record
            .data()
            .compose_rdata(&mut wire)
            .map_err(|_| malformed("data too long".into()))?;
        let rdata = Rdata::new(&wire);
        // Generic `\#` data of a known type must still be valid data of that type.
        rdata.validate(rtype).map_err(malformed)?;
        Ok(rdata)
    }

    /// Takes wire rdata (from the store or a zone transfer) after checking it parses.
    pub fn from_wire(rtype: Rtype, wire: &[u8]) -> Result<Rdata, RdataError> {
        let rdata = Rdata::new(wire);
        rdata
            .validate(rtype)
            .map_err(|reason| RdataError::Malformed {
                rtype: rtype.to_string(),
                value: hex(wire),
                reason,
            })?;
        Ok(rdata)
    }

    fn validate(&self, rtype: Rtype) -> Result<(), String> {
        if self.as_wire().len() > 65535 {
            return Err("data longer than 65535 bytes".into());
        }
        let mut parser = Parser::from_ref(self.as_wire());
        match ZoneRecordData::<&[u8], ParsedName<&[u8]>>::parse_rdata(rtype, &mut parser) {
            Ok(Some(_)) if parser.remaining() != 0 => Err("trailing bytes".into()),
            // No names in these: nothing to write back (and most records are of them).
            Ok(Some(_)) if matches!(rtype, Rtype::A | Rtype::AAAA | Rtype::TXT) => Ok(()),
            // The parser follows compression pointers, as in a message; in record data on its
            // own a pointer has nothing to point at (it would point into the data itself), and
            // the answer path reads names here label by label. Written back, every name comes
            // out uncompressed, so data that does not come back the same held a pointer.
            Ok(Some(data)) => {
                let mut again = Vec::with_capacity(self.as_wire().len());
                data.compose_rdata(&mut again)
                    .map_err(|_| "data too long".to_string())?;
                if again == self.as_wire() {
                    Ok(())
                } else {
                    Err("compressed name".into())
                }
            }
            Ok(None) => Err("not record data".into()),
            Err(e) => Err(e.to_string()),
        }
    }

    pub fn as_wire(&self) -> &[u8] {
        match &self.0 {
            Repr::Inline { len, bytes } => &bytes[..*len as usize],
            Repr::Heap(bytes) => bytes,
        }
    }

    /// Presentation text with absolute names, which parses back to the same data.
    pub fn to_text(&self, rtype: Rtype) -> String {
        let mut parser = Parser::from_ref(self.as_wire());
        match ZoneRecordData::<&[u8], ParsedName<&[u8]>>::parse_rdata(rtype, &mut parser) {
            Ok(Some(ZoneRecordData::Unknown(_))) | Ok(None) | Err(_) => self.generic_text(),
            Ok(Some(data)) => {
                let text = data.display_zonefile(DisplayKind::Simple).to_string();
                // `domain` prints some data in a form its own parser reads otherwise or refuses:
                // a `"`, `(`, `)` or `;` in a name goes out unescaped, SVCB's no-default-alpn
                // key as `nodefaultalpn`, and empty TXT data (which it reads from the wire, and
                // so from `\# 0`) as nothing (found by fuzzing zone files). Such text is parsed
                // back, and the generic form, which always is, printed when it does not.
                let risky = matches!(rtype, Rtype::SVCB | Rtype::HTTPS)
                    || self.as_wire().is_empty()
                    || (!matches!(rtype, Rtype::A | Rtype::AAAA)
                        && self
                            .as_wire()
                            .iter()
                            .any(|b| matches!(b, b'"' | b'(' | b')' | b';')));
                if !risky
                    || Rdata::parse(rtype, &text, &Dname::root()).is_ok_and(|again| again == *self)
                {
                    text
                } else {
                    self.generic_text()
                }
            }
        }
    }

    /// RFC 3597 §5 generic form.
    pub fn generic_text(&self) -> String {
        let wire = self.as_wire();
        if wire.is_empty() {
            return "\\# 0".into();
        }
        format!("\\# {} {}", wire.len(), hex(wire))
    }

    /// The domain name this rdata points at, for the types whose targets get additional
    /// section processing or chain following (RFC 1034 §3.6.2, RFC 1035 §3.3).
    pub fn target(&self, rtype: Rtype) -> Option<Dname> {
        let offset = match rtype {
            Rtype::CNAME | Rtype::NS | Rtype::PTR | Rtype::DNAME => 0,
            Rtype::MX => 2,
            Rtype::SRV => 6,
            _ => return None,
        };
        let rest = self.as_wire().get(offset..)?;
        let len = wire_name_len(rest)?;
        Dname::from_wire(&rest[..len])
    }
}

/// Lower-case hex without separators.
pub fn hex(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        let _ = write!(out, "{b:02x}");
    }
    out
}

/// The parser reports `line:col: reason` for its own one-line input; only the reason helps.
fn strip_position(message: &str) -> String {
    let mut parts = message.splitn(3, ':');
    match (parts.next(), parts.next(), parts.next()) {
        (Some(a), Some(b), Some(rest))
            if a.chars().all(|c| c.is_ascii_digit()) && b.chars().all(|c| c.is_ascii_digit()) =>
        {
            rest.trim().to_string()
        }
        _ => message.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use expect_test::{Expect, expect};

    fn check(rtype: &str, text: &str, expect: Expect) {
        let origin = Dname::parse_absolute("example.com").unwrap();
        let rtype = parse_rtype(rtype).unwrap();
        let actual = match Rdata::parse(rtype, text, &origin) {
            Ok(rdata) => format!("{} | {}", rdata.to_text(rtype), hex(rdata.as_wire())),
            Err(e) => format!("error: {e}"),
        };
        expect.assert_eq(&actual);
    }

    #[test]
    fn parses_common_types() {
        check("A", "192.0.2.1", expect!["192.0.2.1 | c0000201"]);
        check(
            "AAAA",
            "2001:db8::1",
            expect!["2001:db8::1 | 20010db8000000000000000000000001"],
        );
        check(
            "MX",
            "10 mail",
            expect!["10 mail.example.com. | 000a046d61696c076578616d706c6503636f6d00"],
        );
        check(
            "TXT",
            "\"hello world\" x",
            expect![[r#""hello world" "x" | 0b68656c6c6f20776f726c640178"#]],
        );
        check(
            "CAA",
            "0 issue \"letsencrypt.org\"",
            expect![[
                r#"0 issue "letsencrypt.org" | 000569737375656c657473656e63727970742e6f7267"#
            ]],
        );
        check(
            "SRV",
            "0 5 5060 sip",
            expect!["0 5 5060 sip.example.com. | 0000000513c403736970076578616d706c6503636f6d00"],
        );
    }

    /// Names in stored or transferred data must be whole: a pointer would be followed by the
    /// parser but read as a label by the answer path (found by fuzzing the zone image).
    #[test]
    fn a_compressed_name_in_wire_data_is_refused() {
        let compressed: [(Rtype, &[u8]); 4] = [
            // preference 10, "mail", then a label of length 1 and a pointer to offset 0
            (Rtype::MX, b"\x00\x0a\x05mail\x01\xc0\x00"),
            // a label "\0b", then a pointer to its zero byte
            (Rtype::CNAME, b"\x02\x00b\xc0\x01"),
            (Rtype::NS, b"\x02\x00b\xc0\x01"),
            (
                Rtype::SOA,
                b"\x01a\x00\x01b\xc0\x02\0\0\0\x07\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0",
            ),
        ];
        for (rtype, wire) in compressed {
            let err = Rdata::from_wire(rtype, wire).map(|_| ()).unwrap_err();
            assert!(
                err.to_string().contains("compressed name"),
                "{rtype}: {err}"
            );
        }
        // The same names whole, in any case, and data of other types come back as they went in.
        for (rtype, text) in [
            ("MX", "10 Mail.Example.com."),
            ("SOA", "ns1 hostmaster 7 3600 600 86400 300"),
            ("SRV", "0 5 5060 sip"),
            ("TXT", "\"a\" \"b c\""),
            ("CAA", "0 issue \"ca.example\""),
            ("HTTPS", "1 . alpn=h2,h3 port=8443"),
            ("TYPE65534", "\\# 3 010203"),
        ] {
            let rtype = parse_rtype(rtype).unwrap();
            let origin = Dname::parse_absolute("example.com").unwrap();
            let rdata = Rdata::parse(rtype, text, &origin).unwrap();
            assert!(
                Rdata::from_wire(rtype, rdata.as_wire()).is_ok(),
                "{rtype} {text}"
            );
        }
    }

    #[test]
    fn generic_form() {
        check(
            "TYPE65534",
            "\\# 4 0a000001",
            expect!["\\# 4 0a000001 | 0a000001"],
        );
        check("A", "\\# 4 0a000001", expect!["10.0.0.1 | 0a000001"]);
        check(
            "A",
            "\\# 3 0a0000",
            expect![[r#"error: bad A data "\\# 3 0a0000": unexpected end of input"#]],
        );
    }

    #[test]
    fn rejects_bad_data() {
        check(
            "A",
            "300.1.1.1",
            expect![[r#"error: bad A data "300.1.1.1": expected IPv4 address"#]],
        );
        check(
            "A",
            "1.2.3.4 5.6.7.8",
            expect![[r#"error: bad A data "1.2.3.4 5.6.7.8": trailing tokens"#]],
        );
        check(
            "MX",
            "mail",
            expect![[r#"error: bad MX data "mail": expected decimal number"#]],
        );
    }

    /// What `to_text` prints must parse back to the same data, or an export cannot be imported.
    /// `domain` prints a `"`, `(`, `)` or `;` in a name unescaped, no-default-alpn as
    /// `nodefaultalpn` and empty TXT data as nothing, which it does not read back (found by
    /// fuzzing zone files): such data comes out in the generic form.
    #[test]
    fn text_parses_back_to_the_same_data() {
        check(
            "SVCB",
            "1 svc.example.net. alpn=h2 no-default-alpn",
            expect![[
                r#"\# 30 000103737663076578616d706c65036e6574000001000302683200020000 | 000103737663076578616d706c65036e6574000001000302683200020000"#
            ]],
        );
        check(
            "NS",
            "ns\\\"1.example.net.",
            expect![[
                r#"\# 18 046e732231076578616d706c65036e657400 | 046e732231076578616d706c65036e657400"#
            ]],
        );
        check(
            "MX",
            "10 a\\;b",
            expect![[
                r#"\# 19 000a03613b62076578616d706c6503636f6d00 | 000a03613b62076578616d706c6503636f6d00"#
            ]],
        );
        check(
            "CNAME",
            "\\(x\\).example.net.",
            expect![[
                r#"\# 17 03287829076578616d706c65036e657400 | 03287829076578616d706c65036e657400"#
            ]],
        );
        check("TXT", "\\# 0", expect![[r#"\# 0 | "#]]);
        // Unaffected: quotes and the like in strings are escaped.
        check(
            "TXT",
            "\"a\\\"b;(c)\"",
            expect![[r#""a\"b;(c)" | 076122623b286329"#]],
        );
        check(
            "HTTPS",
            "1 . alpn=h2,h3 port=8443",
            expect!["1 . alpn=h2,h3 port=8443 | 000100000100060268320268330003000220fb"],
        );
        let origin = Dname::parse_absolute("example.com").unwrap();
        for (rtype, text) in [
            ("SVCB", "1 svc.example.net. alpn=h2 no-default-alpn"),
            ("NS", "ns\\\"1.example.net."),
            ("MX", "10 a\\;b"),
            ("SOA", "a\\(b c\\)d 1 2 3 4 5"),
            ("TXT", "\"a\\\"b;(c)\""),
            ("TXT", "\\# 0"),
        ] {
            let rtype = parse_rtype(rtype).unwrap();
            let rdata = Rdata::parse(rtype, text, &origin).unwrap();
            let again = Rdata::parse(rtype, &rdata.to_text(rtype), &origin).unwrap();
            assert_eq!(again, rdata, "{rtype} {text}");
        }
    }

    #[test]
    fn targets() {
        let origin = Dname::parse_absolute("example.com").unwrap();
        let mx = Rdata::parse(Rtype::MX, "10 mail", &origin).unwrap();
        assert_eq!(
            mx.target(Rtype::MX).unwrap().to_string(),
            "mail.example.com."
        );
    }
}
