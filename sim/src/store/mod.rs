//! The in-memory object store: objects of every resource under one global resourceVersion, a
//! bounded event history for watch replay and a broadcast channel fanning events out (no I/O;
//! guarded by one mutex so every write and its event are ordered). This file only names the
//! parts; `objects` holds the state.
mod admission;
mod builtin;
mod crd;
mod delete;
mod error;
pub(crate) mod events_v1;
mod kinds;
pub mod meta;
mod objects;
mod options;
mod resource;
mod update;
mod write;

pub use delete::{DeleteOptions, Deleted};
pub use error::ApiError;
pub use objects::{
    EventType, ObjectKey, ObjectName, Store, StoreOptions, Subscription, WatchEvent,
};
pub use options::{Sub, WriteOptions};
pub use resource::{Conversion, PrinterColumn, Registry, ResourceId, ResourceType};
