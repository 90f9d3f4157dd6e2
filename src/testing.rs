//! `tpi test`: golden-file tests of `.tp` programs, for users and for the
//! project's own corpus (`tests/conformance.rs` calls this module too, so
//! both share one implementation).
//!
//! Every `NAME.tp` found under the given paths is analysed with
//! [`crate::check`] and compared with its sibling expected files:
//!
//! - `NAME.json`: the canonical JSON of OUTPUT.md, compared as
//!   `shared/oracle/tp_compare.py` does ([`crate::compare::diff`]: only the
//!   expected keys, symbolic sizes as expressions, `message` and `file`
//!   ignored), function by function so that a report names the function.
//!   One rule is added: a file-level error (a syntax error) fails the test
//!   unless the expected file has a `diagnostics` key.
//! - `NAME.out`: the human report, compared as text: what
//!   `tpi check NAME.tp` prints from the file's folder without colour,
//!   the report followed by the rendered diagnostics.
//!
//! A case without an expected file is `new`, not a failure. Flags for a
//! folder live in a plain `tpi-test.flags` file in that folder (one or more
//! flags, `#` starts a comment); it applies to the `.tp` files directly in
//! that folder, not to subfolders. The only flag is
//! `--no-keep-input-mutations`.
//!
//! Blessing ([`Mode::bless`]) writes the expected files from the current
//! results. JSON is written as the oracle writes it (Python's
//! `json.dumps(indent=2)`, newline at the end) and holds exactly the
//! canonical keys of OUTPUT.md ([`canonical`]). When a file is rewritten,
//! values that already compare equal keep the file's spelling (PyTorch's
//! `message` texts, a symbolic size written `n*4`), and a file that passes
//! is not touched, so that `git diff` shows only what changed.
//!
//! Nothing here prints to the process's streams: [`run_cli`] writes to the
//! writers it is given, and the rest returns values.

use crate::compare;
use crate::report::{json, render, text};
use crate::syntax::parser;
use crate::{Options, Outcome, SourceFile};
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::fmt::Write as _;
use std::io::Write;
use std::panic::AssertUnwindSafe;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

/// The per-folder flags file.
pub const FLAGS_FILE: &str = "tpi-test.flags";

/// Exit statuses of `tpi test`.
pub const EXIT_OK: u8 = 0;
/// Some case failed.
pub const EXIT_FAILED: u8 = 1;
/// Usage or I/O problem (bad path, unreadable file, bless refused).
pub const EXIT_USAGE: u8 = 2;

pub use crate::WORKER_STACK_BYTES;

/// More cases than this show a progress line on a terminal.
const PROGRESS_THRESHOLD: usize = 20;

/// The two kinds of expected file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// `NAME.json`, the canonical JSON.
    Json,
    /// `NAME.out`, the human report.
    Text,
}

impl Kind {
    /// The extension of the expected file.
    pub fn extension(self) -> &'static str {
        match self {
            Kind::Json => "json",
            Kind::Text => "out",
        }
    }
}

/// One `.tp` file to test, with its settings.
#[derive(Clone, Debug)]
pub struct Case {
    /// The path as found (relative when the search path was).
    pub path: PathBuf,
    /// The path shown in reports (`tests/conformance/basics.tp`).
    pub display: String,
    /// The analysis settings, after the folder's flags file.
    pub options: Options,
}

impl Case {
    /// The expected file of a kind (`NAME.json`, `NAME.out`).
    pub fn expected_path(&self, kind: Kind) -> PathBuf {
        self.path.with_extension(kind.extension())
    }
}

/// What to do with each case.
#[derive(Clone, Copy, Debug, Default)]
pub struct Mode {
    /// Only this kind of expected file (`--format`); when blessing, the kind
    /// to write. `None`: compare every expected file that exists; bless the
    /// existing ones, or JSON for a new case.
    pub only: Option<Kind>,
    /// Write the expected files instead of failing.
    pub bless: bool,
}

/// The settings of the command line (`tpi test`).
#[derive(Clone, Debug, Default)]
pub struct Config {
    /// Files and folders; empty means the current folder.
    pub paths: Vec<PathBuf>,
    /// `--bless`.
    pub bless: bool,
    /// `--force`: bless even when `CI` is set.
    pub force: bool,
    /// `--format`.
    pub format: Option<Kind>,
    /// `-v`: one line per function.
    pub verbose: bool,
    /// `--no-keep-input-mutations` for every case.
    pub no_keep_input_mutations: bool,
    /// `--jobs`; `None` uses every core.
    pub jobs: Option<usize>,
}

// ---------------------------------------------------------------------------
// Discovery

/// Every `.tp` case under the paths, in order (each folder sorted by name,
/// hidden folders skipped, symbolic links to folders not followed), with
/// the folders' flags applied over `base`. A file given by path is a case
/// whatever its extension. An error names a path that cannot be read or a
/// bad flags file.
pub fn discover(paths: &[PathBuf], base: &Options) -> Result<Vec<Case>, String> {
    let default = [PathBuf::from(".")];
    let roots = if paths.is_empty() {
        &default[..]
    } else {
        paths
    };
    let mut files: Vec<PathBuf> = Vec::new();
    for root in roots {
        let metadata = std::fs::metadata(root)
            .map_err(|e| format!("cannot read {}: {}", root.display(), io_reason(&e)))?;
        if metadata.is_dir() {
            walk(root, &mut files)?;
        } else {
            files.push(root.clone());
        }
    }
    let mut seen = std::collections::HashSet::new();
    let mut flags: HashMap<PathBuf, Options> = HashMap::new();
    let mut cases = Vec::new();
    for path in files {
        if !seen.insert(path.clone()) {
            continue;
        }
        let folder = path.parent().map(Path::to_path_buf).unwrap_or_default();
        let options = match flags.get(&folder) {
            Some(options) => options.clone(),
            None => {
                let options = folder_options(&folder, base)?;
                flags.insert(folder, options.clone());
                options
            }
        };
        let display = path.display().to_string();
        let display = display
            .strip_prefix("./")
            .map(str::to_string)
            .unwrap_or(display);
        cases.push(Case {
            path,
            display,
            options,
        });
    }
    Ok(cases)
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) -> Result<(), String> {
    let entries = std::fs::read_dir(dir)
        .map_err(|e| format!("cannot read {}: {}", dir.display(), io_reason(&e)))?;
    let mut entries: Vec<_> = entries.filter_map(Result::ok).collect();
    entries.sort_by_key(|entry| entry.file_name());
    for entry in entries {
        let name = entry.file_name();
        let path = entry.path();
        let Ok(file_type) = entry.file_type() else {
            continue;
        };
        if file_type.is_dir() {
            if !name.to_string_lossy().starts_with('.') {
                walk(&path, out)?;
            }
        } else if path.extension().is_some_and(|ext| ext == "tp")
            && std::fs::metadata(&path).is_ok_and(|m| m.is_file())
        {
            out.push(path);
        }
    }
    Ok(())
}

