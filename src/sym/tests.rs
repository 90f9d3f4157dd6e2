//! Unit tests of symbolic sizes and the shape environment.

use super::*;
use std::collections::HashMap;

fn i(v: i64) -> SymInt {
    SymInt::int(v)
}

fn s(name: &str) -> SymInt {
    SymInt::symbol(name)
}

fn add(a: &SymInt, b: &SymInt) -> SymInt {
    a.add(b).unwrap()
}

fn sub(a: &SymInt, b: &SymInt) -> SymInt {
    a.sub(b).unwrap()
}

fn mul(a: &SymInt, b: &SymInt) -> SymInt {
    a.mul(b).unwrap()
}

fn fdiv(a: &SymInt, b: &SymInt) -> SymInt {
    a.floordiv(b).unwrap()
}

fn rem(a: &SymInt, b: &SymInt) -> SymInt {
    a.modulo(b).unwrap()
}

fn env2() -> (ShapeEnv, SymInt, SymInt) {
    let mut env = ShapeEnv::default();
    let n = env.declare("n");
    let m = env.declare("m");
    (env, n, m)
}

// ------------------------------------------------------------------ a tiny Python

/// Evaluates a printed expression with Python's grammar and semantics
/// (checks that `Display` is parseable and means what it should).
fn py_eval(src: &str, vars: &HashMap<&str, i64>) -> Option<i128> {
    assert!(
        src.chars()
            .all(|c| c.is_ascii_alphanumeric() || "_+-*/%(), ".contains(c)),
        "charset: {src}"
    );
    let toks = tokenize(src);
    let mut pos = 0;
    let v = py_expr(&toks, &mut pos, vars)?;
    assert_eq!(pos, toks.len(), "trailing input in {src}");
    Some(v)
}

fn tokenize(src: &str) -> Vec<String> {
    let b = src.as_bytes();
    let mut out = Vec::new();
    let mut k = 0;
    while k < b.len() {
        let c = b[k] as char;
        if c == ' ' {
            k += 1;
        } else if c.is_ascii_alphanumeric() || c == '_' {
            let start = k;
            while k < b.len() && ((b[k] as char).is_ascii_alphanumeric() || b[k] == b'_') {
                k += 1;
            }
            out.push(src[start..k].to_string());
        } else if (c == '/' || c == '*') && k + 1 < b.len() && b[k + 1] as char == c {
            out.push(src[k..k + 2].to_string());
            k += 2;
        } else {
            out.push(c.to_string());
            k += 1;
        }
    }
    out
}

fn py_expr(t: &[String], p: &mut usize, vars: &HashMap<&str, i64>) -> Option<i128> {
    let mut v = py_term(t, p, vars)?;
    while *p < t.len() && (t[*p] == "+" || t[*p] == "-") {
        let op = t[*p].clone();
        *p += 1;
        let r = py_term(t, p, vars)?;
        v = if op == "+" {
            v.checked_add(r)?
        } else {
            v.checked_sub(r)?
        };
    }
    Some(v)
}

fn py_term(t: &[String], p: &mut usize, vars: &HashMap<&str, i64>) -> Option<i128> {
    let mut v = py_unary(t, p, vars)?;
    while *p < t.len() && (t[*p] == "*" || t[*p] == "//" || t[*p] == "%") {
        let op = t[*p].clone();
        *p += 1;
        let r = py_unary(t, p, vars)?;
        v = match op.as_str() {
            "*" => v.checked_mul(r)?,
            "//" => super::py_floordiv_128(v, r)?,
            _ => super::py_mod_128(v, r)?,
        };
    }
    Some(v)
}

fn py_unary(t: &[String], p: &mut usize, vars: &HashMap<&str, i64>) -> Option<i128> {
    if t[*p] == "-" {
        *p += 1;
        return py_unary(t, p, vars)?.checked_neg();
    }
    let base = py_atom(t, p, vars)?;
    if *p < t.len() && t[*p] == "**" {
        *p += 1;
        let e = py_unary(t, p, vars)?;
        return base.checked_pow(u32::try_from(e).ok()?);
    }
    Some(base)
}

fn py_atom(t: &[String], p: &mut usize, vars: &HashMap<&str, i64>) -> Option<i128> {
    let tok = t[*p].clone();
    *p += 1;
    if tok == "(" {
        let v = py_expr(t, p, vars)?;
        assert_eq!(t[*p], ")");
        *p += 1;
        return Some(v);
    }
    if tok == "Mod" {
        // sympy's `Mod(a, b)`, as PyTorch prints a size's remainder.
        assert_eq!(t[*p], "(");
        *p += 1;
        let a = py_expr(t, p, vars)?;
        assert_eq!(t[*p], ",");
        *p += 1;
        let b = py_expr(t, p, vars)?;
        assert_eq!(t[*p], ")");
        *p += 1;
        return super::py_mod_128(a, b);
    }
    if let Ok(v) = tok.parse::<i128>() {
        return Some(v);
    }
    Some(i128::from(*vars.get(tok.as_str()).expect("unknown name")))
}

// ------------------------------------------------------------------ basics

#[test]
fn concrete_values_are_a_cheap_inline_variant() {
    assert_eq!(std::mem::size_of::<SymInt>(), 8);
    assert_eq!(std::mem::size_of::<Option<SymInt>>(), 8);
    let a = i(6);
    assert_eq!(a.as_int(), Some(6));
    assert!(!a.is_symbolic());
    assert_eq!(SymInt::from(6), a);
    assert_eq!(SymInt::default(), i(0));
    assert_eq!(add(&i(2), &i(3)), i(5));
    assert_eq!(sub(&i(2), &i(3)), i(-1));
    assert_eq!(mul(&i(4), &i(-3)), i(-12));
    assert_eq!(i(3).pow(4).unwrap(), i(81));
    assert_eq!(i(7).neg().unwrap(), i(-7));
    fn send_sync<T: Send + Sync>() {}
    send_sync::<SymInt>();
    send_sync::<ShapeEnv>();
}

