//! The human report of `tpi check` (stdout): per entry function, the graph
//! mode and why, each input with what happened to it and where, each output
//! with its class, base and the span that made it, the tangents, intermediate
//! bases, grad-mode change, effect tokens, assumptions and the eager
//! prediction. Every claim carries `file:line:col` and the source snippet it
//! comes from.
//!
//! It only reads the analysis results (`Outcome`); it never re-runs anything
//! and never prints. Diagnostics themselves are rendered on stderr by
//! `render.rs`; a rejected function shows its code and message here too.
//! The phrases that explain PyTorch's rules (`mutation_reason`,
//! `output_story`, `mode_reason`) are shared with `tpi explain`
//! (`explain.rs`). Output is deterministic (golden-tested); colour only when
//! the caller asks.

use crate::analysis::meta::{
    AliasStep, EventKind, InputAliasInfo, MutationRecord, MutationType, OutputAliasInfo,
    OutputReason, OutputType, TangentFor, ViewAndMutationMeta,
};
use crate::analysis::FunctionResult;
use crate::report::Diagnostic;
use crate::syntax::ast::{self, ExprKind, StmtKind};
use crate::syntax::Span;
use crate::{Outcome, SourceFile};
use std::fmt::Write;

/// The report for one file (diagnostics are rendered separately, on stderr).
pub fn file_report(file: &SourceFile, outcome: &Outcome, verbose: bool) -> String {
    file_report_styled(file, outcome, verbose, false)
}

/// The report for one file, with ANSI colour when `color` is set.
pub fn file_report_styled(
    file: &SourceFile,
    outcome: &Outcome,
    verbose: bool,
    color: bool,
) -> String {
    let cx = Context::new(file, outcome.module.as_ref(), color);
    let mut out = String::new();
    let rejected = outcome
        .functions
        .iter()
        .filter(|f| f.meta.is_none())
        .count();
    let file_errors: Vec<&Diagnostic> = outcome
        .diagnostics
        .iter()
        .filter(|d| d.is_error())
        .collect();
    if !file_errors.is_empty() {
        let _ = writeln!(out, "{}: not analysed", cx.paint(&file.name, Style::Bold));
        for d in file_errors {
            let _ = writeln!(out, "  {}", cx.diagnostic_line(d));
        }
        return out;
    }
    let count = outcome.functions.len();
    let _ = write!(
        out,
        "{}: {} entry function{}",
        cx.paint(&file.name, Style::Bold),
        count,
        if count == 1 { "" } else { "s" }
    );
    if rejected > 0 {
        let _ = write!(out, ", {} rejected", rejected);
    }
    out.push('\n');
    if count == 0 {
        out.push_str("  (an entry function has every parameter annotated with `Tensor(...)` or given a default)\n");
    }
    for f in &outcome.functions {
        out.push('\n');
        function_report(&cx, f, verbose, &mut out);
    }
    out
}

// ------------------------------------------------------------------ context

/// What every phrase needs: the file (for locations and snippets), the names
/// that assignments bind (`v = w.view(4, 4)` names the view `v`), colour.
pub(crate) struct Context<'a> {
    pub file: &'a SourceFile,
    /// The tree, for the names that `name = value` assignments bind
    /// (`binding`, a binary search over statements in source order).
    module: Option<&'a ast::Module>,
    color: bool,
}

#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Style {
    Plain,
    Bold,
    Dim,
    Red,
    Yellow,
    Green,
    Cyan,
}

impl<'a> Context<'a> {
    pub fn new(file: &'a SourceFile, module: Option<&'a ast::Module>, color: bool) -> Context<'a> {
        Context {
            file,
            module,
            color,
        }
    }

    pub fn paint(&self, text: &str, style: Style) -> String {
        if !self.color || style == Style::Plain {
            return text.to_string();
        }
        let code = match style {
            Style::Plain => "0",
            Style::Bold => "1",
            Style::Dim => "2",
            Style::Red => "31",
            Style::Yellow => "33",
            Style::Green => "32",
            Style::Cyan => "36",
        };
        format!("\u{1b}[{code}m{text}\u{1b}[0m")
    }

    /// `file:line:col`.
    pub fn at(&self, span: Span) -> String {
        let (line, col) = self.file.line_col(span.start);
        format!("{}:{}:{}", self.file.name, line, col)
    }

    /// The source of a span on one line, shortened, in backticks.
    pub fn code(&self, span: Span) -> String {
        format!("`{}`", snippet(self.file, span))
    }

    /// `file:line:col `snippet``.
    pub fn at_code(&self, span: Span) -> String {
        format!("{} {}", self.at(span), self.code(span))
    }

    /// The name an assignment gave the tensor made at `span`, if any.
    pub fn binding(&self, span: Span) -> Option<&'a str> {
        let module = self.module?;
        module.items.iter().find_map(|item| match item {
            ast::Item::Def(def) if def.span.start <= span.start && span.end <= def.span.end => {
                binding_in(&def.body, span)
            }
            _ => None,
        })
    }

    /// One alias of a chain, in words: "view `v` (`w.view(4, 4)`, f.tp:4:9)".
    pub fn alias_step(&self, step: &AliasStep, inputs: &[InputAliasInfo]) -> String {
        if let Some(i) = step.input {
            return match inputs.get(i) {
                Some(info) => format!("input `{}`", info.name),
                None => format!("input {i}"),
            };
        }
        match self.binding(step.span) {
            Some(name) => format!(
                "`{name} = {}` ({})",
                snippet(self.file, step.span),
                self.at(step.span)
            ),
            None => format!("{} ({})", self.code(step.span), self.at(step.span)),
        }
    }

    /// The one-line form of a diagnostic: `error[code] at file:l:c `snippet`: message`.
    pub fn diagnostic_line(&self, d: &Diagnostic) -> String {
        let style = if d.is_error() {
            Style::Red
        } else {
            Style::Yellow
        };
        let head = self.paint(&format!("{}[{}]", d.severity.as_str(), d.code), style);
        let code = snippet(self.file, d.primary.span);
        if code.is_empty() {
            format!("{head} at {}: {}", self.at(d.primary.span), d.message)
        } else {
            format!(
                "{head} at {} `{code}`: {}",
                self.at(d.primary.span),
                d.message
            )
        }
    }
}

