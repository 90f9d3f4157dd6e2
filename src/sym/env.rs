//! The shape environment of one function: its symbols, their hints and
//! ranges, and the guards the analysis assumed (as PyTorch's `ShapeEnv`).
//!
//! Every symbol is a size >= 2 (PyTorch specialises 0 and 1) with a hint: the
//! value the oracle's fake tensors use, 5, 7, 11, … in order of declaration.
//! A comparison is `Proven` when it holds for every assignment in the symbols'
//! ranges (a sound, incomplete test: the polynomial, after substituting each
//! atom `x = lo + t` with `t >= 0`, has only non-negative coefficients), else
//! `Assumed`, decided by the hints. [`ShapeEnv::guard`] records an assumed
//! fact and refines the environment the way PyTorch does: an equality that
//! can be solved for one symbol replaces it (`4*n == 20` makes `n` the
//! constant 5), a bound on one symbol narrows its range.

use super::{from_sorted, Atom, Repr, SymError, SymInt, Term};
use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

/// The hints of the first ten symbols, in declaration order (the oracle's
/// `SYMBOL_HINTS`; the oracle rejects more symbols, this module continues
/// with the next primes).
pub const SYMBOL_HINTS: [i64; 10] = [5, 7, 11, 13, 17, 19, 23, 29, 31, 37];

/// The smallest value of a symbolic size.
const MIN_SIZE: i64 = 2;

/// How deeply nested `//` and `%` atoms are looked into by proofs.
const DEPTH: u32 = 6;

/// The answer to a question about sizes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Truth {
    /// Holds (or fails) for every value of the symbols in their ranges.
    Proven(bool),
    /// Decided by the hints only: PyTorch would install a guard.
    Assumed(bool),
}

impl Truth {
    /// The answer, however it was reached.
    pub fn value(self) -> bool {
        match self {
            Truth::Proven(v) | Truth::Assumed(v) => v,
        }
    }

    /// True when the answer holds for every value of the symbols.
    pub fn is_proven(self) -> bool {
        matches!(self, Truth::Proven(_))
    }

    /// True when only the hints decided the answer.
    pub fn is_assumed(self) -> bool {
        matches!(self, Truth::Assumed(_))
    }
}

/// The answer to the negated question (`!t`).
impl std::ops::Not for Truth {
    type Output = Truth;

    fn not(self) -> Truth {
        match self {
            Truth::Proven(v) => Truth::Proven(!v),
            Truth::Assumed(v) => Truth::Assumed(!v),
        }
    }
}

/// A relation between two sizes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Rel {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

impl Rel {
    /// Python's operator.
    pub fn as_str(self) -> &'static str {
        match self {
            Rel::Eq => "==",
            Rel::Ne => "!=",
            Rel::Lt => "<",
            Rel::Le => "<=",
            Rel::Gt => ">",
            Rel::Ge => ">=",
        }
    }

    /// The relation that holds exactly when `self` does not.
    pub fn negate(self) -> Rel {
        match self {
            Rel::Eq => Rel::Ne,
            Rel::Ne => Rel::Eq,
            Rel::Lt => Rel::Ge,
            Rel::Le => Rel::Gt,
            Rel::Gt => Rel::Le,
            Rel::Ge => Rel::Lt,
        }
    }

    /// The relation with its sides swapped (`a < b` is `b > a`).
    pub fn flip(self) -> Rel {
        match self {
            Rel::Eq => Rel::Eq,
            Rel::Ne => Rel::Ne,
            Rel::Lt => Rel::Gt,
            Rel::Le => Rel::Ge,
            Rel::Gt => Rel::Lt,
            Rel::Ge => Rel::Le,
        }
    }

    /// The relation on concrete values.
    pub fn holds<T: Ord>(self, a: T, b: T) -> bool {
        match self {
            Rel::Eq => a == b,
            Rel::Ne => a != b,
            Rel::Lt => a < b,
            Rel::Le => a <= b,
            Rel::Gt => a > b,
            Rel::Ge => a >= b,
        }
    }
}

impl fmt::Display for Rel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A fact the analysis assumed because the hints decided it (a guard):
/// `lhs rel rhs` holds.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Assumption {
    pub lhs: SymInt,
    pub rel: Rel,
    pub rhs: SymInt,
}

impl fmt::Display for Assumption {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {} {}", self.lhs, self.rel, self.rhs)
    }
}

#[derive(Clone, Debug)]
struct SymbolInfo {
    name: Arc<str>,
    hint: i64,
    lo: i64,
    hi: Option<i64>,
}

/// The facts the analysis of one function has about its symbols.
#[derive(Clone, Debug, Default)]
pub struct ShapeEnv {
    symbols: Vec<SymbolInfo>,
    /// Symbols specialised by guards, with their values (kept resolved).
    replacements: Vec<(Arc<str>, SymInt)>,
    assumptions: Vec<Assumption>,
}

