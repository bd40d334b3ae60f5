//! Shared pieces for black-box tests: start a real `dnz serve` on free ports, call its API,
//! send DNS queries over UDP and TCP and read the responses, find and start peer programs.
//!
//! Peers (dig, knotd, named-checkzone, …) are required under `CI=true`: a missing one fails
//! the test instead of skipping it.

pub mod dns;
pub mod files;
pub mod server;
pub mod tls;

pub use dns::{DnsResponse, QueryOptions, query, query_raw};
pub use server::{DnzServer, free_port, require_program};
