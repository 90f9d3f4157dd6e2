//! ViewAndMutationMeta: what `run_functionalized_fw_and_collect_metadata`
//! computes, read off the interpreter's final state with PyTorch's rules and
//! names (AOT_RULES.md §2–§5), plus aot_autograd's `is_train` downgrade.

use super::domain::*;
use super::state::Machine;
use crate::ops::shape::{self, OpError};
use crate::sym::{Dims, SymInt};
use crate::syntax::Span;
use std::collections::HashMap;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MutationType {
    NotMutated,
    MutatedInGraph,
    MutatedOutGraph,
}

impl MutationType {
    pub fn name(self) -> &'static str {
        match self {
            MutationType::NotMutated => "NOT_MUTATED",
            MutationType::MutatedInGraph => "MUTATED_IN_GRAPH",
            MutationType::MutatedOutGraph => "MUTATED_OUT_GRAPH",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OutputType {
    NonAlias,
    IsInput,
    AliasOfInput,
    AliasOfIntermediate,
    AliasOfIntermediateSaveAsOutput,
    AliasOfIntermediateBaseIsUserOutput,
    UnsafeViewAlias,
    CustomFunctionView,
}

impl OutputType {
    pub fn name(self) -> &'static str {
        match self {
            OutputType::NonAlias => "non_alias",
            OutputType::IsInput => "is_input",
            OutputType::AliasOfInput => "alias_of_input",
            OutputType::AliasOfIntermediate => "alias_of_intermediate",
            OutputType::AliasOfIntermediateSaveAsOutput => "alias_of_intermediate_save_as_output",
            OutputType::AliasOfIntermediateBaseIsUserOutput => {
                "alias_of_intermediate_base_is_user_output"
            }
            OutputType::UnsafeViewAlias => "unsafe_view_alias",
            OutputType::CustomFunctionView => "custom_function_view",
        }
    }
}

/// `InputAliasInfo`, with the spans that explain it.
#[derive(Clone, Debug)]
pub struct InputAliasInfo {
    pub name: String,
    /// `tensor`, `int`, `float` or `bool`.
    pub kind: &'static str,
    pub is_leaf: bool,
    pub requires_grad: bool,
    pub mutates_data: bool,
    pub mutates_metadata: bool,
    pub mutates_storage_metadata: bool,
    pub mutations_hidden_from_autograd: bool,
    pub mutations_under_no_grad_or_inference_mode: bool,
    pub mutation_inductor_storage_resize: bool,
    pub mutation_type: MutationType,
    /// Where the storage of this input was written.
    pub mutated_at: Vec<Span>,
    pub span: Span,
    /// `requires_grad` when the run starts (`needs_autograd` reads this one;
    /// `requires_grad` above is read after the run).
    pub requires_grad_at_entry: bool,
    /// Sizes, strides and dtype when the run starts (tensors only).
    pub shape: Vec<String>,
    pub stride: Vec<String>,
    pub dtype: Option<DType>,
    /// Every write, metadata change and storage swap that counts for this
    /// input, in program order, with the aliases it went through (the first
    /// ones when there are very many: see `mutations_omitted`).
    pub mutations: Vec<MutationRecord>,
    /// How many more mutations counted for it than `mutations` lists
    /// (beyond its first `MAX_RECORDS` distinct ones).
    pub mutations_omitted: usize,
}

/// One alias in a chain of views: the tensor made by `op` at `span` (`input`
/// when it is the wrapper of that input).
#[derive(Clone, Debug, PartialEq)]
pub struct AliasStep {
    pub span: Span,
    pub op: &'static str,
    pub input: Option<usize>,
}

/// One mutation that counts for an input (provenance for the report).
#[derive(Clone, Debug)]
pub struct MutationRecord {
    pub kind: EventKind,
    /// The in-place op (`mul_`, `t_`, `set_`, …).
    pub op: String,
    pub span: Span,
    /// Grad mode was off or inference mode on (functionalization's
    /// `mutation_counter_during_no_grad_or_inference_mode`).
    pub no_grad: bool,
    /// Inference mode was on (then `no_grad` is set too).
    pub inference_mode: bool,
    /// autograd recorded the op (grad mode on and some operand requires grad).
    pub grad_tracked: bool,
    /// The tensor written and the views it came from, root first; the last
    /// step is the tensor the op was called on.
    pub through: Vec<AliasStep>,
    /// For `set_`: the tensor whose storage was taken, root first.
    pub source: Vec<AliasStep>,
    /// How many times in a row this same mutation happened (a loop).
    pub count: usize,
}

/// Why an output got its `output_type` (which branch of PyTorch's
/// classification, AOT_RULES §3.2, fired).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OutputReason {
    /// Not a tensor: `non_alias`.
    NotATensor,
    /// A view of an input made by a custom autograd.Function.
    CustomFunctionView,
    /// Every output aliasing this input storage is a multi-output view
    /// (unbind/split/chunk): PyTorch hides the aliasing (`non_alias`).
    MultiOutputViewsOnly { aliases: usize },
    /// The input object itself is returned.
    InputItself,
    /// A view (or detach) of an input's storage.
    ViewOfInput,
    /// The input object is returned after `set_()` swapped its storage.
    InputAfterSet,
    /// A differentiable view of an intermediate, the only alias of its
    /// storage among the outputs (not counting multi-output views).
    LoneViewOfIntermediate { aliases: usize, multi: usize },
    /// A differentiable view of an intermediate that is itself an output.
    ViewOfOutput,
    /// A differentiable view of an intermediate whose base is already an
    /// intermediate base.
    SharedBase,
    /// A differentiable view of an intermediate: its base becomes a new
    /// intermediate base.
    NewBase,
    /// Does not require grad, and another output with the same storage and
    /// metadata does (`(out, out.detach())`, pytorch#100348).
    DetachedTwin,
    /// A view of an intermediate, but it or its base does not require grad.
    ViewWithoutGrad,
    /// A tensor with storage of its own (or one no input owns).
    Fresh,
}

