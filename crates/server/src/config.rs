//! `dnz serve` settings: flags, then `DNZ_*` variables (both through clap), then `dnz.toml`,
//! then defaults.

use std::net::SocketAddr;
use std::path::PathBuf;

use anyhow::{Context, bail};
use serde::Deserialize;

/// Flags of `dnz serve`. Every flag also reads a `DNZ_*` variable and a key of the config file.
#[derive(Clone, Debug, Default, clap::Args)]
pub struct ServeArgs {
    /// DNS listen address (UDP and TCP); repeat for several. Default 127.0.0.1:5300.
    #[arg(long = "dns", env = "DNZ_DNS", value_delimiter = ',')]
    pub dns: Vec<SocketAddr>,
    /// HTTP API and dashboard address. Default 127.0.0.1:8053.
    #[arg(long, env = "DNZ_HTTP")]
    pub http: Option<SocketAddr>,
    /// Directory for dnz.db and admin.token. Default ./dnz-data.
    #[arg(long, env = "DNZ_DATA_DIR")]
    pub data_dir: Option<PathBuf>,
    /// Store URL; default sqlite://<data dir>/dnz.db.
    #[arg(long, env = "DNZ_DATABASE")]
    pub database: Option<String>,
    /// Settings file (TOML); its keys are the flag names with `_` for `-`.
    #[arg(long, env = "DNZ_CONFIG")]
    pub config: Option<PathBuf>,
    /// Load the demo zone example.com.
    #[arg(long, env = "DNZ_DEMO")]
    pub demo: bool,
    /// UDP worker threads; default one per core.
    #[arg(long, env = "DNZ_WORKERS")]
    pub workers: Option<usize>,
    /// Seconds a DNS TCP connection may stay idle. Default 10.
    #[arg(long, env = "DNZ_TCP_IDLE_TIMEOUT")]
    pub tcp_idle_timeout: Option<u64>,
    /// Most DNS TCP connections open at once. Default 1024.
    #[arg(long, env = "DNZ_TCP_MAX_CONNECTIONS")]
    pub tcp_max_connections: Option<usize>,
    /// Answer CH TXT version.bind with this text (off when unset).
    #[arg(long, env = "DNZ_VERSION_BIND")]
    pub version_bind: Option<String>,
    /// Extra trusted CA certificate (PEM) for https health checks; repeat for several.
    #[arg(long = "check-ca", env = "DNZ_CHECK_CA", value_delimiter = ',')]
    pub check_ca: Vec<PathBuf>,
    /// Most health checks in flight at once. Default 256.
    #[arg(long, env = "DNZ_CHECK_CONCURRENCY")]
    pub check_concurrency: Option<usize>,
    /// Answer CH TXT id.server / hostname.bind with this text (off when unset).
    #[arg(long, env = "DNZ_SERVER_ID")]
    pub server_id: Option<String>,
    /// This server's PoP name, matched by load balancer rules `pop:NAME`.
    #[arg(long, env = "DNZ_POP")]
    pub pop: Option<String>,
    /// The PoP's country (ISO 3166 alpha-2), for load balancers that locate clients by PoP.
    #[arg(long, env = "DNZ_POP_COUNTRY")]
    pub pop_country: Option<String>,
    /// The PoP's continent (AF AN AS EU NA OC SA); default the country's.
    #[arg(long, env = "DNZ_POP_CONTINENT")]
    pub pop_continent: Option<String>,
    /// The PoP's coordinates `LAT,LON`, for proximity steering.
    #[arg(long, env = "DNZ_POP_LOCATION")]
    pub pop_location: Option<String>,
    /// Network interface whose UDP DNS traffic is answered over XDP (AF_XDP sockets, one per
    /// receive queue) instead of the kernel's UDP sockets; repeat for several. Needs root.
    #[arg(long = "xdp", env = "DNZ_XDP", value_delimiter = ',')]
    pub xdp: Vec<String>,
}

/// The keys of `dnz.toml`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileConfig {
    dns: Option<Vec<SocketAddr>>,
    http: Option<SocketAddr>,
    data_dir: Option<PathBuf>,
    database: Option<String>,
    demo: Option<bool>,
    workers: Option<usize>,
    tcp_idle_timeout: Option<u64>,
    tcp_max_connections: Option<usize>,
    version_bind: Option<String>,
    server_id: Option<String>,
    check_ca: Option<Vec<PathBuf>>,
    check_concurrency: Option<usize>,
    pop: Option<String>,
    pop_country: Option<String>,
    pop_continent: Option<String>,
    pop_location: Option<String>,
    xdp: Option<Vec<String>>,
}

/// Validated settings.
#[derive(Clone, Debug)]
pub struct ServeConfig {
    pub dns: Vec<SocketAddr>,
    pub http: SocketAddr,
    pub data_dir: PathBuf,
    pub database: String,
    pub demo: bool,
    pub workers: usize,
    pub tcp_idle_timeout: std::time::Duration,
    pub tcp_max_connections: usize,
    pub version_bind: Option<String>,
    pub server_id: Option<String>,
    pub check_ca: Vec<PathBuf>,
    pub check_concurrency: usize,
    /// Where this server is, for load balancers (SPEC §7).
    pub pop: model::snapshot::Pop,
    /// Interfaces answered over XDP.
    pub xdp: Vec<String>,
}

