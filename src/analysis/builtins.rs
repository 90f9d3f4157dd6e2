//! Python builtins and the non-op functions of `torch` that `.tp` programs may
//! call: `len`, `range`, `zip`, …, grad-mode and autocast switches, and the
//! methods of lists.

use super::domain::DType;
use super::interp::{op_error, Interp, R};
use super::value::{Context, Value, Values};
use crate::report::Diagnostic;
use crate::syntax::ast::Name;
use crate::syntax::Span;
use std::cell::RefCell;
use std::rc::Rc;

fn err(code: &'static str, msg: impl Into<String>, span: Span) -> Diagnostic {
    Diagnostic::error(code, msg, span)
}

fn no_kwargs(name: &str, kw: &[(Name, Value)], span: Span) -> R<()> {
    match kw.first() {
        Some((k, _)) => Err(err(
            "arguments",
            format!("`{name}()` got an unexpected keyword argument `{k}`"),
            span,
        )),
        None => Ok(()),
    }
}

fn arity(name: &str, pos: &[Value], lo: usize, hi: usize, span: Span) -> R<()> {
    if pos.len() < lo || pos.len() > hi {
        let want = if lo == hi {
            lo.to_string()
        } else {
            format!("{lo} to {hi}")
        };
        return Err(err(
            "arguments",
            format!("`{name}()` takes {want} arguments, got {}", pos.len()),
            span,
        ));
    }
    Ok(())
}

fn kwarg(kw: &[(Name, Value)], name: &str) -> Option<Value> {
    kw.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone())
}

fn as_bool(v: &Value, what: &str, span: Span) -> R<bool> {
    match v {
        Value::Bool(b) => Ok(*b),
        Value::Int(i) if i.as_int().is_some() => Ok(i.as_int() != Some(0)),
        other => Err(err(
            "type",
            format!("{what} must be a bool, got a `{}`", other.type_name()),
            span,
        )),
    }
}

/// A size as a Python int: a symbolic one is guarded to its hint
/// (`SymInt.__index__`), as PyTorch specialises it.
fn concrete_size(it: &mut Interp, s: &crate::sym::SymInt, span: Span) -> R<i64> {
    it.m.sizes
        .concrete(s, "int()")
        .map_err(|e| op_error(e, span))
}