#[test]
fn symbols_and_queries() {
    let n = s("n");
    assert!(n.is_symbolic());
    assert_eq!(n.as_int(), None);
    assert_eq!(n.as_symbol(), Some("n"));
    assert_eq!(mul(&n, &i(2)).as_symbol(), None);
    assert_eq!(n.to_string(), "n");
    let e = add(&mul(&s("n"), &s("m")), &fdiv(&s("k"), &i(2)));
    assert_eq!(e.symbols(), vec!["k", "m", "n"]);
    assert!(e.has_symbol("k"));
    assert!(!e.has_symbol("j"));
    assert_eq!(i(3).symbols(), Vec::<String>::new());
    assert_eq!(format!("{:?}", add(&n, &i(1))), "SymInt(n + 1)");
}

// ------------------------------------------------------------------ canonical form

#[test]
fn canonical_form_makes_equal_expressions_equal() {
    let (n, m) = (s("n"), s("m"));
    assert_eq!(add(&n, &m), add(&m, &n));
    assert_eq!(mul(&n, &m), mul(&m, &n));
    // (n + 1)(n - 1) = n**2 - 1
    let lhs = mul(&add(&n, &i(1)), &sub(&n, &i(1)));
    let rhs = sub(&n.pow(2).unwrap(), &i(1));
    assert_eq!(lhs, rhs);
    // n - n collapses to the concrete 0
    assert_eq!(sub(&n, &n), i(0));
    assert!(!sub(&n, &n).is_symbolic());
    assert_eq!(sub(&add(&n, &i(3)), &n), i(3));
    // distributivity and associativity
    let a = mul(&add(&n, &m), &add(&n, &i(2)));
    let b = add(
        &add(&mul(&n, &n), &mul(&m, &n)),
        &add(&mul(&i(2), &n), &mul(&i(2), &m)),
    );
    assert_eq!(a, b);
    assert_eq!(add(&add(&n, &m), &i(1)), add(&n, &add(&m, &i(1))));
    // multiplying by 0 and 1
    assert_eq!(mul(&n, &i(0)), i(0));
    assert_eq!(mul(&i(1), &n), n);
    // hashing agrees with equality
    use std::collections::HashSet;
    let set: HashSet<SymInt> = [lhs, rhs, sub(&mul(&n, &n), &i(1))].into_iter().collect();
    assert_eq!(set.len(), 1);
    // atoms are canonical too
    assert_eq!(fdiv(&add(&n, &m), &i(2)), fdiv(&add(&m, &n), &i(2)));
    assert_eq!(rem(&mul(&n, &m), &i(3)), rem(&mul(&m, &n), &i(3)));
}

#[test]
fn printing_is_python_in_sympy_style() {
    let (n, m) = (s("n"), s("m"));
    let cases: Vec<(SymInt, &str)> = vec![
        (i(42), "42"),
        (i(-3), "-3"),
        (n.clone(), "n"),
        (mul(&i(4), &n), "4*n"),
        (add(&mul(&n, &m), &i(1)), "m*n + 1"),
        (sub(&n, &i(1)), "n - 1"),
        (sub(&i(5), &n), "-n + 5"),
        (n.neg().unwrap(), "-n"),
        (mul(&i(-2), &n), "-2*n"),
        (mul(&mul(&i(2), &n), &m), "2*m*n"),
        (n.pow(2).unwrap(), "n**2"),
        (add(&n.pow(2).unwrap(), &mul(&i(3), &n)), "n**2 + 3*n"),
        (sub(&mul(&n, &m), &n.pow(2).unwrap()), "m*n - n**2"),
        (fdiv(&n, &i(2)), "(n//2)"),
        (fdiv(&add(&n, &i(1)), &i(2)), "((n + 1)//2)"),
        (rem(&n, &i(3)), "Mod(n, 3)"),
        (rem(&add(&mul(&i(2), &n), &i(3)), &i(4)), "Mod(2*n + 3, 4)"),
        (fdiv(&i(10), &n), "(10//n)"),
        (fdiv(&add(&mul(&n, &m), &i(1)), &m), "n + (1//m)"),
        (fdiv(&n, &add(&m, &i(1))), "(n//(m + 1))"),
        (fdiv(&n, &mul(&i(2), &m)), "(n//(2*m))"),
        (mul(&fdiv(&n, &i(2)), &i(3)), "3*(n//2)"),
        (fdiv(&n, &i(2)).pow(2).unwrap(), "(n//2)**2"),
        (mul(&fdiv(&n, &i(2)), &m), "m*(n//2)"),
    ];
    for (v, want) in cases {
        assert_eq!(v.to_string(), want);
    }
}

#[test]
fn printing_order_is_deterministic_graded() {
    let (n, m, k) = (s("n"), s("m"), s("k"));
    // higher degree first, constant last, symbols in name order
    let e = add(
        &add(&add(&i(7), &k), &mul(&n, &m)),
        &add(&mul(&k, &n.pow(2).unwrap()), &n),
    );
    assert_eq!(e.to_string(), "k*n**2 + m*n + k + n + 7");
    let e2 = add(
        &add(&n, &mul(&n, &m)),
        &add(&i(7), &add(&k, &mul(&k, &n.pow(2).unwrap()))),
    );
    assert_eq!(e2.to_string(), e.to_string());
}

// ------------------------------------------------------------------ // and %

#[test]
fn concrete_floordiv_and_mod_follow_python() {
    for (a, b, q, r) in [
        (7, 2, 3, 1),
        (-7, 2, -4, 1),
        (7, -2, -4, -1),
        (-7, -2, 3, -1),
        (6, 3, 2, 0),
        (-6, 3, -2, 0),
        (0, 5, 0, 0),
        (i64::MIN, 1, i64::MIN, 0),
        (i64::MIN, -1, 0, 0),
    ] {
        if !(a == i64::MIN && b == -1) {
            assert_eq!(fdiv(&i(a), &i(b)), i(q), "{a} // {b}");
        }
        assert_eq!(rem(&i(a), &i(b)), i(r), "{a} % {b}");
    }
    assert_eq!(i(i64::MIN).floordiv(&i(-1)), Err(SymError::Overflow));
    assert_eq!(i(1).floordiv(&i(0)), Err(SymError::DivisionByZero));
    assert_eq!(i(1).modulo(&i(0)), Err(SymError::DivisionByZero));
    assert_eq!(s("n").floordiv(&i(0)), Err(SymError::DivisionByZero));
    assert_eq!(s("n").modulo(&i(0)), Err(SymError::DivisionByZero));
}

