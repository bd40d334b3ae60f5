//! Shared pieces for black-box tests: start a real `dnz serve` on free ports, call its API,
//! send DNS queries over UDP and TCP and read the responses, find and start peer programs, and
//! draw seeded random inputs.
//!
//! Peers (dig, knotd, named-checkzone, …) are required under `CI=true`: a missing one fails
//! the test instead of skipping it.

pub mod dns;
pub mod files;
pub mod rng;
pub mod server;
pub mod tls;

pub use dns::{DnsResponse, QueryOptions, query, query_raw};
pub use rng::Rng;
pub use server::{DnzServer, free_port, require_program};
