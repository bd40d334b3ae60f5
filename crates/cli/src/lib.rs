//! The `dnz` client subcommands (SPEC §10): everything but `serve`, talking to a dnz server's
//! HTTP API. The binary flattens [`GlobalArgs`] and [`Command`] into its own parser and calls
//! [`run`].
//!
//! Output is a table for people, or the API's JSON with `--json`. Exit codes: 0 success, 1 the
//! server or the network or a file failed, 2 the command line or local setup is wrong.

mod client;
mod commands;
mod config;
mod error;
mod json;
mod lb;
mod prompt;
mod steer;
mod table;
mod value;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Subcommand, ValueEnum};

use crate::error::Failure;

/// Options every subcommand accepts, before or after its name.
#[derive(Args, Clone, Debug)]
pub struct GlobalArgs {
    /// API server [default: from `dnz login`, else http://127.0.0.1:8053]
    #[arg(global = true, long, env = "DNZ_SERVER", value_name = "URL")]
    pub server: Option<String>,

    /// API token [default: from `dnz login`, else <DATA_DIR>/admin.token]
    #[arg(
        global = true,
        long,
        env = "DNZ_TOKEN",
        value_name = "TOKEN",
        hide_env_values = true
    )]
    pub token: Option<String>,

    /// Print the API's JSON instead of tables
    #[arg(global = true, long)]
    pub json: bool,

    /// Data directory (the server's; the CLI reads admin.token from it)
    #[arg(
        global = true,
        long,
        env = "DNZ_DATA_DIR",
        value_name = "DIR",
        default_value = "./dnz-data"
    )]
    pub data_dir: PathBuf,
}

/// Client subcommands (everything except `serve`, which the binary handles).
#[derive(Subcommand, Debug)]
pub enum Command {
    /// Create, list, show, delete, import and export zones
    #[command(subcommand)]
    Zone(ZoneCommand),
    /// Add, delete and list records
    #[command(subcommand)]
    Record(RecordCommand),
    /// Log in with a password and keep the session token in the config file
    Login(LoginArgs),
    /// Manage users (superadmin)
    #[command(subcommand)]
    User(UserCommand),
    /// Manage API tokens
    #[command(subcommand)]
    Token(TokenCommand),
    /// Show how a query is answered: the records, each steering step, the place, the pick
    Explain {
        name: String,
        #[arg(value_name = "TYPE", default_value = "A")]
        rtype: String,
        /// The client's address (the query's source)
        #[arg(long, value_name = "IP")]
        client: String,
        /// An EDNS Client Subnet: a prefix length of the client's address, or ADDRESS/PREFIX
        #[arg(long, value_name = "PREFIX")]
        ecs: Option<String>,
    },
    /// The GeoIP database: download, source and monthly updates, lookups
    #[command(subcommand)]
    Geoip(GeoipCommand),
    /// Pools of origins for load balancers: create, list, show, update, delete, origins, checks
    #[command(subcommand)]
    Pool(lb::PoolCommand),
    /// Load balancers: a name answered from pools of origins
    #[command(subcommand)]
    Lb(lb::LbCommand),
}

#[derive(Subcommand, Debug)]
pub enum ZoneCommand {
    /// Create a zone with a default SOA and NS set
    Create {
        zone: String,
        /// Default TTL of the zone's records
        #[arg(long, value_name = "SECONDS")]
        ttl: Option<u32>,
        /// A name server for the apex NS set (repeatable) [default: ns1.<ZONE>]
        #[arg(long = "ns", value_name = "NAME")]
        ns: Vec<String>,
    },
    /// List zones
    List,
    /// Show a zone's settings
    Show { zone: String },
    /// Delete a zone and all its records
    Delete { zone: String },
    /// Load an RFC 1035 zone file into a zone; a bad file changes nothing
    Import {
        zone: String,
        /// The zone file, `-` for stdin
        file: PathBuf,
    },
    /// Print a zone as an RFC 1035 zone file
    Export {
        zone: String,
        /// Write here instead of stdout
        file: Option<PathBuf>,
    },
}

#[derive(Subcommand, Debug)]
pub enum RecordCommand {
    /// Add a record, e.g. `dnz record add example.com @ MX 10 mail`
    Add {
        zone: String,
        /// Relative to the zone (`@`, `www`) or absolute with a trailing dot
        name: String,
        #[arg(value_name = "TYPE")]
        rtype: String,
        /// The rdata in presentation format; the remaining words, joined by spaces
        #[arg(
            required = true,
            num_args = 1..,
            trailing_var_arg = true,
            allow_hyphen_values = true
        )]
        value: Vec<String>,
        /// TTL [default: the zone's]
        #[arg(long, value_name = "SECONDS")]
        ttl: Option<u32>,
    },
    /// Delete the records that match NAME, TYPE and VALUE
    Delete {
        zone: String,
        name: String,
        #[arg(value_name = "TYPE")]
        rtype: String,
        #[arg(
            required = true,
            num_args = 1..,
            trailing_var_arg = true,
            allow_hyphen_values = true
        )]
        value: Vec<String>,
    },
    /// List a zone's records
    List { zone: String },
    /// Steer an A or AAAA record (created when missing); changes only the options given
    Steer(Box<steer::SteerArgs>),
    /// List a zone's steered records: place, weight, backup, check
    Steering { zone: String },
}