/// The hint of the `i`-th declared symbol.
fn nth_hint(i: usize) -> i64 {
    if let Some(h) = SYMBOL_HINTS.get(i) {
        return *h;
    }
    let mut left = i - SYMBOL_HINTS.len();
    let mut p = SYMBOL_HINTS[SYMBOL_HINTS.len() - 1];
    loop {
        p += 2;
        if (3..)
            .step_by(2)
            .take_while(|d| d * d <= p)
            .all(|d| p % d != 0)
        {
            if left == 0 {
                return p;
            }
            left -= 1;
        }
    }
}

fn floor_div_128(a: i128, b: i128) -> i128 {
    let q = a / b;
    if a % b != 0 && ((a < 0) != (b < 0)) {
        q - 1
    } else {
        q
    }
}

fn ceil_div_128(a: i128, b: i128) -> i128 {
    -floor_div_128(-a, b)
}

fn binomial(n: u32, k: u32) -> Option<i128> {
    let mut r: i128 = 1;
    for i in 0..k {
        r = r.checked_mul(i128::from(n - i))? / i128::from(i + 1);
    }
    Some(r)
}

/// How many of the latest guards `ShapeEnv::implied` looks at.
const MAX_IMPLYING: usize = 512;

impl ShapeEnv {
    /// An environment without symbols.
    pub fn new() -> ShapeEnv {
        ShapeEnv::default()
    }

    /// Declares the symbol `name` (or returns the existing one), assigning
    /// the next hint.
    pub fn declare(&mut self, name: &str) -> SymInt {
        if !self.is_declared(name) {
            let hint = nth_hint(self.symbols.len());
            self.declare_with_hint(name, hint);
        }
        SymInt::symbol(name)
    }

    /// Declares the symbol `name` with an explicit hint (>= 2); an existing
    /// symbol keeps its hint.
    pub fn declare_with_hint(&mut self, name: &str, hint: i64) -> SymInt {
        if !self.is_declared(name) {
            self.symbols.push(SymbolInfo {
                name: Arc::from(name),
                hint,
                lo: MIN_SIZE,
                hi: None,
            });
        }
        SymInt::symbol(name)
    }

    /// True when `name` was declared.
    pub fn is_declared(&self, name: &str) -> bool {
        self.info(name).is_some()
    }

    /// How many symbols were declared (the oracle supports up to
    /// `SYMBOL_HINTS.len()`).
    pub fn num_symbols(&self) -> usize {
        self.symbols.len()
    }

    /// The declared symbols, in declaration order.
    pub fn symbol_names(&self) -> Vec<String> {
        self.symbols.iter().map(|s| s.name.to_string()).collect()
    }

    fn info(&self, name: &str) -> Option<&SymbolInfo> {
        self.symbols.iter().find(|s| &*s.name == name)
    }

    /// The hint of a declared symbol.
    pub fn symbol_hint(&self, name: &str) -> Option<i64> {
        self.info(name).map(|s| s.hint)
    }

    /// The known range `[lo, hi]` of a symbol (`hi` None: unbounded);
    /// `[2, ∞)` for a symbol that was not declared.
    pub fn symbol_range(&self, name: &str) -> (i64, Option<i64>) {
        match self.info(name) {
            Some(s) => (s.lo, s.hi),
            None => (MIN_SIZE, None),
        }
    }

    /// The value of `v` under the hints (None: an undeclared symbol, a
    /// division by zero or an overflow).
    pub fn hint(&self, v: &SymInt) -> Option<i64> {
        v.eval(&|name| self.symbol_hint(name))
    }

    /// The value a guard specialised the symbol `name` to, if any.
    pub fn replacement(&self, name: &str) -> Option<&SymInt> {
        self.replacements
            .iter()
            .find(|(s, _)| &**s == name)
            .map(|(_, v)| v)
    }

    /// How many symbols guards have specialised so far.
    pub fn num_replacements(&self) -> usize {
        self.replacements.len()
    }

    /// Had the first `k` specialisations already made `v` an integer?
    /// (Every symbol of `v` among them, and `v` resolved an integer.)
    pub fn concrete_within(&self, v: &SymInt, k: usize) -> bool {
        let first = &self.replacements[..k.min(self.replacements.len())];
        v.symbols()
            .iter()
            .all(|name| first.iter().any(|(s, _)| **s == **name))
            && self.resolved_int(v).is_some()
    }

    /// `v`'s value, when it is an integer or the specialisations so far
    /// make it one.
    pub fn resolved_int(&self, v: &SymInt) -> Option<i64> {
        v.as_int().or_else(|| self.resolve(v).ok()?.as_int())
    }

