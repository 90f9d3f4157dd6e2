//! Symbolic sizes: the integers PyTorch's dynamic shapes compute with (SymInts).
//!
//! A [`SymInt`] is either a concrete `i64` (the fast path: no allocation) or a
//! polynomial with integer coefficients over *atoms*: named symbols (`n`), and
//! floor divisions / moduli that did not simplify (`(n//2)`, `(n % 3)`), kept
//! as opaque terms. Values are kept in a canonical form (sorted terms, merged
//! monomials, no zero coefficients, constant polynomials collapsed to plain
//! integers), so equal polynomials are equal structurally and `==`, `Hash`
//! work on the expression. All arithmetic is checked: an `i64` overflow is
//! [`SymError::Overflow`], never a silent wrap.
//!
//! Printing ([`std::fmt::Display`]) gives a Python expression in sympy's
//! style (`4*n`, `m*n + 1`, `n - 1`, `(n//2)`, `n**2`) that the conformance
//! checker evaluates with Python semantics (`//` floors, `%` takes the sign of
//! the divisor).
//!
//! The facts about the symbols of one function (each symbol is a size >= 2,
//! its hint, the guards PyTorch would install) live in [`ShapeEnv`], which
//! decides comparisons ([`Truth`]): `Proven` when the relation holds for every
//! assignment allowed by the known ranges, `Assumed` when only the hints decide
//! it (PyTorch would install a guard; [`ShapeEnv::guard`] records it and, like
//! PyTorch, specialises symbols on equalities it can solve).

use std::borrow::Cow;
use std::cmp::Ordering;
use std::collections::BTreeSet;
use std::fmt;
use std::num::NonZeroUsize;
use std::sync::Arc;

mod env;

pub use env::{Assumption, Rel, ShapeEnv, Truth, SYMBOL_HINTS};

/// Why a size computation failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SymError {
    /// A value (or a coefficient of a symbolic value) does not fit an `i64`.
    Overflow,
    /// Floor division or modulo by zero.
    DivisionByZero,
}

impl fmt::Display for SymError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SymError::Overflow => write!(f, "integer overflow in a size computation"),
            SymError::DivisionByZero => write!(f, "division by zero in a size computation"),
        }
    }
}

impl std::error::Error for SymError {}

/// An integer size: a concrete `i64`, or a canonical polynomial over symbols
/// and opaque `//` / `%` atoms. One word: an integer of 63 bits is stored in
/// place (shifted left, low bit set); anything else is an `Arc` pointer (low
/// bit clear) to a `Heap` value. Cheap to clone, and shapes of them are small
/// (a program of a million statements holds millions of shapes).
pub struct SymInt(NonZeroUsize);

/// A shape or a list of strides. Tensors of up to four dims (almost all of
/// them) keep theirs in place, without an allocation: a program of a million
/// statements makes millions of them.
pub type Dims = smallvec::SmallVec<[SymInt; 4]>;

/// What a `SymInt` is, borrowed: the form every operation matches on.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
enum Repr<'a> {
    Int(i64),
    /// Invariant: at least one non-constant term.
    Sym(&'a Poly),
}

/// The heap side of a `SymInt`.
enum Heap {
    /// An integer that does not fit in 63 bits.
    Big(i64),
    Poly(Poly),
}

const SMALL: std::ops::RangeInclusive<i64> = -(1 << 62)..=(1 << 62) - 1;

impl SymInt {
    fn from_heap(heap: Heap) -> SymInt {
        let pointer = Arc::into_raw(Arc::new(heap)) as usize;
        debug_assert_eq!(pointer & 1, 0, "Arc pointers are aligned");
        SymInt(NonZeroUsize::new(pointer).unwrap_or(NonZeroUsize::MIN))
    }

    fn from_poly(poly: Poly) -> SymInt {
        SymInt::from_heap(Heap::Poly(poly))
    }

    /// The heap value, when the value is not a small integer.
    #[inline]
    fn heap(&self) -> Option<&Heap> {
        let bits = self.0.get();
        // SAFETY: a clear low bit means `bits` came from `Arc::into_raw` of a
        // `Heap`, and this `SymInt` holds one strong count of it.
        (bits & 1 == 0).then(|| unsafe { &*(bits as *const Heap) })
    }

    /// One word for hashing: the bits of an integer stored in place (integers
    /// of 63 bits always are, so equal ones give equal words), else a hash of
    /// the structure. Cheaper than `Hash` for the common case.
    #[inline]
    pub fn hash_word(&self) -> u64 {
        if self.heap().is_none() {
            self.0.get() as u64
        } else {
            use std::hash::{Hash, Hasher};
            let mut h = rustc_hash::FxHasher::default();
            self.hash(&mut h);
            h.finish()
        }
    }

    #[inline]
    fn r(&self) -> Repr<'_> {
        match self.heap() {
            None => Repr::Int((self.0.get() as i64) >> 1),
            Some(Heap::Big(v)) => Repr::Int(*v),
            Some(Heap::Poly(p)) => Repr::Sym(p),
        }
    }
}

