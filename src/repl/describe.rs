//! What the REPL says about values and functions, in words: the one-line
//! description of a value (`Tensor[16] float32, strides [1], requires grad,
//! view of input x`), everything `:info` knows about one, and the compact
//! metadata report of `return` and `:check`, whose every place points at the
//! input (`<repl:N>`) that caused it.
//!
//! It reads the interpreter's machine after a run; it never changes what
//! the analysis decided, and it prints nothing.

use super::program::Program;
use crate::analysis::domain::{CreationMeta, TensorId};
use crate::analysis::interp::Env;
use crate::analysis::meta::{InputAliasInfo, MutationType, OutputType, Param, ViewAndMutationMeta};
use crate::analysis::state::Machine;
use crate::analysis::value::Value;
use crate::analysis::FunctionResult;
use crate::ops::shape::{self, show};
use crate::report::render;
use std::collections::{BTreeMap, HashMap};
use std::fmt::Write;

/// Names of the run, to say what aliases what.
pub struct Scope<'p> {
    pub program: &'p Program,
    /// Input names by input index.
    pub inputs: Vec<String>,
    /// The local names bound to each tensor, sorted.
    names_of: HashMap<TensorId, Vec<String>>,
}

impl<'p> Scope<'p> {
    pub fn new(program: &'p Program, params: &[Param], env: &Env) -> Scope<'p> {
        let inputs = params
            .iter()
            .map(|p| match p {
                Param::Tensor { name, .. } | Param::Value { name, .. } => name.clone(),
            })
            .collect();
        let mut names_of: HashMap<TensorId, Vec<String>> = HashMap::new();
        let sorted: BTreeMap<&String, &Value> = env.iter().collect();
        for (name, value) in sorted {
            if let Value::Tensor(id) = value {
                names_of.entry(*id).or_default().push(name.clone());
            }
        }
        Scope {
            program,
            inputs,
            names_of,
        }
    }

    fn input_name(&self, index: usize) -> &str {
        self.inputs.get(index).map_or("?", String::as_str)
    }

    /// How to call a tensor in a sentence: `input x`, `` `y` ``, or the op
    /// that made it.
    pub fn tensor_name(&self, m: &Machine, id: TensorId, except: Option<&str>) -> String {
        let Some(t) = m.tensors.get(id) else {
            return "a tensor".to_string();
        };
        if let Some(i) = t.input_index {
            return format!("input {}", self.input_name(i));
        }
        let named = self
            .names_of
            .get(&id)
            .into_iter()
            .flatten()
            .find(|n| Some(n.as_str()) != except && n.as_str() != "_");
        match named {
            Some(name) => format!("`{name}`"),
            None => format!(
                "an intermediate (`{}` at {})",
                t.origin_op,
                self.program.place(t.origin)
            ),
        }
    }

    /// What a tensor aliases, if anything (`view of input x (...)`).
    fn alias(&self, m: &Machine, id: TensorId, name: Option<&str>) -> Option<String> {
        let t = &m.tensors[id];
        if let Some(i) = t.input_index {
            let own = self.input_name(i);
            return (name != Some(own)).then(|| format!("is input {own}"));
        }
        if let Some(view) = &t.view {
            let mut text = format!(
                "view of {} (`{}` at {})",
                self.tensor_name(m, view.base, name),
                view.op,
                self.program.place(view.span)
            );
            if t.multi_output_view {
                text.push_str(", one of several views");
            }
            return Some(text);
        }
        if let Some(i) = m.storages.get(t.storage).and_then(|s| s.input) {
            return Some(format!("shares storage with input {}", self.input_name(i)));
        }
        let others: Vec<String> = self
            .names_of
            .iter()
            .filter(|(other, _)| {
                **other != id
                    && m.tensors
                        .get(**other)
                        .is_some_and(|o| o.storage == t.storage)
            })
            .flat_map(|(_, names)| names.iter())
            .filter(|n| Some(n.as_str()) != name && n.as_str() != "_")
            .map(|n| format!("`{n}`"))
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect();
        (!others.is_empty()).then(|| format!("shares storage with {}", others.join(", ")))
    }

    /// One line about a tensor.
    pub fn tensor(&self, m: &Machine, id: TensorId, name: Option<&str>) -> String {
        let Some(t) = m.tensors.get(id) else {
            return "a tensor".to_string();
        };
        let mut text = format!(
            "Tensor{} {}, strides {}",
            show(&t.sizes),
            t.dtype.name(),
            show(&t.strides)
        );
        if t.offset.as_int() != Some(0) {
            let _ = write!(text, ", offset {}", t.offset);
        }
        if m.requires_grad(id) {
            text.push_str(", requires grad");
        }
        if let Some(alias) = self.alias(m, id, name) {
            text.push_str(", ");
            text.push_str(&alias);
        }
        text
    }

    /// A value: one line, or a header and one indented line per item for a
    /// sequence that holds tensors.
    pub fn value(&self, m: &Machine, value: &Value, name: Option<&str>) -> String {
        match value {
            Value::Tensor(id) => self.tensor(m, *id, name),
            Value::Tuple(_) | Value::List(_) => {
                let items = value.sequence().unwrap_or_default();
                if !items.iter().any(|v| matches!(v, Value::Tensor(_))) {
                    return scalar(value);
                }
                let mut text = format!("{} of {}", value.type_name(), items.len());
                for (i, item) in items.iter().enumerate() {
                    let _ = write!(
                        text,
                        "\n  [{i}] {}",
                        self.value(m, item, None).replace('\n', "\n  ")
                    );
                }
                text
            }
            other => scalar(other),
        }
    }

    /// Everything the domain knows about a tensor (`:info`).
    pub fn tensor_info(&self, m: &mut Machine, id: TensorId, name: &str) -> String {
        let Some(t) = m.tensors.get(id).cloned() else {
            return format!("{name}: a tensor tpi lost track of\n");
        };
        let mut rows: Vec<(&str, String)> = Vec::new();
        let role = match t.input_index {
            Some(i) if self.input_name(i) == name => format!("input {i}"),
            Some(i) => format!("bound to input {}", self.input_name(i)),
            None => "a local".to_string(),
        };
        rows.push(("sizes", show(&t.sizes)));
        rows.push(("strides", show(&t.strides)));
        rows.push(("storage offset", t.offset.to_string()));
        rows.push(("dtype", format!("torch.{}", t.dtype.name())));
        if let Ok(numel) = m.numel(id) {
            rows.push(("numel", numel.to_string()));
        }
        let contiguous = shape::is_contiguous(&t.sizes, &t.strides, &mut m.sizes);
        rows.push(("contiguous", yes_no(contiguous).to_string()));
        if let Some(storage) = m.storages.get(t.storage) {
            let owner = match storage.input {
                Some(i) => format!("input {}'s storage", self.input_name(i)),
                None => format!(
                    "storage #{} (made by `{}` at {})",
                    t.storage,
                    t.origin_op,
                    self.program.place(t.origin)
                ),
            };
            let mut text = owner;
            if let Some(bytes) = &storage.nbytes {
                let _ = write!(text, ", {bytes} bytes");
            }
            match storage.mutations {
                0 => text.push_str(", never written"),
                n => {
                    let places: Vec<String> = storage
                        .mutated_at
                        .iter()
                        .map(|s| self.program.place(*s))
                        .collect();
                    let _ = write!(
                        text,
                        ", written {n} time{} ({})",
                        plural(n as usize),
                        places.join(", ")
                    );
                    if storage.mutations_no_grad > 0 {
                        let _ = write!(text, ", {} under no_grad", storage.mutations_no_grad);
                    }
                }
            }
            if storage.resized {
                text.push_str(", resized");
            }
            if let Some(at) = storage.frozen {
                let _ = write!(text, ", frozen by set_() at {}", self.program.place(at));
            }
            rows.push(("storage", text));
        }
        if let Some(view) = &t.view {
            let meta = match view.creation_meta {
                CreationMeta::Default => "default",
                CreationMeta::InCustomFunction => "made in a custom Function",
                CreationMeta::MultipleOutputs => "one of several outputs",
                CreationMeta::NoGradMode => "made under no_grad",
                CreationMeta::InferenceMode => "made under inference_mode",
            };
            rows.push((
                "base",
                format!(
                    "{} (a view by `{}` at {}; creation meta: {meta})",
                    self.tensor_name(m, view.base, Some(name)),
                    view.op,
                    self.program.place(view.span)
                ),
            ));
        } else if let Some(alias) = self.alias(m, id, Some(name)) {
            rows.push(("aliases", alias));
        }
        if let Some(version) = m.versions.get(t.version).copied() {
            let mut text = version.to_string();
            if let Some(Some(at)) = m.version_spans.get(t.version) {
                let _ = write!(text, " (last bumped at {})", self.program.place(*at));
            }
            rows.push(("version", text));
        }
        let requires_grad = m.requires_grad(id);
        let mut grad = yes_no(requires_grad).to_string();
        match m.grad_fn(id) {
            Ok(Some(node)) => {
                let node_name = m.nodes.get(node).map_or("?", |n| n.name.as_str());
                let _ = write!(grad, ", grad_fn {node_name}, not a leaf");
            }
            Ok(None) => grad.push_str(", a leaf"),
            Err(_) => {
                grad.push_str(", reading its grad_fn raises (its view was modified in place)")
            }
        }
        if t.requires_grad_flag {
            grad.push_str(", requires_grad set on the tensor itself");
        }
        rows.push(("requires grad", grad));
        let mut flags = Vec::new();
        if t.metadata_mutated {
            flags.push("metadata mutated in place");
        }
        if t.storage_changed {
            flags.push("storage swapped by set_()");
        }
        if t.multi_output_view {
            flags.push("multi-output view");
        }
        if t.is_inference {
            flags.push("inference tensor");
        }
        if !flags.is_empty() {
            rows.push(("flags", flags.join(", ")));
        }
        if t.input_index.is_none() {
            rows.push((
                "made by",
                format!("`{}` at {}", t.origin_op, self.program.place(t.origin)),
            ));
        }
        let mut text = format!("{name}: Tensor, {role}\n");
        let width = rows.iter().map(|(k, _)| k.len()).max().unwrap_or(0);
        for (key, value) in rows {
            let _ = writeln!(text, "  {key:width$}  {value}");
        }
        text
    }
}

fn yes_no(b: bool) -> &'static str {
    if b {
        "yes"
    } else {
        "no"
    }
}

fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

/// A non-tensor value as Python would print it.
pub fn scalar(value: &Value) -> String {
    match value {
        Value::None => "None".into(),
        Value::Bool(b) => if *b { "True" } else { "False" }.into(),
        Value::Int(i) => i.to_string(),
        Value::Float(f) => format!("{f:?}"),
        Value::Str(s) => format!("{:?}", s.as_ref()),
        Value::Ellipsis => "Ellipsis".into(),
        Value::Tensor(_) => "a tensor".into(),
        Value::Tuple(_) | Value::List(_) => {
            let items: Vec<String> = value
                .sequence()
                .unwrap_or_default()
                .iter()
                .map(scalar)
                .collect();
            match value {
                Value::Tuple(_) if items.len() == 1 => format!("({},)", items[0]),
                Value::Tuple(_) => format!("({})", items.join(", ")),
                _ => format!("[{}]", items.join(", ")),
            }
        }
        Value::Slice(a, b, c) => {
            let part = |v: &Option<crate::sym::SymInt>| {
                v.as_ref().map_or(String::new(), |v| v.to_string())
            };
            format!("slice({}, {}, {})", part(a), part(b), part(c))
        }
        Value::Dtype(d) => format!("torch.{}", d.name()),
        Value::MemoryFormat(f) => format!("torch.{}", f.name()),
        Value::Device(d) => format!("device({:?})", d.as_ref()),
        Value::Module(m) => format!("module {m}"),
        Value::Builtin(b) => format!("builtin {b}"),
        Value::Function(f) => format!("function {f}"),
        Value::Op { name, .. } => format!("op {name}"),
        Value::Method { name, .. } => format!("method {name}"),
        Value::Context(_) => "a context manager".into(),
        Value::TensorType => "torch.Tensor".into(),
    }
}

