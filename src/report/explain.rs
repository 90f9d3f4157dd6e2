//! `tpi explain FILE FUNCTION [INPUT|OUTPUT]`: the full reasoning behind one
//! answer, step by step, each step an ariadne report (`render.rs`) with a
//! label on every span of the chain that led to it.
//!
//! - an input (by name): how it enters, every write, metadata change and
//!   storage swap that counts for it (through which views), the
//!   `InputAliasInfo` flags they give, and PyTorch's `mutation_type` rule
//!   with the value of each of its conditions (AOT_RULES §2);
//! - an output (by index): the chain of views that made it, and the branch
//!   of PyTorch's output classification that fired (AOT_RULES §3.2);
//! - no target: the graph mode, training or inference, and why (§5.1).
//!
//! Like the rest of `report/`, it reads the `Outcome` and returns text; the
//! CLI prints it. Unknown names are errors with a "did you mean".

use crate::analysis::meta::{
    AliasStep, EventKind, InputAliasInfo, MutationRecord, MutationType, OutputAliasInfo,
    OutputReason, OutputType, TangentFor, ViewAndMutationMeta,
};
use crate::analysis::FunctionResult;
use crate::ops::did_you_mean;
use crate::report::render::{render, render_with_header};
use crate::report::text::{self, Context};
use crate::report::{Diagnostic, Label, Severity};
use crate::syntax::ast;
use crate::syntax::Span;
use crate::{Outcome, SourceFile};
use std::fmt::Write;

/// Mutations shown one step each; more are summed up in one step.
const MAX_MUTATION_STEPS: usize = 12;

/// What `tpi explain` produced: the text, and whether the function was
/// rejected (the CLI exits 1 then, as `check` does).
#[derive(Debug)]
pub struct Explanation {
    pub text: String,
    pub rejected: bool,
}

/// Explains `target` (an input name, an output index, or nothing for the
/// graph mode) of entry function `function`. `Err` says what was not found.
pub fn explain(
    file: &SourceFile,
    outcome: &Outcome,
    function: &str,
    target: Option<&str>,
    color: bool,
) -> Result<Explanation, String> {
    if let Some(d) = outcome.diagnostics.iter().find(|d| d.is_error()) {
        return Ok(Explanation {
            text: render(d, file, color),
            rejected: true,
        });
    }
    let Some(f) = outcome.functions.iter().find(|f| f.name == function) else {
        return Err(unknown_function(file, outcome, function));
    };
    let cx = Context::new(file, outcome.module.as_ref(), color);
    let Some(meta) = &f.meta else {
        let mut text = format!(
            "`{}` was rejected by the analysis, so PyTorch records no metadata for it:\n\n",
            f.name
        );
        if let Some(e) = f.error() {
            text.push_str(&render(e, file, color));
        }
        return Ok(Explanation {
            text,
            rejected: true,
        });
    };
    let steps = match target {
        None => mode_steps(&cx, f, meta),
        Some(t) => match t.parse::<usize>() {
            Ok(i) => match meta.outputs.get(i) {
                Some(o) => output_steps(&cx, f, meta, i, o),
                None => {
                    return Err(format!(
                        "`{}` has {} output{}{}",
                        f.name,
                        meta.outputs.len(),
                        if meta.outputs.len() == 1 { "" } else { "s" },
                        match meta.outputs.len() {
                            0 => String::new(),
                            1 => ": the only one is 0".to_string(),
                            n => format!(" (0 to {})", n - 1),
                        }
                    ))
                }
            },
            Err(_) => match meta.inputs.iter().position(|i| i.name == t) {
                Some(i) => input_steps(&cx, meta, i),
                None => return Err(unknown_input(f, meta, t)),
            },
        },
    };
    let subject = match target {
        None => "the graph mode".to_string(),
        Some(t) if t.parse::<usize>().is_ok() => format!("output {t}"),
        Some(t) => format!("input `{t}`"),
    };
    let mut text = format!("{} of `{}` in {}\n\n", subject, f.name, file.name);
    let count = steps.len();
    for (k, (diag, conclusion)) in steps.into_iter().enumerate() {
        let header = if conclusion {
            "so".to_string()
        } else {
            format!("step {}/{}", k + 1, count)
        };
        text.push_str(&render_with_header(&header, &diag, file, color));
    }
    Ok(Explanation {
        text,
        rejected: false,
    })
}