    /// `v` with the specialisations of the guards so far applied (as
    /// PyTorch's `node.expr`): use it for everything reported.
    pub fn resolve(&self, v: &SymInt) -> Result<SymInt, SymError> {
        if self.replacements.is_empty()
            || !v.is_symbolic()
            || !self.replacements.iter().any(|(s, _)| v.has_symbol(s))
        {
            return Ok(v.clone());
        }
        v.substitute(&|name| self.replacement(name).cloned())
    }

    /// The Python-style expression of `v` for a report (resolved; as
    /// `Display`).
    pub fn display(&self, v: &SymInt) -> String {
        match self.resolve(v) {
            Ok(r) => r.to_string(),
            Err(_) => v.to_string(),
        }
    }

    /// True when `v` still depends on a symbol once resolved (a dynamic dim).
    pub fn is_dynamic(&self, v: &SymInt) -> bool {
        match self.resolve(v) {
            Ok(r) => r.is_symbolic(),
            Err(_) => v.is_symbolic(),
        }
    }

    /// The facts assumed by [`ShapeEnv::guard`] so far, in order, without
    /// repetitions.
    pub fn assumptions(&self) -> &[Assumption] {
        &self.assumptions
    }

    // ------------------------------------------------------------ questions

    /// Decides `a rel b` without changing the environment.
    pub fn compare(&self, a: &SymInt, rel: Rel, b: &SymInt) -> Truth {
        if let (Some(x), Some(y)) = (a.as_int(), b.as_int()) {
            return Truth::Proven(rel.holds(x, y));
        }
        let env = |name: &str| self.symbol_hint(name);
        let hints = match (a.eval_wide(&env), b.eval_wide(&env)) {
            (Some(x), Some(y)) => Some((x, y)),
            _ => None,
        };
        let proven = self
            .prove(a, rel, b, hints.and_then(|(x, y)| y.checked_sub(x)))
            .or_else(|| self.implied(a, rel, b));
        match proven {
            Some(v) => Truth::Proven(v),
            None => Truth::Assumed(match hints {
                Some((x, y)) => rel.holds(x, y),
                // Undecidable (an undeclared symbol, an overflow): "different".
                None => rel == Rel::Ne,
            }),
        }
    }

    /// What the guards so far imply of `a rel b` as the relations they
    /// hold (ShapeEnv's axioms and `get_implications`): a guard `l == r`
    /// decides `l <= r`, `l >= r` and their negations; `l < r` decides
    /// `l <= r`, `l != r` and `l <= r - 1`; `l <= r` decides `l < r + 1`.
    /// Only the same expressions up to moving terms across (canonicalize_
    /// bool_expr), not bounds that follow from them.
    fn implied(&self, a: &SymInt, rel: Rel, b: &SymInt) -> Option<bool> {
        if self.assumptions.is_empty() {
            return None;
        }
        let side = |v: &SymInt| self.resolve(v).unwrap_or_else(|_| v.clone());
        let qd = side(b).sub(&side(a)).ok()?;
        // (The latest guards: a bound on the work for programs with very
        // many of them.)
        for fact in self.assumptions.iter().rev().take(MAX_IMPLYING) {
            // As `lhs < rhs` or `lhs <= rhs` when an inequality.
            // ShapeEnv keeps its axioms as simplified when they were
            // guarded: a later replacement does not rewrite them (`s1*s2 ==
            // 8` does not decide `2*s2 == 8` once `s1` is 2, a new guard
            // that solves `s2`), except those with a floor division, which
            // `resimplify_floor_div` simplifies again as facts come.
            let fact_side = |v: &SymInt| {
                if v.has_floordiv() {
                    side(v)
                } else {
                    v.clone()
                }
            };
            let (lhs, rhs) = (fact_side(&fact.lhs), fact_side(&fact.rhs));
            let (frel, fd) = match fact.rel {
                Rel::Gt | Rel::Ge => (fact.rel.flip(), lhs.sub(&rhs)),
                r => (r, rhs.sub(&lhs)),
            };
            let Ok(fd) = fd else { continue };
            // The query as `x rel 0 + offset` on the fact's difference.
            let (qrel, offset) = if let Some(k) = qd.sub(&fd).ok().and_then(|d| d.as_int()) {
                (rel, k)
            } else if let Some(k) = qd.add(&fd).ok().and_then(|d| d.as_int()) {
                // b - a = k - fd: `a rel b` is `b' rel.flip() a'` with
                // b' - a' = fd - k.
                (rel.flip(), -k)
            } else {
                continue;
            };
            let answer = match (frel, offset) {
                (Rel::Eq, 0) => Some(qrel.holds(0, 0)),
                (Rel::Ne, 0) => match qrel {
                    Rel::Ne => Some(true),
                    Rel::Eq => Some(false),
                    _ => None,
                },
                (Rel::Lt, 0) => match qrel {
                    Rel::Lt | Rel::Le | Rel::Ne => Some(true),
                    Rel::Ge | Rel::Gt | Rel::Eq => Some(false),
                },
                (Rel::Lt, -1) | (Rel::Le, 0) => match qrel {
                    Rel::Le => Some(true),
                    Rel::Gt => Some(false),
                    _ => None,
                },
                (Rel::Le, 1) => match qrel {
                    Rel::Lt => Some(true),
                    Rel::Ge => Some(false),
                    _ => None,
                },
                _ => None,
            };
            if answer.is_some() {
                return answer;
            }
        }
        None
    }