/// Why an input's mutation stays in the graph or not (PyTorch's
/// `_check_if_mutation_can_be_in_graph`, AOT_RULES §2).
pub fn mutation_reason(input: &InputAliasInfo, keep_input_mutations: bool) -> String {
    let name = &input.name;
    let writes = input.mutates_data
        || input.mutates_storage_metadata
        || input.mutation_inductor_storage_resize;
    match input.mutation_type {
        MutationType::NotMutated => "not mutated".to_string(),
        MutationType::MutatedInGraph => {
            let why = if !input.mutates_metadata && !input.requires_grad {
                format!("{name} does not require grad")
            } else if input.mutations_under_no_grad_or_inference_mode {
                "every data mutation is under no_grad".to_string()
            } else if input.mutations_hidden_from_autograd {
                "autograd does not see the mutation".to_string()
            } else {
                "keep_input_mutations".to_string()
            };
            format!("MUTATED_IN_GRAPH (kept in the graph: {why})")
        }
        MutationType::MutatedOutGraph => {
            let why = if !keep_input_mutations {
                "keep_input_mutations is off".to_string()
            } else if !writes {
                "a metadata-only mutation never stays in the graph".to_string()
            } else if input.mutates_metadata {
                format!(
                    "{name}'s metadata changed, and its data mutations are not all under no_grad"
                )
            } else if input.requires_grad {
                format!("{name} requires grad and autograd sees the mutation")
            } else {
                "the mutation cannot stay in the graph".to_string()
            };
            format!("MUTATED_OUT_GRAPH (applied after the graph: {why})")
        }
    }
}