fn unknown_function(file: &SourceFile, outcome: &Outcome, name: &str) -> String {
    let entries: Vec<&str> = outcome.functions.iter().map(|f| f.name.as_str()).collect();
    let helper = outcome.module.as_ref().is_some_and(|m| {
        m.items
            .iter()
            .any(|item| matches!(item, ast::Item::Def(d) if d.name.name == name))
    });
    if helper {
        return format!(
            "`{name}` in {} is not an entry function: an entry has every parameter annotated with `Tensor(...)` or given a default",
            file.name
        );
    }
    let mut message = format!("{} has no entry function `{name}`", file.name);
    if let Some(best) = did_you_mean(name, entries.iter().copied()) {
        let _ = write!(message, "; did you mean `{best}`?");
    } else if !entries.is_empty() {
        let names: Vec<String> = entries.iter().map(|e| format!("`{e}`")).collect();
        let _ = write!(message, "; its entry functions are {}", text::list(&names));
    }
    message
}

fn unknown_input(f: &FunctionResult, meta: &ViewAndMutationMeta, name: &str) -> String {
    let mut message = format!("`{}` has no input `{name}`", f.name);
    if let Some(best) = did_you_mean(name, meta.inputs.iter().map(|i| i.name.as_str())) {
        let _ = write!(message, "; did you mean `{best}`?");
    } else {
        let names: Vec<String> = meta
            .inputs
            .iter()
            .map(|i| format!("`{}`", i.name))
            .collect();
        if !names.is_empty() {
            let _ = write!(message, "; its inputs are {}", text::list(&names));
        }
    }
    let outputs = meta.outputs.len();
    if outputs > 0 {
        let _ = write!(
            message,
            " (outputs are explained by index: 0 to {})",
            outputs - 1
        );
    }
    message
}

/// A step: a note-level diagnostic (primary span, secondary labels, notes).
/// `true` marks the conclusion.
type Step = (Diagnostic, bool);

fn step(message: impl Into<String>, span: Span, label: impl Into<String>) -> Diagnostic {
    let mut d = Diagnostic::error("explain", message, span).with_label(label);
    d.severity = Severity::Note;
    d
}

/// Adds a secondary label unless its span is already labelled.
fn label(mut d: Diagnostic, span: Span, text: impl Into<String>) -> Diagnostic {
    if span.is_empty() || d.primary.span == span || d.secondary.iter().any(|l| l.span == span) {
        return d;
    }
    d.secondary.push(Label {
        span,
        message: text.into(),
    });
    d
}

/// Labels the aliases of a chain, the last one too when `last` is set (an
/// output's last step is the output, which the caller labels).
fn label_chain(
    mut d: Diagnostic,
    cx: &Context,
    meta: &ViewAndMutationMeta,
    chain: &[AliasStep],
    last: bool,
) -> Diagnostic {
    let shown = if last {
        chain.len()
    } else {
        chain.len().saturating_sub(1)
    };
    for (k, s) in chain.iter().take(shown).enumerate() {
        let text = match s.input {
            Some(i) => format!(
                "input `{}`",
                meta.inputs.get(i).map_or("?", |x| x.name.as_str())
            ),
            None if k == 0 => match cx.binding(s.span) {
                Some(name) => format!("`{name}`: made by `{}`", s.op),
                None => format!("made by `{}`", s.op),
            },
            None => {
                let what = if s.op == "detach" {
                    "an alias"
                } else {
                    "a view"
                };
                match cx.binding(s.span) {
                    Some(name) => format!("`{name}`: {what} made by `{}`", s.op),
                    None => format!("{what} made by `{}`", s.op),
                }
            }
        };
        d = label(d, s.span, text);
    }
    d
}

fn article(word: &str) -> &'static str {
    if word.starts_with(['a', 'e', 'i', 'o', 'u']) {
        "an"
    } else {
        "a"
    }
}

fn py(b: bool) -> &'static str {
    if b {
        "True"
    } else {
        "False"
    }
}

// ------------------------------------------------------------------ inputs