impl ServeArgs {
    /// Merges flags and variables with the config file and defaults.
    pub fn resolve(self) -> anyhow::Result<ServeConfig> {
        let file = match &self.config {
            Some(path) => {
                let text = std::fs::read_to_string(path)
                    .with_context(|| format!("reading {}", path.display()))?;
                toml::from_str::<FileConfig>(&text)
                    .with_context(|| format!("in {}", path.display()))?
            }
            None => FileConfig::default(),
        };
        let dns = if !self.dns.is_empty() {
            self.dns
        } else {
            file.dns
                .unwrap_or_else(|| vec![SocketAddr::from(([127, 0, 0, 1], 5300))])
        };
        if dns.is_empty() {
            bail!("no DNS listen address: give at least one --dns");
        }
        let data_dir = self
            .data_dir
            .or(file.data_dir)
            .unwrap_or_else(|| PathBuf::from("dnz-data"));
        let database = self
            .database
            .or(file.database)
            .unwrap_or_else(|| format!("sqlite://{}", data_dir.join("dnz.db").display()));
        if !database.starts_with("sqlite:") {
            bail!("--database {database:?}: only sqlite:// stores are supported by this build");
        }
        let workers = self.workers.or(file.workers).unwrap_or_else(|| {
            std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(1)
        });
        if workers == 0 || workers > 1024 {
            bail!("--workers {workers}: must be between 1 and 1024");
        }
        let idle = self
            .tcp_idle_timeout
            .or(file.tcp_idle_timeout)
            .unwrap_or(10);
        if idle == 0 || idle > 3600 {
            bail!("--tcp-idle-timeout {idle}: must be between 1 and 3600 seconds");
        }
        let max_conn = self
            .tcp_max_connections
            .or(file.tcp_max_connections)
            .unwrap_or(1024);
        if max_conn == 0 {
            bail!("--tcp-max-connections must be at least 1");
        }
        let pop = resolve_pop(
            self.pop.or(file.pop),
            self.pop_country.or(file.pop_country),
            self.pop_continent.or(file.pop_continent),
            self.pop_location.or(file.pop_location),
        )?;
        let xdp = if self.xdp.is_empty() {
            file.xdp.unwrap_or_default()
        } else {
            self.xdp
        };
        if let Some(bad) = xdp
            .iter()
            .find(|name| name.is_empty() || name.len() >= libc::IFNAMSIZ || name.contains('/'))
        {
            bail!("--xdp {bad:?}: not a network interface name");
        }
        Ok(ServeConfig {
            pop,
            dns,
            xdp,
            http: self
                .http
                .or(file.http)
                .unwrap_or_else(|| SocketAddr::from(([127, 0, 0, 1], 8053))),
            data_dir,
            database,
            demo: self.demo || file.demo.unwrap_or(false),
            workers,
            tcp_idle_timeout: std::time::Duration::from_secs(idle),
            tcp_max_connections: max_conn,
            version_bind: self.version_bind.or(file.version_bind),
            server_id: self.server_id.or(file.server_id),
            check_ca: if self.check_ca.is_empty() {
                file.check_ca.unwrap_or_default()
            } else {
                self.check_ca
            },
            check_concurrency: self
                .check_concurrency
                .or(file.check_concurrency)
                .unwrap_or(256)
                .max(1),
        })
    }
}

/// Validates the `--pop*` settings.
fn resolve_pop(
    name: Option<String>,
    country: Option<String>,
    continent: Option<String>,
    location: Option<String>,
) -> anyhow::Result<model::snapshot::Pop> {
    let country = match country {
        None => None,
        Some(code) => Some(
            geo::Country::parse(&code.to_ascii_uppercase())
                .with_context(|| format!("--pop-country {code:?}: not an ISO 3166 alpha-2 code"))?,
        ),
    };
    let continent = match continent {
        None => country.and_then(|c| c.continent()),
        Some(code) => Some(
            geo::Continent::parse(&code.to_ascii_uppercase())
                .with_context(|| format!("--pop-continent {code:?}: not AF AN AS EU NA OC SA"))?,
        ),
    };
    let location = match location {
        None => None,
        Some(text) => Some(
            model::lb::Coordinates::parse(&text)
                .with_context(|| format!("--pop-location {text:?}: not LAT,LON in range"))?,
        ),
    };
    Ok(model::snapshot::Pop {
        name: name.map(|n| n.to_ascii_lowercase().into_boxed_str()),
        country,
        continent,
        location,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_beat_file_beat_defaults() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("dnz.toml");
        std::fs::write(
            &path,
            "http = \"127.0.0.1:9000\"\nworkers = 3\ndns = [\"127.0.0.1:5353\"]\n",
        )
        .unwrap();
        let args = ServeArgs {
            config: Some(path.clone()),
            workers: Some(5),
            ..Default::default()
        };
        let config = args.resolve().unwrap();
        assert_eq!(config.workers, 5);
        assert_eq!(config.http.port(), 9000);
        assert_eq!(config.dns[0].port(), 5353);
        assert_eq!(config.tcp_max_connections, 1024);
        std::fs::write(&path, "bogus = 1\n").unwrap();
        let err = ServeArgs {
            config: Some(path),
            ..Default::default()
        }
        .resolve()
        .unwrap_err();
        assert!(
            format!("{err:#}").contains("unknown field `bogus`"),
            "{err:#}"
        );
    }
}
