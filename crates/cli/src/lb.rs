//! `dnz pool …` and `dnz lb …`: pools of origins and load balancers (SPEC §7) from the command
//! line. `update`, `add-origin` and `remove-origin` change only what is given: they read the
//! pool or load balancer, merge the options into it, and PUT the whole of it back.

use std::net::IpAddr;

use api::{
    CheckSpec, LbRuleSpec, LoadBalancer, LoadBalancerSpec, Location, Origin, OriginCheck,
    OriginSpec, Pool, PoolSpec,
};
use clap::{Args, Subcommand};

use crate::client::segment;
use crate::commands::{Ctx, out};
use crate::error::Failure;
use crate::json::Json;
use crate::table::{Table, pairs};

#[derive(Subcommand, Debug)]
pub enum PoolCommand {
    /// Create a pool (with no origins; add them with `add-origin`)
    Create {
        zone: String,
        pool: String,
        /// How the pool picks one healthy origin
        #[arg(long, value_name = "weighted|failover")]
        algorithm: Option<String>,
        /// Where the pool is, for proximity steering
        #[arg(long, value_name = "LAT,LON", allow_hyphen_values = true)]
        location: Option<String>,
        /// Create the pool disabled
        #[arg(long)]
        disabled: bool,
    },
    /// List a zone's pools and their origins' health
    List { zone: String },
    /// Show a pool and its origins (weight, priority, check, health)
    Show { zone: String, pool: String },
    /// Delete a pool (refused while a load balancer names it)
    Delete { zone: String, pool: String },
    /// Change a pool; only the options given change
    Update {
        zone: String,
        pool: String,
        #[arg(long, value_name = "weighted|failover")]
        algorithm: Option<String>,
        /// Where the pool is, or `none`
        #[arg(long, value_name = "LAT,LON|none", allow_hyphen_values = true)]
        location: Option<String>,
        #[arg(long, value_name = "on|off")]
        enabled: Option<String>,
    },
    /// Add an origin to a pool, or change the options given of an origin it has
    AddOrigin(Box<OriginArgs>),
    /// Remove an origin from a pool
    RemoveOrigin {
        zone: String,
        pool: String,
        address: String,
    },
    /// Run the checks of the pool's origins now and print each verdict; nothing is saved
    Check { zone: String, pool: String },
}

/// Options of `dnz pool add-origin`; each one absent leaves an existing origin's value as it
/// is (a new origin gets the server's defaults).
#[derive(Args, Debug, Default)]
pub struct OriginArgs {
    pub zone: String,
    pub pool: String,
    /// An IPv4 or IPv6 address
    pub address: String,
    /// 1 to 100
    #[arg(long, value_name = "N", allow_hyphen_values = true)]
    pub weight: Option<i64>,
    /// Failover pools answer the lowest number first
    #[arg(long, value_name = "N", allow_hyphen_values = true)]
    pub priority: Option<i64>,
    /// The origin is not answered
    #[arg(long, conflicts_with = "enabled")]
    pub disabled: bool,
    /// Enable or disable the origin
    #[arg(long, value_name = "on|off")]
    pub enabled: Option<String>,
    #[command(flatten)]
    pub check: CheckArgs,
}

/// Health check options, as for `dnz record steer`: `--check KIND` sets (or keeps, when the
/// kind is the same) a check, `--check none` removes it, and the other options change only
/// the fields given.
#[derive(Args, Debug, Default, Clone)]
pub struct CheckArgs {
    /// Health check kind, or `none` to remove the check
    #[arg(long, value_name = "http|https|tcp|udp|icmp|none")]
    pub check: Option<String>,
    #[arg(long)]
    pub port: Option<i64>,
    #[arg(long)]
    pub path: Option<String>,
    /// Host header and TLS name [default: a record's own name; an origin's address]
    #[arg(long)]
    pub host: Option<String>,
    #[arg(long, value_name = "GET|HEAD")]
    pub method: Option<String>,
    /// Healthy statuses, e.g. 200-399, 200,204, 2xx
    #[arg(long)]
    pub status: Option<String>,
    /// Regex the body (or tcp/udp reply) must match
    #[arg(long)]
    pub body: Option<String>,
    /// What tcp and udp checks send
    #[arg(long)]
    pub payload: Option<String>,
    /// Seconds between checks [default: 60]
    #[arg(long, value_name = "S")]
    pub interval: Option<i64>,
    /// Milliseconds
    #[arg(long, value_name = "MS")]
    pub timeout: Option<i64>,
    #[arg(long, value_name = "N")]
    pub down_after: Option<i64>,
    #[arg(long, value_name = "N")]
    pub up_after: Option<i64>,
}

