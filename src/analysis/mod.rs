//! The abstract interpreter and what it reports per entry function.
//!
//! Each entry is run twice over the domain: once as PyTorch's metadata analysis
//! sees it (functionalization under autograd, inputs wrapped), giving
//! `ViewAndMutationMeta` or the analysis's error; and once as plain eager
//! PyTorch on real tensors, giving the eager forward error and, from the
//! autograd graph with its saved tensors, the error a backward would raise.

// Errors end a run, so they are cold; returning the full Diagnostic by value
// keeps the interpreter's code plain.
#![allow(clippy::result_large_err)]

pub mod apply;
pub mod arena;
pub mod builtins;
pub mod domain;
pub mod eager;
pub mod interp;
pub mod meta;
pub mod state;
pub mod value;
pub mod values;

use crate::report::Diagnostic;
use crate::sym::SymInt;
use crate::syntax::ast::{self, ExprKind, FunctionDef, Slot};
use crate::syntax::Span;
use crate::Options;
use domain::{DType, MemoryFormat};
use interp::{op_error, Env, Flow, InputSpec, Interp, R};
use meta::{FlatOutput, Param, ViewAndMutationMeta};
use state::Mode;
use std::sync::atomic::{AtomicUsize, Ordering};
use value::Value;

/// The functions of a file by name (helpers are inlined from here).
pub type Functions<'a> = rustc_hash::FxHashMap<ast::Name, &'a FunctionDef>;

/// What eager PyTorch would raise (tpi's prediction).
#[derive(Debug, Clone, Default)]
pub struct EagerPrediction {
    pub forward_error: Option<Diagnostic>,
    pub backward_error: Option<Diagnostic>,
}

impl EagerPrediction {
    /// The forward runs; backward raises `d`.
    pub fn backward(d: Diagnostic) -> EagerPrediction {
        EagerPrediction {
            forward_error: None,
            backward_error: Some(d),
        }
    }
}

/// The analysis of one entry function.
#[derive(Debug, Clone)]
pub struct FunctionResult {
    pub name: String,
    pub span: Span,
    /// The metadata, when the analysis accepted the function.
    pub meta: Option<ViewAndMutationMeta>,
    pub eager: EagerPrediction,
    /// The analysis error (if any) first, then warnings (eager hazards).
    pub diagnostics: Vec<Diagnostic>,
    /// Guards the analysis assumed about symbolic sizes, with where.
    pub assumptions: Vec<(Span, String)>,
}

impl FunctionResult {
    /// The error that made the analysis reject the function, if any.
    pub fn error(&self) -> Option<&Diagnostic> {
        self.diagnostics.iter().find(|d| d.is_error())
    }
}

/// Is `def` an entry: every parameter annotated with `Tensor(...)` or defaulted?
pub fn is_entry(def: &FunctionDef) -> bool {
    def.params
        .iter()
        .all(|p| p.default.is_some() || p.annotation.as_ref().is_some_and(is_tensor_annotation))
}

/// Is `e` a `Tensor(...)` annotation (an input's)?
pub fn is_tensor_annotation(e: &ast::Expr) -> bool {
    matches!(&e.kind, ExprKind::Call(call) if matches!(&call.func.kind, ExprKind::Name(n, _) if n == "Tensor"))
}

pub fn function_table(module: &ast::Module) -> Functions<'_> {
    let mut functions = Functions::default();
    for item in &module.items {
        if let ast::Item::Def(d) = item {
            functions.insert(d.name.name.clone(), d);
        }
    }
    functions
}

pub fn analyse_module(
    module: &ast::Module,
    options: &Options,
) -> (Vec<FunctionResult>, Vec<Diagnostic>) {
    let functions = function_table(module);
    let mut results = Vec::new();
    for item in &module.items {
        if let ast::Item::Def(d) = item {
            if is_entry(d) {
                results.push(analyse_function(&functions, d, options));
            }
        }
    }
    (results, Vec::new())
}

/// One run of a function body: the machine after it, and what it returned.
pub struct Run<'a> {
    pub interp: Interp<'a>,
    pub params: Vec<Param>,
    pub outputs: Result<Vec<FlatOutput>, Diagnostic>,
    /// The function's local names when the run ended (for the REPL's `:info`).
    pub env: Env<'a>,
    /// The value the body returned (before flattening).
    pub returned: Option<Value>,
}

/// A body using this many names makes thousands of tensors: its run's
/// arenas start with whole chunks.
const BIG_RUN_NAMES: usize = 1024;

pub fn run_function<'a>(functions: &'a Functions<'a>, def: &'a FunctionDef, mode: Mode) -> Run<'a> {
    run_paced(functions, def, mode, None)
}

