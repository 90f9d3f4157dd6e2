//! The interpreter: runs a function body statement by statement over the
//! abstract domain. Python's semantics for names, tuples, lists, loops (unrolled),
//! static conditions, helper calls (inlined) and operators; tensor operations
//! are handed to `apply.rs` through the op table.

use super::domain::*;
use super::state::{Machine, Meta, Mode};
use super::value::{Context, Value, Values};
use super::Functions;
use crate::ops::shape::{self, OpError};
use crate::ops::{did_you_mean, OpDef, OpTable};
use crate::report::Diagnostic;
use crate::sym::{Dims, SymInt};
use crate::syntax::ast::*;
use crate::syntax::Span;
use std::rc::Rc;

pub type R<T> = Result<T, Diagnostic>;

/// At most this many statements and expressions per function run.
const MAX_STEPS: u64 = 20_000_000;
/// At most this many nested helper calls.
const MAX_CALL_DEPTH: usize = 200;
/// At most this many iterations of one unrolled loop.
pub const MAX_LOOP: usize = 1_000_000;
/// At most this many tensors per run (bounds memory: a few hundred bytes each).
const MAX_TENSORS: usize = 5_000_000;

pub enum Flow {
    Next,
    Return(Value),
}

/// A function's variables: one place per slot of its names
/// (`FunctionDef::locals`, numbered by `syntax::resolve`). An empty place is
/// a name the run has not bound: reading it looks outside the function.
/// Names without a slot (bound while evaluating a parameter's default, say
/// by a comprehension there) live in `others`.
#[derive(Clone, Debug, Default)]
pub struct Env<'a> {
    names: &'a [Name],
    /// `FunctionDef::bound`: the slots of names the function binds.
    bound: &'a [bool],
    values: Vec<Option<Value>>,
    others: Vec<(Name, Value)>,
}

impl<'a> Env<'a> {
    /// The variables of a function with these locals (and which of them it
    /// binds: `FunctionDef::bound`), all unbound.
    pub fn new(names: &'a [Name], bound: &'a [bool]) -> Env<'a> {
        let mut values = Vec::new();
        values.resize_with(names.len(), || None);
        Env {
            names,
            bound,
            values,
            others: Vec::new(),
        }
    }

    /// What `Env::new` allocates for `names` names.
    pub fn bytes_for(names: usize) -> usize {
        names * std::mem::size_of::<Option<Value>>()
    }

    /// The value bound to a name with this slot.
    pub fn get(&self, slot: Slot, name: &str) -> Option<&Value> {
        match slot.index() {
            Some(i) => self.values.get(i)?.as_ref(),
            None => self.others.iter().find(|(n, _)| n == name).map(|(_, v)| v),
        }
    }

    pub fn set(&mut self, slot: Slot, name: &Name, value: Value) {
        match slot.index().and_then(|i| self.values.get_mut(i)) {
            Some(place) => *place = Some(value),
            None => match self.others.iter_mut().find(|(n, _)| n == name) {
                Some((_, v)) => *v = value,
                None => self.others.push((name.clone(), value)),
            },
        }
    }

    /// Unbinds a name (a comprehension's target after the loop).
    pub fn remove(&mut self, slot: Slot, name: &str) {
        match slot.index().and_then(|i| self.values.get_mut(i)) {
            Some(place) => *place = None,
            None => self.others.retain(|(n, _)| n != name),
        }
    }

    /// The bound names and their values, in slot order.
    pub fn iter(&self) -> impl Iterator<Item = (&Name, &Value)> + '_ {
        self.names
            .iter()
            .zip(&self.values)
            .filter_map(|(n, v)| Some((n, v.as_ref()?)))
            .chain(self.others.iter().map(|(n, v)| (n, v)))
    }

    pub fn keys(&self) -> impl Iterator<Item = &Name> + '_ {
        self.iter().map(|(n, _)| n)
    }

    /// The value bound to a name, found by its text (the REPL's `:info`).
    pub fn lookup_name(&self, name: &str) -> Option<&Value> {
        self.iter()
            .find(|(n, _)| n.as_str() == name)
            .map(|(_, v)| v)
    }
}

/// The tensors a function's variables hold, in lists and tuples too: the
/// ones Python keeps alive (`resize_()` reads them:
/// `Machine::bound_tensors`).
fn bound_tensors(env: &Env) -> Vec<TensorId> {
    fn walk(v: &Value, out: &mut Vec<TensorId>, depth: usize) {
        match v {
            Value::Tensor(t) => out.push(*t),
            Value::Tuple(items) if depth < 32 => {
                items.iter().for_each(|i| walk(i, out, depth + 1));
            }
            Value::List(items) if depth < 32 => {
                items.borrow().iter().for_each(|i| walk(i, out, depth + 1));
            }
            _ => {}
        }
    }
    let mut out = Vec::new();
    for (_, v) in env.iter() {
        walk(v, &mut out, 0);
    }
    out
}

/// An op's bound arguments, one per parameter (few: kept in place).
pub type ArgValues = smallvec::SmallVec<[Value; 5]>;

pub struct Interp<'a> {
    pub functions: &'a Functions<'a>,
    pub m: Machine,
    call_chain: Vec<(String, Span)>,
    /// The analysis: the tensors each calling function's variables hold,
    /// innermost last (`resize_()` reads them with the current function's:
    /// `Machine::bound_tensors`); kept only when some function of the
    /// program names `resize_` (`track_callers`).
    caller_bound: Vec<Vec<TensorId>>,
    track_callers: bool,
    steps: u64,
    /// Facts the run assumed (guards on symbolic sizes), with where.
    pub notes: Vec<(Span, String)>,
    /// The `return` statement that ran last: after the run, the entry
    /// function's, where PyTorch reads the outputs' metadata.
    pub returned_at: Option<Span>,
    /// Names of all tensor methods / torch functions, for suggestions.
    table: &'static OpTable,
}

pub fn op_error(e: OpError, span: Span) -> Diagnostic {
    let mut d = Diagnostic::error(e.code, e.message, span);
    if let Some(h) = e.help {
        d = d.with_help(h);
    }
    for (s, text) in e.labels {
        if s != span && !s.is_empty() {
            d = d.with_secondary(s, text);
        }
    }
    d
}

fn err(code: &'static str, msg: impl Into<String>, span: Span) -> Diagnostic {
    Diagnostic::error(code, msg, span)
}

/// The non-op functions of `torch` that `.tp` programs may call (grad mode,
/// autocast, queries); `builtins.rs` implements them.
const TORCH_FUNCTIONS: &[&str] = &[
    "no_grad",
    "enable_grad",
    "inference_mode",
    "set_grad_enabled",
    "autocast",
    "set_autocast_enabled",
    "is_grad_enabled",
    "is_inference_mode_enabled",
    "is_autocast_enabled",
    "device",
    "Size",
    "is_tensor",
    "result_type",
    "promote_types",
    "broadcast_shapes",
    "numel",
];

/// Python builtins and prelude functions in scope in every function.
pub const BUILTINS: &[&str] = &[
    "len",
    "range",
    "min",
    "max",
    "abs",
    "int",
    "float",
    "bool",
    "tuple",
    "list",
    "isinstance",
    "zip",
    "enumerate",
    "custom_view",
    "print",
    "sum",
    "reversed",
    "Tensor",
];

