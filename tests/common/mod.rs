//! The golden-file harness shared by the integration tests.
//!
//! `run_golden("parse", "ast", |path, text| ...)` runs the closure on every
//! `tests/cases/parse/*.tp` and compares what it returns with the sibling
//! `NAME.ast`. Every mismatch is collected and shown as a line diff, with
//! the command that accepts the new output: `TPI_BLESS=1 cargo test`, which
//! rewrites the expected files (refused when `CI` is set, so that CI never
//! blesses its own output).

#![allow(dead_code)]

use std::fmt::Write;
use std::path::{Path, PathBuf};

/// The folder of a golden suite: `tests/cases/<folder>`.
pub fn cases_dir(folder: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests")
        .join("cases")
        .join(folder)
}

/// Every `*.tp` file of a folder, sorted by name.
pub fn tp_files(dir: &Path) -> Vec<PathBuf> {
    files_with_extension(dir, "tp")
}

/// Every `*.<ext>` file of a folder, sorted by name.
pub fn files_with_extension(dir: &Path, ext: &str) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()))
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|path| path.extension().is_some_and(|e| e == ext))
        .collect();
    files.sort();
    files
}

/// The file name of a path, for messages and for source names that do not
/// depend on where the repository is checked out.
pub fn file_name(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

fn bless_requested() -> bool {
    std::env::var_os("TPI_BLESS").is_some_and(|v| !v.is_empty() && v != "0")
}

/// Runs `run(path, text)` on every `tests/cases/<folder>/*.tp` (its text
/// decoded lossily; read the bytes from `path` when they matter) and
/// compares the result with `NAME.<expected_ext>`.
pub fn run_golden(folder: &str, expected_ext: &str, run: impl Fn(&Path, &str) -> String) {
    run_golden_files(folder, "tp", expected_ext, run)
}

/// `run_golden` for cases named `*.<input_ext>`. The expected file may be
/// the case itself (`input_ext == expected_ext`): a transcript whose
/// expected output is written inside it, as `tests/cases/repl/*.session`.
pub fn run_golden_files(
    folder: &str,
    input_ext: &str,
    expected_ext: &str,
    run: impl Fn(&Path, &str) -> String,
) {
    let dir = cases_dir(folder);
    let files = files_with_extension(&dir, input_ext);
    assert!(
        !files.is_empty(),
        "no .{input_ext} cases in {}",
        dir.display()
    );
    let bless = bless_requested();
    if bless && std::env::var_os("CI").is_some() {
        panic!(
            "TPI_BLESS is refused when CI is set: expected files are blessed by people, in review"
        );
    }
    let mut mismatches = Vec::new();
    let mut blessed = Vec::new();
    for path in &files {
        let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let text = String::from_utf8_lossy(&bytes);
        let actual = run(path, &text);
        let expected_path = path.with_extension(expected_ext);
        let expected = std::fs::read_to_string(&expected_path).ok();
        if expected.as_deref() == Some(actual.as_str()) {
            continue;
        }
        if bless {
            std::fs::write(&expected_path, &actual)
                .unwrap_or_else(|e| panic!("cannot write {}: {e}", expected_path.display()));
            blessed.push(file_name(&expected_path));
            continue;
        }
        let mut report = format!("── {}/{} ──\n", folder, file_name(&expected_path));
        match expected {
            None => {
                report.push_str("(no expected file yet) actual output:\n");
                report.push_str(&actual);
            }
            Some(expected) => report.push_str(&line_diff(&expected, &actual)),
        }
        mismatches.push(report);
    }
    if !blessed.is_empty() {
        eprintln!(
            "blessed {} file(s) in {folder}: {}",
            blessed.len(),
            blessed.join(", ")
        );
    }
    if !mismatches.is_empty() {
        panic!(
            "{} of {} golden case(s) in tests/cases/{folder} differ (- expected, + actual):\n\n{}\n\
             If the new output is right, accept it with:\n    TPI_BLESS=1 cargo test --test {}\n\
             and review the diff of the expected files.",
            mismatches.len(),
            files.len(),
            mismatches.join("\n"),
            test_binary_name(),
        );
    }
}

/// The name of the running test binary (`golden`, …), for the bless hint.
fn test_binary_name() -> String {
    std::env::args()
        .next()
        .map(|arg0| {
            let name = file_name(Path::new(&arg0));
            // Cargo names test binaries `NAME-<hash>`.
            match name.rsplit_once('-') {
                Some((base, _)) => base.to_string(),
                None => name,
            }
        })
        .unwrap_or_else(|| "golden".to_string())
}

/// A unified-style line diff of two texts: `-` lines only in `expected`,
/// `+` lines only in `actual`, two lines of context around changes.
pub fn line_diff(expected: &str, actual: &str) -> String {
    let a: Vec<&str> = expected.lines().collect();
    let b: Vec<&str> = actual.lines().collect();
    // Longest common subsequence table (files here are small).
    let mut lcs = vec![vec![0u32; b.len() + 1]; a.len() + 1];
    for i in (0..a.len()).rev() {
        for j in (0..b.len()).rev() {
            lcs[i][j] = if a[i] == b[j] {
                lcs[i + 1][j + 1] + 1
            } else {
                lcs[i + 1][j].max(lcs[i][j + 1])
            };
        }
    }
    let mut ops: Vec<(char, &str)> = Vec::new();
    let (mut i, mut j) = (0, 0);
    while i < a.len() || j < b.len() {
        if i < a.len() && j < b.len() && a[i] == b[j] {
            ops.push((' ', a[i]));
            i += 1;
            j += 1;
        } else if j < b.len() && (i == a.len() || lcs[i][j + 1] >= lcs[i + 1][j]) {
            ops.push(('+', b[j]));
            j += 1;
        } else {
            ops.push(('-', a[i]));
            i += 1;
        }
    }
    let changed: Vec<bool> = ops.iter().map(|(op, _)| *op != ' ').collect();
    let near_change = |k: usize| {
        let lo = k.saturating_sub(2);
        let hi = (k + 2).min(ops.len() - 1);
        (lo..=hi).any(|m| changed[m])
    };
    let mut out = String::new();
    let mut skipped = false;
    for (k, (op, line)) in ops.iter().enumerate() {
        if near_change(k) {
            if skipped {
                out.push_str("   ...\n");
                skipped = false;
            }
            let _ = writeln!(out, "{op}  {line}");
        } else {
            skipped = true;
        }
    }
    if expected.ends_with('\n') != actual.ends_with('\n') {
        out.push_str("(the texts differ in their final newline)\n");
    }
    out
}