/// `run_function`, reporting its progress to a `Pace` or waiting for it
/// before each top-level statement of the body.
fn run_paced<'a>(
    functions: &'a Functions<'a>,
    def: &'a FunctionDef,
    mode: Mode,
    pace: Option<Paced>,
) -> Run<'a> {
    let _finish = match pace {
        Some(Paced::Leading(pace)) => Some(pace.finisher()),
        _ => None,
    };
    let mut it = Interp::new(functions, mode);
    let mut params = Vec::new();
    let mut env = Env::new(&def.locals, &def.bound);
    if def.locals.len() >= BIG_RUN_NAMES {
        it.m.reserve_big();
    }
    let result = (|| -> R<Value> {
        let env = &mut env;
        // The oracle's inputs: the named symbols take their hints in order
        // of first appearance (all annotations are read first, up to one
        // that fails); then, when there are any, every input whose sizes are
        // all ints gets dynamic sizes too (`DuckSizes`).
        let mut specs: Vec<Option<R<InputSpec>>> = Vec::with_capacity(def.params.len());
        for p in &def.params {
            let spec = p
                .annotation
                .as_ref()
                .filter(|a| is_tensor_annotation(a))
                .map(|ann| input_spec(&mut it, ann));
            let failed = matches!(spec, Some(Err(_)));
            specs.push(spec);
            if failed {
                break;
            }
        }
        let eager_hints = if mode == Mode::Eager {
            oracle_eager_hints(&specs)
        } else {
            Vec::new()
        };
        let mut duck = DuckSizes::new(&it.m.sizes.env);
        for (i, p) in def.params.iter().enumerate() {
            match p.annotation.as_ref().filter(|a| is_tensor_annotation(a)) {
                Some(ann) => {
                    let read = specs.get_mut(i).and_then(Option::take);
                    let mut spec = match read {
                        Some(spec) => spec?,
                        None => input_spec(&mut it, ann)?,
                    };
                    if mode == Mode::Eager {
                        // Eager runs real tensors of the hint sizes (the
                        // oracle's, `oracle_eager_hints`); literal sizes stay.
                        let env = &it.m.sizes.env;
                        let by_name = |name: &str| {
                            eager_hints
                                .iter()
                                .find(|(n, _)| n == name)
                                .map(|&(_, h)| h)
                                .or_else(|| env.symbol_hint(name))
                        };
                        let hint =
                            |s: &SymInt| s.eval(&by_name).map_or_else(|| s.clone(), SymInt::int);
                        spec.sizes = spec.sizes.iter().map(hint).collect();
                        if let Some(strides) = &mut spec.stride {
                            *strides = strides.iter().map(hint).collect();
                        }
                    } else if let Some(duck) = duck.as_mut() {
                        duck.apply(&mut it.m.sizes, &mut spec);
                    }
                    let id = it.make_input(i, &spec, p.span)?;
                    let t = it.m.tensors[id].clone();
                    params.push(Param::Tensor {
                        name: p.name.name.to_string(),
                        id,
                        sizes: t.sizes().clone(),
                        strides: t.strides().clone(),
                        offset: t.offset,
                        storage: t.storage,
                        is_leaf: !spec.requires_grad || spec.leaf,
                        requires_grad: spec.requires_grad,
                        span: p.span,
                    });
                    env.set(Slot::param(i), &p.name.name, Value::Tensor(id));
                }
                None => {
                    let Some(d) = &p.default else {
                        return Err(Diagnostic::error(
                            "syntax",
                            "this parameter needs a Tensor(...) annotation or a default",
                            p.span,
                        ));
                    };
                    let mut empty = Env::default();
                    let v = it.eval(&mut empty, d)?;
                    let kind = match &v {
                        Value::Int(_) => "int",
                        Value::Float(_) => "float",
                        Value::Bool(_) => "bool",
                        Value::None => "NoneType",
                        Value::Str(_) => "str",
                        _ => "object",
                    };
                    params.push(Param::Value {
                        name: p.name.name.to_string(),
                        kind,
                        span: p.span,
                    });
                    env.set(Slot::param(i), &p.name.name, v);
                }
            }
        }
        let mut done = 0;
        for stmt in &def.body {
            let block = std::slice::from_ref(stmt);
            if pace.is_some() {
                done += count_statements(block);
            }
            if let Some(Paced::Following(pace)) = pace {
                pace.wait_for(done);
            }
            if let Flow::Return(v) = it.exec_block(env, block)? {
                return Ok(v);
            }
            if let Some(Paced::Leading(pace)) = pace {
                pace.advance(done);
            }
        }
        Ok(Value::None)
    })();
    let returned = result.as_ref().ok().cloned();
    let outputs = result.map(|v| {
        let mut flat = Vec::new();
        flatten(&v, &mut flat);
        flat
    });
    Run {
        interp: it,
        params,
        outputs,
        env,
        returned,
    }
}

/// The sizes the oracle's eager run gives the named symbols: it lists each
/// input's symbols that no earlier input named, so a symbol repeated
/// within one input takes two places (`Tensor("n", "n", "m")` lists n, n,
/// m), and a symbol's size is `SYMBOL_HINTS` at its first place. The
/// analysis numbers the distinct symbols (n 5, m 7); the eager run then
/// has m 11.
fn oracle_eager_hints(specs: &[Option<R<InputSpec>>]) -> Vec<(String, i64)> {
    let mut places: Vec<&str> = Vec::new();
    for spec in specs.iter().flatten() {
        let Ok(spec) = spec else { break };
        let before = places.len();
        for name in spec.sizes.iter().filter_map(SymInt::as_symbol) {
            if !places[..before].contains(&name) {
                places.push(name);
            }
        }
    }
    let mut hints: Vec<(String, i64)> = Vec::new();
    for (place, name) in places.iter().enumerate() {
        if hints.iter().all(|(n, _)| n != name) {
            if let Some(&h) = crate::sym::SYMBOL_HINTS.get(place) {
                hints.push((name.to_string(), h));
            }
        }
    }
    hints
}