/// The options of the `.tp` files of a folder: `base` with the folder's
/// `tpi-test.flags` applied.
pub fn folder_options(folder: &Path, base: &Options) -> Result<Options, String> {
    let path = folder.join(FLAGS_FILE);
    match std::fs::read_to_string(&path) {
        Ok(text) => parse_flags(&text, base).map_err(|e| format!("{}: {e}", path.display())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(base.clone()),
        Err(e) => Err(format!("cannot read {}: {}", path.display(), io_reason(&e))),
    }
}

/// Applies the text of a flags file to `base`.
pub fn parse_flags(text: &str, base: &Options) -> Result<Options, String> {
    let mut options = base.clone();
    for line in text.lines() {
        let line = line.split('#').next().unwrap_or("");
        for flag in line.split_whitespace() {
            match flag {
                "--no-keep-input-mutations" => options.keep_input_mutations = false,
                other => {
                    return Err(format!(
                        "unknown flag `{other}` (a {FLAGS_FILE} file accepts: --no-keep-input-mutations)"
                    ))
                }
            }
        }
    }
    Ok(options)
}

fn io_reason(error: &std::io::Error) -> String {
    match error.kind() {
        std::io::ErrorKind::NotFound => "no such file or folder".to_string(),
        std::io::ErrorKind::PermissionDenied => "permission denied".to_string(),
        _ => {
            let text = error.to_string();
            text.split(" (os error").next().unwrap_or(&text).to_string()
        }
    }
}

// ---------------------------------------------------------------------------
// Results

/// How a case went.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    /// Every expected file matches (or was blessed).
    Pass,
    /// Some expected file differs.
    Fail,
    /// No expected file yet.
    New,
    /// The case could not be run (unreadable file, bad expected JSON).
    Error,
}

/// One difference, as `compare::diff` reports it, split for display.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Problem {
    /// The field path, relative to the function (`inputs[0].mutates_data`)
    /// or to the document for file-level problems.
    pub path: String,
    /// The expected value, when the line has one.
    pub expected: Option<String>,
    /// The actual value, when the line has one.
    pub actual: Option<String>,
    /// The whole line (path included).
    pub line: String,
}

impl Problem {
    /// Splits a `compare::diff` line (`$.a.b: expected X, got Y`), dropping
    /// `prefix` from its path.
    pub fn parse(line: &str, prefix: &str) -> Problem {
        let (path, rest) = line.split_once(": ").unwrap_or((line, ""));
        let path = path.strip_prefix(prefix).unwrap_or(path);
        let path = path.strip_prefix('.').unwrap_or(path).to_string();
        let (expected, actual) = match rest
            .strip_prefix("expected ")
            .and_then(|r| r.split_once(", got "))
        {
            Some((e, a)) => (Some(e.to_string()), Some(a.to_string())),
            None => (None, None),
        };
        let line = if rest.is_empty() {
            path.clone()
        } else {
            format!("{path}: {rest}")
        };
        Problem {
            path,
            expected,
            actual,
            line,
        }
    }

    fn message(text: String) -> Problem {
        Problem {
            path: String::new(),
            expected: None,
            actual: None,
            line: text,
        }
    }
}

/// The comparison of one entry function.
#[derive(Clone, Debug)]
pub struct FunctionCheck {
    /// The function's name.
    pub name: String,
    /// What differs (empty: it passes).
    pub problems: Vec<Problem>,
    /// Where the actual values come from (source lines), to explain.
    pub notes: Vec<String>,
}

/// The comparison of one expected file.
#[derive(Clone, Debug)]
pub enum Comparison {
    /// `NAME.json`.
    Json {
        /// Problems outside the functions (the list of functions, a file
        /// level error).
        file: Vec<Problem>,
        /// One entry per function, expected ones first, then new ones.
        functions: Vec<FunctionCheck>,
        /// Hints (a likely missing flags file).
        hints: Vec<String>,
    },
    /// `NAME.out`: the unified diff, empty when equal.
    Text { diff: Vec<DiffLine> },
}

impl Comparison {
    /// True when the expected file matches.
    pub fn passed(&self) -> bool {
        match self {
            Comparison::Json {
                file, functions, ..
            } => file.is_empty() && functions.iter().all(|f| f.problems.is_empty()),
            Comparison::Text { diff } => diff.is_empty(),
        }
    }
}

/// What `--bless` did to an expected file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BlessAction {
    /// The file did not exist.
    Added,
    /// The file was rewritten.
    Updated,
    /// The file already matched and was left alone.
    Unchanged,
}

/// One expected file of a case, compared (and maybe blessed).
#[derive(Clone, Debug)]
pub struct Check {
    /// Which kind.
    pub kind: Kind,
    /// Its path.
    pub path: PathBuf,
    /// The comparison with the current result (before blessing). `None`
    /// for a file that did not exist.
    pub comparison: Option<Comparison>,
    /// What blessing did, when blessing.
    pub blessed: Option<BlessAction>,
}

/// Everything about one case.
#[derive(Clone, Debug)]
pub struct CaseResult {
    /// The case.
    pub case: Case,
    /// The outcome.
    pub status: Status,
    /// The entry functions tpi found, in order.
    pub functions: Vec<String>,
    /// One per expected file considered.
    pub checks: Vec<Check>,
    /// Why the case is an error (or why tpi failed on it).
    pub error: Option<String>,
}

// ---------------------------------------------------------------------------
// Running one case

/// The analysis of a case's file, in the forms the expected files hold.
struct Actual {
    source: SourceFile,
    /// `file_document` (every key: explanations included).
    document: Value,
    /// The human report and rendered diagnostics, without colour.
    text: String,
    functions: Vec<String>,
}

fn analyse(case: &Case) -> Result<Actual, String> {
    let bytes = std::fs::read(&case.path)
        .map_err(|e| format!("cannot read {}: {}", case.display, io_reason(&e)))?;
    let name = case
        .path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| case.display.clone());
    let options = case.options.clone();
    let analysed = std::panic::catch_unwind(AssertUnwindSafe(move || {
        let (source, outcome) = match parser::decode_source(&name, bytes) {
            (source, None) => {
                let outcome = crate::check(&source, &options);
                (source, outcome)
            }
            (source, Some(diagnostic)) => {
                let outcome = Outcome {
                    module: None,
                    functions: Vec::new(),
                    diagnostics: vec![diagnostic],
                };
                (source, outcome)
            }
        };
        let document = json::file_document(&source, &outcome);
        let mut text = text::file_report(&source, &outcome, false);
        let function_diagnostics = outcome.functions.iter().flat_map(|f| &f.diagnostics);
        for diagnostic in outcome.diagnostics.iter().chain(function_diagnostics) {
            text.push_str(&render::render(diagnostic, &source, false));
        }
        let functions = outcome.functions.iter().map(|f| f.name.clone()).collect();
        Actual {
            source,
            document,
            text,
            functions,
        }
    }));
    analysed.map_err(|panic| {
        let what = panic
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| panic.downcast_ref::<String>().cloned())
            .unwrap_or_default();
        format!("tpi crashed on this file (a bug in tpi: please report it): {what}")
    })
}

