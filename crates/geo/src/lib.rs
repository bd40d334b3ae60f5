//! Where a client is: countries and continents, the GeoIP database (MaxMind `.mmdb`, both the
//! MaxMind/DB-IP schema and the flat ip-location-db one), the special address ranges that have
//! no place, and the synthetic demo database.
//!
//! A lookup ([`GeoDb::locate`]) decodes borrowed strings only: it allocates nothing.

mod countries;
pub mod demo;

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::path::Path;

use serde::Deserialize;

/// A continent code as GeoIP databases use them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Continent {
    Af,
    An,
    As,
    Eu,
    Na,
    Oc,
    Sa,
}

impl Continent {
    pub const ALL: [Continent; 7] = [
        Continent::Af,
        Continent::An,
        Continent::As,
        Continent::Eu,
        Continent::Na,
        Continent::Oc,
        Continent::Sa,
    ];

    pub fn code(self) -> &'static str {
        match self {
            Continent::Af => "AF",
            Continent::An => "AN",
            Continent::As => "AS",
            Continent::Eu => "EU",
            Continent::Na => "NA",
            Continent::Oc => "OC",
            Continent::Sa => "SA",
        }
    }

    /// Parses an upper-case code.
    pub fn parse(code: &str) -> Option<Continent> {
        Continent::ALL.into_iter().find(|c| c.code() == code)
    }

    pub fn index(self) -> usize {
        self as usize
    }
}

impl fmt::Display for Continent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.code())
    }
}

/// An ISO 3166-1 alpha-2 country code, upper case.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Country(pub [u8; 2]);

impl Country {
    /// Parses a known upper-case code (`ID`, `SG`, `US`); lower case is refused so that stored
    /// configuration has one spelling.
    pub fn parse(code: &str) -> Option<Country> {
        let bytes: [u8; 2] = code.as_bytes().try_into().ok()?;
        let country = Country(bytes);
        country.continent().map(|_| country)
    }

    /// Any case, from a database.
    fn from_db(code: &str) -> Option<Country> {
        let bytes: [u8; 2] = code.as_bytes().try_into().ok()?;
        Some(Country(bytes.map(|b| b.to_ascii_uppercase())))
    }

    /// The continent from the built-in table.
    pub fn continent(self) -> Option<Continent> {
        countries::COUNTRIES
            .binary_search_by_key(&self.0, |(code, _)| *code)
            .ok()
            .map(|i| countries::COUNTRIES[i].1)
    }

    pub fn as_str(&self) -> &str {
        std::str::from_utf8(&self.0).unwrap_or("??")
    }
}

impl fmt::Display for Country {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What a lookup found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PlaceKind {
    /// The database placed the address.
    Placed,
    /// The database has the network but no country for it, or not the address at all.
    NotInDatabase,
    /// Private, loopback, link-local and other special-use space (RFC 6890).
    Special(&'static str),
    /// No database is loaded.
    NoDatabase,
}

/// Where an address is, and how wide the network that decided is (the ECS scope).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Located {
    pub country: Option<Country>,
    pub continent: Option<Continent>,
    /// Prefix length of the network that decided; with ECS it becomes the scope.
    pub prefix_len: u8,
    pub kind: PlaceKind,
    /// Latitude and longitude, when the database has them (city databases).
    pub coordinates: Option<(f64, f64)>,
}

impl Located {
    pub fn nowhere(kind: PlaceKind, prefix_len: u8) -> Located {
        Located {
            country: None,
            continent: None,
            prefix_len,
            kind,
            coordinates: None,
        }
    }
}

/// Something that places addresses; the answer path takes it as an input.
pub trait Locate: Send + Sync {
    fn locate(&self, address: IpAddr) -> Located;
}

/// No database: nobody has a place.
pub struct NoGeo;

impl Locate for NoGeo {
    fn locate(&self, address: IpAddr) -> Located {
        special(address)
            .map(|(prefix, why)| Located::nowhere(PlaceKind::Special(why), prefix))
            .unwrap_or(Located::nowhere(PlaceKind::NoDatabase, 0))
    }
}

/// Special-use ranges with no place, with their prefix lengths (RFC 6890 and friends). The
/// documentation ranges are deliberately absent: the demo database places them.
pub fn special(address: IpAddr) -> Option<(u8, &'static str)> {
    match address {
        IpAddr::V4(v4) => special_v4(v4),
        IpAddr::V6(v6) => {
            if let Some(v4) = v6.to_ipv4_mapped() {
                return special_v4(v4).map(|(prefix, why)| (prefix + 96, why));
            }
            let segments = v6.segments();
            if v6.is_loopback() {
                Some((128, "loopback"))
            } else if v6.is_unspecified() {
                Some((128, "unspecified"))
            } else if segments[0] & 0xfe00 == 0xfc00 {
                Some((7, "unique local"))
            } else if segments[0] & 0xffc0 == 0xfe80 {
                Some((10, "link-local"))
            } else if segments[0] & 0xff00 == 0xff00 {
                Some((8, "multicast"))
            } else {
                None
            }
        }
    }
}

fn special_v4(v4: Ipv4Addr) -> Option<(u8, &'static str)> {
    let o = v4.octets();
    match o {
        [10, ..] => Some((8, "private")),
        [172, b, ..] if (16..32).contains(&b) => Some((12, "private")),
        [192, 168, ..] => Some((16, "private")),
        [127, ..] => Some((8, "loopback")),
        [169, 254, ..] => Some((16, "link-local")),
        [100, b, ..] if (64..128).contains(&b) => Some((10, "shared address space")),
        [0, ..] => Some((8, "this network")),
        [a, ..] if a >= 240 => Some((4, "reserved")),
        [a, ..] if (224..240).contains(&a) => Some((4, "multicast")),
        _ => None,
    }
}

/// Why a database was not accepted.
#[derive(Debug, thiserror::Error)]
pub enum GeoError {
    #[error("not a MaxMind DB file: {0}")]
    Open(String),
    #[error("the database fails verification: {0}")]
    Verify(String),
    #[error("the database has no country data (neither country.iso_code nor country_code)")]
    NoCountryData,
    #[error("reading {path}: {error}")]
    Io { path: String, error: std::io::Error },
}

#[derive(Deserialize)]
struct IsoCode<'a> {
    #[serde(borrow)]
    iso_code: Option<&'a str>,
}