fn flatten(v: &Value, out: &mut Vec<FlatOutput>) {
    match v {
        Value::Tuple(items) => items.iter().for_each(|i| flatten(i, out)),
        Value::List(items) => items.borrow().iter().for_each(|i| flatten(i, out)),
        Value::Tensor(t) => out.push(FlatOutput::Tensor(*t)),
        _ => out.push(FlatOutput::Other),
    }
}

/// How the oracle's fake inputs get their sizes when a function has named
/// symbols: `FakeTensorMode.from_tensor` with a `ShapeEnv` makes every dim
/// of an input declared with ints only dynamic (sizes 0 and 1 excepted),
/// and duck-sizes them: a dim whose value was seen before (a named
/// symbol's hint, or an earlier dim) is that same symbol. New symbols are
/// numbered in creation order (`s1`, `s2`, ...) unless a named symbol has
/// their value. Inputs with a named size keep their int dims static.
struct DuckSizes {
    /// The value each symbol created so far stands for.
    seen: Vec<(i64, SymInt)>,
    /// The named symbols and their hints.
    named: Vec<(i64, SymInt)>,
    /// Symbols the oracle's ShapeEnv has created so far.
    created: usize,
}

impl DuckSizes {
    /// `None` when the function has no named symbols (static inputs).
    fn new(env: &crate::sym::ShapeEnv) -> Option<DuckSizes> {
        let named: Vec<(i64, SymInt)> = env
            .symbol_names()
            .into_iter()
            .filter_map(|n| Some((env.symbol_hint(&n)?, SymInt::symbol(&n))))
            .collect();
        (!named.is_empty()).then(|| DuckSizes {
            seen: Vec::new(),
            named,
            created: 0,
        })
    }

    fn apply(&mut self, sizes: &mut crate::ops::shape::Sizes, spec: &mut InputSpec) {
        let env = &sizes.env;
        if spec.sizes.iter().any(SymInt::is_symbolic) {
            // Named dims create (or meet) their symbols; int dims stay.
            for s in &spec.sizes {
                if let Some(hint) = s.is_symbolic().then(|| env.hint(s)).flatten() {
                    if !self.seen.iter().any(|(v, _)| *v == hint) {
                        self.seen.push((hint, s.clone()));
                        self.created += 1;
                    }
                }
            }
            return;
        }
        let ints: Vec<i64> = spec.sizes.iter().filter_map(SymInt::as_int).collect();
        let mut dims = crate::sym::Dims::new();
        for &v in &ints {
            if v < 2 {
                dims.push(SymInt::int(v));
                continue;
            }
            if let Some((_, s)) = self.seen.iter().find(|(w, _)| *w == v) {
                dims.push(s.clone());
                continue;
            }
            let sym = match self.named.iter().find(|(w, _)| *w == v) {
                Some((_, s)) => s.clone(),
                None => sizes
                    .env
                    .declare_with_hint(&format!("s{}", self.created), v),
            };
            self.seen.push((v, sym.clone()));
            self.created += 1;
            dims.push(sym);
        }
        if let Some(strides) = spec.stride.take() {
            spec.stride = Some(symbolic_strides(sizes, &ints, &dims, &strides));
        }
        spec.sizes = dims;
    }
}

/// The strides `ShapeEnv._compute_symbolic_stride` gives a dense input:
/// in increasing order (the last dim first among equals), a stride of 0
/// or 1 stays (unless it is the next dim's size times stride), others are
/// the size times stride of the dim whose product it is.
fn symbolic_strides(
    env: &mut crate::ops::shape::Sizes,
    ints: &[i64],
    sizes: &[SymInt],
    strides: &[SymInt],
) -> crate::sym::Dims {
    let ex: Vec<i64> = strides.iter().map(|s| s.as_int().unwrap_or(0)).collect();
    let mut order: Vec<usize> = (0..ex.len()).collect();
    order.sort_by_key(|&i| (ex[i], std::cmp::Reverse(i)));
    let mut out: crate::sym::Dims = strides.iter().cloned().collect();
    let mut candidates: Vec<(i64, SymInt)> = Vec::new();
    for i in order {
        let val = ex[i];
        let contiguous_stride = i + 1 < ex.len() && val == ints[i + 1] * ex[i + 1];
        let stride = if (val == 0 || val == 1) && !contiguous_stride {
            SymInt::int(val)
        } else {
            match candidates.iter().find(|(v, _)| *v == val) {
                Some((_, s)) => s.clone(),
                None => SymInt::int(val),
            }
        };
        if let Ok(product) = env.mul(&sizes[i], &stride) {
            candidates.push((ints[i] * val, product));
        }
        out[i] = stride;
    }
    out
}