#[test]
fn exact_floordiv_simplifies() {
    let (n, m) = (s("n"), s("m"));
    assert_eq!(fdiv(&mul(&i(4), &n), &i(2)), mul(&i(2), &n));
    assert_eq!(fdiv(&mul(&n, &m), &m), n);
    assert_eq!(fdiv(&mul(&n, &m), &n), m);
    assert_eq!(fdiv(&n, &n), i(1));
    assert_eq!(fdiv(&mul(&i(4), &n), &mul(&i(2), &n)), i(2));
    assert_eq!(fdiv(&add(&mul(&n, &m), &m), &m), add(&n, &i(1)));
    // (n + 1)(n - 1) // (n - 1) = n + 1
    let nm1 = sub(&n, &i(1));
    assert_eq!(fdiv(&mul(&add(&n, &i(1)), &nm1), &nm1), add(&n, &i(1)));
    // (n**2 + 2*n*m + m**2) // (n + m) = n + m
    let nm = add(&n, &m);
    assert_eq!(fdiv(&mul(&nm, &nm), &nm), nm);
    assert_eq!(fdiv(&n, &i(1)), n);
    assert_eq!(fdiv(&n, &i(-1)), n.neg().unwrap());
    assert_eq!(fdiv(&i(0), &n), i(0));
    // 12*n*m // (6*m) = 2*n
    assert_eq!(
        fdiv(&mul(&i(12), &mul(&n, &m)), &mul(&i(6), &m)),
        mul(&i(2), &n)
    );
}

#[test]
fn inexact_floordiv_takes_out_what_divides() {
    let (n, m) = (s("n"), s("m"));
    // floor((2n + 1) / 2) = n
    assert_eq!(fdiv(&add(&mul(&i(2), &n), &i(1)), &i(2)), n);
    // floor((2n - 1) / 2) = n - 1
    assert_eq!(fdiv(&sub(&mul(&i(2), &n), &i(1)), &i(2)), sub(&n, &i(1)));
    // (2n + 2) // 4 = (n + 1) // 2 (common factor)
    assert_eq!(
        fdiv(&add(&mul(&i(2), &n), &i(2)), &i(4)),
        fdiv(&add(&n, &i(1)), &i(2))
    );
    // (n // 2) // 3 = n // 6
    assert_eq!(fdiv(&fdiv(&n, &i(2)), &i(3)), fdiv(&n, &i(6)));
    // (6n + 3) // 4 = n + (2n + 3) // 4
    assert_eq!(
        fdiv(&add(&mul(&i(6), &n), &i(3)), &i(4)).to_string(),
        "n + ((2*n + 3)//4)"
    );
    // n // -2 = -n // 2
    assert_eq!(fdiv(&n, &i(-2)), fdiv(&n.neg().unwrap(), &i(2)));
    // floor(-n / 2) = -n + floor(n / 2): remainders keep non-negative coefficients
    assert_eq!(fdiv(&n, &i(-2)).to_string(), "-n + (n//2)");
    // (n*m + 1) // m = n + 1 // m
    assert_eq!(
        fdiv(&add(&mul(&n, &m), &i(1)), &m).to_string(),
        "n + (1//m)"
    );
    // a // -m = -a // m
    assert_eq!(fdiv(&n, &m.neg().unwrap()), fdiv(&n.neg().unwrap(), &m));
    // common factors cancel: (g*a) // (g*b) = a // b
    let k = s("k");
    assert_eq!(fdiv(&mul(&n, &m), &mul(&n, &k)), fdiv(&m, &k));
    assert_eq!(
        fdiv(&add(&mul(&m, &n), &n), &mul(&k, &n)).to_string(),
        "((m + 1)//k)"
    );
    assert_eq!(
        fdiv(&add(&mul(&i(4), &n), &i(2)), &mul(&i(2), &m)).to_string(),
        "((2*n + 1)//m)"
    );
    assert_eq!(fdiv(&mul(&i(6), &n), &mul(&i(4), &n)), i(1));
    // m*(n//2) is a monomial over an atom; its // 2 keeps going
    let half = fdiv(&n, &i(2));
    assert_eq!(fdiv(&mul(&i(4), &half), &i(2)), mul(&i(2), &half));
}

#[test]
fn modulo_simplifies_known_remainders() {
    let (n, m) = (s("n"), s("m"));
    assert_eq!(rem(&mul(&i(4), &n), &i(2)), i(0));
    assert_eq!(rem(&add(&mul(&i(2), &n), &i(3)), &i(2)), i(1));
    assert_eq!(rem(&add(&mul(&i(4), &n), &i(-1)), &i(4)), i(3));
    assert_eq!(rem(&mul(&n, &m), &n), i(0));
    assert_eq!(rem(&n, &n), i(0));
    assert_eq!(rem(&add(&mul(&n, &m), &i(2)), &m).to_string(), "Mod(2, m)");
    assert_eq!(rem(&n, &i(1)), i(0));
    assert_eq!(rem(&n, &i(-1)), i(0));
    // (2n + 2) % 4 = 2*((n + 1) % 2)
    assert_eq!(
        rem(&add(&mul(&i(2), &n), &i(2)), &i(4)).to_string(),
        "2*Mod(n + 1, 2)"
    );
    // (g*a) % (g*b) = g*(a % b)
    let k = s("k");
    assert_eq!(
        rem(&add(&mul(&i(4), &n), &i(2)), &mul(&i(2), &m)).to_string(),
        "2*Mod(2*n + 1, m)"
    );
    assert_eq!(rem(&mul(&n, &m), &mul(&n, &k)).to_string(), "n*Mod(m, k)");
    assert_eq!(rem(&mul(&i(6), &n), &mul(&i(4), &n)), mul(&i(2), &n));
    // (x % m) % m = x % m
    let x = rem(&add(&n, &i(2)), &m);
    assert_eq!(rem(&x, &m), x);
    // (n % 4) % 2 = n % 2
    assert_eq!(rem(&rem(&n, &i(4)), &i(2)), rem(&n, &i(2)));
    // (n + 5) % 3 = (n + 2) % 3
    assert_eq!(rem(&add(&n, &i(5)), &i(3)), rem(&add(&n, &i(2)), &i(3)));
    // n % -3 = -((-n) % 3)
    assert_eq!(rem(&n, &i(-3)).to_string(), "-Mod(2*n, 3)");
    assert_eq!(
        rem(&n, &i(-3)),
        rem(&n.neg().unwrap(), &i(3)).neg().unwrap()
    );
}

