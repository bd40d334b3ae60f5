//! RFC 1035 §5 zone files: import (every bad line reported, nothing taken on any error) and
//! export.
//!
//! The file is split into entries here (parentheses, quotes, comments, escapes, `$` directives,
//! blank owners), so that one bad entry is reported with its line and the rest are still
//! checked; each entry's own syntax is then parsed by `domain`'s scanner.

use bytes::Bytes;
use domain::base::iana::Class;
use domain::base::name::{Name, ToName};
use domain::base::rdata::ComposeRecordData;
use domain::zonefile::inplace::{Entry, Zonefile};

use crate::name::Dname;
use crate::rdata::{Rdata, Rtype};
use crate::zone::{FieldError, RecordConfig, Soa, ZoneConfig};

/// What a zone file holds.
#[derive(Debug, Clone)]
pub struct ParsedZoneFile {
    /// The SOA and its TTL, when the file has one.
    pub soa: Option<(Soa, u32)>,
    pub records: Vec<RecordConfig>,
    /// The line each record started on.
    pub lines: Vec<usize>,
}

impl ParsedZoneFile {
    /// The zone the file describes, when it has an SOA: id 1, no pools or load balancers. For
    /// tests and benches that start from zone file text.
    pub fn into_zone(self, origin: Dname) -> Option<ZoneConfig> {
        let (soa, default_ttl) = self.soa?;
        Some(ZoneConfig {
            id: 1,
            name: origin,
            soa,
            default_ttl,
            records: self.records,
            pools: Vec::new(),
            load_balancers: Vec::new(),
        })
    }
}

struct RawEntry {
    line: usize,
    text: String,
}

/// Splits zone file text into logical entries: comments dropped, parenthesised groups joined.
fn split_entries(text: &str) -> Result<Vec<RawEntry>, Vec<FieldError>> {
    let mut entries = Vec::new();
    let mut errors = Vec::new();
    let mut current = String::new();
    let mut start_line = 1;
    let mut line = 1;
    let mut depth = 0usize;
    let mut in_quotes = false;
    let mut chars = text.chars().peekable();
    let mut in_comment = false;
    while let Some(c) = chars.next() {
        if in_comment {
            if c == '\n' {
                in_comment = false;
            } else {
                continue;
            }
        }
        match c {
            '\\' if !in_comment => {
                current.push(c);
                if let Some(next) = chars.next() {
                    if next == '\n' {
                        line += 1;
                    }
                    current.push(next);
                }
                continue;
            }
            '"' => in_quotes = !in_quotes,
            ';' if !in_quotes => {
                in_comment = true;
                continue;
            }
            '(' if !in_quotes => depth += 1,
            ')' if !in_quotes => {
                if depth == 0 {
                    errors.push(FieldError::new(format!("line {line}"), "unbalanced ')'"));
                } else {
                    depth -= 1;
                }
            }
            '\n' => {
                line += 1;
                if depth == 0 && !in_quotes {
                    if !current.trim().is_empty() {
                        entries.push(RawEntry {
                            line: start_line,
                            text: std::mem::take(&mut current),
                        });
                    }
                    current.clear();
                    start_line = line;
                    continue;
                }
                if in_quotes {
                    errors.push(FieldError::new(
                        format!("line {}", line - 1),
                        "line break inside quotes",
                    ));
                    in_quotes = false;
                }
                current.push(' ');
                continue;
            }
            _ => {}
        }
        current.push(c);
    }
    if depth > 0 || in_quotes {
        errors.push(FieldError::new(
            format!("line {start_line}"),
            "unbalanced '(' or quote at end of file",
        ));
    } else if !current.trim().is_empty() {
        entries.push(RawEntry {
            line: start_line,
            text: current,
        });
    }
    if errors.is_empty() {
        Ok(entries)
    } else {
        Err(errors)
    }
}