/// An intermediate base: the `._base` appended to the forward outputs.
#[derive(Clone, Debug)]
pub struct IntermediateBase {
    /// How the base was made, root first (its last step is the base).
    pub chain: Vec<AliasStep>,
    pub shape: Vec<String>,
    /// The outputs that are views of it.
    pub outputs: Vec<usize>,
}

/// What a traced tangent is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TangentFor {
    Input(usize),
    Output(usize),
    IntermediateBase(usize),
}

/// `OutputAliasInfo`.
#[derive(Clone, Debug)]
pub struct OutputAliasInfo {
    pub output_type: OutputType,
    pub base_idx: Option<usize>,
    pub requires_grad: bool,
    pub dynamic_dims: Vec<usize>,
    pub is_tensor: bool,
    /// Where the output tensor was made, by which op.
    pub origin: Option<(Span, &'static str)>,
    pub shape: Vec<String>,
    pub dtype: Option<DType>,
    /// Which classification branch fired.
    pub reason: OutputReason,
    /// How the output was made: its root (an input, or the op that made a
    /// fresh tensor) first, then each view; the last step is the output.
    pub chain: Vec<AliasStep>,
}

#[derive(Clone, Debug)]
pub struct Tangent {
    pub shape: Vec<SymInt>,
    pub stride: Vec<SymInt>,
    pub dtype: DType,
    /// `input x`, `output 2`, `intermediate base 0`.
    pub source: String,
    pub for_: TangentFor,
}

#[derive(Clone, Debug)]
pub struct ViewAndMutationMeta {
    pub is_train: bool,
    pub keep_input_mutations: bool,
    pub inputs: Vec<InputAliasInfo>,
    pub outputs: Vec<OutputAliasInfo>,
    pub num_intermediate_bases: usize,
    pub traced_tangents: Vec<Tangent>,
    pub grad_enabled_mutation: Option<bool>,
    pub num_tokens: u32,
    /// aot_autograd's `needs_autograd` before the downgrade: some tensor
    /// input requires grad when the run starts.
    pub needs_autograd: bool,
    /// The intermediate bases, in order (`num_intermediate_bases` of them).
    pub intermediate_bases: Vec<IntermediateBase>,
    /// The call that left grad mode as it ends (when it changed).
    pub grad_mode_set_at: Option<Span>,
    /// The op that made the effect token (when there is one).
    pub token_at: Option<Span>,
}

/// What the run did, in order, kept for the report (`tpi check`, `tpi
/// explain`): every in-place write, metadata change and storage swap with its
/// op and span, the tensor each view was made from, the grad-mode switches and
/// the effectful ops. The interpreter appends to it, one call per event;
/// `collect` reads it. It changes no answer.
#[derive(Clone, Debug, Default)]
pub struct Provenance {
    pub events: Vec<Event>,
    /// For a view (or a `detach()` alias): the tensor it was made from:
    /// Pairs `(view, base)`, sorted by view (views are made in id order).
    pub parents: Vec<(TensorId, TensorId)>,
    /// `torch.set_grad_enabled(on)` calls: where, and the mode set.
    pub grad_mode: Vec<(Span, bool)>,
    /// Ops that made an effect token.
    pub tokens: Vec<Span>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EventKind {
    /// A data write (`mul_`, `copy_`, `out=`, …): bumps the storage's counters.
    Data,
    /// An in-place view op (`t_`, `unsqueeze_`, `as_strided_`, …).
    Metadata,
    /// `set_(source)`: the tensor moves onto the source's storage.
    SetStorage,
}

/// One mutation event of the run.
#[derive(Clone, Debug)]
pub struct Event {
    pub kind: EventKind,
    /// The tensor the op was called on.
    pub tensor: TensorId,
    /// The functional storage written (for `set_`: the new storage).
    pub storage: StorageId,
    pub op: &'static str,
    pub span: Span,
    pub no_grad: bool,
    pub inference_mode: bool,
    pub grad_tracked: bool,
    /// For `set_`: the tensor whose storage was taken.
    pub source: Option<TensorId>,
}

/// The autograd mode an op runs in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GradMode {
    /// Grad mode on, inference mode off.
    On,
    /// Grad mode off (`no_grad`, `set_grad_enabled(False)`).
    Off,
    /// Inference mode on (grad mode is off too).
    Inference,
}

impl GradMode {
    pub fn of(grad_enabled: bool, inference_mode: bool) -> GradMode {
        if inference_mode {
            GradMode::Inference
        } else if grad_enabled {
            GradMode::On
        } else {
            GradMode::Off
        }
    }
}

impl Provenance {
    /// A data write of `storage` by `op` on `tensor`.
    pub fn data(
        &mut self,
        tensor: TensorId,
        storage: StorageId,
        op: &'static str,
        span: Span,
        mode: GradMode,
        grad_tracked: bool,
    ) {
        self.events.push(Event {
            kind: EventKind::Data,
            tensor,
            storage,
            op,
            span,
            no_grad: mode != GradMode::On,
            inference_mode: mode == GradMode::Inference,
            grad_tracked,
            source: None,
        });
    }