/// Evaluates a `Tensor(*sizes, dtype=, requires_grad=, leaf=, stride=, memory_format=)` annotation.
fn input_spec(it: &mut Interp, ann: &ast::Expr) -> R<InputSpec> {
    let ExprKind::Call(call) = &ann.kind else {
        return Err(Diagnostic::error(
            "syntax",
            "expected Tensor(...)",
            ann.span,
        ));
    };
    let (args, keywords) = (&call.args, &call.keywords);
    let mut env = Env::default();
    let mut sizes = crate::sym::Dims::new();
    let mut size_values = Vec::new();
    for a in args {
        size_values.push((it.eval(&mut env, a)?, a.span));
    }
    if size_values.len() == 1 {
        if let Value::Tuple(_) | Value::List(_) = &size_values[0].0 {
            let span = size_values[0].1;
            let items = size_values[0].0.sequence().unwrap_or_default();
            size_values = items.into_iter().map(|v| (v, span)).collect();
        }
    }
    for (v, span) in size_values {
        match v {
            Value::Int(i) => {
                if i.as_int().is_some_and(|x| x < 0) {
                    return Err(Diagnostic::error(
                        "invalid-shape",
                        format!("a size cannot be negative, got {i}"),
                        span,
                    ));
                }
                sizes.push(i);
            }
            Value::Str(s) => {
                if !s
                    .chars()
                    .next()
                    .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
                    || !s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                {
                    return Err(Diagnostic::error(
                        "syntax",
                        format!("`{s}` is not a valid symbol name"),
                        span,
                    )
                    .with_help("symbolic sizes are identifiers, like \"n\" or \"batch\""));
                }
                if !it.m.sizes.env.is_declared(&s) && it.m.sizes.env.num_symbols() >= 10 {
                    return Err(Diagnostic::error(
                        "limit",
                        "at most 10 distinct symbolic sizes are supported (as the oracle)",
                        span,
                    ));
                }
                sizes.push(it.m.sizes.env.declare(&s));
            }
            other => {
                return Err(Diagnostic::error(
                    "type",
                    format!(
                        "a size must be an int or a symbol name, got a `{}`",
                        other.type_name()
                    ),
                    span,
                ));
            }
        }
    }
    let mut spec = InputSpec {
        sizes,
        dtype: DType::F32,
        requires_grad: false,
        leaf: true,
        stride: None,
        memory_format: MemoryFormat::Contiguous,
    };
    for k in keywords {
        let v = it.eval(&mut env, &k.value)?;
        let bad = |what: &str| {
            Diagnostic::error(
                "type",
                format!("`{}` must be {what}", k.name.name),
                k.value.span,
            )
        };
        match (k.name.name.as_str(), v) {
            ("dtype", Value::Dtype(d)) => spec.dtype = d,
            ("dtype", _) => return Err(bad("a torch dtype")),
            ("requires_grad", Value::Bool(b)) => spec.requires_grad = b,
            ("requires_grad", _) => return Err(bad("True or False")),
            ("leaf", Value::Bool(b)) => spec.leaf = b,
            ("leaf", _) => return Err(bad("True or False")),
            ("stride", Value::None) => {}
            ("stride", v) => match apply::to_syms(&v) {
                Some(s) => spec.stride = Some(s),
                None => return Err(bad("a tuple of ints")),
            },
            ("memory_format", Value::None) => {}
            ("memory_format", Value::MemoryFormat(f)) => spec.memory_format = f,
            ("memory_format", _) => return Err(bad("a torch memory format")),
            (other, _) => {
                return Err(Diagnostic::error(
                    "arguments",
                    format!("Tensor() has no argument `{other}`"),
                    k.name.span,
                )
                .with_help(
                    "Tensor(*sizes, dtype=, requires_grad=, leaf=, stride=, memory_format=)",
                ))
            }
        }
    }
    if let Some(st) = &spec.stride {
        if st.len() != spec.sizes.len() {
            return Err(Diagnostic::error(
                "invalid-shape",
                format!(
                    "stride has {} entries for {} sizes",
                    st.len(),
                    spec.sizes.len()
                ),
                ann.span,
            ));
        }
        // A permutation of a contiguous layout: dense and non-overlapping.
        // With symbolic sizes the strides are of the sizes' hints, which
        // decide the layout; its strides are then symbolic.
        let hints: Option<Vec<i64>> = spec.sizes.iter().map(|s| it.m.sizes.env.hint(s)).collect();
        let dense_sizes = hints.as_ref().map_or_else(
            || spec.sizes.to_vec(),
            |h| h.iter().map(|&v| SymInt::int(v)).collect(),
        );
        if !crate::ops::shape::is_non_overlapping_and_dense(&dense_sizes, st, &mut it.m.sizes) {
            return Err(Diagnostic::error("invalid-shape", "stride= must describe a dense, non-overlapping layout (a permutation of a contiguous one)", ann.span));
        }
        if let (Some(h), true) = (&hints, spec.sizes.iter().any(SymInt::is_symbolic)) {
            let strides = symbolic_strides(&mut it.m.sizes, h, &spec.sizes, st);
            spec.stride = Some(strides);
        }
    }
    if spec.memory_format == MemoryFormat::ChannelsLast && spec.sizes.len() != 4
        || spec.memory_format == MemoryFormat::ChannelsLast3d && spec.sizes.len() != 5
    {
        return Err(Diagnostic::error(
            "invalid-shape",
            format!(
                "memory_format=torch.{} needs a {}-d tensor",
                spec.memory_format.name(),
                if spec.memory_format == MemoryFormat::ChannelsLast {
                    4
                } else {
                    5
                }
            ),
            ann.span,
        ));
    }
    let _ = SymInt::int(0);
    Ok(spec)
}

