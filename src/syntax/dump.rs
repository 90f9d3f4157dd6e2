//! Readable dumps of the front end's output, for `tpi dump tokens|ast` and
//! the golden tests: one line per token, or one line per AST node indented
//! under its parent, each with its `line:col` span. Plain text only; the
//! callers decide where it goes.

use super::ast::{Expr, ExprKind, FunctionDef, Item, Module, Stmt, StmtKind};
use super::parser::Token;
use super::source::{SourceFile, Span};
use std::fmt::Write;

/// Line starts of a text, to turn byte offsets into `line:col` in
/// logarithmic time (dumps print a position for every token and node).
pub struct LineIndex<'t> {
    text: &'t str,
    /// Byte offset where each line starts, and whether the line is ASCII
    /// (then columns are byte differences).
    lines: Vec<(usize, bool)>,
}

impl<'t> LineIndex<'t> {
    pub fn new(text: &'t str) -> LineIndex<'t> {
        let bytes = text.as_bytes();
        let mut lines = Vec::new();
        let mut start = 0;
        for (i, &b) in bytes.iter().enumerate() {
            if b == b'\n' {
                lines.push((start, bytes[start..i].is_ascii()));
                start = i + 1;
            }
        }
        lines.push((start, bytes[start..].is_ascii()));
        LineIndex { text, lines }
    }

    /// 1-based line and column (in characters) of a byte offset.
    pub fn line_col(&self, offset: u32) -> (usize, usize) {
        let offset = (offset as usize).min(self.text.len());
        let line = self.lines.partition_point(|&(start, _)| start <= offset);
        let (start, ascii) = self.lines[line.saturating_sub(1)];
        let col = if ascii {
            offset - start
        } else {
            String::from_utf8_lossy(&self.text.as_bytes()[start..offset])
                .chars()
                .count()
        };
        (line.max(1), col + 1)
    }

    /// `line:col-line:col` of a span.
    pub fn span_text(&self, span: Span) -> String {
        let (l1, c1) = self.line_col(span.start);
        let (l2, c2) = self.line_col(span.end);
        format!("{l1}:{c1}-{l2}:{c2}")
    }
}

/// `line:col-line:col` of a span (1-based, columns in characters).
pub fn span_text(file: &SourceFile, span: Span) -> String {
    LineIndex::new(&file.text).span_text(span)
}

/// One line per token: position, kind and text.
pub fn dump_tokens(file: &SourceFile, tokens: &[Token]) -> String {
    let index = LineIndex::new(&file.text);
    let mut out = String::new();
    for token in tokens {
        let line = format!(
            "{:<13} {:<8} {}",
            index.span_text(token.span),
            token.kind,
            token.text
        );
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

/// The AST as an indented tree.
pub fn dump_module(file: &SourceFile, module: &Module) -> String {
    let mut dumper = Dumper {
        index: LineIndex::new(&file.text),
        out: String::new(),
    };
    dumper.line(0, "", "Module", "", None);
    for item in &module.items {
        dumper.item(1, item);
    }
    dumper.out
}

/// A list of statements (REPL input) as an indented tree.
pub fn dump_stmts(file: &SourceFile, stmts: &[Stmt]) -> String {
    let mut dumper = Dumper {
        index: LineIndex::new(&file.text),
        out: String::new(),
    };
    for stmt in stmts {
        dumper.stmt(0, stmt);
    }
    dumper.out
}

struct Dumper<'f> {
    index: LineIndex<'f>,
    out: String,
}

impl Dumper<'_> {
    fn line(&mut self, depth: usize, label: &str, kind: &str, detail: &str, span: Option<Span>) {
        let mut line = "  ".repeat(depth);
        if !label.is_empty() {
            line.push_str(label);
            line.push(':');
            if !kind.is_empty() {
                line.push(' ');
            }
        }
        line.push_str(kind);
        if !detail.is_empty() {
            line.push(' ');
            line.push_str(detail);
        }
        if let Some(span) = span {
            line.push_str("  @");
            line.push_str(&self.index.span_text(span));
        }
        self.out.push_str(&line);
        self.out.push('\n');
    }

    fn item(&mut self, depth: usize, item: &Item) {
        match item {
            Item::Import(import) => {
                let mut detail = import.module.clone();
                if let Some(alias) = &import.alias {
                    let _ = write!(detail, " as {}", alias.name);
                }
                if !import.names.is_empty() {
                    let names: Vec<String> = import
                        .names
                        .iter()
                        .map(|(name, alias)| match alias {
                            Some(alias) => format!("{} as {}", name.name, alias.name),
                            None => name.name.to_string(),
                        })
                        .collect();
                    let _ = write!(detail, " import {}", names.join(", "));
                }
                self.line(depth, "", "Import", &detail, Some(import.span));
            }
            Item::Def(def) => self.def(depth, def),
        }
    }

    fn def(&mut self, depth: usize, def: &FunctionDef) {
        self.line(depth, "", "Def", &def.name.name, Some(def.span));
        for param in &def.params {
            self.line(depth + 1, "param", &param.name.name, "", Some(param.span));
            if let Some(annotation) = &param.annotation {
                self.expr(depth + 2, "annotation", annotation);
            }
            if let Some(default) = &param.default {
                self.expr(depth + 2, "default", default);
            }
        }
        if let Some(returns) = &def.returns {
            self.expr(depth + 1, "returns", returns);
        }
        self.block(depth + 1, "body", &def.body);
    }

    fn block(&mut self, depth: usize, label: &str, body: &[Stmt]) {
        self.line(depth, label, "", "", None);
        for stmt in body {
            self.stmt(depth + 1, stmt);
        }
    }

    fn stmt(&mut self, depth: usize, stmt: &Stmt) {
        let span = Some(stmt.span);
        let d = depth + 1;
        match &stmt.kind {
            StmtKind::Assign { targets, value } => {
                self.line(depth, "", "Assign", "", span);
                for target in targets {
                    self.expr(d, "target", target);
                }
                self.expr(d, "value", value);
            }
            StmtKind::AugAssign { target, op, value } => {
                self.line(depth, "", "AugAssign", &format!("{}=", op.symbol()), span);
                self.expr(d, "target", target);
                self.expr(d, "value", value);
            }
            StmtKind::AnnAssign {
                target,
                annotation,
                value,
            } => {
                self.line(depth, "", "AnnAssign", "", span);
                self.expr(d, "target", target);
                self.expr(d, "annotation", annotation);
                if let Some(value) = value {
                    self.expr(d, "value", value);
                }
            }
            StmtKind::Expr(e) => {
                self.line(depth, "", "Expr", "", span);
                self.expr(d, "", e);
            }
            StmtKind::Return(value) => {
                self.line(depth, "", "Return", "", span);
                if let Some(value) = value {
                    self.expr(d, "", value);
                }
            }
            StmtKind::With { items, body } => {
                self.line(depth, "", "With", "", span);
                for item in items {
                    self.expr(d, "context", &item.context);
                    if let Some(target) = &item.target {
                        self.expr(d, "as", target);
                    }
                }
                self.block(d, "body", body);
            }
            StmtKind::If { cond, body, orelse } => {
                self.line(depth, "", "If", "", span);
                self.expr(d, "cond", cond);
                self.block(d, "body", body);
                if !orelse.is_empty() {
                    self.block(d, "else", orelse);
                }
            }
            StmtKind::For { target, iter, body } => {
                self.line(depth, "", "For", "", span);
                self.expr(d, "target", target);
                self.expr(d, "iter", iter);
                self.block(d, "body", body);
            }
            StmtKind::Pass => self.line(depth, "", "Pass", "", span),
            StmtKind::Assert { cond, msg } => {
                self.line(depth, "", "Assert", "", span);
                self.expr(d, "cond", cond);
                if let Some(msg) = msg {
                    self.expr(d, "msg", msg);
                }
            }
        }
    }

    fn expr(&mut self, depth: usize, label: &str, e: &Expr) {
        let span = Some(e.span);
        let d = depth + 1;
        match &e.kind {
            ExprKind::Name(name, _) => self.line(depth, label, "Name", name, span),
            ExprKind::Int(value) => self.line(depth, label, "Int", &value.to_string(), span),
            ExprKind::Float(value) => self.line(depth, label, "Float", &format!("{value:?}"), span),
            ExprKind::Str(value) => self.line(depth, label, "Str", &format!("{value:?}"), span),
            ExprKind::Bool(value) => {
                let text = if *value { "True" } else { "False" };
                self.line(depth, label, "Bool", text, span)
            }
            ExprKind::None => self.line(depth, label, "None", "", span),
            ExprKind::Ellipsis => self.line(depth, label, "Ellipsis", "", span),
            ExprKind::Tuple(items) | ExprKind::List(items) => {
                let kind = if matches!(e.kind, ExprKind::Tuple(_)) {
                    "Tuple"
                } else {
                    "List"
                };
                self.line(depth, label, kind, "", span);
                for item in items {
                    self.expr(d, "", item);
                }
            }
            ExprKind::Starred(inner) => {
                self.line(depth, label, "Starred", "", span);
                self.expr(d, "", inner);
            }
            ExprKind::Attribute { value, attr } => {
                self.line(depth, label, "Attribute", attr, span);
                self.expr(d, "value", value);
            }
            ExprKind::Call(call) => {
                self.line(depth, label, "Call", "", span);
                self.expr(d, "func", &call.func);
                for arg in &call.args {
                    self.expr(d, "arg", arg);
                }
                for keyword in &call.keywords {
                    self.expr(d, &format!("{}=", keyword.name.name), &keyword.value);
                }
            }
            ExprKind::Subscript { value, index } => {
                self.line(depth, label, "Subscript", "", span);
                self.expr(d, "value", value);
                self.expr(d, "index", index);
            }
            ExprKind::Slice { lower, upper, step } => {
                self.line(depth, label, "Slice", "", span);
                if let Some(lower) = lower {
                    self.expr(d, "lower", lower);
                }
                if let Some(upper) = upper {
                    self.expr(d, "upper", upper);
                }
                if let Some(step) = step {
                    self.expr(d, "step", step);
                }
            }
            ExprKind::BinOp { op, left, right } => {
                self.line(depth, label, "BinOp", op.symbol(), span);
                self.expr(d, "", left);
                self.expr(d, "", right);
            }
            ExprKind::UnaryOp { op, operand } => {
                let symbol = match op {
                    super::ast::UnaryOp::Neg => "-",
                    super::ast::UnaryOp::Pos => "+",
                    super::ast::UnaryOp::Invert => "~",
                    super::ast::UnaryOp::Not => "not",
                };
                self.line(depth, label, "UnaryOp", symbol, span);
                self.expr(d, "", operand);
            }
            ExprKind::BoolOp { op, values } => {
                let word = match op {
                    super::ast::BoolOp::And => "and",
                    super::ast::BoolOp::Or => "or",
                };
                self.line(depth, label, "BoolOp", word, span);
                for value in values.iter() {
                    self.expr(d, "", value);
                }
            }
            ExprKind::Compare { left, ops } => {
                self.line(depth, label, "Compare", "", span);
                self.expr(d, "", left);
                for (op, right) in ops.iter() {
                    self.expr(d, op.symbol(), right);
                }
            }
            ExprKind::IfExp { cond, body, orelse } => {
                self.line(depth, label, "IfExp", "", span);
                self.expr(d, "cond", cond);
                self.expr(d, "body", body);
                self.expr(d, "else", orelse);
            }
            ExprKind::ListComp(comp) => {
                self.line(depth, label, "ListComp", "", span);
                self.expr(d, "elt", &comp.elt);
                self.expr(d, "target", &comp.target);
                self.expr(d, "iter", &comp.iter);
                if let Some(cond) = &comp.cond {
                    self.expr(d, "if", cond);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_index_agrees_with_source_file() {
        let text = "ab\ncé d\n\nxyz";
        let file = SourceFile::new("t", text);
        let index = LineIndex::new(text);
        for offset in 0..=text.len() as u32 + 2 {
            if text.is_char_boundary((offset as usize).min(text.len())) {
                assert_eq!(
                    index.line_col(offset),
                    file.line_col(offset),
                    "offset {offset}"
                );
            }
        }
    }
}