impl Clone for SymInt {
    #[inline]
    fn clone(&self) -> SymInt {
        if self.heap().is_some() {
            // SAFETY: as in `heap`: the pointer is a live Arc<Heap>.
            unsafe { Arc::increment_strong_count(self.0.get() as *const Heap) };
        }
        SymInt(self.0)
    }
}

impl Drop for SymInt {
    #[inline]
    fn drop(&mut self) {
        if self.heap().is_some() {
            // SAFETY: as in `heap`; this gives back this value's count.
            unsafe { drop(Arc::from_raw(self.0.get() as *const Heap)) };
        }
    }
}

// SAFETY: a `SymInt` is an integer or an `Arc<Heap>`, and `Heap` is plain
// immutable data (Send and Sync).
unsafe impl Send for SymInt {}
unsafe impl Sync for SymInt {}

impl PartialEq for SymInt {
    #[inline]
    fn eq(&self, other: &SymInt) -> bool {
        self.0 == other.0 || self.r() == other.r()
    }
}

impl Eq for SymInt {}

impl std::hash::Hash for SymInt {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.r().hash(state)
    }
}

/// Terms sorted by descending monomial order (graded lex), monomials distinct,
/// coefficients non-zero.
#[derive(Clone, PartialEq, Eq, Hash)]
struct Poly {
    terms: Vec<Term>,
}

type Term = (Mono, i64);

/// A product of atoms: `(atom, exponent)` sorted by atom, exponents >= 1.
/// The empty product is the constant monomial 1.
#[derive(Clone, PartialEq, Eq, Hash, Default)]
struct Mono(Vec<(Atom, u32)>);

#[derive(Clone, PartialEq, Eq, Hash)]
enum Atom {
    Sym(Arc<str>),
    /// `a // b`, not exact; canonical operands.
    FloorDiv(Arc<(SymInt, SymInt)>),
    /// `a % b`, not known; canonical operands.
    Mod(Arc<(SymInt, SymInt)>),
}

// ------------------------------------------------------------------ orders

impl Ord for Atom {
    fn cmp(&self, other: &Self) -> Ordering {
        match (self, other) {
            (Atom::Sym(a), Atom::Sym(b)) => a.cmp(b),
            (Atom::Sym(_), _) => Ordering::Less,
            (_, Atom::Sym(_)) => Ordering::Greater,
            (Atom::FloorDiv(a), Atom::FloorDiv(b)) | (Atom::Mod(a), Atom::Mod(b)) => {
                structural_cmp(&a.0, &b.0).then_with(|| structural_cmp(&a.1, &b.1))
            }
            (Atom::FloorDiv(_), Atom::Mod(_)) => Ordering::Less,
            (Atom::Mod(_), Atom::FloorDiv(_)) => Ordering::Greater,
        }
    }
}

impl PartialOrd for Atom {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// A total order on expressions (not a numeric one), for sorting atoms.
fn structural_cmp(a: &SymInt, b: &SymInt) -> Ordering {
    match (a.r(), b.r()) {
        (Repr::Int(x), Repr::Int(y)) => x.cmp(&y),
        (Repr::Int(_), Repr::Sym(_)) => Ordering::Less,
        (Repr::Sym(_), Repr::Int(_)) => Ordering::Greater,
        (Repr::Sym(p), Repr::Sym(q)) => {
            for (s, t) in p.terms.iter().zip(q.terms.iter()) {
                let o = mono_cmp(&s.0, &t.0).then(s.1.cmp(&t.1));
                if o != Ordering::Equal {
                    return o;
                }
            }
            p.terms.len().cmp(&q.terms.len())
        }
    }
}

impl Mono {
    fn one() -> Mono {
        Mono(Vec::new())
    }

    fn is_one(&self) -> bool {
        self.0.is_empty()
    }

    fn degree(&self) -> u64 {
        self.0.iter().map(|&(_, e)| u64::from(e)).sum()
    }

    fn single(atom: Atom) -> Mono {
        Mono(vec![(atom, 1)])
    }

    /// The atom when the monomial is exactly one atom to the first power.
    fn as_atom(&self) -> Option<&Atom> {
        match self.0.as_slice() {
            [(a, 1)] => Some(a),
            _ => None,
        }
    }

    fn mul(&self, other: &Mono) -> Result<Mono, SymError> {
        let (a, b) = (&self.0, &other.0);
        let mut out = Vec::with_capacity(a.len() + b.len());
        let (mut i, mut j) = (0, 0);
        while i < a.len() && j < b.len() {
            match a[i].0.cmp(&b[j].0) {
                Ordering::Less => {
                    out.push(a[i].clone());
                    i += 1;
                }
                Ordering::Greater => {
                    out.push(b[j].clone());
                    j += 1;
                }
                Ordering::Equal => {
                    let e = a[i].1.checked_add(b[j].1).ok_or(SymError::Overflow)?;
                    out.push((a[i].0.clone(), e));
                    i += 1;
                    j += 1;
                }
            }
        }
        out.extend_from_slice(&a[i..]);
        out.extend_from_slice(&b[j..]);
        Ok(Mono(out))
    }

