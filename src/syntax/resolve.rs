//! Numbers the names of each function body after the parse: every distinct
//! name the body uses gets a slot (parameters first, in order), written
//! into its `ExprKind::Name`, and the function lists them in
//! `FunctionDef::locals`. A run then keeps the function's variables in a
//! vector indexed by slot: no hashing of names while interpreting, and a
//! big function's variables sit in memory in the order the body made them
//! (issue 8: at a million statements, hashing names into a map that size
//! was a sixth of the analysis).
//!
//! A slot stands for the name, not for a binding: a slot never assigned
//! holds nothing, and reading it falls back to the names outside the
//! function (`torch`, helper functions, builtins), as reading a name the
//! function never binds does in the interpreter. So numbering names the
//! body only reads is harmless, and one walk suffices.
//!
//! Parameter annotations and defaults are evaluated outside the function's
//! variables and keep `Slot::NONE`.

use super::ast::*;
use std::hash::BuildHasher;

/// At most this many places for the slots of recently seen name
/// allocations, looked up by address before the table is (a name is mostly
/// used a few lines after it is bound). A small function gets fewer.
const MAX_RECENT: usize = 1 << 12;

/// Numbers the names of every function of `items`.
pub fn items(items: &mut [Item]) {
    for item in items {
        if let Item::Def(def) = item {
            function(def);
        }
    }
}

/// Numbers the names of one function (again, if it was numbered before).
pub fn function(def: &mut FunctionDef) {
    let statements = def.params.len() + def.body.len();
    let recent = (statements * 4).next_power_of_two().min(MAX_RECENT);
    let mut slots = Slots {
        table: hashbrown::HashTable::with_capacity(statements),
        names: Vec::new(),
        bound: Vec::new(),
        recent: vec![(0, 0); recent].into_boxed_slice(),
        resizes: false,
    };
    for (i, p) in def.params.iter().enumerate() {
        // Parameters are distinct (the parser checks), so they take the
        // first slots in order: `Slot::param`.
        let slot = slots.slot(&p.name.name);
        debug_assert_eq!(slot, Slot::param(i));
        slots.bound[slot.0 as usize] = true;
    }
    for s in &mut def.body {
        slots.stmt(s);
    }
    let mut names = slots.names;
    names.shrink_to_fit();
    def.locals = names;
    let mut bound = slots.bound;
    bound.shrink_to_fit();
    def.bound = bound;
    def.resizes = slots.resizes;
}

struct Slots {
    /// Slots, found by their name's text (`names[slot]`).
    table: hashbrown::HashTable<u32>,
    /// The names in slot order.
    names: Vec<Name>,
    /// Per slot: bound somewhere in the body (`FunctionDef::bound`).
    bound: Vec<bool>,
    /// (address of a name's text, its slot), by address.
    recent: Box<[(usize, u32)]>,
    /// A `resize_` attribute was seen (`FunctionDef::resizes`).
    resizes: bool,
}

fn hash(name: &str) -> u64 {
    rustc_hash::FxBuildHasher.hash_one(name)
}

impl Slots {
    fn slot(&mut self, name: &Name) -> Slot {
        let address = name.as_ptr() as usize;
        let places = self.recent.len();
        let recent = &mut self.recent[(address >> 4) & (places - 1)];
        if recent.0 == address {
            return Slot(recent.1);
        }
        let names = &mut self.names;
        let h = hash(name);
        let slot = match self
            .table
            .find(h, |&i| super::parser::same_text(&names[i as usize], name))
        {
            Some(&i) => i,
            None => {
                let i = names.len() as u32;
                names.push(name.clone());
                self.bound.push(false);
                self.table
                    .insert_unique(h, i, |&j| hash(&names[j as usize]));
                i
            }
        };
        // Every name seen lives as long as the walk (the tree holds it), so
        // an address in `recent` is never reused by another name meanwhile.
        *recent = (address, slot);
        Slot(slot)
    }

    /// An assignment target: the names it binds are local to the function
    /// (subscripts and attributes bind nothing).
    fn target(&mut self, e: &mut Expr) {
        match &mut e.kind {
            ExprKind::Name(name, slot) => {
                *slot = self.slot(name);
                self.bound[slot.0 as usize] = true;
            }
            ExprKind::Tuple(items) | ExprKind::List(items) => {
                items.iter_mut().for_each(|i| self.target(i))
            }
            ExprKind::Starred(inner) => self.target(inner),
            _ => self.expr(e),
        }
    }

    fn stmts(&mut self, stmts: &mut [Stmt]) {
        for s in stmts {
            self.stmt(s);
        }
    }

    fn stmt(&mut self, stmt: &mut Stmt) {
        match &mut stmt.kind {
            StmtKind::Assign { targets, value } => {
                targets.iter_mut().for_each(|t| self.target(t));
                self.expr(value);
            }
            StmtKind::AugAssign { target, value, .. } => {
                self.target(target);
                self.expr(value);
            }
            StmtKind::AnnAssign {
                target,
                annotation,
                value,
            } => {
                self.target(target);
                self.expr(annotation);
                if let Some(v) = value {
                    self.expr(v);
                }
            }
            StmtKind::Expr(e) => self.expr(e),
            StmtKind::Return(e) => {
                if let Some(e) = e {
                    self.expr(e);
                }
            }
            StmtKind::With { items, body } => {
                for item in items {
                    self.expr(&mut item.context);
                    if let Some(t) = &mut item.target {
                        self.target(t);
                    }
                }
                self.stmts(body);
            }
            StmtKind::If { cond, body, orelse } => {
                self.expr(cond);
                self.stmts(body);
                self.stmts(orelse);
            }
            StmtKind::For { target, iter, body } => {
                self.target(target);
                self.expr(iter);
                self.stmts(body);
            }
            StmtKind::Pass => {}
            StmtKind::Assert { cond, msg } => {
                self.expr(cond);
                if let Some(m) = msg {
                    self.expr(m);
                }
            }
        }
    }

