//! Golden tests of the front end, one test per folder of `tests/cases/`:
//! `lex` (token dumps), `parse` (AST dumps) and `errors` (rendered
//! diagnostics, no colour). Each runs the same library calls as the CLI
//! (`tpi dump tokens`, `tpi dump ast`, `tpi check`). Regenerate with
//! `TPI_BLESS=1 cargo test --test golden` and review the diff.

mod common;

use std::path::Path;
use tpi::report::render::render;
use tpi::syntax::{dump, parser};
use tpi::{Diagnostic, SourceFile};

/// Reads a case as the CLI does (bytes, then UTF-8 decoding), named by its
/// file name so that the output does not depend on the checkout's path.
/// Undecodable bytes give the rendered diagnostic as `Err`.
fn load(path: &Path) -> Result<SourceFile, String> {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    match parser::decode_source(&common::file_name(path), bytes) {
        (file, None) => Ok(file),
        (file, Some(diagnostic)) => Err(rendered(&file, [&diagnostic])),
    }
}

fn rendered<'d>(
    file: &SourceFile,
    diagnostics: impl IntoIterator<Item = &'d Diagnostic>,
) -> String {
    diagnostics
        .into_iter()
        .map(|d| render(d, file, false))
        .collect()
}

#[test]
fn lex() {
    common::run_golden("lex", "tokens", |path, _| {
        let file = match load(path) {
            Ok(file) => file,
            Err(rendered) => return rendered,
        };
        let (tokens, error) = parser::tokens(&file.text);
        let mut out = dump::dump_tokens(&file, &tokens);
        if let Some(error) = error {
            out.push_str(&rendered(&file, [&error]));
        }
        out
    });
}

#[test]
fn parse() {
    common::run_golden("parse", "ast", |path, _| {
        let file = match load(path) {
            Ok(file) => file,
            Err(rendered) => return rendered,
        };
        match parser::parse_module(&file.text) {
            Ok(module) => dump::dump_module(&file, &module),
            Err(diagnostics) => rendered(&file, &diagnostics),
        }
    });
}

#[test]
fn errors() {
    common::run_golden("errors", "err", |path, _| {
        let file = match load(path) {
            Ok(file) => file,
            Err(rendered) => return rendered,
        };
        let outcome = tpi::check(&file, &tpi::Options::default());
        let function_diagnostics = outcome.functions.iter().flat_map(|f| &f.diagnostics);
        let out = rendered(
            &file,
            outcome.diagnostics.iter().chain(function_diagnostics),
        );
        if out.is_empty() {
            "(no diagnostics)\n".to_string()
        } else {
            out
        }
    });
}