/// Entries with at least this many statements run their two interpretations
/// (the analysis and eager PyTorch) on two threads: they are independent,
/// and the analysis stage takes about half the time on two cores. Smaller
/// ones stay on one thread, which is cheaper than starting another.
const PARALLEL_MIN_STATEMENTS: usize = 2_000;
/// Side by side, both runs' state is live at once; one after the other, the
/// eager run reuses the memory the analysis run freed, so the peak is one
/// run's. Entries run side by side while the process's memory plus two
/// runs' estimated state stays within this budget (issue 8: 1M statements
/// in at most 1 GiB).
const SIDE_BY_SIDE_MAX_BYTES: u64 = 1 << 30;
/// A run's state per statement: an upper bound of what `benches/pipeline.rs`'s
/// programs need (views, reshapes, pointwise ops, matmuls and in-place
/// writes: about 1.26 tensors of 80 bytes, 1.16 autograd nodes of 48, 0.7
/// storages of 48, some saved tensors, and the name's slot). Measured at
/// 1M statements: 288 bytes of live allocations a run, and 0.94-0.97 GB
/// for the whole process side by side.
const RUN_BYTES_PER_STATEMENT: u64 = 300;

/// How far behind the analysis run the eager run must stay, in statements
/// (nested ones included), for two runs of `statements` statements to fit
/// the budget: `Some(0)` side by side, `None` one after the other. Side by
/// side while the process's memory plus two runs fits; otherwise the eager
/// run keeps far enough behind that, when the analysis run ends (and frees
/// its state), the eager run has built only what still fits; when not even
/// one run's worth is left over, one after the other. `memory`: what the
/// process holds now.
fn eager_lag(statements: usize, memory: Option<u64>) -> Option<usize> {
    let run = RUN_BYTES_PER_STATEMENT * statements as u64;
    let now = memory.unwrap_or(0);
    let spare = SIDE_BY_SIDE_MAX_BYTES.checked_sub(now + run)?;
    if spare >= run {
        return Some(0);
    }
    // The share of the eager run that may overlap the analysis run.
    let overlap = spare as f64 / run as f64;
    Some(((1.0 - overlap) * statements as f64).ceil() as usize)
}

/// Keeps the eager run `lag` statements behind the analysis run: before
/// each top-level statement the eager run waits until the analysis run has
/// done that many more statements than it will have (or has ended). Both
/// count nested statements, so a big block holds the eager run back until
/// the analysis run is past it, and the eager run cannot catch up however
/// the two threads are scheduled: when the analysis run ends, the eager
/// run has built at most the state of its statements but the last `lag`.
///
/// The lag comes from an estimate (`RUN_BYTES_PER_STATEMENT`); a body whose
/// statements make much more state (a loop unrolled many times) would pass
/// the budget. So the eager run also watches the process's memory (every
/// `LOOK_EVERY`), and waits for the analysis run's end when what the
/// analysis run will still make, at the rate both runs made state so far,
/// would not fit (`outgrows_budget`).
pub(crate) struct Pace {
    lag: usize,
    /// The body's statements, nested ones included.
    statements: usize,
    /// The process's memory when the runs began (`None`: unknown, no watch).
    start_memory: Option<u64>,
    /// What the two runs make before their first statement (`run_setup_bytes`):
    /// counted from the start, not as a rate per statement.
    setup_bytes: u64,
    /// When the runs began; when (µs after) the eager run last looked at
    /// the process's memory; the eager run's top-level statements so far
    /// (it reads the clock at every 16th).
    started: std::time::Instant,
    looked_at: std::sync::atomic::AtomicU64,
    ticks: AtomicUsize,
    /// Statements the analysis run has done (`usize::MAX` once it ended).
    done: AtomicUsize,
    /// The progress the waiting eager run wakes at (`usize::MAX`: none).
    wake_at: AtomicUsize,
    lock: std::sync::Mutex<()>,
    woken: std::sync::Condvar,
}

/// A waiting eager run wakes once the analysis run is this many statements
/// past what it waits for, not at every statement.
const PACE_BATCH: usize = 4096;

/// How often the eager run looks at the process's memory (`Pace`), and
/// room for what it may make in between (a run makes well under 1 GB/s).
const LOOK_EVERY: std::time::Duration = std::time::Duration::from_millis(10);
const LOOK_MARGIN_BYTES: u64 = 64 << 20;

/// What a run of `def` makes before its first statement: a place for each
/// of its names (`Env::new`). At a million names that is megabytes, which
/// the first look at the memory must not take for the cost of the few
/// statements done by then: read as a rate, it made the eager run wait for
/// the analysis run's end, and a 1M check took 2.5 s instead of 1.6 s.
fn run_setup_bytes(def: &FunctionDef) -> u64 {
    interp::Env::bytes_for(def.locals.len()) as u64
}

/// Would the process pass the budget if the eager run went on: from
/// `start` to `now` bytes, the analysis run did `analysed` of the body's
/// `statements` and the eager run `eager`, and the analysis run's
/// statements to come are counted at the rate of those. What the eager
/// run makes until it looks again must fit a margin (`LOOK_MARGIN_BYTES`).
fn outgrows_budget(start: u64, now: u64, analysed: usize, eager: usize, statements: usize) -> bool {
    let per_statement = now.saturating_sub(start) as f64 / (analysed + eager).max(1) as f64;
    let to_come = per_statement * statements.saturating_sub(analysed) as f64;
    now as f64 + to_come > (SIDE_BY_SIDE_MAX_BYTES - LOOK_MARGIN_BYTES) as f64
}

