//! Eager hazards: what plain PyTorch raises on the same program with real
//! tensors. The forward error comes from running the body in eager mode
//! (autograd's leaf and view checks, kernels' overlap checks); the backward
//! error from walking the autograd graph from every output that requires grad
//! and checking the version of every tensor a node saved.

use super::domain::NodeId;
use super::interp::op_error;
use super::meta::FlatOutput;
use super::state::Mode;
use super::Functions;
use super::{run_paced, EagerPrediction, Paced};
use crate::report::Diagnostic;
use crate::syntax::ast::FunctionDef;

/// `pace`: run behind the analysis run (`analysis::analyse_function`).
pub(crate) fn predict(
    functions: &Functions,
    def: &FunctionDef,
    pace: Option<Paced>,
) -> EagerPrediction {
    let mut run = run_paced(functions, def, Mode::Eager, pace);
    let outputs = match run.outputs {
        // Eager PyTorch reads the data tpi does not know: no prediction.
        // tpi's own limits (unrolling, symbolic arithmetic, ops outside its
        // table) say nothing about what eager PyTorch would do.
        Err(d)
            if matches!(
                d.code,
                "data-dependent" | "limit" | "symbolic" | "unknown-op" | "unsupported"
            ) =>
        {
            return EagerPrediction::default()
        }
        Err(d) => {
            return EagerPrediction {
                forward_error: Some(d),
                backward_error: None,
            }
        }
        Ok(o) => o,
    };
    let m = &mut run.interp.m;
    let mut roots: Vec<NodeId> = Vec::new();
    let mut any_grad = false;
    let mut inference_grad = None;
    for o in &outputs {
        if let FlatOutput::Tensor(t) = o {
            if !m.requires_grad(*t) {
                continue;
            }
            if m.tensors[*t].is_inference {
                // `o.float().sum()` of an inference tensor skips autograd
                // (it has no autograd keys): its sum does not require grad.
                inference_grad.get_or_insert(*t);
            } else {
                any_grad = true;
                match m.grad_fn(*t) {
                    Ok(Some(n)) => roots.push(n),
                    Ok(None) => {}
                    Err(e) => {
                        // Reading the output's grad_fn (to run backward) raises.
                        return EagerPrediction::backward(op_error(e, m.tensors[*t].origin));
                    }
                }
            }
        }
    }
    if !any_grad {
        if let Some(t) = inference_grad {
            // The outputs that require grad are all inference tensors:
            // the loss does not require grad.
            let d = Diagnostic::error(
                "no-grad-fn",
                "element 0 of tensors does not require grad and does not have a grad_fn",
                m.tensors[t].origin,
            )
            .with_label("an inference tensor that requires grad: ops on it outside inference_mode record no history")
            .with_help("make the tensor outside inference_mode, or clone it there");
            return EagerPrediction::backward(d);
        }
        return EagerPrediction::default();
    }
    // The loss's nodes run first, the last output's first: each returns a
    // gradient of its output's sizes now, which the output's own node
    // refuses when an in-place metadata op without history changed them.
    // The nodes that keep accumulators alive: the outputs', and those of
    // the inputs, which the caller still holds (an input set_() to a leaf
    // holds its AccumulateGrad in its own grad_fn).
    let mut holders = roots.clone();
    for p in &run.params {
        if let super::meta::Param::Tensor { id, .. } = p {
            if let Some(n) = m.tensors[*id].grad_fn {
                holders.push(n);
            }
        }
    }
    for o in outputs.iter().rev() {
        if let FlatOutput::Tensor(t) = o {
            // A leaf's stale sizes matter only while its old accumulator lives.
            let leaf = m.tensors[*t].grad_fn.is_none() && m.tensors[*t].view.is_none();
            if leaf && !m.accumulator_alive(*t, &holders) {
                continue;
            }
            if let Some(d) = stale_output_grad(m, *t) {
                return EagerPrediction::backward(d);
            }
        }
    }
    // Every node reachable from the roots runs in backward and unpacks what it saved.
    let mut seen = vec![false; m.nodes.len()];
    let mut stack = roots;
    let mut order = Vec::new();
    while let Some(n) = stack.pop() {
        let i = n as usize;
        if i >= seen.len() || seen[i] {
            continue;
        }
        seen[i] = true;
        order.push(n);
        stack.extend(m.nodes[n].next.iter().copied());
    }
    order.sort_unstable_by(|a, b| b.cmp(a));
    for n in order {
        let (overlapping_view, overlapping_base, wrapped, span, not_implemented) = {
            let node = &m.nodes[n];
            (
                node.overlapping_view,
                node.overlapping_base,
                node.next.first().copied(),
                node.span,
                node.not_implemented,
            )
        };
        if let Some(e) = m.copy_slices_overruns.get(&n) {
            let d = op_error(e.clone(), span)
                .with_label("written in place through a view that reaches past its base's size")
                .with_help("backward lays the base's gradient out at the base's size: resize the base, not a view of it, or write to a clone");
            return EagerPrediction::backward(d);
        }
        if overlapping_base || overlapping_view {
            // CopySlices copies the gradient into a tensor laid out as the
            // base first (refused at once when the base overlaps), then
            // runs the op's own node (which unpacks what it
            // saved), then copies the gradient into the view.
            // (An op without a derivative raises before the copy:
            // tests/oracle/copyslices_not_implemented_first.tp.)
            if let Some(d) = wrapped
                .filter(|_| !overlapping_base)
                .and_then(|w| wrapped_node_error(m, w))
            {
                return EagerPrediction::backward(d);
            }
            let d = Diagnostic::error(
                "inplace-overlapping",
                "unsupported operation: more than one element of the written-to tensor refers to a single memory location. Please clone() the tensor before performing the operation.",
                span,
            )
            .with_label(if overlapping_base {
                "written in place through a view of a tensor whose elements share memory"
            } else {
                "written in place through a view whose elements share memory"
            })
            .with_help("backward copies the gradient into that view: write to a clone of the expanded tensor, or out of place");
            return EagerPrediction::backward(d);
        }
        if m.complex_grad_nodes.contains(&n) {
            let d = Diagnostic::error(
                "other",
                "Expected isFloatingType(grad.scalar_type()) || (input_is_complex == grad_is_complex) to be true, but got false.  (Could this error message be improved?  If so, please report an enhancement request to PyTorch.)",
                span,
            )
            .with_label("this reduction to a complex dtype hands its real input a complex gradient")
            .with_help("reduce in a real dtype and convert the result, or make the input complex first");
            return EagerPrediction::backward(d);
        }
        if m.integer_grad_nodes.contains(&n) {
            // The node's consumer hands it a gradient of the integer
            // tensor's dtype, which the engine asserts is differentiable.
            let d = Diagnostic::error(
                "other",
                "isDifferentiableType(grad.scalar_type()) INTERNAL ASSERT FAILED at \"/pytorch/torch/csrc/autograd/engine.cpp\":995, please report a bug to PyTorch.",
                span,
            )
            .with_label("this in-place op wrote a value that requires grad into an integer tensor")
            .with_help("write into a floating-point tensor, or detach the value first");
            return EagerPrediction::backward(d);
        }
        if let Some(op) = not_implemented {
            if op.after_unpack() {
                if let Some(d) = stale_saved(m, n) {
                    return EagerPrediction::backward(d);
                }
            }
            return EagerPrediction::backward(no_derivative(op, span));
        }
        if let Some(d) = stale_saved(m, n) {
            return EagerPrediction::backward(d);
        }
        if let Some(d) = autocast_concat(m, n) {
            return EagerPrediction::backward(d);
        }
        if let Some(e) = m.backward_errors.get(&n) {
            let d = op_error(e.clone(), span)
                .with_label("backward of this op runs it again on the gradient, which refuses it")
                .with_help("backward pads the gradient back to the input's empty dim, a size of 0 that constant_pad_nd refuses when another pad is positive: pad a non-empty tensor, or detach the input");
            return EagerPrediction::backward(d);
        }
        if m.bad_grads.contains_key(&n) && m.nodes[n].name.as_str() == "torch::autograd::CopySlices"
        {
            // CopySlices runs the node it wraps (which unpacks what it
            // saved, or has no derivative) before its own gradient is
            // validated (tests/oracle/copyslices_wrapped_node_first.tp).
            if let Some(d) = wrapped.and_then(|w| wrapped_node_error(m, w)) {
                return EagerPrediction::backward(d);
            }
        }
        if let Some((k, got, expected)) = m.bad_grads.get(&n) {
            let node = &m.nodes[n];
            let d = invalid_gradient(node.name.as_str(), *k, got, expected, node.span)
                .with_label("backward of this op returns a gradient of the input's sizes here");
            return EagerPrediction::backward(d);
        }
        // The node's gradient then reaches the AccumulateGrad of a leaf it
        // took, which refuses a variable that has a grad_fn since: a
        // detach_()ed leaf written in place with an operand that requires
        // grad (AccumulateGrad::apply).
        if let Some(leaves) = m.accumulator_edges.get(&n).cloned() {
            // (`variable.grad_fn()`: a leaf that is a view of a base written
            // since regenerates its node, and that may raise.)
            let mut moved = None;
            for &l in &leaves {
                match m.grad_fn(l) {
                    Ok(Some(g)) => {
                        let t = &m.tensors[l];
                        let at = match t.view {
                            Some(_) => m.version_spans[t.version].unwrap_or(t.origin),
                            None => m.nodes[g].span,
                        };
                        moved = Some(at);
                        break;
                    }
                    Ok(None) => {}
                    Err(e) => return EagerPrediction::backward(op_error(e, m.nodes[n].span)),
                }
            }
            if let Some(at) = moved {
                let d = Diagnostic::error(
                    "other",
                    "leaf variable has been moved into the graph interior",
                    at,
                )
                .with_label("this in-place op gave a leaf that an earlier op took a grad_fn")
                .with_secondary(
                    m.nodes[n].span,
                    "backward of this op accumulates into that leaf",
                )
                .with_help(
                    "write into a clone of the leaf, or take the earlier op after the write",
                );
                return EagerPrediction::backward(d);
            }
            for leaf in leaves {
                if let Some(e) = accumulate_copy_error(m, leaf, n) {
                    let d = op_error(e, m.nodes[n].span)
                        .with_label("backward of this op accumulates into a leaf whose sizes changed without history since")
                        .with_secondary(m.tensors[leaf].origin, "this leaf")
                        .with_help("change the leaf's sizes outside no_grad/inference_mode, or on a clone");
                    return EagerPrediction::backward(d);
                }
            }
        }
    }
    EagerPrediction::default()
}