/// Runs one case: analyses it, compares it with its expected files, and
/// writes them when `mode.bless`.
pub fn run_case(case: &Case, mode: &Mode) -> CaseResult {
    let mut result = CaseResult {
        case: case.clone(),
        status: Status::Pass,
        functions: Vec::new(),
        checks: Vec::new(),
        error: None,
    };
    let actual = match analyse(case) {
        Ok(actual) => actual,
        Err(message) => {
            result.status = if message.starts_with("tpi crashed") {
                Status::Fail
            } else {
                Status::Error
            };
            result.error = Some(message);
            return result;
        }
    };
    result.functions = actual.functions.clone();
    let kinds: Vec<Kind> = match mode.only {
        Some(kind) => vec![kind],
        None => vec![Kind::Json, Kind::Text],
    };
    for kind in kinds {
        let path = case.expected_path(kind);
        let existing = match std::fs::read_to_string(&path) {
            Ok(text) => Some(text),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => {
                result.status = Status::Error;
                result.error = Some(format!("cannot read {}: {}", path.display(), io_reason(&e)));
                return result;
            }
        };
        let blessing = mode.bless && (existing.is_some() || mode.only.is_some());
        let comparison = match (&existing, kind) {
            (None, _) => None,
            (Some(text), Kind::Json) => match serde_json::from_str::<Value>(text) {
                Ok(expected) => Some(compare_json(&expected, &actual, case)),
                Err(e) if !blessing => {
                    result.status = Status::Error;
                    result.error = Some(format!("{} is not valid JSON: {e}", path.display()));
                    return result;
                }
                Err(_) => None,
            },
            (Some(text), Kind::Text) => Some(Comparison::Text {
                diff: unified_diff(text, &actual.text, 3),
            }),
        };
        if existing.is_none() && !blessing {
            continue;
        }
        let mut check = Check {
            kind,
            path: path.clone(),
            comparison,
            blessed: None,
        };
        if blessing {
            match bless_file(&check, existing.as_deref(), &actual) {
                Ok(action) => check.blessed = Some(action),
                Err(message) => {
                    result.status = Status::Error;
                    result.error = Some(message);
                }
            }
        }
        result.checks.push(check);
    }
    // A new case is blessed as JSON unless `--format` chose.
    if mode.bless && result.checks.is_empty() && result.status != Status::Error {
        let path = case.expected_path(Kind::Json);
        let mut check = Check {
            kind: Kind::Json,
            path,
            comparison: None,
            blessed: None,
        };
        match bless_file(&check, None, &actual) {
            Ok(action) => check.blessed = Some(action),
            Err(message) => {
                result.status = Status::Error;
                result.error = Some(message);
            }
        }
        result.checks.push(check);
    }
    if result.status == Status::Error {
        return result;
    }
    result.status = if result.checks.is_empty() {
        Status::New
    } else if mode.bless
        || result
            .checks
            .iter()
            .all(|c| c.comparison.as_ref().is_some_and(Comparison::passed))
    {
        Status::Pass
    } else {
        Status::Fail
    };
    result
}

fn bless_file(
    check: &Check,
    existing: Option<&str>,
    actual: &Actual,
) -> Result<BlessAction, String> {
    if check.comparison.as_ref().is_some_and(Comparison::passed) {
        return Ok(BlessAction::Unchanged);
    }
    let text = match check.kind {
        Kind::Text => actual.text.clone(),
        Kind::Json => {
            let fresh = canonical(&actual.document);
            let old = existing.and_then(|t| serde_json::from_str::<Value>(t).ok());
            let merged = match &old {
                Some(old) => merge(old, &fresh),
                None => fresh,
            };
            pretty(&merged)
        }
    };
    if existing == Some(text.as_str()) {
        return Ok(BlessAction::Unchanged);
    }
    std::fs::write(&check.path, &text)
        .map_err(|e| format!("cannot write {}: {}", check.path.display(), io_reason(&e)))?;
    Ok(if existing.is_some() {
        BlessAction::Updated
    } else {
        BlessAction::Added
    })
}

// ---------------------------------------------------------------------------
// Comparing JSON

fn function_name(f: &Value) -> Option<&str> {
    f.get("name").and_then(Value::as_str)
}

fn compare_json(expected: &Value, actual: &Actual, case: &Case) -> Comparison {
    let got = &actual.document;
    let mut file = Vec::new();
    let mut functions = Vec::new();
    let mut hints = Vec::new();
    // Everything but the functions, as compare::diff sees it.
    let without_functions = |v: &Value| match v {
        Value::Object(map) => {
            let mut map = map.clone();
            map.remove("functions");
            Value::Object(map)
        }
        other => other.clone(),
    };
    for line in compare::diff(&without_functions(expected), &without_functions(got)) {
        file.push(Problem::parse(&line, "$"));
    }
    if expected.get("diagnostics").is_none() {
        let errors = got
            .get("diagnostics")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter(|d| d.get("severity").and_then(Value::as_str) == Some("error"));
        for d in errors {
            let message = d.get("message").and_then(Value::as_str).unwrap_or("");
            let at = location(d.get("at"));
            file.push(Problem::message(format!(
                "the file has an error: {message}{}",
                at.map(|(l, c)| format!(" (line {l}, column {c})"))
                    .unwrap_or_default()
            )));
        }
    }
    let empty = Vec::new();
    let actual_functions = got
        .get("functions")
        .and_then(Value::as_array)
        .unwrap_or(&empty);
    match expected.get("functions") {
        None => {}
        Some(Value::Array(expected_functions)) => {
            let positional = expected_functions.len() == actual_functions.len();
            if !positional {
                let names = |fs: &[Value]| -> String {
                    fs.iter()
                        .map(|f| function_name(f).unwrap_or("?"))
                        .collect::<Vec<_>>()
                        .join(", ")
                };
                file.push(Problem {
                    path: "functions".to_string(),
                    expected: Some(format!("[{}]", names(expected_functions))),
                    actual: Some(format!("[{}]", names(actual_functions))),
                    line: format!(
                        "functions: expected {} items, got {}",
                        expected_functions.len(),
                        actual_functions.len()
                    ),
                });
            }
            let mut used = vec![false; actual_functions.len()];
            for (i, e) in expected_functions.iter().enumerate() {
                let name = function_name(e).unwrap_or("?").to_string();
                let partner = if positional {
                    Some(i)
                } else {
                    (0..actual_functions.len()).find(|&j| {
                        !used[j] && function_name(&actual_functions[j]) == Some(name.as_str())
                    })
                };
                match partner.and_then(|j| actual_functions.get(j).map(|a| (j, a))) {
                    Some((j, a)) => {
                        used[j] = true;
                        let problems: Vec<Problem> = compare::diff(e, a)
                            .iter()
                            .map(|l| Problem::parse(l, "$"))
                            .collect();
                        let notes = explain(&problems, a, &actual.source);
                        functions.push(FunctionCheck {
                            name,
                            problems,
                            notes,
                        });
                    }
                    None => functions.push(FunctionCheck {
                        name,
                        problems: vec![Problem::message(
                            "expected, but tpi found no such entry function".to_string(),
                        )],
                        notes: Vec::new(),
                    }),
                }
            }
            for (j, a) in actual_functions.iter().enumerate() {
                if !used[j] {
                    functions.push(FunctionCheck {
                        name: function_name(a).unwrap_or("?").to_string(),
                        problems: vec![Problem::message(
                            "a new entry function, not in the expected file".to_string(),
                        )],
                        notes: Vec::new(),
                    });
                }
            }
            let expects_keep = |value: bool| {
                expected_functions
                    .iter()
                    .any(|f| f.get("keep_input_mutations") == Some(&Value::Bool(value)))
            };
            let folder = case
                .path
                .parent()
                .filter(|p| !p.as_os_str().is_empty())
                .map(|p| p.join(FLAGS_FILE).display().to_string())
                .unwrap_or_else(|| FLAGS_FILE.to_string());
            if case.options.keep_input_mutations && expects_keep(false) {
                hints.push(format!(
                    "the expected file was recorded with keep_input_mutations off: \
                     write `--no-keep-input-mutations` in {folder}"
                ));
            } else if !case.options.keep_input_mutations && expects_keep(true) {
                hints.push(
                    "the expected file was recorded with keep_input_mutations on, \
                     but this case runs with --no-keep-input-mutations"
                        .to_string(),
                );
            }
        }
        Some(other) => {
            for line in compare::diff(other, &Value::Array(actual_functions.clone())) {
                file.push(Problem::parse(&line, "$"));
            }
        }
    }
    Comparison::Json {
        file,
        functions,
        hints,
    }
}