fn input_steps(cx: &Context, meta: &ViewAndMutationMeta, index: usize) -> Vec<Step> {
    let input = &meta.inputs[index];
    let name = &input.name;
    let mut steps = Vec::new();
    if input.kind != "tensor" {
        steps.push((
            step(
                format!("`{name}` is {} {} argument, not a tensor", article(input.kind), input.kind),
                input.span,
                format!("input {index}: {} {}", article(input.kind), input.kind),
            )
            .with_note("PyTorch records no alias or mutation facts for a non-tensor input (mutations_hidden_from_autograd is False for it)"),
            true,
        ));
        return steps;
    }
    // 1. The input as it enters.
    let dtype = input.dtype.map_or("", |d| d.name());
    let grad = match (input.requires_grad_at_entry, input.is_leaf) {
        (true, true) => "a leaf that requires grad",
        (true, false) => "requires grad, not a leaf (the output of an autograd op)",
        (false, _) => "does not require grad",
    };
    steps.push((
        step(
            format!("`{name}` enters as input {index}: {} {dtype}, {grad}", text::shape(&input.shape)),
            input.span,
            format!("input {index}"),
        )
        .with_note("functionalization wraps it in a FunctionalTensor with a storage of its own, whose counters record every write"),
        false,
    ));
    // 2. Each mutation.
    let shown = input.mutations.len().min(MAX_MUTATION_STEPS);
    for r in &input.mutations[..shown] {
        steps.push((mutation_step(cx, meta, index, input, r), false));
    }
    if input.mutations.len() > shown {
        let rest = &input.mutations[shown..];
        let mut d = step(
            format!(
                "{} more mutation{} of `{name}`",
                rest.len(),
                if rest.len() == 1 { "" } else { "s" }
            ),
            rest[0].span,
            format!("`{}`", rest[0].op),
        );
        for r in &rest[1..] {
            d = label(d, r.span, format!("`{}`", r.op));
        }
        steps.push((d, false));
    }
    if input.mutations.is_empty() {
        steps.push((
            step(
                format!("nothing writes `{name}`, changes its metadata or swaps its storage"),
                input.span,
                "never mutated",
            ),
            false,
        ));
    }
    // 3. The flags.
    steps.push((flags_step(cx, input), false));
    // 4. The rule.
    steps.push((rule_step(cx, meta, index, input), true));
    steps
}

fn mutation_step(
    cx: &Context,
    meta: &ViewAndMutationMeta,
    index: usize,
    input: &InputAliasInfo,
    r: &MutationRecord,
) -> Diagnostic {
    let name = &input.name;
    let code = text::snippet(cx.file, r.span);
    let mut d = match r.kind {
        EventKind::Data => {
            let mode = if r.inference_mode {
                "under inference_mode"
            } else if r.no_grad {
                "with grad mode off (no_grad)"
            } else {
                "with grad mode on"
            };
            let counters = if r.no_grad {
                "mutation_counter and the no_grad counter of the storage go up"
            } else {
                "the storage's mutation_counter goes up, its no_grad counter does not"
            };
            let whose = match r.through.first() {
                Some(root) if root.input == Some(index) => format!("`{name}`'s storage"),
                Some(root) => match root.input.and_then(|i| meta.inputs.get(i)) {
                    Some(other) => format!("the storage of `{}`, which `{name}` uses since its `set_`", other.name),
                    None => format!("the storage `{name}` uses since its `set_`"),
                },
                None => format!("`{name}`'s storage"),
            };
            let times = if r.count > 1 { format!(" {} times", r.count) } else { String::new() };
            step(
                format!("`{code}` writes {whose}{times} {mode}"),
                r.span,
                format!("data mutation by `{}`: {counters}", r.op),
            )
        }
        EventKind::Metadata => step(
            format!("`{code}` changes the sizes, strides or offset of `{name}` in place"),
            r.span,
            format!("metadata mutation by `{}`: the wrapper's has_metadata_mutation flag is set", r.op),
        )
        .with_note("whether it counts is decided at the end, from the final metadata: changes that cancel out do not count"),
        EventKind::SetStorage => {
            let d = step(
                format!("`{code}` moves `{name}` onto another tensor's storage"),
                r.span,
                "`set_`: was_storage_changed is set, and the old storage is frozen",
            )
            .with_note(
                "from here on, writes of the new storage count for this input, writes of the old one are refused (frozen-storage)",
            );
            match r.source.last() {
                Some(s) => label(d, s.span, "whose storage it takes"),
                None => d,
            }
        }
    };
    // The aliases the write went through, down from the input.
    d = label_chain(d, cx, meta, &r.through, true);
    if let Some(root) = r.through.first() {
        if root.input == Some(index) && r.through.len() > 1 {
            d = label(d, input.span, format!("the storage of input `{name}`"));
            d = d.with_note("a write through any alias of a storage (a view, a detach(), an out=) counts for every tensor on that storage");
        }
    }
    d
}

