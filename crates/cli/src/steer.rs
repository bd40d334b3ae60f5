//! `dnz record steer`, `dnz record steering` and `dnz explain`: traffic steering from the
//! command line. `steer` changes only the options given, so it reads the record first.

use std::net::IpAddr;

use api::{CheckResult, CheckTest, Explain, Record, RecordSpec, SteeringSpec};
use clap::Args;

use crate::client::segment;
use crate::commands::{Ctx, out};
use crate::error::Failure;
use crate::lb::CheckArgs;
use crate::table::Table;

/// Options of `dnz record steer`; each one absent leaves the current value as it is.
#[derive(Args, Debug, Default)]
pub struct SteerArgs {
    pub zone: String,
    /// Relative to the zone (`www`, `@`) or absolute with a trailing dot
    pub name: String,
    /// A or AAAA
    #[arg(value_name = "TYPE")]
    pub rtype: String,
    pub address: String,
    /// Countries (ISO 3166 alpha-2, comma-separated) or `none`
    #[arg(long, value_name = "ID,SG|none")]
    pub countries: Option<String>,
    /// Continents (AF AN AS EU NA OC SA, comma-separated) or `none`
    #[arg(long, value_name = "EU|none")]
    pub continents: Option<String>,
    /// Weight (≥ 0) or `none`
    #[arg(long, value_name = "N|none", allow_hyphen_values = true)]
    pub weight: Option<String>,
    /// Answer only while no non-backup record is left
    #[arg(long, value_name = "on|off")]
    pub backup: Option<String>,
    /// The health check options, shared with pool origins.
    #[command(flatten)]
    pub check: CheckArgs,
    /// TTL when the record is created
    #[arg(long, value_name = "SECONDS")]
    pub ttl: Option<u32>,
    /// Remove the steering and keep the record
    #[arg(long)]
    pub off: bool,
    /// Run the check once now and print the verdict; nothing is saved
    #[arg(long)]
    pub test: bool,
}

fn list(text: &str) -> Vec<String> {
    if text.eq_ignore_ascii_case("none") {
        return Vec::new();
    }
    text.split(',')
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .collect()
}

fn on_off(text: &str, flag: &str) -> Result<bool, Failure> {
    match text {
        "on" | "true" | "yes" => Ok(true),
        "off" | "false" | "no" => Ok(false),
        other => Err(Failure::usage(format!(
            "--{flag} takes on or off, not {other:?}"
        ))),
    }
}

impl SteerArgs {
    /// Applies the options given to the current steering.
    pub(crate) fn apply(&self, mut steering: SteeringSpec) -> Result<SteeringSpec, Failure> {
        if let Some(countries) = &self.countries {
            steering.countries = list(countries);
        }
        if let Some(continents) = &self.continents {
            steering.continents = list(continents);
        }
        if let Some(weight) = &self.weight {
            steering.weight = if weight.eq_ignore_ascii_case("none") {
                None
            } else {
                Some(weight.parse().map_err(|_| {
                    Failure::usage(format!("--weight takes a number or none, not {weight:?}"))
                })?)
            };
        }
        if let Some(backup) = &self.backup {
            steering.backup = on_off(backup, "backup")?;
        }
        steering.check = self.check.apply(steering.check.take())?;
        Ok(steering)
    }
}

/// The record at NAME TYPE with this address, if the zone has it.
fn find<'a>(records: &'a [Record], name: &str, rtype: &str, address: IpAddr) -> Option<&'a Record> {
    let name = name.to_ascii_lowercase();
    records.iter().find(|r| {
        let same_name = if name.ends_with('.') {
            r.fqdn.eq_ignore_ascii_case(&name)
        } else {
            r.name.eq_ignore_ascii_case(&name)
        };
        same_name
            && r.rtype.eq_ignore_ascii_case(rtype)
            && r.value.parse::<IpAddr>().is_ok_and(|a| a == address)
    })
}