    /// `a == b`.
    pub fn cmp_eq(&self, a: &SymInt, b: &SymInt) -> Truth {
        self.compare(a, Rel::Eq, b)
    }

    /// `a != b`.
    pub fn cmp_ne(&self, a: &SymInt, b: &SymInt) -> Truth {
        self.compare(a, Rel::Ne, b)
    }

    /// `a < b`.
    pub fn cmp_lt(&self, a: &SymInt, b: &SymInt) -> Truth {
        self.compare(a, Rel::Lt, b)
    }

    /// `a <= b`.
    pub fn cmp_le(&self, a: &SymInt, b: &SymInt) -> Truth {
        self.compare(a, Rel::Le, b)
    }

    /// `a > b`.
    pub fn cmp_gt(&self, a: &SymInt, b: &SymInt) -> Truth {
        self.compare(a, Rel::Gt, b)
    }

    /// `a >= b`.
    pub fn cmp_ge(&self, a: &SymInt, b: &SymInt) -> Truth {
        self.compare(a, Rel::Ge, b)
    }

    /// Decides `a rel b` as PyTorch's guards do: when only the hints decide
    /// it, records the fact that holds (see [`ShapeEnv::assumptions`]) and
    /// refines the environment (solvable equalities specialise a symbol,
    /// bounds on one symbol narrow its range).
    pub fn guard(&mut self, a: &SymInt, rel: Rel, b: &SymInt) -> Truth {
        let t = self.compare(a, rel, b);
        if let Truth::Assumed(holds) = t {
            let lhs = self.resolve(a).unwrap_or_else(|_| a.clone());
            let rhs = self.resolve(b).unwrap_or_else(|_| b.clone());
            let rel = if holds { rel } else { rel.negate() };
            let fact = Assumption { lhs, rel, rhs };
            if !self.assumptions.contains(&fact) {
                self.assumptions.push(fact.clone());
            }
            self.refine(&fact);
        }
        t
    }

    /// `guard(a, Rel::Eq, b)`.
    pub fn guard_eq(&mut self, a: &SymInt, b: &SymInt) -> Truth {
        self.guard(a, Rel::Eq, b)
    }

    /// `guard(a, Rel::Ne, b)`.
    pub fn guard_ne(&mut self, a: &SymInt, b: &SymInt) -> Truth {
        self.guard(a, Rel::Ne, b)
    }

    /// `guard(a, Rel::Lt, b)`.
    pub fn guard_lt(&mut self, a: &SymInt, b: &SymInt) -> Truth {
        self.guard(a, Rel::Lt, b)
    }

    /// `guard(a, Rel::Le, b)`.
    pub fn guard_le(&mut self, a: &SymInt, b: &SymInt) -> Truth {
        self.guard(a, Rel::Le, b)
    }

    /// `guard(a, Rel::Gt, b)`.
    pub fn guard_gt(&mut self, a: &SymInt, b: &SymInt) -> Truth {
        self.guard(a, Rel::Gt, b)
    }

    /// `guard(a, Rel::Ge, b)`.
    pub fn guard_ge(&mut self, a: &SymInt, b: &SymInt) -> Truth {
        self.guard(a, Rel::Ge, b)
    }

    /// True when `v >= 0` for every value of the symbols.
    pub fn prove_nonneg(&self, v: &SymInt) -> bool {
        self.at_least(v, 0)
    }

    /// A proven lower bound of `v` (the best this simple method finds).
    pub fn lower_bound(&self, v: &SymInt) -> Option<i64> {
        let r = self.resolve(v).ok()?;
        self.lb(&r, DEPTH)
            .map(|l| l.clamp(i128::from(i64::MIN), i128::from(i64::MAX)) as i64)
    }

    fn at_least(&self, v: &SymInt, k: i128) -> bool {
        match self.resolve(v) {
            Ok(r) => self.lb_at_least(&r, k),
            Err(_) => false,
        }
    }

    /// `v >= k` is proven, for a resolved `v`.
    fn lb_at_least(&self, v: &SymInt, k: i128) -> bool {
        match v.as_int() {
            Some(x) => i128::from(x) >= k,
            None => self.lb(v, DEPTH).is_some_and(|l| l >= k),
        }
    }