fn flags_step(cx: &Context, input: &InputAliasInfo) -> Diagnostic {
    let name = &input.name;
    let data_writes: Vec<&MutationRecord> = input
        .mutations
        .iter()
        .filter(|r| r.kind == EventKind::Data)
        .collect();
    let grad_on: Vec<&MutationRecord> =
        data_writes.iter().copied().filter(|r| !r.no_grad).collect();
    let metadata_ops = input
        .mutations
        .iter()
        .filter(|r| r.kind == EventKind::Metadata)
        .count();
    let set = input
        .mutations
        .iter()
        .any(|r| r.kind == EventKind::SetStorage);
    let mut d = step(
        format!("so PyTorch's InputAliasInfo for `{name}` holds these flags"),
        input.span,
        format!("InputAliasInfo of `{name}`"),
    );
    let writes: usize = data_writes.iter().map(|r| r.count).sum();
    let data_why = if input.mutates_data {
        format!(
            "its storage was written {}{} time{}",
            if input.mutations_omitted > 0 {
                "more than "
            } else {
                ""
            },
            writes,
            if writes == 1 && input.mutations_omitted == 0 {
                ""
            } else {
                "s"
            }
        )
    } else if set && !data_writes.is_empty() {
        "set_() replaced the storage: the writes count as a storage mutation instead".to_string()
    } else {
        "no write of its storage".to_string()
    };
    d = d.with_note(format!(
        "mutates_data = {}: {data_why}",
        py(input.mutates_data)
    ));
    let meta_why = if input.mutates_storage_metadata {
        "set_() changed its storage".to_string()
    } else if input.mutates_metadata {
        "its final sizes, strides or offset differ from the original ones".to_string()
    } else if metadata_ops > 0 {
        "its metadata changes cancel out: the final sizes, strides and offset are the original ones"
            .to_string()
    } else {
        "no in-place view op on it".to_string()
    };
    d = d.with_note(format!(
        "mutates_metadata = {}: {meta_why}",
        py(input.mutates_metadata)
    ));
    d = d.with_note(format!(
        "mutates_storage_metadata = {}",
        py(input.mutates_storage_metadata)
    ));
    let rg_why = match (input.requires_grad_at_entry, input.requires_grad) {
        (true, true) => "it requires grad from the start".to_string(),
        (false, true) => match data_writes.iter().find(|r| r.grad_tracked) {
            Some(r) => format!(
                "read after the run: `{}` ({}) had an operand that requires grad",
                text::snippet(cx.file, r.span),
                cx.at(r.span)
            ),
            None => {
                "read after the run: it was made to require grad (requires_grad_())".to_string()
            }
        },
        (_, false) => "it does not require grad after the run".to_string(),
    };
    d = d.with_note(format!(
        "requires_grad = {}: {rg_why}",
        py(input.requires_grad)
    ));
    let hidden_why = if input.mutations_hidden_from_autograd {
        "vacuously: no data mutation was counted".to_string()
    } else {
        "its data mutations are seen by autograd (only opaque kernels like Triton hide them)"
            .to_string()
    };
    d = d.with_note(format!(
        "mutations_hidden_from_autograd = {}: {hidden_why}",
        py(input.mutations_hidden_from_autograd)
    ));
    let no_grad_why = if data_writes.is_empty() && !input.mutations_under_no_grad_or_inference_mode
    {
        "no data mutation".to_string()
    } else if input.mutations_under_no_grad_or_inference_mode {
        "every data mutation ran under no_grad or inference_mode".to_string()
    } else {
        format!(
            "{} of {} data mutations ran with grad mode on",
            grad_on.iter().map(|r| r.count).sum::<usize>(),
            writes
        )
    };
    d = d.with_note(format!(
        "mutations_under_no_grad_or_inference_mode = {}: {no_grad_why}",
        py(input.mutations_under_no_grad_or_inference_mode)
    ));
    d = d.with_note(format!(
        "mutation_inductor_storage_resize = {}",
        py(input.mutation_inductor_storage_resize)
    ));
    d = d.with_note(format!(
        "is_leaf = {}: read before the run",
        py(input.is_leaf)
    ));
    for r in grad_on.iter().take(3) {
        d = label(d, r.span, "a data mutation with grad mode on");
    }
    d
}

