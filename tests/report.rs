//! Golden tests of what people read (issue 6), one test per folder of
//! `tests/cases/`:
//!
//! - `report`: the human report of `tpi check` (`NAME.out`, no colour;
//!   `verbose_*` cases run with `--verbose`, `no_keep_*` ones with
//!   `--no-keep-input-mutations`);
//! - `diagnostics`: the rendered stderr of `tpi check` (`NAME.err`, no
//!   colour), one case per error code, named after it;
//! - `explain`: `tpi explain` (`NAME.explain`), driven by `# explain:
//!   FUNCTION [TARGET]` lines in the case.
//!
//! Plus checks that every error code of OUTPUT.md that tpi can produce has
//! its case, that colour appears only when asked, and that the report and
//! `tpi explain` never panic on the whole corpus. Regenerate with
//! `TPI_BLESS=1 cargo test --test report` and review the diff.

mod common;

use std::path::Path;
use tpi::report::diagnostic::OUTPUT_CODES;
use tpi::report::explain::explain;
use tpi::report::render::render;
use tpi::report::text::{file_report, file_report_styled};
use tpi::syntax::parser;
use tpi::{Diagnostic, Options, Outcome, SourceFile};

/// Error codes of OUTPUT.md that tpi never produces: the language has no
/// `backward()` call, so these two eager errors cannot arise.
const NOT_PRODUCED: &[&str] = &["no-grad-fn", "backward-twice"];

/// Reads and checks a case as the CLI does, named by its file name so that
/// the output does not depend on the checkout's path.
fn checked(path: &Path, options: &Options) -> (SourceFile, Outcome) {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    match parser::decode_source(&common::file_name(path), bytes) {
        (file, None) => {
            let outcome = tpi::check(&file, options);
            (file, outcome)
        }
        (file, Some(diagnostic)) => (
            file,
            Outcome {
                module: None,
                functions: Vec::new(),
                diagnostics: vec![diagnostic],
            },
        ),
    }
}

/// Every diagnostic of an outcome, rendered as `tpi check` writes stderr.
fn rendered(file: &SourceFile, outcome: &Outcome) -> String {
    let function_diagnostics = outcome.functions.iter().flat_map(|f| &f.diagnostics);
    outcome
        .diagnostics
        .iter()
        .chain(function_diagnostics)
        .map(|d: &Diagnostic| render(d, file, false))
        .collect()
}

fn options_for(path: &Path) -> Options {
    Options {
        keep_input_mutations: !common::file_name(path).starts_with("no_keep_"),
        ..Options::default()
    }
}

#[test]
fn report() {
    common::run_golden("report", "out", |path, _| {
        let (file, outcome) = checked(path, &options_for(path));
        let verbose = common::file_name(path).starts_with("verbose_");
        file_report(&file, &outcome, verbose)
    });
}

#[test]
fn diagnostics() {
    common::run_golden("diagnostics", "err", |path, _| {
        let (file, outcome) = checked(path, &Options::default());
        let out = rendered(&file, &outcome);
        if out.is_empty() {
            "(no diagnostics)\n".to_string()
        } else {
            out
        }
    });
}

#[test]
fn explain_cases() {
    common::run_golden("explain", "explain", |path, text| {
        let (file, outcome) = checked(path, &Options::default());
        let mut out = String::new();
        for line in text.lines() {
            let Some(request) = line.strip_prefix("# explain:") else {
                continue;
            };
            let words: Vec<&str> = request.split_whitespace().collect();
            let Some((function, rest)) = words.split_first() else {
                continue;
            };
            let target = rest.first().copied();
            out.push_str(&format!("$ tpi explain {} {}\n", file.name, request.trim()));
            match explain(&file, &outcome, function, target, false) {
                Ok(explanation) => out.push_str(&explanation.text),
                Err(message) => out.push_str(&format!("tpi: {message}\n")),
            }
            out.push('\n');
        }
        assert!(!out.is_empty(), "{}: no `# explain:` line", path.display());
        out
    });
}

