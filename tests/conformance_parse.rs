//! Every program of the conformance corpus (`tests/conformance/*.tp`, a
//! copy of `../shared/conformance/`) parses without a diagnostic. The
//! comparison of `tpi check --format json` with the `.json` answers comes
//! with the analysis.

mod common;

use std::path::Path;
use tpi::syntax::parser;

#[test]
fn every_conformance_program_parses() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/conformance");
    let files = common::tp_files(&dir);
    assert!(
        files.len() >= 10,
        "the corpus is missing: {}",
        dir.display()
    );
    let mut failures = Vec::new();
    for path in &files {
        let text =
            std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        if let Err(diagnostics) = parser::parse_module(&text) {
            let file = tpi::SourceFile::new(common::file_name(path), text);
            for diagnostic in &diagnostics {
                failures.push(tpi::report::render::render(diagnostic, &file, false));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "conformance programs that do not parse:\n{}",
        failures.join("\n")
    );
}

/// The examples a newcomer runs first parse (all but the one that shows a
/// syntax error, which must not).
#[test]
fn every_example_parses() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples");
    let files = common::tp_files(&dir);
    assert!(files.len() >= 4, "examples are missing: {}", dir.display());
    for path in &files {
        let text =
            std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let name = common::file_name(path);
        let parsed = parser::parse_module(&text);
        if name.contains("syntax_error") {
            assert!(parsed.is_err(), "{name} should not parse");
        } else if let Err(diagnostics) = parsed {
            panic!("{name} does not parse: {diagnostics:#?}");
        }
    }
}