    /// `self / other` when `other` divides `self`.
    fn div(&self, other: &Mono) -> Option<Mono> {
        let mut out = Vec::with_capacity(self.0.len());
        let mut j = 0;
        for (atom, e) in &self.0 {
            if j < other.0.len() && other.0[j].0 == *atom {
                let f = other.0[j].1;
                if f > *e {
                    return None;
                }
                if f < *e {
                    out.push((atom.clone(), e - f));
                }
                j += 1;
            } else if j < other.0.len() && other.0[j].0 < *atom {
                return None;
            } else {
                out.push((atom.clone(), *e));
            }
        }
        if j < other.0.len() {
            return None;
        }
        Some(Mono(out))
    }

    fn contains(&self, atom: &Atom) -> bool {
        self.0.iter().any(|(a, _)| a == atom)
    }
}

/// Graded lexicographic monomial order (a well-order compatible with
/// multiplication, as the division algorithm needs).
fn mono_cmp(a: &Mono, b: &Mono) -> Ordering {
    a.degree().cmp(&b.degree()).then_with(|| {
        for i in 0.. {
            match (a.0.get(i), b.0.get(i)) {
                (Some((x, e)), Some((y, f))) => match x.cmp(y) {
                    Ordering::Equal => match e.cmp(f) {
                        Ordering::Equal => continue,
                        o => return o,
                    },
                    // `a` has the smaller (more significant) atom, `b` lacks it.
                    Ordering::Less => return Ordering::Greater,
                    Ordering::Greater => return Ordering::Less,
                },
                (Some(_), None) => return Ordering::Greater,
                (None, Some(_)) => return Ordering::Less,
                (None, None) => return Ordering::Equal,
            }
        }
        Ordering::Equal
    })
}

// ------------------------------------------------------------------ term lists

fn terms_of(x: &SymInt) -> Cow<'_, [Term]> {
    match x.r() {
        Repr::Int(0) => Cow::Borrowed(&[]),
        Repr::Int(c) => Cow::Owned(vec![(Mono::one(), c)]),
        Repr::Sym(p) => Cow::Borrowed(&p.terms),
    }
}

/// Builds a value from terms already sorted (descending) with distinct
/// monomials; drops zero coefficients.
fn from_sorted(mut terms: Vec<Term>) -> SymInt {
    terms.retain(|t| t.1 != 0);
    match terms.as_slice() {
        [] => SymInt::int(0),
        [(m, c)] if m.is_one() => SymInt::int(*c),
        _ => SymInt::from_poly(Poly { terms }),
    }
}

/// Builds a value from arbitrary terms: sorts, merges equal monomials.
fn from_terms(mut terms: Vec<Term>) -> Result<SymInt, SymError> {
    terms.sort_by(|a, b| mono_cmp(&b.0, &a.0));
    let mut out: Vec<Term> = Vec::with_capacity(terms.len());
    for (m, c) in terms {
        match out.last_mut() {
            Some(last) if last.0 == m => {
                last.1 = last.1.checked_add(c).ok_or(SymError::Overflow)?;
            }
            _ => out.push((m, c)),
        }
    }
    Ok(from_sorted(out))
}

fn add_terms(a: &[Term], b: &[Term]) -> Result<Vec<Term>, SymError> {
    let mut out = Vec::with_capacity(a.len() + b.len());
    let (mut i, mut j) = (0, 0);
    while i < a.len() && j < b.len() {
        match mono_cmp(&a[i].0, &b[j].0) {
            Ordering::Greater => {
                out.push(a[i].clone());
                i += 1;
            }
            Ordering::Less => {
                out.push(b[j].clone());
                j += 1;
            }
            Ordering::Equal => {
                let c = a[i].1.checked_add(b[j].1).ok_or(SymError::Overflow)?;
                if c != 0 {
                    out.push((a[i].0.clone(), c));
                }
                i += 1;
                j += 1;
            }
        }
    }
    out.extend_from_slice(&a[i..]);
    out.extend_from_slice(&b[j..]);
    Ok(out)
}

fn scale_terms(a: &[Term], k: i64) -> Result<Vec<Term>, SymError> {
    a.iter()
        .map(|(m, c)| Ok((m.clone(), c.checked_mul(k).ok_or(SymError::Overflow)?)))
        .collect()
}

fn mul_terms(a: &[Term], b: &[Term]) -> Result<SymInt, SymError> {
    let mut out = Vec::with_capacity(a.len() * b.len());
    for (m, c) in a {
        for (n, d) in b {
            out.push((m.mul(n)?, c.checked_mul(*d).ok_or(SymError::Overflow)?));
        }
    }
    from_terms(out)
}

