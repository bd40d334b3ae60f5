//! One function per client subcommand: call the API, then print the JSON as it came (`--json`)
//! or a table for people. The renderers are pure functions so they can be tested.

use std::io::{Read, Write};
use std::path::Path;

use api::{
    ImportResult, Login, Record, RecordSpec, Session, Token, TokenCreate, User, UserCreate, Zone,
    ZoneCreate,
};
use serde::de::DeserializeOwned;

use crate::client::{Client, segment};
use crate::config::{self, Sources, Target};
use crate::error::Failure;
use crate::json::Json;
use crate::table::{Table, format_unix_time, pairs};
use crate::{GlobalArgs, prompt};

/// What every command needs from the command line.
pub(crate) struct Ctx {
    pub global: GlobalArgs,
}

impl Ctx {
    fn target(&self) -> Result<Target, Failure> {
        let config_path = config::config_path();
        config::resolve(&Sources {
            server: self.global.server.as_deref(),
            token: self.global.token.as_deref(),
            config_path: config_path.as_deref(),
            data_dir: &self.global.data_dir,
        })
    }

    /// A client with a token: every command but login needs one.
    pub(crate) fn client(&self) -> Result<Client, Failure> {
        let target = self.target()?;
        if target.token.is_none() {
            return Err(Failure::usage(format!(
                "no API token for {}: pass --token or set DNZ_TOKEN, run `dnz login --server URL`, \
                 or run where {} exists",
                target.server,
                self.global.data_dir.join("admin.token").display()
            )));
        }
        Client::new(target.server, target.token)
    }

    /// Prints the API's JSON, or what `human` makes of it.
    pub(crate) fn show<T: DeserializeOwned>(
        &self,
        value: Json,
        human: impl FnOnce(T) -> String,
    ) -> Result<(), Failure> {
        if self.global.json {
            return out(value.pretty().as_bytes());
        }
        out(human(value.decode()?).as_bytes())
    }
}

// ---- zones -------------------------------------------------------------------------------

pub(crate) fn zone_create(
    ctx: &Ctx,
    zone: String,
    ttl: Option<u32>,
    ns: Vec<String>,
) -> Result<(), Failure> {
    let body = ZoneCreate {
        name: zone,
        default_ttl: ttl,
        soa: Default::default(),
        ns,
    };
    let value = ctx.client()?.post_json("zones", &body)?;
    ctx.show(value, |zone: Zone| {
        format!("created zone {} (serial {})\n", zone.name, zone.serial)
    })
}

pub(crate) fn zone_list(ctx: &Ctx) -> Result<(), Failure> {
    let value = ctx.client()?.get("zones")?;
    ctx.show(value, |zones: Vec<Zone>| zones_table(&zones))
}

pub(crate) fn zone_show(ctx: &Ctx, zone: &str) -> Result<(), Failure> {
    let value = ctx.client()?.get(&format!("zones/{}", segment(zone)))?;
    ctx.show(value, |zone: Zone| zone_details(&zone))
}

pub(crate) fn zone_delete(ctx: &Ctx, zone: &str) -> Result<(), Failure> {
    let value = ctx
        .client()?
        .delete(&format!("zones/{}", segment(zone)), &[])?;
    deleted(ctx, value, &format!("deleted zone {zone}\n"))
}

pub(crate) fn zone_import(ctx: &Ctx, zone: &str, file: &Path) -> Result<(), Failure> {
    let client = ctx.client()?;
    let text = read_input(file)?;
    let value = client.post_text(&format!("zones/{}/import", segment(zone)), &text)?;
    ctx.show(value, |result: ImportResult| {
        format!(
            "imported {} records into {} (serial {})\n",
            result.records, result.zone, result.serial
        )
    })
}

pub(crate) fn zone_export(ctx: &Ctx, zone: &str, file: Option<&Path>) -> Result<(), Failure> {
    let text = ctx
        .client()?
        .get_text(&format!("zones/{}/export", segment(zone)))?;
    match file {
        Some(path) if path != Path::new("-") => std::fs::write(path, &text)
            .map_err(|e| Failure::runtime(format!("cannot write {}: {e}", path.display()))),
        _ => out(&text),
    }
}

