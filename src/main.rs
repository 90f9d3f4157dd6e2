//! The `tpi` command line (OUTPUT.md, "Command line"): `check`, `repl` and
//! the debugging dumps. It reads files, calls the library, and is the one
//! place (with the REPL) that prints: reports on stdout, rendered
//! diagnostics on stderr.
//!
//! Exit status: 0 when every program was analysed without error (warnings
//! are fine), 1 when some program has an error, 2 for usage or I/O
//! problems. The work runs on a thread with a large stack, so that no
//! input, however deeply nested, can overflow it.

use clap::{Args, Parser, Subcommand, ValueEnum};
use std::io::{IsTerminal, Read, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;
use tpi::report::render;
use tpi::syntax::{dump, parser};
use tpi::{Diagnostic, Options, Outcome, SourceFile};

/// Static AOTAutograd view/mutation analysis for PyTorch tensor programs.
///
/// tpi reads `.tp` files (a subset of Python that runs unchanged under
/// PyTorch) and reports, for every entry function, the view and mutation
/// metadata that torch.compile's AOTAutograd would record, without running
/// a kernel.
#[derive(Parser, Debug)]
#[command(name = "tpi", version, about, long_about)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Analyse programs and report what AOTAutograd records for each entry.
    Check(CheckArgs),
    /// Show what the front end makes of a file (for debugging).
    #[command(subcommand)]
    Dump(DumpCommand),
    /// Start the interactive REPL.
    Repl,
    /// Explain one answer step by step: an input (by name), an output (by
    /// index), or without TARGET the graph mode.
    Explain(ExplainArgs),
    /// Golden-file tests: compare each NAME.tp with NAME.json / NAME.out.
    Test(TestArgs),
}

/// `tpi test` (see `tpi::testing`). Exit status: 0 all pass, 1 some case
/// failed, 2 usage or I/O error. The last line is `N passed, M failed`.
#[derive(Args, Debug)]
struct TestArgs {
    /// Write the expected files from the current results (refused when
    /// CI is set, unless --force).
    #[arg(long)]
    bless: bool,
    /// Bless even when the CI environment variable is set.
    #[arg(long, requires = "bless")]
    force: bool,
    /// Compare (or bless) only NAME.json (json) or NAME.out (text).
    #[arg(long, value_enum)]
    format: Option<Format>,
    /// One line per entry function.
    #[arg(long, short)]
    verbose: bool,
    /// Analyse every case with keep_input_mutations off (a folder can ask
    /// for it in a `tpi-test.flags` file).
    #[arg(long)]
    no_keep_input_mutations: bool,
    /// Worker threads (default: one per core).
    #[arg(long, short = 'j', value_name = "N", value_parser = clap::value_parser!(u16).range(1..))]
    jobs: Option<u16>,
    /// Files and folders to search for NAME.tp (default: the current folder).
    #[arg(value_name = "PATH")]
    paths: Vec<PathBuf>,
}

