//! The human report on stdout (placeholder until the analysis lands).

use crate::{Outcome, SourceFile};

/// The report for one file (diagnostics are rendered separately, on stderr).
pub fn file_report(file: &SourceFile, outcome: &Outcome, _verbose: bool) -> String {
    let _ = outcome;
    format!("{}: parsed\n", file.name)
}