fn location(at: Option<&Value>) -> Option<(u64, u64)> {
    let at = at?;
    Some((at.get("line")?.as_u64()?, at.get("column")?.as_u64()?))
}

/// The trimmed source line `line` (1-based).
fn source_line(source: &SourceFile, line: u64) -> String {
    let index = usize::try_from(line.saturating_sub(1)).unwrap_or(usize::MAX);
    source
        .text
        .lines()
        .nth(index)
        .map(|l| l.trim().to_string())
        .unwrap_or_default()
}

/// Notes that explain the actual values behind the problems: the source
/// lines that mutate an input or make an output, and error messages.
fn explain(problems: &[Problem], function: &Value, source: &SourceFile) -> Vec<String> {
    let mut notes: Vec<String> = Vec::new();
    let mut push = |note: String| {
        if !notes.contains(&note) {
            notes.push(note);
        }
    };
    let at = |line: u64, column: u64| {
        format!(
            "{}:{line}:{column}: {}",
            source.name,
            source_line(source, line)
        )
    };
    for problem in problems {
        let head = problem.path.split('.').next().unwrap_or("");
        if let Some((section, rest)) = head.split_once('[') {
            let Some(index) = rest.strip_suffix(']').and_then(|i| i.parse::<usize>().ok()) else {
                continue;
            };
            let Some(item) = function
                .get(section)
                .and_then(Value::as_array)
                .and_then(|a| a.get(index))
            else {
                continue;
            };
            let because = item.get("because").and_then(Value::as_array);
            for b in because.into_iter().flatten() {
                let Some((line, column)) = location(Some(b)) else {
                    continue;
                };
                match section {
                    "inputs" => {
                        let name = item.get("name").and_then(Value::as_str).unwrap_or("?");
                        push(format!("input `{name}` is mutated at {}", at(line, column)));
                    }
                    "outputs" => {
                        let op = b.get("op").and_then(Value::as_str).unwrap_or("?");
                        push(format!(
                            "output {index} comes from `{op}` at {}",
                            at(line, column)
                        ));
                    }
                    _ => {}
                }
            }
        } else {
            let error = match head {
                "error" => function.get("error"),
                "eager" => {
                    let phase = problem.path.split('.').nth(1).unwrap_or("");
                    function.get("eager").and_then(|e| e.get(phase))
                }
                _ => None,
            };
            if let Some(error) = error.filter(|e| !e.is_null()) {
                let message = error.get("message").and_then(Value::as_str).unwrap_or("");
                let place = location(error.get("at"))
                    .map(|(l, c)| format!(" at {}", at(l, c)))
                    .unwrap_or_default();
                push(format!("tpi says: {message}{place}"));
            }
        }
    }
    notes
}

// ---------------------------------------------------------------------------
// Canonical documents, merging, and the oracle's JSON layout

const INPUT_KEYS: &[&str] = &[
    "name",
    "kind",
    "is_leaf",
    "requires_grad",
    "mutates_data",
    "mutates_metadata",
    "mutates_storage_metadata",
    "mutations_hidden_from_autograd",
    "mutations_under_no_grad_or_inference_mode",
    "mutation_inductor_storage_resize",
    "mutation_type",
];
const OUTPUT_KEYS: &[&str] = &["output_type", "base_idx", "requires_grad", "dynamic_dims"];
const TANGENT_KEYS: &[&str] = &["shape", "stride", "dtype"];
const ERROR_KEYS: &[&str] = &["code", "message"];
const DIAGNOSTIC_KEYS: &[&str] = &["code", "tpi_code", "severity", "message"];

fn pick(value: &Value, keys: &[&str]) -> Value {
    let mut out = Map::new();
    for key in keys {
        if let Some(v) = value.get(*key) {
            out.insert((*key).to_string(), v.clone());
        }
    }
    Value::Object(out)
}

fn pick_each(value: Option<&Value>, keys: &[&str]) -> Value {
    Value::Array(
        value
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .map(|v| pick(v, keys))
            .collect(),
    )
}

fn error_or_null(value: Option<&Value>) -> Value {
    match value {
        Some(v) if !v.is_null() => pick(v, ERROR_KEYS),
        _ => Value::Null,
    }
}

