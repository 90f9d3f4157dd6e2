//! Lexing and parsing throughput on a large generated `.tp` file of
//! realistic lines (`cargo bench --bench frontend`). Prints MB/s for the
//! layout lexer alone and for lexing + parsing (`parse_syntax_on`), best
//! of several runs; then lexing + parsing on every core, as `tpi check`
//! does for one big file; then lowering (numbering each function's names,
//! `syntax::resolve`, the rest of `parse_module_on`). The size is
//! `TPI_BENCH_STATEMENTS` statements (default 1,000,000).
//!
//! One-thread times are the thread's CPU time where Linux tells it
//! (`/proc/thread-self/schedstat`), so that other work on a shared machine
//! does not count; else wall-clock time. Times on every core are
//! wall-clock.

use std::hint::black_box;

/// The allocator the CLI uses (see src/main.rs).
#[global_allocator]
static ALLOCATOR: tpi::memory::Allocator = tpi::memory::Allocator;

use std::time::{Duration, Instant};
use tpi::syntax::{lexer::Layout, parser};

/// Realistic statement shapes, cycled through with varying names.
const LINES: &[&str] = &[
    "rows = x.view(2, 16)  # a view",
    "w.mul_(2)",
    "y = (x * w).sum(dim=1, keepdim=True)",
    "a, b = x.split(4)",
    "first, *rest = x.split(2)",
    "z = torch.cat([a, b], dim=0)",
    "x[0] = x[1:3].mean()",
    "k = x[:, None, ..., ::2]",
    "out = F.relu(x @ w.t() + 1.5) if n > 2 else -x ** 2",
    "assert x.dim() == 2 and x.shape[0] > 2, \"bad shape\"",
    "x += 1",
    "v = [t * 2 for t in x.unbind(0) if t is not None]",
    "s: Tensor(4, 8) = torch.ones(4, 8, requires_grad=True)",
];

fn generate(statements: usize) -> String {
    let mut text = String::from("import torch\nimport torch.nn.functional as F\n\n");
    let mut written = 0;
    let mut function = 0;
    while written < statements {
        text.push_str(&format!(
            "def f{function}(x: Tensor(4, 8, requires_grad=True), w: Tensor(8), n: int = 3):\n"
        ));
        for i in 0..16 {
            let line = LINES[(function + i) % LINES.len()];
            text.push_str("    ");
            text.push_str(line);
            text.push('\n');
        }
        text.push_str("    with torch.no_grad():\n        x.add_(1)\n");
        text.push_str("    for i in range(4):\n        x[i].mul_(i + 1)\n");
        text.push_str("    return rows, x.t(), y\n\n");
        written += 22;
        function += 1;
    }
    text
}

/// A clock: this thread's CPU time when available, else wall-clock time.
struct Clock {
    cpu: Option<u64>,
    wall: Instant,
}

fn thread_cpu_nanos() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    text.split_whitespace().next()?.parse().ok()
}

impl Clock {
    fn start() -> Clock {
        Clock {
            cpu: thread_cpu_nanos(),
            wall: Instant::now(),
        }
    }

    fn elapsed(&self) -> Duration {
        match (self.cpu, thread_cpu_nanos()) {
            (Some(start), Some(now)) => Duration::from_nanos(now.saturating_sub(start)),
            _ => self.wall.elapsed(),
        }
    }
}

/// The shortest of `runs` durations measured by `f`.
fn best_of(runs: usize, mut f: impl FnMut() -> Duration) -> Duration {
    // `TPI_BENCH_RUNS=1` for instruction counting under a profiler.
    let runs = std::env::var("TPI_BENCH_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(runs);
    (0..runs).map(|_| f()).min().unwrap_or_default()
}

/// The conformance corpus (`tests/conformance/*.tp`, real programs with
/// their comments), repeated to about `bytes`.
fn corpus(bytes: usize) -> String {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/conformance");
    let mut paths: Vec<_> = std::fs::read_dir(&dir)
        .map(|entries| {
            entries
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|x| x == "tp"))
                .collect()
        })
        .unwrap_or_default();
    paths.sort();
    let one: String = paths
        .iter()
        .filter_map(|p| std::fs::read_to_string(p).ok())
        .map(|text| text + "\n")
        .collect();
    if one.is_empty() {
        return String::new();
    }
    one.repeat(bytes / one.len() + 1)
}