impl CheckArgs {
    fn has_options(&self) -> bool {
        self.port.is_some()
            || self.path.is_some()
            || self.host.is_some()
            || self.method.is_some()
            || self.status.is_some()
            || self.body.is_some()
            || self.payload.is_some()
            || self.interval.is_some()
            || self.timeout.is_some()
            || self.down_after.is_some()
            || self.up_after.is_some()
    }

    /// Applies the options given to the current check.
    pub(crate) fn apply(&self, current: Option<CheckSpec>) -> Result<Option<CheckSpec>, Failure> {
        let mut check = match self.check.as_deref() {
            Some("none") => {
                if self.has_options() {
                    return Err(Failure::usage(
                        "--check none removes the check; it takes no check options",
                    ));
                }
                return Ok(None);
            }
            Some(kind) => Some(current.filter(|c| c.kind == kind).unwrap_or(CheckSpec {
                kind: kind.to_string(),
                ..Default::default()
            })),
            None if self.has_options() && current.is_none() => {
                return Err(Failure::usage(
                    "check options need --check KIND (there is no check yet)",
                ));
            }
            None => current,
        };
        if let Some(check) = &mut check {
            macro_rules! set {
                ($($field:ident),*) => { $( if let Some(v) = &self.$field { check.$field = Some(v.clone()); } )* };
            }
            set!(
                port, path, host, method, status, body, payload, interval, timeout, down_after,
                up_after
            );
        }
        Ok(check)
    }
}

#[derive(Subcommand, Debug)]
pub enum LbCommand {
    /// Create a load balancer: it owns A, AAAA and CNAME at NAME
    Create(Box<LbCreateArgs>),
    /// List a zone's load balancers
    List { zone: String },
    /// Show a load balancer: pools, rules, fallback, steering, affinity
    Show { zone: String, name: String },
    /// Delete a load balancer (its name is free for records again)
    Delete { zone: String, name: String },
    /// Change a load balancer; only the options given change
    Update(Box<LbUpdateArgs>),
}

#[derive(Args, Debug, Default)]
pub struct LbCreateArgs {
    pub zone: String,
    /// Relative to the zone (`www`, `@`) or absolute with a trailing dot
    pub name: String,
    /// The default pools, in order
    #[arg(long, value_name = "P1,P2", required = true)]
    pub pools: String,
    #[command(flatten)]
    pub options: LbOptions,
}

#[derive(Args, Debug, Default)]
pub struct LbUpdateArgs {
    pub zone: String,
    pub name: String,
    /// The default pools, in order
    #[arg(long, value_name = "P1,P2")]
    pub pools: Option<String>,
    #[command(flatten)]
    pub options: LbOptions,
}

/// The options `lb create` and `lb update` share; each absent one leaves the value as it is.
#[derive(Args, Debug, Default, Clone)]
pub struct LbOptions {
    /// The pool to try when no pool of the order can answer, or `none`
    #[arg(long, value_name = "POOL|none")]
    pub fallback: Option<String>,
    /// How the pools are ordered
    #[arg(long, value_name = "off|random|geographic|proximity")]
    pub steering: Option<String>,
    /// Where the client is taken to be: the answering PoP, or the resolver (GeoIP)
    #[arg(long, value_name = "pop|resolver")]
    pub locate_by: Option<String>,
    /// A rule for geographic steering, repeatable: `country:DE=P1,P2`, `continent:EU=P3`,
    /// `pop:fra=P1`; `none` removes every rule. Given rules replace all the current ones.
    #[arg(long = "rule", value_name = "KIND:KEY=P1,P2")]
    pub rules: Vec<String>,
    /// Session affinity
    #[arg(long, value_name = "none|client-ip")]
    pub affinity: Option<String>,
    /// TTL of the answers, 5 to 3600 s [default: 30]
    #[arg(long, value_name = "SECONDS", allow_hyphen_values = true)]
    pub ttl: Option<i64>,
    /// Disable the load balancer: no A/AAAA answers
    #[arg(long, conflicts_with = "enabled")]
    pub disabled: bool,
    /// Enable or disable the load balancer
    #[arg(long, value_name = "on|off")]
    pub enabled: Option<String>,
}

// ---- pure parts ----------------------------------------------------------------------------

