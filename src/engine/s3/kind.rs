//! The engine's kind, at the bottom of the folder: every file here may use
//! it, and it uses none of them (`mod.rs` re-exports it for the registry).

use crate::records::EngineKind;

/// The only place outside the kind enum that names the S3 variant.
pub(crate) const KIND: EngineKind = EngineKind::S3;
