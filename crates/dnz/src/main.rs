//! The `dnz` binary: `serve` runs the server, every other subcommand is a client of its API.

use std::process::ExitCode;

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(
    name = "dnz",
    version,
    about = "Authoritative DNS with traffic steering"
)]
struct Cli {
    #[command(flatten)]
    global: cli::GlobalArgs,
    #[command(subcommand)]
    command: Top,
}

#[derive(Subcommand)]
enum Top {
    /// Run the DNS server, the API and the dashboard.
    Serve(Box<server::ServeArgs>),
    #[command(flatten)]
    Client(cli::Command),
}

fn main() -> ExitCode {
    let parsed = Cli::parse();
    match parsed.command {
        Top::Serve(args) => serve(*args),
        Top::Client(command) => cli::run(&parsed.global, command),
    }
}

fn serve(args: server::ServeArgs) -> ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("DNZ_LOG")
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .with_writer(std::io::stderr)
        .init();
    let config = match args.resolve() {
        Ok(config) => config,
        Err(e) => {
            eprintln!("error: {e:#}");
            return ExitCode::from(2);
        }
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("error: starting the runtime: {e}");
            return ExitCode::from(1);
        }
    };
    let result = runtime.block_on(server::run(config, |bound| {
        // One machine-readable line for scripts and tests that start the server on port 0.
        let dns: Vec<String> = bound.dns.iter().map(|a| a.to_string()).collect();
        println!("listening dns={} http={}", dns.join(","), bound.http);
    }));
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::from(1)
        }
    }
}