/// The canonical document of OUTPUT.md, in the oracle's key order, from
/// tpi's `file_document`: explanations (`because`, `at`, `assumptions`, …)
/// left out. File-level diagnostics (a syntax error) are kept as
/// `diagnostics`, so that a blessed file records them.
pub fn canonical(document: &Value) -> Value {
    let mut out = Map::new();
    if let Some(file) = document.get("file") {
        out.insert("file".into(), file.clone());
    }
    let functions = document
        .get("functions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(canonical_function)
        .collect();
    out.insert("functions".into(), Value::Array(functions));
    if let Some(diagnostics) = document.get("diagnostics") {
        out.insert(
            "diagnostics".into(),
            pick_each(Some(diagnostics), DIAGNOSTIC_KEYS),
        );
    }
    Value::Object(out)
}

fn canonical_function(f: &Value) -> Value {
    let mut out = Map::new();
    if let Some(name) = f.get("name") {
        out.insert("name".into(), name.clone());
    }
    if let Some(error) = f.get("error") {
        out.insert("error".into(), error_or_null(Some(error)));
    } else {
        for key in [
            "is_train",
            "keep_input_mutations",
            "inputs",
            "outputs",
            "num_intermediate_bases",
            "traced_tangents",
            "grad_enabled_mutation",
            "num_tokens",
        ] {
            let Some(value) = f.get(key) else { continue };
            let value = match key {
                "inputs" => pick_each(Some(value), INPUT_KEYS),
                "outputs" => pick_each(Some(value), OUTPUT_KEYS),
                "traced_tangents" => pick_each(Some(value), TANGENT_KEYS),
                _ => value.clone(),
            };
            out.insert(key.into(), value);
        }
    }
    if let Some(eager) = f.get("eager") {
        let mut e = Map::new();
        e.insert(
            "forward_error".into(),
            error_or_null(eager.get("forward_error")),
        );
        e.insert(
            "backward_error".into(),
            error_or_null(eager.get("backward_error")),
        );
        out.insert("eager".into(), Value::Object(e));
    }
    Value::Object(out)
}

/// `new` (a canonical document), with the spelling of `old` wherever the
/// two compare equal: `message` and `file` texts (when the error `code`
/// beside them is unchanged), and sizes equal as expressions. Keys and
/// their order are `new`'s; functions are matched by name when their number
/// changed.
pub fn merge(old: &Value, new: &Value) -> Value {
    match (old, new) {
        (Value::Object(o), Value::Object(n)) => {
            if o.get("code").is_some() && n.get("code").is_some() && o.get("code") != n.get("code")
            {
                return new.clone();
            }
            let mut out = Map::new();
            for (key, value) in n {
                let merged = match o.get(key) {
                    Some(old_value @ Value::String(_))
                        if (key == "message" || key == "file") && value.is_string() =>
                    {
                        old_value.clone()
                    }
                    Some(old_value) => merge(old_value, value),
                    None => value.clone(),
                };
                out.insert(key.clone(), merged);
            }
            Value::Object(out)
        }
        (Value::Array(o), Value::Array(n)) => {
            if o.len() == n.len() {
                return Value::Array(o.iter().zip(n).map(|(a, b)| merge(a, b)).collect());
            }
            let named = |a: &[Value]| a.iter().all(|v| function_name(v).is_some());
            if !(named(o) && named(n)) {
                return new.clone();
            }
            let mut used = vec![false; o.len()];
            let items = n
                .iter()
                .map(|item| {
                    let partner = (0..o.len())
                        .find(|&j| !used[j] && function_name(&o[j]) == function_name(item));
                    match partner {
                        Some(j) => {
                            used[j] = true;
                            merge(&o[j], item)
                        }
                        None => item.clone(),
                    }
                })
                .collect();
            Value::Array(items)
        }
        (Value::String(_), Value::String(_)) | (Value::Number(_), Value::Number(_))
            if compare::sym_equal(old, new) =>
        {
            old.clone()
        }
        _ => new.clone(),
    }
}

/// JSON as the oracle writes it: Python's `json.dumps(value, indent=2)`
/// (ASCII only, `\uXXXX` escapes) and a final newline.
pub fn pretty(value: &Value) -> String {
    let mut out = String::new();
    write_value(value, 0, &mut out);
    out.push('\n');
    out
}

fn write_value(value: &Value, depth: usize, out: &mut String) {
    let indent = |out: &mut String, depth: usize| {
        for _ in 0..depth {
            out.push_str("  ");
        }
    };
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => {
            let _ = write!(out, "{n}");
        }
        Value::String(s) => write_string(s, out),
        Value::Array(items) if items.is_empty() => out.push_str("[]"),
        Value::Array(items) => {
            out.push_str("[\n");
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(",\n");
                }
                indent(out, depth + 1);
                write_value(item, depth + 1, out);
            }
            out.push('\n');
            indent(out, depth);
            out.push(']');
        }
        Value::Object(map) if map.is_empty() => out.push_str("{}"),
        Value::Object(map) => {
            out.push_str("{\n");
            for (i, (key, item)) in map.iter().enumerate() {
                if i > 0 {
                    out.push_str(",\n");
                }
                indent(out, depth + 1);
                write_string(key, out);
                out.push_str(": ");
                write_value(item, depth + 1, out);
            }
            out.push('\n');
            indent(out, depth);
            out.push('}');
        }
    }
}

fn write_string(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            ' '..='~' => out.push(c),
            _ => {
                let mut units = [0u16; 2];
                for unit in c.encode_utf16(&mut units) {
                    let _ = write!(out, "\\u{unit:04x}");
                }
            }
        }
    }
    out.push('"');
}

// ---------------------------------------------------------------------------
// Text diffs

/// One line of a unified diff.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DiffLine {
    /// `@@ -a,b +c,d @@`.
    Hunk(String),
    /// A line in both texts.
    Same(String),
    /// A line only in the expected text.
    Removed(String),
    /// A line only in the actual text.
    Added(String),
    /// `\ No newline at end of file` (of the expected or actual text).
    NoNewline(&'static str),
}

/// Beyond this many cells the diff of the middle part is not minimised.
const MAX_LCS_CELLS: usize = 4_000_000;