#[derive(Deserialize)]
struct ContinentCode<'a> {
    #[serde(borrow)]
    code: Option<&'a str>,
}

#[derive(Deserialize)]
struct Location {
    latitude: Option<f64>,
    longitude: Option<f64>,
}

/// The fields we read, in both schemas; everything else is skipped by the decoder.
#[derive(Deserialize)]
struct GeoRecord<'a> {
    #[serde(borrow)]
    country: Option<IsoCode<'a>>,
    #[serde(borrow)]
    registered_country: Option<IsoCode<'a>>,
    #[serde(borrow)]
    continent: Option<ContinentCode<'a>>,
    /// ip-location-db's flat schema.
    #[serde(borrow)]
    country_code: Option<&'a str>,
    location: Option<Location>,
}

/// Facts about a loaded database, for status pages.
#[derive(Clone, Debug)]
pub struct DbInfo {
    pub database_type: String,
    pub description: String,
    pub build_epoch: u64,
    pub size: u64,
}

/// An opened and checked `.mmdb` database, held in memory (a copy, so replacing the file on
/// disk can never disturb a running lookup).
pub struct GeoDb {
    reader: maxminddb::Reader<Vec<u8>>,
    pub info: DbInfo,
}

impl GeoDb {
    pub fn open(path: &Path) -> Result<GeoDb, GeoError> {
        let bytes = std::fs::read(path).map_err(|error| GeoError::Io {
            path: path.display().to_string(),
            error,
        })?;
        GeoDb::from_bytes(bytes)
    }

    /// Opens, verifies and checks that the database has country data and that a lookup works.
    pub fn from_bytes(bytes: Vec<u8>) -> Result<GeoDb, GeoError> {
        let size = bytes.len() as u64;
        let reader =
            maxminddb::Reader::from_source(bytes).map_err(|e| GeoError::Open(e.to_string()))?;
        let metadata = reader.metadata();
        // `verify()` refuses a database on an empty description map alone, before it looks
        // at the tree or the data; ip-location-db's real DB-IP files have one. Those are
        // checked by the country-data walk below, and lookups never panic on bad data.
        if !metadata.description.is_empty() {
            reader
                .verify()
                .map_err(|e| GeoError::Verify(e.to_string()))?;
        }
        let info = DbInfo {
            database_type: metadata.database_type.clone(),
            description: metadata.description.get("en").cloned().unwrap_or_default(),
            build_epoch: metadata.build_epoch,
            size,
        };
        let db = GeoDb { reader, info };
        if !db.has_country_data() {
            return Err(GeoError::NoCountryData);
        }
        Ok(db)
    }

    /// Looks at the first networks of the database for a country code.
    fn has_country_data(&self) -> bool {
        let Ok(networks) = self.reader.networks(Default::default()) else {
            return false;
        };
        for item in networks.take(10_000) {
            let Ok(item) = item else { return false };
            if let Ok(Some(record)) = item.decode::<GeoRecord<'_>>()
                && record_country(&record).is_some()
            {
                return true;
            }
        }
        false
    }
}

fn record_country(record: &GeoRecord<'_>) -> Option<Country> {
    record
        .country
        .as_ref()
        .and_then(|c| c.iso_code)
        .or(record.country_code)
        .or(record.registered_country.as_ref().and_then(|c| c.iso_code))
        .and_then(Country::from_db)
}