impl<'a> Interp<'a> {
    pub fn new(functions: &'a Functions<'a>, mode: Mode) -> Interp<'a> {
        Interp {
            functions,
            m: Machine::new(mode),
            call_chain: Vec::new(),
            caller_bound: Vec::new(),
            track_callers: mode == Mode::Analysis && functions.values().any(|d| d.resizes),
            steps: 0,
            notes: Vec::new(),
            returned_at: None,
            table: OpTable::get(),
        }
    }

    /// Runs a view op the program dispatches itself (`entry`: one whose
    /// ADInplaceOrView kernel shares the base's version counter with the
    /// output, called under inference_mode): the first view it makes is
    /// checked for that (`Machine::view_of`), the views of its
    /// decomposition are not.
    #[inline(always)]
    pub(super) fn dispatched_view<T>(
        &mut self,
        entry: bool,
        f: impl FnOnce(&mut Self) -> R<T>,
    ) -> R<T> {
        if !entry || self.m.mode != Mode::Analysis {
            return f(self);
        }
        self.m.view_entry = true;
        let out = f(self);
        self.m.view_entry = false;
        out
    }

    #[inline]
    fn step(&mut self, span: Span) -> R<()> {
        self.steps += 1;
        if self.m.tensors.len() > MAX_TENSORS || self.steps > MAX_STEPS {
            return Err(self.over_limit(span));
        }
        Ok(())
    }

    /// The error of a program past a limit (`step`).
    #[cold]
    #[inline(never)]
    fn over_limit(&self, span: Span) -> Diagnostic {
        let what = if self.m.tensors.len() > MAX_TENSORS {
            format!("the program makes more than {MAX_TENSORS} tensors")
        } else {
            format!("the program runs more than {MAX_STEPS} steps")
        };
        err("limit", what, span)
            .with_help("tpi unrolls loops and inlines calls; make the loops smaller")
    }

    /// Moves the guards decided so far into `notes`, attached to `span`.
    fn take_assumptions(&mut self, span: Span) {
        for a in std::mem::take(&mut self.m.sizes.assumptions) {
            if !self.notes.iter().any(|(_, n)| *n == a) {
                self.notes.push((span, a));
            }
        }
    }

    // ------------------------------------------------------------ statements

    pub fn exec_block(&mut self, env: &mut Env, stmts: &[Stmt]) -> R<Flow> {
        for s in stmts {
            if let Flow::Return(v) = self.exec_stmt(env, s)? {
                return Ok(Flow::Return(v));
            }
        }
        Ok(Flow::Next)
    }

    fn exec_stmt(&mut self, env: &mut Env, stmt: &Stmt) -> R<Flow> {
        self.step(stmt.span)?;
        let flow = match &stmt.kind {
            StmtKind::Expr(e) => {
                self.eval(env, e)?;
                Flow::Next
            }
            StmtKind::Assign { targets, value } => {
                let v = self.eval(env, value)?;
                for t in targets {
                    self.assign(env, t, v.clone(), stmt.span)?;
                }
                Flow::Next
            }
            StmtKind::AnnAssign {
                target,
                value,
                annotation,
            } => {
                match value {
                    Some(v) => {
                        let v = self.eval(env, v)?;
                        self.assign(env, target, v, stmt.span)?;
                    }
                    None => {
                        return Err(err(
                            "syntax",
                            "a bare annotation declares an input only in the REPL",
                            annotation.span,
                        ))
                    }
                }
                Flow::Next
            }
            StmtKind::AugAssign { target, op, value } => {
                self.aug_assign(env, target, *op, value, stmt.span)?;
                Flow::Next
            }
            StmtKind::Return(e) => {
                let v = match e {
                    Some(e) => self.eval(env, e)?,
                    None => Value::None,
                };
                self.returned_at = Some(stmt.span);
                Flow::Return(v)
            }
            StmtKind::Pass => Flow::Next,
            StmtKind::Assert { cond, msg } => {
                let c = self.eval(env, cond)?;
                if !self.truthy(&c, cond.span)? {
                    let text = match msg {
                        Some(m) => match self.eval(env, m)? {
                            Value::Str(s) => s.to_string(),
                            other => self.show_value(&other),
                        },
                        None => "assertion failed".to_string(),
                    };
                    return Err(
                        err("assert", format!("assertion failed: {text}"), cond.span)
                            .with_label("this condition is false"),
                    );
                }
                Flow::Next
            }
            StmtKind::If { cond, body, orelse } => {
                let c = self.eval(env, cond)?;
                let take = self.truthy(&c, cond.span)?;
                self.take_assumptions(cond.span);
                if take {
                    self.exec_block(env, body)?
                } else {
                    self.exec_block(env, orelse)?
                }
            }
            StmtKind::For { target, iter, body } => {
                let seq = self.eval(env, iter)?;
                let items = self.iterate(&seq, iter.span)?;
                if items.len() > MAX_LOOP {
                    return Err(err(
                        "limit",
                        format!("a loop of {} iterations is too long to unroll", items.len()),
                        iter.span,
                    ));
                }
                for item in items {
                    self.assign(env, target, item, target.span)?;
                    if let Flow::Return(v) = self.exec_block(env, body)? {
                        return Ok(Flow::Return(v));
                    }
                }
                Flow::Next
            }
            StmtKind::With { items, body } => {
                let mut restores = Vec::new();
                for item in items {
                    let ctx = self.eval(env, &item.context)?;
                    let Value::Context(ctx) = ctx else {
                        return Err(err(
                            "type",
                            format!("a `{}` is not a context manager tpi knows", ctx.type_name()),
                            item.context.span,
                        )
                        .with_help("use torch.no_grad(), torch.enable_grad(), torch.inference_mode(), torch.set_grad_enabled(b) or torch.autocast(...)"));
                    };
                    restores.push(self.enter(&ctx));
                    if let Some(t) = &item.target {
                        self.assign(env, t, Value::Context(ctx), t.span)?;
                    }
                }
                let result = self.exec_block(env, body);
                for r in restores.into_iter().rev() {
                    self.restore(r);
                }
                result?
            }
        };
        Ok(flow)
    }

    /// Enters a context; returns what leaving it restores.
    fn enter(&mut self, ctx: &Context) -> Restore {
        let modes = Restore::Modes {
            grad_enabled: self.m.grad_enabled,
            inference_mode: self.m.inference_mode,
        };
        match ctx {
            Context::NoGrad => self.m.grad_enabled = false,
            Context::EnableGrad => self.m.grad_enabled = true,
            Context::SetGradEnabled { previous } => {
                // The call already switched the mode; leaving restores `previous`.
                return Restore::Modes {
                    grad_enabled: *previous,
                    inference_mode: self.m.inference_mode,
                };
            }
            Context::InferenceMode(on) => {
                // c10::InferenceMode(enabled) sets grad mode to !enabled.
                self.m.inference_mode = *on;
                self.m.made_inference |= *on;
                self.m.grad_enabled = !*on;
            }
            Context::Autocast {
                device,
                enabled,
                dtype,
            } => {
                let saved = self.m.autocast.clone();
                if let Some(a) = self.m.autocast.iter_mut().find(|a| a.device == *device) {
                    a.enabled = *enabled;
                    if let Some(d) = dtype {
                        a.dtype = *d;
                    }
                }
                return Restore::Autocast(saved);
            }
        }
        modes
    }

    fn restore(&mut self, saved: Restore) {
        match saved {
            Restore::Modes {
                grad_enabled,
                inference_mode,
            } => {
                self.m.grad_enabled = grad_enabled;
                self.m.inference_mode = inference_mode;
            }
            Restore::Autocast(a) => self.m.autocast = a,
        }
    }

    fn aug_assign(
        &mut self,
        env: &mut Env,
        target: &Expr,
        op: BinOp,
        value: &Expr,
        span: Span,
    ) -> R<()> {
        let rhs = self.eval(env, value)?;
        match &target.kind {
            ExprKind::Name(name, slot) => {
                let cur = self.lookup(env, *slot, name, target.span)?;
                let new = self.inplace_binop(cur, op, rhs, span)?;
                env.set(*slot, name, new);
                Ok(())
            }
            ExprKind::Subscript { value: obj, index } => {
                // Python: tmp = obj[i]; tmp = tmp.__iop__(rhs); obj[i] = tmp
                let o = self.eval(env, obj)?;
                let idx = self.eval(env, index)?;
                let cur = self.subscript(&o, &idx, target.span)?;
                let new = self.inplace_binop(cur, op, rhs, span)?;
                self.setitem(&o, &idx, new, span)
            }
            ExprKind::Attribute { .. } => Err(err(
                "unsupported",
                "augmented assignment to an attribute is not supported",
                target.span,
            )),
            _ => Err(err(
                "syntax",
                "this cannot be the target of an augmented assignment",
                target.span,
            )),
        }
    }

    /// `a op= b`: the in-place op for tensors, plain rebinding otherwise.
    fn inplace_binop(&mut self, cur: Value, op: BinOp, rhs: Value, span: Span) -> R<Value> {
        if let Value::Tensor(_) = cur {
            let name = match op {
                BinOp::Add => "add_",
                BinOp::Sub => "sub_",
                BinOp::Mul => "mul_",
                BinOp::Div => "div_",
                BinOp::FloorDiv => "floor_divide_",
                BinOp::Mod => "remainder_",
                BinOp::Pow => "pow_",
                BinOp::BitAnd => "bitwise_and_",
                BinOp::BitOr => "bitwise_or_",
                BinOp::BitXor => "bitwise_xor_",
                BinOp::LShift => "__ilshift__",
                BinOp::RShift => "__irshift__",
                BinOp::MatMul => return self.binop(op, cur, rhs, span),
            };
            return self.call_op(name, smallvec::smallvec![cur, rhs], Vec::new(), span);
        }
        if let Value::List(items) = &cur {
            if op == BinOp::Add {
                let extra = self.iterate(&rhs, span)?;
                items.borrow_mut().extend(extra);
                return Ok(cur);
            }
        }
        self.binop(op, cur, rhs, span)
    }

    pub fn assign(&mut self, env: &mut Env, target: &Expr, value: Value, span: Span) -> R<()> {
        match &target.kind {
            ExprKind::Name(name, slot) => {
                env.set(*slot, name, value);
                Ok(())
            }
            ExprKind::Tuple(targets) | ExprKind::List(targets) => {
                let items = self.iterate(&value, span)?;
                let star = targets
                    .iter()
                    .position(|t| matches!(t.kind, ExprKind::Starred(_)));
                match star {
                    None => {
                        if items.len() != targets.len() {
                            return Err(err(
                                "unpack",
                                format!(
                                    "cannot unpack {} values into {} names",
                                    items.len(),
                                    targets.len()
                                ),
                                target.span,
                            ));
                        }
                        for (t, v) in targets.iter().zip(items) {
                            self.assign(env, t, v, span)?;
                        }
                    }
                    Some(si) => {
                        let after = targets.len() - si - 1;
                        if items.len() < targets.len() - 1 {
                            return Err(err(
                                "unpack",
                                format!(
                                    "not enough values to unpack (expected at least {}, got {})",
                                    targets.len() - 1,
                                    items.len()
                                ),
                                target.span,
                            ));
                        }
                        for (t, v) in targets[..si].iter().zip(items.iter()) {
                            self.assign(env, t, v.clone(), span)?;
                        }
                        let rest: Vec<Value> = items[si..items.len() - after].to_vec();
                        if let ExprKind::Starred(inner) = &targets[si].kind {
                            self.assign(env, inner, Value::list(rest), span)?;
                        }
                        for (t, v) in targets[si + 1..]
                            .iter()
                            .zip(items[items.len() - after..].iter())
                        {
                            self.assign(env, t, v.clone(), span)?;
                        }
                    }
                }
                Ok(())
            }
            ExprKind::Subscript { value: obj, index } => {
                let o = self.eval(env, obj)?;
                let idx = self.eval(env, index)?;
                self.setitem(&o, &idx, value, span)
            }
            ExprKind::Starred(_) => Err(err(
                "syntax",
                "a starred name must be inside a tuple or list target",
                target.span,
            )),
            ExprKind::Attribute { attr, .. } => Err(err(
                "unsupported",
                format!("assigning to the attribute `{attr}` is not supported"),
                target.span,
            )
            .with_help("use the method instead, e.g. `x.requires_grad_(True)`")),
            _ => Err(err(
                "syntax",
                "cannot assign to this expression",
                target.span,
            )),
        }
    }

    /// `obj[idx] = value`.
    fn setitem(&mut self, obj: &Value, idx: &Value, value: Value, span: Span) -> R<()> {
        match obj {
            Value::Tensor(t) => super::apply::setitem(self, *t, idx, value, span),
            Value::List(items) => {
                let n = items.borrow().len();
                let i = self.index_of(idx, n, "list assignment", span)?;
                items.borrow_mut()[i] = value;
                Ok(())
            }
            other => Err(err(
                "type",
                format!("a `{}` does not support item assignment", other.type_name()),
                span,
            )),
        }
    }

    // ------------------------------------------------------------ expressions

    pub fn lookup(&mut self, env: &Env, slot: Slot, name: &str, span: Span) -> R<Value> {
        if let Some(v) = env.get(slot, name) {
            return Ok(v.clone());
        }
        if slot
            .index()
            .is_some_and(|i| env.bound.get(i) == Some(&true))
        {
            // Python's UnboundLocalError: the function binds the name, so
            // it is local everywhere in it, also before the binding runs.
            return Err(err(
                "unbound-local",
                format!("cannot access local variable '{name}' where it is not associated with a value"),
                span,
            )
            .with_label("read before a value is bound to it")
            .with_help(format!("`{name}` is assigned in this function, which makes it local to all of it: bind it on every path before this read")));
        }
        if self.functions.contains_key(name) {
            return Ok(Value::Function(Rc::from(name)));
        }
        match name {
            "torch" => return Ok(Value::Module(Rc::from("torch"))),
            "F" => return Ok(Value::Module(Rc::from("torch.nn.functional"))),
            "nn" => return Ok(Value::Module(Rc::from("torch.nn"))),
            _ => {}
        }
        if let Some(b) = BUILTINS.iter().find(|b| **b == name) {
            return Ok(Value::Builtin(b));
        }
        let candidates: Vec<&str> = env
            .keys()
            .map(Name::as_str)
            .chain(self.functions.keys().map(Name::as_str))
            .chain(["torch", "F"])
            .chain(BUILTINS.iter().copied())
            .collect();
        let mut d = err("unknown-name", format!("unknown name `{name}`"), span)
            .with_label("not defined here");
        if let Some(s) = did_you_mean(name, candidates.into_iter()) {
            d = d.with_help(format!("did you mean `{s}`?"));
        }
        Err(d)
    }

    pub fn eval(&mut self, env: &mut Env, e: &Expr) -> R<Value> {
        self.step(e.span)?;
        Ok(match &e.kind {
            ExprKind::Name(n, slot) => self.lookup(env, *slot, n, e.span)?,
            ExprKind::Int(i) => Value::int(*i),
            ExprKind::Float(f) => Value::Float(*f),
            ExprKind::Str(s) => Value::Str(Rc::from(s.as_str())),
            ExprKind::Bool(b) => Value::Bool(*b),
            ExprKind::None => Value::None,
            ExprKind::Ellipsis => Value::Ellipsis,
            ExprKind::Tuple(items) => Value::tuple(self.eval_items(env, items)?),
            ExprKind::List(items) => Value::list(self.eval_items(env, items)?),
            ExprKind::Starred(_) => {
                return Err(err(
                    "syntax",
                    "a starred expression is only allowed in a call or a target",
                    e.span,
                ))
            }
            ExprKind::Attribute { value, attr } => {
                let v = self.eval(env, value)?;
                self.getattr(v, attr, e.attr_span(), e.span)?
            }
            ExprKind::Call(call) => {
                let Call {
                    func,
                    args,
                    keywords,
                } = &**call;
                // `tensor.method(...)`: the method is resolved here, without
                // making the bound-method value (a box) that `getattr` would.
                // The steps and the order of evaluation are `eval(func)`'s.
                let mut method = None;
                let f = match &func.kind {
                    ExprKind::Attribute { value, attr } => {
                        self.step(func.span)?;
                        let v = self.eval(env, value)?;
                        match (&v, super::apply::direct_tensor_method(attr)) {
                            (Value::Tensor(t), Some(op)) => {
                                method = Some((*t, op, attr.as_str()));
                                Value::None
                            }
                            _ => self.getattr(v, attr, func.attr_span(), func.span)?,
                        }
                    }
                    _ => self.eval(env, func)?,
                };
                let mut pos = Values::with_capacity(args.len());
                for a in args {
                    if let ExprKind::Starred(inner) = &a.kind {
                        let v = self.eval(env, inner)?;
                        pos.extend(self.iterate(&v, inner.span)?);
                    } else {
                        pos.push(self.eval(env, a)?);
                    }
                }
                let mut kw = Vec::with_capacity(keywords.len());
                for k in keywords {
                    kw.push((k.name.name.clone(), self.eval(env, &k.value)?));
                }
                let resizes = match (&method, &f) {
                    (Some((_, op, _)), _) => op.name == "resize_",
                    (None, Value::Op { name, .. }) => &**name == "resize_",
                    _ => false,
                };
                if resizes && self.m.mode == Mode::Analysis {
                    let mut bound = bound_tensors(env);
                    bound.extend(self.caller_bound.iter().flatten().copied());
                    self.m.bound_tensors = bound;
                }
                // A helper's resize_() also sees the callers' variables.
                let helper = self.track_callers && matches!(f, Value::Function(_));
                if helper {
                    self.caller_bound.push(bound_tensors(env));
                }
                let v = match method {
                    Some((t, op, spelling)) => {
                        if op.checks_arguments {
                            binding_index_list(op.name, pos.first(), &kw, e.span)?;
                        }
                        let entry = self.m.inference_mode
                            && super::apply::view_kernel_shares_version(op, spelling, &pos);
                        self.dispatched_view(entry, |it| {
                            super::apply::call_tensor_method(it, t, op, pos, kw, e.span)
                        })?
                    }
                    None => {
                        let r = self.call(f, pos, kw, e.span, func.span);
                        if helper {
                            self.caller_bound.pop();
                        }
                        r?
                    }
                };
                self.take_assumptions(e.span);
                v
            }
            ExprKind::Subscript { value, index } => {
                let v = self.eval(env, value)?;
                let i = self.eval(env, index)?;
                let r = self.subscript(&v, &i, e.span)?;
                self.take_assumptions(e.span);
                r
            }
            ExprKind::Slice { lower, upper, step } => {
                let mut part = |x: &Option<Box<Expr>>| -> R<Option<SymInt>> {
                    match x {
                        None => Ok(None),
                        Some(x) => match self.eval(env, x)? {
                            Value::None => Ok(None),
                            Value::Int(i) => Ok(Some(i)),
                            Value::Bool(b) => Ok(Some(SymInt::int(b as i64))),
                            other => Err(err(
                                "type",
                                format!(
                                    "slice indices must be integers, got a `{}`",
                                    other.type_name()
                                ),
                                x.span,
                            )),
                        },
                    }
                };
                let (a, b, c) = (part(lower)?, part(upper)?, part(step)?);
                Value::Slice(Box::new([a, b, c]))
            }
            ExprKind::BinOp { op, left, right } => {
                let l = self.eval(env, left)?;
                let r = self.eval(env, right)?;
                let v = self.binop(*op, l, r, e.span)?;
                self.take_assumptions(e.span);
                v
            }
            ExprKind::UnaryOp { op, operand } => {
                let v = self.eval(env, operand)?;
                self.unary(*op, v, e.span)?
            }
            ExprKind::BoolOp { op, values } => {
                let mut last = Value::None;
                for v in values.iter() {
                    last = self.eval(env, v)?;
                    let t = self.truthy(&last, v.span)?;
                    match op {
                        BoolOp::And if !t => return Ok(last),
                        BoolOp::Or if t => return Ok(last),
                        _ => {}
                    }
                }
                last
            }
            ExprKind::Compare { left, ops } => {
                let mut l = self.eval(env, left)?;
                let mut result = Value::Bool(true);
                for (i, (op, right)) in ops.iter().enumerate() {
                    let r = self.eval(env, right)?;
                    let v = self.compare(*op, &l, &r, e.span)?;
                    if ops.len() == 1 {
                        return Ok(v);
                    }
                    if !self.truthy(&v, e.span)? {
                        return Ok(Value::Bool(false));
                    }
                    result = v;
                    l = r;
                    let _ = i;
                }
                result
            }
            ExprKind::IfExp { cond, body, orelse } => {
                let c = self.eval(env, cond)?;
                if self.truthy(&c, cond.span)? {
                    self.eval(env, body)?
                } else {
                    self.eval(env, orelse)?
                }
            }
            ExprKind::ListComp(comp) => {
                let ListComp {
                    elt,
                    target,
                    iter,
                    cond,
                } = &**comp;
                let seq = self.eval(env, iter)?;
                let items = self.iterate(&seq, iter.span)?;
                // Python 3 comprehensions have their own scope: the target's
                // names are bound in `env` for the loop and given back their
                // outer values after it (only the target assigns; copying the
                // whole environment instead would cost O(names) per
                // comprehension in a big function).
                let mut names = Vec::new();
                target_names(target, &mut names);
                let outer: Vec<(&Name, Slot, Option<Value>)> = names
                    .into_iter()
                    .map(|(n, slot)| (n, slot, env.get(slot, n).cloned()))
                    .collect();
                let out = self.comprehension(env, elt, target, cond.as_ref(), items);
                for (name, slot, value) in outer {
                    match value {
                        Some(v) => env.set(slot, name, v),
                        None => env.remove(slot, name),
                    };
                }
                Value::list(out?)
            }
        })
    }

    /// The items of `[elt for target in items if cond]`, with the target's
    /// names bound in `env`.
    fn comprehension(
        &mut self,
        env: &mut Env,
        elt: &Expr,
        target: &Expr,
        cond: Option<&Expr>,
        items: Vec<Value>,
    ) -> R<Vec<Value>> {
        let mut out = Vec::new();
        for item in items {
            self.assign(env, target, item, target.span)?;
            if let Some(c) = cond {
                let cv = self.eval(env, c)?;
                if !self.truthy(&cv, c.span)? {
                    continue;
                }
            }
            out.push(self.eval(env, elt)?);
        }
        Ok(out)
    }

    fn eval_items(&mut self, env: &mut Env, items: &[Expr]) -> R<Vec<Value>> {
        let mut out = Vec::with_capacity(items.len());
        for i in items {
            if let ExprKind::Starred(inner) = &i.kind {
                let v = self.eval(env, inner)?;
                out.extend(self.iterate(&v, inner.span)?);
            } else {
                out.push(self.eval(env, i)?);
            }
        }
        Ok(out)
    }

    /// Python truthiness, for static values only.
    pub fn truthy(&mut self, v: &Value, span: Span) -> R<bool> {
        Ok(match v {
            Value::None => false,
            Value::Bool(b) => *b,
            Value::Int(i) => !self.m.sizes.eq_int(i, 0),
            Value::Float(f) => *f != 0.0,
            Value::Str(s) => !s.is_empty(),
            Value::Tuple(t) => !t.is_empty(),
            Value::List(l) => !l.borrow().is_empty(),
            Value::Tensor(t) => {
                self.one_element(*t, true, span)?;
                return Err(err(
                    "data-dependent",
                    "this condition depends on the data of a tensor, which tpi does not know",
                    span,
                )
                .with_help(
                    "conditions must be static: shapes, dims, dtypes, requires_grad, numbers",
                ));
            }
            _ => true,
        })
    }

    /// Eager `Tensor.__bool__` (`truth`), `int()` or `float()` of a tensor
    /// that has not exactly one element raises whatever its data. A
    /// one-element tensor's answer is its data. (The analysis fails on
    /// every tensor: its caller's error.) Symbolic sizes are at least 2.
    pub fn one_element(&mut self, t: TensorId, truth: bool, span: Span) -> R<()> {
        if self.m.mode != Mode::Eager {
            return Ok(());
        }
        let sizes = self.m.t(t).sizes();
        let empty = sizes.iter().any(|s| s.as_int() == Some(0));
        if !empty && sizes.iter().all(|s| s.as_int() == Some(1)) {
            return Ok(());
        }
        let message = match (truth, empty) {
            (true, true) => "Boolean value of Tensor with no values is ambiguous",
            (true, false) => "Boolean value of Tensor with more than one value is ambiguous",
            (false, _) => "only one element tensors can be converted to Python scalars",
        };
        Err(err("other", message, span).with_help(
            "reduce the tensor first (`x.any()`, `x.all()`, `x.sum()`), or test a shape",
        ))
    }

    /// The items of an iterable value (tensors iterate as `unbind(0)`).
    pub fn iterate(&mut self, v: &Value, span: Span) -> R<Vec<Value>> {
        match v {
            Value::Tuple(t) => Ok(t.as_ref().clone()),
            Value::List(l) => Ok(l.borrow().clone()),
            Value::Tensor(t) => {
                if self.m.python_geometry(*t).sizes().is_empty() {
                    // Tensor.__iter__ (torch/_tensor.py) reads the rank Python
                    // sees (stale after set_); unbind runs on the real sizes.
                    return Err(err("other", "iteration over a 0-d tensor", span));
                }
                let entry = self.m.inference_mode;
                let r = self.dispatched_view(entry, |it| {
                    it.call_op(
                        "unbind",
                        smallvec::smallvec![v.clone(), Value::int(0)],
                        Vec::new(),
                        span,
                    )
                })?;
                Ok(r.sequence().unwrap_or_default())
            }
            Value::Str(s) => Ok(s
                .chars()
                .map(|c| Value::Str(Rc::from(c.to_string().as_str())))
                .collect()),
            other => Err(err(
                "type",
                format!("a `{}` is not iterable", other.type_name()),
                span,
            )),
        }
    }

    pub fn show_value(&self, v: &Value) -> String {
        match v {
            Value::None => "None".into(),
            Value::Bool(b) => if *b { "True" } else { "False" }.into(),
            Value::Int(i) => i.to_string(),
            Value::Float(f) => format!("{f:?}"),
            Value::Str(s) => format!("{s:?}"),
            Value::Tensor(t) => {
                let t = &self.m.tensors[*t];
                format!("Tensor{} {}", shape::show(t.sizes()), t.dtype.name())
            }
            Value::Tuple(items) => {
                let parts: Vec<String> = items.iter().map(|i| self.show_value(i)).collect();
                if parts.len() == 1 {
                    format!("({},)", parts[0])
                } else {
                    format!("({})", parts.join(", "))
                }
            }
            Value::List(items) => {
                let parts: Vec<String> =
                    items.borrow().iter().map(|i| self.show_value(i)).collect();
                format!("[{}]", parts.join(", "))
            }
            Value::Dtype(d) => format!("torch.{}", d.name()),
            Value::MemoryFormat(f) => format!("torch.{}", f.name()),
            other => other.type_name().to_string(),
        }
    }

    // ------------------------------------------------------------ numbers

    fn as_number(v: &Value) -> Option<Num> {
        match v {
            Value::Int(i) => Some(Num::Int(i.clone())),
            Value::Bool(b) => Some(Num::Int(SymInt::int(*b as i64))),
            Value::Float(f) => Some(Num::Float(*f)),
            _ => None,
        }
    }

    fn num_float(&self, n: &Num) -> Option<f64> {
        match n {
            Num::Float(f) => Some(*f),
            Num::Int(i) => i
                .as_int()
                .map(|v| v as f64)
                .or_else(|| self.m.sizes.env.hint(i).map(|v| v as f64)),
        }
    }

    pub fn binop(&mut self, op: BinOp, l: Value, r: Value, span: Span) -> R<Value> {
        if matches!(l, Value::Tensor(_)) || matches!(r, Value::Tensor(_)) {
            return super::apply::tensor_binop(self, op, l, r, span);
        }
        // Sequences.
        match (&l, &r, op) {
            (Value::Tuple(a), Value::Tuple(b), BinOp::Add) => {
                let mut v = a.as_ref().clone();
                v.extend(b.iter().cloned());
                return Ok(Value::tuple(v));
            }
            (Value::List(a), Value::List(b), BinOp::Add) => {
                let mut v = a.borrow().clone();
                v.extend(b.borrow().iter().cloned());
                return Ok(Value::list(v));
            }
            (Value::Str(a), Value::Str(b), BinOp::Add) => {
                return Ok(Value::Str(Rc::from(format!("{a}{b}").as_str())))
            }
            (Value::Tuple(_) | Value::List(_), Value::Int(n), BinOp::Mul)
            | (Value::Int(n), Value::Tuple(_) | Value::List(_), BinOp::Mul) => {
                let seq = if matches!(l, Value::Int(_)) { &r } else { &l };
                let items = seq.sequence().unwrap_or_default();
                let times = self
                    .m
                    .sizes
                    .concrete(n, "repeating a sequence")
                    .map_err(|e| op_error(e, span))?
                    .max(0) as usize;
                if items.len().saturating_mul(times) > MAX_LOOP {
                    return Err(err("limit", "this sequence would be too long", span));
                }
                let out: Vec<Value> = (0..times).flat_map(|_| items.iter().cloned()).collect();
                return Ok(if matches!(seq, Value::List(_)) {
                    Value::list(out)
                } else {
                    Value::tuple(out)
                });
            }
            _ => {}
        }
        let (Some(a), Some(b)) = (Self::as_number(&l), Self::as_number(&r)) else {
            return Err(err(
                "type",
                format!(
                    "unsupported operand types for {}: `{}` and `{}`",
                    op.symbol(),
                    l.type_name(),
                    r.type_name()
                ),
                span,
            ));
        };
        let sym_err = |e: crate::sym::SymError| op_error(OpError::from(e), span);
        if let (Num::Int(x), Num::Int(y)) = (&a, &b) {
            let v = match op {
                BinOp::Add => x.add(y).map_err(sym_err)?,
                BinOp::Sub => x.sub(y).map_err(sym_err)?,
                BinOp::Mul => x.mul(y).map_err(sym_err)?,
                BinOp::FloorDiv => x
                    .floordiv(y)
                    .map_err(|_| err("zero-division", "integer division by zero", span))?,
                BinOp::Mod => x
                    .modulo(y)
                    .map_err(|_| err("zero-division", "integer modulo by zero", span))?,
                BinOp::Div => {
                    let (fx, fy) = (self.num_float(&a), self.num_float(&b));
                    return match (fx, fy) {
                        (Some(_), Some(0.0)) => Err(err("zero-division", "division by zero", span)),
                        (Some(fx), Some(fy)) if x.as_int().is_some() && y.as_int().is_some() => {
                            Ok(Value::Float(fx / fy))
                        }
                        (Some(fx), Some(fy)) => {
                            // A SymFloat in PyTorch: a number for the ops it
                            // reaches (a float scalar), taken at the sizes'
                            // hints. (A size made of it, `int(x.size(0) / 2)`,
                            // is specialised here where PyTorch keeps it symbolic.)
                            let note = format!(
                                "`{} / {}` (a SymFloat in PyTorch) is {}, its value at the sizes' hints",
                                self.m.sizes.env.display(x),
                                self.m.sizes.env.display(y),
                                fx / fy
                            );
                            if !self.notes.iter().any(|(_, n)| *n == note) {
                                self.notes.push((span, note));
                            }
                            Ok(Value::Float(fx / fy))
                        }
                        _ => Err(err(
                            "symbolic",
                            "true division of symbolic sizes is not supported",
                            span,
                        )
                        .with_help("use `//`")),
                    };
                }
                BinOp::Pow => {
                    if let (None, Some(by @ 0..=64)) = (x.as_int(), y.as_int()) {
                        // SymInt.__pow__ with a natural exponent
                        // (`pow_by_natural`): the product of `by` copies.
                        let mut v = SymInt::int(1);
                        for _ in 0..by {
                            v = v.mul(x).map_err(sym_err)?;
                        }
                        return Ok(Value::Int(v));
                    }
                    let symbolic = x.as_int().is_none() || y.as_int().is_none();
                    let hints = (self.m.sizes.env.hint(x), self.m.sizes.env.hint(y));
                    let (Some(bx), Some(by)) = hints else {
                        return Err(err(
                            "symbolic",
                            "powers of symbolic sizes are not supported",
                            span,
                        ));
                    };
                    if symbolic {
                        // PowByNatural (or a SymFloat for a negative
                        // exponent) in PyTorch, which tpi has no atom for:
                        // the value at the sizes' hints.
                        let note = format!(
                            "`{} ** {}` (symbolic in PyTorch) has its value at the sizes' hints",
                            self.m.sizes.env.display(x),
                            self.m.sizes.env.display(y),
                        );
                        if !self.notes.iter().any(|(_, n)| *n == note) {
                            self.notes.push((span, note));
                        }
                    }
                    if by < 0 {
                        return Ok(Value::Float((bx as f64).powi(by as i32)));
                    }
                    let e = u32::try_from(by).map_err(|_| {
                        op_error(OpError::from(crate::sym::SymError::Overflow), span)
                    })?;
                    return bx.checked_pow(e).map(Value::int).ok_or_else(|| {
                        op_error(OpError::from(crate::sym::SymError::Overflow), span)
                    });
                }
                BinOp::BitAnd | BinOp::BitOr | BinOp::BitXor | BinOp::LShift | BinOp::RShift => {
                    if let (None, Some(by @ 0..=62), BinOp::LShift | BinOp::RShift) =
                        (x.as_int(), y.as_int(), op)
                    {
                        // SymInt's lshift/rshift: times or floor-divided by 2**by.
                        let p = SymInt::int(1 << by);
                        let v = if op == BinOp::LShift {
                            x.mul(&p).map_err(sym_err)?
                        } else {
                            x.floordiv(&p).map_err(sym_err)?
                        };
                        return Ok(Value::Int(v));
                    }
                    let (Some(bx), Some(by)) = (x.as_int(), y.as_int()) else {
                        return Err(err(
                            "symbolic",
                            "bit operations on symbolic sizes are not supported",
                            span,
                        ));
                    };
                    let v = match op {
                        BinOp::BitAnd => bx & by,
                        BinOp::BitOr => bx | by,
                        BinOp::BitXor => bx ^ by,
                        BinOp::LShift => bx.checked_shl(by as u32).ok_or_else(|| {
                            op_error(OpError::from(crate::sym::SymError::Overflow), span)
                        })?,
                        _ => bx >> by.clamp(0, 63),
                    };
                    return Ok(Value::int(v));
                }
                BinOp::MatMul => {
                    return Err(err(
                        "type",
                        "unsupported operand types for @: numbers",
                        span,
                    ))
                }
            };
            // bool op bool on & | ^ keep bool in Python; ints otherwise.
            return Ok(Value::Int(v));
        }
        let (Some(x), Some(y)) = (self.num_float(&a), self.num_float(&b)) else {
            return Err(err(
                "symbolic",
                "float arithmetic on symbolic sizes is not supported",
                span,
            ));
        };
        let v = match op {
            BinOp::Add => x + y,
            BinOp::Sub => x - y,
            BinOp::Mul => x * y,
            BinOp::Div => {
                if y == 0.0 {
                    return Err(err("zero-division", "float division by zero", span));
                }
                x / y
            }
            BinOp::FloorDiv => {
                if y == 0.0 {
                    return Err(err("zero-division", "float floor division by zero", span));
                }
                (x / y).floor()
            }
            BinOp::Mod => {
                if y == 0.0 {
                    return Err(err("zero-division", "float modulo by zero", span));
                }
                x - y * (x / y).floor()
            }
            BinOp::Pow => x.powf(y),
            _ => {
                return Err(err(
                    "type",
                    format!("unsupported operand types for {}: floats", op.symbol()),
                    span,
                ))
            }
        };
        Ok(Value::Float(v))
    }

    fn unary(&mut self, op: UnaryOp, v: Value, span: Span) -> R<Value> {
        if let Value::Tensor(_) = v {
            let name = match op {
                UnaryOp::Neg => "neg",
                UnaryOp::Pos => {
                    // Tensor.__pos__ is torch.positive, which refuses bool.
                    if let Value::Tensor(t) = &v {
                        if self.m.t(*t).dtype == DType::Bool {
                            return Err(err(
                                "other",
                                "The `+` operator, on a bool tensor is not supported.",
                                span,
                            ));
                        }
                    }
                    return Ok(v);
                }
                UnaryOp::Invert => {
                    // Tensor.__invert__ (torch/_tensor.py) checks in Python.
                    if let Value::Tensor(t) = &v {
                        if !self.m.t(*t).dtype.is_integral() {
                            return Err(err(
                                "other",
                                "~ (operator.invert) is only implemented on integer and Boolean-type tensors",
                                span,
                            ));
                        }
                    }
                    "bitwise_not"
                }
                UnaryOp::Not => {
                    if let Value::Tensor(t) = &v {
                        self.one_element(*t, true, span)?;
                    }
                    return Err(err(
                        "data-dependent",
                        "`not` on a tensor depends on its data",
                        span,
                    ));
                }
            };
            return self.call_op(name, smallvec::smallvec![v], Vec::new(), span);
        }
        match (op, &v) {
            (UnaryOp::Not, _) => Ok(Value::Bool(!self.truthy(&v, span)?)),
            (UnaryOp::Pos, Value::Int(_) | Value::Float(_)) => Ok(v),
            (UnaryOp::Pos, Value::Bool(b)) => Ok(Value::int(*b as i64)),
            (UnaryOp::Neg, Value::Int(i)) => {
                Ok(Value::Int(i.neg().map_err(|e| op_error(e.into(), span))?))
            }
            (UnaryOp::Neg, Value::Bool(b)) => Ok(Value::int(-(*b as i64))),
            (UnaryOp::Neg, Value::Float(f)) => Ok(Value::Float(-f)),
            (UnaryOp::Invert, Value::Int(i)) => match i.as_int() {
                Some(x) => Ok(Value::int(!x)),
                None => Err(err(
                    "symbolic",
                    "`~` on a symbolic size is not supported",
                    span,
                )),
            },
            _ => Err(err(
                "type",
                format!("bad operand type for unary operator: `{}`", v.type_name()),
                span,
            )),
        }
    }

    pub fn compare_values(&mut self, op: CmpOp, l: &Value, r: &Value, span: Span) -> R<Value> {
        self.compare(op, l, r, span)
    }

    fn compare(&mut self, op: CmpOp, l: &Value, r: &Value, span: Span) -> R<Value> {
        if matches!(op, CmpOp::Is | CmpOp::IsNot) {
            let same = match (l, r) {
                (Value::None, Value::None) => true,
                (Value::Tensor(a), Value::Tensor(b)) => a == b,
                (Value::Bool(a), Value::Bool(b)) => a == b,
                (Value::Dtype(a), Value::Dtype(b)) => a == b,
                _ => false,
            };
            return Ok(Value::Bool(same == (op == CmpOp::Is)));
        }
        if matches!(op, CmpOp::In | CmpOp::NotIn) {
            let items = self.iterate(r, span)?;
            let mut found = false;
            for i in &items {
                if let Value::Bool(true) = self.compare(CmpOp::Eq, l, i, span)? {
                    found = true;
                    break;
                }
            }
            return Ok(Value::Bool(found == (op == CmpOp::In)));
        }
        if matches!(l, Value::Tensor(_)) || matches!(r, Value::Tensor(_)) {
            return super::apply::tensor_compare(self, op, l.clone(), r.clone(), span);
        }
        if let (Some(a), Some(b)) = (Self::as_number(l), Self::as_number(r)) {
            if let (Num::Int(x), Num::Int(y)) = (&a, &b) {
                let s = &mut self.m.sizes;
                let v = match op {
                    CmpOp::Eq => s.eq(x, y),
                    CmpOp::Ne => !s.eq(x, y),
                    CmpOp::Lt => s.lt(x, y),
                    CmpOp::Le => s.le(x, y),
                    CmpOp::Gt => s.lt(y, x),
                    CmpOp::Ge => s.le(y, x),
                    _ => false,
                };
                return Ok(Value::Bool(v));
            }
            let (Some(x), Some(y)) = (self.num_float(&a), self.num_float(&b)) else {
                return Err(err(
                    "symbolic",
                    "comparing a float with a symbolic size is not supported",
                    span,
                ));
            };
            let v = match op {
                CmpOp::Eq => x == y,
                CmpOp::Ne => x != y,
                CmpOp::Lt => x < y,
                CmpOp::Le => x <= y,
                CmpOp::Gt => x > y,
                CmpOp::Ge => x >= y,
                _ => false,
            };
            return Ok(Value::Bool(v));
        }
        let eq = match (l, r) {
            (Value::None, Value::None) => Some(true),
            (Value::Str(a), Value::Str(b)) => Some(a == b),
            (Value::Dtype(a), Value::Dtype(b)) => Some(a == b),
            (Value::MemoryFormat(a), Value::MemoryFormat(b)) => Some(a == b),
            (Value::Tuple(_) | Value::List(_), Value::Tuple(_) | Value::List(_)) => {
                let (a, b) = (
                    l.sequence().unwrap_or_default(),
                    r.sequence().unwrap_or_default(),
                );
                if a.len() != b.len() {
                    Some(false)
                } else {
                    let mut all = true;
                    for (x, y) in a.iter().zip(&b) {
                        if let Value::Bool(false) = self.compare(CmpOp::Eq, x, y, span)? {
                            all = false;
                            break;
                        }
                    }
                    Some(all)
                }
            }
            (Value::None, _) | (_, Value::None) => Some(false),
            _ => None,
        };
        match (op, eq) {
            (CmpOp::Eq, Some(v)) => Ok(Value::Bool(v)),
            (CmpOp::Ne, Some(v)) => Ok(Value::Bool(!v)),
            _ => Err(err(
                "type",
                format!(
                    "cannot compare `{}` and `{}` with {}",
                    l.type_name(),
                    r.type_name(),
                    op.symbol()
                ),
                span,
            )),
        }
    }

    /// Python's index `idx` into a sequence of `n` items (`what`: `list`,
    /// `tuple`, as Python's IndexError names it).
    fn index_of(&mut self, idx: &Value, n: usize, what: &str, span: Span) -> R<usize> {
        let i = match idx {
            Value::Int(i) => self
                .m
                .sizes
                .concrete(i, "an index")
                .map_err(|e| op_error(e, span))?,
            Value::Bool(b) => *b as i64,
            other => {
                return Err(err(
                    "type",
                    format!("indices must be integers, not `{}`", other.type_name()),
                    span,
                ))
            }
        };
        let j = if i < 0 { i + n as i64 } else { i };
        if j < 0 || j >= n as i64 {
            // An IndexError, which the analysis reports as PyTorch's own
            // out-of-range errors (a torch.Size is a tuple).
            return Err(err(
                "index-out-of-range",
                format!("{what} index out of range (index {i}, length {n})"),
                span,
            ));
        }
        Ok(j as usize)
    }

    pub fn subscript(&mut self, v: &Value, idx: &Value, span: Span) -> R<Value> {
        match v {
            Value::Tensor(t) => {
                // Indexing calls select/slice/unsqueeze/alias from C++.
                let entry = self.m.inference_mode;
                self.dispatched_view(entry, |it| super::apply::getitem(it, *t, idx, span))
            }
            Value::Tuple(_) | Value::List(_) => {
                let items = v.sequence().unwrap_or_default();
                if let Value::Slice(parts) = idx {
                    let [a, b, c] = &**parts;
                    let n = items.len() as i64;
                    let get = |x: &Option<SymInt>| x.as_ref().and_then(|s| s.as_int());
                    let step = get(c).unwrap_or(1);
                    if step == 0 {
                        return Err(err("value", "slice step cannot be zero", span));
                    }
                    let norm = |x: Option<i64>, dflt: i64, lo: i64, hi: i64| -> i64 {
                        match x {
                            None => dflt,
                            Some(i) if i < 0 => (i + n).max(lo),
                            Some(i) => i.min(hi),
                        }
                    };
                    let out: Vec<Value> = if step > 0 {
                        let (s, e) = (norm(get(a), 0, 0, n), norm(get(b), n, 0, n));
                        (s..e.max(s))
                            .step_by(step as usize)
                            .map(|i| items[i as usize].clone())
                            .collect()
                    } else {
                        let (s, e) = (norm(get(a), n - 1, -1, n - 1), norm(get(b), -1, -1, n - 1));
                        let mut out = Vec::new();
                        let mut i = s;
                        while i > e {
                            out.push(items[i as usize].clone());
                            i += step;
                        }
                        out
                    };
                    return Ok(if matches!(v, Value::List(_)) {
                        Value::list(out)
                    } else {
                        Value::tuple(out)
                    });
                }
                let what = if matches!(v, Value::List(_)) {
                    "list"
                } else {
                    "tuple"
                };
                let i = self.index_of(idx, items.len(), what, span)?;
                Ok(items[i].clone())
            }
            other => Err(err(
                "type",
                format!("a `{}` cannot be indexed", other.type_name()),
                span,
            )),
        }
    }

    // ------------------------------------------------------------ attributes

    fn getattr(&mut self, v: Value, attr: &str, attr_span: Span, span: Span) -> R<Value> {
        match &v {
            Value::Module(m) => self.module_attr(m, attr, attr_span),
            Value::Tensor(t) => super::apply::tensor_attr(self, *t, attr, attr_span, span),
            Value::Op { name, aten: true } => {
                // torch.ops.aten.NAME.OVERLOAD reaches the same op.
                let _ = attr;
                Ok(Value::Op {
                    name: name.clone(),
                    aten: true,
                })
            }
            Value::List(_)
                if matches!(
                    attr,
                    "append" | "extend" | "pop" | "insert" | "index" | "count"
                ) =>
            {
                Ok(Value::method(v.clone(), attr))
            }
            // torch.return_types (max(dim), sort, topk, …): (values, indices).
            Value::Tuple(items) if items.len() == 2 && matches!(attr, "values" | "indices") => {
                Ok(items[usize::from(attr == "indices")].clone())
            }
            Value::Tuple(_) if matches!(attr, "index" | "count") => {
                Ok(Value::method(v.clone(), attr))
            }
            Value::Dtype(d) if attr == "is_floating_point" => Ok(Value::Bool(d.is_floating())),
            Value::Dtype(d) if attr == "itemsize" => Ok(Value::int(d.itemsize())),
            Value::Dtype(d) if attr == "is_complex" => Ok(Value::Bool(d.is_complex())),
            _ => Err(err(
                "unknown-attribute",
                format!("a `{}` has no attribute `{attr}`", v.type_name()),
                attr_span,
            )),
        }
    }

    fn module_attr(&mut self, module: &str, attr: &str, span: Span) -> R<Value> {
        let table = self.table;
        let found = match module {
            "torch" => {
                if let Some(d) = DType::from_attr(attr) {
                    return Ok(Value::Dtype(d));
                }
                if let Some(name) = TORCH_FUNCTIONS.iter().copied().find(|f| *f == attr) {
                    return Ok(Value::Builtin(name));
                }
                match attr {
                    "contiguous_format" => {
                        return Ok(Value::MemoryFormat(MemoryFormat::Contiguous))
                    }
                    "channels_last" => return Ok(Value::MemoryFormat(MemoryFormat::ChannelsLast)),
                    "channels_last_3d" => {
                        return Ok(Value::MemoryFormat(MemoryFormat::ChannelsLast3d))
                    }
                    "preserve_format" => return Ok(Value::MemoryFormat(MemoryFormat::Preserve)),
                    // The only layout: what `x.layout` gives, and factories'
                    // `layout=` default.
                    "strided" => return Ok(Value::Str(Rc::from("strided"))),
                    "nn" => return Ok(Value::Module(Rc::from("torch.nn"))),
                    "ops" => return Ok(Value::Module(Rc::from("torch.ops"))),
                    "autograd" => return Ok(Value::Module(Rc::from("torch.autograd"))),
                    "Tensor" => return Ok(Value::TensorType),
                    _ => {}
                }
                table
                    .lookup(attr)
                    .filter(|o| o.torch_fn)
                    .map(|o| o.name)
                    .or((attr == "dropout_").then_some("dropout_"))
            }
            "torch.nn" => match attr {
                "functional" => return Ok(Value::Module(Rc::from("torch.nn.functional"))),
                _ => None,
            },
            "torch.nn.functional" => table
                .lookup(attr)
                .filter(|o| o.functional_fn || o.torch_fn)
                .map(|o| o.name),
            "torch.ops" => match attr {
                "aten" => return Ok(Value::Module(Rc::from("torch.ops.aten"))),
                "inductor" => return Ok(Value::Module(Rc::from("torch.ops.inductor"))),
                _ => None,
            },
            "torch.ops.aten" => {
                if attr == "_print" {
                    return Ok(Value::Builtin("_print"));
                }
                // The in-place bitwise operators' aten names.
                let inplace = match attr {
                    "__ior__" => Some("bitwise_or_"),
                    "__iand__" => Some("bitwise_and_"),
                    "__ixor__" => Some("bitwise_xor_"),
                    _ => None,
                };
                if let Some(name) = inplace.filter(|n| table.lookup(n).is_some()) {
                    return Ok(Value::Op {
                        name: Rc::from(name),
                        aten: true,
                    });
                }
                table
                    .lookup(attr)
                    .map(|o| o.name)
                    .or((attr == "dropout_").then_some("dropout_"))
                    .or((attr == "index").then_some("index"))
                    .or(aten_attribute(attr).map(|_| attr))
            }
            "torch.ops.inductor" => table.lookup(attr).filter(|o| o.inductor).map(|o| o.name),
            "torch.autograd" => None,
            _ => None,
        };
        if let Some(name) = found {
            // Use the spelling the user wrote (aliases share an entry).
            let _ = name;
            return Ok(Value::Op {
                name: Rc::from(attr),
                aten: module == "torch.ops.aten",
            });
        }
        let mut d = err(
            "unknown-op",
            format!("`{module}.{attr}` is not an op tpi knows"),
            span,
        )
        .with_label("unknown here");
        let cands: Vec<&str> = match module {
            "torch" => table.names(|o| o.torch_fn).collect(),
            "torch.nn.functional" => table.names(|o| o.functional_fn).collect(),
            _ => table.names(|_| true).collect(),
        };
        if let Some(s) = did_you_mean(attr, cands.into_iter()) {
            d = d.with_help(format!("did you mean `{module}.{s}`?"));
        } else {
            d = d.with_note("see the core op set in LANGUAGE.md");
        }
        Err(d)
    }

    // ------------------------------------------------------------ calls

    pub fn call(
        &mut self,
        f: Value,
        mut pos: Values,
        mut kw: Vec<(Name, Value)>,
        span: Span,
        func_span: Span,
    ) -> R<Value> {
        match f {
            Value::Builtin(name) => super::builtins::call_builtin(self, name, pos, kw, span),
            Value::Function(name) => self.call_function(&name, pos, kw, span),
            Value::Op { name, aten: true } if aten_attribute(&name).is_some() => {
                let attr = aten_attribute(&name).unwrap_or_default();
                match (pos.as_slice(), kw.is_empty()) {
                    ([Value::Tensor(t)], true) => {
                        super::apply::tensor_attr(self, *t, attr, func_span, span)
                    }
                    _ => Err(err(
                        "arguments",
                        format!("aten::{name}() takes one tensor"),
                        span,
                    )),
                }
            }
            Value::Op { name, aten } => {
                let op = self.table.lookup(&name);
                if let Some(op) = op {
                    if aten {
                        aten_schema_args(op, &mut pos, &mut kw, span)?;
                    } else if op.checks_arguments {
                        binding_index_list(&name, pos.get(1), &kw, span)?;
                    }
                }
                let entry = self.m.inference_mode
                    && op.is_some_and(|op| {
                        super::apply::view_kernel_shares_version(
                            op,
                            &name,
                            pos.get(1..).unwrap_or(&[]),
                        )
                    });
                self.dispatched_view(entry, |it| it.call_op(&name, pos, kw, span))
            }
            Value::Method(method) => match &method.receiver {
                Value::Tensor(t) => {
                    binding_index_list(&method.name, pos.first(), &kw, span)?;
                    let entry = self.m.inference_mode
                        && self.table.lookup(&method.name).is_some_and(|op| {
                            super::apply::view_kernel_shares_version(op, &method.name, &pos)
                        });
                    self.dispatched_view(entry, |it| {
                        super::apply::tensor_method(it, *t, &method.name, pos, kw, span, func_span)
                    })
                }
                Value::List(items) => {
                    super::builtins::list_method(self, items, &method.name, pos, span)
                }
                Value::Tuple(items) => {
                    super::builtins::tuple_method(self, items, &method.name, pos, span)
                }
                other => Err(err(
                    "type",
                    format!("a `{}` has no methods", other.type_name()),
                    span,
                )),
            },
            Value::Dtype(_) | Value::TensorType => {
                Err(err("unsupported", "calling a type is not supported", span))
            }
            other => Err(err(
                "type",
                format!("a `{}` is not callable", other.type_name()),
                func_span,
            )),
        }
    }

    /// Calls a helper by inlining its body.
    pub fn call_function(
        &mut self,
        name: &str,
        pos: Values,
        kw: Vec<(Name, Value)>,
        span: Span,
    ) -> R<Value> {
        let Some(def) = self.functions.get(name).copied() else {
            return Err(err(
                "unknown-name",
                format!("unknown function `{name}`"),
                span,
            ));
        };
        if self.call_chain.iter().any(|(n, _)| n == name) || self.call_chain.len() >= MAX_CALL_DEPTH
        {
            let chain: Vec<String> = self
                .call_chain
                .iter()
                .map(|(n, _)| n.clone())
                .chain([name.to_string()])
                .collect();
            let mut d = err(
                "recursion",
                format!("recursive call of `{name}`: {}", chain.join(" -> ")),
                span,
            )
            .with_label("this call recurses")
            .with_help("tpi inlines helper calls, so recursion cannot be analysed");
            for (n, s) in &self.call_chain {
                d = d.with_secondary(*s, format!("`{n}` called here"));
            }
            return Err(d);
        }
        let mut env = Env::new(&def.locals, &def.bound);
        let mut pos = pos.into_iter();
        let mut kw = kw;
        for (i, p) in def.params.iter().enumerate() {
            let v = if let Some(v) = pos.next() {
                if kw.iter().any(|(k, _)| *k == p.name.name) {
                    return Err(err(
                        "arguments",
                        format!(
                            "`{name}()` got multiple values for argument `{}`",
                            p.name.name
                        ),
                        span,
                    ));
                }
                v
            } else if let Some(i) = kw.iter().position(|(k, _)| *k == p.name.name) {
                kw.remove(i).1
            } else if let Some(d) = &p.default {
                let mut empty = Env::default();
                self.eval(&mut empty, d)?
            } else {
                return Err(err(
                    "arguments",
                    format!("`{name}()` is missing the argument `{}`", p.name.name),
                    span,
                )
                .with_secondary(def.name.span, "defined here"));
            };
            env.set(Slot::param(i), &p.name.name, v);
        }
        if pos.next().is_some() {
            return Err(err(
                "arguments",
                format!("`{name}()` takes {}", positional(def.params.len())),
                span,
            ));
        }
        if let Some((k, _)) = kw.first() {
            return Err(err(
                "arguments",
                format!("`{name}()` got an unexpected keyword argument `{k}`"),
                span,
            ));
        }
        self.call_chain.push((name.to_string(), span));
        let r = self.exec_block(&mut env, &def.body);
        self.call_chain.pop();
        match r? {
            Flow::Return(v) => Ok(v),
            Flow::Next => Ok(Value::None),
        }
    }

    /// Calls an op of the table by one of its spellings.
    pub fn call_op(
        &mut self,
        name: &str,
        pos: Values,
        kw: Vec<(Name, Value)>,
        span: Span,
    ) -> R<Value> {
        // aten.index(self, indices) is advanced indexing, `self[indices]`
        // with a None index a full slice.
        if name == "index" && self.table.lookup(name).is_none() {
            if let ([Value::Tensor(t), indices], true) = (&pos[..], kw.is_empty()) {
                let items = match indices {
                    Value::List(l) => l.borrow().clone(),
                    Value::Tuple(t) => t.as_ref().clone(),
                    _ => Vec::new(),
                };
                if items.is_empty() {
                    return Err(err("other", "at least one index must be provided", span));
                }
                let items = items
                    .into_iter()
                    .map(|v| match v {
                        Value::None => Value::Slice(Box::new([None, None, None])),
                        v => v,
                    })
                    .collect();
                return super::apply::getitem(self, *t, &Value::tuple(items), span);
            }
            return Err(err(
                "arguments",
                "aten.index(self, indices) takes a tensor and a list of index tensors",
                span,
            ));
        }
        // torch.dropout_ / aten.dropout_(input, p, train) is
        // F.dropout(input, p, train, inplace=True).
        let (name, kw) = if name == "dropout_" {
            let mut kw = kw;
            kw.push((Name::new("inplace"), Value::Bool(true)));
            ("dropout", kw)
        } else {
            (name, kw)
        };
        let Some(op) = self.table.lookup(name) else {
            let mut d = err(
                "unknown-op",
                format!("`{name}` is not an op tpi knows"),
                span,
            );
            if let Some(s) = did_you_mean(name, self.table.names(|_| true)) {
                d = d.with_help(format!("did you mean `{s}`?"));
            }
            return Err(d);
        };
        let args = self.bind(op, pos, kw, span)?;
        super::apply::apply(self, op, args, span)
    }

    /// Binds positional and keyword arguments to the op's parameters, filling
    /// defaults; an int-list parameter also takes varargs (`x.view(2, 3)`).
    pub fn bind(
        &mut self,
        op: &OpDef,
        pos: Values,
        kw: Vec<(Name, Value)>,
        span: Span,
    ) -> R<ArgValues> {
        self.bind_with(op, None, pos, kw, span)
    }

    /// `bind` with a receiver (`self` of a method call) before `pos`.
    pub fn bind_with(
        &mut self,
        op: &OpDef,
        mut receiver: Option<Value>,
        mut pos: Values,
        mut kw: Vec<(Name, Value)>,
        span: Span,
    ) -> R<ArgValues> {
        if op.name == "where" {
            // `x.where(condition, y)` is `torch.where(condition, x, y)`: the
            // method's receiver is `self`, the schema's second argument.
            if let Some(r) = receiver.take() {
                if pos.is_empty() {
                    kw.push((Name::new("self"), r));
                } else {
                    pos.insert(1, r);
                }
            }
        }
        if kw.is_empty() {
            if let Some(count) = Self::bind_in_order(op, &receiver, &pos) {
                let mut bound =
                    Self::bind_defaults(op, count, receiver.into_iter().chain(pos), span);
                if let (true, Ok(out)) = (op.overloaded, &mut bound) {
                    overload_check(op, out, (1u64 << count) - 1, span)?;
                }
                return bound;
            }
        }
        if op.name == "split" {
            // Python wrappers, not the aten schema: torch.split(tensor,
            // split_size_or_sections, dim) and Tensor.split(self,
            // split_size, dim).
            let (first, sizes) = if receiver.is_some() {
                ("self", "split_size")
            } else {
                ("tensor", "split_size_or_sections")
            };
            for (k, _) in &mut kw {
                let name: &str = k;
                if name == first {
                    *k = Name::new("self");
                } else if name == sizes {
                    *k = Name::new("split_size_or_sections");
                } else if matches!(
                    name,
                    "self" | "split_size_or_sections" | "tensor" | "split_size"
                ) {
                    let signature = if receiver.is_some() {
                        "Tensor.split(split_size, dim=0)"
                    } else {
                        "torch.split(tensor, split_size_or_sections, dim=0)"
                    };
                    return Err(err(
                        "arguments",
                        format!("`split` got an unexpected keyword argument `{name}`"),
                        span,
                    )
                    .with_note(format!("signature: {signature}")));
                }
            }
        }
        if let Some(receiver) = receiver {
            pos.insert(0, receiver);
        }
        // torch.einsum(equation, *operands)
        if op.name == "einsum" && pos.len() > 2 {
            let mut it = pos.into_iter();
            let eq = it.next().unwrap_or(Value::None);
            pos = smallvec::smallvec![eq, Value::tuple(it.collect())];
        }
        // The arguments in place, `given` marking the parameters bound (the
        // others take their defaults below).
        let mut out: ArgValues = smallvec::smallvec![Value::None; op.params.len()];
        let mut given: u64 = 0;
        debug_assert!(op.params.len() <= 64);
        let mut pi = 0;
        let mut pos = pos.into_iter().peekable();
        while let Some(v) = pos.next() {
            while pi < op.params.len() && op.params[pi].keyword_only {
                pi += 1;
            }
            if pi >= op.params.len() {
                return Err(err(
                    "arguments",
                    format!(
                        "`{}` takes at most {}",
                        op.name,
                        positional(op.params.iter().filter(|p| !p.keyword_only).count())
                    ),
                    span,
                )
                .with_help(format!("signature: {}", signature(op))));
            }
            let p = &op.params[pi];
            if varargs_ints(op, p) && matches!(v, Value::Int(_)) {
                // varargs ints: x.view(2, 3)
                let mut items = Vec::with_capacity(1 + pos.size_hint().0);
                items.push(v);
                while let Some(Value::Int(_)) = pos.peek() {
                    items.push(pos.next().unwrap_or(Value::None));
                }
                out[pi] = Value::tuple(items);
            } else {
                out[pi] = v;
            }
            given |= 1 << pi;
            pi += 1;
        }
        for (k, v) in kw {
            let k: &str = &k;
            let k = if k == "input" { "self" } else { k };
            // NumPy's spellings, which PyTorch's argument parser accepts for
            // a parameter of the other name (numpy_compatibility_arg_names).
            let k = match k {
                _ if op.params.iter().any(|p| p.name == k) => k,
                "axis" => "dim",
                "keepdims" => "keepdim",
                "x" | "a" | "x1" => "self",
                "x2" => "other",
                _ => k,
            };
            // aten's schema spells dropout's flag `train`.
            let k = if k == "train" && op.name == "dropout" {
                "training"
            } else {
                k
            };
            let idx = op.params.iter().position(|p| {
                p.name == k
                    || (k == "self" && p.name == "input")
                    || (k == "dim" && p.name == "dimension")
            });
            match idx {
                Some(i) => {
                    if given & (1 << i) != 0 {
                        return Err(err(
                            "arguments",
                            format!("`{}` got multiple values for argument `{k}`", op.name),
                            span,
                        ));
                    }
                    out[i] = v;
                    given |= 1 << i;
                }
                None => {
                    let mut d = err(
                        "arguments",
                        format!("`{}` got an unexpected keyword argument `{k}`", op.name),
                        span,
                    )
                    .with_note(format!("signature: {}", signature(op)));
                    if let Some(s) = did_you_mean(k, op.params.iter().map(|p| p.name)) {
                        d = d.with_help(format!("did you mean `{s}=`?"));
                    }
                    return Err(d);
                }
            }
        }
        for (i, p) in op.params.iter().enumerate() {
            if given & (1 << i) != 0 {
                continue;
            }
            out[i] = default_value(op, p, span)?;
        }
        if op.overloaded {
            overload_check(op, &mut out, given, span)?;
        }
        Ok(out)
    }

    /// The usual call, bound without the general walk: positional
    /// arguments only (the receiver first), each for the next parameter,
    /// none of them keyword-only, too many or a run of ints for an int list
    /// (`x.view(2, 3)`). `Some(count)`: they fill the first `count`
    /// parameters, as the general binding would; `None`: bind generally.
    fn bind_in_order(op: &OpDef, receiver: &Option<Value>, pos: &Values) -> Option<usize> {
        let count = usize::from(receiver.is_some()) + pos.len();
        if count > op.params.len() || op.name == "einsum" {
            return None;
        }
        let values = receiver.iter().chain(pos.iter());
        for (p, v) in op.params.iter().zip(values) {
            if p.keyword_only || (varargs_ints(op, p) && matches!(v, Value::Int(_))) {
                return None;
            }
        }
        Some(count)
    }

    /// `bind_in_order`'s binding: `values` for the first `count` parameters,
    /// defaults for the rest.
    fn bind_defaults(
        op: &OpDef,
        count: usize,
        values: impl Iterator<Item = Value>,
        span: Span,
    ) -> R<ArgValues> {
        let mut out = ArgValues::new();
        out.extend(values);
        debug_assert_eq!(out.len(), count);
        for p in &op.params[count..] {
            out.push(default_value(op, p, span)?);
        }
        Ok(out)
    }

    /// Makes an input tensor from its `Tensor(...)` annotation.
    pub fn make_input(&mut self, index: usize, spec: &InputSpec, span: Span) -> R<TensorId> {
        let sizes = spec.sizes.clone();
        let strides = match &spec.stride {
            Some(s) => s.clone(),
            None => shape::format_strides(&sizes, spec.memory_format, &mut self.m.sizes)
                .map_err(|e| op_error(e, span))?,
        };
        let meta = Meta {
            sizes,
            strides,
            offset: SymInt::int(0),
            dtype: spec.dtype,
        };
        let id = self.m.fresh(meta, span, "input");
        let st = self.m.tensors[id].storage;
        self.m.storages[st].input = u32::try_from(index).ok();
        if self.m.mode == Mode::Analysis {
            self.m.fresh_values.insert(id, (st, 0));
        }
        self.m.seed_input_values(id);
        self.m.tensors[id].input_number = u32::try_from(index + 1)
            .ok()
            .and_then(std::num::NonZeroU32::new);
        if self.m.mode == Mode::Eager && (spec.leaf || !spec.requires_grad) {
            // A real input is made empty, then filled in place (`copy_`
            // under no_grad): it starts at version 1. A non-leaf input is a
            // clone of such a leaf, at version 0.
            let version = self.m.tensors[id].version;
            self.m.versions[version] = 1;
        }
        if spec.requires_grad {
            self.m.tensors[id].analysis_input_grad = true;
            if !spec.dtype.can_require_grad() {
                return Err(err(
                    "requires-grad-dtype",
                    "only Tensors of floating point and complex dtype can require gradients",
                    span,
                ));
            }
            if spec.leaf {
                self.m.tensors[id].requires_grad_flag = true;
            } else {
                // The output of an autograd op outside the function (the oracle clones a leaf).
                let node = self.m.add_node("CloneBackward0", [], span);
                self.m.tensors[id].grad_fn = Some(node);
            }
        }
        Ok(id)
    }
}