/// The name a `name = value` (or `name: T = value`) statement of `body`
/// binds to the value at `span`: the statement holding `span` is found by
/// a binary search, as statements are in source order, then its blocks.
fn binding_in(body: &[ast::Stmt], span: Span) -> Option<&str> {
    let at = body.partition_point(|s| s.span.start <= span.start);
    let stmt = body[..at].last().filter(|s| span.end <= s.span.end)?;
    let (target, value) = match &stmt.kind {
        StmtKind::Assign { targets, value } => match &**targets {
            [target] => (target, value),
            _ => return None,
        },
        StmtKind::AnnAssign {
            target,
            value: Some(value),
            ..
        } => (&**target, &**value),
        StmtKind::With { body, .. } | StmtKind::For { body, .. } => return binding_in(body, span),
        StmtKind::If { body, orelse, .. } => {
            return binding_in(body, span).or_else(|| binding_in(orelse, span))
        }
        _ => return None,
    };
    match &target.kind {
        ExprKind::Name(name, _) if value.span == span => Some(name.as_str()),
        _ => None,
    }
}

/// The source of `span` on one line: whitespace runs collapsed, at most 60
/// characters (a longer one ends with `…`).
pub(crate) fn snippet(file: &SourceFile, span: Span) -> String {
    const LIMIT: usize = 60;
    let raw = file.snippet(span);
    let mut text = String::new();
    let mut space = false;
    for c in raw.chars() {
        if c.is_whitespace() {
            space = !text.is_empty();
            continue;
        }
        if space {
            text.push(' ');
            space = false;
        }
        text.push(c);
    }
    if text.chars().count() > LIMIT {
        let mut short: String = text.chars().take(LIMIT - 1).collect();
        short.push('…');
        short
    } else {
        text
    }
}

/// `(4, 4)`, `()`.
pub(crate) fn shape(dims: &[String]) -> String {
    if dims.len() == 1 {
        format!("({},)", dims[0])
    } else {
        format!("({})", dims.join(", "))
    }
}

/// `a`, `a and b`, `a, b and c`.
pub(crate) fn list(items: &[String]) -> String {
    match items {
        [] => String::new(),
        [one] => one.clone(),
        [init @ .., last] => format!("{} and {}", init.join(", "), last),
    }
}

// ------------------------------------------------------------------ tables

/// Rows of cells padded to aligned columns (the last column is not padded).
struct Table {
    rows: Vec<Vec<(String, Style)>>,
}

impl Table {
    fn new() -> Table {
        Table { rows: Vec::new() }
    }

    fn row(&mut self, cells: Vec<(String, Style)>) {
        self.rows.push(cells);
    }

    fn render(&self, cx: &Context, indent: &str, out: &mut String) {
        let columns = self.rows.iter().map(Vec::len).max().unwrap_or(0);
        let mut widths = vec![0; columns];
        for row in &self.rows {
            for (i, (text, _)) in row.iter().enumerate() {
                widths[i] = widths[i].max(text.chars().count());
            }
        }
        for row in &self.rows {
            let mut line = String::from(indent);
            let last = row.iter().rposition(|(t, _)| !t.is_empty()).unwrap_or(0);
            for (i, (text, style)) in row.iter().enumerate().take(last + 1) {
                // A column empty in every row takes no room.
                if widths[i] == 0 {
                    continue;
                }
                line.push_str(&cx.paint(text, *style));
                if i < last {
                    let pad = widths[i] - text.chars().count() + 2;
                    line.extend(std::iter::repeat_n(' ', pad));
                }
            }
            out.push_str(line.trim_end());
            out.push('\n');
        }
    }
}

fn cell(text: impl Into<String>) -> (String, Style) {
    (text.into(), Style::Plain)
}

fn styled(text: impl Into<String>, style: Style) -> (String, Style) {
    (text.into(), style)
}

// ------------------------------------------------------------------ one function