#[derive(Args, Debug)]
struct CheckArgs {
    /// Output format: a human report, or the canonical JSON.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    format: Format,
    /// Explain more in the human report.
    #[arg(long, short)]
    verbose: bool,
    /// Analyse with keep_input_mutations off (torch.compile keeps them on).
    #[arg(long)]
    no_keep_input_mutations: bool,
    /// Print how long each stage took, on stderr.
    #[arg(long)]
    timings: bool,
    /// Threads to use (default: one per core): files are checked at once,
    /// and one big file is parsed and analysed on several.
    #[arg(long, short = 'j', value_name = "N", value_parser = clap::value_parser!(u16).range(1..))]
    jobs: Option<u16>,
    /// The programs to check; `-` reads standard input.
    #[arg(required = true, value_name = "FILE")]
    files: Vec<PathBuf>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum Format {
    Text,
    Json,
}

#[derive(Subcommand, Debug)]
enum DumpCommand {
    /// The tokens the grammar sees, one per line.
    Tokens {
        /// The file to lex; `-` reads standard input.
        #[arg(value_name = "FILE")]
        file: PathBuf,
    },
    /// The syntax tree, indented.
    Ast {
        /// The file to parse; `-` reads standard input.
        #[arg(value_name = "FILE")]
        file: PathBuf,
    },
}

/// Exit statuses (OUTPUT.md).
const EXIT_OK: u8 = 0;
const EXIT_PROGRAM_ERROR: u8 = 1;
const EXIT_USAGE: u8 = 2;

use tpi::WORKER_STACK_BYTES;

/// mimalloc: the analysis allocates many small objects (shapes, nodes, AST).
#[global_allocator]
static ALLOCATOR: tpi::memory::Allocator = tpi::memory::Allocator;

fn main() -> ExitCode {
    tpi::memory::configure_allocator();
    let cli = Cli::parse();
    let worker = std::thread::Builder::new()
        .name("tpi".to_string())
        .stack_size(WORKER_STACK_BYTES)
        .spawn(move || run(cli));
    let code = match worker {
        Ok(handle) => handle.join().unwrap_or_else(|_| {
            eprintln!("tpi: internal error (a bug in tpi: please report it)");
            101
        }),
        Err(error) => {
            eprintln!("tpi: cannot start the worker thread: {error}");
            EXIT_USAGE
        }
    };
    ExitCode::from(code)
}

fn run(cli: Cli) -> u8 {
    match cli.command {
        Some(Command::Check(args)) => check(&args),
        Some(Command::Dump(DumpCommand::Tokens { file })) => dump_tokens(&file),
        Some(Command::Dump(DumpCommand::Ast { file })) => dump_ast(&file),
        Some(Command::Repl) => repl(),
        Some(Command::Explain(args)) => explain(&args),
        Some(Command::Test(args)) => test(args),
        None => {
            if std::io::stdin().is_terminal() {
                repl()
            } else {
                let mut command = <Cli as clap::CommandFactory>::command();
                let _ = command.print_help();
                EXIT_USAGE
            }
        }
    }
}

fn repl() -> u8 {
    tpi::repl::main(Options::default())
}

/// Reads a file (or stdin for `-`), with the one-line message of OUTPUT.md
/// on failure.
fn read(path: &PathBuf) -> Result<(String, Vec<u8>), String> {
    if path.as_os_str() == "-" {
        let mut bytes = Vec::new();
        return match std::io::stdin().lock().read_to_end(&mut bytes) {
            Ok(_) => Ok(("<stdin>".to_string(), bytes)),
            Err(error) => Err(format!(
                "tpi: cannot read standard input: {}",
                io_reason(&error)
            )),
        };
    }
    let name = path.display().to_string();
    match std::fs::read(path) {
        Ok(bytes) => Ok((name, bytes)),
        Err(error) => Err(format!("tpi: cannot read {name}: {}", io_reason(&error))),
    }
}

fn io_reason(error: &std::io::Error) -> String {
    match error.kind() {
        std::io::ErrorKind::NotFound => "no such file".to_string(),
        std::io::ErrorKind::PermissionDenied => "permission denied".to_string(),
        std::io::ErrorKind::IsADirectory => "it is a directory".to_string(),
        _ => {
            let text = error.to_string();
            // "Invalid data (os error 22)" -> "invalid data"
            let text = text.split(" (os error").next().unwrap_or(&text).to_string();
            let mut chars = text.chars();
            match chars.next() {
                Some(first) => first.to_lowercase().chain(chars).collect(),
                None => text,
            }
        }
    }
}

/// Writes to stdout, ignoring a closed pipe (`tpi dump ast f | head`).
fn out(text: &str) {
    let mut stdout = std::io::stdout().lock();
    let _ = stdout.write_all(text.as_bytes());
    let _ = stdout.flush();
}

fn render_all<'d>(file: &SourceFile, diagnostics: impl IntoIterator<Item = &'d Diagnostic>) {
    let color = render::use_color(std::io::stderr().is_terminal());
    let mut stderr = std::io::stderr().lock();
    for diagnostic in diagnostics {
        let _ = stderr.write_all(render::render(diagnostic, file, color).as_bytes());
    }
}

/// The outcome of checking one file: what goes to stdout and stderr, in order.
struct Checked {
    stdout: String,
    stderr: String,
    status: u8,
}