    /// Proves `a rel b` or its negation. `hint_diff` is `b - a` under the
    /// hints: the hints are a valid assignment, so a bound they violate is
    /// not tried.
    fn prove(&self, a: &SymInt, rel: Rel, b: &SymInt, hint_diff: Option<i128>) -> Option<bool> {
        let a = self.resolve(a).ok()?;
        let b = self.resolve(b).ok()?;
        // d = b - a; a < b  <=>  d >= 1; a > b  <=>  -d >= 1.
        let d = b.sub(&a).ok()?;
        if let Some(c) = d.as_int() {
            let c = i128::from(c);
            return Some(rel.holds(0, c));
        }
        let nd = std::cell::OnceCell::new();
        let d_at_least = |k: i128| hint_diff.is_none_or(|h| h >= k) && self.lb_at_least(&d, k);
        let nd_at_least = |k: i128| {
            hint_diff.is_none_or(|h| -h >= k)
                && nd
                    .get_or_init(|| d.neg().ok())
                    .as_ref()
                    .is_some_and(|nd| self.lb_at_least(nd, k))
        };
        let yes_no = |yes: &dyn Fn() -> bool, no: &dyn Fn() -> bool| {
            if yes() {
                Some(true)
            } else if no() {
                Some(false)
            } else {
                None
            }
        };
        match rel {
            Rel::Eq | Rel::Ne => {
                if d_at_least(1) || nd_at_least(1) {
                    Some(rel == Rel::Ne)
                } else {
                    None
                }
            }
            Rel::Lt => yes_no(&|| d_at_least(1), &|| nd_at_least(0)),
            Rel::Le => yes_no(&|| d_at_least(0), &|| nd_at_least(1)),
            Rel::Gt => yes_no(&|| nd_at_least(1), &|| d_at_least(0)),
            Rel::Ge => yes_no(&|| nd_at_least(0), &|| d_at_least(1)),
        }
    }

    // ------------------------------------------------------------ proofs

    /// A lower bound of the (resolved) value `v`.
    fn lb(&self, v: &SymInt, depth: u32) -> Option<i128> {
        if let Some(c) = v.as_int() {
            return Some(i128::from(c));
        }
        if depth == 0 {
            return None;
        }
        // v >= cur / scale
        let mut cur = v.clone();
        let mut scale: i128 = 1;
        for _ in 0..8 {
            if !cur.is_symbolic() {
                break;
            }
            match self.eliminate(&cur, depth) {
                Some((next, s)) => {
                    cur = next;
                    scale = scale.checked_mul(i128::from(s))?;
                }
                None => break,
            }
        }
        let l = self.shift_lb(&cur, depth)?;
        Some(ceil_div_128(l, scale))
    }

    /// Replaces one term `k*X` with `k < 0`, `X` an atom in no other
    /// monomial, by `k` times an upper bound of `X`: returns `(w, s)` with
    /// `cur >= w / s`, `s > 0`.
    fn eliminate(&self, cur: &SymInt, depth: u32) -> Option<(SymInt, i64)> {
        let Repr::Sym(p) = cur.r() else {
            return None;
        };
        for (i, (m, k)) in p.terms.iter().enumerate() {
            if *k >= 0 {
                continue;
            }
            let Some(x) = m.as_atom() else {
                continue;
            };
            if p.terms
                .iter()
                .enumerate()
                .any(|(j, (n, _))| j != i && n.contains(x))
            {
                continue;
            }
            let Some((w, scale)) = self.upper_term(x, *k, depth) else {
                continue;
            };
            let rest: Vec<Term> = p
                .terms
                .iter()
                .enumerate()
                .filter(|&(j, _)| j != i)
                .map(|(_, t)| t.clone())
                .collect();
            let next = from_sorted(rest)
                .mul(&SymInt::int(scale))
                .ok()?
                .add(&w)
                .ok()?;
            return Some((next, scale));
        }
        None
    }

    /// For an atom `X` and `k < 0`: `(w, s)` with `k*X >= w / s`, `s > 0`,
    /// from an upper bound of `X`.
    fn upper_term(&self, x: &Atom, k: i64, depth: u32) -> Option<(SymInt, i64)> {
        let k = SymInt::int(k);
        match x {
            Atom::Sym(name) => {
                let hi = self.symbol_range(name).1?;
                Some((k.mul(&SymInt::int(hi)).ok()?, 1))
            }
            Atom::FloorDiv(ab) => {
                let (a, b) = (&ab.0, &ab.1);
                // X <= a / L when b >= L >= 1 and (for symbolic b) a >= 0.
                let l = match b.as_int() {
                    Some(c) if c > 0 => c,
                    Some(_) => return None,
                    None => {
                        let lb_b = self.lb(b, depth - 1)?;
                        if lb_b < 1 || self.lb(a, depth - 1)? < 0 {
                            return None;
                        }
                        i64::try_from(lb_b).ok()?
                    }
                };
                Some((k.mul(a).ok()?, l))
            }
            Atom::Mod(ab) => {
                let b = &ab.1;
                // X <= b - 1 when b >= 1.
                let top = match b.as_int() {
                    Some(c) if c > 0 => SymInt::int(c - 1),
                    Some(_) => return None,
                    None => {
                        if self.lb(b, depth - 1)? < 1 {
                            return None;
                        }
                        b.sub(&SymInt::int(1)).ok()?
                    }
                };
                Some((k.mul(&top).ok()?, 1))
            }
        }
    }