fn function_report(cx: &Context, f: &FunctionResult, verbose: bool, out: &mut String) {
    let title = cx.paint(&f.name, Style::Bold);
    let Some(meta) = &f.meta else {
        let _ = writeln!(
            out,
            "{title} ({}): {}",
            cx.at(f.span),
            cx.paint("rejected", Style::Red)
        );
        match f.error() {
            Some(e) => {
                let _ = writeln!(out, "  {}", cx.diagnostic_line(e));
                if let Some(help) = &e.help {
                    let _ = writeln!(out, "  help: {help}");
                }
            }
            None => out.push_str("  the analysis produced no metadata\n"),
        }
        eager_lines(cx, f, "  ", out);
        return;
    };
    let (mode, why) = mode_reason(cx, meta);
    let mode_style = if meta.is_train {
        Style::Yellow
    } else {
        Style::Green
    };
    let _ = writeln!(
        out,
        "{title} ({}): {}",
        cx.at(f.span),
        cx.paint(&mode, mode_style)
    );
    let _ = writeln!(out, "  {why}");
    if !meta.keep_input_mutations {
        out.push_str("  keep_input_mutations is off (--no-keep-input-mutations): every input mutation leaves the graph\n");
    }

    // Inputs.
    out.push('\n');
    out.push_str("  inputs\n");
    let mut table = Table::new();
    for (i, input) in meta.inputs.iter().enumerate() {
        table.row(input_row(i, input));
    }
    let mut rows = String::new();
    table.render(cx, "    ", &mut rows);
    for (i, (line, input)) in rows.lines().zip(&meta.inputs).enumerate() {
        out.push_str(line);
        out.push('\n');
        input_details(cx, meta, i, input, verbose, out);
    }
    if meta.inputs.is_empty() {
        out.push_str("    (none)\n");
    }

    // Outputs.
    out.push('\n');
    out.push_str("  outputs\n");
    if meta.outputs.is_empty() {
        out.push_str("    (none: the function returns nothing)\n");
    }
    let mut table = Table::new();
    for (i, o) in meta.outputs.iter().enumerate() {
        table.row(output_row(cx, meta, i, o));
    }
    let mut rows = String::new();
    table.render(cx, "    ", &mut rows);
    for (i, (line, o)) in rows.lines().zip(&meta.outputs).enumerate() {
        out.push_str(line);
        out.push('\n');
        for detail in output_story(cx, meta, i, o) {
            let _ = writeln!(out, "         {detail}");
        }
        if verbose {
            let _ = writeln!(
                out,
                "         output_type={} base_idx={} requires_grad={} dynamic_dims={:?}",
                o.output_type.name(),
                o.base_idx.map_or("None".to_string(), |b| b.to_string()),
                py_bool(o.requires_grad),
                o.dynamic_dims
            );
        }
    }

    // Intermediate bases.
    if !meta.intermediate_bases.is_empty() {
        out.push('\n');
        let _ = writeln!(
            out,
            "  intermediate bases ({})",
            meta.intermediate_bases.len()
        );
        let mut table = Table::new();
        for (k, base) in meta.intermediate_bases.iter().enumerate() {
            let made = base
                .chain
                .last()
                .map(|s| cx.at_code(s.span))
                .unwrap_or_default();
            let users: Vec<String> = base.outputs.iter().map(|o| o.to_string()).collect();
            table.row(vec![
                cell(k.to_string()),
                cell(shape(&base.shape)),
                cell(made),
                cell(format!(
                    "the base of output{} {}: an extra forward output",
                    if users.len() == 1 { "" } else { "s" },
                    list(&users)
                )),
            ]);
        }
        table.render(cx, "    ", out);
    }

    // Tangents.
    out.push('\n');
    if meta.traced_tangents.is_empty() {
        out.push_str(
            "  tangents: none (no output or out-of-graph mutated input needs a gradient)\n",
        );
    } else {
        let _ = writeln!(out, "  tangents ({})", meta.traced_tangents.len());
        let mut table = Table::new();
        for (k, t) in meta.traced_tangents.iter().enumerate() {
            let dims: Vec<String> = t.shape.iter().map(|s| s.to_string()).collect();
            let strides: Vec<String> = t.stride.iter().map(|s| s.to_string()).collect();
            table.row(vec![
                cell(k.to_string()),
                cell(shape(&dims)),
                cell(format!("stride {}", shape(&strides))),
                cell(t.dtype.name()),
                cell(tangent_purpose(meta, t.for_)),
            ]);
        }
        table.render(cx, "    ", out);
    }

    // Graph-level facts.
    if meta.grad_enabled_mutation.is_none() && meta.num_tokens == 0 {
        out.push_str("  grad mode unchanged, no effect tokens\n");
    }
    match (meta.grad_enabled_mutation, meta.grad_mode_set_at) {
        (None, _) => {}
        (Some(on), at) => {
            let word = if on { "on" } else { "off" };
            let place = at
                .map(|s| format!(" by {}", cx.at_code(s)))
                .unwrap_or_default();
            let _ = writeln!(
                out,
                "  grad mode: left {word}{place} (grad_enabled_mutation={}); the runtime sets it {word} again after every call",
                py_bool(on)
            );
        }
    }
    if meta.num_tokens > 0 {
        let place = meta
            .token_at
            .map(|s| format!(" (from {})", cx.at_code(s)))
            .unwrap_or_default();
        let _ = writeln!(
            out,
            "  effect tokens: {}{place}: an extra leading input and output of the graph, to order the side effects",
            meta.num_tokens
        );
    }
    assumption_lines(cx, f, out);
    eager_lines(cx, f, "  ", out);
    if verbose {
        derived_lines(meta, out);
    }
}