fn on_off(text: &str, flag: &str) -> Result<bool, Failure> {
    match text {
        "on" | "true" | "yes" => Ok(true),
        "off" | "false" | "no" => Ok(false),
        other => Err(Failure::usage(format!(
            "--{flag} takes on or off, not {other:?}"
        ))),
    }
}

/// `P1,P2` as a list of names; empty entries are dropped.
fn names(text: &str) -> Vec<String> {
    text.split(',')
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .collect()
}

/// `LAT,LON` as a location; `none` (when allowed) as no location. The range is the server's
/// to check.
pub(crate) fn parse_location(text: &str, allow_none: bool) -> Result<Option<Location>, Failure> {
    if allow_none && text.eq_ignore_ascii_case("none") {
        return Ok(None);
    }
    let parsed = text.split_once(',').and_then(|(lat, lon)| {
        Some(Location {
            latitude: lat.trim().parse().ok()?,
            longitude: lon.trim().parse().ok()?,
        })
    });
    match parsed {
        Some(location) => Ok(Some(location)),
        None => Err(Failure::usage(format!(
            "--location takes LAT,LON in degrees{}, not {text:?}",
            if allow_none { " or none" } else { "" }
        ))),
    }
}

/// `country:DE=P1,P2`, `continent:EU=P3` or `pop:fra=P1` as a rule. Country and continent
/// codes are upper-cased; the server checks that they exist.
pub(crate) fn parse_rule(text: &str) -> Result<LbRuleSpec, Failure> {
    let bad = || {
        Failure::usage(format!(
            "--rule takes KIND:KEY=POOL[,POOL…] (country:DE=P1,P2, continent:EU=P3, pop:fra=P1), not {text:?}"
        ))
    };
    let (left, pools) = text.split_once('=').ok_or_else(bad)?;
    let (kind, key) = left.split_once(':').ok_or_else(bad)?;
    let kind = kind.trim().to_ascii_lowercase();
    let key = key.trim();
    let pools = names(pools);
    if key.is_empty() || pools.is_empty() {
        return Err(bad());
    }
    let key = match kind.as_str() {
        "country" | "continent" => key.to_ascii_uppercase(),
        "pop" => key.to_ascii_lowercase(),
        other => {
            return Err(Failure::usage(format!(
                "--rule kind {other:?} is not one of pop, country, continent"
            )));
        }
    };
    Ok(LbRuleSpec { kind, key, pools })
}

/// The `--rule` options: `None` when none were given, an empty list for `none`.
fn parse_rules(rules: &[String]) -> Result<Option<Vec<LbRuleSpec>>, Failure> {
    if rules.is_empty() {
        return Ok(None);
    }
    if rules.len() == 1 && rules[0].trim().eq_ignore_ascii_case("none") {
        return Ok(Some(Vec::new()));
    }
    rules
        .iter()
        .map(|r| parse_rule(r))
        .collect::<Result<_, _>>()
        .map(Some)
}

impl LbOptions {
    /// Applies the options given to a load balancer (`pools`: the `--pools` option).
    pub(crate) fn apply(
        &self,
        pools: Option<&str>,
        mut spec: LoadBalancerSpec,
    ) -> Result<LoadBalancerSpec, Failure> {
        if let Some(pools) = pools {
            spec.pools = names(pools);
            if spec.pools.is_empty() {
                return Err(Failure::usage("--pools takes one or more pool names"));
            }
        }
        if let Some(fallback) = &self.fallback {
            let fallback = fallback.trim();
            spec.fallback = (!fallback.is_empty() && !fallback.eq_ignore_ascii_case("none"))
                .then(|| fallback.to_string());
        }
        if let Some(steering) = &self.steering {
            spec.steering = Some(steering.clone());
        }
        if let Some(locate_by) = &self.locate_by {
            spec.locate_by = Some(locate_by.clone());
        }
        if let Some(rules) = parse_rules(&self.rules)? {
            spec.rules = rules;
        }
        if let Some(affinity) = &self.affinity {
            spec.affinity = Some(affinity.clone());
        }
        if let Some(ttl) = self.ttl {
            spec.ttl = Some(ttl);
        }
        if self.disabled {
            spec.enabled = Some(false);
        }
        if let Some(enabled) = &self.enabled {
            spec.enabled = Some(on_off(enabled, "enabled")?);
        }
        Ok(spec)
    }
}

impl OriginArgs {
    fn address(&self) -> Result<IpAddr, Failure> {
        self.address.trim().parse().map_err(|_| {
            Failure::usage(format!("{:?} is not an IPv4 or IPv6 address", self.address))
        })
    }

