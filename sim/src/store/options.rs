//! What a write asks for: the part of the object it may change and how it behaves (plain
//! data).

/// Which part of the object a write may change.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Sub {
    /// The object: `.status` is kept from the stored object (if the kind has a status subresource).
    #[default]
    Main,
    /// The `/status` subresource: only `.status` changes.
    Status,
}

/// How a write behaves.
#[derive(Clone, Debug, Default)]
pub struct WriteOptions {
    /// Version the client used (for apiVersion and schema); empty = the preferred one.
    pub version: String,
    pub sub: Sub,
    /// Patches: no resourceVersion required in the body.
    pub unconditional: bool,
    /// Server-internal write (scheduler, kubelet, GC): spec and status both taken as given, no
    /// generation bump.
    pub internal: bool,
    pub dry_run: bool,
}