fn py_bool(b: bool) -> &'static str {
    if b {
        "True"
    } else {
        "False"
    }
}

/// The graph mode and the reason, as aot_autograd decides it (AOT_RULES §5.1).
pub(crate) fn mode_reason(cx: &Context, meta: &ViewAndMutationMeta) -> (String, String) {
    let grad_inputs: Vec<String> = meta
        .inputs
        .iter()
        .filter(|i| i.requires_grad_at_entry)
        .map(|i| format!("`{}`", i.name))
        .collect();
    if !meta.needs_autograd {
        return (
            "inference graph".to_string(),
            "no input requires grad".to_string(),
        );
    }
    let who = if grad_inputs.len() == 1 {
        format!("input {} requires grad", grad_inputs[0])
    } else {
        format!("inputs {} require grad", list(&grad_inputs))
    };
    let (grad_outputs, grad_mutations) = train_reasons(cx, meta);
    if meta.is_train {
        let mut reasons = Vec::new();
        match grad_outputs.as_slice() {
            [] => {}
            [one] => reasons.push(format!("output {one} requires grad")),
            many => reasons.push(format!("outputs {} require grad", list(many))),
        }
        reasons.extend(grad_mutations);
        return (
            "training graph".to_string(),
            format!("{who}, and {}", reasons.join("; ")),
        );
    }
    let regenerated: Vec<String> = meta
        .outputs
        .iter()
        .enumerate()
        .filter(|(_, o)| o.requires_grad)
        .map(|(i, _)| i.to_string())
        .collect();
    let except = if regenerated.is_empty() {
        String::new()
    } else {
        format!(
            " except output{} {}, which alias{} an input that requires grad and {} regenerated from it",
            if regenerated.len() == 1 { "" } else { "s" },
            list(&regenerated),
            if regenerated.len() == 1 { "es" } else { "" },
            if regenerated.len() == 1 { "is" } else { "are" }
        )
    };
    (
        "inference graph (downgraded)".to_string(),
        format!(
            "{who}, but no output requires grad{except}, and no input that requires grad is written with grad mode on: aot_autograd downgrades to an inference graph"
        ),
    )
}

/// The facts that keep a graph in training mode: the indices of outputs that
/// require grad (other than aliases of grad-requiring inputs), and the
/// grad-tracked data mutations of inputs that require grad, in words.
pub(crate) fn train_reasons(
    cx: &Context,
    meta: &ViewAndMutationMeta,
) -> (Vec<String>, Vec<String>) {
    let outputs = meta
        .outputs
        .iter()
        .enumerate()
        .filter(|(_, o)| {
            o.requires_grad
                && !(matches!(
                    o.output_type,
                    OutputType::AliasOfInput | OutputType::IsInput
                ) && o
                    .base_idx
                    .and_then(|b| meta.inputs.get(b))
                    .is_some_and(|i| i.requires_grad))
        })
        .map(|(i, _)| i.to_string())
        .collect();
    let mutations = meta
        .inputs
        .iter()
        .filter(|i| {
            i.requires_grad
                && i.mutates_data
                && !i.mutations_under_no_grad_or_inference_mode
                && !i.mutations_hidden_from_autograd
        })
        .map(|i| {
            match i
                .mutations
                .iter()
                .find(|r| r.kind == EventKind::Data && !r.no_grad)
            {
                Some(r) => format!(
                    "input `{}`, which requires grad, is written with grad mode on ({})",
                    i.name,
                    cx.at_code(r.span)
                ),
                None => format!(
                    "input `{}`, which requires grad, is written with grad mode on",
                    i.name
                ),
            }
        })
        .collect();
    (outputs, mutations)
}

// ------------------------------------------------------------------ inputs

fn input_row(i: usize, input: &InputAliasInfo) -> Vec<(String, Style)> {
    let ty = match input.dtype {
        Some(d) => format!("{} {}", shape(&input.shape), d.name()),
        None => input.kind.to_string(),
    };
    let mut facts = Vec::new();
    if input.kind == "tensor" {
        if input.requires_grad_at_entry {
            facts.push(if input.is_leaf {
                "leaf, requires grad"
            } else {
                "requires grad (not a leaf)"
            });
        } else if input.requires_grad {
            facts.push("requires grad after the run");
        }
    }
    let (status, style) = match (input.kind, input.mutation_type) {
        (kind, _) if kind != "tensor" => (String::new(), Style::Plain),
        (_, MutationType::NotMutated) => ("NOT_MUTATED".to_string(), Style::Dim),
        (_, MutationType::MutatedInGraph) => ("MUTATED_IN_GRAPH".to_string(), Style::Cyan),
        (_, MutationType::MutatedOutGraph) => ("MUTATED_OUT_GRAPH".to_string(), Style::Yellow),
    };
    vec![
        cell(i.to_string()),
        styled(input.name.clone(), Style::Bold),
        cell(ty),
        cell(facts.join(", ")),
        styled(status, style),
    ]
}