/// Parses a TTL in seconds or with BIND units (`1h30m`, `2d`).
fn parse_ttl(text: &str) -> Option<u32> {
    if let Ok(n) = text.parse::<u32>() {
        return Some(n);
    }
    let mut total: u64 = 0;
    let mut number: Option<u64> = None;
    for c in text.chars() {
        if let Some(d) = c.to_digit(10) {
            number = Some(number.unwrap_or(0) * 10 + d as u64);
            if number? > u32::MAX as u64 {
                return None;
            }
            continue;
        }
        let unit = match c.to_ascii_lowercase() {
            's' => 1,
            'm' => 60,
            'h' => 3600,
            'd' => 86400,
            'w' => 604800,
            _ => return None,
        };
        // Each term fits in a u64, but enough of them would wrap (or panic in a debug build).
        total += number.take()? * unit;
        if total > u64::from(u32::MAX) {
            return None;
        }
    }
    if number.is_some() {
        return None;
    }
    u32::try_from(total).ok()
}

fn name_to_dname(name: &impl ToName) -> Dname {
    Dname::from_wire_unchecked(name.to_vec().as_slice())
}

/// Parses a whole zone file for `origin`. On any error, returns every error found, each naming
/// its line; nothing partial is returned.
pub fn parse(
    text: &str,
    origin: &Dname,
    default_ttl: u32,
) -> Result<ParsedZoneFile, Vec<FieldError>> {
    let entries = split_entries(text)?;
    let mut errors = Vec::new();
    let mut out = ParsedZoneFile {
        soa: None,
        records: Vec::new(),
        lines: Vec::new(),
    };
    let mut current_origin = origin.clone();
    let mut dollar_ttl: Option<u32> = None;
    let mut last_ttl = default_ttl;
    let mut last_owner: Option<Dname> = None;
    for entry in entries {
        let at = format!("line {}", entry.line);
        let trimmed = entry.text.trim();
        if let Some(directive) = trimmed.strip_prefix('$') {
            let mut words = directive.split_whitespace();
            let keyword = words.next().unwrap_or("").to_ascii_uppercase();
            let arg = words.next();
            let extra = words.next();
            match (keyword.as_str(), arg, extra) {
                ("ORIGIN", Some(arg), None) => match Dname::parse(arg, &current_origin) {
                    Ok(name) => current_origin = name,
                    Err(e) => errors.push(FieldError::new(at, format!("bad $ORIGIN: {e}"))),
                },
                ("TTL", Some(arg), None) => match parse_ttl(arg) {
                    Some(ttl) => dollar_ttl = Some(ttl),
                    None => errors.push(FieldError::new(at, format!("bad $TTL {arg:?}"))),
                },
                ("INCLUDE", _, _) => errors.push(FieldError::new(at, "$INCLUDE is not allowed")),
                _ => errors.push(FieldError::new(
                    at,
                    format!("unknown or malformed directive ${keyword}"),
                )),
            }
            continue;
        }
        // A blank owner repeats the last one (RFC 1035 §5.1).
        let text = if entry.text.starts_with([' ', '\t']) {
            match &last_owner {
                Some(owner) => format!("{owner}{}", entry.text),
                None => {
                    errors.push(FieldError::new(at, "no owner name and no previous owner"));
                    continue;
                }
            }
        } else {
            entry.text.clone()
        };
        let ttl_default = dollar_ttl.unwrap_or(last_ttl);
        let Ok(origin_name) =
            Name::<Bytes>::from_octets(Bytes::copy_from_slice(current_origin.as_wire()))
        else {
            errors.push(FieldError::new(at, "bad origin"));
            continue;
        };
        let mut zonefile = Zonefile::new();
        zonefile.set_origin(origin_name);
        zonefile.set_default_class(Class::IN);
        zonefile.extend_from_slice(format!("$TTL {ttl_default}\n{text}\n").as_bytes());
        let record = match zonefile.next_entry() {
            Ok(Some(Entry::Record(record))) => record,
            Ok(Some(Entry::Include { .. })) => {
                errors.push(FieldError::new(at, "$INCLUDE is not allowed"));
                continue;
            }
            Ok(None) => continue,
            Err(e) => {
                let message = e.to_string();
                // The scanner counts lines of its own input, where our entry is line 2.
                let reason = message
                    .splitn(3, ':')
                    .nth(2)
                    .map(str::trim)
                    .unwrap_or(&message);
                errors.push(FieldError::new(at, reason.to_string()));
                continue;
            }
        };
        if record.class() != Class::IN {
            errors.push(FieldError::new(
                at,
                format!("class {} is not supported, only IN", record.class()),
            ));
            continue;
        }
        let owner = name_to_dname(record.owner());
        let rtype = record.rtype();
        let ttl = record.ttl().as_secs();
        last_owner = Some(owner.clone());
        last_ttl = ttl;
        let mut wire = Vec::new();
        if record.data().compose_rdata(&mut wire).is_err() {
            errors.push(FieldError::new(at, "record data too long"));
            continue;
        }
        let rdata = match Rdata::from_wire(rtype, &wire) {
            Ok(rdata) => rdata,
            Err(e) => {
                errors.push(FieldError::new(at, e.to_string()));
                continue;
            }
        };
        if rtype == Rtype::SOA {
            if !owner.eq_ignore_case(origin) {
                errors.push(FieldError::new(
                    at,
                    format!("SOA at {owner}, not at the zone apex {origin}"),
                ));
            } else if out.soa.is_some() {
                errors.push(FieldError::new(at, "a second SOA record"));
            } else {
                match soa_from_rdata(&rdata) {
                    Some(soa) => out.soa = Some((soa, ttl)),
                    None => errors.push(FieldError::new(at, "bad SOA data")),
                }
            }
            continue;
        }
        out.records.push(RecordConfig {
            id: 0,
            name: owner,
            rtype,
            ttl,
            rdata,
            steering: None,
        });
        out.lines.push(entry.line);
    }
    if errors.is_empty() {
        Ok(out)
    } else {
        Err(errors)
    }
}

