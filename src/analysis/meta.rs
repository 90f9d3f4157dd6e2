//! ViewAndMutationMeta: what `run_functionalized_fw_and_collect_metadata`
//! computes, read off the interpreter's final state with PyTorch's rules and
//! names (AOT_RULES.md §2–§5), plus aot_autograd's `is_train` downgrade.

use super::domain::*;
use super::state::Machine;
use crate::ops::shape::{self, OpError};
use crate::sym::SymInt;
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
            OutputType::AliasOfIntermediateBaseIsUserOutput => "alias_of_intermediate_base_is_user_output",
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
}

#[derive(Clone, Debug)]
pub struct Tangent {
    pub shape: Vec<SymInt>,
    pub stride: Vec<SymInt>,
    pub dtype: DType,
    /// `input x`, `output 2`, `intermediate base 0`.
    pub source: String,
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
}

/// What the analysis knows about each parameter when the run starts.
#[derive(Clone, Debug)]
pub enum Param {
    Tensor {
        name: String,
        id: TensorId,
        sizes: Vec<SymInt>,
        strides: Vec<SymInt>,
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

pub struct Collected {
    pub meta: ViewAndMutationMeta,
}

pub fn collect(
    m: &mut Machine,
    params: &[Param],
    outputs: &[FlatOutput],
    keep_input_mutations: bool,
    grad_enabled_mutation: Option<bool>,
) -> Result<ViewAndMutationMeta, OpError> {
    let mut inputs = Vec::new();
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
            }),
            Param::Tensor { name, id, sizes, strides, offset, storage, is_leaf, span, .. } => {
                let t = m.tensors[*id].clone();
                let st = m.storages[t.storage].clone();
                let raw_data = st.mutations > 0;
                let storage_changed = t.storage_changed && *storage != t.storage;
                let meta_changed = {
                    let s = &mut m.sizes;
                    let same = t.sizes.len() == sizes.len()
                        && t.sizes.iter().zip(sizes).all(|(a, b)| s.eq(a, b))
                        && t.strides.iter().zip(strides).all(|(a, b)| s.eq(a, b))
                        && s.eq(&t.offset, offset);
                    !same
                };
                let mutates_metadata = storage_changed || (t.metadata_mutated && meta_changed);
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
                        return Err(OpError::new(
                            "storage-mutation-out-of-graph",
                            format!("Encountered a {what} on a graph input, but the input has other mutations that we cannot keep in the graph. This is not supported today. Current state: keep_input_mutations={keep_input_mutations}, mutates_data={data}, mutates_metadata={mutates_metadata}, mutations_hidden_from_autograd={hidden}, mutations_under_no_grad_or_inference_mode={no_grad}, requires_grad={requires_grad} (input `{name}`)"),
                        ));
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
                    mutated_at: st.mutated_at.clone(),
                    span: *span,
                });
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
    type Key = (Vec<SymInt>, Vec<SymInt>, SymInt);
    let mut grad_by_key: HashMap<StorageId, Vec<(Key, TensorId)>> = HashMap::new();
    for (i, o) in outputs.iter().enumerate() {
        if let FlatOutput::Tensor(t) = o {
            out_ids.insert(*t, i);
            let tt = m.tensors[*t].clone();
            *alias_count.entry(tt.alias_key).or_default() += 1;
            if tt.multi_output_view {
                *multi_count.entry(tt.alias_key).or_default() += 1;
            }
            if m.requires_grad(*t) {
                let key = (tt.sizes.clone(), tt.strides.clone(), tt.offset.clone());
                let list = grad_by_key.entry(tt.alias_key).or_default();
                if !list.iter().any(|(k, x)| *x == *t && *k == key) {
                    list.push((key, *t));
                }
            }
        }
    }

    let mut out_infos = Vec::new();
    let mut bases: Vec<TensorId> = Vec::new();
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
            });
            continue;
        };
        let t = *t;
        let tt = m.tensors[t].clone();
        let storage = tt.alias_key;
        let grad_fn = m.grad_fn(t)?;
        let custom = grad_fn.is_some_and(|n| m.nodes[n].custom);
        let changed = tt.storage_changed;
        let requires_grad = m.requires_grad(t);
        let count = alias_count.get(&storage).copied().unwrap_or(0);
        let multi = multi_count.get(&storage).copied().unwrap_or(0);
        let key = (tt.sizes.clone(), tt.strides.clone(), tt.offset.clone());
        let identical_grad: Vec<TensorId> = grad_by_key
            .get(&storage)
            .map(|l| l.iter().filter(|(k, x)| *k == key && *x != t).map(|(_, x)| *x).collect())
            .unwrap_or_default();
        let (output_type, base_idx) = if inp_storage.contains_key(&storage) && grad_fn.is_some() && custom {
            (OutputType::CustomFunctionView, None)
        } else if inp_storage.contains_key(&storage) && !changed {
            let base = inp_storage[&storage];
            if grad_fn.is_some() && count - multi == 0 {
                (OutputType::NonAlias, Some(base))
            } else if inp_ids.contains_key(&t) {
                (OutputType::IsInput, Some(base))
            } else {
                (OutputType::AliasOfInput, Some(base))
            }
        } else if changed && inp_ids.contains_key(&t) {
            (OutputType::IsInput, inp_storage.get(&storage).copied())
        } else if let Some(base) = tt.view.as_ref().map(|v| v.base).filter(|&b| requires_grad && m.requires_grad(b)) {
            if count == 1 || count - multi <= 1 {
                (OutputType::UnsafeViewAlias, None)
            } else if let Some(&oi) = out_ids.get(&base) {
                (OutputType::AliasOfIntermediateBaseIsUserOutput, Some(oi))
            } else if let Some(k) = bases.iter().position(|&b| b == base) {
                (OutputType::AliasOfIntermediate, Some(k))
            } else {
                bases.push(base);
                (OutputType::AliasOfIntermediateSaveAsOutput, Some(bases.len() - 1))
            }
        } else if count > 1 && !identical_grad.is_empty() && !requires_grad {
            (OutputType::AliasOfIntermediateBaseIsUserOutput, out_ids.get(&identical_grad[0]).copied())
        } else {
            (OutputType::NonAlias, None)
        };
        let dynamic_dims = tt.sizes.iter().enumerate().filter(|(_, s)| m.sizes.env.is_dynamic(s)).map(|(i, _)| i).collect();
        out_infos.push(OutputAliasInfo {
            output_type,
            base_idx,
            requires_grad,
            dynamic_dims,
            is_tensor: true,
            origin: Some((tt.origin, tt.origin_op)),
            shape: tt.sizes.iter().map(|s| m.sizes.env.display(s)).collect(),
        });
    }

    // Tangents.
    let mut tangent_sources: Vec<(TensorId, String)> = Vec::new();
    for (p, info) in params.iter().zip(&inputs) {
        if let Param::Tensor { id, name, .. } = p {
            if info.mutation_type == MutationType::MutatedOutGraph && info.mutates_data && info.requires_grad {
                tangent_sources.push((*id, format!("mutated input `{name}`")));
            }
        }
    }
    for (i, (o, info)) in outputs.iter().zip(&out_infos).enumerate() {
        if let FlatOutput::Tensor(t) = o {
            if matches!(info.output_type, OutputType::NonAlias | OutputType::UnsafeViewAlias | OutputType::CustomFunctionView) && info.requires_grad {
                tangent_sources.push((*t, format!("output {i}")));
            }
        }
    }
    for (k, &b) in bases.iter().enumerate() {
        tangent_sources.push((b, format!("intermediate base {k}")));
    }
    let mut traced_tangents = Vec::new();
    for (t, source) in tangent_sources {
        let tt = m.tensors[t].clone();
        // view(t.shape), then contiguous(memory_format=suggest_memory_format(t)).
        // `t.view(t.shape)` keeps the strides (torch._refs short-circuits a view
        // to the same shape).
        let strides = tt.strides.clone();
        let fmt = shape::suggest_memory_format(&tt.sizes, &strides, &mut m.sizes);
        let strides = if shape::is_contiguous_as(&tt.sizes, &strides, fmt, &mut m.sizes) {
            strides
        } else {
            shape::format_strides(&tt.sizes, fmt, &mut m.sizes)?
        };
        let resolve = |v: &SymInt| m.sizes.env.resolve(v).unwrap_or_else(|_| v.clone());
        traced_tangents.push(Tangent {
            shape: tt.sizes.iter().map(resolve).collect(),
            stride: strides.iter().map(resolve).collect(),
            dtype: tt.dtype,
            source,
        });
    }

    // aot_autograd: needs_autograd, then the downgrade to an inference graph.
    let needs_autograd = params.iter().any(|p| matches!(p, Param::Tensor { requires_grad: true, .. }));
    let output_and_mutation_safe = !out_infos.iter().any(|o| {
        o.requires_grad
            && !(matches!(o.output_type, OutputType::AliasOfInput | OutputType::IsInput)
                && o.base_idx.is_some_and(|b| inputs[b].requires_grad))
    }) && !inputs.iter().any(|i| {
        i.requires_grad && i.mutates_data && !i.mutations_under_no_grad_or_inference_mode && !i.mutations_hidden_from_autograd
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
    })
}