impl Locate for GeoDb {
    fn locate(&self, address: IpAddr) -> Located {
        if let Some((prefix, why)) = special(address) {
            return Located::nowhere(PlaceKind::Special(why), prefix);
        }
        let Ok(result) = self.reader.lookup(address) else {
            return Located::nowhere(PlaceKind::NotInDatabase, 0);
        };
        let prefix_len = result.network().map(|n| n.prefix()).unwrap_or(0);
        let record = match result.decode::<GeoRecord<'_>>() {
            Ok(Some(record)) => record,
            _ => return Located::nowhere(PlaceKind::NotInDatabase, prefix_len),
        };
        let Some(country) = record_country(&record) else {
            return Located::nowhere(PlaceKind::NotInDatabase, prefix_len);
        };
        let continent = record
            .continent
            .as_ref()
            .and_then(|c| c.code)
            .and_then(Continent::parse)
            .or_else(|| country.continent());
        let coordinates = record
            .location
            .as_ref()
            .and_then(|l| Some((l.latitude?, l.longitude?)));
        Located {
            country: Some(country),
            continent,
            prefix_len,
            kind: PlaceKind::Placed,
            coordinates,
        }
    }
}

/// `Ipv6Addr` helper for tests and the demo.
pub fn v6(text: &str) -> Ipv6Addr {
    text.parse().unwrap_or(Ipv6Addr::UNSPECIFIED)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn country_table() {
        assert_eq!(
            Country::parse("ID").and_then(|c| c.continent()),
            Some(Continent::As)
        );
        assert_eq!(
            Country::parse("DE").and_then(|c| c.continent()),
            Some(Continent::Eu)
        );
        assert_eq!(
            Country::parse("BR").and_then(|c| c.continent()),
            Some(Continent::Sa)
        );
        assert_eq!(Country::parse("id"), None);
        assert_eq!(Country::parse("ZZ"), None);
        assert_eq!(countries::COUNTRIES.len(), 250);
        assert!(
            countries::COUNTRIES.windows(2).all(|w| w[0].0 < w[1].0),
            "table must be sorted"
        );
    }

    #[test]
    fn special_ranges_have_no_place() {
        for (addr, prefix) in [
            ("10.1.2.3", 8),
            ("192.168.1.1", 16),
            ("127.0.0.1", 8),
            ("fd00::1", 7),
            ("::ffff:10.0.0.1", 104),
        ] {
            let got = NoGeo.locate(addr.parse().unwrap());
            assert!(matches!(got.kind, PlaceKind::Special(_)), "{addr}");
            assert_eq!(got.prefix_len, prefix, "{addr}");
        }
        assert_eq!(
            special("192.0.2.1".parse().unwrap()),
            None,
            "documentation ranges are placed by the demo"
        );
    }

    #[test]
    fn demo_database_places_the_documentation_ranges() {
        let db = GeoDb::from_bytes(demo::database()).unwrap();
        let at = |a: &str| db.locate(a.parse().unwrap());
        assert_eq!(at("192.0.2.10").country, Country::parse("ID"));
        assert_eq!(at("192.0.2.10").prefix_len, 25);
        assert_eq!(at("198.51.100.7").continent, Some(Continent::Eu));
        assert_eq!(at("203.0.113.9").country, Country::parse("US"));
        assert_eq!(at("2001:db8::1").country, Country::parse("ID"));
        assert_eq!(at("2001:db8:4000::1").country, Country::parse("DE"));
        assert_eq!(at("2001:db8:4000::1").prefix_len, 34);
        assert_eq!(at("8.8.8.8").kind, PlaceKind::NotInDatabase);
        assert!(db.info.description.contains("synthetic"));
    }

    #[test]
    fn a_database_without_a_description_is_read() {
        let mut writer = mmdb_writer::Writer::builder("dbip-country").build();
        writer
            .insert_value(
                "192.0.2.0/24".parse::<mmdb_writer::ipnet::IpNet>().unwrap(),
                mmdb_writer::Value::map([("country_code", "DE")]),
            )
            .unwrap();
        let db = GeoDb::from_bytes(writer.to_bytes().unwrap()).unwrap();
        assert_eq!(db.info.description, "");
        let at = db.locate("192.0.2.1".parse().unwrap());
        assert_eq!(at.country, Country::parse("DE"));
        assert_eq!(at.continent, Some(Continent::Eu));
    }

    #[test]
    fn corrupt_and_empty_databases_are_refused() {
        assert!(matches!(
            GeoDb::from_bytes(b"not a database".to_vec()),
            Err(GeoError::Open(_))
        ));
        let empty = mmdb_writer::Writer::builder("Empty")
            .description(&[("en", "empty")])
            .build()
            .to_bytes()
            .unwrap();
        assert!(matches!(
            GeoDb::from_bytes(empty),
            Err(GeoError::NoCountryData)
        ));
    }
}