fn input_details(
    cx: &Context,
    meta: &ViewAndMutationMeta,
    i: usize,
    input: &InputAliasInfo,
    verbose: bool,
    out: &mut String,
) {
    const INDENT: &str = "         ";
    // A loop can write an input thousands of times: show the first rows.
    const MAX_ROWS: usize = 8;
    let mut table = Table::new();
    for r in input.mutations.iter().take(MAX_ROWS) {
        table.row(mutation_row(cx, meta, i, r));
    }
    table.render(cx, INDENT, out);
    let rest = input.mutations.get(MAX_ROWS..).unwrap_or_default();
    let more = rest.len() + input.mutations_omitted;
    if more > 0 {
        let mut lines: Vec<String> = Vec::new();
        for r in rest {
            let line = cx.file.line_col(r.span.start).0.to_string();
            if !lines.contains(&line) {
                lines.push(line);
            }
        }
        let shown = if lines.len() > 10 {
            format!("{}, …", lines[..10].join(", "))
        } else {
            lines.join(", ")
        };
        let _ = writeln!(
            out,
            "{INDENT}… and {more} more mutation{}{}",
            if more == 1 { "" } else { "s" },
            if shown.is_empty() {
                String::new()
            } else {
                format!(" (lines {shown})")
            }
        );
    }
    for line in mutation_reason(cx, meta, i, input) {
        let _ = writeln!(out, "{INDENT}{line}");
    }
    if verbose && input.kind == "tensor" {
        let flags = [
            ("is_leaf", input.is_leaf),
            ("requires_grad", input.requires_grad),
            ("mutates_data", input.mutates_data),
            ("mutates_metadata", input.mutates_metadata),
            ("mutates_storage_metadata", input.mutates_storage_metadata),
            (
                "mutations_hidden_from_autograd",
                input.mutations_hidden_from_autograd,
            ),
            (
                "mutations_under_no_grad_or_inference_mode",
                input.mutations_under_no_grad_or_inference_mode,
            ),
            (
                "mutation_inductor_storage_resize",
                input.mutation_inductor_storage_resize,
            ),
        ];
        let mut table = Table::new();
        for pair in flags.chunks(2) {
            let mut row = Vec::new();
            for (name, value) in pair {
                row.push(cell(format!("{name}={}", py_bool(*value))));
            }
            table.row(row);
        }
        table.row(vec![cell(format!(
            "mutation_type={}",
            input.mutation_type.name()
        ))]);
        table.render(cx, INDENT, out);
        if input.mutations_hidden_from_autograd
            && input.mutations.iter().all(|r| r.kind != EventKind::Data)
        {
            let _ = writeln!(out, "{INDENT}(mutations_hidden_from_autograd holds vacuously: no data mutation was counted)");
        }
    }
}

/// One mutation as a table row: kind, where, what, how.
fn mutation_row(
    cx: &Context,
    meta: &ViewAndMutationMeta,
    input: usize,
    r: &MutationRecord,
) -> Vec<(String, Style)> {
    let kind = match r.kind {
        EventKind::Data => "data",
        EventKind::Metadata => "metadata",
        EventKind::SetStorage => "storage",
    };
    let mut notes = Vec::new();
    if r.count > 1 {
        notes.push(format!("{} times", r.count));
    }
    if r.kind == EventKind::Data && r.inference_mode {
        notes.push("under inference_mode".to_string());
    } else if r.kind == EventKind::Data && r.no_grad {
        notes.push("under no_grad".to_string());
    }
    if let Some(through) = through_words(cx, meta, input, &r.through) {
        notes.push(through);
    }
    if r.kind == EventKind::SetStorage {
        if let Some(src) = source_words(cx, meta, &r.source) {
            notes.push(format!("now uses the storage of {src}"));
        }
    }
    vec![
        cell(kind),
        cell(cx.at(r.span)),
        cell(cx.code(r.span)),
        cell(notes.join(", ")),
    ]
}

/// "through view `v` = `w.view(4, 4)` (f.tp:4:9)" for a write that went
/// through aliases of the input (None when it was the input itself).
pub(crate) fn through_words(
    cx: &Context,
    meta: &ViewAndMutationMeta,
    input: usize,
    chain: &[AliasStep],
) -> Option<String> {
    let steps: Vec<&AliasStep> = match chain.first() {
        Some(root) if root.input == Some(input) => chain.iter().skip(1).collect(),
        _ => chain.iter().collect(),
    };
    if steps.is_empty() {
        return None;
    }
    let words: Vec<String> = steps
        .iter()
        .map(|s| cx.alias_step(s, &meta.inputs))
        .collect();
    Some(format!("through {}", words.join(" -> ")))
}

fn source_words(cx: &Context, meta: &ViewAndMutationMeta, chain: &[AliasStep]) -> Option<String> {
    let last = chain.last()?;
    Some(cx.alias_step(last, &meta.inputs))
}