pub fn call_builtin(
    it: &mut Interp,
    name: &str,
    pos: Values,
    kw: Vec<(Name, Value)>,
    span: Span,
) -> R<Value> {
    match name {
        "len" => {
            no_kwargs(name, &kw, span)?;
            arity(name, &pos, 1, 1, span)?;
            match &pos[0] {
                // Tensor.__len__ reads the sizes Python sees (stale after set_);
                // len() takes the SymInt's __index__, which guards it.
                Value::Tensor(t) => match it.m.python_geometry(*t).sizes().first().cloned() {
                    Some(s) => Ok(Value::int(concrete_size(it, &s, span)?)),
                    None => Err(err("type", "len() of a 0-d tensor", span)),
                },
                Value::Str(s) => Ok(Value::int(s.chars().count() as i64)),
                other => match other.sequence() {
                    Some(items) => Ok(Value::int(items.len() as i64)),
                    None => Err(err(
                        "type",
                        format!("a `{}` has no len()", other.type_name()),
                        span,
                    )),
                },
            }
        }
        "range" => {
            no_kwargs(name, &kw, span)?;
            arity(name, &pos, 1, 3, span)?;
            let mut ints = Vec::new();
            for v in &pos {
                match v {
                    Value::Int(i) => ints.push(
                        it.m.sizes
                            .concrete(i, "a range bound")
                            .map_err(|e| op_error(e, span))?,
                    ),
                    Value::Bool(b) => ints.push(*b as i64),
                    other => {
                        return Err(err(
                            "type",
                            format!("range() needs ints, got a `{}`", other.type_name()),
                            span,
                        ))
                    }
                }
            }
            let (start, stop, step) = match ints.len() {
                1 => (0, ints[0], 1),
                2 => (ints[0], ints[1], 1),
                _ => (ints[0], ints[1], ints[2]),
            };
            if step == 0 {
                return Err(err("value", "range() arg 3 must not be zero", span));
            }
            let count = if step > 0 {
                (stop - start + step - 1).max(0) / step
            } else {
                (start - stop - step - 1).max(0) / -step
            };
            if count > super::interp::MAX_LOOP as i64 {
                return Err(err(
                    "limit",
                    format!("range of {count} items is too long to unroll"),
                    span,
                ));
            }
            Ok(Value::list(
                (0..count).map(|k| Value::int(start + k * step)).collect(),
            ))
        }
        "min" | "max" => {
            no_kwargs(name, &kw, span)?;
            let items = if pos.len() == 1 {
                it.iterate(&pos[0], span)?
            } else {
                pos.into_vec()
            };
            if items.is_empty() {
                return Err(err(
                    "value",
                    format!("{name}() arg is an empty sequence"),
                    span,
                ));
            }
            let data_dependent = || {
                err(
                    "data-dependent",
                    format!("Python's {name}() over tensors depends on their data"),
                    span,
                )
                .with_help(format!(
                    "use torch.{}imum(a, b) or x.{name}()",
                    if name == "min" { "min" } else { "max" }
                ))
            };
            let is_tensor = |v: &Value| matches!(v, Value::Tensor(_));
            if it.m.mode == super::state::Mode::Analysis && items.iter().any(is_tensor) {
                return Err(data_dependent());
            }
            // Python compares each item with the best so far (`v > best`,
            // or reflected, `best < v`, when only `best` is a tensor);
            // eager PyTorch then takes the truth of the comparison's result.
            let (op, reflected) = if name == "min" {
                (crate::syntax::ast::CmpOp::Lt, "gt")
            } else {
                (crate::syntax::ast::CmpOp::Gt, "lt")
            };
            let mut best = items[0].clone();
            for v in &items[1..] {
                if is_tensor(v) || is_tensor(&best) {
                    let (cmp, l, r) = if is_tensor(v) {
                        (if name == "min" { "lt" } else { "gt" }, v, &best)
                    } else {
                        (reflected, &best, v)
                    };
                    let result = it.call_op(
                        cmp,
                        smallvec::smallvec![l.clone(), r.clone()],
                        Vec::new(),
                        span,
                    )?;
                    if let Value::Tensor(t) = result {
                        it.one_element(t, true, span)?;
                    }
                    return Err(data_dependent());
                }
                if it.binop_compare(op, v, &best, span)? {
                    best = v.clone();
                }
            }
            Ok(best)
        }
        "abs" => {
            arity(name, &pos, 1, 1, span)?;
            match &pos[0] {
                Value::Tensor(_) => it.call_op("abs", pos, kw, span),
                Value::Int(i) => match i.as_int() {
                    Some(v) => Ok(Value::int(v.checked_abs().ok_or_else(|| {
                        op_error(crate::sym::SymError::Overflow.into(), span)
                    })?)),
                    // Its sign by the hint, as a guard (PyTorch keeps sympy's
                    // Abs(...) unguarded; tpi has no Abs, but the value is right).
                    None if it.m.sizes.lt_int(i, 0) => {
                        Ok(Value::Int(i.neg().map_err(|e| op_error(e.into(), span))?))
                    }
                    None => Ok(Value::Int(i.clone())),
                },
                Value::Float(f) => Ok(Value::Float(f.abs())),
                Value::Bool(b) => Ok(Value::int(*b as i64)),
                other => Err(err(
                    "type",
                    format!("bad operand type for abs(): `{}`", other.type_name()),
                    span,
                )),
            }
        }
        "int" | "float" | "bool" => {
            arity(name, &pos, 0, 1, span)?;
            let v = pos.into_iter().next().unwrap_or(Value::int(0));
            match (name, &v) {
                (_, Value::Tensor(t)) => Err({
                    it.one_element(*t, name == "bool", span)?;
                    err(
                        "data-dependent",
                        format!("{name}() of a tensor reads its data"),
                        span,
                    )
                }),
                // SymInt.__int__ / __index__ guard the size to its hint.
                ("int", Value::Int(i)) => Ok(Value::int(concrete_size(it, i, span)?)),
                ("int", Value::Bool(b)) => Ok(Value::int(*b as i64)),
                ("int", Value::Float(f)) => {
                    if f.is_finite() && f.abs() < 9.2e18 {
                        Ok(Value::int(f.trunc() as i64))
                    } else {
                        Err(err("value", "cannot convert this float to an int", span))
                    }
                }
                ("float", Value::Float(_)) => Ok(v),
                // A SymInt has no __float__: float() goes through __index__.
                ("float", Value::Int(i)) => Ok(Value::Float(concrete_size(it, i, span)? as f64)),
                ("float", Value::Bool(b)) => Ok(Value::Float(*b as i64 as f64)),
                // Python's float("inf"), float("-inf"), float("nan"), int("3").
                ("float" | "int", Value::Str(text)) => {
                    let digits = text.trim().replace('_', "");
                    let parsed = if name == "float" {
                        digits.parse::<f64>().ok().map(Value::Float)
                    } else {
                        digits.parse::<i64>().ok().map(Value::int)
                    };
                    parsed.ok_or_else(|| {
                        let msg = if name == "float" {
                            format!("could not convert string to float: '{text}'")
                        } else {
                            format!("invalid literal for int() with base 10: '{text}'")
                        };
                        err("value", msg, span)
                    })
                }
                ("bool", _) => Ok(Value::Bool(it.truthy(&v, span)?)),
                _ => Err(err(
                    "type",
                    format!("{name}() cannot convert a `{}`", v.type_name()),
                    span,
                )),
            }
        }
        "tuple" | "list" => {
            arity(name, &pos, 0, 1, span)?;
            let items = match pos.first() {
                Some(v) => it.iterate(v, span)?,
                None => Vec::new(),
            };
            Ok(if name == "tuple" {
                Value::tuple(items)
            } else {
                Value::list(items)
            })
        }
        "isinstance" => {
            arity(name, &pos, 2, 2, span)?;
            let ok = match (&pos[0], &pos[1]) {
                (Value::Tensor(_), Value::TensorType) => true,
                (_, Value::TensorType) => false,
                (v, Value::Builtin(t)) => matches!(
                    (v, *t),
                    (Value::Int(_) | Value::Bool(_), "int")
                        | (Value::Float(_), "float")
                        | (Value::Bool(_), "bool")
                        | (Value::Tuple(_), "tuple")
                        | (Value::List(_), "list")
                ),
                _ => {
                    return Err(err(
                        "unsupported",
                        "isinstance() supports torch.Tensor, int, float, bool, tuple and list",
                        span,
                    ))
                }
            };
            Ok(Value::Bool(ok))
        }
        "zip" => {
            no_kwargs(name, &kw, span)?;
            let mut seqs = Vec::new();
            for v in &pos {
                seqs.push(it.iterate(v, span)?);
            }
            let n = seqs.iter().map(Vec::len).min().unwrap_or(0);
            Ok(Value::list(
                (0..n)
                    .map(|i| Value::tuple(seqs.iter().map(|s| s[i].clone()).collect()))
                    .collect(),
            ))
        }
        "enumerate" => {
            arity(name, &pos, 1, 2, span)?;
            let start = match pos.get(1).or(kwarg(&kw, "start").as_ref()) {
                Some(Value::Int(i)) => {
                    it.m.sizes
                        .concrete(i, "enumerate's start")
                        .map_err(|e| op_error(e, span))?
                }
                _ => 0,
            };
            let items = it.iterate(&pos[0], span)?;
            Ok(Value::list(
                items
                    .into_iter()
                    .enumerate()
                    .map(|(i, v)| Value::tuple(vec![Value::int(start + i as i64), v]))
                    .collect(),
            ))
        }
        "reversed" => {
            arity(name, &pos, 1, 1, span)?;
            let mut items = it.iterate(&pos[0], span)?;
            items.reverse();
            Ok(Value::list(items))
        }
        "sum" => {
            arity(name, &pos, 1, 2, span)?;
            let items = it.iterate(&pos[0], span)?;
            let mut acc = pos.get(1).cloned().unwrap_or(Value::int(0));
            for v in items {
                acc = it.binop(crate::syntax::ast::BinOp::Add, acc, v, span)?;
            }
            Ok(acc)
        }
        "print" => Ok(Value::None),
        "custom_view" => {
            arity(name, &pos, 1, 1, span)?;
            match &pos[0] {
                Value::Tensor(t) => super::apply::custom_view(it, *t, span),
                other => Err(err(
                    "type",
                    format!(
                        "custom_view() takes a tensor, got a `{}`",
                        other.type_name()
                    ),
                    span,
                )),
            }
        }
        "Tensor" => Err(err(
            "unsupported",
            "`Tensor(...)` only declares inputs, in a parameter annotation",
            span,
        )),
        "_print" => {
            // torch.ops.aten._print is an effectful op: one effect token.
            if it.m.tokens == 0 {
                it.m.tokens = 1;
            }
            it.m.provenance.token(span);
            Ok(Value::None)
        }
        "no_grad" | "enable_grad" => {
            arity(name, &pos, 0, 0, span)?;
            Ok(Value::Context(Box::new(if name == "no_grad" {
                Context::NoGrad
            } else {
                Context::EnableGrad
            })))
        }
        "inference_mode" => {
            arity(name, &pos, 0, 1, span)?;
            let on = match pos.first().or(kwarg(&kw, "mode").as_ref()) {
                Some(v) => as_bool(v, "inference_mode's mode", span)?,
                None => true,
            };
            Ok(Value::Context(Box::new(Context::InferenceMode(on))))
        }
        "set_grad_enabled" => {
            arity(name, &pos, 0, 1, span)?;
            let v = pos
                .first()
                .cloned()
                .or(kwarg(&kw, "mode"))
                .unwrap_or(Value::None);
            let on = as_bool(&v, "set_grad_enabled's mode", span)?;
            let previous = it.m.grad_enabled;
            it.m.grad_enabled = on;
            it.m.provenance.grad_mode(span, on);
            Ok(Value::Context(Box::new(Context::SetGradEnabled {
                previous,
            })))
        }
        "is_grad_enabled" => Ok(Value::Bool(it.m.grad_enabled && !it.m.inference_mode)),
        "is_inference_mode_enabled" => Ok(Value::Bool(it.m.inference_mode)),
        "autocast" => {
            let device = match pos.first().cloned().or(kwarg(&kw, "device_type")) {
                Some(Value::Str(s)) => s.to_string(),
                _ => {
                    return Err(err(
                        "arguments",
                        "torch.autocast needs a device type (\"cpu\" or \"cuda\")",
                        span,
                    ))
                }
            };
            let enabled = match kwarg(&kw, "enabled") {
                Some(v) => as_bool(&v, "autocast's enabled", span)?,
                None => true,
            };
            // torch.autocast's __init__ parses the device type.
            const DEVICES: &[&str] = &[
                "cpu", "cuda", "xpu", "mps", "hpu", "xla", "meta", "mtia", "ipu", "lazy", "maia",
            ];
            if !DEVICES.contains(&device.as_str()) {
                return Err(err(
                    "other",
                    format!("Invalid device string: '{device}'"),
                    span,
                ));
            }
            let dtype = match kwarg(&kw, "dtype") {
                Some(Value::Dtype(d)) => Some(d),
                _ => None,
            };
            // CPU autocast runs in bfloat16 or float16 only: with another
            // dtype, __init__ warns and disables the block.
            let enabled = enabled
                && !(device == "cpu"
                    && dtype.is_some_and(|d| !matches!(d, DType::BF16 | DType::F16)));
            // The dtype is set by __enter__ and restored by __exit__.
            Ok(Value::Context(Box::new(Context::Autocast {
                device,
                enabled,
                dtype,
            })))
        }
        "set_autocast_enabled" => {
            let (device, v) = match (pos.first(), pos.get(1)) {
                (Some(Value::Str(d)), Some(v)) => (d.to_string(), v.clone()),
                (Some(v), None) => ("cuda".to_string(), v.clone()),
                _ => {
                    return Err(err(
                        "arguments",
                        "torch.set_autocast_enabled(device, enabled)",
                        span,
                    ))
                }
            };
            let on = as_bool(&v, "the autocast state", span)?;
            if let Some(a) = it.m.autocast.iter_mut().find(|a| a.device == device) {
                a.enabled = on;
            }
            Ok(Value::None)
        }
        "is_autocast_enabled" => {
            let device = match pos.first() {
                Some(Value::Str(d)) => d.to_string(),
                _ => "cuda".to_string(),
            };
            Ok(Value::Bool(
                it.m.autocast
                    .iter()
                    .any(|a| a.device == device && a.enabled),
            ))
        }
        "device" => match pos.first() {
            Some(Value::Str(s)) => Ok(Value::Device(s.clone())),
            _ => Err(err("arguments", "torch.device needs a string", span)),
        },
        "Size" => {
            let items = match pos.first() {
                Some(v) => it.iterate(v, span)?,
                None => Vec::new(),
            };
            Ok(Value::tuple(items))
        }
        "is_tensor" => Ok(Value::Bool(matches!(pos.first(), Some(Value::Tensor(_))))),
        "numel" => match pos.first() {
            Some(Value::Tensor(t)) => {
                Ok(Value::Int(it.m.numel(*t).map_err(|e| op_error(e, span))?))
            }
            _ => Err(err("arguments", "torch.numel needs a tensor", span)),
        },
        other => Err(err(
            "unsupported",
            format!("`{other}` is not supported"),
            span,
        )),
    }
}