fn check(args: &CheckArgs) -> u8 {
    let several = args.files.len() > 1;
    let out_color = render::use_color(std::io::stdout().is_terminal());
    let err_color = render::use_color(std::io::stderr().is_terminal());
    // Files are independent: check them on every core, print in order;
    // the threads left over go to each file (one big file gets them all).
    let threads = args
        .jobs
        .map_or_else(tpi::available_threads, usize::from)
        .max(1);
    let workers = threads.min(args.files.len()).max(1);
    let options = Options {
        keep_input_mutations: !args.no_keep_input_mutations,
        threads: threads / workers,
    };
    let next = std::sync::atomic::AtomicUsize::new(0);
    let results: Vec<std::sync::Mutex<Option<Checked>>> = args
        .files
        .iter()
        .map(|_| std::sync::Mutex::new(None))
        .collect();
    std::thread::scope(|scope| {
        let work = || loop {
            let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let Some(path) = args.files.get(i) else { break };
            let checked = check_one(path, args, &options, several, out_color, err_color);
            if let Ok(mut slot) = results[i].lock() {
                *slot = Some(checked);
            }
        };
        // Workers get the big stack the parser and interpreter are built
        // for; this thread (which has it too) is one of them.
        for _ in 1..workers {
            let spawned = std::thread::Builder::new()
                .name("tpi-check".to_string())
                .stack_size(WORKER_STACK_BYTES)
                .spawn_scoped(scope, work);
            if spawned.is_err() {
                break;
            }
        }
        work();
    });
    let mut status = EXIT_OK;
    for slot in results {
        let Some(checked) = slot.into_inner().ok().flatten() else {
            eprintln!("tpi: internal error while checking a file (a bug in tpi: please report it)");
            status = status.max(101);
            continue;
        };
        out(&checked.stdout);
        let mut stderr = std::io::stderr().lock();
        let _ = stderr.write_all(checked.stderr.as_bytes());
        status = status.max(checked.status);
    }
    status
}

fn check_one(
    path: &PathBuf,
    args: &CheckArgs,
    options: &Options,
    several: bool,
    out_color: bool,
    err_color: bool,
) -> Checked {
    let mut checked = Checked {
        stdout: String::new(),
        stderr: String::new(),
        status: EXIT_OK,
    };
    let started = Instant::now();
    let (name, bytes) = match read(path) {
        Ok(read) => read,
        Err(message) => {
            checked.stderr = message + "\n";
            checked.status = EXIT_USAGE;
            return checked;
        }
    };
    let read_time = started.elapsed();
    let (file, outcome, timings) = match parser::decode_source(&name, bytes) {
        (file, None) => {
            let (outcome, timings) = tpi::check_with_timings(&file, options);
            (file, outcome, Some(timings))
        }
        (file, Some(diagnostic)) => {
            let outcome = Outcome {
                module: None,
                functions: Vec::new(),
                diagnostics: vec![diagnostic],
            };
            (file, outcome, None)
        }
    };
    if outcome.has_errors() {
        checked.status = EXIT_PROGRAM_ERROR;
    }
    let report_started = Instant::now();
    match args.format {
        Format::Text => {
            checked.stdout =
                tpi::report::text::file_report_styled(&file, &outcome, args.verbose, out_color);
            let function_diagnostics = outcome.functions.iter().flat_map(|f| &f.diagnostics);
            for diagnostic in outcome.diagnostics.iter().chain(function_diagnostics) {
                checked
                    .stderr
                    .push_str(&render::render(diagnostic, &file, err_color));
            }
        }
        Format::Json => {
            let document = tpi::report::json::file_document(&file, &outcome);
            let text = if several {
                serde_json::to_string(&document)
            } else {
                serde_json::to_string_pretty(&document)
            };
            match text {
                Ok(text) => checked.stdout = text + "\n",
                Err(error) => {
                    checked.stderr =
                        format!("tpi: cannot write the JSON of {}: {error}\n", file.name);
                    checked.status = EXIT_PROGRAM_ERROR;
                }
            }
        }
    }
    if args.timings {
        let ms = |d: std::time::Duration| d.as_secs_f64() * 1e3;
        let t = timings.unwrap_or_default();
        let mb =
            |b: Option<u64>| b.map_or("?".to_string(), |b| format!("{:.0} MB", b as f64 / 1e6));
        checked.stderr.push_str(&format!(
            "tpi: {}: read {:.2} ms, parse {:.2} ms, lower {:.2} ms, analysis {:.2} ms, report {:.2} ms, total {:.2} ms; peak memory {} after parsing, {} after analysis (whole process)\n",
            file.name,
            ms(read_time),
            ms(t.parse),
            ms(t.lower),
            ms(t.analysis),
            ms(report_started.elapsed()),
            ms(started.elapsed()),
            mb(t.peak_after_parse),
            mb(t.peak_after_analysis),
        ));
    }
    // The process exits right after printing: tearing down the tree and the
    // analysis state would cost as much as building them.
    std::mem::forget(outcome);
    std::mem::forget(file);
    checked
}