/// Why the input got its `mutation_type` (AOT_RULES §2.3), and what the
/// compiled graph does about it. Empty for an input nothing happened to.
pub(crate) fn mutation_reason(
    cx: &Context,
    meta: &ViewAndMutationMeta,
    index: usize,
    input: &InputAliasInfo,
) -> Vec<String> {
    if input.kind != "tensor" {
        return Vec::new();
    }
    let name = &input.name;
    let data = input.mutates_data;
    let storage = input.mutates_storage_metadata;
    let resized = input.mutation_inductor_storage_resize;
    let meta_mut = input.mutates_metadata;
    let metadata_ops: Vec<&MutationRecord> = input
        .mutations
        .iter()
        .filter(|r| r.kind == EventKind::Metadata)
        .collect();
    match input.mutation_type {
        MutationType::NotMutated => {
            if !metadata_ops.is_empty() {
                vec![format!(
                    "its metadata changes cancel out: sizes, strides and offset end as they began, so PyTorch sees no metadata mutation"
                )]
            } else {
                Vec::new()
            }
        }
        MutationType::MutatedInGraph => {
            let what = if storage {
                "a set_"
            } else if resized {
                "a resize_storage_bytes_"
            } else {
                "a copy_"
            };
            let why = if !meta_mut && !input.requires_grad && data {
                format!("`{name}` does not require grad and its metadata is unchanged")
            } else if input.mutations_hidden_from_autograd {
                "no data mutation was counted for it (mutations_hidden_from_autograd holds vacuously)".to_string()
            } else if input.mutations_under_no_grad_or_inference_mode {
                "every data mutation of it ran under no_grad or inference_mode".to_string()
            } else {
                format!("`{name}` does not require grad and its metadata is unchanged")
            };
            vec![format!(
                "kept in the graph ({what} at its end) because {why}"
            )]
        }
        MutationType::MutatedOutGraph => {
            let mut lines = Vec::new();
            if !meta.keep_input_mutations {
                lines.push("out of the graph because keep_input_mutations is off".to_string());
            } else if !(data || storage || resized) {
                lines.push(
                    "out of the graph because only its metadata changed, and metadata mutations never stay in the graph"
                        .to_string(),
                );
            } else {
                let mut failed = Vec::new();
                if input.requires_grad {
                    let made = if input.requires_grad_at_entry {
                        String::new()
                    } else {
                        match input
                            .mutations
                            .iter()
                            .find(|r| r.kind == EventKind::Data && r.grad_tracked)
                        {
                            Some(r) => format!(
                                " (since {}, whose operand requires grad)",
                                cx.at_code(r.span)
                            ),
                            None => " (after the run)".to_string(),
                        }
                    };
                    failed.push(format!("`{name}` requires grad{made}"));
                }
                if meta_mut {
                    match metadata_ops.first() {
                        Some(r) => failed.push(format!(
                            "its metadata also changed ({})",
                            cx.at_code(r.span)
                        )),
                        None => failed.push("its metadata also changed".to_string()),
                    }
                }
                let tracked: Vec<&MutationRecord> = input
                    .mutations
                    .iter()
                    .filter(|r| r.kind == EventKind::Data && !r.no_grad)
                    .collect();
                let made_by = input
                    .mutations
                    .iter()
                    .find(|r| r.kind == EventKind::Data && r.grad_tracked)
                    .map(|r| r.span);
                let grad_on = match tracked.first() {
                    Some(r) if !input.requires_grad_at_entry && made_by == Some(r.span) => {
                        "that write did not run under no_grad".to_string()
                    }
                    Some(r) => format!("{} did not run under no_grad", cx.at_code(r.span)),
                    None => {
                        "not every data mutation ran under no_grad or inference_mode".to_string()
                    }
                };
                lines.push(format!(
                    "out of the graph because {}, and {grad_on}",
                    list(&failed)
                ));
            }
            let tangent = meta
                .traced_tangents
                .iter()
                .position(|t| t.for_ == TangentFor::Input(index));
            let mut consequence = if data {
                "the forward graph returns its new value and the runtime copies it back".to_string()
            } else {
                "the runtime replays it on the input with as_strided_".to_string()
            };
            if let Some(k) = tangent {
                let _ = write!(consequence, "; it gets tangent {k}");
            }
            lines.push(consequence);
            lines
        }
    }
}

// ------------------------------------------------------------------ outputs

fn output_row(
    cx: &Context,
    meta: &ViewAndMutationMeta,
    i: usize,
    o: &OutputAliasInfo,
) -> Vec<(String, Style)> {
    let base = base_words(meta, o).unwrap_or_default();
    let ty = match o.dtype {
        Some(d) if o.is_tensor => format!("{} {}", shape(&o.shape), d.name()),
        _ => "not a tensor".to_string(),
    };
    let grad = if o.requires_grad { "requires grad" } else { "" };
    let made = o
        .chain
        .last()
        .map(|s| cx.at_code(s.span))
        .unwrap_or_default();
    let style = match o.output_type {
        OutputType::NonAlias => Style::Plain,
        _ => Style::Cyan,
    };
    vec![
        cell(i.to_string()),
        styled(o.output_type.name(), style),
        cell(base),
        cell(ty),
        cell(grad),
        cell(made),
    ]
}