fn gcd(mut a: i64, mut b: i64) -> i64 {
    a = a.abs();
    b = b.abs();
    while b != 0 {
        let t = a % b;
        a = b;
        b = t;
    }
    a
}

/// Python's `a // b` (b != 0); None on overflow.
pub(crate) fn py_floordiv(a: i64, b: i64) -> Option<i64> {
    let q = a.checked_div(b)?;
    if a % b != 0 && ((a < 0) != (b < 0)) {
        q.checked_sub(1)
    } else {
        Some(q)
    }
}

/// Python's `a % b` (b != 0).
pub(crate) fn py_mod(a: i64, b: i64) -> i64 {
    if b == -1 {
        return 0;
    }
    let r = a % b;
    if r != 0 && ((r < 0) != (b < 0)) {
        r + b
    } else {
        r
    }
}

fn py_floordiv_128(a: i128, b: i128) -> Option<i128> {
    let q = a.checked_div(b)?;
    if a % b != 0 && ((a < 0) != (b < 0)) {
        q.checked_sub(1)
    } else {
        Some(q)
    }
}

fn py_mod_128(a: i128, b: i128) -> Option<i128> {
    if b == 0 {
        return None;
    }
    if b == -1 {
        return Some(0);
    }
    let r = a % b;
    Some(if r != 0 && ((r < 0) != (b < 0)) {
        r + b
    } else {
        r
    })
}

/// Multivariate division by `b` (leading coefficient > 0): `a = q*b + r`
/// where no term of `r` is divisible by the leading term of `b`. None when a
/// coefficient overflows or the loop runs away.
fn divide(a: &[Term], b: &[Term]) -> Option<(SymInt, SymInt)> {
    let (lm, lc) = b.first()?;
    let mut p = a.to_vec();
    let mut q = Vec::new();
    let mut r = Vec::new();
    let mut steps = 0;
    while let Some((m, k)) = p.first().cloned() {
        steps += 1;
        if steps > 10_000 {
            return None;
        }
        match m.div(lm) {
            Some(md) if k.checked_rem(*lc) == Some(0) => {
                let t = (md, k.checked_div(*lc)?);
                let tb = mul_terms(std::slice::from_ref(&t), b).ok()?;
                let neg = tb.neg().ok()?;
                p = add_terms(&p, &terms_of(&neg)).ok()?;
                q.push(t);
            }
            _ => {
                r.push((m, k));
                p.remove(0);
            }
        }
    }
    Some((from_terms(q).ok()?, from_terms(r).ok()?))
}

// ------------------------------------------------------------------ SymInt

impl SymInt {
    /// A concrete integer.
    #[inline]
    pub fn int(v: i64) -> SymInt {
        if SMALL.contains(&v) {
            let bits = ((v << 1) | 1) as usize;
            SymInt(NonZeroUsize::new(bits).unwrap_or(NonZeroUsize::MIN))
        } else {
            SymInt::from_heap(Heap::Big(v))
        }
    }

    /// The symbol `name` (which should be a Python identifier).
    pub fn symbol(name: &str) -> SymInt {
        SymInt::atom(Atom::Sym(Arc::from(name)))
    }

    fn atom(a: Atom) -> SymInt {
        SymInt::from_poly(Poly {
            terms: vec![(Mono::single(a), 1)],
        })
    }

    /// The value when concrete.
    #[inline]
    pub fn as_int(&self) -> Option<i64> {
        match self.r() {
            Repr::Int(v) => Some(v),
            Repr::Sym(_) => None,
        }
    }

    /// True when the value depends on a symbol.
    #[inline]
    pub fn is_symbolic(&self) -> bool {
        matches!(self.r(), Repr::Sym(_))
    }

    /// True when the value is the concrete `0`.
    #[inline]
    pub fn is_zero(&self) -> bool {
        matches!(self.r(), Repr::Int(0))
    }

    /// The symbol's name when the value is exactly one symbol.
    pub fn as_symbol(&self) -> Option<&str> {
        match self.r() {
            Repr::Sym(p) => match p.terms.as_slice() {
                [(m, 1)] => match m.as_atom() {
                    Some(Atom::Sym(name)) => Some(name),
                    _ => None,
                },
                _ => None,
            },
            Repr::Int(_) => None,
        }
    }

    /// `self + o`.
    #[inline]
    pub fn add(&self, o: &SymInt) -> Result<SymInt, SymError> {
        if let (Repr::Int(a), Repr::Int(b)) = (self.r(), o.r()) {
            return a.checked_add(b).map(SymInt::int).ok_or(SymError::Overflow);
        }
        self.add_slow(o)
    }

    fn add_slow(&self, o: &SymInt) -> Result<SymInt, SymError> {
        if o.is_zero() {
            return Ok(self.clone());
        }
        if self.is_zero() {
            return Ok(o.clone());
        }
        Ok(from_sorted(add_terms(&terms_of(self), &terms_of(o))?))
    }

