//! Health checks (SPEC §5): one probe of one target.
//!
//! [`Prober`] runs a single check of a [`Target`] (an address, the Host/TLS name and the
//! validated [`model::steering::CheckConfig`]) and returns an [`Outcome`]; [`state::Tracker`]
//! turns results into `unknown`/`up`/`down` with the rise and fall thresholds. Scheduling lives
//! with the server (`server::health`), which owns the tasks and the answer snapshot.
pub mod probe;
pub mod state;

pub use probe::{Outcome, ProbeError, Prober, Target};