fn test(args: TestArgs) -> u8 {
    let config = tpi::testing::Config {
        paths: args.paths,
        bless: args.bless,
        force: args.force,
        format: args.format.map(|format| match format {
            Format::Json => tpi::testing::Kind::Json,
            Format::Text => tpi::testing::Kind::Text,
        }),
        verbose: args.verbose,
        no_keep_input_mutations: args.no_keep_input_mutations,
        jobs: args.jobs.map(usize::from),
    };
    let (stdout, stderr) = (std::io::stdout(), std::io::stderr());
    let (out_tty, err_tty) = (stdout.is_terminal(), stderr.is_terminal());
    tpi::testing::run_cli(
        &config,
        &mut stdout.lock(),
        &mut stderr.lock(),
        out_tty,
        err_tty,
    )
}

/// `tpi explain FILE FUNCTION [TARGET]` (report/explain.rs).
#[derive(Args, Debug)]
struct ExplainArgs {
    /// Analyse with keep_input_mutations off (torch.compile keeps them on).
    #[arg(long)]
    no_keep_input_mutations: bool,
    /// The program; `-` reads standard input.
    #[arg(value_name = "FILE")]
    file: PathBuf,
    /// The entry function.
    #[arg(value_name = "FUNCTION")]
    function: String,
    /// An input name or an output index (`0`); without it, the graph mode.
    #[arg(value_name = "INPUT|OUTPUT")]
    target: Option<String>,
}

fn explain(args: &ExplainArgs) -> u8 {
    let file = match load(&args.file) {
        Ok(file) => file,
        Err(status) => return status,
    };
    let options = Options {
        keep_input_mutations: !args.no_keep_input_mutations,
        ..Options::default()
    };
    let outcome = tpi::check(&file, &options);
    let color = render::use_color(std::io::stdout().is_terminal());
    match tpi::report::explain::explain(
        &file,
        &outcome,
        &args.function,
        args.target.as_deref(),
        color,
    ) {
        Ok(explanation) => {
            out(&explanation.text);
            if explanation.rejected {
                EXIT_PROGRAM_ERROR
            } else {
                EXIT_OK
            }
        }
        Err(message) => {
            eprintln!("tpi: {message}");
            EXIT_USAGE
        }
    }
}

/// Reads and decodes a file for the dumps; on failure, says why and gives
/// the exit status.
fn load(path: &PathBuf) -> Result<SourceFile, u8> {
    let (name, bytes) = read(path).map_err(|message| {
        eprintln!("{message}");
        EXIT_USAGE
    })?;
    match parser::decode_source(&name, bytes) {
        (file, None) => Ok(file),
        (file, Some(diagnostic)) => {
            render_all(&file, [&diagnostic]);
            Err(EXIT_PROGRAM_ERROR)
        }
    }
}

fn dump_tokens(path: &PathBuf) -> u8 {
    let file = match load(path) {
        Ok(file) => file,
        Err(status) => return status,
    };
    let (tokens, error) = parser::tokens(&file.text);
    out(&dump::dump_tokens(&file, &tokens));
    match error {
        Some(diagnostic) => {
            render_all(&file, [&diagnostic]);
            EXIT_PROGRAM_ERROR
        }
        None => EXIT_OK,
    }
}

fn dump_ast(path: &PathBuf) -> u8 {
    let file = match load(path) {
        Ok(file) => file,
        Err(status) => return status,
    };
    match parser::parse_module(&file.text) {
        Ok(module) => {
            out(&dump::dump_module(&file, &module));
            EXIT_OK
        }
        Err(diagnostics) => {
            render_all(&file, &diagnostics);
            EXIT_PROGRAM_ERROR
        }
    }
}
