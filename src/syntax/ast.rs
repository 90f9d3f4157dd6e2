//! The abstract syntax tree of a `.tp` file (LANGUAGE.md). Every node carries the
//! `Span` of the source it came from. The tree is plain data: it knows nothing of
//! tensors; the analysis gives it meaning.

use super::source::Span;
use std::borrow::Borrow;
use std::fmt;
use std::sync::Arc;

/// An identifier's text: shared, so cloning it copies a pointer. The parser
/// gives occurrences of an identifier close to each other one allocation
/// (`parser::name`); equality is by text.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Name(Arc<str>);

impl Name {
    pub fn new(text: &str) -> Name {
        Name(Arc::from(text))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Where the text lives: equal for clones of one `Name` (the parser
    /// gives a file's occurrences of an identifier one allocation).
    pub fn as_ptr(&self) -> *const u8 {
        self.0.as_ptr()
    }
}

impl std::ops::Deref for Name {
    type Target = str;
    fn deref(&self) -> &str {
        &self.0
    }
}

impl Borrow<str> for Name {
    fn borrow(&self) -> &str {
        &self.0
    }
}

impl From<&str> for Name {
    fn from(text: &str) -> Name {
        Name::new(text)
    }
}

impl PartialEq<str> for Name {
    fn eq(&self, other: &str) -> bool {
        &*self.0 == other
    }
}

impl PartialEq<&str> for Name {
    fn eq(&self, other: &&str) -> bool {
        &*self.0 == *other
    }
}

impl fmt::Display for Name {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Debug for Name {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&*self.0, f)
    }
}

/// A whole file: imports and function definitions, in source order.
#[derive(Clone, Debug, PartialEq)]
pub struct Module {
    pub items: Vec<Item>,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Item {
    /// `import torch`, `import torch.nn.functional as F`, `from torch import nn`:
    /// accepted and ignored (the prelude is always in scope).
    Import(Import),
    Def(FunctionDef),
}

#[derive(Clone, Debug, PartialEq)]
pub struct Import {
    /// The dotted module path (`torch.nn.functional`).
    pub module: String,
    /// `from M import a as b, c`: the imported names with their optional alias;
    /// empty for `import M [as N]`.
    pub names: Vec<(Ident, Option<Ident>)>,
    /// `import M as N`: the alias.
    pub alias: Option<Ident>,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Ident {
    pub name: Name,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub struct FunctionDef {
    pub name: Ident,
    pub params: Vec<Param>,
    /// `-> T` (ignored by the analysis).
    pub returns: Option<Expr>,
    pub body: Vec<Stmt>,
    /// The names the body uses, parameters first, in slot order
    /// (`syntax::resolve`): a run keeps the function's variables in a
    /// vector indexed by these slots instead of a map keyed by name.
    pub locals: Vec<Name>,
    /// Per slot of `locals`: whether the body binds the name (a parameter,
    /// an assignment, augmented assignment, `for` or `with ... as` target).
    /// Python makes such a name local to the whole function: reading it
    /// before a value is bound is an error, not a read of `torch` or a
    /// helper function of that name.
    pub bound: Vec<bool>,
    /// Whether the body names a `resize_` attribute (`x.resize_(…)`,
    /// `torch.ops.aten.resize_`): the analysis then keeps the callers'
    /// variables for the check of a growing resize (`syntax::resolve`).
    pub resizes: bool,
    /// From `def` to the end of the header's `:`.
    pub header_span: Span,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Param {
    pub name: Ident,
    pub annotation: Option<Expr>,
    pub default: Option<Expr>,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Stmt {
    pub kind: StmtKind,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub enum StmtKind {
    /// `a = b = value`: one or more targets (names, tuples/lists of targets,
    /// `*rest`, subscripts, attributes).
    Assign {
        targets: Box<[Expr]>,
        value: Expr,
    },
    /// `target op= value`.
    AugAssign {
        target: Box<Expr>,
        op: BinOp,
        value: Expr,
    },
    /// `target: annotation [= value]` (the REPL declares inputs this way).
    AnnAssign {
        target: Box<Expr>,
        annotation: Box<Expr>,
        value: Option<Box<Expr>>,
    },
    Expr(Expr),
    Return(Option<Expr>),
    With {
        items: Vec<WithItem>,
        body: Vec<Stmt>,
    },
    /// `elif` is a nested `If` alone in `orelse`.
    If {
        cond: Box<Expr>,
        body: Vec<Stmt>,
        orelse: Vec<Stmt>,
    },
    For {
        target: Box<Expr>,
        iter: Box<Expr>,
        body: Vec<Stmt>,
    },
    Pass,
    Assert {
        cond: Expr,
        msg: Option<Box<Expr>>,
    },
}

#[derive(Clone, Debug, PartialEq)]
pub struct WithItem {
    pub context: Expr,
    pub target: Option<Expr>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Expr {
    pub kind: ExprKind,
    pub span: Span,
}

/// Where a function keeps a name's value: its index among the function's
/// locals (`FunctionDef::locals`, numbered by `syntax::resolve` after the
/// parse), or `Slot::NONE` for a name read outside any function body (a
/// parameter's annotation or default) or not yet numbered.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Slot(pub u32);

impl Slot {
    pub const NONE: Slot = Slot(u32::MAX);

    pub fn index(self) -> Option<usize> {
        (self != Slot::NONE).then_some(self.0 as usize)
    }

    /// The slot of a function's `i`th parameter: `resolve` numbers the
    /// parameters first, in order.
    pub fn param(i: usize) -> Slot {
        Slot(i as u32)
    }
}

#[derive(Clone, Debug, PartialEq)]
pub enum ExprKind {
    /// A name and its slot in the enclosing function.
    Name(Name, Slot),
    Int(i64),
    Float(f64),
    Str(String),
    Bool(bool),
    None,
    Ellipsis,
    Tuple(Vec<Expr>),
    List(Vec<Expr>),
    /// `*e` (in assignment targets, and in call arguments / displays).
    Starred(Box<Expr>),
    /// `value.attr`; the name's span is the end of the expression's
    /// (`Expr::attr_span`).
    Attribute {
        value: Box<Expr>,
        attr: Name,
    },
    Call(Box<Call>),
    /// `value[index]`; several comma-separated indices make a `Tuple` index.
    Subscript {
        value: Box<Expr>,
        index: Box<Expr>,
    },
    /// `lower:upper:step` (only inside a subscript).
    Slice {
        lower: Option<Box<Expr>>,
        upper: Option<Box<Expr>>,
        step: Option<Box<Expr>>,
    },
    BinOp {
        op: BinOp,
        left: Box<Expr>,
        right: Box<Expr>,
    },
    UnaryOp {
        op: UnaryOp,
        operand: Box<Expr>,
    },
    /// `a and b and c` / `a or b`.
    BoolOp {
        op: BoolOp,
        values: Box<[Expr]>,
    },
    /// `a < b <= c`: chained comparisons.
    Compare {
        left: Box<Expr>,
        ops: Box<[(CmpOp, Expr)]>,
    },
    /// `body if cond else orelse`.
    IfExp {
        cond: Box<Expr>,
        body: Box<Expr>,
        orelse: Box<Expr>,
    },
    /// `[elt for target in iter if cond]`.
    ListComp(Box<ListComp>),
}

/// `func(*args, **keywords)`: boxed, so that the common small expressions
/// keep `Expr` at 40 bytes (the tree of a big file is mostly expressions).
#[derive(Clone, Debug, PartialEq)]
pub struct Call {
    pub func: Expr,
    pub args: Box<[Expr]>,
    pub keywords: Box<[Keyword]>,
}

/// `[elt for target in iter if cond]`.
#[derive(Clone, Debug, PartialEq)]
pub struct ListComp {
    pub elt: Expr,
    pub target: Expr,
    pub iter: Expr,
    pub cond: Option<Expr>,
}

impl Expr {
    /// The span of the attribute name of `value.attr`: the expression ends
    /// with the name, which is one token.
    pub fn attr_span(&self) -> Span {
        match &self.kind {
            ExprKind::Attribute { attr, .. } => Span {
                start: self.span.end - attr.len() as u32,
                end: self.span.end,
            },
            _ => self.span,
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct Keyword {
    pub name: Ident,
    pub value: Expr,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BinOp {
    Add,
    Sub,
    Mul,
    Div,
    FloorDiv,
    Mod,
    Pow,
    MatMul,
    BitAnd,
    BitOr,
    BitXor,
    LShift,
    RShift,
}

impl BinOp {
    pub fn symbol(self) -> &'static str {
        match self {
            BinOp::Add => "+",
            BinOp::Sub => "-",
            BinOp::Mul => "*",
            BinOp::Div => "/",
            BinOp::FloorDiv => "//",
            BinOp::Mod => "%",
            BinOp::Pow => "**",
            BinOp::MatMul => "@",
            BinOp::BitAnd => "&",
            BinOp::BitOr => "|",
            BinOp::BitXor => "^",
            BinOp::LShift => "<<",
            BinOp::RShift => ">>",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum UnaryOp {
    Neg,
    Pos,
    Invert,
    Not,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BoolOp {
    And,
    Or,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CmpOp {
    Lt,
    Gt,
    Le,
    Ge,
    Eq,
    Ne,
    Is,
    IsNot,
    In,
    NotIn,
}

impl CmpOp {
    pub fn symbol(self) -> &'static str {
        match self {
            CmpOp::Lt => "<",
            CmpOp::Gt => ">",
            CmpOp::Le => "<=",
            CmpOp::Ge => ">=",
            CmpOp::Eq => "==",
            CmpOp::Ne => "!=",
            CmpOp::Is => "is",
            CmpOp::IsNot => "is not",
            CmpOp::In => "in",
            CmpOp::NotIn => "not in",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A big file's tree is mostly expressions and statements: their sizes
    /// are part of the front end's speed and memory (issue 8), so a change
    /// that grows them should be deliberate.
    #[test]
    fn node_sizes() {
        eprintln!(
            "Expr {} ExprKind {} Stmt {} StmtKind {}",
            std::mem::size_of::<Expr>(),
            std::mem::size_of::<ExprKind>(),
            std::mem::size_of::<Stmt>(),
            std::mem::size_of::<StmtKind>()
        );
        assert_eq!(std::mem::size_of::<Expr>(), 40);
        assert_eq!(std::mem::size_of::<Stmt>(), 72);
    }
}