    /// Recursion: the parser bounds expression depth (`MAX_EXPR_DEPTH`).
    fn expr(&mut self, e: &mut Expr) {
        match &mut e.kind {
            ExprKind::Name(name, slot) => *slot = self.slot(name),
            ExprKind::Int(_)
            | ExprKind::Float(_)
            | ExprKind::Str(_)
            | ExprKind::Bool(_)
            | ExprKind::None
            | ExprKind::Ellipsis => {}
            ExprKind::Tuple(items) | ExprKind::List(items) => {
                items.iter_mut().for_each(|i| self.expr(i))
            }
            ExprKind::Starred(inner) => self.expr(inner),
            ExprKind::Attribute { value, attr } => {
                self.resizes |= attr.as_str() == "resize_";
                self.expr(value)
            }
            ExprKind::Call(call) => {
                self.expr(&mut call.func);
                call.args.iter_mut().for_each(|a| self.expr(a));
                call.keywords
                    .iter_mut()
                    .for_each(|k| self.expr(&mut k.value));
            }
            ExprKind::Subscript { value, index } => {
                self.expr(value);
                self.expr(index);
            }
            ExprKind::Slice { lower, upper, step } => {
                for part in [lower, upper, step].into_iter().flatten() {
                    self.expr(part);
                }
            }
            ExprKind::BinOp { left, right, .. } => {
                self.expr(left);
                self.expr(right);
            }
            ExprKind::UnaryOp { operand, .. } => self.expr(operand),
            ExprKind::BoolOp { values, .. } => values.iter_mut().for_each(|v| self.expr(v)),
            ExprKind::Compare { left, ops } => {
                self.expr(left);
                ops.iter_mut().for_each(|(_, v)| self.expr(v));
            }
            ExprKind::IfExp { cond, body, orelse } => {
                self.expr(cond);
                self.expr(body);
                self.expr(orelse);
            }
            ExprKind::ListComp(comp) => {
                self.expr(&mut comp.iter);
                self.expr(&mut comp.target);
                if let Some(c) = &mut comp.cond {
                    self.expr(c);
                }
                self.expr(&mut comp.elt);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::syntax::ast::*;
    use crate::syntax::parser::parse_module;

    fn first_def(text: &str) -> FunctionDef {
        let module = parse_module(text).unwrap_or_else(|d| panic!("{d:?}"));
        module
            .items
            .into_iter()
            .find_map(|i| match i {
                Item::Def(d) => Some(d),
                _ => None,
            })
            .expect("a function")
    }

    fn slot_of(e: &Expr) -> (String, Slot) {
        match &e.kind {
            ExprKind::Name(n, s) => (n.to_string(), *s),
            other => panic!("not a name: {other:?}"),
        }
    }

    #[test]
    fn parameters_first_then_names_in_order_of_use() {
        let def = first_def(
            "def f(x: Tensor(2), k: int = 1):\n    y = torch.relu(x)\n    z = [y for y in (x, y)]\n    return z, y, k\n",
        );
        let locals: Vec<&str> = def.locals.iter().map(|n| n.as_str()).collect();
        assert_eq!(locals, ["x", "k", "y", "torch", "z"]);
        let StmtKind::Assign { targets, .. } = &def.body[0].kind else {
            panic!("an assignment")
        };
        assert_eq!(slot_of(&targets[0]), ("y".into(), Slot(2)));
        let StmtKind::Return(Some(ret)) = &def.body[2].kind else {
            panic!("a return")
        };
        let ExprKind::Tuple(items) = &ret.kind else {
            panic!("a tuple")
        };
        let slots: Vec<_> = items.iter().map(slot_of).collect();
        assert_eq!(
            slots,
            [
                ("z".into(), Slot(4)),
                ("y".into(), Slot(2)),
                ("k".into(), Slot(1))
            ]
        );
    }

    /// Parameters and the names of assignment, augmented assignment, `for`
    /// and `with ... as` targets are bound; names only read, subscripted or
    /// bound by a comprehension are not.
    #[test]
    fn bound_names_are_the_function_s_locals() {
        let def = first_def(
            "def f(x: Tensor(2)):\n    a, [b, *c] = x, [x, x]\n    d += 1\n    for e in x:\n        pass\n    with torch.no_grad() as g:\n        pass\n    x[0] = h\n    k = [m for m in (x,)]\n    return torch\n",
        );
        let bound: Vec<&str> = def
            .locals
            .iter()
            .zip(&def.bound)
            .filter(|(_, b)| **b)
            .map(|(n, _)| n.as_str())
            .collect();
        assert_eq!(bound, ["x", "a", "b", "c", "d", "e", "g", "k"]);
        assert_eq!(def.bound.len(), def.locals.len());
    }

    #[test]
    fn annotations_and_defaults_are_not_numbered() {
        let def = first_def("def f(x: Tensor(n), k: int = m):\n    return x\n");
        assert_eq!(def.locals.len(), 2);
        let ann = def.params[0].annotation.as_ref().expect("annotation");
        let ExprKind::Call(call) = &ann.kind else {
            panic!("a call")
        };
        assert_eq!(slot_of(&call.func), ("Tensor".into(), Slot::NONE));
        let default = def.params[1].default.as_ref().expect("default");
        assert_eq!(slot_of(default), ("m".into(), Slot::NONE));
    }
}