    /// Applies the options given to an origin (the current one, or a new one).
    pub(crate) fn apply(&self, mut origin: OriginSpec) -> Result<OriginSpec, Failure> {
        if let Some(weight) = self.weight {
            origin.weight = Some(weight);
        }
        if let Some(priority) = self.priority {
            origin.priority = Some(priority);
        }
        if self.disabled {
            origin.enabled = Some(false);
        }
        if let Some(enabled) = &self.enabled {
            origin.enabled = Some(on_off(enabled, "enabled")?);
        }
        origin.check = self.check.apply(origin.check.take())?;
        Ok(origin)
    }
}

/// A pool as the API shows it, as the body that PUTs it back unchanged.
pub(crate) fn pool_spec(pool: &Pool) -> PoolSpec {
    PoolSpec {
        name: pool.name.clone(),
        enabled: Some(pool.enabled),
        algorithm: Some(pool.algorithm.clone()),
        location: pool.location,
        origins: pool
            .origins
            .iter()
            .map(|o| OriginSpec {
                address: o.address.clone(),
                enabled: Some(o.enabled),
                weight: Some(o.weight.into()),
                priority: Some(o.priority.into()),
                check: o.check.clone(),
            })
            .collect(),
    }
}

/// Changes only the pool options given.
pub(crate) fn update_pool_spec(
    mut spec: PoolSpec,
    algorithm: Option<&str>,
    location: Option<&str>,
    enabled: Option<&str>,
) -> Result<PoolSpec, Failure> {
    if let Some(algorithm) = algorithm {
        spec.algorithm = Some(algorithm.to_string());
    }
    if let Some(location) = location {
        spec.location = parse_location(location, true)?;
    }
    if let Some(enabled) = enabled {
        spec.enabled = Some(on_off(enabled, "enabled")?);
    }
    Ok(spec)
}

// ---- commands ------------------------------------------------------------------------------

fn pool_path(zone: &str, pool: &str) -> String {
    format!("zones/{}/pools/{}", segment(zone), segment(pool))
}

fn lb_path(zone: &str, name: &str) -> String {
    format!("zones/{}/load-balancers/{}", segment(zone), segment(name))
}

fn deleted(ctx: &Ctx, value: Json, message: &str) -> Result<(), Failure> {
    match (ctx.global.json, value.is_empty()) {
        (true, true) => Ok(()),
        (true, false) => out(value.pretty().as_bytes()),
        (false, _) => out(message.as_bytes()),
    }
}

pub(crate) fn pool(ctx: &Ctx, command: PoolCommand) -> Result<(), Failure> {
    match command {
        PoolCommand::Create {
            zone,
            pool,
            algorithm,
            location,
            disabled,
        } => {
            let spec = PoolSpec {
                name: pool,
                enabled: disabled.then_some(false),
                algorithm,
                location: match location {
                    Some(text) => parse_location(&text, false)?,
                    None => None,
                },
                origins: Vec::new(),
            };
            let value = ctx
                .client()?
                .post_json(&format!("zones/{}/pools", segment(&zone)), &spec)?;
            ctx.show(value, |pool: Pool| {
                format!("created pool {} ({})\n", pool.name, pool.algorithm)
            })
        }
        PoolCommand::List { zone } => {
            let value = ctx
                .client()?
                .get(&format!("zones/{}/pools", segment(&zone)))?;
            ctx.show(value, |pools: Vec<Pool>| pools_table(&pools))
        }
        PoolCommand::Show { zone, pool } => {
            let value = ctx.client()?.get(&pool_path(&zone, &pool))?;
            ctx.show(value, |pool: Pool| pool_details(&pool))
        }
        PoolCommand::Delete { zone, pool } => {
            let value = ctx.client()?.delete(&pool_path(&zone, &pool), &[])?;
            deleted(ctx, value, &format!("deleted pool {pool}\n"))
        }
        PoolCommand::Update {
            zone,
            pool,
            algorithm,
            location,
            enabled,
        } => {
            // Checked before anything is read.
            if let Some(location) = &location {
                parse_location(location, true)?;
            }
            if let Some(enabled) = &enabled {
                on_off(enabled, "enabled")?;
            }
            let client = ctx.client()?;
            let path = pool_path(&zone, &pool);
            let current: Pool = client.get(&path)?.decode()?;
            let spec = update_pool_spec(
                pool_spec(&current),
                algorithm.as_deref(),
                location.as_deref(),
                enabled.as_deref(),
            )?;
            let value = client.put_json(&path, &spec)?;
            ctx.show(value, |pool: Pool| pool_details(&pool))
        }
        PoolCommand::AddOrigin(args) => add_origin(ctx, *args),
        PoolCommand::RemoveOrigin {
            zone,
            pool,
            address,
        } => {
            let wanted: IpAddr = address.trim().parse().map_err(|_| {
                Failure::usage(format!("{address:?} is not an IPv4 or IPv6 address"))
            })?;
            let client = ctx.client()?;
            let path = pool_path(&zone, &pool);
            let current: Pool = client.get(&path)?.decode()?;
            let mut spec = pool_spec(&current);
            let before = spec.origins.len();
            spec.origins
                .retain(|o| o.address.parse::<IpAddr>().ok() != Some(wanted));
            if spec.origins.len() == before {
                return Err(Failure::runtime(format!(
                    "pool {} has no origin {wanted}",
                    current.name
                )));
            }
            let value = client.put_json(&path, &spec)?;
            ctx.show(value, |pool: Pool| {
                format!("removed origin {wanted} from pool {}\n", pool.name)
            })
        }
        PoolCommand::Check { zone, pool } => {
            let value = ctx.client()?.post_json(
                &format!("{}/check", pool_path(&zone, &pool)),
                &serde_json::json!({}),
            )?;
            ctx.show(value, |checks: Vec<OriginCheck>| {
                if checks.is_empty() {
                    format!("no origin of pool {pool} has a check\n")
                } else {
                    checks_table(&checks)
                }
            })
        }
    }
}