    /// A lower bound of a lone atom.
    fn atom_lb(&self, x: &Atom, depth: u32) -> Option<i128> {
        match x {
            Atom::Sym(name) => Some(i128::from(self.symbol_range(name).0)),
            Atom::FloorDiv(ab) => {
                let (a, b) = (&ab.0, &ab.1);
                match b.as_int() {
                    Some(c) if c > 0 => Some(floor_div_128(self.lb(a, depth - 1)?, i128::from(c))),
                    Some(_) => None,
                    None => {
                        if self.lb(b, depth - 1)? >= 1 && self.lb(a, depth - 1)? >= 0 {
                            Some(0)
                        } else {
                            None
                        }
                    }
                }
            }
            Atom::Mod(ab) => match ab.1.as_int() {
                Some(c) if c > 0 => Some(0),
                Some(_) => None,
                None => (self.lb(&ab.1, depth - 1)? >= 1).then_some(0),
            },
        }
    }

    /// Substitutes `x = lo(x) + t` for every atom and expands: when every
    /// coefficient of a non-constant monomial in the `t`s is >= 0, the
    /// constant term is a lower bound.
    fn shift_lb(&self, v: &SymInt, depth: u32) -> Option<i128> {
        let p = match v.r() {
            Repr::Int(c) => return Some(i128::from(c)),
            Repr::Sym(p) => p,
        };
        // The top-degree monomials keep their coefficients in the expansion.
        let top = p.terms[0].0.degree();
        if p.terms
            .iter()
            .take_while(|(m, _)| m.degree() == top)
            .any(|(_, k)| *k < 0)
        {
            return None;
        }
        if top == 1 {
            // Linear: every coefficient is >= 0 (checked above).
            let mut total: i128 = 0;
            for (m, k) in &p.terms {
                let v = match m.as_atom() {
                    Some(a) => i128::from(*k).checked_mul(self.atom_lb(a, depth)?)?,
                    None => i128::from(*k),
                };
                total = total.checked_add(v)?;
            }
            return Some(total);
        }
        let mut atoms: Vec<(&Atom, i128)> = Vec::new();
        for (m, _) in &p.terms {
            for (a, _) in &m.0 {
                if !atoms.iter().any(|(b, _)| *b == a) {
                    atoms.push((a, self.atom_lb(a, depth)?));
                }
            }
        }
        let mut total: BTreeMap<Vec<(usize, u32)>, i128> = BTreeMap::new();
        for (m, k) in &p.terms {
            let mut partial: Vec<(Vec<(usize, u32)>, i128)> = vec![(Vec::new(), i128::from(*k))];
            for (a, e) in &m.0 {
                let idx = atoms.iter().position(|(b, _)| *b == a)?;
                let lo = atoms[idx].1;
                let mut next = Vec::with_capacity(partial.len() * (*e as usize + 1));
                for (tm, c) in &partial {
                    for j in 0..=*e {
                        let coef = binomial(*e, j)?.checked_mul(lo.checked_pow(e - j)?)?;
                        if coef == 0 {
                            continue;
                        }
                        let mut tm2 = tm.clone();
                        if j > 0 {
                            tm2.push((idx, j));
                        }
                        next.push((tm2, c.checked_mul(coef)?));
                    }
                }
                if next.len() > 100_000 {
                    return None;
                }
                partial = next;
            }
            for (tm, c) in partial {
                let slot = total.entry(tm).or_insert(0);
                *slot = slot.checked_add(c)?;
            }
        }
        let mut constant = 0;
        for (tm, c) in total {
            if tm.is_empty() {
                constant = c;
            } else if c < 0 {
                return None;
            }
        }
        Some(constant)
    }

    // ------------------------------------------------------------ refinement

    fn refine(&mut self, fact: &Assumption) {
        let (a, b) = (&fact.lhs, &fact.rhs);
        let d = match fact.rel {
            Rel::Eq => {
                if let Ok(d) = a.sub(b) {
                    self.try_replace(&d);
                }
                // `x // q == c`: try_solve's floordiv case in `_refine_ranges`
                // (`floordiv_upper_bound`).
                for (f, c) in [(a, b), (b, a)] {
                    if let (Some((x, q, k)), Some(c)) = (self.single_floordiv(f), c.as_int()) {
                        if let Some(c) = c.checked_sub(k) {
                            self.floordiv_upper_bound(&x, q, c);
                        }
                    }
                }
                return;
            }
            Rel::Ne => return,
            _ if self.floordiv_inequality(a, fact.rel, b) => return,
            rel => a.sub(b).map(|d| (d, rel)),
        };
        // `c*s + k rel 0`, solved for `s` as try_solve does.
        if let Ok((d, rel)) = d {
            if let Some((s, c, k)) = self.linear_in_one_symbol(&d) {
                self.refine_solved(&s, c, rel, -k);
            }
        }
    }

