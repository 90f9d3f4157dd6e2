//! Lexing and parsing throughput on a large generated `.tp` file of
//! realistic lines (`cargo bench --bench frontend`). Prints MB/s for the
//! layout lexer alone and for lexing + parsing (`parse_module`), best of
//! several runs. The size is `TPI_BENCH_STATEMENTS` statements (default
//! 1,000,000).

use std::hint::black_box;
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

/// The shortest of `runs` durations measured by `f`.
fn best_of(runs: usize, mut f: impl FnMut() -> Duration) -> Duration {
    (0..runs).map(|_| f()).min().unwrap_or_default()
}

fn main() {
    let statements = std::env::var("TPI_BENCH_STATEMENTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1_000_000);
    let text = generate(statements);
    let mb = text.len() as f64 / 1e6;
    println!(
        "input: {statements} statements, {} lines, {mb:.1} MB",
        text.lines().count()
    );

    let lex = best_of(3, || {
        let started = Instant::now();
        let mut tokens = 0usize;
        for token in Layout::new(black_box(&text)) {
            match token {
                Ok(_) => tokens += 1,
                Err(error) => panic!("generated input does not lex: {error:?}"),
            }
        }
        black_box(tokens);
        started.elapsed()
    });
    println!(
        "lex:         {:>8.1} ms  {:>7.1} MB/s",
        lex.as_secs_f64() * 1e3,
        mb / lex.as_secs_f64()
    );

    // The tree is dropped outside the timed region (dropping is the
    // allocator's work, not the parser's); its cost is shown apart.
    let mut drop_time = Duration::MAX;
    let parse = best_of(3, || {
        let started = Instant::now();
        let module = match parser::parse_module(black_box(&text)) {
            Ok(module) => module,
            Err(diagnostics) => panic!("generated input does not parse: {diagnostics:#?}"),
        };
        let parsed = started.elapsed();
        let started = Instant::now();
        drop(black_box(module));
        drop_time = drop_time.min(started.elapsed());
        parsed
    });
    println!(
        "lex + parse: {:>8.1} ms  {:>7.1} MB/s",
        parse.as_secs_f64() * 1e3,
        mb / parse.as_secs_f64()
    );
    println!(
        "(dropping the tree: {:.1} ms)",
        drop_time.as_secs_f64() * 1e3
    );
}