/// Each error code of OUTPUT.md that tpi can produce has a case named after
/// it, whose rendered diagnostics show the code with `file:line:col`.
#[test]
fn every_error_code_has_a_case() {
    let dir = common::cases_dir("diagnostics");
    let mut missing = Vec::new();
    for code in OUTPUT_CODES.iter().filter(|c| !NOT_PRODUCED.contains(c)) {
        let path = dir.join(format!("{code}.tp"));
        if !path.exists() {
            missing.push(format!("{code}: no tests/cases/diagnostics/{code}.tp"));
            continue;
        }
        let (file, outcome) = checked(&path, &Options::default());
        let out = rendered(&file, &outcome);
        let shown = out.contains(&format!("[{code}]: "));
        let located = out.contains(&format!("{code}.tp:"));
        if !(shown && located) {
            missing.push(format!(
                "{code}: the rendered diagnostics do not show `[{code}]` with its location:\n{out}"
            ));
        }
    }
    assert!(missing.is_empty(), "{}", missing.join("\n"));
}

#[test]
fn colour_only_when_asked() {
    let path = common::cases_dir("report").join("mutation_through_view.tp");
    let (file, outcome) = checked(&path, &Options::default());
    assert!(!file_report(&file, &outcome, true).contains('\u{1b}'));
    assert!(file_report_styled(&file, &outcome, false, true).contains('\u{1b}'));
    let plain = explain(&file, &outcome, "f", Some("w"), false).expect("w is an input");
    assert!(!plain.text.contains('\u{1b}'));
}

#[test]
fn explain_suggests_names() {
    let path = common::cases_dir("report").join("mutation_through_view.tp");
    let (file, outcome) = checked(&path, &Options::default());
    let err = explain(&file, &outcome, "g", None, false).expect_err("no function g");
    assert!(err.contains("did you mean `f`?"), "{err}");
    let err = explain(&file, &outcome, "f", Some("ww"), false).expect_err("no input ww");
    assert!(err.contains("did you mean `w`?"), "{err}");
    let err = explain(&file, &outcome, "f", Some("9"), false).expect_err("no output 9");
    assert!(err.contains("2 outputs"), "{err}");
}

/// The report (plain and verbose) and `tpi explain` of every input and
/// output of every function of the corpus: no panic, and every claim of a
/// mutation or an output carries a location.
#[test]
fn corpus_never_panics() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests");
    let mut files = Vec::new();
    for folder in ["oracle", "conformance", "cases/report", "cases/diagnostics"] {
        let dir = root.join(folder);
        if dir.is_dir() {
            files.extend(common::tp_files(&dir));
        }
    }
    assert!(!files.is_empty());
    for path in files {
        for keep in [true, false] {
            let (file, outcome) = checked(
                &path,
                &Options {
                    keep_input_mutations: keep,
                    ..Options::default()
                },
            );
            let report = file_report(&file, &outcome, true);
            assert!(report.starts_with(&file.name), "{}", path.display());
            let _ = explain(&file, &outcome, "no such function", None, false);
            for f in &outcome.functions {
                let _ = explain(&file, &outcome, &f.name, None, false);
                let Some(meta) = &f.meta else { continue };
                for input in &meta.inputs {
                    let _ = explain(&file, &outcome, &f.name, Some(&input.name), false);
                    for r in &input.mutations {
                        assert!(
                            !r.span.is_empty(),
                            "{}: `{}` of {}: a mutation without a span",
                            path.display(),
                            input.name,
                            f.name
                        );
                    }
                }
                for (i, o) in meta.outputs.iter().enumerate() {
                    let _ = explain(&file, &outcome, &f.name, Some(&i.to_string()), true);
                    if o.is_tensor {
                        assert!(
                            !o.chain.is_empty(),
                            "{}: output {i} of {}: no origin",
                            path.display(),
                            f.name
                        );
                    }
                }
            }
        }
    }
}
