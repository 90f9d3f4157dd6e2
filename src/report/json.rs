//! The canonical JSON of OUTPUT.md (serde_json). Keys and values follow
//! PyTorch's names; extra keys (`because`, `diagnostics`, spans) explain the
//! answer and are ignored by consumers that do not know them.

use crate::analysis::meta::{AliasStep, EventKind, MutationRecord, ViewAndMutationMeta};
use crate::analysis::FunctionResult;
use crate::report::{text, Diagnostic};
use crate::sym::SymInt;
use crate::{Outcome, SourceFile};
use serde_json::{json, Map, Value};

fn size(v: &SymInt) -> Value {
    match v.as_int() {
        Some(i) => json!(i),
        None => json!(v.to_string()),
    }
}

fn location(file: &SourceFile, span: crate::Span) -> Value {
    let (line, col) = file.line_col(span.start);
    json!({"line": line, "column": col})
}

pub fn diagnostic(file: &SourceFile, d: &Diagnostic) -> Value {
    let mut o = json!({
        "code": d.json_code(),
        "message": d.message,
        "severity": d.severity.as_str(),
        "tpi_code": d.code,
        "at": location(file, d.primary.span),
    });
    if let Some(h) = &d.help {
        o["help"] = json!(h);
    }
    o
}

fn error_object(file: &SourceFile, d: &Option<Diagnostic>) -> Value {
    match d {
        None => Value::Null,
        Some(d) => {
            let mut o = json!({"code": d.json_code(), "message": d.message});
            o["at"] = location(file, d.primary.span);
            o
        }
    }
}

/// One alias of a chain: the op that made it and where (`input` for an
/// input's own wrapper, with its index).
fn step(file: &SourceFile, s: &AliasStep) -> Value {
    let (line, column) = file.line_col(s.span.start);
    let mut o = json!({"op": s.op, "line": line, "column": column});
    if let Some(i) = s.input {
        o["input"] = json!(i);
    }
    o
}

/// One mutation of an input: its kind, op, where, whether under no_grad,
/// and the aliases it went through (root first).
fn mutation(file: &SourceFile, r: &MutationRecord) -> Value {
    let (line, column) = file.line_col(r.span.start);
    let kind = match r.kind {
        EventKind::Data => "data",
        EventKind::Metadata => "metadata",
        EventKind::SetStorage => "storage",
    };
    let mut o = json!({"kind": kind, "op": r.op, "line": line, "column": column, "under_no_grad": r.no_grad, "under_inference_mode": r.inference_mode});
    if r.through.len() > 1 {
        o["through"] = json!(r.through.iter().map(|s| step(file, s)).collect::<Vec<_>>());
    }
    if r.count > 1 {
        o["count"] = json!(r.count);
    }
    if !r.source.is_empty() {
        o["source"] = json!(r.source.iter().map(|s| step(file, s)).collect::<Vec<_>>());
    }
    o
}

fn meta_fields(file: &SourceFile, meta: &ViewAndMutationMeta, out: &mut Map<String, Value>) {
    let cx = text::Context::new(file, None, false);
    out.insert("is_train".into(), json!(meta.is_train));
    out.insert(
        "is_train_because".into(),
        json!(text::mode_reason(&cx, meta).1),
    );
    out.insert(
        "keep_input_mutations".into(),
        json!(meta.keep_input_mutations),
    );
    let inputs: Vec<Value> = meta
        .inputs
        .iter()
        .enumerate()
        .map(|(index, i)| {
            let mut o = json!({
                "name": i.name,
                "kind": i.kind,
                "is_leaf": i.is_leaf,
                "requires_grad": i.requires_grad,
                "mutates_data": i.mutates_data,
                "mutates_metadata": i.mutates_metadata,
                "mutates_storage_metadata": i.mutates_storage_metadata,
                "mutations_hidden_from_autograd": i.mutations_hidden_from_autograd,
                "mutations_under_no_grad_or_inference_mode": i.mutations_under_no_grad_or_inference_mode,
                "mutation_inductor_storage_resize": i.mutation_inductor_storage_resize,
                "mutation_type": i.mutation_type.name(),
            });
            if !i.mutated_at.is_empty() || !i.mutations.is_empty() {
                o["because"] = json!(i.mutations.iter().map(|r| mutation(file, r)).collect::<Vec<_>>());
            }
            if i.mutations_omitted > 0 {
                o["because_omitted"] = json!(i.mutations_omitted);
            }
            let why = text::mutation_reason(&cx, meta, index, i);
            if !why.is_empty() {
                o["explanation"] = json!(why.join("; "));
            }
            o
        })
        .collect();
    out.insert("inputs".into(), json!(inputs));
    let outputs: Vec<Value> = meta
        .outputs
        .iter()
        .enumerate()
        .map(|(index, o)| {
            let mut v = json!({
                "output_type": o.output_type.name(),
                "base_idx": o.base_idx,
                "requires_grad": o.requires_grad,
                "dynamic_dims": o.dynamic_dims,
            });
            if let Some((span, op)) = o.origin {
                v["because"] = json!([{"op": op, "line": file.line_col(span.start).0, "column": file.line_col(span.start).1}]);
            }
            if o.chain.len() > 1 {
                v["chain"] = json!(o.chain.iter().map(|s| step(file, s)).collect::<Vec<_>>());
            }
            v["explanation"] = json!(text::output_story(&cx, meta, index, o).join("; "));
            v
        })
        .collect();
    out.insert("outputs".into(), json!(outputs));
    out.insert(
        "num_intermediate_bases".into(),
        json!(meta.num_intermediate_bases),
    );
    let tangents: Vec<Value> = meta
        .traced_tangents
        .iter()
        .map(|t| {
            json!({
                "shape": t.shape.iter().map(size).collect::<Vec<_>>(),
                "stride": t.stride.iter().map(size).collect::<Vec<_>>(),
                "dtype": t.dtype.name(),
                "source": t.source,
            })
        })
        .collect();
    out.insert("traced_tangents".into(), json!(tangents));
    out.insert(
        "grad_enabled_mutation".into(),
        json!(meta.grad_enabled_mutation),
    );
    out.insert("num_tokens".into(), json!(meta.num_tokens));
}

pub fn function(file: &SourceFile, f: &FunctionResult) -> Value {
    let mut out = Map::new();
    out.insert("name".into(), json!(f.name));
    match (&f.meta, f.error()) {
        (Some(meta), _) => meta_fields(file, meta, &mut out),
        (None, Some(e)) => {
            out.insert("error".into(), error_object(file, &Some(e.clone())));
        }
        (None, None) => {}
    }
    out.insert(
        "eager".into(),
        json!({
            "forward_error": error_object(file, &f.eager.forward_error),
            "backward_error": error_object(file, &f.eager.backward_error),
        }),
    );
    if !f.assumptions.is_empty() {
        out.insert(
            "assumptions".into(),
            json!(f.assumptions.iter().map(|(_, a)| a).collect::<Vec<_>>()),
        );
    }
    Value::Object(out)
}

/// The canonical document for one file.
pub fn file_document(file: &SourceFile, outcome: &Outcome) -> Value {
    let functions: Vec<Value> = outcome
        .functions
        .iter()
        .map(|f| function(file, f))
        .collect();
    let mut doc = json!({"file": file.name, "functions": functions});
    if !outcome.diagnostics.is_empty() {
        doc["diagnostics"] = json!(outcome
            .diagnostics
            .iter()
            .map(|d| diagnostic(file, d))
            .collect::<Vec<_>>());
    }
    doc
}