fn add_origin(ctx: &Ctx, args: OriginArgs) -> Result<(), Failure> {
    let address = args.address()?;
    let client = ctx.client()?;
    let path = pool_path(&args.zone, &args.pool);
    let current: Pool = client.get(&path)?.decode()?;
    let mut spec = pool_spec(&current);
    let existing = spec
        .origins
        .iter()
        .position(|o| o.address.parse::<IpAddr>().ok() == Some(address));
    let verb = match existing {
        Some(idx) => {
            spec.origins[idx] = args.apply(spec.origins[idx].clone())?;
            "updated"
        }
        None => {
            let origin = args.apply(OriginSpec {
                address: address.to_string(),
                ..Default::default()
            })?;
            spec.origins.push(origin);
            "added"
        }
    };
    let value = client.put_json(&path, &spec)?;
    ctx.show(value, |pool: Pool| {
        let mut text = format!("{verb} origin {address} in pool {}\n", pool.name);
        let shown: Vec<Origin> = pool
            .origins
            .iter()
            .filter(|o| o.address.parse::<IpAddr>().ok() == Some(address))
            .cloned()
            .collect();
        text.push_str(&origins_table(&shown));
        text
    })
}

pub(crate) fn lb(ctx: &Ctx, command: LbCommand) -> Result<(), Failure> {
    match command {
        LbCommand::Create(args) => {
            let spec = args.options.apply(
                Some(&args.pools),
                LoadBalancerSpec {
                    name: args.name.clone(),
                    ..Default::default()
                },
            )?;
            let value = ctx.client()?.post_json(
                &format!("zones/{}/load-balancers", segment(&args.zone)),
                &spec,
            )?;
            ctx.show(value, |lb: LoadBalancer| {
                format!("created load balancer {}\n{}", lb.fqdn, lb_details(&lb))
            })
        }
        LbCommand::List { zone } => {
            let value = ctx
                .client()?
                .get(&format!("zones/{}/load-balancers", segment(&zone)))?;
            ctx.show(value, |lbs: Vec<LoadBalancer>| lbs_table(&lbs))
        }
        LbCommand::Show { zone, name } => {
            let value = ctx.client()?.get(&lb_path(&zone, &name))?;
            ctx.show(value, |lb: LoadBalancer| lb_details(&lb))
        }
        LbCommand::Delete { zone, name } => {
            let value = ctx.client()?.delete(&lb_path(&zone, &name), &[])?;
            deleted(ctx, value, &format!("deleted load balancer {name}\n"))
        }
        LbCommand::Update(args) => {
            // Bad options are usage errors before anything is read.
            args.options
                .apply(args.pools.as_deref(), LoadBalancerSpec::default())?;
            let client = ctx.client()?;
            let path = lb_path(&args.zone, &args.name);
            let current: LoadBalancer = client.get(&path)?.decode()?;
            let spec = args.options.apply(args.pools.as_deref(), current.spec)?;
            // By id: a rename cannot lose the load balancer.
            let path = format!(
                "zones/{}/load-balancers/{}",
                segment(&args.zone),
                current.id
            );
            let value = client.put_json(&path, &spec)?;
            ctx.show(value, |lb: LoadBalancer| lb_details(&lb))
        }
    }
}