    /// `self - o`.
    #[inline]
    pub fn sub(&self, o: &SymInt) -> Result<SymInt, SymError> {
        if let (Repr::Int(a), Repr::Int(b)) = (self.r(), o.r()) {
            return a.checked_sub(b).map(SymInt::int).ok_or(SymError::Overflow);
        }
        self.add_slow(&o.neg()?)
    }

    /// `self * o`.
    #[inline]
    pub fn mul(&self, o: &SymInt) -> Result<SymInt, SymError> {
        if let (Repr::Int(a), Repr::Int(b)) = (self.r(), o.r()) {
            return a.checked_mul(b).map(SymInt::int).ok_or(SymError::Overflow);
        }
        self.mul_slow(o)
    }

    fn mul_slow(&self, o: &SymInt) -> Result<SymInt, SymError> {
        match (self.r(), o.r()) {
            (Repr::Int(0), _) | (_, Repr::Int(0)) => Ok(SymInt::int(0)),
            (Repr::Int(1), _) => Ok(o.clone()),
            (_, Repr::Int(1)) => Ok(self.clone()),
            (Repr::Int(k), Repr::Sym(p)) | (Repr::Sym(p), Repr::Int(k)) => {
                Ok(from_sorted(scale_terms(&p.terms, k)?))
            }
            (Repr::Sym(p), Repr::Sym(q)) => mul_terms(&p.terms, &q.terms),
            (Repr::Int(_), Repr::Int(_)) => unreachable!("fast path"),
        }
    }

    /// `-self`.
    #[inline]
    pub fn neg(&self) -> Result<SymInt, SymError> {
        match self.r() {
            Repr::Int(a) => a.checked_neg().map(SymInt::int).ok_or(SymError::Overflow),
            Repr::Sym(p) => Ok(from_sorted(scale_terms(&p.terms, -1)?)),
        }
    }

    /// `self ** e`.
    pub fn pow(&self, e: u32) -> Result<SymInt, SymError> {
        if let Repr::Int(a) = self.r() {
            return a.checked_pow(e).map(SymInt::int).ok_or(SymError::Overflow);
        }
        let mut result = SymInt::int(1);
        let mut base = self.clone();
        let mut e = e;
        while e > 0 {
            if e & 1 == 1 {
                result = result.mul(&base)?;
            }
            e >>= 1;
            if e > 0 {
                base = base.mul(&base)?;
            }
        }
        Ok(result)
    }

    /// Python's `self // o`. Exact divisions simplify (`4*n // 2 = 2*n`,
    /// `m*n // m = n`), parts divisible by the divisor are taken out
    /// (`(2*n + 1) // 2 = n`); what remains is an opaque `(a//b)` atom.
    pub fn floordiv(&self, o: &SymInt) -> Result<SymInt, SymError> {
        if let (Repr::Int(a), Repr::Int(b)) = (self.r(), o.r()) {
            if b == 0 {
                return Err(SymError::DivisionByZero);
            }
            return py_floordiv(a, b).map(SymInt::int).ok_or(SymError::Overflow);
        }
        if o.is_zero() {
            return Err(SymError::DivisionByZero);
        }
        if self.is_zero() {
            return Ok(SymInt::int(0));
        }
        match o.r() {
            Repr::Int(1) => Ok(self.clone()),
            Repr::Int(-1) => self.neg(),
            Repr::Int(c) if c < 0 => match (self.neg(), o.neg()) {
                (Ok(a), Ok(b)) => a.floordiv(&b),
                _ => Ok(SymInt::atom(Atom::FloorDiv(Arc::new((
                    self.clone(),
                    o.clone(),
                ))))),
            },
            Repr::Int(c) => self.floordiv_const(c),
            Repr::Sym(p) => {
                // FloorDiv.eval's first rule for a floor division:
                // `(x // d) // e = x // (d*e)`, before any gcd (so
                // `(x // 2) // (x // 2)` stays `x // (2*(x // 2))`).
                if let Some((x, d)) = self.as_floordiv() {
                    if let Ok(d) = d.mul(o) {
                        return x.floordiv(&d);
                    }
                }
                if p.terms[0].1 < 0 {
                    if let (Ok(a), Ok(b)) = (self.neg(), o.neg()) {
                        return a.floordiv(&b);
                    }
                }
                // (g*a) // (g*b) = a // b: the same rational
                let a_terms = terms_of(self);
                if let Some((g, gm)) = common_factor(&a_terms, &p.terms) {
                    let a = from_sorted(div_terms(&a_terms, g, &gm));
                    let b = from_sorted(div_terms(&p.terms, g, &gm));
                    return a.floordiv(&b);
                }
                let Some((q, r)) = divide(&a_terms, &p.terms) else {
                    return Ok(SymInt::atom(Atom::FloorDiv(Arc::new((
                        self.clone(),
                        o.clone(),
                    )))));
                };
                if r.is_zero() {
                    return Ok(q);
                }
                q.add(&SymInt::atom(Atom::FloorDiv(Arc::new((r, o.clone())))))
            }
        }
    }