pub fn list_method(
    it: &mut Interp,
    items: &Rc<RefCell<Vec<Value>>>,
    name: &str,
    pos: Values,
    span: Span,
) -> R<Value> {
    match name {
        "append" => {
            arity(name, &pos, 1, 1, span)?;
            items.borrow_mut().extend(pos);
            Ok(Value::None)
        }
        "extend" => {
            arity(name, &pos, 1, 1, span)?;
            let extra = it.iterate(&pos[0], span)?;
            items.borrow_mut().extend(extra);
            Ok(Value::None)
        }
        "insert" => {
            arity(name, &pos, 2, 2, span)?;
            let n = items.borrow().len() as i64;
            let i = match &pos[0] {
                Value::Int(i) => {
                    it.m.sizes
                        .concrete(i, "an index")
                        .map_err(|e| op_error(e, span))?
                }
                _ => return Err(err("type", "list.insert needs an int index", span)),
            };
            let i = if i < 0 { (i + n).max(0) } else { i.min(n) } as usize;
            items.borrow_mut().insert(i, pos[1].clone());
            Ok(Value::None)
        }
        "pop" => {
            arity(name, &pos, 0, 1, span)?;
            let n = items.borrow().len();
            if n == 0 {
                return Err(err("index", "pop from empty list", span));
            }
            let i = match pos.first() {
                Some(Value::Int(i)) => {
                    let i =
                        it.m.sizes
                            .concrete(i, "an index")
                            .map_err(|e| op_error(e, span))?;
                    let j = if i < 0 { i + n as i64 } else { i };
                    if j < 0 || j >= n as i64 {
                        return Err(err("index-out-of-range", "pop index out of range", span));
                    }
                    j as usize
                }
                _ => n - 1,
            };
            Ok(items.borrow_mut().remove(i))
        }
        _ => tuple_method(it, &Rc::new(items.borrow().clone()), name, pos, span),
    }
}