// ---- records -----------------------------------------------------------------------------

pub(crate) fn record_add(ctx: &Ctx, zone: &str, spec: RecordSpec) -> Result<(), Failure> {
    let value = ctx
        .client()?
        .post_json(&format!("zones/{}/records", segment(zone)), &spec)?;
    ctx.show(value, |record: Record| records_table(&[record]))
}

pub(crate) fn record_delete(
    ctx: &Ctx,
    zone: &str,
    name: &str,
    rtype: &str,
    rdata: &str,
) -> Result<(), Failure> {
    let value = ctx.client()?.delete(
        &format!("zones/{}/records", segment(zone)),
        &[("name", name), ("type", rtype), ("value", rdata)],
    )?;
    ctx.show(value, |records: Vec<Record>| {
        let noun = if records.len() == 1 {
            "record"
        } else {
            "records"
        };
        format!(
            "deleted {} {noun}:\n{}",
            records.len(),
            records_table(&records)
        )
    })
}

pub(crate) fn record_list(ctx: &Ctx, zone: &str) -> Result<(), Failure> {
    let value = ctx
        .client()?
        .get(&format!("zones/{}/records", segment(zone)))?;
    ctx.show(value, |records: Vec<Record>| records_table(&records))
}

// ---- login, users, tokens ----------------------------------------------------------------

pub(crate) fn login(ctx: &Ctx, user: String, password: Option<String>) -> Result<(), Failure> {
    // Known before asking for a password: where the token will be kept.
    let path = config::config_path().ok_or_else(|| {
        Failure::usage("cannot place the config file: set HOME or XDG_CONFIG_HOME")
    })?;
    let server = config::login_server(ctx.global.server.as_deref(), Some(&path))?;
    let client = Client::new(server, None)?;
    let password = match password.filter(|p| !p.is_empty()) {
        Some(password) => password,
        None => prompt::read_password(
            &format!("Password for {user} at {}: ", client.server()),
            false,
        )?,
    };
    let value = client.post_json(
        "session",
        &Login {
            name: user,
            password,
            cookie: false,
        },
    )?;
    let session: Session = value.decode()?;
    let token = session
        .token
        .clone()
        .ok_or_else(|| Failure::runtime("the server answered the login without a token"))?;
    let saved = config::ConfigFile {
        server: Some(client.server().to_string()),
        user: Some(session.user.clone()),
        token: Some(token),
    };
    config::save(&path, &saved)
        .map_err(|e| Failure::runtime(format!("cannot write {}: {e}", path.display())))?;
    if ctx.global.json {
        return out(value.pretty().as_bytes());
    }
    out(format!(
        "logged in to {} as {} ({}); token saved in {}\n",
        client.server(),
        session.user,
        session.role.as_str(),
        path.display()
    )
    .as_bytes())
}

pub(crate) fn user_list(ctx: &Ctx) -> Result<(), Failure> {
    let value = ctx.client()?.get("users")?;
    ctx.show(value, |users: Vec<User>| users_table(&users))
}

pub(crate) fn user_add(
    ctx: &Ctx,
    name: String,
    role: api::Role,
    password: Option<String>,
) -> Result<(), Failure> {
    let client = ctx.client()?;
    let password = match password.filter(|p| !p.is_empty()) {
        Some(password) => password,
        None => prompt::read_password(&format!("Password for new user {name}: "), true)?,
    };
    let value = client.post_json(
        "users",
        &UserCreate {
            name,
            password,
            role,
        },
    )?;
    ctx.show(value, |user: User| {
        format!("created user {} ({})\n", user.name, user.role.as_str())
    })
}

pub(crate) fn user_delete(ctx: &Ctx, name: &str) -> Result<(), Failure> {
    let value = ctx
        .client()?
        .delete(&format!("users/{}", segment(name)), &[])?;
    deleted(ctx, value, &format!("deleted user {name}\n"))
}

pub(crate) fn token_list(ctx: &Ctx) -> Result<(), Failure> {
    let value = ctx.client()?.get("tokens")?;
    ctx.show(value, |tokens: Vec<Token>| tokens_table(&tokens))
}