/// Backward runs under the autocast state the function left (the engine
/// takes the caller's thread-local state): a split's or unbind's node
/// concatenates its gradients with `cat` or `stack`, and a roll's rolls
/// its gradient back (a CPU roll is a `cat` of two slices): CPU autocast's
/// `promote` ops, which refuse float16 under bfloat16 autocast (and the
/// reverse).
fn autocast_concat(m: &super::state::Machine, n: NodeId) -> Option<Diagnostic> {
    if m.concat_backward.is_empty() {
        return None;
    }
    let lower = m.cpu_autocast_dtype()?;
    let &(_, dtype) = m.concat_backward.iter().find(|(node, _)| *node == n)?;
    let e = super::apply::promote_dtypes(lower, [dtype]).err()?;
    let label = if m.nodes[n].name.as_str() == "RollBackward0" {
        "backward of this op rolls its gradient back, concatenating two slices of it"
    } else {
        "backward of this op concatenates the gradients of its outputs"
    };
    Some(
        op_error(e, m.nodes[n].span)
            .with_label(label)
            .with_help("disable autocast before the function returns (use `with torch.autocast(...)`), or split a float32 tensor"),
    )
}

/// AccumulateGrad's first gradient for `leaf` from node `n`, where an
/// in-place metadata op without history changed the leaf's sizes since its
/// accumulator was made (`Machine::grad_sizes`), or `set_()` did after `n`
/// was made (`Machine::reset_accumulators`): the gradient has the old
/// sizes, contiguous. A
/// gradient laid out as the leaf is now (`obeys_layout_contract`: equal
/// strides on its dims of size other than 1) is stored as it is; otherwise
/// `clone_obey_contract` copies it into an empty tensor of the leaf's sizes
/// and strides now, when those are dense, and that copy_ refuses a
/// gradient that does not broadcast to them.
fn accumulate_copy_error(
    m: &mut super::state::Machine,
    leaf: super::domain::TensorId,
    n: NodeId,
) -> Option<crate::ops::shape::OpError> {
    use crate::ops::shape;
    // AccumulateGrad::apply returns at once for a variable that no longer
    // requires grad (`detach_()` since).
    if !m.requires_grad(leaf) {
        return None;
    }
    let reset = m
        .reset_accumulators
        .get(&leaf)
        .and_then(|resets| resets.iter().find(|(first_after, _)| n < *first_after));
    let grad = match reset {
        Some((_, sizes)) => sizes.clone(),
        None => m.grad_sizes.get(&leaf)?.clone(),
    };
    let t = &m.tensors[leaf];
    let (sizes, strides) = (t.sizes().clone(), t.strides().clone());
    let grad_strides = shape::contiguous_strides(&grad, &mut m.sizes).ok()?;
    // A gradient of more dims than the leaf has now reads strides past its
    // rank, which C++ does not check: the inline slots' leftovers
    // (tests/oracle/eager_accumulate_stale_stride_slots.tp).
    let obeys = grad
        .iter()
        .zip(&grad_strides)
        .enumerate()
        .all(|(i, (g, st))| {
            if g.as_int() == Some(1) {
                st.as_int() != Some(0)
            } else {
                m.stride_slot(leaf, i).as_ref() == Some(st)
            }
        });
    if obeys || !shape::is_non_overlapping_and_dense(&sizes, &strides, &mut m.sizes) {
        return None;
    }
    match shape::broadcast_shapes(&sizes, &grad, &mut m.sizes) {
        Err(e) => Some(e),
        Ok(b) if b != sizes => Some(shape::output_broadcast_error(&sizes, &b)),
        Ok(_) => None,
    }
}