pub fn tuple_method(
    it: &mut Interp,
    items: &Rc<Vec<Value>>,
    name: &str,
    pos: Values,
    span: Span,
) -> R<Value> {
    arity(name, &pos, 1, 1, span)?;
    let mut count = 0;
    let mut first = None;
    for (i, v) in items.iter().enumerate() {
        if it.values_equal(v, &pos[0], span)? {
            count += 1;
            first.get_or_insert(i);
        }
    }
    match name {
        "count" => Ok(Value::int(count)),
        "index" => match first {
            Some(i) => Ok(Value::int(i as i64)),
            None => Err(err("value", "value is not in the sequence", span)),
        },
        _ => Err(err(
            "unknown-attribute",
            format!("no method `{name}`"),
            span,
        )),
    }
}

impl Interp<'_> {
    pub fn binop_compare(
        &mut self,
        op: crate::syntax::ast::CmpOp,
        a: &Value,
        b: &Value,
        span: Span,
    ) -> R<bool> {
        let v = self.compare_values(op, a, b, span)?;
        self.truthy(&v, span)
    }

    pub fn values_equal(&mut self, a: &Value, b: &Value, span: Span) -> R<bool> {
        if matches!(a, Value::Tensor(_)) || matches!(b, Value::Tensor(_)) {
            return Ok(matches!((a, b), (Value::Tensor(x), Value::Tensor(y)) if x == y));
        }
        self.binop_compare(crate::syntax::ast::CmpOp::Eq, a, b, span)
    }
}