#[derive(Args, Debug)]
pub struct LoginArgs {
    /// User to log in as
    #[arg(long, default_value = "admin")]
    pub user: String,
    /// Password [default: asked for on stdin]
    #[arg(long, env = "DNZ_PASSWORD", hide_env_values = true)]
    pub password: Option<String>,
}

#[derive(Subcommand, Debug)]
pub enum UserCommand {
    /// List users
    List,
    /// Create a user
    Add {
        name: String,
        /// What the user may do
        #[arg(long, value_enum)]
        role: RoleArg,
        /// Password [default: asked for on stdin]
        #[arg(long)]
        password: Option<String>,
    },
    /// Delete a user
    Delete { name: String },
}

#[derive(Subcommand, Debug)]
pub enum TokenCommand {
    /// List API tokens
    List,
    /// Create an API token and print its secret (shown only once)
    Create {
        name: String,
        /// Owner of the token [default: you; another user needs superadmin]
        #[arg(long)]
        user: Option<String>,
    },
    /// Delete (revoke) an API token
    Delete { id: i64 },
}

#[derive(Subcommand, Debug)]
pub enum GeoipCommand {
    /// Download the database from its source now, check it and swap it in (superadmin)
    Download,
    /// Change the download source or the monthly updates (superadmin)
    Set {
        /// Source URL (`{year}` and `{month}` are filled in; .gz and .tar.gz are unpacked), or
        /// `default` for DB-IP IP-to-Country Lite
        #[arg(long, value_name = "URL|default")]
        url: Option<String>,
        /// Download a new database every month
        #[arg(long, value_enum, value_name = "on|off")]
        auto_update: Option<AutoUpdateArg>,
    },
    /// Show what GeoDNS sees for an address: country, continent, network
    Lookup {
        #[arg(value_name = "IP")]
        ip: String,
    },
    /// Show the database in use, its source, and the last and next downloads
    Status,
}

/// `--auto-update on|off`.
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum AutoUpdateArg {
    On,
    Off,
}

/// A user's role on the command line.
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum RoleArg {
    Viewer,
    Editor,
    Superadmin,
}

impl From<RoleArg> for api::Role {
    fn from(role: RoleArg) -> api::Role {
        match role {
            RoleArg::Viewer => api::Role::Viewer,
            RoleArg::Editor => api::Role::Editor,
            RoleArg::Superadmin => api::Role::Superadmin,
        }
    }
}

/// Runs one client subcommand; errors are printed to stderr.
pub fn run(global: &GlobalArgs, command: Command) -> ExitCode {
    match dispatch(global.clone(), command) {
        Ok(()) => ExitCode::SUCCESS,
        Err(failure) => {
            eprint!("{}", failure.render());
            ExitCode::from(failure.exit_code())
        }
    }
}

fn dispatch(global: GlobalArgs, command: Command) -> Result<(), Failure> {
    use commands::*;

    let ctx = |global| Ctx { global };
    match command {
        Command::Zone(zone) => {
            let ctx = ctx(global);
            match zone {
                ZoneCommand::Create { zone, ttl, ns } => zone_create(&ctx, zone, ttl, ns),
                ZoneCommand::List => zone_list(&ctx),
                ZoneCommand::Show { zone } => zone_show(&ctx, &zone),
                ZoneCommand::Delete { zone } => zone_delete(&ctx, &zone),
                ZoneCommand::Import { zone, file } => zone_import(&ctx, &zone, &file),
                ZoneCommand::Export { zone, file } => zone_export(&ctx, &zone, file.as_deref()),
            }
        }
        Command::Record(record) => match record {
            RecordCommand::Add {
                zone,
                name,
                rtype,
                value,
                ttl,
            } => {
                let mut global = global;
                let (value, trailing_ttl) = take_value(&mut global, &rtype, &value)?;
                let spec = api::RecordSpec {
                    steering: None,
                    name,
                    rtype: rtype.to_ascii_uppercase(),
                    value,
                    ttl: trailing_ttl.or(ttl),
                };
                record_add(&ctx(global), &zone, spec)
            }
            RecordCommand::Delete {
                zone,
                name,
                rtype,
                value,
            } => {
                let mut global = global;
                let (value, trailing_ttl) = take_value(&mut global, &rtype, &value)?;
                if trailing_ttl.is_some() {
                    return Err(Failure::usage("record delete takes no --ttl"));
                }
                let rtype = rtype.to_ascii_uppercase();
                record_delete(&ctx(global), &zone, &name, &rtype, &value)
            }
            RecordCommand::List { zone } => record_list(&ctx(global), &zone),
            RecordCommand::Steer(args) => steer::record_steer(&ctx(global), *args),
            RecordCommand::Steering { zone } => steer::record_steering(&ctx(global), &zone),
        },
        Command::Login(LoginArgs { user, password }) => login(&ctx(global), user, password),
        Command::Explain {
            name,
            rtype,
            client,
            ecs,
        } => steer::explain(&ctx(global), &name, &rtype, &client, ecs.as_deref()),
        Command::Geoip(geoip) => {
            let ctx = ctx(global);
            match geoip {
                GeoipCommand::Download => geoip_download(&ctx),
                GeoipCommand::Set { url, auto_update } => {
                    geoip_set(&ctx, url, auto_update.map(|a| a == AutoUpdateArg::On))
                }
                GeoipCommand::Lookup { ip } => geoip_lookup(&ctx, &ip),
                GeoipCommand::Status => geoip_status(&ctx),
            }
        }
        Command::Pool(pool) => lb::pool(&ctx(global), pool),
        Command::Lb(command) => lb::lb(&ctx(global), command),
        Command::User(user) => {
            let ctx = ctx(global);
            match user {
                UserCommand::List => user_list(&ctx),
                UserCommand::Add {
                    name,
                    role,
                    password,
                } => user_add(&ctx, name, role.into(), password),
                UserCommand::Delete { name } => user_delete(&ctx, &name),
            }
        }
        Command::Token(token) => {
            let ctx = ctx(global);
            match token {
                TokenCommand::List => token_list(&ctx),
                TokenCommand::Create { name, user } => token_create(&ctx, name, user),
                TokenCommand::Delete { id } => token_delete(&ctx, id),
            }
        }
    }
}