    /// `_refine_ranges` given `c*s rel rhs`: try_solve divides by `c`
    /// (mirroring the relation when it is negative), and only an integer
    /// quotient `q` refines. Its quirk is kept: the lower bound moves only
    /// when it is below `q` (so `s > q` with `s` already at least `q` leaves
    /// it), the upper only when it is above `q`. A range of one value
    /// specialises `s`.
    fn refine_solved(&mut self, s: &Arc<str>, c: i128, rel: Rel, rhs: i128) {
        if c == 0 || rhs % c != 0 {
            return;
        }
        let (q, rel) = (rhs / c, if c < 0 { rel.flip() } else { rel });
        let Some(info) = self.symbols.iter_mut().find(|x| x.name == *s) else {
            return;
        };
        let (mut lo, mut hi) = (i128::from(info.lo), info.hi.map(i128::from));
        if matches!(rel, Rel::Eq | Rel::Ge | Rel::Gt) && lo < q {
            lo = q + i128::from(rel == Rel::Gt);
        }
        if matches!(rel, Rel::Eq | Rel::Le | Rel::Lt) && hi.is_none_or(|h| h > q) {
            hi = Some(q - i128::from(rel == Rel::Lt));
        }
        if hi.is_some_and(|h| h < lo) {
            return;
        }
        info.lo = i64::try_from(lo).unwrap_or(i64::MAX);
        info.hi = hi.map(|h| i64::try_from(h).unwrap_or(i64::MAX));
        if info.hi == Some(info.lo) {
            let v = SymInt::int(info.lo);
            self.set_replacement(s.clone(), v);
        }
    }

    /// Given `x // q == c` with `x = a*s + k` for one symbol `s` (a > 0):
    /// try_solve makes it `x >= q*c & x < q*(c+1)`, and sympy's `And`
    /// keeps only the second when the first holds for every positive
    /// integer `s` (what sympy knows of a size: `a + k >= q*c`); else the
    /// guard refines nothing. That bound, `s < (q*(c+1) - k) / a` when the
    /// quotient is an integer, lowers `s`'s upper bound, and a range of one
    /// value specialises `s` (tests/oracle/floordiv_range_refinement.tp).
    fn floordiv_upper_bound(&mut self, x: &SymInt, q: i64, c: i64) {
        let Some((s, a, k)) = self.linear_in_one_symbol(x).filter(|&(_, a, _)| a > 0) else {
            return;
        };
        let (q, c) = (i128::from(q), i128::from(c));
        if a + k < q * c {
            return;
        }
        self.refine_solved(&s, a, Rel::Lt, q * (c + 1) - k);
    }

    /// Given `f rel g` with one side `x // q` (`x = a*s + k`, a > 0) and
    /// the other an integer: try_solve's floordiv inequalities (`x // q >=
    /// c` is `x >= c*q`, `x // q < c` is `x < c*q`), then `s` isolated,
    /// which bounds it only when the bound divides by `a`. Whether the fact
    /// had that form.
    fn floordiv_inequality(&mut self, f: &SymInt, rel: Rel, g: &SymInt) -> bool {
        let (floordiv, c, rel) = match (self.single_floordiv(f), g.as_int()) {
            (Some(x), Some(c)) => (x, c, rel),
            _ => match (self.single_floordiv(g), f.as_int()) {
                (Some(x), Some(c)) => (x, c, rel.flip()),
                _ => return false,
            },
        };
        let ((x, q, k0), c) = (floordiv, i128::from(c));
        let c = c - i128::from(k0);
        let Some((s, a, k)) = self.linear_in_one_symbol(&x).filter(|&(_, a, _)| a > 0) else {
            return true;
        };
        let q = i128::from(q);
        // `x >= lo` or `x < hi`.
        let (lo, hi) = match rel {
            Rel::Ge => (Some(c * q), None),
            Rel::Gt => (Some((c + 1) * q), None),
            Rel::Lt => (None, Some(c * q)),
            Rel::Le => (None, Some((c + 1) * q)),
            Rel::Eq | Rel::Ne => return false,
        };
        match (lo, hi) {
            (Some(lo), _) => self.refine_solved(&s, a, Rel::Ge, lo - k),
            (_, Some(hi)) => self.refine_solved(&s, a, Rel::Lt, hi - k),
            _ => {}
        }
        true
    }