/// A unified diff of `expected` against `actual` with `context` lines
/// around each change; empty when the texts are equal.
pub fn unified_diff(expected: &str, actual: &str, context: usize) -> Vec<DiffLine> {
    if expected == actual {
        return Vec::new();
    }
    let a: Vec<&str> = expected.lines().collect();
    let b: Vec<&str> = actual.lines().collect();
    // (tag, index in a, index in b): ' ' both, '-' a only, '+' b only.
    let mut ops: Vec<(char, usize, usize)> = Vec::new();
    let prefix = a.iter().zip(&b).take_while(|(x, y)| x == y).count();
    let suffix = a[prefix..]
        .iter()
        .rev()
        .zip(b[prefix..].iter().rev())
        .take_while(|(x, y)| x == y)
        .count();
    for i in 0..prefix {
        ops.push((' ', i, i));
    }
    let (a_mid, b_mid) = (&a[prefix..a.len() - suffix], &b[prefix..b.len() - suffix]);
    let (n, m) = (a_mid.len(), b_mid.len());
    if n.saturating_mul(m) <= MAX_LCS_CELLS {
        let mut lcs = vec![0u32; (n + 1) * (m + 1)];
        let at = |i: usize, j: usize| i * (m + 1) + j;
        for i in (0..n).rev() {
            for j in (0..m).rev() {
                lcs[at(i, j)] = if a_mid[i] == b_mid[j] {
                    lcs[at(i + 1, j + 1)] + 1
                } else {
                    lcs[at(i + 1, j)].max(lcs[at(i, j + 1)])
                };
            }
        }
        let (mut i, mut j) = (0, 0);
        while i < n || j < m {
            if i < n && j < m && a_mid[i] == b_mid[j] {
                ops.push((' ', prefix + i, prefix + j));
                i += 1;
                j += 1;
            } else if i < n && (j == m || lcs[at(i + 1, j)] >= lcs[at(i, j + 1)]) {
                ops.push(('-', prefix + i, prefix + j));
                i += 1;
            } else {
                ops.push(('+', prefix + i, prefix + j));
                j += 1;
            }
        }
    } else {
        ops.extend((0..n).map(|i| ('-', prefix + i, prefix)));
        ops.extend((0..m).map(|j| ('+', prefix + n, prefix + j)));
    }
    for k in 0..suffix {
        ops.push((' ', a.len() - suffix + k, b.len() - suffix + k));
    }
    let newline_differs = expected.ends_with('\n') != actual.ends_with('\n');
    if newline_differs {
        // Make the last lines part of a change so that the marker shows.
        if let Some(last) = ops.last_mut() {
            if last.0 == ' ' {
                let (_, i, j) = *last;
                *last = ('-', i, j);
                ops.push(('+', i, j));
            }
        }
    }
    // Group the changes into hunks with context.
    let changed: Vec<usize> = (0..ops.len()).filter(|&k| ops[k].0 != ' ').collect();
    let mut out = Vec::new();
    let mut k = 0;
    while k < changed.len() {
        let start = changed[k].saturating_sub(context);
        let mut end = changed[k];
        while k + 1 < changed.len() && changed[k + 1] <= end + 2 * context + 1 {
            k += 1;
            end = changed[k];
        }
        let end = (end + context).min(ops.len() - 1);
        k += 1;
        let hunk = &ops[start..=end];
        let a_count = hunk.iter().filter(|o| o.0 != '+').count();
        let b_count = hunk.iter().filter(|o| o.0 != '-').count();
        let a_start = hunk.iter().find(|o| o.0 != '+').map_or(hunk[0].1, |o| o.1);
        let b_start = hunk.iter().find(|o| o.0 != '-').map_or(hunk[0].2, |o| o.2);
        let range = |start: usize, count: usize| {
            if count == 0 {
                format!("{start},0")
            } else {
                format!("{},{count}", start + 1)
            }
        };
        out.push(DiffLine::Hunk(format!(
            "@@ -{} +{} @@",
            range(a_start, a_count),
            range(b_start, b_count)
        )));
        for &(tag, i, j) in hunk {
            match tag {
                ' ' => out.push(DiffLine::Same(a.get(i).copied().unwrap_or("").to_string())),
                '-' => {
                    out.push(DiffLine::Removed(
                        a.get(i).copied().unwrap_or("").to_string(),
                    ));
                    if newline_differs && i + 1 == a.len() && !expected.ends_with('\n') {
                        out.push(DiffLine::NoNewline("expected"));
                    }
                }
                _ => {
                    out.push(DiffLine::Added(b.get(j).copied().unwrap_or("").to_string()));
                    if newline_differs && j + 1 == b.len() && !actual.ends_with('\n') {
                        out.push(DiffLine::NoNewline("actual"));
                    }
                }
            }
        }
    }
    out
}

// ---------------------------------------------------------------------------
// Running many cases

/// Runs every case on `jobs` threads (at least one). `on_done` sees each
/// result in the order of `cases` as soon as it and all before it are done,
/// with the number of cases finished so far (in any order) and the total.
pub fn run_all(
    cases: &[Case],
    mode: &Mode,
    jobs: usize,
    mut on_done: impl FnMut(Option<&CaseResult>, usize, usize),
) -> Vec<CaseResult> {
    let total = cases.len();
    let jobs = jobs.clamp(1, total.max(1));
    let next = AtomicUsize::new(0);
    let mut slots: Vec<Option<CaseResult>> = vec![None; total];
    let mut printed = 0;
    let mut finished = 0;
    let mut deliver = |index: usize, result: CaseResult, slots: &mut Vec<Option<CaseResult>>| {
        finished += 1;
        if let Some(slot) = slots.get_mut(index) {
            *slot = Some(result);
        }
        on_done(None, finished, total);
        while let Some(Some(ready)) = slots.get(printed) {
            on_done(Some(ready), finished, total);
            printed += 1;
        }
    };
    std::thread::scope(|scope| {
        let (sender, receiver) = std::sync::mpsc::channel::<(usize, CaseResult)>();
        let mut spawned = 0;
        for _ in 0..jobs {
            let sender = sender.clone();
            let next = &next;
            let worker = std::thread::Builder::new()
                .name("tpi-test".to_string())
                .stack_size(WORKER_STACK_BYTES)
                .spawn_scoped(scope, move || loop {
                    let index = next.fetch_add(1, Ordering::SeqCst);
                    let Some(case) = cases.get(index) else { break };
                    if sender.send((index, run_case(case, mode))).is_err() {
                        break;
                    }
                });
            if worker.is_ok() {
                spawned += 1;
            }
        }
        drop(sender);
        if spawned == 0 {
            // No thread could start: run here.
            loop {
                let index = next.fetch_add(1, Ordering::SeqCst);
                let Some(case) = cases.get(index) else { break };
                deliver(index, run_case(case, mode), &mut slots);
            }
        } else {
            for (index, result) in receiver {
                deliver(index, result, &mut slots);
            }
        }
    });
    slots.into_iter().flatten().collect()
}

/// The number of worker threads for `--jobs`.
pub fn default_jobs() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

// ---------------------------------------------------------------------------
// Reports

struct Style {
    color: bool,
}

impl Style {
    fn paint(&self, code: &str, text: &str) -> String {
        if self.color {
            format!("\x1b[{code}m{text}\x1b[0m")
        } else {
            text.to_string()
        }
    }
    fn red(&self, text: &str) -> String {
        self.paint("31", text)
    }
    fn green(&self, text: &str) -> String {
        self.paint("32", text)
    }
    fn yellow(&self, text: &str) -> String {
        self.paint("33", text)
    }
    fn cyan(&self, text: &str) -> String {
        self.paint("36", text)
    }
    fn bold(&self, text: &str) -> String {
        self.paint("1", text)
    }
    fn dim(&self, text: &str) -> String {
        self.paint("2", text)
    }
}

fn plural(n: usize, one: &str) -> String {
    if n == 1 {
        format!("{n} {one}")
    } else {
        format!("{n} {one}s")
    }
}

fn file_name(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| path.display().to_string())
}