    /// An in-place metadata change of `tensor`.
    pub fn metadata(&mut self, tensor: TensorId, storage: StorageId, op: &'static str, span: Span) {
        self.events.push(Event {
            kind: EventKind::Metadata,
            tensor,
            storage,
            op,
            span,
            no_grad: false,
            inference_mode: false,
            grad_tracked: false,
            source: None,
        });
    }

    /// `tensor.set_(source)`, moving `tensor` onto `storage`.
    pub fn set_storage(
        &mut self,
        tensor: TensorId,
        source: TensorId,
        storage: StorageId,
        span: Span,
    ) {
        self.events.push(Event {
            kind: EventKind::SetStorage,
            tensor,
            storage,
            op: "set_",
            span,
            no_grad: false,
            inference_mode: false,
            grad_tracked: false,
            source: Some(source),
        });
    }

    /// `view` was made from `base` (a view op or `detach()`).
    pub fn view(&mut self, view: TensorId, base: TensorId) {
        match self.parents.last() {
            Some(&(last, _)) if last >= view => {
                let at = self.parents.partition_point(|&(v, _)| v < view);
                if self.parents.get(at).is_some_and(|&(v, _)| v == view) {
                    self.parents[at] = (view, base);
                } else {
                    self.parents.insert(at, (view, base));
                }
            }
            _ => self.parents.push((view, base)),
        }
    }

    /// `torch.set_grad_enabled(on)` at `span`.
    pub fn grad_mode(&mut self, span: Span, on: bool) {
        self.grad_mode.push((span, on));
    }

    /// An effectful op at `span`.
    pub fn token(&mut self, span: Span) {
        self.tokens.push(span);
    }

    /// The tensor `view` was made from, if it is a view.
    pub fn parent(&self, view: TensorId) -> Option<TensorId> {
        let at = self.parents.partition_point(|&(v, _)| v < view);
        self.parents
            .get(at)
            .filter(|&&(v, _)| v == view)
            .map(|&(_, b)| b)
    }

