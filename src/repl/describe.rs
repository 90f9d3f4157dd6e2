//! What the REPL says about values and functions, in words: the one-line
//! description of a value (`Tensor[16] float32, strides [1], requires grad,
//! view of input x`), everything `:info` knows about one, and the metadata
//! report of `return` and `:check` (`tpi check`'s own, `report::text`),
//! whose every place points at the input (`<repl:N>`) that caused it.
//!
//! It reads the interpreter's machine after a run; it never changes what
//! the analysis decided, and it prints nothing.

use super::program::{Program, SESSION_DISPLAY_NAME, SESSION_FUNCTION};
use crate::analysis::domain::{CreationMeta, TensorId};
use crate::analysis::interp::Env;
use crate::analysis::meta::{InputAliasInfo, Param, ViewAndMutationMeta};
use crate::analysis::state::Machine;
use crate::analysis::value::Value;
use crate::analysis::FunctionResult;
use crate::ops::shape::{self, show};
use crate::report::{render, text};
use crate::syntax::ast::{Module, Name};
use crate::Outcome;
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
        let sorted: BTreeMap<&Name, &Value> = env.iter().collect();
        for (name, value) in sorted {
            if let Value::Tensor(id) = value {
                names_of.entry(*id).or_default().push(name.to_string());
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
        if let Some(i) = t.input() {
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
                "an intermediate made by `{}` at {}",
                t.origin_op,
                self.program.place(t.origin)
            ),
        }
    }

    /// What a tensor aliases, if anything (`view of input x (...)`).
    fn alias(&self, m: &Machine, id: TensorId, name: Option<&str>) -> Option<String> {
        let t = &m.tensors[id];
        if let Some(i) = t.input() {
            let own = self.input_name(i);
            return (name != Some(own)).then(|| format!("is input {own}"));
        }
        if let Some(view) = &t.view {
            let mut text = format!(
                "view of {} (`{}` at {})",
                self.tensor_name(m, view.base, name),
                t.origin_op,
                self.program.place(t.origin)
            );
            if t.multi_output_view {
                text.push_str(", one of several views");
            }
            return Some(text);
        }
        if let Some(i) = m.storages.get(t.storage).and_then(|s| s.input()) {
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
            show(t.sizes()),
            t.dtype.name(),
            show(t.strides())
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
        let role = match t.input() {
            Some(i) if self.input_name(i) == name => format!("input {i}"),
            Some(i) => format!("bound to input {}", self.input_name(i)),
            None => "a local".to_string(),
        };
        rows.push(("sizes", show(t.sizes())));
        rows.push(("strides", show(t.strides())));
        rows.push(("storage offset", t.offset.to_string()));
        rows.push(("dtype", format!("torch.{}", t.dtype.name())));
        if let Ok(numel) = m.numel(id) {
            rows.push(("numel", numel.to_string()));
        }
        let contiguous = shape::is_contiguous(t.sizes(), t.strides(), &mut m.sizes);
        rows.push(("contiguous", yes_no(contiguous).to_string()));
        if let Some(storage) = m.storages.get(t.storage) {
            let owner = match (storage.input(), &t.view) {
                (Some(i), _) => format!("input {}'s storage", self.input_name(i)),
                (None, Some(view)) => format!(
                    "storage #{} of {}",
                    t.storage,
                    self.tensor_name(m, view.base, Some(name))
                ),
                (None, None) => format!("storage #{}, its own", t.storage),
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
                    t.origin_op,
                    self.program.place(t.origin)
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
        if t.input().is_none() {
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
        Value::Slice(parts) => {
            let [a, b, c] = &**parts;
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
        Value::Method(method) => format!("method {}", method.name),
        Value::Context(_) => "a context manager".into(),
        Value::TensorType => "torch.Tensor".into(),
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

/// Why an input got its mutation type, in `tpi check`'s words, with the
/// places pointing into the inputs.
pub fn mutation_reason(
    program: &Program,
    module: &Module,
    meta: &ViewAndMutationMeta,
    index: usize,
    input: &InputAliasInfo,
) -> Vec<String> {
    let cx = text::Context::new(&program.file, Some(module), false);
    text::mutation_reason(&cx, meta, index, input)
        .iter()
        .map(|line| program.relocate(line))
        .collect()
}

/// The report of one function as `tpi check` gives it (`report::text`),
/// its places pointing into the inputs, followed by its diagnostics
/// rendered against the inputs they point into.
pub fn function_report(
    program: &Program,
    module: &Module,
    result: &FunctionResult,
    color: bool,
) -> String {
    let outcome = Outcome {
        module: Some(module.clone()),
        functions: vec![result.clone()],
        diagnostics: Vec::new(),
    };
    let report = text::file_report_styled(&program.file, &outcome, false, color);
    // The report of a file opens with a line about the file (the session's
    // program, which people do not see): keep the function's part.
    let report = match report.split_once("\n\n") {
        Some((_, function)) => function,
        None => report.as_str(),
    };
    // A place in the session's own header shows its text: under the name
    // people know.
    let mut out = program
        .relocate(report)
        .replace(SESSION_FUNCTION, SESSION_DISPLAY_NAME);
    for diagnostic in &result.diagnostics {
        out.push_str(&render::render_located(
            diagnostic,
            &|span| program.locate(span),
            color,
        ));
    }
    out
}