/// `torch.index_put(_)` and `Tensor.index_put(_)`: the Python binding parses
/// `Tensor?[] indices` as a plain tensor list, which takes no None
/// (`torch.ops.aten.index_put_` and indexing, `x[..., i] = v`, do).
fn binding_index_list(
    name: &str,
    positional: Option<&Value>,
    kw: &[(Name, Value)],
    span: Span,
) -> R<()> {
    if !matches!(name, "index_put" | "index_put_") {
        return Ok(());
    }
    let indices = positional.or_else(|| kw.iter().find(|(k, _)| &**k == "indices").map(|(_, v)| v));
    let items = indices.and_then(Value::sequence).unwrap_or_default();
    match items.iter().position(|v| matches!(v, Value::None)) {
        Some(i) => Err(err(
            "other",
            format!("expected Tensor as element {i} in argument 0, but got NoneType"),
            span,
        )
        .with_help("index with the subscript instead: `x[i, :] = v`")),
        None => Ok(()),
    }
}

/// The aten ops behind tensor attributes (`x.T` is `aten.numpy_T`, `x.mT`
/// `aten.mT`, `x.H` `aten.matrix_H`, `x.mH` `aten.mH`; `aten.adjoint` is
/// read as `mT`): the attribute each one is.
fn aten_attribute(name: &str) -> Option<&'static str> {
    Some(match name {
        "numpy_T" => "T",
        "mT" | "adjoint" => "mT",
        "mH" => "mH",
        "matrix_H" => "H",
        _ => return None,
    })
}