/// "base: input 0 `x`", "base: intermediate 0", "base: output 1".
pub(crate) fn base_words(meta: &ViewAndMutationMeta, o: &OutputAliasInfo) -> Option<String> {
    let b = o.base_idx?;
    Some(match o.output_type {
        OutputType::AliasOfInput
        | OutputType::IsInput
        | OutputType::NonAlias
        | OutputType::CustomFunctionView => match meta.inputs.get(b) {
            Some(input) => format!("base: input {b} `{}`", input.name),
            None => format!("base: input {b}"),
        },
        OutputType::AliasOfIntermediate | OutputType::AliasOfIntermediateSaveAsOutput => {
            format!("base: intermediate {b}")
        }
        OutputType::AliasOfIntermediateBaseIsUserOutput => format!("base: output {b}"),
        OutputType::UnsafeViewAlias => format!("base: {b}"),
    })
}

/// The made-of chain of an output, in words, from its root: "input `x` ->
/// `y` = `x.t()` (f.tp:6:9)". None for a tensor made fresh by one op.
pub(crate) fn chain_words(
    cx: &Context,
    meta: &ViewAndMutationMeta,
    chain: &[AliasStep],
) -> Option<String> {
    if chain.len() < 2 {
        return None;
    }
    let words: Vec<String> = chain
        .iter()
        .map(|s| cx.alias_step(s, &meta.inputs))
        .collect();
    Some(words.join(" -> "))
}

/// Why the output has its class (AOT_RULES §3.2) and what happens to it.
pub(crate) fn output_story(
    cx: &Context,
    meta: &ViewAndMutationMeta,
    i: usize,
    o: &OutputAliasInfo,
) -> Vec<String> {
    // The input an alias belongs to: its base_idx, or the root of its chain.
    let input_name = |b: Option<usize>| -> String {
        b.or_else(|| o.chain.first().and_then(|s| s.input))
            .and_then(|b| meta.inputs.get(b))
            .map_or_else(|| "an input".to_string(), |x| format!("input `{}`", x.name))
    };
    let root = || -> String {
        match o.chain.first() {
            Some(step) if o.chain.len() > 1 => cx.alias_step(step, &meta.inputs),
            _ => "an intermediate".to_string(),
        }
    };
    let tangent = meta
        .traced_tangents
        .iter()
        .position(|t| t.for_ == TangentFor::Output(i));
    let tangent_words = match tangent {
        Some(k) => format!("it gets tangent {k}"),
        None if o.requires_grad => "no tangent of its own".to_string(),
        None => "no tangent (it does not require grad)".to_string(),
    };
    let mut lines = Vec::new();
    let chain = chain_words(cx, meta, &o.chain);
    match o.reason {
        OutputReason::NotATensor => {}
        OutputReason::CustomFunctionView => lines.push(format!(
            "a view of {} made inside a custom autograd.Function: {tangent_words}",
            input_name(o.base_idx)
        )),
        OutputReason::MultiOutputViewsOnly { aliases } => lines.push(format!(
            "aliases {}, but all {aliases} output{} on its storage {} multi-output views (unbind/split/chunk), so PyTorch hides the aliasing: {tangent_words}",
            input_name(o.base_idx),
            if aliases == 1 { "" } else { "s" },
            if aliases == 1 { "is a" } else { "are" }
        )),
        OutputReason::InputItself => lines.push(format!(
            "{} itself, returned as is: the runtime returns the input, not a graph output",
            input_name(o.base_idx)
        )),
        OutputReason::ViewOfInput => lines.push(format!(
            "aliases {}: regenerated from it after the graph runs, with no tangent",
            input_name(o.base_idx)
        )),
        OutputReason::InputAfterSet => lines.push(format!(
            "{} itself, returned after `set_` gave it another storage",
            input_name(o.base_idx)
        )),
        OutputReason::LoneViewOfIntermediate { aliases, multi } => {
            let alone = if aliases <= 1 {
                ", and the only output aliasing it".to_string()
            } else {
                format!(
                    "; {aliases} outputs alias it, but {multi} of them {} multi-output views (unbind/split/chunk), which do not count",
                    if multi == 1 { "is one of the" } else { "are" }
                )
            };
            lines.push(format!(
                "a view of {}{alone}: returned as a plain tensor (_unsafe_view); {tangent_words}",
                root()
            ))
        }
        OutputReason::ViewOfOutput => lines.push(format!(
            "a view of {}, which is itself output {}: regenerated from that output",
            root(),
            o.base_idx.map_or("?".to_string(), |b| b.to_string())
        )),
        OutputReason::SharedBase => lines.push(format!(
            "a view of {}, whose base is already intermediate base {}: regenerated from it",
            root(),
            o.base_idx.map_or("?".to_string(), |b| b.to_string())
        )),
        OutputReason::NewBase => lines.push(format!(
            "a view of {}, which another output also aliases: its base becomes intermediate base {} (an extra forward output) and it is regenerated from it",
            root(),
            o.base_idx.map_or("?".to_string(), |b| b.to_string())
        )),
        OutputReason::DetachedTwin => lines.push(format!(
            "does not require grad, but output {} has the same storage and metadata and does (the `(out, out.detach())` case): regenerated from it",
            o.base_idx.map_or("?".to_string(), |b| b.to_string())
        )),
        OutputReason::ViewWithoutGrad | OutputReason::Fresh if o.chain.first().is_some_and(|s| s.input.is_some()) && o.chain.len() > 1 => {
            lines.push(format!(
                "a view of {} taken after `set_` moved it to another storage, which PyTorch does not attribute to an input: a new tensor; {tangent_words}",
                root()
            ))
        }
        OutputReason::ViewWithoutGrad => lines.push(format!(
            "a view of {}, but {} not require grad, so it counts as a new tensor: {tangent_words}",
            root(),
            if o.requires_grad { "its base does" } else { "it does" }
        )),
        OutputReason::Fresh => lines.push(format!("a new tensor: {tangent_words}")),
    }
    if let Some(chain) = chain {
        if !matches!(
            o.reason,
            OutputReason::InputItself | OutputReason::InputAfterSet
        ) {
            lines.push(format!("made as: {chain}"));
        }
    }
    if !o.dynamic_dims.is_empty() {
        let dims: Vec<String> = o.dynamic_dims.iter().map(|d| d.to_string()).collect();
        lines.push(format!("dynamic dims: {}", dims.join(", ")));
    }
    lines
}