/// What was mutated about an input, in words (`data`, `metadata`, …).
pub fn mutation_kinds(input: &InputAliasInfo) -> Vec<&'static str> {
    let mut kinds = Vec::new();
    if input.mutates_data {
        kinds.push("data");
    }
    if input.mutates_metadata {
        kinds.push("metadata");
    }
    if input.mutates_storage_metadata {
        kinds.push("storage (set_)");
    }
    if input.mutation_inductor_storage_resize {
        kinds.push("storage size");
    }
    kinds
}

/// The compact metadata report of one function (`return`, `:check`), with
/// its diagnostics rendered against the inputs they point into.
pub fn function_report(program: &Program, result: &FunctionResult, color: bool) -> String {
    let mut out = String::new();
    match &result.meta {
        Some(meta) => meta_report(program, &result.name, meta, &mut out),
        None => {
            let _ = writeln!(out, "{}: rejected by the analysis", result.name);
        }
    }
    let eager = &result.eager;
    let raises = |d: &crate::report::Diagnostic| {
        format!("raises {} at {}", d.code, program.place(d.primary.span))
    };
    let analysis_error = result.error();
    let same_as_analysis = |d: &crate::report::Diagnostic| {
        analysis_error.is_some_and(|e| e.code == d.code && e.primary.span == d.primary.span)
    };
    match (&eager.forward_error, &eager.backward_error) {
        (Some(forward), _) if same_as_analysis(forward) => {}
        (Some(forward), _) => {
            let _ = writeln!(out, "  eager: forward {}", raises(forward));
        }
        (None, Some(backward)) => {
            let _ = writeln!(out, "  eager: forward fine, backward {}", raises(backward));
        }
        (None, None) => {
            let _ = writeln!(out, "  eager: forward fine, backward fine");
        }
    }
    for (span, assumption) in &result.assumptions {
        let _ = writeln!(out, "  assumes {assumption} ({})", program.place(*span));
    }
    for diagnostic in &result.diagnostics {
        out.push_str(&render::render_located(
            diagnostic,
            &|span| program.locate(span),
            color,
        ));
    }
    out
}