impl Pace {
    /// `memory`: what the process holds as the runs begin; `setup_bytes`:
    /// what both runs make before their first statement.
    fn new(lag: usize, statements: usize, memory: Option<u64>, setup_bytes: u64) -> Pace {
        Pace {
            lag,
            statements,
            start_memory: memory,
            setup_bytes,
            started: std::time::Instant::now(),
            looked_at: Default::default(),
            ticks: AtomicUsize::new(0),
            done: AtomicUsize::new(0),
            wake_at: AtomicUsize::new(usize::MAX),
            lock: std::sync::Mutex::new(()),
            woken: std::sync::Condvar::new(),
        }
    }

    /// The analysis run has done `done` statements.
    fn advance(&self, done: usize) {
        self.done.store(done, Ordering::SeqCst);
        if done >= self.wake_at.load(Ordering::SeqCst) {
            let _held = self.lock.lock().unwrap_or_else(|e| e.into_inner());
            self.wake_at.store(usize::MAX, Ordering::SeqCst);
            self.woken.notify_all();
        }
    }

    /// Waits until the eager run may run up to statement `upto` (a count).
    fn wait_for(&self, upto: usize) {
        let mut needed = upto.saturating_add(self.lag);
        if self.time_to_look() && self.outgrown(upto) {
            needed = usize::MAX;
        }
        if (self.lag == 0 && needed != usize::MAX) || self.done.load(Ordering::Acquire) >= needed {
            return;
        }
        let mut held = self.lock.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            // Set before reading `done` (both SeqCst): either `advance` sees
            // it and notifies under the lock, or this read sees its progress.
            self.wake_at
                .store(needed.saturating_add(PACE_BATCH), Ordering::SeqCst);
            if self.done.load(Ordering::SeqCst) >= needed {
                break;
            }
            held = self.woken.wait(held).unwrap_or_else(|e| e.into_inner());
        }
        self.wake_at.store(usize::MAX, Ordering::SeqCst);
    }

    /// Whether the eager run should look at the process's memory now: at
    /// most every `LOOK_EVERY` (a look reads `/proc`), and by time, as one
    /// statement may be a loop that runs for long.
    fn time_to_look(&self) -> bool {
        if self.start_memory.is_none()
            || !self
                .ticks
                .fetch_add(1, Ordering::Relaxed)
                .is_multiple_of(16)
        {
            return false;
        }
        let now = self.started.elapsed().as_micros() as u64;
        if now < self.looked_at.load(Ordering::Relaxed) + LOOK_EVERY.as_micros() as u64 {
            return false;
        }
        self.looked_at.store(now, Ordering::Relaxed);
        true
    }

    /// Would going on, with the eager run at statement `upto`, pass the
    /// budget (`outgrows_budget`)?
    fn outgrown(&self, upto: usize) -> bool {
        self.outgrown_at(crate::resident_memory(), upto)
    }

    /// `outgrown` with the process holding `now` bytes.
    fn outgrown_at(&self, now: Option<u64>, upto: usize) -> bool {
        let analysed = self.done.load(Ordering::SeqCst);
        match (self.start_memory, now) {
            (Some(start), Some(now)) => {
                analysed < self.statements
                    && outgrows_budget(
                        start + self.setup_bytes,
                        now,
                        analysed,
                        upto,
                        self.statements,
                    )
            }
            _ => false,
        }
    }

    /// Marks the analysis run ended when dropped: however it ends, even by
    /// a panic, the eager run goes on.
    fn finisher(&self) -> impl Drop + '_ {
        struct Finisher<'p>(&'p Pace);
        impl Drop for Finisher<'_> {
            fn drop(&mut self) {
                self.0.advance(usize::MAX);
            }
        }
        Finisher(self)
    }
}