/// Reads SOA wire rdata.
pub fn soa_from_rdata(rdata: &Rdata) -> Option<Soa> {
    let wire = rdata.as_wire();
    let mname_len = crate::name::wire_name_len(wire)?;
    let rname_len = crate::name::wire_name_len(&wire[mname_len..])?;
    let rest = wire.get(mname_len + rname_len..)?;
    if rest.len() != 20 {
        return None;
    }
    let n = |i: usize| u32::from_be_bytes([rest[i], rest[i + 1], rest[i + 2], rest[i + 3]]);
    Some(Soa {
        mname: Dname::from_wire(&wire[..mname_len])?,
        rname: Dname::from_wire(&wire[mname_len..mname_len + rname_len])?,
        serial: n(0),
        refresh: n(4),
        retry: n(8),
        expire: n(12),
        minimum: n(16),
    })
}

/// Writes a zone as an RFC 1035 zone file: owners relative to the origin, rdata names absolute.
pub fn export(zone: &ZoneConfig) -> String {
    let mut out = String::new();
    out.push_str(&format!(
        "$ORIGIN {}\n$TTL {}\n",
        zone.name, zone.default_ttl
    ));
    let soa = &zone.soa;
    out.push_str(&format!(
        "@\t{}\tIN\tSOA\t{} {} {} {} {} {} {}\n",
        zone.default_ttl,
        soa.mname,
        soa.rname,
        soa.serial,
        soa.refresh,
        soa.retry,
        soa.expire,
        soa.minimum
    ));
    let mut records: Vec<&RecordConfig> = zone.records.iter().collect();
    // Apex first, then by name and type, as a reader expects.
    records.sort_by(|a, b| {
        let apex_a = !a.name.eq_ignore_case(&zone.name);
        let apex_b = !b.name.eq_ignore_case(&zone.name);
        (apex_a, a.name.to_lowercase().to_string(), a.rtype.to_int()).cmp(&(
            apex_b,
            b.name.to_lowercase().to_string(),
            b.rtype.to_int(),
        ))
    });
    for record in records {
        out.push_str(&format!(
            "{}\t{}\tIN\t{}\t{}\n",
            record.name.to_relative_string(&zone.name),
            record.ttl,
            record.rtype,
            record.rdata.to_text(record.rtype)
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use expect_test::expect;

    const ZONE: &str = r#"
$ORIGIN example.com.
$TTL 1h
@   IN SOA ns1 hostmaster (
        2024010101 ; serial
        3600 600 1209600 300 )
    IN NS ns1
ns1 IN A 192.0.2.53
www 300 IN A 192.0.2.1
    IN AAAA 2001:db8::1
txt IN TXT "a;b" "c\"d"
*.dev IN A 192.0.2.9
gen IN TYPE65534 \# 4 0a000001
$ORIGIN sub.example.com.
deep IN CNAME www.example.com.
"#;

    fn origin() -> Dname {
        Dname::parse_absolute("example.com").unwrap()
    }

    #[test]
    fn imports_a_full_file() {
        let parsed = parse(ZONE, &origin(), 3600).unwrap();
        let (soa, soa_ttl) = parsed.soa.clone().unwrap();
        assert_eq!((soa.serial, soa.minimum, soa_ttl), (2024010101, 300, 3600));
        let lines: Vec<String> = parsed
            .records
            .iter()
            .zip(&parsed.lines)
            .map(|(r, l)| {
                format!(
                    "{l} {} {} {} {}",
                    r.name,
                    r.ttl,
                    r.rtype,
                    r.rdata.to_text(r.rtype)
                )
            })
            .collect();
        expect![[r#"
            [
                "7 example.com. 3600 NS ns1.example.com.",
                "8 ns1.example.com. 3600 A 192.0.2.53",
                "9 www.example.com. 300 A 192.0.2.1",
                "10 www.example.com. 3600 AAAA 2001:db8::1",
                "11 txt.example.com. 3600 TXT \"a;b\" \"c\\\"d\"",
                "12 *.dev.example.com. 3600 A 192.0.2.9",
                "13 gen.example.com. 3600 TYPE65534 \\# 4 0a000001",
                "15 deep.sub.example.com. 3600 CNAME www.example.com.",
            ]
        "#]]
        .assert_debug_eq(&lines);
    }

    #[test]
    fn reports_every_bad_line() {
        let bad = "$ORIGIN example.com.\n@ 3600 IN NS ns1\nwww IN A 300.0.0.1\nok IN A 192.0.2.1\nmx IN MX mail\n$INCLUDE other\nx IN BOGUS 1\n";
        let errors = parse(bad, &origin(), 3600).unwrap_err();
        let text: Vec<String> = errors.iter().map(|e| e.to_string()).collect();
        expect![[r#"
            [
                "line 3: expected IPv4 address",
                "line 5: expected decimal number",
                "line 6: $INCLUDE is not allowed",
                "line 7: expected rtype",
            ]
        "#]]
        .assert_debug_eq(&text);
    }

    #[test]
    fn export_then_import_gives_the_same_records() {
        let parsed = parse(ZONE, &origin(), 3600).unwrap();
        let zone = ZoneConfig {
            id: 1,
            name: origin(),
            soa: parsed.soa.clone().unwrap().0,
            default_ttl: 3600,
            records: parsed.records.clone(),
            pools: Vec::new(),
            load_balancers: Vec::new(),
        };
        let text = export(&zone);
        let again = parse(&text, &origin(), 3600).unwrap();
        let key = |r: &RecordConfig| {
            (
                r.name.to_lowercase(),
                r.rtype.to_int(),
                r.ttl,
                r.rdata.clone(),
            )
        };
        let mut a: Vec<_> = parsed.records.iter().map(key).collect();
        let mut b: Vec<_> = again.records.iter().map(key).collect();
        a.sort();
        b.sort();
        assert_eq!(a, b);
        assert_eq!(again.soa.unwrap().0, zone.soa);
    }

    #[test]
    fn ttl_units() {
        assert_eq!(parse_ttl("1h30m"), Some(5400));
        assert_eq!(parse_ttl("300"), Some(300));
        assert_eq!(parse_ttl("1x"), None);
        assert_eq!(parse_ttl("5h3"), None);
        assert_eq!(parse_ttl("4294967295s"), Some(u32::MAX));
        assert_eq!(parse_ttl("4294967295s1s"), None);
    }

    /// Terms that each fit but together pass u64::MAX were summed without a check: a panic in
    /// a debug build, a wrapped (and possibly accepted) TTL in a release build.
    #[test]
    fn a_ttl_too_long_is_refused() {
        let ttl = "4294967295w".repeat(8000);
        assert_eq!(parse_ttl(&ttl), None);
        let text = format!("$TTL {ttl}\n@ IN NS ns1\n");
        let errors = parse(&text, &origin(), 3600).unwrap_err();
        assert_eq!(errors.len(), 1);
        assert!(errors[0].message.starts_with("bad $TTL"), "{errors:?}");
    }
}