#[test]
fn floordiv_and_mod_agree_with_python_on_values() {
    let (n, m) = (s("n"), s("m"));
    let exprs = [
        add(&mul(&i(3), &n), &i(1)),
        sub(&mul(&n, &m), &i(7)),
        sub(&i(5), &n),
        add(&fdiv(&n, &i(3)), &mul(&i(2), &m)),
        n.neg().unwrap(),
    ];
    let divisors = [
        i(2),
        i(3),
        i(-4),
        i(7),
        m.clone(),
        add(&n, &i(1)),
        n.neg().unwrap(),
        mul(&i(2), &m),
    ];
    for e in &exprs {
        for d in &divisors {
            let q = fdiv(e, d);
            let r = rem(e, d);
            for nv in 2..9 {
                for mv in 2..6 {
                    let vars: HashMap<&str, i64> = [("n", nv), ("m", mv)].into_iter().collect();
                    let get = |x: &str| vars.get(x).copied();
                    let (ev, dv) = (e.eval(&get).unwrap(), d.eval(&get).unwrap());
                    let (wq, wr) = (ev.div_euclid(dv), ev.rem_euclid(dv));
                    // Python: floor division; remainder with the divisor's sign
                    let (pq, pr) = if dv < 0 && wr != 0 {
                        (wq - 1, wr + dv)
                    } else {
                        (wq, wr)
                    };
                    assert_eq!(q.eval(&get), Some(pq), "({e}) // ({d}) = {q} at {vars:?}");
                    assert_eq!(r.eval(&get), Some(pr), "({e}) % ({d}) = {r} at {vars:?}");
                    assert_eq!(py_eval(&q.to_string(), &vars), Some(i128::from(pq)), "{q}");
                    assert_eq!(py_eval(&r.to_string(), &vars), Some(i128::from(pr)), "{r}");
                }
            }
        }
    }
}

// ------------------------------------------------------------------ overflow

#[test]
fn arithmetic_never_overflows_silently() {
    let n = s("n");
    assert_eq!(i(i64::MAX).add(&i(1)), Err(SymError::Overflow));
    assert_eq!(i(i64::MIN).sub(&i(1)), Err(SymError::Overflow));
    assert_eq!(i(i64::MAX).mul(&i(2)), Err(SymError::Overflow));
    assert_eq!(i(i64::MIN).neg(), Err(SymError::Overflow));
    assert_eq!(i(2).pow(63), Err(SymError::Overflow));
    assert_eq!(i(2).pow(62), Ok(i(1 << 62)));
    // symbolic coefficients
    let big = mul(&i(i64::MAX), &n);
    assert_eq!(big.add(&n), Err(SymError::Overflow));
    assert_eq!(big.mul(&i(2)), Err(SymError::Overflow));
    assert_eq!(mul(&i(i64::MIN), &n).neg(), Err(SymError::Overflow));
    assert_eq!(add(&n, &i(i64::MAX)).add(&i(1)), Err(SymError::Overflow));
    assert_eq!(
        mul(&i(1 << 40), &n).mul(&mul(&i(1 << 40), &n)),
        Err(SymError::Overflow)
    );
    // but cancellation is fine
    assert_eq!(sub(&big, &big), i(0));
    // evaluation reports overflow as None
    let sq = mul(&n, &n);
    assert_eq!(sq.eval(&|_| Some(1 << 32)), None);
    assert_eq!(sq.eval(&|_| Some(1 << 31)), Some(1 << 62));
    assert_eq!(n.eval(&|_| None), None);
    // sums and products
    assert_eq!(prod(&[i(1 << 32), i(1 << 31)]), Err(SymError::Overflow));
    assert_eq!(sum(&[i(i64::MAX), i(1)]), Err(SymError::Overflow));
    assert_eq!(sum(&[i(i64::MAX), i(1), i(-1)]), Err(SymError::Overflow));
}

#[test]
fn sum_and_prod() {
    let (n, m) = (s("n"), s("m"));
    assert_eq!(sum(&[]), Ok(i(0)));
    assert_eq!(prod(&[]), Ok(i(1)));
    assert_eq!(prod(&[i(2), i(3), i(4)]), Ok(i(24)));
    assert_eq!(
        prod(&[n.clone(), i(4), m.clone()]).unwrap().to_string(),
        "4*m*n"
    );
    assert_eq!(
        sum(&[n.clone(), n.clone(), i(1)]).unwrap().to_string(),
        "2*n + 1"
    );
    assert_eq!(sum(&[n.clone(), m.clone(), n.neg().unwrap()]), Ok(m));
}

// ------------------------------------------------------------------ eval, substitute

#[test]
fn eval_and_substitute() {
    let (n, m) = (s("n"), s("m"));
    let e = add(&mul(&n, &m), &fdiv(&n, &i(2)));
    let get = |x: &str| match x {
        "n" => Some(5),
        "m" => Some(7),
        _ => None,
    };
    assert_eq!(e.eval(&get), Some(37));
    assert_eq!(e.eval(&|x| if x == "n" { Some(5) } else { None }), None);
    // substituting re-simplifies divisions
    let f = e
        .substitute(&|x| if x == "n" { Some(i(4)) } else { None })
        .unwrap();
    assert_eq!(f, add(&mul(&i(4), &m), &i(2)));
    let g = e
        .substitute(&|x| if x == "n" { Some(mul(&i(2), &m)) } else { None })
        .unwrap();
    assert_eq!(g, add(&mul(&i(2), &mul(&m, &m)), &m));
    assert_eq!(e.substitute(&|_| None).unwrap(), e);
    // division by zero through substitution
    let d = fdiv(&i(10), &n);
    assert_eq!(d.substitute(&|_| Some(i(0))), Err(SymError::DivisionByZero));
    assert_eq!(d.eval(&|_| Some(0)), None);
}