fn tangent_purpose(meta: &ViewAndMutationMeta, for_: TangentFor) -> String {
    match for_ {
        TangentFor::Input(i) => match meta.inputs.get(i) {
            Some(input) => format!(
                "for the new value of mutated input `{}` (MUTATED_OUT_GRAPH, requires grad)",
                input.name
            ),
            None => format!("for mutated input {i}"),
        },
        TangentFor::Output(i) => match meta.outputs.get(i).map(|o| o.output_type) {
            Some(t) => format!("for output {i} ({}, requires grad)", t.name()),
            None => format!("for output {i}"),
        },
        TangentFor::IntermediateBase(k) => format!("for intermediate base {k}"),
    }
}

// ------------------------------------------------------------------ the rest

fn assumption_lines(cx: &Context, f: &FunctionResult, out: &mut String) {
    let mut seen: Vec<&str> = Vec::new();
    for (span, text) in &f.assumptions {
        if seen.contains(&text.as_str()) {
            continue;
        }
        seen.push(text);
        let _ = writeln!(out, "  assumes {text} ({})", cx.at(*span));
    }
}

fn eager_lines(cx: &Context, f: &FunctionResult, indent: &str, out: &mut String) {
    match (&f.eager.forward_error, &f.eager.backward_error) {
        (None, None) => {
            let _ = writeln!(out, "{indent}eager: no error predicted");
        }
        (forward, backward) => {
            if let Some(d) = forward {
                let _ = writeln!(
                    out,
                    "{indent}eager forward raises {}",
                    cx.diagnostic_line(d)
                );
            }
            if let Some(d) = backward {
                let _ = writeln!(
                    out,
                    "{indent}eager backward raises {}",
                    cx.diagnostic_line(d)
                );
            }
        }
    }
}

/// The fields `ViewAndMutationMeta.__post_init__` derives (AOT_RULES §4).
fn derived_lines(meta: &ViewAndMutationMeta, out: &mut String) {
    let indices = |pred: &dyn Fn(&InputAliasInfo) -> bool| -> String {
        let v: Vec<String> = meta
            .inputs
            .iter()
            .enumerate()
            .filter(|(_, i)| pred(i))
            .map(|(k, _)| k.to_string())
            .collect();
        format!("[{}]", v.join(", "))
    };
    let out_graph = meta
        .inputs
        .iter()
        .filter(|i| i.mutation_type == MutationType::MutatedOutGraph)
        .count();
    let count = |pred: &dyn Fn(OutputType) -> bool| {
        meta.outputs.iter().filter(|o| pred(o.output_type)).count()
    };
    let _ = writeln!(
        out,
        "  derived: is_train={} keep_input_mutations={} mutated_inp_runtime_indices={} mutated_graph_handled_indices={}",
        py_bool(meta.is_train),
        py_bool(meta.keep_input_mutations),
        indices(&|i| i.mutation_type == MutationType::MutatedOutGraph),
        indices(&|i| i.mutation_type == MutationType::MutatedInGraph)
    );
    let _ = writeln!(
        out,
        "           num_outputs_aliased_to_inputs={} num_outputs_aliased_to_intermediates={} num_unsafe_view_outputs={} num_forward_returns={}",
        count(&|t| matches!(t, OutputType::AliasOfInput | OutputType::IsInput)),
        count(&|t| matches!(
            t,
            OutputType::AliasOfIntermediate | OutputType::AliasOfIntermediateSaveAsOutput | OutputType::AliasOfIntermediateBaseIsUserOutput
        )),
        count(&|t| t == OutputType::UnsafeViewAlias),
        out_graph + meta.outputs.len() + meta.num_intermediate_bases
    );
}