fn rule_step(
    cx: &Context,
    meta: &ViewAndMutationMeta,
    index: usize,
    input: &InputAliasInfo,
) -> Diagnostic {
    let name = &input.name;
    let data = input.mutates_data;
    let storage = input.mutates_storage_metadata;
    let resized = input.mutation_inductor_storage_resize;
    let metadata = input.mutates_metadata;
    let rg = input.requires_grad;
    let hidden = input.mutations_hidden_from_autograd;
    let no_grad = input.mutations_under_no_grad_or_inference_mode;
    let keep = meta.keep_input_mutations;
    let why = text::mutation_reason(cx, meta, index, input);
    let kind = input.mutation_type.name();
    let message = match why.first() {
        Some(first) => format!("mutation_type = {kind}: {first}"),
        None => format!("mutation_type = {kind}: nothing happened to `{name}`"),
    };
    // Point at the fact that decided it.
    let decisive = match input.mutation_type {
        MutationType::NotMutated => None,
        MutationType::MutatedInGraph => input.mutations.first(),
        MutationType::MutatedOutGraph => input
            .mutations
            .iter()
            .find(|r| r.kind == EventKind::Data && !r.no_grad)
            .or_else(|| {
                input
                    .mutations
                    .iter()
                    .find(|r| r.kind == EventKind::Metadata)
            })
            .or(input.mutations.first()),
    };
    let mut d = match decisive {
        Some(r) => step(message, r.span, format!("`{}` decides it", r.op)),
        None => step(message, input.span, kind),
    };
    d = label(d, input.span, format!("input `{name}`"));
    for line in why.iter().skip(1) {
        d = d.with_note(line.clone());
    }
    if input.mutation_type != MutationType::NotMutated {
        d = d.with_note(
            "PyTorch's rule (collect_metadata_analysis.py): in the graph iff keep_input_mutations and (data or storage_meta or resized) and ((not meta and not requires_grad) or hidden or no_grad_mut)",
        );
        d = d.with_note(format!(
            "here: keep_input_mutations={}, (data or storage_meta or resized)={}, (not meta and not requires_grad)={}, hidden={}, no_grad_mut={}",
            py(keep),
            py(data || storage || resized),
            py(!metadata && !rg),
            py(hidden),
            py(no_grad)
        ));
    } else {
        d = d.with_note("NOT_MUTATED: PyTorch's rule gives it when there is no data mutation, no metadata mutation and no storage resize");
    }
    if input.mutation_type == MutationType::MutatedOutGraph && keep {
        let help = if data && !no_grad && !metadata {
            format!(
                "to keep the write in the graph, run it under `torch.no_grad()` (if no gradient should flow through it), or write into a clone of `{name}`"
            )
        } else if metadata {
            format!("metadata mutations of inputs always leave the graph: use the out-of-place view (`{name} = {name}.t()`) instead")
        } else {
            format!("write into a clone of `{name}` to keep the graph free of input mutations")
        };
        d = d.with_help(help);
    }
    d
}

// ------------------------------------------------------------------ outputs