/// `torch.ops.aten.NAME` takes the ATen schema, not torch.nn.functional's
/// signature that tpi's table gives the op: no `inplace` (the in-place op
/// is `NAME_`), and elu has `scale` and `input_scale` after `alpha`
/// (numbers that leave the result's metadata alone: dropped here).
fn aten_schema_args(
    op: &OpDef,
    pos: &mut Values,
    kw: &mut Vec<(Name, Value)>,
    span: Span,
) -> R<()> {
    if op.name == "embedding" {
        return aten_embedding_args(pos, kw, span);
    }
    let Some(inplace) = op.params.iter().position(|p| p.name == "inplace") else {
        return Ok(());
    };
    if op.name == "elu" {
        let extra = pos.len().saturating_sub(2);
        let scales = pos.iter().skip(2).chain(
            kw.iter()
                .filter(|(k, _)| matches!(&**k, "scale" | "input_scale"))
                .map(|(_, v)| v),
        );
        for v in scales {
            if !matches!(v, Value::Int(_) | Value::Float(_) | Value::Bool(_)) {
                return Err(err(
                    "type",
                    format!(
                        "elu(): scale and input_scale must be numbers, not `{}`",
                        v.type_name()
                    ),
                    span,
                ));
            }
        }
        pos.truncate(pos.len() - extra.min(2));
        kw.retain(|(k, _)| !matches!(&**k, "scale" | "input_scale"));
    }
    let takes = inplace;
    if pos.len() > takes || kw.iter().any(|(k, _)| &**k == "inplace") {
        return Err(err(
            "arguments",
            format!(
                "aten::{}() takes at most {takes} positional arguments and no `inplace`",
                op.name
            ),
            span,
        )
        .with_help(format!(
            "the in-place form is `torch.ops.aten.{}_`",
            op.name
        )));
    }
    Ok(())
}

