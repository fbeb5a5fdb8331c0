//! The rules a pass composes, one per concern, each returning its decision as a value (docs/
//! behaviour.md §6–§8). Pure.

pub mod counts;
pub mod finish;
pub mod gang;
pub mod progress;
pub mod restarts;
pub mod scale;
pub mod success;
pub mod suspend;
pub mod timers;
pub mod unreadable;