fn problem_line(problem: &Problem, style: &Style, blessing: bool) -> String {
    match (&problem.expected, &problem.actual) {
        (Some(expected), Some(actual)) if blessing => format!(
            "{}: {} -> {}",
            problem.path,
            style.red(expected),
            style.green(actual)
        ),
        (Some(expected), Some(actual)) => format!(
            "{}: expected {}, got {}",
            problem.path,
            style.red(expected),
            style.green(actual)
        ),
        _ => problem.line.clone(),
    }
}

/// The report of one case: one line, then the details of a failure (or of
/// what blessing changed); with `verbose`, one line per function.
pub fn render_case(result: &CaseResult, verbose: bool, color: bool) -> String {
    let style = Style { color };
    let mut out = String::new();
    let name = &result.case.display;
    let functions = plural(result.functions.len(), "function");
    let blessing = result.checks.iter().any(|c| c.blessed.is_some());
    if let Some(error) = &result.error {
        let tag = match result.status {
            Status::Error => style.red("error"),
            _ => style.red("FAIL"),
        };
        let _ = writeln!(out, "{tag} {name}: {error}");
        return out;
    }
    match result.status {
        Status::New => {
            let _ = writeln!(
                out,
                "{} {name} ({functions}; no expected file: record it with `tpi test --bless {name}`)",
                style.yellow("new "),
            );
        }
        _ if blessing => {
            for check in &result.checks {
                let action = match check.blessed {
                    Some(BlessAction::Added) => style.green("added    "),
                    Some(BlessAction::Updated) => style.yellow("updated  "),
                    _ => style.dim("unchanged"),
                };
                let shown = Path::new(name).with_extension(check.kind.extension());
                let _ = writeln!(out, "{action} {}", shown.display());
            }
        }
        Status::Pass => {
            let _ = writeln!(out, "{} {name} ({functions})", style.green("ok  "));
        }
        _ => {
            let failing: usize = result
                .checks
                .iter()
                .filter_map(|c| match &c.comparison {
                    Some(Comparison::Json { functions, .. }) => {
                        Some(functions.iter().filter(|f| !f.problems.is_empty()).count())
                    }
                    _ => None,
                })
                .sum();
            let detail = if failing > 0 {
                let verb = if failing == 1 { "differs" } else { "differ" };
                format!("{failing} of {functions} {verb}")
            } else {
                functions
            };
            let _ = writeln!(out, "{} {name} ({detail})", style.red("FAIL"));
        }
    }
    for check in &result.checks {
        let Some(comparison) = &check.comparison else {
            continue;
        };
        let show = !comparison.passed()
            && (result.status == Status::Fail || check.blessed == Some(BlessAction::Updated));
        let expected_name = file_name(&check.path);
        match comparison {
            Comparison::Json {
                file,
                functions,
                hints,
            } => {
                for problem in file.iter().filter(|_| show) {
                    let line = problem_line(problem, &style, blessing);
                    let _ = writeln!(out, "     {expected_name}: {line}");
                }
                let several = result.checks.len() > 1;
                for f in functions {
                    if f.problems.is_empty() {
                        if verbose && !blessing {
                            let _ = writeln!(out, "     {} {}", style.green("ok  "), f.name);
                        }
                        continue;
                    }
                    if !show {
                        continue;
                    }
                    let (tag, pad) = if blessing {
                        (style.yellow("changed"), "           ")
                    } else {
                        (style.red("FAIL"), "          ")
                    };
                    let origin = if several {
                        format!(" ({expected_name})")
                    } else {
                        String::new()
                    };
                    let _ = writeln!(out, "     {tag} {}{origin}", style.bold(&f.name));
                    for problem in &f.problems {
                        let _ = writeln!(out, "{pad}{}", problem_line(problem, &style, blessing));
                    }
                    for note in &f.notes {
                        let _ = writeln!(out, "{pad}{} {note}", style.cyan("note:"));
                    }
                }
                for hint in hints.iter().filter(|_| show) {
                    let _ = writeln!(out, "     {} {hint}", style.cyan("hint:"));
                }
            }
            Comparison::Text { diff } => {
                if !show {
                    continue;
                }
                let _ = writeln!(
                    out,
                    "     {}",
                    style.red(&format!("--- {expected_name} (expected)"))
                );
                let _ = writeln!(out, "     {}", style.green("+++ tpi (actual)"));
                for line in diff {
                    let text = match line {
                        DiffLine::Hunk(h) => style.cyan(h),
                        DiffLine::Same(l) => format!(" {l}"),
                        DiffLine::Removed(l) => style.red(&format!("-{l}")),
                        DiffLine::Added(l) => style.green(&format!("+{l}")),
                        DiffLine::NoNewline(which) => {
                            format!("\\ No newline at end of file ({which})")
                        }
                    };
                    let _ = writeln!(out, "     {text}");
                }
            }
        }
    }
    out
}

/// Counts of a run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Totals {
    /// Cases that pass (or were blessed).
    pub passed: usize,
    /// Cases that fail, crashed, or could not be run.
    pub failed: usize,
    /// Cases without an expected file.
    pub new: usize,
    /// Cases that could not be run (I/O).
    pub errors: usize,
    /// Entry functions over all cases.
    pub functions: usize,
}

impl Totals {
    /// The counts of some results.
    pub fn of(results: &[CaseResult]) -> Totals {
        let mut totals = Totals::default();
        for r in results {
            totals.functions += r.functions.len();
            match r.status {
                Status::Pass => totals.passed += 1,
                Status::Fail => totals.failed += 1,
                Status::New => totals.new += 1,
                Status::Error => {
                    totals.failed += 1;
                    totals.errors += 1;
                }
            }
        }
        totals
    }

    /// The exit status: 2 when a case could not be run, 1 when one failed.
    pub fn exit_status(&self) -> u8 {
        if self.errors > 0 {
            EXIT_USAGE
        } else if self.failed > 0 {
            EXIT_FAILED
        } else {
            EXIT_OK
        }
    }

    /// The last line of a run: `N passed, M failed`.
    pub fn summary(&self) -> String {
        format!("{} passed, {} failed", self.passed, self.failed)
    }
}