// ---- rendering -----------------------------------------------------------------------------

fn yes_no(value: bool) -> String {
    if value { "yes" } else { "no" }.into()
}

fn location_text(location: Option<Location>) -> String {
    location
        .map(|l| format!("{},{}", l.latitude, l.longitude))
        .unwrap_or_else(|| "-".into())
}

fn check_text(check: Option<&CheckSpec>) -> String {
    check
        .map(|c| {
            let port = c.port.map(|p| format!(":{p}")).unwrap_or_default();
            // Only http and https checks have a path.
            let path = match c.kind.as_str() {
                "http" | "https" => c.path.clone().unwrap_or_default(),
                _ => String::new(),
            };
            format!("{}{port}{path}", c.kind)
        })
        .unwrap_or_else(|| "-".into())
}

/// One row per pool; the origins with their health in one column.
pub(crate) fn pools_table(pools: &[Pool]) -> String {
    let mut table = Table::new(&["ID", "NAME", "ENABLED", "ALGORITHM", "LOCATION", "ORIGINS"]);
    for pool in pools {
        let origins: Vec<String> = pool
            .origins
            .iter()
            .map(|o| {
                let off = if o.enabled { "" } else { ", disabled" };
                format!("{} ({}{off})", o.address, o.health)
            })
            .collect();
        table.row(vec![
            pool.id.to_string(),
            pool.name.clone(),
            yes_no(pool.enabled),
            pool.algorithm.clone(),
            location_text(pool.location),
            if origins.is_empty() {
                "-".into()
            } else {
                origins.join(", ")
            },
        ]);
    }
    table.render()
}

pub(crate) fn origins_table(origins: &[Origin]) -> String {
    let mut table = Table::new(&[
        "ADDRESS", "ENABLED", "WEIGHT", "PRIORITY", "CHECK", "HEALTH", "SINCE", "REASON",
    ]);
    for origin in origins {
        let state = origin.check_state.as_ref();
        table.row(vec![
            origin.address.clone(),
            yes_no(origin.enabled),
            origin.weight.to_string(),
            origin.priority.to_string(),
            check_text(origin.check.as_ref()),
            origin.health.clone(),
            state
                .and_then(|h| h.since)
                .map(crate::table::format_unix_time)
                .unwrap_or_else(|| "-".into()),
            state
                .and_then(|h| h.reason.clone())
                .unwrap_or_else(|| "-".into()),
        ]);
    }
    table.render()
}

pub(crate) fn pool_details(pool: &Pool) -> String {
    let mut text = pairs(&[
        ("pool", pool.name.clone()),
        ("id", pool.id.to_string()),
        ("enabled", yes_no(pool.enabled)),
        ("algorithm", pool.algorithm.clone()),
        ("location", location_text(pool.location)),
    ]);
    if pool.origins.is_empty() {
        text.push_str("no origins\n");
    } else {
        text.push('\n');
        text.push_str(&origins_table(&pool.origins));
    }
    text
}

pub(crate) fn checks_table(checks: &[OriginCheck]) -> String {
    let mut table = Table::new(&["ADDRESS", "VERDICT", "STATUS", "LATENCY", "REASON"]);
    for check in checks {
        let result = &check.result;
        table.row(vec![
            check.address.clone(),
            if result.healthy {
                "healthy".into()
            } else {
                "unhealthy".into()
            },
            result
                .status
                .map(|s| s.to_string())
                .unwrap_or_else(|| "-".into()),
            format!("{} ms", result.latency_ms),
            result.reason.clone().unwrap_or_else(|| "-".into()),
        ]);
    }
    table.render()
}

fn rule_text(rule: &LbRuleSpec) -> String {
    format!("{}:{}={}", rule.kind, rule.key, rule.pools.join(","))
}

fn or_default(value: &Option<String>, default: &str) -> String {
    value.clone().unwrap_or_else(|| default.to_string())
}

