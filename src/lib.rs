//! tpi: a static model of PyTorch's AOTAutograd view-and-mutation analysis.
//!
//! The pipeline, one stage per module: source -> tokens -> AST (`syntax`) ->
//! abstract interpretation over the functionalization domain (`analysis`, with
//! the op table in `ops` and symbolic sizes in `sym`) -> metadata -> reports
//! (`report`). No stage prints: the CLI and the REPL render at the edge.

pub mod analysis;
pub mod compare;
pub mod memory;
pub mod ops;
pub mod repl;
pub mod report;
pub mod sym;
pub mod syntax;
pub mod testing;

pub use report::{Diagnostic, Severity};
pub use syntax::{SourceFile, Span};

/// Settings of one analysis run (OUTPUT.md).
#[derive(Clone, Debug)]
pub struct Options {
    /// `keep_input_mutations` (torch.compile's default: true).
    pub keep_input_mutations: bool,
    /// At most this many threads for one file (a big file is parsed in
    /// parts at once, and a long function's two runs go side by side).
    /// The answers are the same for any number.
    pub threads: usize,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            keep_input_mutations: true,
            threads: available_threads(),
        }
    }
}

/// The number of threads the machine runs at once (1 if unknown).
pub fn available_threads() -> usize {
    std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get)
}

/// Everything `tpi check` learns about one file.
#[derive(Debug)]
pub struct Outcome {
    /// The parsed module, when the file parsed.
    pub module: Option<syntax::ast::Module>,
    /// One result per entry function, in source order.
    pub functions: Vec<analysis::FunctionResult>,
    /// File-level diagnostics (syntax errors, …); per-function ones live in
    /// `functions`.
    pub diagnostics: Vec<Diagnostic>,
}

impl Outcome {
    /// True when anything (file-level or in a function) is an error.
    pub fn has_errors(&self) -> bool {
        self.diagnostics.iter().any(Diagnostic::is_error)
            || self.functions.iter().any(|f| f.error().is_some())
    }
}

/// The stack of every thread that parses or analyses (both recurse on
/// nesting, within the limits the front end and the interpreter enforce).
pub const WORKER_STACK_BYTES: usize = 256 << 20;

/// How long each stage of `check_with_timings` took.
#[derive(Clone, Copy, Debug, Default)]
pub struct Timings {
    pub parse: std::time::Duration,
    /// Numbering each function's names (`syntax::resolve`).
    pub lower: std::time::Duration,
    pub analysis: std::time::Duration,
    /// The process's peak resident memory after parsing and after the
    /// analysis, in bytes, where the system tells it (Linux).
    pub peak_after_parse: Option<u64>,
    pub peak_after_analysis: Option<u64>,
}

/// The process's peak resident memory so far (`VmHWM`), in bytes.
pub fn peak_memory() -> Option<u64> {
    status_bytes("VmHWM:")
}

/// The process's resident memory now (`VmRSS`), in bytes.
pub fn resident_memory() -> Option<u64> {
    status_bytes("VmRSS:")
}

/// A size in kB from `/proc/self/status` (Linux), in bytes.
fn status_bytes(key: &str) -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with(key))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// `check`, also reporting how long parsing and analysis took.
pub fn check_with_timings(file: &SourceFile, options: &Options) -> (Outcome, Timings) {
    let started = std::time::Instant::now();
    let mut parsed = syntax::parser::parse_syntax_on(&file.text, options.threads);
    let parse = started.elapsed();
    let started = std::time::Instant::now();
    if let Ok(module) = &mut parsed {
        syntax::resolve::items(&mut module.items);
    }
    let lower = started.elapsed();
    let peak_after_parse = peak_memory();
    let started = std::time::Instant::now();
    let outcome = analyse_parsed(parsed, options);
    let analysis = started.elapsed();
    let timings = Timings {
        parse,
        lower,
        analysis,
        peak_after_parse,
        peak_after_analysis: peak_memory(),
    };
    (outcome, timings)
}

fn analyse_parsed(
    parsed: Result<syntax::ast::Module, Vec<Diagnostic>>,
    options: &Options,
) -> Outcome {
    match parsed {
        Err(diagnostics) => Outcome {
            module: None,
            functions: Vec::new(),
            diagnostics,
        },
        Ok(module) => {
            let (functions, diagnostics) = analysis::analyse_module(&module, options);
            Outcome {
                module: Some(module),
                functions,
                diagnostics,
            }
        }
    }
}

/// Parses and analyses one source file.
pub fn check(file: &SourceFile, options: &Options) -> Outcome {
    analyse_parsed(
        syntax::parser::parse_module_on(&file.text, options.threads),
        options,
    )
}