    /// `(x, d)` when `self` is exactly the floor division `x // d`.
    fn as_floordiv(&self) -> Option<(&SymInt, &SymInt)> {
        let Repr::Sym(p) = self.r() else {
            return None;
        };
        match p.terms.as_slice() {
            [(m, 1)] => match m.as_atom() {
                Some(Atom::FloorDiv(ab)) => Some((&ab.0, &ab.1)),
                _ => None,
            },
            _ => None,
        }
    }

    /// `self // c` for symbolic `self` and `c >= 2`.
    fn floordiv_const(&self, c: i64) -> Result<SymInt, SymError> {
        let (q, r, g) = split_const(self, c);
        let q = from_sorted(q);
        if r.is_empty() || (r.len() == 1 && r[0].0.is_one()) {
            // The remainder is a constant in [0, c): its floor division is 0.
            return Ok(q);
        }
        let r = from_sorted(divide_coefficients(r, g));
        // g divides c and the coefficients of r, which are in (0, c): c / g >= 2.
        let c = c / g;
        // (x // d) // c = x // (d*c)
        if let Some((x, d)) = r.as_floordiv() {
            if let Some(dc) = d.as_int().filter(|&d| d > 0).and_then(|d| d.checked_mul(c)) {
                return q.add(&x.floordiv(&SymInt::int(dc))?);
            }
        }
        q.add(&SymInt::atom(Atom::FloorDiv(Arc::new((r, SymInt::int(c))))))
    }

    /// Python's `self % o`. Known remainders simplify (`(4*n) % 2 = 0`,
    /// `(2*n + 3) % 2 = 1`, `(m*n) % n = 0`); what remains is an opaque
    /// `(a % b)` atom.
    pub fn modulo(&self, o: &SymInt) -> Result<SymInt, SymError> {
        if let (Repr::Int(a), Repr::Int(b)) = (self.r(), o.r()) {
            if b == 0 {
                return Err(SymError::DivisionByZero);
            }
            return Ok(SymInt::int(py_mod(a, b)));
        }
        if o.is_zero() {
            return Err(SymError::DivisionByZero);
        }
        if self.is_zero() {
            return Ok(SymInt::int(0));
        }
        match o.r() {
            Repr::Int(1) | Repr::Int(-1) => Ok(SymInt::int(0)),
            Repr::Int(c) if c < 0 => match (self.neg(), o.neg()) {
                (Ok(a), Ok(b)) => a.modulo(&b)?.neg(),
                _ => Ok(SymInt::atom(Atom::Mod(Arc::new((self.clone(), o.clone()))))),
            },
            Repr::Int(c) => self.modulo_const(c),
            Repr::Sym(p) => {
                if p.terms[0].1 < 0 {
                    if let (Ok(a), Ok(b)) = (self.neg(), o.neg()) {
                        return a.modulo(&b)?.neg();
                    }
                }
                // (g*a) % (g*b) = g * (a % b)
                let a_terms = terms_of(self);
                if let Some((g, gm)) = common_factor(&a_terms, &p.terms) {
                    let a = from_sorted(div_terms(&a_terms, g, &gm));
                    let b = from_sorted(div_terms(&p.terms, g, &gm));
                    return a.modulo(&b)?.mul(&from_sorted(vec![(gm, g)]));
                }
                let Some((_, r)) = divide(&a_terms, &p.terms) else {
                    return Ok(SymInt::atom(Atom::Mod(Arc::new((self.clone(), o.clone())))));
                };
                if r.is_zero() {
                    return Ok(r);
                }
                // (x % b) % b = x % b
                if let Repr::Sym(rp) = r.r() {
                    if let [(m, 1)] = rp.terms.as_slice() {
                        if let Some(Atom::Mod(inner)) = m.as_atom() {
                            if inner.1 == *o {
                                return Ok(r);
                            }
                        }
                    }
                }
                Ok(SymInt::atom(Atom::Mod(Arc::new((r, o.clone())))))
            }
        }
    }

    /// `self % c` for symbolic `self` and `c >= 2`.
    fn modulo_const(&self, c: i64) -> Result<SymInt, SymError> {
        let (_, r, g) = split_const(self, c);
        if r.is_empty() {
            return Ok(SymInt::int(0));
        }
        if r.len() == 1 && r[0].0.is_one() {
            return Ok(SymInt::int(r[0].1));
        }
        // (g*x) % (g*c') = g * (x % c')
        let x = from_sorted(divide_coefficients(r, g));
        let c = c / g;
        let inner = match x.r() {
            // (y % d) % c = y % c when c divides d
            Repr::Sym(p) => match p.terms.as_slice() {
                [(m, 1)] => match m.as_atom() {
                    Some(Atom::Mod(inner)) => match inner.1.as_int() {
                        Some(d) if d > 0 && d % c == 0 => Some(inner.0.modulo(&SymInt::int(c))?),
                        _ => None,
                    },
                    _ => None,
                },
                _ => None,
            },
            Repr::Int(_) => None,
        };
        let inner = match inner {
            Some(v) => v,
            None => SymInt::atom(Atom::Mod(Arc::new((x, SymInt::int(c))))),
        };
        inner.mul(&SymInt::int(g))
    }