pub(crate) fn lbs_table(lbs: &[LoadBalancer]) -> String {
    let mut table = Table::new(&[
        "ID", "NAME", "ENABLED", "TTL", "STEERING", "LOCATE", "POOLS", "RULES", "FALLBACK",
        "AFFINITY",
    ]);
    for lb in lbs {
        let spec = &lb.spec;
        let rules: Vec<String> = spec.rules.iter().map(rule_text).collect();
        table.row(vec![
            lb.id.to_string(),
            lb.fqdn.clone(),
            yes_no(spec.enabled.unwrap_or(true)),
            spec.ttl.map_or("-".into(), |t| t.to_string()),
            or_default(&spec.steering, "off"),
            or_default(&spec.locate_by, "pop"),
            spec.pools.join(","),
            if rules.is_empty() {
                "-".into()
            } else {
                rules.join(" ")
            },
            or_default(&spec.fallback, "-"),
            or_default(&spec.affinity, "none"),
        ]);
    }
    table.render()
}

pub(crate) fn lb_details(lb: &LoadBalancer) -> String {
    let spec = &lb.spec;
    let mut rows = vec![
        ("load balancer", lb.fqdn.clone()),
        ("id", lb.id.to_string()),
        ("enabled", yes_no(spec.enabled.unwrap_or(true))),
        ("TTL", spec.ttl.map_or("-".into(), |t| t.to_string())),
        ("steering", or_default(&spec.steering, "off")),
        ("locate by", or_default(&spec.locate_by, "pop")),
        ("pools", spec.pools.join(", ")),
    ];
    if spec.rules.is_empty() {
        rows.push(("rules", "-".into()));
    }
    for rule in &spec.rules {
        rows.push(("rule", rule_text(rule)));
    }
    rows.push(("fallback", or_default(&spec.fallback, "-")));
    rows.push(("affinity", or_default(&spec.affinity, "none")));
    pairs(&rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules_parse_kind_key_and_pools() {
        assert_eq!(
            parse_rule("country:de=P1, P2").unwrap(),
            LbRuleSpec {
                kind: "country".into(),
                key: "DE".into(),
                pools: vec!["P1".into(), "P2".into()],
            }
        );
        assert_eq!(
            parse_rule("continent:EU=p3").unwrap(),
            LbRuleSpec {
                kind: "continent".into(),
                key: "EU".into(),
                pools: vec!["p3".into()],
            }
        );
        assert_eq!(parse_rule("POP:FRA=p1").unwrap().key, "fra");
        for bad in [
            "country:DE",
            "DE=p1",
            "country:=p1",
            "country:DE=",
            "planet:mars=p1",
        ] {
            let error = parse_rule(bad).unwrap_err();
            assert_eq!(error.exit_code(), 2, "{bad}");
        }
        assert_eq!(parse_rules(&[]).unwrap(), None);
        assert_eq!(parse_rules(&["none".into()]).unwrap(), Some(Vec::new()));
    }

    #[test]
    fn locations_parse_and_none_only_where_allowed() {
        assert_eq!(
            parse_location("-33.9, 151.2", false).unwrap(),
            Some(Location {
                latitude: -33.9,
                longitude: 151.2
            })
        );
        assert_eq!(parse_location("none", true).unwrap(), None);
        assert!(parse_location("none", false).is_err());
        assert!(parse_location("50", true).is_err());
    }

    fn current_lb() -> LoadBalancerSpec {
        LoadBalancerSpec {
            name: "www".into(),
            enabled: Some(true),
            ttl: Some(60),
            pools: vec!["eu".into(), "us".into()],
            rules: vec![parse_rule("country:DE=eu").unwrap()],
            fallback: Some("backup".into()),
            steering: Some("geographic".into()),
            locate_by: Some("resolver".into()),
            affinity: Some("client-ip".into()),
        }
    }

    #[test]
    fn lb_update_changes_only_the_options_given() {
        let current = current_lb();
        let only_ttl = LbOptions {
            ttl: Some(120),
            ..Default::default()
        };
        let next = only_ttl.apply(None, current.clone()).unwrap();
        assert_eq!(
            next,
            LoadBalancerSpec {
                ttl: Some(120),
                ..current.clone()
            }
        );
        let next = LbOptions {
            fallback: Some("none".into()),
            rules: vec!["continent:EU=us".into(), "pop:fra=eu,us".into()],
            enabled: Some("off".into()),
            ..Default::default()
        }
        .apply(Some("us"), current.clone())
        .unwrap();
        assert_eq!(next.pools, ["us"]);
        assert_eq!(next.fallback, None);
        assert_eq!(next.enabled, Some(false));
        assert_eq!(
            next.rules.iter().map(rule_text).collect::<Vec<_>>(),
            ["continent:EU=us", "pop:fra=eu,us"]
        );
        assert_eq!(
            (next.steering, next.locate_by, next.affinity, next.ttl),
            (
                current.steering,
                current.locate_by,
                current.affinity,
                current.ttl
            )
        );
        let cleared = LbOptions {
            rules: vec!["none".into()],
            disabled: true,
            ..Default::default()
        }
        .apply(None, current_lb())
        .unwrap();
        assert!(cleared.rules.is_empty());
        assert_eq!(cleared.enabled, Some(false));
        assert!(LbOptions::default().apply(Some(","), current_lb()).is_err());
    }

    #[test]
    fn pool_update_and_origins_change_only_the_options_given() {
        let pool = Pool {
            id: 7,
            name: "eu".into(),
            enabled: true,
            algorithm: "failover".into(),
            location: Some(Location {
                latitude: 50.1,
                longitude: 8.7,
            }),
            origins: vec![Origin {
                id: 1,
                address: "192.0.2.1".into(),
                enabled: true,
                weight: 3,
                priority: 1,
                check: Some(CheckSpec {
                    kind: "https".into(),
                    port: Some(8443),
                    ..Default::default()
                }),
                health: "healthy".into(),
                check_state: None,
            }],
        };
        let spec = pool_spec(&pool);
        let next = update_pool_spec(spec.clone(), None, None, Some("off")).unwrap();
        assert_eq!(
            next,
            PoolSpec {
                enabled: Some(false),
                ..spec.clone()
            }
        );
        let next = update_pool_spec(spec.clone(), Some("weighted"), Some("none"), None).unwrap();
        assert_eq!(next.algorithm.as_deref(), Some("weighted"));
        assert_eq!(next.location, None);
        assert_eq!(next.origins, spec.origins);

        // An origin: only --path changes; the check's kind and port stay.
        let args = OriginArgs {
            check: CheckArgs {
                path: Some("/health".into()),
                ..Default::default()
            },
            ..Default::default()
        };
        let origin = args.apply(spec.origins[0].clone()).unwrap();
        assert_eq!((origin.weight, origin.priority), (Some(3), Some(1)));
        let check = origin.check.unwrap();
        assert_eq!(
            (check.kind.as_str(), check.port, check.path.as_deref()),
            ("https", Some(8443), Some("/health"))
        );
        // Another kind starts a fresh check; none removes it; options alone need a check.
        let args = OriginArgs {
            weight: Some(5),
            check: CheckArgs {
                check: Some("tcp".into()),
                port: Some(80),
                ..Default::default()
            },
            ..Default::default()
        };
        let origin = args.apply(spec.origins[0].clone()).unwrap();
        assert_eq!(origin.weight, Some(5));
        assert_eq!(
            origin.check,
            Some(CheckSpec {
                kind: "tcp".into(),
                port: Some(80),
                ..Default::default()
            })
        );
        let removed = OriginArgs {
            check: CheckArgs {
                check: Some("none".into()),
                ..Default::default()
            },
            ..Default::default()
        }
        .apply(spec.origins[0].clone())
        .unwrap();
        assert_eq!(removed.check, None);
        let needs_kind = OriginArgs {
            check: CheckArgs {
                port: Some(80),
                ..Default::default()
            },
            ..Default::default()
        };
        assert!(needs_kind.apply(OriginSpec::default()).is_err());
    }

    #[test]
    fn tables_show_origin_health() {
        let pool = Pool {
            id: 1,
            name: "eu".into(),
            enabled: true,
            algorithm: "weighted".into(),
            location: None,
            origins: vec![
                Origin {
                    id: 1,
                    address: "192.0.2.1".into(),
                    enabled: true,
                    weight: 1,
                    priority: 0,
                    check: None,
                    health: "healthy".into(),
                    check_state: None,
                },
                Origin {
                    id: 2,
                    address: "192.0.2.2".into(),
                    enabled: false,
                    weight: 1,
                    priority: 0,
                    check: Some(CheckSpec {
                        kind: "tcp".into(),
                        port: Some(80),
                        ..Default::default()
                    }),
                    health: "unknown".into(),
                    check_state: None,
                },
            ],
        };
        let list = pools_table(std::slice::from_ref(&pool));
        assert!(
            list.contains("192.0.2.1 (healthy), 192.0.2.2 (unknown, disabled)"),
            "{list}"
        );
        let shown = pool_details(&pool);
        assert!(
            shown.contains("tcp:80") && shown.contains("unknown"),
            "{shown}"
        );
    }
}