pub(crate) fn record_steer(ctx: &Ctx, args: SteerArgs) -> Result<(), Failure> {
    let rtype = args.rtype.to_ascii_uppercase();
    let address: IpAddr = args.address.parse().map_err(|_| {
        Failure::usage(format!("{:?} is not an IPv4 or IPv6 address", args.address))
    })?;
    let client = ctx.client()?;
    let zone = segment(&args.zone);
    let records: Vec<Record> = client.get(&format!("zones/{zone}/records"))?.decode()?;
    let found = find(&records, &args.name, &rtype, address);
    if args.test {
        let current = found.and_then(|r| r.steering.clone()).unwrap_or_default();
        let Some(check) = args.apply(current)?.check else {
            return Err(Failure::usage(
                "--test needs a check: give --check KIND or steer a record that has one",
            ));
        };
        let name = match found {
            Some(record) => record.fqdn.clone(),
            None if args.name.ends_with('.') => args.name.clone(),
            None if args.name == "@" => args.zone.clone(),
            None => format!("{}.{}", args.name, args.zone.trim_end_matches('.')),
        };
        let body = CheckTest {
            address: address.to_string(),
            name: Some(name),
            check,
        };
        let value = client.post_json("checks/test", &body)?;
        return ctx.show(value, |result: CheckResult| render_check_result(&result));
    }
    let value = match (found, args.off) {
        (Some(record), true) => {
            client.delete(&format!("zones/{zone}/records/{}/steering", record.id), &[])?
        }
        (None, true) => {
            return Err(Failure::runtime(format!(
                "no {rtype} record {address} at {} in {}",
                args.name, args.zone
            )));
        }
        (Some(record), false) => {
            let steering = args.apply(record.steering.clone().unwrap_or_default())?;
            client.put_json(
                &format!("zones/{zone}/records/{}/steering", record.id),
                &steering,
            )?
        }
        (None, false) => {
            let spec = RecordSpec {
                name: args.name.clone(),
                rtype: rtype.clone(),
                value: address.to_string(),
                ttl: args.ttl,
                steering: Some(args.apply(SteeringSpec::default())?),
            };
            client.post_json(&format!("zones/{zone}/records"), &spec)?
        }
    };
    ctx.show(value, |record: Record| {
        steering_table(std::slice::from_ref(&record))
    })
}

pub(crate) fn record_steering(ctx: &Ctx, zone: &str) -> Result<(), Failure> {
    let value = ctx
        .client()?
        .get(&format!("zones/{}/records", segment(zone)))?;
    if ctx.global.json {
        let records: Vec<Record> = value.decode()?;
        let steered: Vec<&Record> = records.iter().filter(|r| r.steering.is_some()).collect();
        let text =
            serde_json::to_string_pretty(&steered).map_err(|e| Failure::runtime(e.to_string()))?;
        return out(format!("{text}\n").as_bytes());
    }
    let records: Vec<Record> = value.decode()?;
    let steered: Vec<Record> = records
        .into_iter()
        .filter(|r| r.steering.is_some())
        .collect();
    out(steering_table(&steered).as_bytes())
}

/// The verdict of a check run now.
pub(crate) fn render_check_result(result: &CheckResult) -> String {
    let verdict = if result.healthy {
        "healthy"
    } else {
        "unhealthy"
    };
    let status = result
        .status
        .map(|s| format!(", status {s}"))
        .unwrap_or_default();
    let reason = result
        .reason
        .as_ref()
        .map(|r| format!(": {r}"))
        .unwrap_or_default();
    format!("{verdict}{status}, {} ms{reason}\n", result.latency_ms)
}