// ------------------------------------------------------------------ shape env

#[test]
fn hints_follow_declaration_order_like_the_oracle() {
    let mut env = ShapeEnv::default();
    let names = ["n", "m", "a", "b", "c", "d", "e", "f", "g", "h", "x", "y"];
    for name in names {
        env.declare(name);
    }
    env.declare("n");
    assert_eq!(env.num_symbols(), 12);
    let hints: Vec<i64> = names.iter().map(|x| env.symbol_hint(x).unwrap()).collect();
    assert_eq!(hints, vec![5, 7, 11, 13, 17, 19, 23, 29, 31, 37, 41, 43]);
    assert_eq!(env.symbol_names()[..3], ["n", "m", "a"]);
    assert_eq!(env.symbol_hint("zz"), None);
    assert_eq!(env.symbol_range("n"), (2, None));
    assert_eq!(env.symbol_range("zz"), (2, None));
    let n = s("n");
    let m = s("m");
    assert_eq!(env.hint(&add(&mul(&n, &m), &i(1))), Some(36));
    assert_eq!(env.hint(&fdiv(&m, &i(2))), Some(3));
    assert_eq!(env.hint(&rem(&sub(&i(0), &n), &i(3))), Some(1));
    assert_eq!(env.hint(&s("zz")), None);
    assert_eq!(env.hint(&i(9)), Some(9));
    let mut env = ShapeEnv::default();
    env.declare_with_hint("k", 100);
    assert_eq!(env.declare("j").to_string(), "j");
    assert_eq!(env.symbol_hint("k"), Some(100));
    assert_eq!(env.symbol_hint("j"), Some(7));
}

#[test]
fn facts_true_for_all_sizes_are_proven() {
    let (env, n, m) = env2();
    let p = |t: Truth| assert_eq!(t, Truth::Proven(true));
    p(env.cmp_ge(&n, &i(2)));
    p(env.cmp_gt(&n, &i(1)));
    p(env.cmp_ne(&n, &i(0)));
    p(env.cmp_ne(&n, &i(1)));
    p(env.cmp_lt(&i(0), &sub(&n, &i(1))));
    p(env.cmp_le(&n, &mul(&n, &m)));
    p(env.cmp_lt(&n, &mul(&n, &m)));
    p(env.cmp_le(&add(&n, &m), &mul(&n, &m)));
    p(env.cmp_eq(&mul(&add(&n, &i(1)), &m), &add(&mul(&n, &m), &m)));
    p(env.cmp_lt(&n, &add(&n, &i(1))));
    p(env.cmp_le(&mul(&i(2), &n), &n.pow(2).unwrap()));
    // (n - 1)**2 >= 1 with n >= 2
    p(env.cmp_ge(&sub(&n, &i(1)).pow(2).unwrap(), &i(1)));
    // n*m - n - m + 1 = (n-1)(m-1) >= 1
    p(env.cmp_ge(&add(&sub(&sub(&mul(&n, &m), &n), &m), &i(1)), &i(1)));
    assert!(env.prove_nonneg(&sub(&n, &i(2))));
    assert!(!env.prove_nonneg(&sub(&n, &i(3))));
    assert_eq!(env.lower_bound(&add(&mul(&n, &m), &i(1))), Some(5));
}

#[test]
fn facts_false_for_all_sizes_are_proven_false() {
    let (env, n, m) = env2();
    let f = |t: Truth| assert_eq!(t, Truth::Proven(false));
    f(env.cmp_eq(&n, &i(1)));
    f(env.cmp_eq(&n, &add(&n, &i(1))));
    f(env.cmp_lt(&n, &i(2)));
    f(env.cmp_gt(&n, &mul(&n, &m)));
    f(env.cmp_eq(&mul(&n, &m), &i(0)));
    f(env.cmp_le(&add(&n, &i(1)), &n));
    f(env.cmp_ge(&n, &add(&n, &i(1))));
}

#[test]
fn facts_the_symbols_do_not_decide_are_assumed_by_hints() {
    let (env, n, m) = env2();
    // n = 5, m = 7
    assert_eq!(env.cmp_eq(&n, &m), Truth::Assumed(false));
    assert_eq!(env.cmp_ne(&n, &m), Truth::Assumed(true));
    assert_eq!(env.cmp_lt(&n, &m), Truth::Assumed(true));
    assert_eq!(env.cmp_gt(&n, &m), Truth::Assumed(false));
    assert_eq!(env.cmp_eq(&n, &i(5)), Truth::Assumed(true));
    assert_eq!(env.cmp_le(&n, &i(4)), Truth::Assumed(false));
    assert_eq!(env.cmp_gt(&n, &i(2)), Truth::Assumed(true));
    assert_eq!(env.cmp_ge(&mul(&n, &m), &i(35)), Truth::Assumed(true));
    assert_eq!(
        env.cmp_eq(&mul(&i(2), &n), &add(&m, &i(3))),
        Truth::Assumed(true)
    );
    // undeclared symbols: no hint, "different"
    assert_eq!(env.cmp_eq(&s("zz"), &i(5)), Truth::Assumed(false));
    assert_eq!(env.cmp_ne(&s("zz"), &i(5)), Truth::Assumed(true));
    // concrete: always proven
    assert_eq!(env.cmp_lt(&i(1), &i(2)), Truth::Proven(true));
    assert_eq!(env.compare(&i(3), Rel::Ge, &i(4)), Truth::Proven(false));
    let t = Truth::Assumed(true);
    assert!(t.value() && t.is_assumed() && !t.is_proven());
    assert_eq!(!t, Truth::Assumed(false));
    assert_eq!(!Truth::Proven(false), Truth::Proven(true));
}