/// The secret alone goes to stdout, so `TOKEN=$(dnz token create ci)` works.
pub(crate) fn token_create(ctx: &Ctx, name: String, user: Option<String>) -> Result<(), Failure> {
    let value = ctx
        .client()?
        .post_json("tokens", &TokenCreate { name, user })?;
    if ctx.global.json {
        return out(value.pretty().as_bytes());
    }
    let token: Token = value.decode()?;
    let secret = token
        .token
        .ok_or_else(|| Failure::runtime("the server did not return the token's secret"))?;
    eprintln!(
        "created token {} {:?} for {}; the secret is shown only this once:",
        token.id, token.name, token.user
    );
    out(format!("{secret}\n").as_bytes())
}

pub(crate) fn token_delete(ctx: &Ctx, id: i64) -> Result<(), Failure> {
    let value = ctx.client()?.delete(&format!("tokens/{id}"), &[])?;
    deleted(ctx, value, &format!("deleted token {id}\n"))
}

// ---- rendering ---------------------------------------------------------------------------

pub(crate) fn zones_table(zones: &[Zone]) -> String {
    let mut table = Table::new(&["NAME", "SERIAL", "RECORDS"]);
    for zone in zones {
        table.row(vec![
            zone.name.clone(),
            zone.serial.to_string(),
            zone.record_count.to_string(),
        ]);
    }
    table.render()
}

pub(crate) fn zone_details(zone: &Zone) -> String {
    pairs(&[
        ("zone", zone.name.clone()),
        ("serial", zone.serial.to_string()),
        ("default TTL", zone.default_ttl.to_string()),
        ("records", zone.record_count.to_string()),
        ("SOA mname", zone.soa.mname.clone()),
        ("SOA rname", zone.soa.rname.clone()),
        ("SOA refresh", zone.soa.refresh.to_string()),
        ("SOA retry", zone.soa.retry.to_string()),
        ("SOA expire", zone.soa.expire.to_string()),
        ("SOA minimum", zone.soa.minimum.to_string()),
    ])
}

pub(crate) fn records_table(records: &[Record]) -> String {
    let mut table = Table::new(&["ID", "NAME", "TYPE", "TTL", "VALUE"]);
    for record in records {
        table.row(vec![
            record.id.to_string(),
            record.name.clone(),
            record.rtype.clone(),
            record.ttl.to_string(),
            record.value.clone(),
        ]);
    }
    table.render()
}

pub(crate) fn users_table(users: &[User]) -> String {
    let mut table = Table::new(&["NAME", "ROLE"]);
    for user in users {
        table.row(vec![user.name.clone(), user.role.as_str().to_string()]);
    }
    table.render()
}

pub(crate) fn tokens_table(tokens: &[Token]) -> String {
    let mut table = Table::new(&["ID", "NAME", "USER", "CREATED"]);
    for token in tokens {
        table.row(vec![
            token.id.to_string(),
            token.name.clone(),
            token.user.clone(),
            format_unix_time(token.created),
        ]);
    }
    table.render()
}

// ---- GeoIP -------------------------------------------------------------------------------

pub(crate) fn geoip_download(ctx: &Ctx) -> Result<(), Failure> {
    let value = ctx.client()?.post_json("settings/geoip/download", &())?;
    ctx.show(value, |status: api::GeoIpStatus| {
        format!(
            "downloaded the GeoIP database from {}; it is answering queries now\n{}",
            status.last_url.as_deref().unwrap_or(&status.url),
            geoip_status_text(&status)
        )
    })
}

pub(crate) fn geoip_set(
    ctx: &Ctx,
    url: Option<String>,
    auto_update: Option<bool>,
) -> Result<(), Failure> {
    if url.is_none() && auto_update.is_none() {
        return Err(Failure::usage(
            "nothing to set: give --url URL|default and/or --auto-update on|off",
        ));
    }
    let body = api::GeoIpSettings { url, auto_update };
    let value = ctx.client()?.put_json("settings/geoip", &body)?;
    ctx.show(value, |status: api::GeoIpStatus| geoip_status_text(&status))
}

pub(crate) fn geoip_lookup(ctx: &Ctx, ip: &str) -> Result<(), Failure> {
    let value = ctx
        .client()?
        .get_query("geoip/lookup", &[("ip", ip.trim())])?;
    ctx.show(value, |lookup: api::GeoLookup| geoip_lookup_text(&lookup))
}