/// The VALUE words as one value, and the `--ttl` found among them. Other options written
/// after VALUE ended up in it too; they are applied to `global` as if written before.
fn take_value(
    global: &mut GlobalArgs,
    rtype: &str,
    words: &[String],
) -> Result<(String, Option<u32>), Failure> {
    let (words, options) = value::split_trailing(words)?;
    if words.is_empty() {
        return Err(Failure::usage("VALUE is missing"));
    }
    global.json |= options.json;
    if options.server.is_some() {
        global.server = options.server;
    }
    if options.token.is_some() {
        global.token = options.token;
    }
    if let Some(dir) = options.data_dir {
        global.data_dir = dir;
    }
    Ok((value::join(rtype, &words), options.ttl))
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    /// The shape the binary uses: global options flattened, client commands flattened beside
    /// its own `serve`.
    #[derive(Parser, Debug)]
    struct Cli {
        #[command(flatten)]
        global: GlobalArgs,
        #[command(subcommand)]
        cmd: Top,
    }

    #[derive(Subcommand, Debug)]
    enum Top {
        Serve,
        #[command(flatten)]
        Client(Command),
    }

    fn parse(line: &str) -> Result<Cli, clap::Error> {
        Cli::try_parse_from(line.split(' '))
    }

    #[test]
    fn cli_definition_is_valid() {
        use clap::CommandFactory;
        Cli::command().debug_assert();
    }

    #[test]
    fn value_takes_every_word_and_globals_go_anywhere() {
        let cli = parse("dnz record add example.com @ MX 10 mail --json").expect("parse");
        assert!(!cli.global.json, "clap leaves trailing options in VALUE");
        let Top::Client(Command::Record(RecordCommand::Add { value, ttl, .. })) = cli.cmd else {
            panic!("wrong command");
        };
        assert_eq!(value, ["10", "mail", "--json"]);
        assert_eq!(ttl, None);

        let cli = parse("dnz record add --ttl 60 example.com @ TXT v=spf1 -all").expect("parse");
        let Top::Client(Command::Record(RecordCommand::Add { value, ttl, .. })) = cli.cmd else {
            panic!("wrong command");
        };
        assert_eq!(value, ["v=spf1", "-all"]);
        assert_eq!(ttl, Some(60));

        let cli = parse("dnz zone list --json --server http://a:1").expect("parse");
        assert!(cli.global.json);
        assert_eq!(cli.global.server.as_deref(), Some("http://a:1"));
        assert!(parse("dnz serve").is_ok());
        assert!(parse("dnz record add example.com @ A").is_err());
    }

    #[test]
    fn roles_and_ids_are_checked_by_clap() {
        assert!(parse("dnz user add bob --role editor").is_ok());
        assert!(parse("dnz user add bob --role root").is_err());
        assert!(parse("dnz token delete x").is_err());
    }

    #[test]
    fn usage_errors_exit_2() {
        let global = GlobalArgs {
            server: Some("http://127.0.0.1:9".into()),
            token: Some("t".into()),
            json: false,
            data_dir: "./nowhere".into(),
        };
        let command = Command::Record(RecordCommand::Delete {
            zone: "example.com".into(),
            name: "@".into(),
            rtype: "A".into(),
            value: vec!["192.0.2.1".into(), "--ttl".into(), "5".into()],
        });
        assert_eq!(run(&global, command), ExitCode::from(2));
        let command = Command::Zone(ZoneCommand::List);
        let bad = GlobalArgs {
            server: Some("ftp://x".into()),
            ..global
        };
        assert_eq!(run(&bad, command), ExitCode::from(2));
    }
}