    /// `v` as `a*s + k` for one symbol `s` (with the guards so far applied).
    fn linear_in_one_symbol(&self, v: &SymInt) -> Option<(Arc<str>, i128, i128)> {
        let v = self.resolve(v).ok()?;
        let Repr::Sym(p) = v.r() else {
            return None;
        };
        let (mut sym, mut a, mut k) = (None, 0i128, 0i128);
        for (m, coef) in &p.terms {
            if m.is_one() {
                k = i128::from(*coef);
            } else if let (Some(Atom::Sym(name)), None) = (m.as_atom(), &sym) {
                sym = Some(name.clone());
                a = i128::from(*coef);
            } else {
                return None;
            }
        }
        sym.map(|s| (s, a, k))
    }

    /// `v` as `x // q + k` with a positive integer `q` (sympy's FloorDiv
    /// takes multiples of `q` out of `x`; try_solve then moves `k` across).
    fn single_floordiv(&self, v: &SymInt) -> Option<(SymInt, i64, i64)> {
        let v = self.resolve(v).ok()?;
        let Repr::Sym(p) = v.r() else {
            return None;
        };
        let (mut found, mut k) = (None, 0);
        for (m, coef) in &p.terms {
            if m.is_one() {
                k = *coef;
            } else if let (Some(Atom::FloorDiv(ab)), 1, None) = (m.as_atom(), *coef, &found) {
                let q = ab.1.as_int().filter(|&q| q > 0)?;
                found = Some((ab.0.clone(), q));
            } else {
                return None;
            }
        }
        found.map(|(x, q)| (x, q, k))
    }

    /// Given the fact `d == 0`: when `d` is free of `//` and `%` and linear
    /// in its symbol with the largest hint, with an integral solution,
    /// specialises that symbol (PyTorch's `_maybe_guard_rel` + `try_solve`).
    fn try_replace(&mut self, d: &SymInt) {
        let Ok(d) = self.resolve(d) else {
            return;
        };
        let Repr::Sym(p) = d.r() else {
            return;
        };
        let mut free: Vec<Arc<str>> = Vec::new();
        for (m, _) in &p.terms {
            for (a, _) in &m.0 {
                match a {
                    Atom::Sym(name) => {
                        if !free.contains(name) {
                            free.push(name.clone());
                        }
                    }
                    _ => return,
                }
            }
        }
        let key = |s: &Arc<str>| (self.symbol_hint(s).unwrap_or(i64::MAX), s.clone());
        let Some(s) = free.iter().max_by_key(|s| key(s)).cloned() else {
            return;
        };
        let atom = Atom::Sym(s.clone());
        let mut coef = None;
        let mut rest = Vec::new();
        for (m, k) in &p.terms {
            if m.as_atom() == Some(&atom) {
                coef = Some(*k);
            } else if m.contains(&atom) {
                return;
            } else {
                rest.push((m.clone(), *k));
            }
        }
        let Some(c) = coef else {
            return;
        };
        let mut solution = Vec::with_capacity(rest.len());
        for (m, k) in rest {
            if k.checked_rem(c) != Some(0) {
                return;
            }
            let Some(q) = k.checked_div(c).and_then(i64::checked_neg) else {
                return;
            };
            solution.push((m, q));
        }
        self.set_replacement(s, from_sorted(solution));
    }

    fn set_replacement(&mut self, s: Arc<str>, e: SymInt) {
        if self.replacement(&s).is_some() {
            return;
        }
        let f = |name: &str| (name == &*s).then(|| e.clone());
        for (_, v) in self.replacements.iter_mut() {
            if let Ok(nv) = v.substitute(&f) {
                *v = nv;
            }
        }
        self.replacements.push((s.clone(), e.clone()));
        // The range of `s` constrains the symbols of `e`.
        let (lo, hi) = self.symbol_range(&s);
        if let Ok(d) = e.sub(&SymInt::int(lo)) {
            self.refine_nonneg(&d);
        }
        if let Some(hi) = hi {
            if let Ok(d) = SymInt::int(hi).sub(&e) {
                self.refine_nonneg(&d);
            }
        }
    }

    /// Given the fact `d >= 0`: when `d` is `c*s + k` for one symbol `s`,
    /// narrows the range of `s` (a range of one value specialises it).
    fn refine_nonneg(&mut self, d: &SymInt) {
        let Some((s, c, k)) = self.linear_in_one_symbol(d) else {
            return;
        };
        let Some(info) = self.symbols.iter_mut().find(|x| x.name == s) else {
            return;
        };
        if c > 0 {
            let bound = ceil_div_128(-k, c);
            if bound > i128::from(info.lo) {
                info.lo = i64::try_from(bound).unwrap_or(i64::MAX);
            }
        } else {
            let bound = floor_div_128(k, -c);
            if info.hi.is_none_or(|hi| bound < i128::from(hi)) {
                info.hi = Some(i64::try_from(bound).unwrap_or(i64::MIN));
            }
        }
        if info.hi == Some(info.lo) {
            let v = SymInt::int(info.lo);
            self.set_replacement(s, v);
        }
    }
}