/// `aten::embedding(Tensor weight, Tensor indices, SymInt padding_idx=-1,
/// bool scale_grad_by_freq=False, bool sparse=False)` bound to
/// F.embedding's `(input, weight, padding_idx, max_norm, norm_type,
/// scale_grad_by_freq, sparse)`: the weight comes first, and a negative
/// padding_idx is none.
fn aten_embedding_args(pos: &mut Values, kw: &mut Vec<(Name, Value)>, span: Span) -> R<()> {
    const NAMES: [&str; 5] = [
        "weight",
        "input",
        "padding_idx",
        "scale_grad_by_freq",
        "sparse",
    ];
    if pos.len() > NAMES.len() {
        return Err(err(
            "arguments",
            "aten::embedding() takes at most 5 positional arguments",
            span,
        ));
    }
    let mut named: Vec<(Name, Value)> = Vec::new();
    for (name, v) in NAMES.iter().zip(pos.drain(..)) {
        named.push((Name::new(name), v));
    }
    for (k, v) in kw.drain(..) {
        let k = if &*k == "indices" {
            Name::new("input")
        } else {
            k
        };
        named.push((k, v));
    }
    named.retain(|(k, v)| {
        !(&**k == "padding_idx" && matches!(v, Value::Int(i) if i.as_int().is_some_and(|i| i < 0)))
    });
    *kw = named;
    Ok(())
}