#[test]
fn proofs_see_through_floordiv_and_mod() {
    let (env, n, m) = env2();
    let p = |t: Truth| assert_eq!(t, Truth::Proven(true));
    let half = fdiv(&n, &i(2));
    p(env.cmp_le(&half, &n)); // x[: n // 2]
    p(env.cmp_lt(&half, &n));
    p(env.cmp_ge(&half, &i(1)));
    p(env.cmp_ge(&half, &i(0)));
    p(env.cmp_le(&mul(&i(2), &half), &n));
    p(env.cmp_lt(&rem(&n, &i(3)), &i(3)));
    p(env.cmp_ge(&rem(&n, &i(3)), &i(0)));
    p(env.cmp_lt(&rem(&n, &m), &m));
    p(env.cmp_ge(&rem(&n, &m), &i(0)));
    p(env.cmp_le(&fdiv(&n, &m), &n));
    p(env.cmp_ge(&fdiv(&n, &m), &i(0)));
    p(env.cmp_le(&fdiv(&add(&n, &i(1)), &i(2)), &n));
    // n - 2*(n//2) = n % 2 in [0, 1]
    p(env.cmp_ge(&sub(&n, &mul(&i(2), &half)), &i(0)));
    // x[n//3 : n] has a non-negative length
    p(env.cmp_le(&fdiv(&n, &i(3)), &n));
    // not provable: n // 2 >= 2 (n = 2, 3)
    assert_eq!(env.cmp_ge(&half, &i(2)), Truth::Assumed(true));
    assert_eq!(env.cmp_eq(&rem(&n, &i(2)), &i(1)), Truth::Assumed(true));
}

// ------------------------------------------------------------------ guards

#[test]
fn equality_guards_specialise_like_pytorch() {
    // x: Tensor("n", 4); x.view(20): 4*n == 20 makes n the constant 5.
    let (mut env, n, m) = env2();
    assert_eq!(
        env.guard(&mul(&i(4), &n), Rel::Eq, &i(20)),
        Truth::Assumed(true)
    );
    assert_eq!(env.replacement("n"), Some(&i(5)));
    assert_eq!(env.resolve(&mul(&n, &m)).unwrap().to_string(), "5*m");
    assert!(!env.is_dynamic(&add(&n, &i(1))));
    assert!(env.is_dynamic(&m));
    assert_eq!(env.display(&add(&n, &m)), "m + 5");
    // the convenience forms are the same guard
    let (mut env2, n2, m2) = env2();
    assert_eq!(env2.guard_ge(&n2, &i(3)), Truth::Assumed(true));
    assert_eq!(env2.guard_lt(&m2, &i(8)), Truth::Assumed(true));
    assert_eq!(env2.guard_le(&n2, &m2), Truth::Assumed(true));
    assert_eq!(env2.guard_gt(&n2, &i(1)), Truth::Proven(true));
    assert_eq!(env2.guard_ne(&n2, &m2), Truth::Assumed(true));
    assert_eq!(env2.guard_eq(&m2, &i(7)), Truth::Assumed(true));
    assert_eq!(env2.symbol_range("n"), (3, None));
    assert_eq!(env2.replacement("m"), Some(&i(7)));
    assert_eq!(env2.assumptions().len(), 5);
    // now decided without a guard
    assert_eq!(env.cmp_eq(&n, &i(5)), Truth::Proven(true));
    assert_eq!(env.guard(&n, Rel::Eq, &i(5)), Truth::Proven(true));
    assert_eq!(env.assumptions().len(), 1);
    assert_eq!(env.assumptions()[0].to_string(), "4*n == 20");
}

#[test]
fn equality_guards_solve_for_the_symbol_with_the_largest_hint() {
    // As PyTorch: Eq(2*s0 - s1, 3) replaces s1 = 2*s0 - 3 and refines s0 >= 3.
    let (mut env, n, m) = env2();
    let t = env.guard(&sub(&mul(&i(2), &n), &m), Rel::Eq, &i(3));
    assert_eq!(t, Truth::Assumed(true));
    assert_eq!(env.replacement("m").unwrap().to_string(), "2*n - 3");
    assert_eq!(env.symbol_range("n"), (3, None));
    assert_eq!(env.display(&mul(&n, &m)), "2*n**2 - 3*n");
    // Eq(s0 + s2, 24) with s2 the larger hint: s2 = 24 - s0, s0 <= 22.
    let mut env = ShapeEnv::default();
    let a = env.declare("a");
    env.declare("b");
    let c = env.declare("c");
    env.guard(&add(&a, &c), Rel::Eq, &i(16));
    assert_eq!(env.replacement("c").unwrap().to_string(), "-a + 16");
    assert_eq!(env.symbol_range("a"), (2, Some(14)));
    // a product cannot be solved: no replacement (PyTorch: n*m == 35 keeps both)
    let (mut env, n, m) = env2();
    assert_eq!(
        env.guard(&mul(&n, &m), Rel::Eq, &i(35)),
        Truth::Assumed(true)
    );
    assert_eq!(env.replacement("n"), None);
    assert_eq!(env.replacement("m"), None);
    // a non-integral solution cannot either: 2*m == n + 9 (14 == 14)
    let (mut env, n, m) = env2();
    assert_eq!(
        env.guard(&mul(&i(2), &m), Rel::Eq, &add(&n, &i(9))),
        Truth::Assumed(true)
    );
    assert_eq!(env.replacement("m"), None);
    // nor one through // or %
    let (mut env, n, _) = env2();
    assert_eq!(
        env.guard(&fdiv(&n, &i(2)), Rel::Eq, &i(2)),
        Truth::Assumed(true)
    );
    assert_eq!(env.replacement("n"), None);
    // a failed equality (n != m) changes nothing but is recorded
    let (mut env, n, m) = env2();
    assert_eq!(env.guard(&n, Rel::Eq, &m), Truth::Assumed(false));
    assert_eq!(env.replacement("n"), None);
    assert_eq!(env.assumptions()[0].to_string(), "n != m");
    // a != that holds by the hints is recorded; one that fails specialises
    let (mut env, n, _) = env2();
    assert_eq!(env.guard(&n, Rel::Ne, &i(5)), Truth::Assumed(false));
    assert_eq!(env.replacement("n"), Some(&i(5)));
}

