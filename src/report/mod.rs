//! Everything users see: the diagnostic type, its rendering, the human report,
//! `tpi explain` and the canonical JSON.

pub mod diagnostic;
pub mod explain;
pub mod json;
pub mod render;
pub mod text;

pub use diagnostic::{Diagnostic, Label, Severity};