/// A parsed `Tensor(...)` annotation.
#[derive(Clone, Debug)]
pub struct InputSpec {
    pub sizes: Dims,
    pub dtype: DType,
    pub requires_grad: bool,
    pub leaf: bool,
    pub stride: Option<Dims>,
    pub memory_format: MemoryFormat,
}

/// What leaving a `with` block restores.
enum Restore {
    Modes {
        grad_enabled: bool,
        inference_mode: bool,
    },
    Autocast(Vec<super::state::Autocast>),
}

enum Num {
    Int(SymInt),
    Float(f64),
}

/// "1 positional argument", "2 positional arguments".
fn positional(count: usize) -> String {
    match count {
        1 => "1 positional argument".to_string(),
        n => format!("{n} positional arguments"),
    }
}

/// The value a parameter not given takes: its default, or the error for a
/// missing argument.
fn default_value(op: &OpDef, p: &crate::ops::Param, span: Span) -> R<Value> {
    use crate::ops::DefaultValue;
    Ok(match &p.default {
        Some(DefaultValue::None) => Value::None,
        Some(DefaultValue::Int(i)) => Value::int(*i),
        Some(DefaultValue::Float(f)) => Value::Float(*f),
        Some(DefaultValue::Bool(b)) => Value::Bool(*b),
        Some(DefaultValue::Word(w)) => match w.as_str() {
            "contiguous_format" => Value::MemoryFormat(MemoryFormat::Contiguous),
            "preserve_format" => Value::MemoryFormat(MemoryFormat::Preserve),
            other => Value::Str(Rc::from(other)),
        },
        None => {
            return Err(err(
                "arguments",
                format!("`{}` is missing the argument `{}`", op.name, p.name),
                span,
            )
            .with_help(format!("signature: {}", signature(op))))
        }
    })
}