/// `tpi test` from the command line: discovers, runs, reports on `out`
/// (progress on `err` when `err_is_terminal`), and returns the exit status.
pub fn run_cli(
    config: &Config,
    out: &mut dyn Write,
    err: &mut dyn Write,
    out_is_terminal: bool,
    err_is_terminal: bool,
) -> u8 {
    if config.bless && !config.force && std::env::var_os("CI").is_some() {
        let _ = writeln!(
            err,
            "tpi test: --bless is refused when CI is set: expected files are blessed by people, \
             in review (use --force to override)"
        );
        return EXIT_USAGE;
    }
    // Cases run side by side, so each gets one thread.
    let base = Options {
        keep_input_mutations: !config.no_keep_input_mutations,
        threads: 1,
    };
    let cases = match discover(&config.paths, &base) {
        Ok(cases) => cases,
        Err(message) => {
            let _ = writeln!(err, "tpi test: {message}");
            return EXIT_USAGE;
        }
    };
    if cases.is_empty() {
        let where_ = if config.paths.is_empty() {
            ".".to_string()
        } else {
            config
                .paths
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        };
        let _ = writeln!(err, "tpi test: no .tp files under {where_}");
        return EXIT_USAGE;
    }
    let mode = Mode {
        only: config.format,
        bless: config.bless,
    };
    let color = render::use_color(out_is_terminal);
    let progress = err_is_terminal && cases.len() > PROGRESS_THRESHOLD;
    let started = Instant::now();
    let jobs = config.jobs.unwrap_or_else(default_jobs);
    let mut progress_shown = false;
    let results = run_all(&cases, &mode, jobs, |ready, done, total| {
        if progress && progress_shown {
            let _ = write!(err, "\r\x1b[K");
            progress_shown = false;
        }
        if let Some(result) = ready {
            let _ = out.write_all(render_case(result, config.verbose, color).as_bytes());
            let _ = out.flush();
        }
        if progress && done < total {
            let _ = write!(err, "[{done}/{total}] testing…");
            let _ = err.flush();
            progress_shown = true;
        }
    });
    if progress_shown {
        let _ = write!(err, "\r\x1b[K");
    }
    let totals = Totals::of(&results);
    let elapsed = started.elapsed().as_secs_f64();
    let mut tail = String::new();
    if config.bless {
        let count = |action: BlessAction| {
            results
                .iter()
                .flat_map(|r| &r.checks)
                .filter(|c| c.blessed == Some(action))
                .count()
        };
        let _ = writeln!(
            tail,
            "blessed: {} added, {} updated, {} unchanged",
            count(BlessAction::Added),
            count(BlessAction::Updated),
            count(BlessAction::Unchanged)
        );
    } else if totals.new > 0 {
        let _ = writeln!(
            tail,
            "{} without an expected file: record with `tpi test --bless`, then review",
            plural(totals.new, "new case")
        );
    }
    let _ = writeln!(
        tail,
        "{} ({}) in {elapsed:.2}s",
        plural(results.len(), "file"),
        plural(totals.functions, "function")
    );
    // Plain, never coloured: CI log readers match it.
    let summary = totals.summary();
    let _ = writeln!(tail, "{summary}");
    let _ = out.write_all(tail.as_bytes());
    let _ = out.flush();
    totals.exit_status()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn pretty_matches_python() {
        let v = json!({"a": [], "b": {}, "c": [1, "x\u{e9}\u{1F600}\n"], "d": null});
        assert_eq!(
            pretty(&v),
            "{\n  \"a\": [],\n  \"b\": {},\n  \"c\": [\n    1,\n    \"x\\u00e9\\ud83d\\ude00\\n\"\n  ],\n  \"d\": null\n}\n"
        );
    }

    #[test]
    fn merge_keeps_equal_spellings() {
        let old = json!({"file": "a.tp", "functions": [{"name": "f", "error": {"code": "x", "message": "PyTorch's"},
                          "shape": ["n*4"]}]});
        let new = json!({"file": "b.tp", "functions": [{"name": "f", "error": {"code": "x", "message": "tpi's"},
                          "shape": ["4*n"]}]});
        assert_eq!(merge(&old, &new), old);
        let changed = json!({"file": "b.tp", "functions": [{"name": "f", "error": {"code": "y", "message": "tpi's"},
                              "shape": ["4*m"]}]});
        let merged = merge(&old, &changed);
        assert_eq!(merged["functions"][0]["error"]["message"], "tpi's");
        assert_eq!(merged["functions"][0]["shape"][0], "4*m");
        assert_eq!(merged["file"], "a.tp");
    }

    #[test]
    fn merge_matches_functions_by_name() {
        let old = json!([{"name": "f", "m": "n*2"}, {"name": "g", "m": 1}]);
        let new = json!([{"name": "g", "m": 1}, {"name": "h", "m": 3}, {"name": "f", "m": "2*n"}]);
        assert_eq!(
            merge(&old, &new),
            json!([{"name": "g", "m": 1}, {"name": "h", "m": 3}, {"name": "f", "m": "n*2"}])
        );
    }

    #[test]
    fn canonical_drops_explanations() {
        let doc = json!({"file": "a.tp", "functions": [{
            "name": "f", "is_train": false, "inputs": [{"name": "x", "because": [], "mutation_type": "NOT_MUTATED"}],
            "traced_tangents": [{"shape": [1], "stride": [1], "dtype": "float32", "source": "out"}],
            "eager": {"forward_error": {"code": "other", "message": "m", "at": {}}, "backward_error": null},
            "assumptions": ["n > 1"]}]});
        assert_eq!(
            canonical(&doc),
            json!({"file": "a.tp", "functions": [{
                "name": "f", "is_train": false, "inputs": [{"name": "x", "mutation_type": "NOT_MUTATED"}],
                "traced_tangents": [{"shape": [1], "stride": [1], "dtype": "float32"}],
                "eager": {"forward_error": {"code": "other", "message": "m"}, "backward_error": null}}]})
        );
    }

    #[test]
    fn flags() {
        let base = Options::default();
        assert!(
            !parse_flags("# no_keep\n--no-keep-input-mutations\n", &base)
                .map(|o| o.keep_input_mutations)
                .unwrap_or(true)
        );
        assert!(parse_flags("", &base).is_ok_and(|o| o.keep_input_mutations));
        assert!(parse_flags("--bogus", &base).is_err());
    }

    #[test]
    fn problems_split() {
        let p = Problem::parse("$.inputs[0].mutates_data: expected false, got true", "$");
        assert_eq!(p.path, "inputs[0].mutates_data");
        assert_eq!(p.expected.as_deref(), Some("false"));
        assert_eq!(p.actual.as_deref(), Some("true"));
        let p = Problem::parse("$.error: missing", "$");
        assert_eq!(p.line, "error: missing");
        assert_eq!(p.expected, None);
    }

    #[test]
    fn unified_diff_hunks() {
        assert!(unified_diff("a\n", "a\n", 3).is_empty());
        let d = unified_diff("a\nb\nc\n", "a\nB\nc\n", 1);
        assert_eq!(
            d,
            vec![
                DiffLine::Hunk("@@ -1,3 +1,3 @@".into()),
                DiffLine::Same("a".into()),
                DiffLine::Removed("b".into()),
                DiffLine::Added("B".into()),
                DiffLine::Same("c".into()),
            ]
        );
        let d = unified_diff("a\n", "a", 3);
        assert!(d.contains(&DiffLine::NoNewline("actual")));
        let d = unified_diff("", "x\n", 3);
        assert_eq!(d[0], DiffLine::Hunk("@@ -0,0 +1,1 @@".into()));
    }
}