fn output_steps(
    cx: &Context,
    f: &FunctionResult,
    meta: &ViewAndMutationMeta,
    i: usize,
    o: &OutputAliasInfo,
) -> Vec<Step> {
    let mut steps = Vec::new();
    let Some(made) = o.chain.last() else {
        steps.push((
            step(
                format!("output {i} of `{}` is not a tensor", f.name),
                f.span,
                "returned here",
            ),
            true,
        ));
        return steps;
    };
    // 1. How it was made.
    let what = match made.input {
        Some(k) => format!(
            "output {i} is input `{}` itself",
            meta.inputs.get(k).map_or("?", |x| x.name.as_str())
        ),
        None => format!(
            "output {i} is made by `{}`",
            text::snippet(cx.file, made.span)
        ),
    };
    let mut d = step(
        format!(
            "{what}: {} {}",
            text::shape(&o.shape),
            o.dtype.map_or("", |d| d.name())
        ),
        made.span,
        format!(
            "output {i}{}",
            if o.requires_grad {
                ", requires grad"
            } else {
                ""
            }
        ),
    );
    d = label_chain(d, cx, meta, &o.chain, false);
    if let Some(chain) = text::chain_words(cx, meta, &o.chain) {
        d = d.with_note(format!("made as: {chain}"));
    }
    steps.push((d, false));
    // 2. The classification.
    let story = text::output_story(cx, meta, i, o);
    let base = text::base_words(meta, o)
        .map(|b| format!(" ({b})"))
        .unwrap_or_default();
    let mut d = step(
        format!("output_type = {}{base}", o.output_type.name()),
        made.span,
        story.first().cloned().unwrap_or_default(),
    );
    d = d.with_note(branch_note(o));
    // Related outputs and bases.
    match o.reason {
        OutputReason::ViewOfOutput | OutputReason::DetachedTwin => {
            if let Some(other) = o
                .base_idx
                .and_then(|b| meta.outputs.get(b))
                .and_then(|x| x.chain.last())
            {
                d = label(
                    d,
                    other.span,
                    format!("output {}", o.base_idx.unwrap_or_default()),
                );
            }
        }
        OutputReason::SharedBase | OutputReason::NewBase => {
            if let Some(base) = o.base_idx.and_then(|b| meta.intermediate_bases.get(b)) {
                if let Some(s) = base.chain.last() {
                    d = label(
                        d,
                        s.span,
                        format!("intermediate base {}", o.base_idx.unwrap_or_default()),
                    );
                }
                for &other in base.outputs.iter().filter(|&&k| k != i) {
                    if let Some(s) = meta.outputs.get(other).and_then(|x| x.chain.last()) {
                        d = label(
                            d,
                            s.span,
                            format!("output {other}, a view of the same base"),
                        );
                    }
                }
            }
        }
        OutputReason::ViewOfInput
        | OutputReason::InputItself
        | OutputReason::InputAfterSet
        | OutputReason::MultiOutputViewsOnly { .. } => {
            if let Some(input) = o.base_idx.and_then(|b| meta.inputs.get(b)) {
                d = label(d, input.span, format!("input `{}`", input.name));
            }
        }
        _ => {}
    }
    for line in story.iter().skip(1) {
        if !line.starts_with("made as:") {
            d = d.with_note(line.clone());
        }
    }
    let tangent = meta
        .traced_tangents
        .iter()
        .position(|t| t.for_ == TangentFor::Output(i));
    d = d.with_note(match tangent {
        Some(k) => format!(
            "traced tangents get one for every non_alias, unsafe_view_alias or custom_function_view output that requires grad: this is tangent {k}"
        ),
        None => "traced tangents only cover non_alias, unsafe_view_alias and custom_function_view outputs that require grad: none for this one".to_string(),
    });
    steps.push((d, true));
    steps
}

/// The branch of PyTorch's classification (AOT_RULES §3.2) that fired.
fn branch_note(o: &OutputAliasInfo) -> String {
    let rule = match o.reason {
        OutputReason::NotATensor => "not a Tensor -> non_alias",
        OutputReason::CustomFunctionView => "its storage is an input's and its grad_fn is a custom Function node -> custom_function_view",
        OutputReason::MultiOutputViewsOnly { .. } => {
            "its storage is an input's, it has a grad_fn, and every output on that storage is a multi-output view (alias_count - multi_view_count == 0) -> non_alias, base_idx kept"
        }
        OutputReason::InputItself => "its storage is an input's, and it is the input object itself (id(o) in inp_ids) -> is_input",
        OutputReason::ViewOfInput => "its storage is an input's, and it is not the input object -> alias_of_input",
        OutputReason::InputAfterSet => "it is an input object whose storage set_() changed -> is_input",
        OutputReason::LoneViewOfIntermediate { .. } => {
            "o._base is not None, o and o._base require grad, and at most one output (besides multi-output views) is on that storage -> unsafe_view_alias"
        }
        OutputReason::ViewOfOutput => "a differentiable view of an intermediate whose ._base is itself an output -> alias_of_intermediate_base_is_user_output",
        OutputReason::SharedBase => "a differentiable view of an intermediate whose ._base is already an intermediate base -> alias_of_intermediate",
        OutputReason::NewBase => "a differentiable view of an intermediate whose ._base is new -> alias_of_intermediate_save_as_output",
        OutputReason::DetachedTwin => {
            "several outputs on one storage, o does not require grad, and another with identical metadata does -> alias_of_intermediate_base_is_user_output"
        }
        OutputReason::ViewWithoutGrad => "a view of an intermediate, but o or its ._base does not require grad -> non_alias",
        OutputReason::Fresh => "no input owns its storage and it is no differentiable view -> non_alias",
    };
    format!("PyTorch's rule (collect_metadata_analysis.py): {rule}")
}