/// Which side of a `Pace` a run is on.
#[derive(Clone, Copy)]
pub(crate) enum Paced<'p> {
    /// The analysis run: reports its progress.
    Leading(&'p Pace),
    /// The eager run: waits for the analysis run's.
    Following(&'p Pace),
}

fn count_statements(stmts: &[ast::Stmt]) -> usize {
    stmts
        .iter()
        .map(|s| {
            1 + match &s.kind {
                ast::StmtKind::If { body, orelse, .. } => {
                    count_statements(body) + count_statements(orelse)
                }
                ast::StmtKind::For { body, .. } | ast::StmtKind::With { body, .. } => {
                    count_statements(body)
                }
                _ => 0,
            }
        })
        .sum()
}

pub fn analyse_function(
    functions: &Functions,
    def: &FunctionDef,
    options: &Options,
) -> FunctionResult {
    let statements = count_statements(&def.body);
    let two_threads = options.threads > 1 && statements >= PARALLEL_MIN_STATEMENTS;
    let memory = two_threads.then(crate::resident_memory).flatten();
    let lag = two_threads.then(|| eager_lag(statements, memory)).flatten();
    if let Some(lag) = lag {
        let pace = Pace::new(lag, statements, memory, 2 * run_setup_bytes(def));
        let result = std::thread::scope(|scope| {
            let eager = std::thread::Builder::new()
                .name("tpi-eager".to_string())
                .stack_size(crate::WORKER_STACK_BYTES)
                .spawn_scoped(scope, || {
                    eager::predict(functions, def, Some(Paced::Following(&pace)))
                })
                .ok()?;
            let analysed = analyse_paced(functions, def, options, Some(Paced::Leading(&pace)));
            // A panic in the eager run is a bug: pass it on as one.
            let eager = eager
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
            Some(combine(def, analysed, eager))
        });
        if let Some(result) = result {
            return result;
        }
    }
    let analysed = analyse_only(functions, def, options);
    combine(def, analysed, eager::predict(functions, def, None))
}

/// What the analysis run found: the metadata or the error, and the guards.
struct Analysed {
    meta: Option<ViewAndMutationMeta>,
    diagnostics: Vec<Diagnostic>,
    assumptions: Vec<(Span, String)>,
}

/// PyTorch's metadata analysis of one entry; its machine is freed on return
/// (the eager run, when it comes after, reuses the memory).
fn analyse_only(functions: &Functions, def: &FunctionDef, options: &Options) -> Analysed {
    analyse_paced(functions, def, options, None)
}

/// `analyse_only`, paced as `run_paced` does.
fn analyse_paced(
    functions: &Functions,
    def: &FunctionDef,
    options: &Options,
    pace: Option<Paced>,
) -> Analysed {
    let mut diagnostics = Vec::new();
    // PyTorch's metadata analysis.
    let mut run = run_paced(functions, def, Mode::Analysis, pace);
    let mut assumptions = std::mem::take(&mut run.interp.notes);
    let meta = match std::mem::replace(&mut run.outputs, Ok(Vec::new())) {
        Err(d) => {
            diagnostics.push(d);
            None
        }
        Ok(outputs) => {
            let m = &mut run.interp.m;
            let initial = state::Machine::new(Mode::Analysis);
            if m.autocast != initial.autocast {
                diagnostics.push(
                    Diagnostic::error(
                        "autocast-mutation",
                        "AOTAutograd does not support tracing graphs that mutate the autocast state",
                        def.header_span,
                    )
                    .with_help("restore the autocast state before returning, or use `with torch.autocast(...)`"),
                );
                None
            } else {
                let grad_enabled_mutation = if m.grad_enabled != initial.grad_enabled {
                    Some(m.grad_enabled)
                } else {
                    None
                };
                match meta::collect(
                    m,
                    &run.params,
                    &outputs,
                    options.keep_input_mutations,
                    grad_enabled_mutation,
                ) {
                    Ok(meta) => Some(meta),
                    Err(meta::CollectError::Inputs(e)) => {
                        diagnostics.push(op_error(e, def.header_span));
                        None
                    }
                    Err(meta::CollectError::Outputs(e)) => {
                        // Raised while PyTorch reads the outputs (a stale
                        // view's history): at the return that made them.
                        let at = run.interp.returned_at.unwrap_or(def.header_span);
                        diagnostics.push(op_error(e, at).with_label(
                            "returning it reads its autograd history, stale after an in-place write",
                        ));
                        None
                    }
                }
            }
        }
    };
    for a in std::mem::take(&mut run.interp.m.sizes.assumptions) {
        assumptions.push((def.header_span, a));
    }
    Analysed {
        meta,
        diagnostics,
        assumptions,
    }
}

/// The function's result: the analysis's, with eager PyTorch's errors as
/// warnings where they differ from the analysis's own.
fn combine(def: &FunctionDef, analysed: Analysed, eager: EagerPrediction) -> FunctionResult {
    let Analysed {
        meta,
        mut diagnostics,
        assumptions,
    } = analysed;
    for d in [&eager.forward_error, &eager.backward_error]
        .into_iter()
        .flatten()
    {
        let same_as_analysis = diagnostics
            .first()
            .is_some_and(|e| e.code == d.code && e.primary.span == d.primary.span);
        if !same_as_analysis {
            let mut w = d.clone();
            w.severity = crate::report::Severity::Warning;
            diagnostics.push(w);
        }
    }
    FunctionResult {
        name: def.name.name.to_string(),
        span: def.header_span,
        meta,
        eager,
        diagnostics,
        assumptions,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A function big enough for the two-thread path, with views, in-place
    /// writes to an input, a saved tensor modified before backward, and an
    /// output that aliases an input.
    fn big_program(statements: usize) -> String {
        let mut text = String::from(
            "def big(x: Tensor(8, 8, requires_grad=True), w: Tensor(8, 8)):\n    y = x * 2\n",
        );
        for i in 0..statements {
            let line = match i % 5 {
                0 => format!("    a{i} = y.t()\n"),
                1 => format!("    w[{}].add_(1)\n", i % 8),
                2 => "    y = (y + w).relu()\n".to_string(),
                3 => format!("    b{i} = y.reshape(64)\n"),
                _ => "    y = y @ w\n".to_string(),
            };
            text.push_str(&line);
        }
        text.push_str("    return y, w.view(64)\n");
        text
    }

    #[test]
    fn two_threads_give_the_one_thread_answer() {
        let text = big_program(PARALLEL_MIN_STATEMENTS + 500);
        let module = crate::syntax::parser::parse_module(&text).expect("the program parses");
        let functions = function_table(&module);
        let def = functions["big"];
        assert!(count_statements(&def.body) >= PARALLEL_MIN_STATEMENTS);
        let options = Options::default();
        let parallel = analyse_function(&functions, def, &options);
        let sequential = combine(
            def,
            analyse_only(&functions, def, &options),
            eager::predict(&functions, def, None),
        );
        assert!(parallel.meta.is_some());
        assert!(
            !parallel.diagnostics.is_empty(),
            "the program has an eager hazard"
        );
        assert_eq!(format!("{parallel:?}"), format!("{sequential:?}"));
    }

    /// Small entries run side by side; bigger ones keep the eager run
    /// further and further behind; one whose single run alone would pass
    /// the budget runs one after the other, whatever the process holds.
    #[test]
    fn eager_lag_within_the_memory_budget() {
        let per_gib = (SIDE_BY_SIDE_MAX_BYTES / RUN_BYTES_PER_STATEMENT) as usize;
        let memory = Some(SIDE_BY_SIDE_MAX_BYTES / 16);
        assert_eq!(eager_lag(PARALLEL_MIN_STATEMENTS, memory), Some(0));
        let (some, more) = (per_gib * 2 / 3, per_gib * 4 / 5);
        let later = eager_lag(some, memory).expect("overlaps");
        let latest = eager_lag(more, memory).expect("overlaps");
        assert!(0 < later && later < some, "{later} of {some}");
        assert!(later < latest && latest < more, "{latest} of {more}");
        for memory in [memory, crate::resident_memory()] {
            assert_eq!(eager_lag(per_gib, memory), None);
        }
    }

    /// The follower never gets within `lag` statements of the leader, however
    /// the threads run, and goes on freely once the leader has ended.
    #[test]
    fn the_eager_run_stays_behind() {
        for lag in [1, 7, 50] {
            let pace = Pace::new(lag, 100, crate::resident_memory(), 0);
            let seen = std::thread::scope(|scope| {
                let follower = scope.spawn(|| {
                    (1..=100)
                        .map(|upto| {
                            pace.wait_for(upto);
                            (upto, pace.done.load(Ordering::SeqCst))
                        })
                        .collect::<Vec<_>>()
                });
                {
                    let _finish = pace.finisher();
                    for done in 1..=80 {
                        pace.advance(done);
                        std::thread::yield_now();
                    }
                }
                follower.join().expect("the follower ends")
            });
            for (upto, done) in seen {
                assert!(done >= upto + lag, "lag {lag}: ran {upto} at {done}");
            }
        }
    }

    /// The eager run stops for the analysis run's end when the memory the
    /// analysis run will still make, at the rate so far, would not fit.
    #[test]
    fn the_eager_run_waits_when_memory_runs_short() {
        const MB: u64 = 1 << 20;
        // Half way, 200 bytes a statement: 100 MB to come, fits.
        assert!(!outgrows_budget(
            100 * MB,
            300 * MB,
            500_000,
            500_000,
            1_000_000
        ));
        // A quarter of the way, 1.6 KB a statement: 1.2 GB to come.
        assert!(outgrows_budget(
            100 * MB,
            900 * MB,
            250_000,
            250_000,
            1_000_000
        ));
        // Nearly done, but already at the budget.
        assert!(outgrows_budget(0, 1 << 30, 999_000, 999_000, 1_000_000));
        // Nearly done, with room for the rest.
        assert!(!outgrows_budget(0, 1 << 29, 999_000, 999_000, 1_000_000));
    }

    /// The runs' slots for a million names, made before their first
    /// statements, are not a rate: a first look soon after the start (seen
    /// on a 1M check: the eager run 9,473 statements in, the analysis run
    /// none yet, 14 MB more) lets the eager run go on.
    #[test]
    fn setup_memory_is_not_taken_for_a_rate() {
        const MB: u64 = 1 << 20;
        let setup = 2 * interp::Env::bytes_for(1_000_000) as u64;
        assert!(setup > 14 * MB, "{setup}");
        let (start, now) = (445 * MB, 459 * MB);
        let watched = Pace::new(0, 1_000_000, Some(start), setup);
        assert!(!watched.outgrown_at(Some(now), 9_473));
        // Read as a rate (1.5 KB a statement), the same look stopped it.
        let unaware = Pace::new(0, 1_000_000, Some(start), 0);
        assert!(unaware.outgrown_at(Some(now), 9_473));
        // The setup does not hide real growth: at 900 MB a quarter of the
        // way, it still stops.
        watched.advance(250_000);
        assert!(watched.outgrown_at(Some(900 * MB), 250_000));
    }

    /// Paced runs, with any lag (a big block at the end included), give
    /// the answers of runs one after the other.
    #[test]
    fn paced_runs_give_the_plain_answer() {
        let mut text = big_program(PARALLEL_MIN_STATEMENTS + 500);
        text.truncate(text.rfind("    return").expect("a return"));
        text.push_str("    with torch.no_grad():\n");
        for i in 0..200 {
            text.push_str(&format!("        v{i} = x * {i}\n"));
        }
        text.push_str("    return y, w.view(64)\n");
        let module = crate::syntax::parser::parse_module(&text).expect("the program parses");
        let functions = function_table(&module);
        let def = functions["big"];
        let options = Options::default();
        let plain = analyse_only(&functions, def, &options);
        let plain = format!(
            "{:?}",
            combine(def, plain, eager::predict(&functions, def, None))
        );
        let statements = count_statements(&def.body);
        for lag in [0, 1, 150, statements / 2, statements + 10] {
            let pace = Pace::new(lag, statements, crate::resident_memory(), 0);
            let paced = std::thread::scope(|scope| {
                let eager =
                    scope.spawn(|| eager::predict(&functions, def, Some(Paced::Following(&pace))));
                let analysed =
                    analyse_paced(&functions, def, &options, Some(Paced::Leading(&pace)));
                combine(def, analysed, eager.join().expect("the eager run ends"))
            });
            assert_eq!(format!("{paced:?}"), plain, "lag {lag}");
        }
    }
}