/// The error of the loss's `o.float().sum()` for an output whose sizes an
/// in-place metadata op without history changed (`Machine::grad_sizes`).
fn stale_output_grad(m: &super::state::Machine, t: super::domain::TensorId) -> Option<Diagnostic> {
    if !m.requires_grad(t) || m.tensors[t].is_inference {
        return None;
    }
    let (got, expected) = m.refused_grad(t)?;
    let name = if m.tensors[t].dtype == super::domain::DType::F32 {
        "SumBackward0"
    } else {
        "ToCopyBackward0"
    };
    Some(
        invalid_gradient(name, 0, &got, &expected, m.tensors[t].origin)
            .with_label("this output's sizes were changed behind autograd"),
    )
}

/// The engine's `validate_outputs` error: node `name` returned gradient
/// `k` of sizes `got` where its next node expects `expected`.
fn invalid_gradient(
    name: &str,
    k: usize,
    got: &[crate::sym::SymInt],
    expected: &[crate::sym::SymInt],
    span: crate::syntax::Span,
) -> Diagnostic {
    let show = crate::ops::shape::show;
    // The contract's codes classify PyTorch's message: one naming an
    // `...squeeze...` node (UnsqueezeBackward0/1) reads as a dim error.
    let code = if name.contains("squeeze") {
        "dim-out-of-range"
    } else {
        "other"
    };
    Diagnostic::error(
        code,
        format!(
            "Function {name} returned an invalid gradient at index {k} - got {} but expected shape compatible with {}",
            show(got),
            show(expected)
        ),
        span,
    )
    .with_help(if name.starts_with("Scatter") {
        "scatter's gradient for src has the index's shape: give src the index's shape (slice it)"
    } else {
        "an in-place metadata op (unsqueeze_, t_, ...) under no_grad or inference_mode changed the tensor's sizes behind autograd: do it out of place, or with grad mode on"
    })
}

