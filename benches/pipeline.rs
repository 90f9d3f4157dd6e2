//! The whole pipeline (parse + analysis) on generated straight-line programs
//! of 1k / 10k / 100k / 1M statements (`cargo bench --bench pipeline`;
//! `TPI_BENCH_MAX` caps the largest size). The generator is the one issue 8
//! describes: views, reshapes, functional ops and in-place mutations of an
//! input over a sliding window of live values, in one entry function.
//! Prints the time of each stage, µs per statement, and the program's size.
//! `TPI_BENCH_WRITE=DIR` also writes each program to `DIR/bench_N.tp`, for
//! whole-process runs: `tpi check --timings DIR/bench_20000.tp`.

use std::time::Instant;
use tpi::{Options, SourceFile};

#[global_allocator]
static ALLOCATOR: tpi::memory::Allocator = tpi::memory::Allocator;

/// A small deterministic generator (xorshift), so runs are comparable.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

/// One entry function of `statements` statements over [8, 8] tensors.
pub fn generate(statements: usize) -> String {
    let mut rng = Rng(0x2545_f491_4f6c_dd1d);
    let mut text = String::from(
        "import torch\n\ndef big(x: Tensor(8, 8, requires_grad=True), w: Tensor(8, 8)):\n",
    );
    let mut live: Vec<String> = vec!["x".into()];
    for i in 0..statements {
        if rng.next().is_multiple_of(10) {
            text.push_str(&format!("    w[{}].add_(1)\n", i % 8));
            continue;
        }
        let window = &live[live.len().saturating_sub(8)..];
        let a = &window[(rng.next() % window.len() as u64) as usize];
        let expr = match rng.next() % 6 {
            0 => format!("{a} * 2"),
            1 => format!("{a}.t()"),
            2 => format!("({a} + w).relu()"),
            3 => format!("{a}.reshape(8, 8)"),
            4 => format!("{a}.transpose(0, 1).contiguous()"),
            _ => format!("{a} @ w"),
        };
        let name = format!("v{i}");
        text.push_str(&format!("    {name} = {expr}\n"));
        live.push(name);
    }
    let n = live.len();
    text.push_str(&format!(
        "    return {}, {}\n",
        live[n - 1],
        live[n.saturating_sub(2)]
    ));
    text
}

fn main() {
    // The allocator as the CLI sets it up.
    tpi::memory::configure_allocator();
    let max: usize = std::env::var("TPI_BENCH_MAX")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1_000_000);
    println!(
        "{:>9} {:>8} {:>10} {:>10} {:>10} {:>10} {:>9}",
        "stmts", "MB", "parse ms", "lower ms", "check ms", "total ms", "µs/stmt"
    );
    for n in [1_000, 10_000, 20_000, 100_000, 1_000_000] {
        if n > max {
            break;
        }
        let text = generate(n);
        if let Some(dir) = std::env::var_os("TPI_BENCH_WRITE") {
            // The same programs as files, for whole-process runs of
            // `tpi check --timings` (issue 8 counts the whole process).
            let path = std::path::Path::new(&dir).join(format!("bench_{n}.tp"));
            std::fs::write(&path, &text)
                .unwrap_or_else(|e| panic!("cannot write {}: {e}", path.display()));
        }
        let file = SourceFile::new("bench.tp", text);
        let mut best = (f64::MAX, f64::MAX, f64::MAX, f64::MAX);
        let runs = if n >= 1_000_000 { 1 } else { 3 };
        for _ in 0..runs {
            let started = Instant::now();
            let (outcome, timings) = tpi::check_with_timings(&file, &Options::default());
            let total = started.elapsed().as_secs_f64() * 1e3;
            assert!(
                !outcome.has_errors(),
                "the generated program must be accepted"
            );
            std::mem::forget(outcome);
            let p = timings.parse.as_secs_f64() * 1e3;
            let l = timings.lower.as_secs_f64() * 1e3;
            let a = timings.analysis.as_secs_f64() * 1e3;
            if total < best.3 {
                best = (p, l, a, total);
            }
        }
        println!(
            "{:>9} {:>8.1} {:>10.1} {:>10.1} {:>10.1} {:>10.1} {:>9.2}",
            n,
            file.text.len() as f64 / 1e6,
            best.0,
            best.1,
            best.2,
            best.3,
            best.3 * 1e3 / n as f64
        );
    }
}
