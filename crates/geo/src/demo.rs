//! The synthetic demo GeoIP database of `dnz serve --demo`: it places only the documentation
//! ranges (RFC 5737, RFC 3849), so steering can be tried offline with `dig +subnet`. It is
//! labelled as synthetic in its own metadata and must never be mistaken for real data.

use std::collections::BTreeMap;

use mmdb_writer::{Value, Writer};

/// (network, country, continent) of the demo database.
pub const PLACES: &[(&str, &str, &str)] = &[
    ("192.0.2.0/25", "ID", "AS"),
    ("192.0.2.128/26", "SG", "AS"),
    ("192.0.2.192/26", "FR", "EU"),
    ("198.51.100.0/24", "DE", "EU"),
    ("203.0.113.0/25", "US", "NA"),
    ("203.0.113.128/25", "BR", "SA"),
    ("2001:db8::/34", "ID", "AS"),
    ("2001:db8:4000::/34", "DE", "EU"),
    ("2001:db8:8000::/34", "US", "NA"),
    ("2001:db8:c000::/34", "BR", "SA"),
];

pub const DESCRIPTION: &str = "dnz demo: synthetic data placing documentation ranges only";

/// The demo database as `.mmdb` bytes, in the MaxMind/DB-IP schema.
pub fn database() -> Vec<u8> {
    let mut writer = Writer::builder("dnz-Demo-Country")
        .description(&[("en", DESCRIPTION)])
        .build();
    for (network, country, continent) in PLACES {
        let Ok(net) = network.parse::<mmdb_writer::ipnet::IpNet>() else {
            continue;
        };
        let record = Value::Map(BTreeMap::from([
            (
                "country".to_string(),
                Value::map([("iso_code", Value::from(*country))]),
            ),
            (
                "continent".to_string(),
                Value::map([("code", Value::from(*continent))]),
            ),
        ]));
        // The networks are fixed and valid: an insert cannot fail.
        let _ = writer.insert_value(net, record);
    }
    writer.to_bytes().unwrap_or_default()
}