/// Backward reaching the node of `op`, which has no derivative, at `span`.
fn no_derivative(op: super::domain::NoDerivative, span: crate::Span) -> Diagnostic {
    let help = if op.after_unpack() {
        "use the out-of-place op, or a slope of 0 or more"
    } else {
        "detach the result, or compute it under `torch.no_grad()`"
    };
    Diagnostic::error("other", op.message(), span)
        .with_label("backward cannot go through this op")
        .with_help(help)
}

/// The error the node `w` a CopySlices wraps raises when CopySlices runs
/// it: a saved tensor written since, or no derivative (before or after it
/// unpacks what it saved, as the op's formula checks).
fn wrapped_node_error(m: &mut super::state::Machine, w: NodeId) -> Option<Diagnostic> {
    let (missing, span) = (m.nodes[w].not_implemented, m.nodes[w].span);
    if let Some(op) = missing.filter(|op| !op.after_unpack()) {
        return Some(no_derivative(op, span));
    }
    stale_saved(m, w).or_else(|| missing.map(|op| no_derivative(op, span)))
}

/// The error of unpacking a tensor node `n` saved that was modified in
/// place since.
fn stale_saved(m: &mut super::state::Machine, n: NodeId) -> Option<Diagnostic> {
    // The generated node unpacks its saved inputs in the order of their
    // names, then its saved outputs (gen_autograd_functions.py sorts them).
    let mut order: smallvec::SmallVec<[usize; 4]> = (0..m.nodes[n].saved.len()).collect();
    if order.len() > 1 {
        let saved = &m.nodes[n].saved;
        // (outer's node is mul's, whose `other` is outer's `vec2`.)
        let name = |role: &'static str| if role == "vec2" { "other" } else { role };
        order.sort_by_key(|&k| (saved[k].role == "result", name(saved[k].role)));
    }
    for k in order {
        let s = m.nodes[n].saved[k].clone();
        if s.original {
            // SavedVariable::unpack reads the tensor's grad_fn first: a view
            // whose base was written since regenerates its node, which
            // raises for views that forbid it (handle_view_on_rebase).
            if let Err(e) = m.grad_fn(s.tensor) {
                let node = &m.nodes[n];
                return Some(op_error(e, m.tensors[s.tensor].origin).with_secondary(
                    node.span,
                    format!("`{}` saved its {} here for backward", node.name, s.role),
                ));
            }
        }
        let node = &m.nodes[n];
        if s.detachable && m.tensors[s.tensor].grad_fn.is_none() {
            // SavedVariable::unpack checks this before the version.
            let d = Diagnostic::error(
                "other",
                "Trying to use a saved tensor that has been detached in-place, i.e. with .detach_().This is not supported, please use out-of-place `.detach()` instead",
                node.span,
            )
            .with_label(format!("`{}` saved its {} here for backward", node.name, s.role))
            .with_help("use the out-of-place `.detach()`, or detach after the backward");
            return Some(d);
        }
        let now = m.versions[s.version];
        if now != s.saved_version {
            let t = &m.tensors[s.tensor];
            // SavedVariable::unpack names the node of the tensor: an
            // original's grad_fn now (a stale view's regenerated one), none
            // for a leaf; for an output, the node that saved it. (An output
            // that cannot require grad is a leaf: saved as it is.)
            let leaf_output = !s.original && !t.dtype.can_require_grad();
            let owner = if s.original || leaf_output {
                m.grad_fn(s.tensor)
                    .ok()
                    .flatten()
                    .map(|g| m.nodes[g].name.as_str())
            } else {
                Some(node.name.as_str())
            };
            let t = &m.tensors[s.tensor];
            let sizes = match &s.geometry {
                Some(g) if !leaf_output => g.sizes(),
                _ => t.sizes(),
            };
            let which = owner
                .map(|name| format!(", which is output {} of {name},", t.output_index))
                .unwrap_or_default();
            let message = format!(
                "one of the variables needed for gradient computation has been modified by an inplace operation: [{} {}]{which} is at version {now}; expected version {} instead. Hint: enable anomaly detection to find the operation that failed to compute its gradient, with torch.autograd.set_detect_anomaly(True).",
                t.dtype.legacy_type_name(),
                crate::ops::shape::show(sizes),
                s.saved_version
            );
            let node = &m.nodes[n];
            let saved_label = format!("`{}` saved its {} here for backward", node.name, s.role);
            let d = match m.version_spans[s.version] {
                Some(at) if at != node.span => Diagnostic::error("saved-tensor-modified", message, at)
                    .with_label("modified in place here, before backward")
                    .with_secondary(node.span, saved_label),
                _ => Diagnostic::error("saved-tensor-modified", message, node.span).with_label(saved_label),
            }
            .with_help("clone the tensor before modifying it in place (`y = y.clone()`), or use the out-of-place op");
            return Some(d);
        }
    }
    None
}