    /// The chain of aliases that made `t`: its root first, `t` last.
    pub fn chain(&self, m: &Machine, t: TensorId) -> Vec<AliasStep> {
        let mut steps = Vec::new();
        let mut cur = Some(t);
        // Parents are made before their views, so the walk ends; the limit
        // only guards against a bookkeeping bug.
        while let Some(id) = cur {
            if steps.len() >= 256 {
                break;
            }
            let Some(tensor) = m.tensors.get(id) else {
                break;
            };
            steps.push(AliasStep {
                span: tensor.origin,
                op: tensor.origin_op.as_str(),
                input: tensor.input(),
            });
            cur = self.parent(id).filter(|&p| p < id);
        }
        steps.reverse();
        steps
    }
}

/// What the analysis knows about each parameter when the run starts.
#[derive(Clone, Debug)]
pub enum Param {
    Tensor {
        name: String,
        id: TensorId,
        sizes: Dims,
        strides: Dims,
        offset: SymInt,
        storage: StorageId,
        is_leaf: bool,
        requires_grad: bool,
        span: Span,
    },
    Value {
        name: String,
        kind: &'static str,
        span: Span,
    },
}

/// A flattened output: a tensor or a non-tensor leaf.
#[derive(Clone, Debug)]
pub enum FlatOutput {
    Tensor(TensorId),
    Other,
}

/// Why `collect` failed: on the inputs' side (as a whole: the function's
/// header is the place), or while reading an output (the `return` is).
#[derive(Debug)]
pub enum CollectError {
    Inputs(OpError),
    Outputs(OpError),
}

impl From<OpError> for CollectError {
    fn from(e: OpError) -> CollectError {
        CollectError::Inputs(e)
    }
}

impl CollectError {
    pub fn into_inner(self) -> OpError {
        match self {
            CollectError::Inputs(e) | CollectError::Outputs(e) => e,
        }
    }
}

pub fn collect(
    m: &mut Machine,
    params: &[Param],
    outputs: &[FlatOutput],
    keep_input_mutations: bool,
    grad_enabled_mutation: Option<bool>,
) -> Result<ViewAndMutationMeta, CollectError> {
    let events = EventIndex::new(&m.provenance);
    let mut inputs = Vec::new();
    // PyTorch's `_check_if_mutation_can_be_in_graph` assertion.
    let mut deferred: Option<OpError> = None;
    for p in params {
        match p {
            Param::Value { name, kind, span } => inputs.push(InputAliasInfo {
                name: name.clone(),
                kind,
                is_leaf: false,
                requires_grad: false,
                mutates_data: false,
                mutates_metadata: false,
                mutates_storage_metadata: false,
                mutations_hidden_from_autograd: false,
                mutations_under_no_grad_or_inference_mode: false,
                mutation_inductor_storage_resize: false,
                mutation_type: MutationType::NotMutated,
                mutated_at: Vec::new(),
                span: *span,
                requires_grad_at_entry: false,
                shape: Vec::new(),
                stride: Vec::new(),
                dtype: None,
                mutations: Vec::new(),
                mutations_omitted: 0,
            }),
            Param::Tensor {
                name,
                id,
                sizes,
                strides,
                offset,
                storage,
                is_leaf,
                span,
                requires_grad: requires_grad_at_entry,
            } => {
                let t = m.tensors[*id].clone();
                let st = m.storages[t.storage].clone();
                let (mutations, mutations_omitted) = input_mutations(m, &events, *id, t.storage);
                let raw_data = st.mutations > 0;
                // has_metadata_mutation(check_only_storage_mutation): a set_()
                // happened and the inner tensor's storage is not the input's:
                // its value is no longer a view of the input's own value
                // (`fresh_values`: a write replaced it, or a sync after a
                // write regenerated it; tests/oracle/set_to_unsynced_view.tp).
                let kept = m.fresh_values.get(id).is_some_and(|&(s, _)| s == *storage);
                let storage_changed = t.storage_changed && !kept;
                // has_metadata_mutation: a storage swapped by set_() is a
                // metadata mutation; otherwise a flagged tensor's value
                // (`_from_functional_tensor(f_arg.elem)`: the functional
                // value, re-laid out by writes, not the Python wrapper's
                // strides) is compared with the input's sizes, strides and
                // offset. The comparisons run only then, as their guards do
                // in PyTorch (tests/oracle/random/regress_round_64_67.tp).
                // All three are computed, each a Python tuple `==` (a
                // common prefix is compared even when the ranks differ;
                // tests/oracle/metadata_mutation_tuple_compare.tp).
                let flagged = t.metadata_mutated || m.metadata_flag_kept.contains(id);
                let meta_changed = !storage_changed && flagged && {
                    let python = m.tensors[*id].geometry().clone();
                    let s = &mut m.sizes;
                    let same_sizes = s.eq_tuple(sizes, python.sizes());
                    let same_strides = s.eq_tuple(strides, python.strides());
                    let same_offsets = s.eq(offset, &t.offset);
                    !(same_sizes && same_strides && same_offsets)
                };
                let mutates_metadata = storage_changed || meta_changed;
                let storage_meta = storage_changed;
                let hidden = st.mutations == 0;
                let no_grad = raw_data && st.mutations <= st.mutations_no_grad;
                let resized = st.resized;
                let data = raw_data && !storage_meta;
                let requires_grad = m.requires_grad(*id);
                let mutation_type = if !data && !mutates_metadata && !resized {
                    MutationType::NotMutated
                } else {
                    let in_graph = keep_input_mutations
                        && (data || storage_meta || resized)
                        && ((!mutates_metadata && !requires_grad) || hidden || no_grad);
                    if (resized || storage_meta) && !in_graph {
                        let what = if resized { "resize_" } else { "set_" };
                        let mut error = OpError::new(
                            "storage-mutation-out-of-graph",
                            format!("Encountered a {what} on a graph input, but the input has other mutations that we cannot keep in the graph. This is not supported today. Current state: keep_input_mutations={keep_input_mutations}, mutates_data={data}, mutates_metadata={mutates_metadata}, mutations_hidden_from_autograd={hidden}, mutations_under_no_grad_or_inference_mode={no_grad}, requires_grad={requires_grad} (input `{name}`)"),
                        );
                        for r in &mutations {
                            let text = match r.kind {
                                EventKind::SetStorage => {
                                    format!("`{name}` takes another tensor's storage here (`set_`)")
                                }
                                EventKind::Metadata => {
                                    format!("this changes the metadata of `{name}` (`{}`)", r.op)
                                }
                                EventKind::Data if r.no_grad => continue,
                                EventKind::Data => format!(
                                    "this writes `{name}`'s storage with grad mode on (`{}`)",
                                    r.op
                                ),
                            };
                            error = error.label(r.span, text);
                        }
                        let help = if !keep_input_mutations {
                            "a set_ or resize_ of an input can only stay in the graph: run without --no-keep-input-mutations".to_string()
                        } else {
                            format!("put the other mutations of `{name}` under `torch.no_grad()`, or mutate a clone")
                        };
                        // Raised when the mutation type is first read,
                        // after the outputs (a cached property).
                        deferred.get_or_insert(error.help(help));
                    }
                    if in_graph {
                        MutationType::MutatedInGraph
                    } else {
                        MutationType::MutatedOutGraph
                    }
                };
                inputs.push(InputAliasInfo {
                    name: name.clone(),
                    kind: "tensor",
                    is_leaf: *is_leaf,
                    requires_grad,
                    mutates_data: data,
                    mutates_metadata,
                    mutates_storage_metadata: storage_meta,
                    mutations_hidden_from_autograd: hidden,
                    mutations_under_no_grad_or_inference_mode: no_grad,
                    mutation_inductor_storage_resize: resized,
                    mutation_type,
                    mutated_at: st.mutated_at.to_vec(),
                    span: *span,
                    requires_grad_at_entry: *requires_grad_at_entry,
                    shape: sizes.iter().map(|s| m.sizes.env.display(s)).collect(),
                    stride: strides.iter().map(|s| m.sizes.env.display(s)).collect(),
                    dtype: Some(t.dtype),
                    mutations,
                    mutations_omitted,
                });
            }
        }
    }

    // The inputs' metadata checks read each wrapper's value as the last
    // write or sync left it (`_from_functional_tensor`, no sync). Then the
    // inputs are synced, then the outputs (`from_fun`): an out-of-date
    // output regenerates its value from its base, and may fail there.
    // The syncs run in from_fun, after the outputs' classification and the
    // inputs' mutation types (whose set_ assertion comes first): their first
    // error is kept for then (tests/oracle/set_to_pending_view.tp).
    let mut sync_error: Option<CollectError> = None;
    for p in params {
        if let Param::Tensor { id, .. } = p {
            if let Err(e) = m.sync(*id) {
                sync_error.get_or_insert(CollectError::Inputs(e));
            }
        }
    }
    for o in outputs {
        if let FlatOutput::Tensor(id) = o {
            if let Err(e) = m.sync(*id) {
                sync_error.get_or_insert(CollectError::Outputs(e));
            }
        }
    }

    // Outputs, first pass.
    let mut inp_storage: HashMap<StorageId, usize> = HashMap::new();
    let mut inp_ids: HashMap<TensorId, usize> = HashMap::new();
    for (i, p) in params.iter().enumerate() {
        if let Param::Tensor { id, .. } = p {
            inp_storage.insert(m.tensors[*id].alias_key, i);
            inp_ids.insert(*id, i);
        }
    }
    let mut out_ids: HashMap<TensorId, usize> = HashMap::new();
    let mut alias_count: HashMap<StorageId, usize> = HashMap::new();
    let mut multi_count: HashMap<StorageId, usize> = HashMap::new();
    type Key = (Dims, Dims, SymInt);
    let mut grad_by_key: HashMap<StorageId, Vec<(Key, TensorId)>> = HashMap::new();
    for (i, o) in outputs.iter().enumerate() {
        if let FlatOutput::Tensor(t) = o {
            out_ids.insert(*t, i);
            let tt = m.tensors[*t].clone();
            let group = m.tensors[*t].alias_key;
            *alias_count.entry(group).or_default() += 1;
            if tt.multi_output_view {
                *multi_count.entry(group).or_default() += 1;
            }
            if m.requires_grad(*t) {
                let key = metadata_key(m, *t);
                let list = grad_by_key.entry(group).or_default();
                if !list.iter().any(|(k, x)| *x == *t && *k == key) {
                    list.push((key, *t));
                }
            }
        }
    }

    let mut out_infos = Vec::new();
    let mut bases: Vec<TensorId> = Vec::new();
    let mut base_users: Vec<Vec<usize>> = Vec::new();
    for o in outputs {
        let FlatOutput::Tensor(t) = o else {
            out_infos.push(OutputAliasInfo {
                output_type: OutputType::NonAlias,
                base_idx: None,
                requires_grad: false,
                dynamic_dims: Vec::new(),
                is_tensor: false,
                origin: None,
                shape: Vec::new(),
                dtype: None,
                reason: OutputReason::NotATensor,
                chain: Vec::new(),
            });
            continue;
        };
        let t = *t;
        let tt = m.tensors[t].clone();
        let storage = tt.alias_key;
        // Reading a stale view's history regenerates it, which may raise.
        let grad_fn = m.grad_fn(t).map_err(|e| {
            let made = format!("this output was made here by `{}`", tt.origin_op);
            CollectError::Outputs(e.label(tt.origin, made))
        })?;
        let custom = grad_fn.is_some_and(|n| m.nodes[n].custom);
        let changed = tt.storage_changed;
        let requires_grad = m.requires_grad(t);
        let group = storage;
        let count = alias_count.get(&group).copied().unwrap_or(0);
        let multi = multi_count.get(&group).copied().unwrap_or(0);
        let key = metadata_key(m, t);
        let identical_grad: Vec<TensorId> = grad_by_key
            .get(&group)
            .map(|l| {
                l.iter()
                    .filter(|(k, x)| *k == key && *x != t)
                    .map(|(_, x)| *x)
                    .collect()
            })
            .unwrap_or_default();
        let (output_type, base_idx, reason) =
            if inp_storage.contains_key(&storage) && grad_fn.is_some() && custom {
                (
                    OutputType::CustomFunctionView,
                    None,
                    OutputReason::CustomFunctionView,
                )
            } else if inp_storage.contains_key(&storage) && !changed {
                let base = inp_storage[&storage];
                if grad_fn.is_some() && count - multi == 0 {
                    (
                        OutputType::NonAlias,
                        Some(base),
                        OutputReason::MultiOutputViewsOnly { aliases: count },
                    )
                } else if inp_ids.contains_key(&t) {
                    (OutputType::IsInput, Some(base), OutputReason::InputItself)
                } else {
                    (
                        OutputType::AliasOfInput,
                        Some(base),
                        OutputReason::ViewOfInput,
                    )
                }
            } else if changed && inp_ids.contains_key(&t) {
                (
                    OutputType::IsInput,
                    inp_storage.get(&storage).copied(),
                    OutputReason::InputAfterSet,
                )
            } else if let Some(base) = tt
                .view
                .as_ref()
                .map(|v| v.base)
                .filter(|&b| requires_grad && m.requires_grad(b))
            {
                if count == 1 || count - multi <= 1 {
                    (
                        OutputType::UnsafeViewAlias,
                        None,
                        OutputReason::LoneViewOfIntermediate {
                            aliases: count,
                            multi,
                        },
                    )
                } else if let Some(&oi) = out_ids.get(&base) {
                    (
                        OutputType::AliasOfIntermediateBaseIsUserOutput,
                        Some(oi),
                        OutputReason::ViewOfOutput,
                    )
                } else if let Some(k) = bases.iter().position(|&b| b == base) {
                    base_users[k].push(out_infos.len());
                    (
                        OutputType::AliasOfIntermediate,
                        Some(k),
                        OutputReason::SharedBase,
                    )
                } else {
                    bases.push(base);
                    base_users.push(vec![out_infos.len()]);
                    (
                        OutputType::AliasOfIntermediateSaveAsOutput,
                        Some(bases.len() - 1),
                        OutputReason::NewBase,
                    )
                }
            } else if count > 1 && !identical_grad.is_empty() && !requires_grad {
                (
                    OutputType::AliasOfIntermediateBaseIsUserOutput,
                    out_ids.get(&identical_grad[0]).copied(),
                    OutputReason::DetachedTwin,
                )
            } else if tt.view.is_some() {
                (OutputType::NonAlias, None, OutputReason::ViewWithoutGrad)
            } else {
                (OutputType::NonAlias, None, OutputReason::Fresh)
            };
        // Read from the Python wrapper (its sizes are stale after set_).
        let dynamic_dims = m
            .python_geometry(t)
            .sizes()
            .iter()
            .enumerate()
            .filter(|(_, s)| m.sizes.env.is_dynamic(s))
            .map(|(i, _)| i)
            .collect();
        out_infos.push(OutputAliasInfo {
            output_type,
            base_idx,
            requires_grad,
            dynamic_dims,
            is_tensor: true,
            origin: Some((tt.origin, tt.origin_op.as_str())),
            shape: tt.sizes().iter().map(|s| m.sizes.env.display(s)).collect(),
            dtype: Some(tt.dtype),
            reason,
            chain: m.provenance.chain(m, t),
        });
    }

    if let Some(e) = deferred {
        return Err(CollectError::Inputs(e));
    }
    if let Some(e) = sync_error {
        return Err(e);
    }
    // Tangents.
    let mut tangent_sources: Vec<(TensorId, String, TangentFor)> = Vec::new();
    for (i, (p, info)) in params.iter().zip(&inputs).enumerate() {
        if let Param::Tensor { id, name, .. } = p {
            if info.mutation_type == MutationType::MutatedOutGraph
                && info.mutates_data
                && info.requires_grad
            {
                tangent_sources.push((
                    *id,
                    format!("mutated input `{name}`"),
                    TangentFor::Input(i),
                ));
            }
        }
    }
    for (i, (o, info)) in outputs.iter().zip(&out_infos).enumerate() {
        if let FlatOutput::Tensor(t) = o {
            if matches!(
                info.output_type,
                OutputType::NonAlias | OutputType::UnsafeViewAlias | OutputType::CustomFunctionView
            ) && info.requires_grad
            {
                tangent_sources.push((*t, format!("output {i}"), TangentFor::Output(i)));
            }
        }
    }
    for (k, &b) in bases.iter().enumerate() {
        // The tangents are `from_fun`'s: an intermediate base whose value a
        // write through one of its views left out of date is synced first.
        m.sync(b).map_err(CollectError::Outputs)?;
        tangent_sources.push((
            b,
            format!("intermediate base {k}"),
            TangentFor::IntermediateBase(k),
        ));
    }
    let intermediate_bases = bases
        .iter()
        .zip(base_users)
        .map(|(&b, outputs)| IntermediateBase {
            chain: m.provenance.chain(m, b),
            shape: m.tensors[b]
                .sizes()
                .iter()
                .map(|s| m.sizes.env.display(s))
                .collect(),
            outputs,
        })
        .collect();
    let mut traced_tangents = Vec::new();
    for (t, source, for_) in tangent_sources {
        let tt = m.tensors[t].clone();
        // view(t.shape), then contiguous(memory_format=suggest_memory_format(t)).
        // `t.view(t.shape)` keeps the strides (torch._refs short-circuits a view
        // to the same shape). A tensor written in place has the strides of
        // the write's functional result (`Machine::replace_value`).
        let strides = tt.strides().clone();
        // An empty tensor is contiguous in any format, so `contiguous()`
        // keeps what `detach()` gave, which (a FakeTensor's alias, as
        // measured) lays an empty tensor out contiguously whatever its
        // strides were.
        // (A symbolic size is decided, with its guard, only for a view, as
        // before; elsewhere only a size known to be 0 counts.)
        let empty = if tt.view.is_some() {
            m.sizes.any_zero(tt.sizes())
        } else {
            tt.sizes()
                .iter()
                .any(|s| m.sizes.env.resolved_int(s) == Some(0))
        };
        let fmt = shape::suggest_memory_format(tt.sizes(), &strides, &mut m.sizes);
        let strides = if empty {
            shape::contiguous_strides(tt.sizes(), &mut m.sizes)?
        } else if shape::is_contiguous_as(tt.sizes(), &strides, fmt, &mut m.sizes) {
            strides
        } else {
            shape::format_strides(tt.sizes(), fmt, &mut m.sizes)?
        };
        let resolve = |v: &SymInt| m.sizes.env.resolve(v).unwrap_or_else(|_| v.clone());
        traced_tangents.push(Tangent {
            shape: tt.sizes().iter().map(resolve).collect(),
            stride: strides.iter().map(resolve).collect(),
            dtype: tt.dtype,
            source,
            for_,
        });
    }

    // aot_autograd: needs_autograd, then the downgrade to an inference graph.
    let needs_autograd = params.iter().any(|p| {
        matches!(
            p,
            Param::Tensor {
                requires_grad: true,
                ..
            }
        )
    });
    let output_and_mutation_safe = !out_infos.iter().any(|o| {
        o.requires_grad
            && !(matches!(
                o.output_type,
                OutputType::AliasOfInput | OutputType::IsInput
            ) && o.base_idx.is_some_and(|b| inputs[b].requires_grad))
    }) && !inputs.iter().any(|i| {
        i.requires_grad
            && i.mutates_data
            && !i.mutations_under_no_grad_or_inference_mode
            && !i.mutations_hidden_from_autograd
    });
    let is_train = needs_autograd && !output_and_mutation_safe;
    Ok(ViewAndMutationMeta {
        is_train,
        keep_input_mutations,
        inputs,
        outputs: out_infos,
        num_intermediate_bases: bases.len(),
        traced_tangents,
        grad_enabled_mutation,
        num_tokens: m.tokens,
        needs_autograd,
        intermediate_bases,
        grad_mode_set_at: grad_enabled_mutation.and_then(|on| {
            m.provenance
                .grad_mode
                .iter()
                .rev()
                .find(|(_, set)| *set == on)
                .map(|(span, _)| *span)
        }),
        token_at: if m.tokens > 0 {
            m.provenance.tokens.first().copied()
        } else {
            None
        },
    })
}

/// `MetadataKey.make(o)` of the output classification: the sizes and
/// strides the Python wrapper reports (`python_geom`: stale after `set_()`
/// or a write), and the offset.
fn metadata_key(m: &Machine, t: TensorId) -> (Dims, Dims, SymInt) {
    let python = m.python_geometry(t);
    (
        python.sizes().clone(),
        python.strides().clone(),
        m.tensors[t].offset.clone(),
    )
}

/// The events of a run by what they touch, so that each input finds its
/// own without scanning them all.
struct EventIndex {
    /// Data writes, by the storage written.
    data_by_storage: HashMap<StorageId, Vec<usize>>,
    /// Metadata changes and `set_`s, by the tensor changed.
    others_by_tensor: HashMap<TensorId, Vec<usize>>,
}

impl EventIndex {
    fn new(provenance: &Provenance) -> EventIndex {
        let mut index = EventIndex {
            data_by_storage: HashMap::new(),
            others_by_tensor: HashMap::new(),
        };
        for (k, e) in provenance.events.iter().enumerate() {
            match e.kind {
                EventKind::Data => index.data_by_storage.entry(e.storage).or_default().push(k),
                EventKind::Metadata | EventKind::SetStorage => {
                    index.others_by_tensor.entry(e.tensor).or_default().push(k)
                }
            }
        }
        index
    }
}

/// The mutations that count for input wrapper `id`, whose storage is
/// `storage` after the run: data writes of that storage (through any alias),
/// and metadata changes and `set_`s of the wrapper itself.
fn input_mutations(
    m: &Machine,
    events: &EventIndex,
    id: TensorId,
    storage: StorageId,
) -> (Vec<MutationRecord>, usize) {
    let provenance = &m.provenance;
    let mut picked: Vec<usize> = Vec::new();
    picked.extend(events.data_by_storage.get(&storage).into_iter().flatten());
    picked.extend(events.others_by_tensor.get(&id).into_iter().flatten());
    picked.sort_unstable();
    // One record per run of identical events (a loop writing the same way);
    // at most MAX_RECORDS records, and beyond them still the first write with
    // grad mode on and the first grad-tracked one (the report names them).
    let mut records: Vec<MutationRecord> = Vec::new();
    let mut omitted = 0;
    let mut last_key = None;
    let (mut grad_on, mut tracked) = (false, false);
    for &k in &picked {
        let Some(e) = provenance.events.get(k) else {
            continue;
        };
        let origin = m.tensors.get(e.tensor).map(|t| t.origin);
        let key = (
            e.kind,
            e.span,
            e.no_grad,
            e.inference_mode,
            e.grad_tracked,
            origin,
        );
        let first_grad_on = e.kind == EventKind::Data && !e.no_grad && !grad_on;
        let first_tracked = e.kind == EventKind::Data && e.grad_tracked && !tracked;
        grad_on |= e.kind == EventKind::Data && !e.no_grad;
        tracked |= e.kind == EventKind::Data && e.grad_tracked;
        if last_key == Some(key) {
            if let Some(r) = records.last_mut() {
                r.count += 1;
                continue;
            }
        }
        if records.len() >= MAX_RECORDS && !first_grad_on && !first_tracked {
            omitted += 1;
            last_key = None;
            continue;
        }
        last_key = Some(key);
        records.push(MutationRecord {
            kind: e.kind,
            op: e.op.to_string(),
            span: e.span,
            no_grad: e.no_grad,
            inference_mode: e.inference_mode,
            grad_tracked: e.grad_tracked,
            through: provenance.chain(m, e.tensor),
            source: e.source.map(|s| provenance.chain(m, s)).unwrap_or_default(),
            count: 1,
        });
    }
    (records, omitted)
}

/// Distinct mutations kept per input for the report (the rest are counted).
const MAX_RECORDS: usize = 100;