pub(crate) fn geoip_status(ctx: &Ctx) -> Result<(), Failure> {
    let value = ctx.client()?.get("settings/geoip")?;
    ctx.show(value, |status: api::GeoIpStatus| geoip_status_text(&status))
}

pub(crate) fn geoip_status_text(status: &api::GeoIpStatus) -> String {
    let none = || "-".to_string();
    let database = match (&status.database_type, status.loaded) {
        (_, false) => {
            "none loaded: steering answers the defaults (run `dnz geoip download`)".to_string()
        }
        (Some(kind), true) if status.demo => format!("{kind} (the synthetic demo database)"),
        (Some(kind), true) => kind.clone(),
        (None, true) => "loaded".to_string(),
    };
    let file = match (status.file_size, status.file_modified) {
        (Some(size), Some(modified)) => format!(
            "{} ({}, written {})",
            status.path,
            human_size(size),
            format_unix_time(modified)
        ),
        (Some(size), None) => format!("{} ({})", status.path, human_size(size)),
        _ => format!("{} (not there yet)", status.path),
    };
    let source = if status.default_url {
        format!("{} (default: DB-IP IP-to-Country Lite)", status.url)
    } else {
        status.url.clone()
    };
    let last = match (status.last_download, status.last_result.as_deref()) {
        (Some(when), Some("ok")) => format!(
            "{} ok, from {}",
            format_unix_time(when),
            status.last_url.as_deref().unwrap_or("?")
        ),
        (Some(when), _) => format!(
            "{} failed: {}",
            format_unix_time(when),
            status.last_error.as_deref().unwrap_or("unknown error")
        ),
        (None, _) => "never".to_string(),
    };
    let next = match (status.auto_update, status.next_download) {
        (false, _) => "- (auto update is off)".to_string(),
        (true, Some(when)) => format_unix_time(when),
        (true, None) => "- (after the first download)".to_string(),
    };
    pairs(&[
        ("database", database),
        (
            "description",
            status.description.clone().unwrap_or_else(none),
        ),
        (
            "built",
            status
                .build_epoch
                .map(format_unix_time)
                .unwrap_or_else(none),
        ),
        ("file", file),
        ("source", source),
        (
            "attribution",
            status.attribution.clone().unwrap_or_else(none),
        ),
        (
            "auto update",
            if status.auto_update { "on" } else { "off" }.to_string(),
        ),
        ("last download", last),
        ("next download", next),
    ])
}

pub(crate) fn geoip_lookup_text(lookup: &api::GeoLookup) -> String {
    let none = || "-".to_string();
    pairs(&[
        ("address", lookup.address.clone()),
        ("country", lookup.country.clone().unwrap_or_else(none)),
        ("continent", lookup.continent.clone().unwrap_or_else(none)),
        ("network", lookup.network.clone().unwrap_or_else(none)),
        ("status", lookup.status.clone()),
    ])
}

fn human_size(bytes: u64) -> String {
    if bytes >= 1 << 20 {
        format!("{:.1} MB", bytes as f64 / f64::from(1u32 << 20))
    } else if bytes >= 1 << 10 {
        format!("{:.1} KB", bytes as f64 / 1024.0)
    } else {
        format!("{bytes} bytes")
    }
}

// ---- helpers -----------------------------------------------------------------------------

/// A delete answered 204 (nothing to print in `--json`) or with what it removed.
fn deleted(ctx: &Ctx, value: Json, message: &str) -> Result<(), Failure> {
    match (ctx.global.json, value.is_empty()) {
        (true, true) => Ok(()),
        (true, false) => out(value.pretty().as_bytes()),
        (false, _) => out(message.as_bytes()),
    }
}

/// A file's bytes, or stdin's for `-`.
fn read_input(file: &Path) -> Result<Vec<u8>, Failure> {
    if file == Path::new("-") {
        let mut bytes = Vec::new();
        std::io::stdin()
            .lock()
            .read_to_end(&mut bytes)
            .map_err(|e| Failure::runtime(format!("reading stdin: {e}")))?;
        return Ok(bytes);
    }
    std::fs::read(file)
        .map_err(|e| Failure::runtime(format!("cannot read {}: {e}", file.display())))
}