fn meta_report(program: &Program, name: &str, meta: &ViewAndMutationMeta, out: &mut String) {
    let mode = if meta.is_train {
        "training graph (is_train)"
    } else {
        "inference graph"
    };
    let _ = writeln!(out, "{name}: {mode}");
    for (i, input) in meta.inputs.iter().enumerate() {
        let mut line = format!("  input {i} {}: ", input.name);
        if input.kind != "tensor" {
            let _ = write!(line, "{}", input.kind);
        } else if input.mutation_type == MutationType::NotMutated {
            line.push_str("not mutated");
        } else {
            let places: Vec<String> = input.mutated_at.iter().map(|s| program.place(*s)).collect();
            let _ = write!(line, "{} mutated", mutation_kinds(input).join(", "));
            if !places.is_empty() {
                let _ = write!(line, " at {}", places.join(", "));
            }
            let _ = write!(
                line,
                ": {}",
                mutation_reason(input, meta.keep_input_mutations)
            );
        }
        let _ = writeln!(out, "{line}");
    }
    if meta.outputs.is_empty() {
        let _ = writeln!(out, "  no outputs");
    }
    for (i, output) in meta.outputs.iter().enumerate() {
        let mut line = format!("  output {i}: {}", output.output_type.name());
        if let Some(base) = output.base_idx {
            let meaning = match output.output_type {
                OutputType::IsInput | OutputType::AliasOfInput | OutputType::NonAlias => {
                    format!(
                        "input {}",
                        meta.inputs.get(base).map_or("?", |i| i.name.as_str())
                    )
                }
                OutputType::AliasOfIntermediateBaseIsUserOutput => format!("output {base}"),
                _ => format!("intermediate base {base}"),
            };
            let _ = write!(line, " (base_idx {base}: {meaning})");
        }
        if !output.is_tensor {
            line.push_str(" (not a tensor)");
        } else {
            let _ = write!(line, ", Tensor[{}]", output.shape.join(", "));
            if output.requires_grad {
                line.push_str(", requires grad");
            }
            if !output.dynamic_dims.is_empty() {
                let dims: Vec<String> = output.dynamic_dims.iter().map(usize::to_string).collect();
                let _ = write!(line, ", dynamic dims {}", dims.join(", "));
            }
            if let Some((span, op)) = output.origin.as_ref().filter(|(_, op)| *op != "input") {
                let _ = write!(line, "; made by `{op}` at {}", program.place(*span));
            }
        }
        let _ = writeln!(out, "{line}");
    }
    if meta.num_intermediate_bases > 0 {
        let _ = writeln!(out, "  intermediate bases: {}", meta.num_intermediate_bases);
    }
    if !meta.traced_tangents.is_empty() {
        let tangents: Vec<String> = meta
            .traced_tangents
            .iter()
            .map(|t| {
                format!(
                    "Tensor{} strides {} {} ({})",
                    show(&t.shape),
                    show(&t.stride),
                    t.dtype.name(),
                    t.source
                )
            })
            .collect();
        let _ = writeln!(out, "  traced tangents: {}", tangents.join("; "));
    }
    if let Some(mode) = meta.grad_enabled_mutation {
        let _ = writeln!(
            out,
            "  grad_enabled_mutation: {} (grad mode is left {})",
            if mode { "True" } else { "False" },
            if mode { "on" } else { "off" }
        );
    }
    if meta.num_tokens > 0 {
        let _ = writeln!(out, "  effect tokens: {}", meta.num_tokens);
    }
}