    /// The symbols the value depends on, sorted and deduplicated.
    pub fn symbols(&self) -> Vec<String> {
        let mut set = BTreeSet::new();
        self.collect_symbols(&mut set);
        set.into_iter().collect()
    }

    fn collect_symbols(&self, set: &mut BTreeSet<String>) {
        if let Repr::Sym(p) = self.r() {
            for (m, _) in &p.terms {
                for (a, _) in &m.0 {
                    match a {
                        Atom::Sym(name) => {
                            if !set.contains(&**name) {
                                set.insert(name.to_string());
                            }
                        }
                        Atom::FloorDiv(ab) | Atom::Mod(ab) => {
                            ab.0.collect_symbols(set);
                            ab.1.collect_symbols(set);
                        }
                    }
                }
            }
        }
    }

    /// True when the value has a floor division (at any depth).
    pub fn has_floordiv(&self) -> bool {
        match self.r() {
            Repr::Int(_) => false,
            Repr::Sym(p) => p.terms.iter().any(|(m, _)| {
                m.0.iter().any(|(a, _)| match a {
                    Atom::Sym(_) => false,
                    Atom::FloorDiv(_) => true,
                    Atom::Mod(ab) => ab.0.has_floordiv() || ab.1.has_floordiv(),
                })
            }),
        }
    }

    /// True when the symbol `name` occurs in the value.
    pub fn has_symbol(&self, name: &str) -> bool {
        match self.r() {
            Repr::Int(_) => false,
            Repr::Sym(p) => p.terms.iter().any(|(m, _)| {
                m.0.iter().any(|(a, _)| match a {
                    Atom::Sym(s) => &**s == name,
                    Atom::FloorDiv(ab) | Atom::Mod(ab) => {
                        ab.0.has_symbol(name) || ab.1.has_symbol(name)
                    }
                })
            }),
        }
    }

    /// The value under an assignment of the symbols; None when a symbol is
    /// unassigned, a division is by zero, or the value overflows an `i64`.
    pub fn eval(&self, env: &dyn Fn(&str) -> Option<i64>) -> Option<i64> {
        match self.r() {
            Repr::Int(v) => Some(v),
            Repr::Sym(_) => i64::try_from(self.eval_wide(env)?).ok(),
        }
    }

    /// `eval` in `i128` (intermediate values may exceed `i64`).
    pub(crate) fn eval_wide(&self, env: &dyn Fn(&str) -> Option<i64>) -> Option<i128> {
        match self.r() {
            Repr::Int(v) => Some(i128::from(v)),
            Repr::Sym(p) => {
                let mut total: i128 = 0;
                for (m, c) in &p.terms {
                    let mut t = i128::from(*c);
                    for (a, e) in &m.0 {
                        let v = match a {
                            Atom::Sym(name) => i128::from(env(name)?),
                            Atom::FloorDiv(ab) => {
                                py_floordiv_128(ab.0.eval_wide(env)?, ab.1.eval_wide(env)?)?
                            }
                            Atom::Mod(ab) => {
                                py_mod_128(ab.0.eval_wide(env)?, ab.1.eval_wide(env)?)?
                            }
                        };
                        t = t.checked_mul(v.checked_pow(*e)?)?;
                    }
                    total = total.checked_add(t)?;
                }
                Some(total)
            }
        }
    }

    /// Replaces symbols: `f(name)` gives the new value of a symbol, None keeps
    /// it. The result is canonical (divisions re-simplify).
    pub fn substitute(&self, f: &dyn Fn(&str) -> Option<SymInt>) -> Result<SymInt, SymError> {
        let Repr::Sym(p) = self.r() else {
            return Ok(self.clone());
        };
        let mut total = SymInt::int(0);
        for (m, c) in &p.terms {
            let mut t = SymInt::int(*c);
            for (a, e) in &m.0 {
                let v = match a {
                    Atom::Sym(name) => match f(name) {
                        Some(v) => v,
                        None => SymInt::atom(a.clone()),
                    },
                    Atom::FloorDiv(ab) => ab.0.substitute(f)?.floordiv(&ab.1.substitute(f)?)?,
                    Atom::Mod(ab) => ab.0.substitute(f)?.modulo(&ab.1.substitute(f)?)?,
                };
                t = t.mul(&v.pow(*e)?)?;
            }
            total = total.add(&t)?;
        }
        Ok(total)
    }
}