fn measure(name: &str, text: &str) {
    let mb = text.len() as f64 / 1e6;
    println!("{name}: {} lines, {mb:.1} MB", text.lines().count());

    let lex = best_of(3, || {
        let started = Clock::start();
        let mut tokens = 0usize;
        for token in Layout::new(black_box(text)) {
            match token {
                Ok(_) => tokens += 1,
                Err(error) => panic!("{name} does not lex: {error:?}"),
            }
        }
        black_box(tokens);
        started.elapsed()
    });
    println!(
        "  lex:         {:>8.1} ms  {:>7.1} MB/s",
        lex.as_secs_f64() * 1e3,
        mb / lex.as_secs_f64()
    );

    // The tree is dropped outside the timed region (dropping is the
    // allocator's work, not the parser's); its cost is shown apart.
    let mut drop_time = Duration::MAX;
    let parse = best_of(3, || {
        let started = Clock::start();
        let module = match parser::parse_syntax_on(black_box(text), 1) {
            Ok(module) => module,
            Err(diagnostics) => panic!("{name} does not parse: {diagnostics:#?}"),
        };
        let parsed = started.elapsed();
        let started = Clock::start();
        if std::env::var_os("TPI_BENCH_LEAK").is_some() {
            // For profiling the parser alone.
            std::mem::forget(module);
        } else {
            drop(black_box(module));
        }
        drop_time = drop_time.min(started.elapsed());
        parsed
    });
    println!(
        "  lex + parse: {:>8.1} ms  {:>7.1} MB/s   (one thread; dropping the tree: {:.1} ms)",
        parse.as_secs_f64() * 1e3,
        mb / parse.as_secs_f64(),
        drop_time.as_secs_f64() * 1e3
    );

    // What `tpi check` does with one big file: parse it in parts on every
    // core. Wall-clock time, since several threads work.
    let threads = tpi::available_threads();
    if threads > 1 {
        let parse = best_of(3, || {
            let started = Instant::now();
            let module = match parser::parse_syntax_on(black_box(text), threads) {
                Ok(module) => module,
                Err(diagnostics) => panic!("{name} does not parse: {diagnostics:#?}"),
            };
            let parsed = started.elapsed();
            drop(black_box(module));
            parsed
        });
        println!(
            "  lex + parse: {:>8.1} ms  {:>7.1} MB/s   ({threads} threads, wall-clock time)",
            parse.as_secs_f64() * 1e3,
            mb / parse.as_secs_f64(),
        );
    }

    // Lowering: numbering each function's names (`syntax::resolve`), the
    // step after the parse in `parse_module_on`. Numbering a tree again
    // gives the same numbers, so one tree serves every round.
    let mut module = match parser::parse_syntax_on(text, 1) {
        Ok(module) => module,
        Err(diagnostics) => panic!("{name} does not parse: {diagnostics:#?}"),
    };
    let lower = best_of(3, || {
        let started = Clock::start();
        tpi::syntax::resolve::items(black_box(&mut module.items));
        started.elapsed()
    });
    println!(
        "  lower:       {:>8.1} ms  {:>7.1} MB/s   (numbering names, one thread)",
        lower.as_secs_f64() * 1e3,
        mb / lower.as_secs_f64(),
    );
}

fn main() {
    // The allocator as the CLI sets it up.
    tpi::memory::configure_allocator();
    let statements = std::env::var("TPI_BENCH_STATEMENTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1_000_000);
    let generated = generate(statements);
    measure(&format!("generated ({statements} statements)"), &generated);
    let corpus = match std::env::var_os("TPI_BENCH_CORPUS") {
        Some(v) if v == "0" => String::new(),
        _ => corpus(generated.len()),
    };
    if !corpus.is_empty() {
        measure("conformance corpus, repeated", &corpus);
    }
}