/// Writes to stdout; a closed pipe (`| head`) is not an error.
pub(crate) fn out(bytes: &[u8]) -> Result<(), Failure> {
    let mut stdout = std::io::stdout().lock();
    match stdout.write_all(bytes).and_then(|()| stdout.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
            Err(Failure::runtime(format!("writing output: {e}")))
        }
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use api::{Role, Soa};

    fn zone() -> Zone {
        Zone {
            name: "example.com".into(),
            serial: 2024010101,
            default_ttl: 3600,
            soa: Soa {
                mname: "ns1.example.com.".into(),
                rname: "hostmaster.example.com.".into(),
                serial: 2024010101,
                refresh: 7200,
                retry: 900,
                expire: 1209600,
                minimum: 300,
            },
            record_count: 12,
        }
    }

    #[test]
    fn zone_tables() {
        assert_eq!(
            zones_table(&[zone()]),
            "NAME         SERIAL      RECORDS\nexample.com  2024010101  12\n"
        );
        let details = zone_details(&zone());
        assert!(
            details.starts_with("zone         example.com\n"),
            "{details}"
        );
        assert!(
            details.contains("SOA rname    hostmaster.example.com.\n"),
            "{details}"
        );
    }

    #[test]
    fn record_table() {
        let record = Record {
            id: 7,
            name: "@".into(),
            fqdn: "example.com.".into(),
            rtype: "TXT".into(),
            ttl: 300,
            value: "\"a b\"".into(),
            steering: None,
            health: None,
        };
        assert_eq!(
            records_table(&[record]),
            "ID  NAME  TYPE  TTL  VALUE\n7   @     TXT   300  \"a b\"\n"
        );
    }

    #[test]
    fn user_and_token_tables() {
        let users = [User {
            name: "alice".into(),
            role: Role::Editor,
        }];
        assert_eq!(users_table(&users), "NAME   ROLE\nalice  editor\n");
        let tokens = [Token {
            id: 3,
            name: "ci".into(),
            user: "alice".into(),
            created: 1_700_000_000,
            token: None,
        }];
        assert_eq!(
            tokens_table(&tokens),
            "ID  NAME  USER   CREATED\n3   ci    alice  2023-11-14 22:13:20\n"
        );
    }

    #[test]
    fn geoip_texts() {
        let status = api::GeoIpStatus {
            path: "/var/lib/dnz/geoip-country.mmdb".into(),
            file_size: Some(8_207_345),
            file_modified: Some(1_700_000_000),
            loaded: true,
            database_type: Some("DBIP-Country-Lite".into()),
            url: "https://download.db-ip.com/free/dbip-country-lite-{year}-{month}.mmdb.gz".into(),
            default_url: true,
            auto_update: true,
            last_download: Some(1_700_000_000),
            last_result: Some("failed".into()),
            last_error: Some("download failed: HTTP 500 from http://x".into()),
            next_download: Some(1_700_086_400),
            attribution: Some("IP Geolocation by DB-IP".into()),
            ..Default::default()
        };
        let text = geoip_status_text(&status);
        assert!(
            text.starts_with("database       DBIP-Country-Lite\n"),
            "{text}"
        );
        assert!(
            text.contains("attribution    IP Geolocation by DB-IP\n"),
            "{text}"
        );
        assert!(
            text.contains("(7.8 MB, written 2023-11-14 22:13:20)"),
            "{text}"
        );
        assert!(
            text.contains(
                "last download  2023-11-14 22:13:20 failed: download failed: HTTP 500 from http://x\n"
            ),
            "{text}"
        );
        assert!(
            text.contains("next download  2023-11-15 22:13:20\n"),
            "{text}"
        );
        let lookup = api::GeoLookup {
            address: "8.8.8.8".into(),
            country: Some("US".into()),
            continent: Some("NA".into()),
            network: Some("8.8.8.0/24".into()),
            status: "placed".into(),
        };
        assert_eq!(
            geoip_lookup_text(&lookup),
            "address    8.8.8.8\ncountry    US\ncontinent  NA\nnetwork    8.8.8.0/24\nstatus     placed\n"
        );
    }
}