// ------------------------------------------------------------------ graph mode

fn mode_steps(cx: &Context, f: &FunctionResult, meta: &ViewAndMutationMeta) -> Vec<Step> {
    let mut steps = Vec::new();
    let grad_inputs: Vec<(usize, &InputAliasInfo)> = meta
        .inputs
        .iter()
        .enumerate()
        .filter(|(_, i)| i.requires_grad_at_entry)
        .collect();
    // 1. needs_autograd.
    match grad_inputs.first() {
        None => {
            let d = step(
                format!(
                    "no input of `{}` requires grad: needs_autograd = False",
                    f.name
                ),
                f.span,
                "no input requires grad",
            )
            .with_note(
                "aot_autograd asks for a training graph only when some tensor input requires grad",
            );
            steps.push((d, false));
        }
        Some((_, first)) => {
            let mut d = step(
                "some input requires grad: needs_autograd = True",
                first.span,
                "requires grad",
            );
            for (_, other) in grad_inputs.iter().skip(1) {
                d = label(d, other.span, "requires grad");
            }
            steps.push((d, false));
        }
    }
    let (mode, why) = text::mode_reason(cx, meta);
    if meta.needs_autograd {
        // 2. The downgrade test.
        let mut spans: Vec<(Span, String)> = Vec::new();
        for (i, o) in meta.outputs.iter().enumerate() {
            if !o.requires_grad {
                continue;
            }
            let Some(made) = o.chain.last() else { continue };
            let alias_of_grad_input = matches!(
                o.output_type,
                OutputType::AliasOfInput | OutputType::IsInput
            ) && o
                .base_idx
                .and_then(|b| meta.inputs.get(b))
                .is_some_and(|x| x.requires_grad);
            spans.push((
                made.span,
                if alias_of_grad_input {
                    format!("output {i} requires grad, but aliases an input that does: it does not count")
                } else {
                    format!("output {i} requires grad")
                },
            ));
        }
        for input in &meta.inputs {
            if input.requires_grad
                && input.mutates_data
                && !input.mutations_under_no_grad_or_inference_mode
                && !input.mutations_hidden_from_autograd
            {
                if let Some(r) = input
                    .mutations
                    .iter()
                    .find(|r| r.kind == EventKind::Data && !r.no_grad)
                {
                    spans.push((
                        r.span,
                        format!(
                            "writes `{}`, which requires grad, with grad mode on",
                            input.name
                        ),
                    ));
                }
            }
        }
        let message = if meta.is_train {
            let (outputs, mutations) = text::train_reasons(cx, meta);
            let mut reasons = Vec::new();
            match outputs.as_slice() {
                [] => {}
                [one] => reasons.push(format!("output {one} requires grad")),
                many => reasons.push(format!("outputs {} require grad", text::list(many))),
            }
            if !mutations.is_empty() {
                reasons
                    .push("an input that requires grad is written with grad mode on".to_string());
            }
            format!("output_and_mutation_safe = False: {}", reasons.join("; "))
        } else {
            "output_and_mutation_safe = True: no output requires grad (aliases of grad inputs aside) and no grad input is written with grad tracking".to_string()
        };
        let mut d = match spans.first() {
            Some((span, text)) => step(message, *span, text.clone()),
            None => step(message, f.span, "nothing here needs a gradient"),
        };
        for (span, text) in spans.iter().skip(1) {
            d = label(d, *span, text.clone());
        }
        d = d.with_note(
            "aot_autograd (create_aot_state) downgrades to an inference graph when no output requires grad, except outputs of type alias_of_input/is_input whose base requires grad, and no input that requires grad has a data mutation that is neither under no_grad nor hidden from autograd",
        );
        steps.push((d, false));
    }
    let d = step(format!("{mode}: {why}"), f.span, mode.clone())
        .with_note(format!("is_train = {}", py(meta.is_train)));
    steps.push((d, true));
    steps
}