/// An op's signature as PyTorch documents it, for messages.
pub fn signature(op: &OpDef) -> String {
    let mut parts = Vec::new();
    let mut kw_marked = false;
    for p in &op.params {
        if p.keyword_only && !kw_marked {
            parts.push("*".to_string());
            kw_marked = true;
        }
        parts.push(match &p.default {
            Some(d) => format!(
                "{}={}",
                p.name,
                match d {
                    crate::ops::DefaultValue::None => "None".to_string(),
                    crate::ops::DefaultValue::Int(i) => i.to_string(),
                    crate::ops::DefaultValue::Float(f) => f.to_string(),
                    crate::ops::DefaultValue::Bool(b) =>
                        if *b { "True" } else { "False" }.to_string(),
                    crate::ops::DefaultValue::Word(w) => w.clone(),
                }
            ),
            None => p.name.to_string(),
        });
    }
    format!("{}({})", op.name, parts.join(", "))
}

/// The names an assignment target binds (`a`, `(a, *rest)`, `[a, b]`).
fn target_names<'e>(target: &'e Expr, out: &mut Vec<(&'e Name, Slot)>) {
    match &target.kind {
        ExprKind::Name(n, slot) => out.push((n, *slot)),
        ExprKind::Tuple(items) | ExprKind::List(items) => {
            items.iter().for_each(|i| target_names(i, out))
        }
        ExprKind::Starred(inner) => target_names(inner, out),
        _ => {}
    }
}

