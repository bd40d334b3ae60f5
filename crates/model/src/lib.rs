//! The validated data model of dnz: zones, records and their presentation and wire forms,
//! zone file import and export, and the compiler that turns the whole desired state into the
//! immutable [`Snapshot`] that the query path reads.
//!
//! Nothing here does I/O, logs, or reads the clock: the caller passes time in (see
//! [`zone::next_serial`]). Names are kept in DNS wire format ([`Dname`]) so that the snapshot can
//! be indexed by the bytes a query carries.

pub mod lb;
pub mod name;
pub mod rdata;
pub mod snapshot;
pub mod steering;
pub mod zone;
pub mod zonefile;

pub use name::Dname;
pub use rdata::{Rdata, Rtype};
pub use snapshot::{Snapshot, ZoneSnapshot};
pub use zone::{FieldError, RecordConfig, Soa, ZoneConfig};