/// Splits the coefficients of `x` by `c > 0`: `x = c*q + r` with the
/// coefficients of `r` in `[0, c)`; also the gcd of `c` and `r`'s coefficients.
fn split_const(x: &SymInt, c: i64) -> (Vec<Term>, Vec<Term>, i64) {
    let terms = terms_of(x);
    let mut q = Vec::with_capacity(terms.len());
    let mut r = Vec::with_capacity(terms.len());
    let mut g = c;
    for (m, k) in terms.iter().cloned() {
        let (d, rem) = (k.div_euclid(c), k.rem_euclid(c));
        if rem != 0 {
            g = gcd(g, rem);
            r.push((m.clone(), rem));
        }
        if d != 0 {
            q.push((m, d));
        }
    }
    (q, r, g)
}

/// The common factor of all terms of `a` and `b` (a positive integer and a
/// monomial), when it is not 1.
fn common_factor(a: &[Term], b: &[Term]) -> Option<(i64, Mono)> {
    let mut all = a.iter().chain(b.iter());
    let (m0, c0) = all.next()?;
    let mut g = c0.unsigned_abs();
    let mut mono = m0.0.clone();
    for (m, c) in all {
        let (mut x, mut y) = (g, c.unsigned_abs());
        while y != 0 {
            (x, y) = (y, x % y);
        }
        g = x;
        mono.retain_mut(|(atom, e)| match m.0.iter().find(|(b, _)| b == atom) {
            Some((_, f)) => {
                *e = (*e).min(*f);
                true
            }
            None => false,
        });
        if g == 1 && mono.is_empty() {
            return None;
        }
    }
    if g == 1 && mono.is_empty() {
        return None;
    }
    Some((i64::try_from(g).ok()?, Mono(mono)))
}

/// Divides every term by the common factor `g * gm` (order is kept: the
/// monomial order is compatible with multiplication).
fn div_terms(terms: &[Term], g: i64, gm: &Mono) -> Vec<Term> {
    terms
        .iter()
        .map(|(m, c)| (m.div(gm).expect("common factor"), c / g))
        .collect()
}

fn divide_coefficients(mut terms: Vec<Term>, g: i64) -> Vec<Term> {
    if g != 1 {
        for t in &mut terms {
            t.1 /= g;
        }
    }
    terms
}

impl Default for SymInt {
    fn default() -> Self {
        SymInt::int(0)
    }
}

impl From<i64> for SymInt {
    fn from(v: i64) -> Self {
        SymInt::int(v)
    }
}

impl fmt::Debug for SymInt {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "SymInt({self})")
    }
}

impl fmt::Display for SymInt {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.r() {
            Repr::Int(v) => write!(f, "{v}"),
            Repr::Sym(p) => {
                for (i, (m, c)) in p.terms.iter().enumerate() {
                    let mag = c.unsigned_abs();
                    if i == 0 {
                        if *c < 0 {
                            f.write_str("-")?;
                        }
                    } else if *c < 0 {
                        f.write_str(" - ")?;
                    } else {
                        f.write_str(" + ")?;
                    }
                    if m.is_one() {
                        write!(f, "{mag}")?;
                        continue;
                    }
                    if mag != 1 {
                        write!(f, "{mag}*")?;
                    }
                    for (j, (a, e)) in m.0.iter().enumerate() {
                        if j > 0 {
                            f.write_str("*")?;
                        }
                        fmt_atom(a, f)?;
                        if *e > 1 {
                            write!(f, "**{e}")?;
                        }
                    }
                }
                Ok(())
            }
        }
    }
}

fn fmt_atom(a: &Atom, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    match a {
        Atom::Sym(name) => f.write_str(name),
        Atom::FloorDiv(ab) => {
            f.write_str("(")?;
            fmt_operand(&ab.0, f)?;
            f.write_str("//")?;
            fmt_operand(&ab.1, f)?;
            f.write_str(")")
        }
        // As PyTorch's sympy prints the `Mod` of a size by a positive int
        // (`_sympy_mod`): `Mod(n, 3)`, `Mod(2*n + 3, 4)`.
        Atom::Mod(ab) => write!(f, "Mod({}, {})", ab.0, ab.1),
    }
}

/// An operand of `//` goes bare only when it is a non-negative integer
/// or a lone atom: `(n//2)`, `((m*n)//5)`, `((n + 1)//2)`, `(n//(2*m))`.
fn fmt_operand(x: &SymInt, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    let bare = match x.r() {
        Repr::Int(v) => v >= 0,
        Repr::Sym(p) => matches!(p.terms.as_slice(), [(m, 1)] if m.as_atom().is_some()),
    };
    if bare {
        write!(f, "{x}")
    } else {
        write!(f, "({x})")
    }
}

/// The sum of `items` (0 when empty).
pub fn sum(items: &[SymInt]) -> Result<SymInt, SymError> {
    let mut acc = SymInt::int(0);
    for x in items {
        acc = acc.add(x)?;
    }
    Ok(acc)
}

/// The product of `items` (1 when empty).
pub fn prod(items: &[SymInt]) -> Result<SymInt, SymError> {
    let mut acc = SymInt::int(1);
    for x in items {
        acc = acc.mul(x)?;
    }
    Ok(acc)
}

#[cfg(test)]
mod tests;