/// One row per steered record: where it answers, its weight, backup, check and health.
pub(crate) fn steering_table(records: &[Record]) -> String {
    let mut table = Table::new(&[
        "ID",
        "NAME",
        "TYPE",
        "ADDRESS",
        "COUNTRIES",
        "CONTINENTS",
        "WEIGHT",
        "BACKUP",
        "CHECK",
        "HEALTH",
        "SINCE",
        "REASON",
    ]);
    for record in records {
        let steering = record.steering.clone().unwrap_or_default();
        let or_dash = |v: String| if v.is_empty() { "-".to_string() } else { v };
        let check = steering
            .check
            .as_ref()
            .map(|c| {
                let port = c.port.map(|p| format!(":{p}")).unwrap_or_default();
                format!("{}{}{}", c.kind, port, c.path.clone().unwrap_or_default())
            })
            .unwrap_or_else(|| "-".into());
        table.row(vec![
            record.id.to_string(),
            record.name.clone(),
            record.rtype.clone(),
            record.value.clone(),
            or_dash(steering.countries.join(",")),
            or_dash(steering.continents.join(",")),
            steering
                .weight
                .map(|w| w.to_string())
                .unwrap_or_else(|| "-".into()),
            if steering.backup {
                "yes".into()
            } else {
                "-".into()
            },
            check,
            record
                .health
                .as_ref()
                .map(|h| h.state.clone())
                .unwrap_or_else(|| "-".into()),
            record
                .health
                .as_ref()
                .and_then(|h| h.since)
                .map(crate::table::format_unix_time)
                .unwrap_or_else(|| "-".into()),
            record
                .health
                .as_ref()
                .and_then(|h| h.reason.clone())
                .unwrap_or_else(|| "-".into()),
        ]);
    }
    table.render()
}

pub(crate) fn explain(
    ctx: &Ctx,
    name: &str,
    rtype: &str,
    client_ip: &str,
    ecs: Option<&str>,
) -> Result<(), Failure> {
    let mut query = vec![("name", name), ("type", rtype), ("client", client_ip)];
    if let Some(ecs) = ecs {
        query.push(("ecs", ecs));
    }
    let value = ctx.client()?.get_query("explain", &query)?;
    ctx.show(value, |explain: Explain| render_explain(&explain))
}

pub(crate) fn render_explain(explain: &Explain) -> String {
    let mut text = format!("query   {}\n", explain.query);
    if let Some(client) = &explain.client {
        let place = match (&client.country, &client.continent) {
            (Some(country), Some(continent)) => format!("{country} ({continent})"),
            (Some(country), None) => country.clone(),
            _ => client.status.clone(),
        };
        let network = client
            .network
            .as_ref()
            .map(|n| format!(", network {n}"))
            .unwrap_or_default();
        text.push_str(&format!("client  {}: {place}{network}\n", client.address));
    }
    for step in &explain.steps {
        text.push_str(&format!("  {step}\n"));
    }
    text.push_str(&format!("rcode   {}\n", explain.rcode));
    for line in &explain.answer {
        text.push_str(&format!("answer  {line}\n"));
    }
    for line in &explain.authority {
        text.push_str(&format!("authority  {line}\n"));
    }
    if explain.ecs_scope > 0 {
        text.push_str(&format!("ECS scope /{}\n", explain.ecs_scope));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use api::CheckSpec;

    fn empty_check(kind: &str) -> CheckSpec {
        CheckSpec {
            kind: kind.to_string(),
            ..Default::default()
        }
    }

    #[test]
    fn steer_changes_only_the_options_given() {
        let current = SteeringSpec {
            countries: vec!["ID".into()],
            weight: Some(3),
            check: Some(CheckSpec {
                port: Some(8443),
                ..empty_check("https")
            }),
            ..Default::default()
        };
        let args = SteerArgs {
            continents: Some("EU".into()),
            check: CheckArgs {
                path: Some("/health".into()),
                ..Default::default()
            },
            ..Default::default()
        };
        let next = args.apply(current.clone()).unwrap();
        assert_eq!(next.countries, ["ID"]);
        assert_eq!(next.continents, ["EU"]);
        assert_eq!(next.weight, Some(3));
        let check = next.check.unwrap();
        assert_eq!(
            (check.port, check.path.as_deref()),
            (Some(8443), Some("/health"))
        );
        let cleared = SteerArgs {
            countries: Some("none".into()),
            weight: Some("none".into()),
            check: CheckArgs {
                check: Some("none".into()),
                ..Default::default()
            },
            ..Default::default()
        }
        .apply(current)
        .unwrap();
        assert!(
            cleared.countries.is_empty() && cleared.weight.is_none() && cleared.check.is_none()
        );
        assert!(
            SteerArgs {
                weight: Some("x".into()),
                ..Default::default()
            }
            .apply(SteeringSpec::default())
            .is_err()
        );
    }
}