/// Does this parameter take a run of int arguments (`x.view(2, 3)`)? An
/// int list does; so does a dim list that is the only positional parameter
/// after `self` (`x.squeeze(1, 2)`: PyTorch's parser allows varargs for a
/// signature whose one positional argument is an int list).
fn varargs_ints(op: &OpDef, p: &crate::ops::Param) -> bool {
    use crate::ops::ParamType;
    match p.ty {
        ParamType::IntList | ParamType::OptIntList => true,
        ParamType::Dims | ParamType::OptDims => {
            op.params.iter().filter(|q| !q.keyword_only).count() == 2
        }
        _ => false,
    }
}

/// The calls tpi's one signature per op accepts but none of PyTorch's
/// overloads does (`given`: the parameters the call bound). sum, mean and
/// prod take `keepdim` only with `dim`; prod's dim is one int, and `None`
/// picks its Dimname overload, as for logsumexp; std and var take
/// `unbiased` with `keepdim` only with `dim`.
fn overload_check(op: &OpDef, args: &mut ArgValues, given: u64, span: Span) -> R<()> {
    // std(x, True) / var(x, False): a bool where the dim goes picks the
    // `(Tensor self, bool unbiased)` overload.
    if matches!(op.name, "std" | "var") {
        let dim = op.params.iter().position(|p| p.name == "dim");
        let unbiased = op.params.iter().position(|p| p.name == "unbiased");
        if let (Some(d), Some(u)) = (dim, unbiased) {
            if matches!(args[d], Value::Bool(_)) && given & (1 << u) == 0 {
                args[u] = std::mem::replace(&mut args[d], Value::None);
                let given = (given & !(1 << d)) | (1 << u);
                return overload_check(op, args, given, span);
            }
        }
    }
    let args: &ArgValues = args;
    let given_param = |name: &str| {
        op.params
            .iter()
            .position(|p| p.name == name)
            .map(|i| (given & (1 << i) != 0, &args[i]))
    };
    let (dim_given, dim) = given_param("dim").unwrap_or((false, &Value::None));
    let keepdim_given = given_param("keepdim").is_some_and(|(g, _)| g);
    let invalid = |why: &str| {
        err(
            "arguments",
            format!(
                "{}() received an invalid combination of arguments: {why}",
                op.name
            ),
            span,
        )
    };
    match op.name {
        "sum" | "mean" | "prod" if keepdim_given && !dim_given => {
            return Err(invalid("`keepdim` is only accepted with `dim`")
                .with_help(format!("pass the dims: `{}(dim, keepdim=True)`", op.name)));
        }
        "prod" | "logsumexp" if dim_given && matches!(dim, Value::None) => {
            return Err(err(
                "arguments",
                "Please look up dimensions by name, got: name = None.",
                span,
            )
            .with_note(format!(
                "`{}(dim=None)` picks the named-dimension overload",
                op.name
            )));
        }
        "prod" if matches!(dim, Value::Tuple(_) | Value::List(_)) => {
            return Err(invalid("`dim` must be one int")
                .with_help("reduce one dim at a time: `x.prod(0).prod(1)`"));
        }
        "std" | "var"
            if keepdim_given && !dim_given && given_param("unbiased").is_some_and(|(g, _)| g) =>
        {
            return Err(invalid("`unbiased` with `keepdim` needs `dim`")
                .with_help("pass `dim=None`, or use `correction=` instead of `unbiased=`"));
        }
        "std" | "var"
            if given_param("unbiased").is_some_and(|(g, _)| g)
                && given_param("correction").is_some_and(|(g, _)| g) =>
        {
            return Err(invalid("`unbiased` and `correction` exclude each other")
                .with_help("`unbiased=False` is `correction=0`"));
        }
        _ => {}
    }
    Ok(())
}