#[test]
fn inequality_guards_refine_ranges() {
    // As PyTorch: x[:3] on n guards n >= 3 and the range becomes [3, oo).
    let (mut env, n, m) = env2();
    assert_eq!(env.guard(&i(3), Rel::Le, &n), Truth::Assumed(true));
    assert_eq!(env.symbol_range("n"), (3, None));
    assert_eq!(env.cmp_ge(&n, &i(3)), Truth::Proven(true));
    assert_eq!(env.cmp_gt(&sub(&n, &i(2)), &i(0)), Truth::Proven(true));
    // a failing guard records the negation: n > 6 is false, so n <= 6
    assert_eq!(env.guard(&n, Rel::Gt, &i(6)), Truth::Assumed(false));
    assert_eq!(env.symbol_range("n"), (3, Some(6)));
    assert_eq!(env.cmp_lt(&n, &i(7)), Truth::Proven(true));
    assert_eq!(env.cmp_le(&n, &i(6)), Truth::Proven(true));
    // upper bounds help prove: 10 - n >= 4
    assert_eq!(env.cmp_ge(&sub(&i(10), &n), &i(4)), Truth::Proven(true));
    let facts: Vec<String> = env.assumptions().iter().map(|a| a.to_string()).collect();
    assert_eq!(facts, vec!["3 <= n", "n <= 6"]);
    // try_solve's quotient must be an integer: 2*n >= 9 refines nothing,
    // 2*n >= 10 gives n >= 5
    env.guard(&mul(&i(2), &n), Rel::Ge, &i(9));
    assert_eq!(env.symbol_range("n"), (3, Some(6)));
    env.guard(&mul(&i(2), &n), Rel::Ge, &i(10));
    assert_eq!(env.symbol_range("n"), (5, Some(6)));
    // _refine_ranges moves the upper bound only when it is above the
    // bound: n < 6 leaves 6 (PyTorch's own quirk)...
    let mut quirk = env.clone();
    quirk.guard(&n, Rel::Lt, &i(6));
    assert_eq!(quirk.symbol_range("n"), (5, Some(6)));
    // ...and then implies n <= 5 (get_implications), which refines nothing
    assert_eq!(quirk.guard(&n, Rel::Le, &i(5)), Truth::Proven(true));
    assert_eq!(quirk.replacement("n"), None);
    // a range of one value specialises: n <= 5 => n = 5
    env.guard(&n, Rel::Le, &i(5));
    assert_eq!(env.replacement("n"), Some(&i(5)));
    assert!(!env.is_dynamic(&n));
    // n is now 5: m > n + 1 bounds m alone
    env.guard(&m, Rel::Gt, &add(&n, &i(1)));
    assert_eq!(env.symbol_range("m"), (7, None));
    // repeated guards are recorded once
    let k = env.assumptions().len();
    env.guard(&m, Rel::Gt, &add(&n, &i(1)));
    assert_eq!(env.assumptions().len(), k);
    let cloned = env.clone();
    assert_eq!(cloned.assumptions().len(), k);
    // guards on several symbols are recorded but refine nothing
    let (mut env, n, m) = env2();
    assert_eq!(env.guard(&n, Rel::Lt, &m), Truth::Assumed(true));
    assert_eq!(env.symbol_range("n"), (2, None));
    assert_eq!(env.symbol_range("m"), (2, None));
    assert_eq!(env.assumptions()[0].to_string(), "n < m");
}

#[test]
fn replacements_compose() {
    let mut env = ShapeEnv::default();
    let (a, b, c) = (env.declare("a"), env.declare("b"), env.declare("c"));
    // c = a + b + (11 - 12)... hints a=5 b=7 c=11: c == a + b - 1
    env.guard(&c, Rel::Eq, &sub(&add(&a, &b), &i(1)));
    assert_eq!(env.display(&c), "a + b - 1");
    // then b = 7 (b is the largest remaining hint)
    env.guard(&b, Rel::Eq, &i(7));
    assert_eq!(env.display(&c), "a + 6");
    assert_eq!(env.replacement("c").unwrap().to_string(), "a + 6");
    assert_eq!(env.display(&mul(&b, &c)), "7*a + 42");
    assert_eq!(env.hint(&c), Some(11));
}

#[test]
fn relations() {
    for r in [Rel::Eq, Rel::Ne, Rel::Lt, Rel::Le, Rel::Gt, Rel::Ge] {
        for (a, b) in [(1, 2), (2, 2), (3, 2)] {
            assert_eq!(r.negate().holds(a, b), !r.holds(a, b));
            assert_eq!(r.flip().holds(b, a), r.holds(a, b));
        }
    }
    assert_eq!(Rel::Le.to_string(), "<=");
    assert_eq!(
        SymError::Overflow.to_string(),
        "integer overflow in a size computation"
    );
}

// ------------------------------------------------------------------ randomized

/// A small deterministic generator (no dependencies).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// An expression tree, evaluated naively, and its SymInt.
fn random_expr(rng: &mut Rng, depth: u32) -> (String, SymInt) {
    if depth == 0 || rng.below(4) == 0 {
        return match rng.below(4) {
            0 => {
                let v = rng.below(9) as i64 - 3;
                (format!("({v})"), i(v))
            }
            1 => ("n".into(), s("n")),
            2 => ("m".into(), s("m")),
            _ => ("k".into(), s("k")),
        };
    }
    let (ta, a) = random_expr(rng, depth - 1);
    let (tb, b) = random_expr(rng, depth - 1);
    match rng.below(6) {
        0 => (format!("({ta} + {tb})"), add(&a, &b)),
        1 => (format!("({ta} - {tb})"), sub(&a, &b)),
        2 => (format!("({ta} * {tb})"), mul(&a, &b)),
        3 => (format!("(-{ta})"), a.neg().unwrap()),
        op => {
            // divide by something non-zero for every assignment used below
            let (td, d) = match rng.below(4) {
                0 => ("n".to_string(), s("n")),
                1 => {
                    let v = [2, 3, 4, -2, -3, 6][rng.below(6) as usize];
                    (format!("({v})"), i(v))
                }
                2 => ("(m + 1)".to_string(), add(&s("m"), &i(1))),
                _ => ("(n * k)".to_string(), mul(&s("n"), &s("k"))),
            };
            if op == 4 {
                (format!("({ta} // {td})"), fdiv(&a, &d))
            } else {
                (format!("({ta} % {td})"), rem(&a, &d))
            }
        }
    }
}

#[test]
fn random_expressions_keep_their_value_and_print_parseably() {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut dump = String::new();
    for _ in 0..3000 {
        let (tree, v) = random_expr(&mut rng, 4);
        let printed = v.to_string();
        dump.push_str(&format!("{tree}\t{printed}\n"));
        for _ in 0..4 {
            let vars: HashMap<&str, i64> = [
                ("n", 2 + rng.below(20) as i64),
                ("m", 2 + rng.below(20) as i64),
                ("k", 2 + rng.below(20) as i64),
            ]
            .into_iter()
            .collect();
            let want = py_eval(&tree, &vars);
            let got = v.eval(&|x| vars.get(x).copied());
            assert_eq!(got.map(i128::from), want, "{tree} => {printed} at {vars:?}");
            assert_eq!(
                py_eval(&printed, &vars),
                want,
                "{tree} => {printed} at {vars:?}"
            );
        }
        // re-building from the printed form's pieces is stable: x + 0 == x
        assert_eq!(add(&v, &i(0)), v);
        assert_eq!(sub(&add(&v, &s("n")), &s("n")), v);
    }
    if let Ok(path) = std::env::var("SYM_DUMP") {
        std::fs::write(path, dump).unwrap();
    }
}

#[test]
fn random_proofs_are_sound() {
    // Whatever is Proven must hold at every assignment with symbols >= 2.
    let mut rng = Rng(0x1234_5678_9abc_def1);
    let mut env = ShapeEnv::default();
    for x in ["n", "m", "k"] {
        env.declare(x);
    }
    let mut proven = 0;
    for _ in 0..3000 {
        let (_, a) = random_expr(&mut rng, 3);
        let (_, b) = random_expr(&mut rng, 2);
        for rel in [Rel::Eq, Rel::Lt, Rel::Le, Rel::Gt, Rel::Ge, Rel::Ne] {
            let t = env.compare(&a, rel, &b);
            let hint = |x: &str| env.symbol_hint(x);
            if let (Some(x), Some(y)) = (a.eval(&hint), b.eval(&hint)) {
                assert_eq!(t.value(), rel.holds(x, y), "hints decide {a} {rel} {b}");
            }
            if let Truth::Proven(v) = t {
                if a.is_symbolic() || b.is_symbolic() {
                    proven += 1;
                }
                for nv in [2, 3, 4, 7, 12] {
                    for mv in [2, 3, 5, 8] {
                        for kv in [2, 3, 9] {
                            let get = |x: &str| match x {
                                "n" => Some(nv),
                                "m" => Some(mv),
                                _ => Some(kv),
                            };
                            if let (Some(x), Some(y)) = (a.eval(&get), b.eval(&get)) {
                                assert_eq!(
                                    rel.holds(x, y),
                                    v,
                                    "{a} {rel} {b} at n={nv} m={mv} k={kv}"
                                );
                            }
                        }
                    }
                }
            }
        }
    }
    assert!(proven > 1000, "only {proven} symbolic facts proven");
}

#[test]
fn view_with_inferred_dim_mirrors_pytorch() {
    // x: Tensor("n", "m"); x.view(5, -1): PyTorch guards Mod(n*m, 5) == 0
    // (no replacement), then n == 5 (replacement), leaving the -1 dim `m`.
    let (mut env, n, m) = env2();
    let numel = mul(&n, &m);
    let five = i(5);
    assert_eq!(
        env.guard_eq(&rem(&numel, &five), &i(0)),
        Truth::Assumed(true)
    );
    assert_eq!(env.replacement("n"), None);
    let inferred = fdiv(&numel, &five);
    assert_eq!(inferred.to_string(), "((m*n)//5)");
    assert_eq!(env.guard_eq(&n, &five), Truth::Assumed(true));
    assert_eq!(env.resolve(&inferred).unwrap(), m);
    assert!(env.is_dynamic(&inferred));
    assert!(!env.is_dynamic(&n));
    assert_eq!(env.display(&numel), "5*m");
    // y: Tensor("a", 4); y.view(2, -1): (4*a) // 2 = 2*a exactly, no guard.
    let mut env = ShapeEnv::default();
    let a = env.declare("a");
    assert_eq!(fdiv(&mul(&a, &i(4)), &i(2)).to_string(), "2*a");
    assert_eq!(
        env.guard_eq(&rem(&mul(&a, &i(4)), &i(2)), &i(0)),
        Truth::Proven(true)
    );
    assert!(env.assumptions().is_empty());
    // x[1:] has n - 1 elements; the clamp 1 <= n is proven
    assert_eq!(env.guard_le(&i(1), &a), Truth::Proven(true));
    assert_eq!(sub(&a, &i(1)).to_string(), "a - 1");
}

/// Integers in place and on the heap (beyond 63 bits) are the same values:
/// equal, hashed alike, cloned and dropped without leaks or double frees.
#[test]
fn packed_integers_round_trip() {
    use std::collections::hash_map::DefaultHasher;
    use std::hash::{Hash, Hasher};
    let hash = |s: &SymInt| {
        let mut h = DefaultHasher::new();
        s.hash(&mut h);
        h.finish()
    };
    let edges = [
        0,
        1,
        -1,
        (1 << 62) - 1,
        1 << 62,
        -(1 << 62),
        -(1 << 62) - 1,
        i64::MAX,
        i64::MIN,
    ];
    for v in edges {
        let s = SymInt::int(v);
        assert_eq!(s.as_int(), Some(v), "{v}");
        let c = s.clone();
        assert_eq!(s, c);
        assert_eq!(hash(&s), hash(&c));
        assert_eq!(s, SymInt::from(v));
        assert_eq!(s.to_string(), v.to_string());
        drop(s);
        assert_eq!(c.as_int(), Some(v));
    }
    assert!(SymInt::int(i64::MAX).add(&SymInt::int(1)).is_err());
    assert_eq!(
        SymInt::int(1 << 62).sub(&SymInt::int(1)).ok(),
        Some(SymInt::int((1 << 62) - 1))
    );
    // Symbolic values shared across threads.
    let n = SymInt::symbol("n");
    let twice = n.add(&n).unwrap_or_default();
    let handles: Vec<_> = (0..4)
        .map(|_| {
            let t = twice.clone();
            std::thread::spawn(move || t.clone().to_string())
        })
        .collect();
    for h in handles {
        assert_eq!(h.join().ok(), Some(twice.to_string()));
    }
}
