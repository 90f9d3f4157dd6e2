//! Which tensors PyTorch's autograd saves for backward, per op.
//!
//! This module owns the data behind the `saved-tensor-modified` hazard ("one
//! of the variables needed for gradient computation has been modified by an
//! inplace operation"): for every differentiable op of the core set, the
//! inputs and outputs that its autograd node keeps as `SavedVariable`s, and the
//! condition under which it keeps them. A saved tensor records its version
//! counter at save time; backward fails when the counter (shared by a tensor,
//! its views and its base) has moved since.
//!
//! Source: torch 2.7's `tools/autograd/derivatives.yaml` and the kernels that
//! `gen_variable_type.py` generates from it (`VariableType*.cpp`), checked op
//! by op against torch 2.7.0 on CPU (mutate each input and each output after
//! the op, for every requires-grad combination, and run backward).
//!
//! # The rules (from `gen_variable_type.py`, torch 2.7)
//!
//! * Nothing is saved unless a node is created: grad mode is on and at least
//!   one differentiable input requires grad. Every condition below is on top of
//!   that.
//! * Outputs named in a formula (`result`, `result1`, …) are saved
//!   unconditionally once the node exists.
//! * An input named in a formula is saved under the guard
//!   `grad_fn->should_compute_output(k)`, i.e. "input k requires grad", only
//!   when all of these hold (`guard_for` in the codegen): the op has no
//!   `Tensor[]` argument with a derivative; more than one argument has a
//!   derivative; the saved argument is a plain `Tensor` (not `Tensor?`, not a
//!   list); and exactly one formula uses it, a single-input formula (or one
//!   that wraps it in `wrap_opt_if(arg, cond)`). Then `k` is that formula's
//!   input. Otherwise the input is saved whenever the node exists
//!   ([`When::Always`]). So `mul` saves `other` only if `self` requires grad
//!   and `self` only if `other` does; `div` saves `other` always (both formulas
//!   use it) and `self` only if `other` requires grad.
//! * In-place variants reuse the out-of-place formula. If it uses `self`, the
//!   codegen saves a *clone* taken before the mutation (`original_self =
//!   self.clone()`, under the same guard), so the mutated tensor itself is
//!   never saved as an input: in-place entries never list `Input(0)`. If it
//!   uses `result`, the codegen saves `self` after the mutation as an output
//!   (`SavedVariable(self, true, self.is_view())`): `sigmoid_`, `exp_`,
//!   `relu_`, … list `Output(0)`, which is `self`. `elu_` and `leaky_relu_`
//!   have their own formulas, which use `result`.
//! * An in-place op that saves one of its other arguments at version `v` and
//!   then bumps the version of `self` fails backward by itself when that
//!   argument *is* `self` or shares its version counter: `y.mul_(y)`,
//!   `y.div_(y)`, `y.pow_(y)`, `y.addcmul_(y, z)`, `y.clamp_min_(y)` all fail,
//!   `y.add_(y)` does not (checked on torch 2.7).
//! * View ops save sizes, strides or nothing, never a tensor.
//! * CompositeImplicitAutograd ops have no node of their own: what is saved is
//!   what the ops they decompose into save, and a saved tensor may then be a
//!   view of an input (same version counter: same hazard) or a private copy
//!   (no hazard). [`OpSaves::composite`] says what an op decomposes into.
//!
//! # Positions
//!
//! `Saved::Input(i, _)` and `When::*(i)` use the position of the argument in
//! the aten schema ([`OpSaves::args`]), which is not always the Python one:
//! `where(condition, self, other)` has the condition at 0, `embedding(weight,
//! indices)` swaps `F.embedding(input, weight)`. An argument of type
//! `Tensor[]` / `Tensor?[]` (the `indices` of `index`/`index_put`) stands for
//! every tensor in the list. An input that is a Python number is never a
//! tensor anyone can modify, so an entry for it is moot.

/// Which tensors an autograd node saves for backward.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Saved {
    /// The op's input argument at this position (0 = self) is saved, when `when` holds.
    Input(usize, When),
    /// The op's result (output index) is saved, when `when` holds. For an
    /// in-place op, output 0 is `self` after the mutation.
    Output(usize, When),
}

impl Saved {
    /// The condition under which the tensor is saved.
    pub fn when(self) -> When {
        match self {
            Saved::Input(_, w) | Saved::Output(_, w) => w,
        }
    }
}

/// The condition under which a tensor is saved (on top of "a node is created").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum When {
    /// Whenever the node exists.
    Always,
    /// Only when the input at this position requires grad (e.g. mul saves
    /// `other` only if `self` needs a gradient, since grad_self = grad * other).
    InputRequiresGrad(usize),
    /// Only when the argument at this position is a Tensor (not a Python
    /// number): `pow(self, exponent)` saves its result only for a tensor
    /// exponent (`pow.Tensor_Tensor`, `pow.Scalar`), not for
    /// `pow.Tensor_Scalar`.
    ArgIsTensor(usize),
}

impl When {
    /// Evaluate the condition. `requires_grad(i)`: does the argument at aten
    /// position `i` require grad (false for a non-tensor or an absent
    /// optional); `is_tensor(i)`: is it a Tensor.
    pub fn holds(
        self,
        requires_grad: impl Fn(usize) -> bool,
        is_tensor: impl Fn(usize) -> bool,
    ) -> bool {
        match self {
            When::Always => true,
            When::InputRequiresGrad(i) => requires_grad(i),
            When::ArgIsTensor(i) => is_tensor(i),
        }
    }
}

/// How far an entry can be trusted for a warning.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Exactness {
    /// Exactly what eager PyTorch saves, under the stated conditions.
    Exact,
    /// A composite whose internal `reshape`/`expand` may copy: a listed input
    /// is saved as itself or a view of it (same version counter) only when
    /// that reshape is a view; otherwise a private copy is saved. Decide with
    /// [`matmul_saved`] / [`linear_saved`] / [`conv_same_pads_input`]; without
    /// the layout, a warning would not be certain.
    LayoutDependent,
    /// Not modelled (`einsum`: the saved operands are permuted/reshaped views
    /// or copies depending on the equation and the layouts). No warning can be
    /// certain; `saved` is empty.
    Undetermined,
}

/// One row of the table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OpSaves {
    /// aten name without the trailing `_`, optionally `name.overload` where
    /// overloads save different things (`max`, `max.dim`, `max.other`), or a
    /// pseudo-overload (`pad.reflect`) for a mode argument.
    pub op: &'static str,
    /// The in-place variant (`name_`).
    pub inplace: bool,
    /// The aten schema's argument names; `Saved::Input` and `When` positions index this.
    pub args: &'static [&'static str],
    /// What the node (or, for a composite, the nodes it decomposes into) saves
    /// that shares a version counter with an argument or result.
    pub saved: &'static [Saved],
    pub exactness: Exactness,
    /// For a CompositeImplicitAutograd op: what it decomposes into.
    pub composite: Option<&'static str>,
    /// Anything else worth knowing.
    pub note: &'static str,
}

use Exactness::{Exact, LayoutDependent, Undetermined};
use Saved::{Input as In, Output as Out};
use When::{Always as A, ArgIsTensor as IsT, InputRequiresGrad as Rg};

const fn row(
    op: &'static str,
    inplace: bool,
    args: &'static [&'static str],
    saved: &'static [Saved],
) -> OpSaves {
    OpSaves {
        op,
        inplace,
        args,
        saved,
        exactness: Exact,
        composite: None,
        note: "",
    }
}

const fn comp(
    op: &'static str,
    inplace: bool,
    args: &'static [&'static str],
    saved: &'static [Saved],
    composite: &'static str,
) -> OpSaves {
    OpSaves {
        op,
        inplace,
        args,
        saved,
        exactness: Exact,
        composite: Some(composite),
        note: "",
    }
}

const fn noted(mut r: OpSaves, note: &'static str) -> OpSaves {
    r.note = note;
    r
}

const fn exactness(mut r: OpSaves, e: Exactness) -> OpSaves {
    r.exactness = e;
    r
}

const NONE: &[Saved] = &[];
const S: &[&str] = &["self"];
const S_O: &[&str] = &["self", "other"];
const S_O_A: &[&str] = &["self", "other", "alpha"];
const SELF: &[Saved] = &[In(0, A)];
const RESULT: &[Saved] = &[Out(0, A)];
const SELF_RESULT: &[Saved] = &[In(0, A), Out(0, A)];
const BOTH: &[Saved] = &[In(0, A), In(1, A)];
/// Bilinear: each operand is saved when the other requires grad.
///
/// Each row lists its saved tensors in the order the generated node
/// declares and unpacks them (first use in derivatives.yaml's formulas,
/// taken in order): the first formula of a bilinear op uses the second
/// operand, so that one comes first (`MulBackward0` unpacks `other`, then
/// `self`). Which error backward raises first depends on it.
const CROSS01: &[Saved] = &[In(1, Rg(0)), In(0, Rg(1))];
/// `addmm`-like: `self` is added, the two factors at 1 and 2 cross-saved.
const CROSS12: &[Saved] = &[In(2, Rg(1)), In(1, Rg(2))];

/// The table. Keys are unique per (op, inplace).
pub static TABLE: &[OpSaves] = &[
    // ---------------------------------------------------------- pointwise, binary
    row("add", false, S_O_A, NONE),
    row("add", true, S_O_A, NONE),
    row("sub", false, S_O_A, NONE),
    row("sub", true, S_O_A, NONE),
    noted(row("rsub", false, S_O_A, NONE), "`2 - x`"),
    row("mul", false, S_O, CROSS01),
    noted(
        row("mul", true, S_O, &[In(1, Rg(0))]),
        "self is saved as a clone of its pre-op value when other requires grad; `y.mul_(y)` fails backward by itself",
    ),
    noted(
        row("div", false, S_O, &[In(1, A), In(0, Rg(1))]),
        "both formulas use `other`, so it is saved whenever the node exists; also div.Tensor_mode",
    ),
    noted(row("div", true, S_O, &[In(1, A)]), "`y.div_(y)` fails backward by itself"),
    comp("true_divide", false, S_O, &[In(1, A), In(0, Rg(1))], "div"),
    comp("true_divide", true, S_O, &[In(1, A)], "div_"),
    noted(
        comp("rdiv", false, S_O, NONE, "reciprocal(self) * other"),
        "Python `2 / x` (`__rtruediv__`): saves only the internal reciprocal",
    ),
    noted(
        row("floor_divide", false, S_O, NONE),
        "no derivative: the result gets a NotImplemented node, backward raises \
         \"derivative for aten::floor_divide is not implemented\" (see backward_not_implemented)",
    ),
    noted(row("floor_divide", true, S_O, NONE), "no derivative (see floor_divide)"),
    noted(
        row("remainder", false, S_O, &[In(0, Rg(1)), In(1, Rg(1))]),
        "only the `other` formula uses tensors; remainder.Scalar saves nothing",
    ),
    row("remainder", true, S_O, &[In(1, Rg(1))]),
    noted(
        row("pow", false, &["self", "exponent"], &[In(0, A), In(1, A), Out(0, IsT(1))]),
        "Tensor_Scalar saves self; Tensor_Tensor saves self, exponent, result; Scalar (`2 ** x`) saves exponent, result",
    ),
    noted(
        row("pow", true, &["self", "exponent"], &[In(1, A), Out(0, IsT(1))]),
        "pow_.Scalar saves only a clone of self; pow_.Tensor also the exponent and self after",
    ),
    noted(
        row("fmod", false, S_O, &[In(0, Rg(1)), In(1, Rg(1))]),
        "as remainder: only the `other` formula uses tensors; fmod.Scalar saves nothing",
    ),
    row("fmod", true, S_O, &[In(1, Rg(1))]),
    noted(
        row("atan2", false, S_O, BOTH),
        "one formula for both inputs (atan2_backward), so both are saved whenever the node exists",
    ),
    row("atan2", true, S_O, &[In(1, A)]),
    row("maximum", false, S_O, BOTH),
    row("minimum", false, S_O, BOTH),
    comp("max.other", false, S_O, BOTH, "maximum"),
    comp("min.other", false, S_O, BOTH, "minimum"),
    noted(
        row("lerp", false, &["self", "end", "weight"], &[In(2, A), In(1, Rg(2)), In(0, Rg(2))]),
        "lerp.Scalar (number weight) saves nothing",
    ),
    row("lerp", true, &["self", "end", "weight"], &[In(2, A), In(1, Rg(2))]),
    noted(
        row("where", false, &["condition", "self", "other"], &[In(0, A)]),
        "where.ScalarSelf/ScalarOther/Scalar decompose to where.self with wrapped numbers",
    ),
    row("masked_fill", false, &["self", "mask", "value"], &[In(1, A)]),
    row("masked_fill", true, &["self", "mask", "value"], &[In(1, A)]),
    row("addcmul", false, &["self", "tensor1", "tensor2", "value"], CROSS12),
    row("addcmul", true, &["self", "tensor1", "tensor2", "value"], CROSS12),
    row("addcdiv", false, &["self", "tensor1", "tensor2", "value"], &[In(2, A), In(1, Rg(2))]),
    row("addcdiv", true, &["self", "tensor1", "tensor2", "value"], &[In(2, A), In(1, Rg(2))]),
    // ---------------------------------------------------------- pointwise, unary
    row("neg", false, S, NONE),
    row("neg", true, S, NONE),
    row("abs", false, S, SELF),
    row("abs", true, S, NONE),
    row("exp", false, S, RESULT),
    row("exp", true, S, RESULT),
    row("log", false, S, SELF),
    row("log", true, S, NONE),
    row("log1p", false, S, SELF),
    row("log1p", true, S, NONE),
    row("sqrt", false, S, RESULT),
    row("sqrt", true, S, RESULT),
    row("rsqrt", false, S, RESULT),
    row("rsqrt", true, S, RESULT),
    row("exp2", false, S, RESULT),
    row("exp2", true, S, RESULT),
    row("expm1", false, S, RESULT),
    row("expm1", true, S, RESULT),
    row("log2", false, S, SELF),
    row("log2", true, S, NONE),
    row("log10", false, S, SELF),
    row("log10", true, S, NONE),
    row("asin", false, S, SELF),
    row("asin", true, S, NONE),
    row("acos", false, S, SELF),
    row("acos", true, S, NONE),
    row("atan", false, S, SELF),
    row("atan", true, S, NONE),
    row("sinh", false, S, SELF),
    row("sinh", true, S, NONE),
    row("cosh", false, S, SELF),
    row("cosh", true, S, NONE),
    row("erf", false, S, SELF),
    row("erf", true, S, NONE),
    row("mish", false, S, SELF),
    comp("selu", false, S, SELF, "elu(self, alpha, scale)"),
    comp("selu", true, S, RESULT, "elu_(self, alpha, scale): elu_'s own formula, on the result"),
    comp("relu6", false, S, SELF, "hardtanh(self, 0, 6)"),
    row("hardsigmoid", false, S, SELF),
    row("hardswish", false, S, SELF),
    noted(row("logsigmoid", false, S, SELF), "log_sigmoid_forward; its buffer is internal"),
    row("sin", false, S, SELF),
    row("sin", true, S, NONE),
    row("cos", false, S, SELF),
    row("cos", true, S, NONE),
    row("tan", false, S, RESULT),
    row("tan", true, S, RESULT),
    row("tanh", false, S, RESULT),
    row("tanh", true, S, RESULT),
    row("sigmoid", false, S, RESULT),
    row("sigmoid", true, S, RESULT),
    row("reciprocal", false, S, RESULT),
    row("reciprocal", true, S, RESULT),
    noted(row("relu", false, S, RESULT), "also F.relu"),
    noted(row("relu", true, S, RESULT), "also F.relu(x, inplace=True): saves x after the op"),
    noted(row("gelu", false, &["self", "approximate"], SELF), "both approximations"),
    row("gelu", true, &["self", "approximate"], NONE),
    row("silu", false, S, SELF),
    noted(row("silu", true, S, NONE), "F.silu(x, inplace=True)"),
    row("softplus", false, &["self", "beta", "threshold"], SELF),
    noted(
        row("elu", false, &["self", "alpha", "scale", "input_scale"], SELF),
        "the out-of-place formula uses self whatever alpha is",
    ),
    noted(
        row("elu", true, &["self", "alpha", "scale", "input_scale"], RESULT),
        "elu_ has its own formula, on the result (F.elu(x, inplace=True))",
    ),
    row("leaky_relu", false, &["self", "negative_slope"], SELF),
    noted(
        row("leaky_relu", true, &["self", "negative_slope"], RESULT),
        "leaky_relu_ has its own formula, on the result",
    ),
    row("hardtanh", false, &["self", "min_val", "max_val"], SELF),
    row("hardtanh", true, &["self", "min_val", "max_val"], NONE),
    noted(
        row("clamp", false, &["self", "min", "max"], &[In(0, A), In(1, A), In(2, A)]),
        "clamp (number bounds) saves self; clamp.Tensor also the tensor bounds",
    ),
    row("clamp", true, &["self", "min", "max"], &[In(1, A), In(2, A)]),
    row("clamp_min", false, &["self", "min"], BOTH),
    row("clamp_min", true, &["self", "min"], &[In(1, A)]),
    row("clamp_max", false, &["self", "max"], BOTH),
    row("clamp_max", true, &["self", "max"], &[In(1, A)]),
    row("floor", false, S, NONE),
    row("floor", true, S, NONE),
    row("ceil", false, S, NONE),
    row("ceil", true, S, NONE),
    noted(row("round", false, S, NONE), "also round.decimals"),
    row("round", true, S, NONE),
    row("trunc", false, S, NONE),
    row("trunc", true, S, NONE),
    row("sign", false, S, NONE),
    row("sign", true, S, NONE),
    comp("square", false, S, SELF, "pow(self, 2)"),
    comp("square", true, S, NONE, "pow_(self, 2)"),
    // ---------------------------------------------------------- not differentiable
    noted(row("eq", false, S_O, NONE), "bool result: not differentiable"),
    noted(row("ne", false, S_O, NONE), "bool result: not differentiable"),
    noted(row("lt", false, S_O, NONE), "bool result: not differentiable"),
    noted(row("le", false, S_O, NONE), "bool result: not differentiable"),
    noted(row("gt", false, S_O, NONE), "bool result: not differentiable"),
    noted(row("ge", false, S_O, NONE), "bool result: not differentiable"),
    noted(row("logical_and", false, S_O, NONE), "not differentiable"),
    noted(row("logical_or", false, S_O, NONE), "not differentiable"),
    noted(row("logical_not", false, S, NONE), "not differentiable"),
    noted(row("isnan", false, S, NONE), "not differentiable"),
    noted(row("isfinite", false, S, NONE), "not differentiable"),
    noted(row("argmax", false, &["self", "dim", "keepdim"], NONE), "not differentiable"),
    noted(row("argmin", false, &["self", "dim", "keepdim"], NONE), "not differentiable"),
    noted(row("argsort", false, &["self", "dim", "descending"], NONE), "not differentiable"),
    noted(row("all", false, S, NONE), "not differentiable"),
    noted(row("any", false, S, NONE), "not differentiable"),
    // ---------------------------------------------------------- reductions
    noted(row("sum", false, &["self", "dim", "keepdim", "dtype"], NONE), "sizes only"),
    noted(row("mean", false, &["self", "dim", "keepdim", "dtype"], NONE), "sizes only"),
    row("nansum", false, &["self", "dim", "keepdim", "dtype"], SELF),
    comp("nanmean", false, &["self", "dim", "keepdim", "dtype"], SELF, "nansum(self) / count of non-NaN"),
    noted(row("prod", false, &["self", "dim", "keepdim", "dtype"], SELF_RESULT), "full and dim_int"),
    row("amax", false, &["self", "dim", "keepdim"], SELF_RESULT),
    row("amin", false, &["self", "dim", "keepdim"], SELF_RESULT),
    noted(row("max", false, S, SELF_RESULT), "full reduction `x.max()`; see max.dim, max.other"),
    noted(
        row("max.dim", false, &["self", "dim", "keepdim"], &[Out(1, A)]),
        "saves the indices (output 1), not the values",
    ),
    noted(row("min", false, S, SELF_RESULT), "full reduction `x.min()`; see min.dim, min.other"),
    noted(
        row("min.dim", false, &["self", "dim", "keepdim"], &[Out(1, A)]),
        "saves the indices (output 1), not the values",
    ),
    noted(
        row("std", false, &["self", "dim", "correction", "keepdim"], SELF_RESULT),
        "every overload reaches std.correction",
    ),
    noted(
        row("var", false, &["self", "dim", "correction", "keepdim"], SELF),
        "every overload reaches var.correction; the result is not saved",
    ),
    noted(
        comp("norm", false, &["self", "p", "dim", "keepdim", "dtype"], SELF_RESULT, "linalg_vector_norm"),
        "torch.norm / Tensor.norm with a numeric p or 'fro' call linalg_vector_norm (saves self and result); \
         the aten norm.* overloads save the same; p='nuc' is norm.nuc",
    ),
    noted(
        comp("norm.nuc", false, &["self", "p", "dim", "keepdim", "dtype"], NONE, "linalg_matrix_norm: svdvals, then sum"),
        "p='nuc': only the internal singular values are kept (checked on torch 2.7)",
    ),
    row("linalg_vector_norm", false, &["self", "ord", "dim", "keepdim", "dtype"], SELF_RESULT),
    row("logsumexp", false, &["self", "dim", "keepdim"], SELF_RESULT),
    row("cumsum", false, &["self", "dim", "dtype"], NONE),
    row("cumsum", true, &["self", "dim", "dtype"], NONE),
    row("cumprod", false, &["self", "dim", "dtype"], SELF_RESULT),
    row("cumprod", true, &["self", "dim", "dtype"], RESULT),
    comp("softmax", false, &["self", "dim", "dtype"], RESULT, "_softmax (after a dtype cast if dtype is given)"),
    comp("log_softmax", false, &["self", "dim", "dtype"], RESULT, "_log_softmax (after a dtype cast if dtype is given)"),
    row("_softmax", false, &["self", "dim", "half_to_float"], RESULT),
    row("_log_softmax", false, &["self", "dim", "half_to_float"], RESULT),
    noted(
        row("sort", false, &["self", "dim", "descending"], &[Out(1, A)]),
        "saves the indices (output 1); also sort.stable",
    ),
    noted(
        row("topk", false, &["self", "k", "dim", "largest", "sorted"], &[Out(1, A)]),
        "saves the indices (output 1)",
    ),
    // ---------------------------------------------------------- linear algebra
    row("mm", false, &["self", "mat2"], CROSS01),
    row("bmm", false, &["self", "mat2"], CROSS01),
    row("mv", false, &["self", "vec"], CROSS01),
    row("dot", false, &["self", "tensor"], CROSS01),
    noted(
        comp("outer", false, &["self", "vec2"], CROSS01, "self.reshape({-1, 1}) * vec2 (mul; the reshape of a 1-D tensor is always a view)"),
        "",
    ),
    noted(row("addmm", false, &["self", "mat1", "mat2", "beta", "alpha"], CROSS12), "self (the added term) is never saved"),
    row("addmm", true, &["self", "mat1", "mat2", "beta", "alpha"], CROSS12),
    row("baddbmm", false, &["self", "batch1", "batch2", "beta", "alpha"], CROSS12),
    row("baddbmm", true, &["self", "batch1", "batch2", "beta", "alpha"], CROSS12),
    exactness(
        noted(
            comp("matmul", false, S_O, CROSS01, "dot / mv / mm / folded mm or mv / bmm on expanded+reshaped operands"),
            "the operand kept for the other's gradient is the input itself or a view of it, except when \
             matmul's fold or batch reshape copies it (broadcast batch dims, non-viewable strides, \
             2-D @ N-D with the 2-D operand requiring grad): use matmul_saved",
        ),
        LayoutDependent,
    ),
    exactness(
        noted(
            comp(
                "linear",
                false,
                &["input", "weight", "bias"],
                CROSS01,
                "addmm(bias, input, weight.t()) for 2-D input with bias (or 3-D contiguous input, viewed 2-D); else matmul(input, weight.t()) (+ bias)",
            ),
            "bias is never saved; which of input / weight are saved as aliases is matmul_saved(input, weight.t()): use linear_saved",
        ),
        LayoutDependent,
    ),
    exactness(
        noted(
            comp("einsum", false, &["equation", "tensors", "path"], NONE, "permute/unsqueeze/sum, then pairwise bmm or mul on permuted+reshaped operands"),
            "with two operands each is typically saved (as a view) when the other requires grad, but the \
             internal reshape may copy and single-operand terms are summed first: not modelled",
        ),
        Undetermined,
    ),
    // ---------------------------------------------------------- copies and shape-making ops
    row("clone", false, &["self", "memory_format"], NONE),
    noted(row("cat", false, &["tensors", "dim"], NONE), "sizes and dtypes only; also concat/concatenate"),
    comp("stack", false, &["tensors", "dim"], NONE, "cat of unsqueezed inputs"),
    row("repeat", false, &["self", "repeats"], NONE),
    noted(
        comp("repeat_interleave", false, &["self", "repeats", "dim", "output_size"], NONE, "index_select with an internal index / expand+clone"),
        "a tensor `repeats` is not saved either (an internal index derived from it is)",
    ),
    comp("tile", false, &["self", "dims"], NONE, "repeat"),
    row("flip", false, &["self", "dims"], NONE),
    row("roll", false, &["self", "shifts", "dims"], NONE),
    row("index_select", false, &["self", "dim", "index"], &[In(2, A)]),
    noted(
        row("gather", false, &["self", "dim", "index", "sparse_grad"], &[In(0, A), In(2, A)]),
        "self is saved too (gather_backward takes it)",
    ),
    noted(row("scatter", false, &["self", "dim", "index", "src"], &[In(2, A)]), "scatter.src and scatter.value"),
    row("scatter", true, &["self", "dim", "index", "src"], &[In(2, A)]),
    row("scatter_add", false, &["self", "dim", "index", "src"], &[In(2, Rg(3))]),
    row("scatter_add", true, &["self", "dim", "index", "src"], &[In(2, Rg(3))]),
    noted(row("take", false, &["self", "index"], &[In(0, A), In(1, A)]), "self is saved too"),
    noted(
        row("index", false, &["self", "indices"], &[In(1, A)]),
        "advanced indexing `x[idx]`: every index tensor given (long or bool) is saved; a Python list index \
         becomes a fresh tensor nobody else holds",
    ),
    row("tril", false, &["self", "diagonal"], NONE),
    row("tril", true, &["self", "diagonal"], NONE),
    row("triu", false, &["self", "diagonal"], NONE),
    row("triu", true, &["self", "diagonal"], NONE),
    noted(
        comp("pad", false, &["self", "pad", "mode", "value"], NONE, "constant_pad_nd (mode='constant')"),
        "F.pad with the default mode; other modes: pad.reflect, pad.replicate, pad.circular",
    ),
    row("constant_pad_nd", false, &["self", "pad", "value"], NONE),
    comp("pad.reflect", false, &["self", "pad", "mode", "value"], SELF, "reflection_pad{1,2,3}d"),
    comp("pad.replicate", false, &["self", "pad", "mode", "value"], SELF, "replication_pad{1,2,3}d"),
    comp("pad.circular", false, &["self", "pad", "mode", "value"], NONE, "slices and cat"),
    row("reflection_pad1d", false, &["self", "padding"], SELF),
    row("reflection_pad2d", false, &["self", "padding"], SELF),
    row("reflection_pad3d", false, &["self", "padding"], SELF),
    row("replication_pad1d", false, &["self", "padding"], SELF),
    row("replication_pad2d", false, &["self", "padding"], SELF),
    row("replication_pad3d", false, &["self", "padding"], SELF),
    noted(
        comp("dropout", false, &["input", "p", "train"], NONE, "CPU: input * (bernoulli mask / (1-p)); CUDA: native_dropout"),
        "only the internal mask is saved. With p == 0 or train=False (and for an empty input) \
         F.dropout returns its input itself, not a copy",
    ),
    comp("dropout", true, &["input", "p", "train"], NONE, "input.mul_(mask)"),
    noted(
        comp(
            "layer_norm",
            false,
            &["input", "normalized_shape", "weight", "bias", "eps", "cudnn_enable"],
            &[In(0, A), In(2, A), In(3, A)],
            "native_layer_norm",
        ),
        "input, weight and bias (optional tensors: no guard) plus internal mean/rstd; bias too",
    ),
    noted(
        row("embedding", false, &["weight", "indices", "padding_idx", "scale_grad_by_freq", "sparse"], &[In(1, A)]),
        "F.embedding(input, weight) calls embedding(weight, input): the saved indices are F.embedding's first argument",
    ),
    noted(
        comp(
            "conv2d",
            false,
            &["input", "weight", "bias", "stride", "padding", "dilation", "groups"],
            &[In(0, A), In(1, A)],
            "convolution",
        ),
        "numeric padding; a multi-input formula, so no requires-grad guard; bias is not saved",
    ),
    comp(
        "conv2d.padded",
        false,
        &["input", "weight", "bias", "stride", "padding", "dilation", "groups"],
        &[In(1, A)],
        "padding='same' that pads the input first (conv_same_pads_input): convolution saves the padded copy and the weight",
    ),
    exactness(
        noted(
            comp(
                "conv2d.padding",
                false,
                &["input", "weight", "bias", "stride", "padding", "dilation", "groups"],
                &[In(0, A), In(1, A)],
                "_convolution_mode: convolution, after constant_pad_nd of the input when 'same' needs uneven padding",
            ),
            "string padding: input is saved unless conv_same_pads_input (then a padded copy is)",
        ),
        LayoutDependent,
    ),
    row("convolution", false, &["input", "weight", "bias", "stride", "padding", "dilation", "transposed", "output_padding", "groups"], &[In(0, A), In(1, A)]),
    noted(row("masked_select", false, &["self", "mask"], &[In(0, A), In(1, A)]), "self is saved too"),
    // ---------------------------------------------------------- in-place data ops (no functional twin above)
    noted(row("zero", true, S, NONE), ""),
    noted(row("fill", true, &["self", "value"], NONE), "fill_.Scalar and fill_.Tensor"),
    noted(row("copy", true, &["self", "src", "non_blocking"], NONE), "CopyBackwards keeps src's options only; also `x[int or slice] = v`"),
    noted(
        row("index_add", false, &["self", "dim", "index", "source", "alpha"], &[In(2, Rg(3)), In(3, Rg(3))]),
        "source is saved (for its shape) when source requires grad",
    ),
    row("index_add", true, &["self", "dim", "index", "source", "alpha"], &[In(2, Rg(3)), In(3, Rg(3))]),
    row("index_copy", false, &["self", "dim", "index", "source"], &[In(2, A), In(3, Rg(3))]),
    row("index_copy", true, &["self", "dim", "index", "source"], &[In(2, A), In(3, Rg(3))]),
    row("index_fill", false, &["self", "dim", "index", "value"], &[In(2, A)]),
    row("index_fill", true, &["self", "dim", "index", "value"], &[In(2, A)]),
    noted(
        row("index_put", false, &["self", "indices", "values", "accumulate"], &[In(1, A)]),
        "the index tensors are saved, not values",
    ),
    noted(
        row("index_put", true, &["self", "indices", "values", "accumulate"], &[In(1, A)]),
        "also `x[tensor_index] = v` (with a number or tensor v, a bool mask included): the index tensors are saved",
    ),
    row("normal", true, &["self", "mean", "std", "generator"], NONE),
    row("uniform", true, &["self", "from", "to", "generator"], NONE),
    row("bernoulli", true, &["self", "p", "generator"], NONE),
    row("random", true, &["self", "from", "to", "generator"], NONE),
    row("exponential", true, &["self", "lambd", "generator"], NONE),
    // ---------------------------------------------------------- views and view-or-copy ops: sizes only
    row("view", false, &["self", "size"], NONE),
    row("view_as", false, S_O, NONE),
    row("as_strided", false, &["self", "size", "stride", "storage_offset"], NONE),
    row("expand", false, &["self", "size", "implicit"], NONE),
    row("expand_as", false, S_O, NONE),
    row("broadcast_to", false, &["self", "size"], NONE),
    row("transpose", false, &["self", "dim0", "dim1"], NONE),
    row("t", false, S, NONE),
    row("permute", false, &["self", "dims"], NONE),
    row("movedim", false, &["self", "source", "destination"], NONE),
    row("squeeze", false, &["self", "dim"], NONE),
    row("unsqueeze", false, &["self", "dim"], NONE),
    row("flatten", false, &["self", "start_dim", "end_dim"], NONE),
    row("unflatten", false, &["self", "dim", "sizes"], NONE),
    row("narrow", false, &["self", "dim", "start", "length"], NONE),
    row("select", false, &["self", "dim", "index"], NONE),
    row("slice", false, &["self", "dim", "start", "end", "step"], NONE),
    row("diagonal", false, &["self", "offset", "dim1", "dim2"], NONE),
    row("unfold", false, &["self", "dimension", "size", "step"], NONE),
    row("detach", false, S, NONE),
    row("alias", false, S, NONE),
    row("real", false, S, NONE),
    row("imag", false, S, NONE),
    row("view_as_real", false, S, NONE),
    row("view_as_complex", false, S, NONE),
    row("numpy_T", false, S, NONE),
    row("mT", false, S, NONE),
    row("mH", false, S, NONE),
    row("unbind", false, &["self", "dim"], NONE),
    row("split", false, &["self", "split_size", "dim"], NONE),
    row("split_with_sizes", false, &["self", "split_sizes", "dim"], NONE),
    row("chunk", false, &["self", "chunks", "dim"], NONE),
    row("tensor_split", false, &["self", "indices_or_sections", "dim"], NONE),
    row("reshape", false, &["self", "shape"], NONE),
    row("reshape_as", false, S_O, NONE),
    row("contiguous", false, &["self", "memory_format"], NONE),
    row("to", false, &["self", "dtype"], NONE),
    row("type_as", false, S_O, NONE),
    row("_to_copy", false, S, NONE),
    // ---------------------------------------------------------- in-place metadata ops
    row("transpose", true, &["self", "dim0", "dim1"], NONE),
    row("t", true, S, NONE),
    row("squeeze", true, &["self", "dim"], NONE),
    row("unsqueeze", true, &["self", "dim"], NONE),
    row("as_strided", true, &["self", "size", "stride", "storage_offset"], NONE),
    row("resize", true, &["self", "size"], NONE),
    row("resize_as", true, &["self", "the_template"], NONE),
    row("detach", true, S, NONE),
    row("requires_grad", true, &["self", "requires_grad"], NONE),
    noted(row("set", true, &["self", "source"], NONE), "not differentiable (NotImplemented node)"),
    // ---------------------------------------------------------- creation from a tensor: not differentiable
    row("zeros_like", false, S, NONE),
    row("ones_like", false, S, NONE),
    row("empty_like", false, S, NONE),
    row("full_like", false, &["self", "fill_value"], NONE),
    row("rand_like", false, S, NONE),
    row("randn_like", false, S, NONE),
    row("randint_like", false, &["self", "high"], NONE),
    row("new_zeros", false, &["self", "size"], NONE),
    row("new_ones", false, &["self", "size"], NONE),
    row("new_empty", false, &["self", "size"], NONE),
    row("new_full", false, &["self", "size", "fill_value"], NONE),
];

/// Spellings that reach the same aten op.
const ALIASES: &[(&str, &str)] = &[
    ("concat", "cat"),
    ("concatenate", "cat"),
    ("multiply", "mul"),
    ("divide", "div"),
    ("subtract", "sub"),
    ("absolute", "abs"),
    ("negative", "neg"),
    ("clip", "clamp"),
    ("fix", "trunc"),
    ("swapaxes", "transpose"),
    ("swapdims", "transpose"),
    ("moveaxis", "movedim"),
    ("greater", "gt"),
    ("less", "lt"),
    ("greater_equal", "ge"),
    ("less_equal", "le"),
    ("not_equal", "ne"),
    ("T", "numpy_T"),
];

/// The row for `op`. `op` is an aten name, with or without an overload
/// (`"max.dim"`; an overload the table does not distinguish falls back to the
/// bare name, so `"pow.Tensor_Scalar"` finds `"pow"`), with or without the
/// trailing `_` of an in-place variant (a trailing `_` sets `inplace`).
pub fn lookup(op: &str, inplace: bool) -> Option<&'static OpSaves> {
    let (name, overload) = match op.split_once('.') {
        Some((n, o)) => (n, Some(o)),
        None => (op, None),
    };
    let (name, inplace) = match name.strip_suffix('_') {
        // `_softmax`, `_to_copy` start with `_`; only a trailing one marks in-place.
        Some(stripped) if !stripped.is_empty() && !stripped.ends_with('_') => (stripped, true),
        _ => (name, inplace),
    };
    let index = index();
    let find = |name: &str| {
        let with_overload = overload.and_then(|o| index.get(&(name, o, inplace)));
        with_overload
            .or_else(|| index.get(&(name, "", inplace)))
            .map(|&i| &TABLE[i])
    };
    find(name)
}

/// `name.overload` (`max.dim`) as a row of the table spells it, when one
/// does (the same text, made once). Found through the index: an alias's
/// key leads to its canonical row, whose spelling differs, so it has none.
pub fn overload_row_name(name: &str, overload: &str) -> Option<&'static str> {
    let index = index();
    [false, true]
        .iter()
        .filter_map(|&inplace| index.get(&(name, overload, inplace)))
        .map(|&i| TABLE[i].op)
        .find(|op| op.split_once('.') == Some((name, overload)))
}

/// `TABLE`'s rows by (name, overload or "", inplace), aliases included (they
/// are never rows of their own): `lookup` runs for every op that records
/// history, and the table has hundreds of rows. The first row of a key
/// wins, as a scan would find it.
type Index = rustc_hash::FxHashMap<(&'static str, &'static str, bool), usize>;

fn index() -> &'static Index {
    static INDEX: std::sync::OnceLock<Index> = std::sync::OnceLock::new();
    INDEX.get_or_init(|| {
        let mut index = Index::default();
        for (i, row) in TABLE.iter().enumerate() {
            let (name, overload) = row.op.split_once('.').unwrap_or((row.op, ""));
            debug_assert!(
                !ALIASES.iter().any(|(a, _)| *a == name),
                "the alias `{name}` is a row of the table"
            );
            index.entry((name, overload, row.inplace)).or_insert(i);
        }
        for (alias, canonical) in ALIASES {
            for (i, row) in TABLE.iter().enumerate() {
                let (name, overload) = row.op.split_once('.').unwrap_or((row.op, ""));
                if name == *canonical {
                    index.entry((*alias, overload, row.inplace)).or_insert(i);
                }
            }
        }
        index
    })
}

/// What the autograd node of `op` (aten name without overload or trailing
/// `_`, e.g. "mul", "sigmoid", "add", "matmul") saves; `inplace` selects the
/// in-place variant. None for an op not in the table. See [`lookup`] for the
/// accepted spellings and [`OpSaves::exactness`] before warning.
pub fn saved_for_backward(op: &str, inplace: bool) -> Option<&'static [Saved]> {
    lookup(op, inplace).map(|r| r.saved)
}

/// For an op implemented as a composite of others (CompositeImplicitAutograd),
/// what it decomposes into.
pub fn composite_of(op: &str) -> Option<&'static str> {
    lookup(op, false).and_then(|r| r.composite)
}

/// Ops of the core set whose result, when it requires grad, has a node that
/// raises at backward ("derivative for aten::NAME is not implemented").
pub fn backward_not_implemented(op: &str) -> Option<crate::analysis::domain::NoDerivative> {
    use crate::analysis::domain::NoDerivative;
    let base = op.split('.').next().unwrap_or(op);
    match base {
        "floor_divide" => Some(NoDerivative::FloorDivide),
        "floor_divide_" => Some(NoDerivative::FloorDivideInplace),
        _ => None,
    }
}

/// The resolved list: the positions of the inputs and the indices of the
/// outputs saved for this call. `requires_grad(i)` / `is_tensor(i)` describe
/// the argument at aten position `i`.
pub fn resolve(
    saved: &[Saved],
    requires_grad: impl Fn(usize) -> bool + Copy,
    is_tensor: impl Fn(usize) -> bool + Copy,
) -> (Vec<usize>, Vec<usize>) {
    let (mut ins, mut outs) = (Vec::new(), Vec::new());
    for s in saved {
        if !s.when().holds(requires_grad, is_tensor) {
            continue;
        }
        match *s {
            Saved::Input(i, _) if is_tensor(i) && !ins.contains(&i) => ins.push(i),
            Saved::Output(j, _) if !outs.contains(&j) => outs.push(j),
            _ => {}
        }
    }
    (ins, outs)
}

// ---------------------------------------------------------------- layout-dependent composites

/// A tensor argument's geometry, as `matmul` sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Geom {
    pub sizes: GeomDims,
    pub strides: GeomDims,
    pub requires_grad: bool,
}

/// A layout's sizes or strides (few: kept in place).
pub type GeomDims = smallvec::SmallVec<[i64; 6]>;

impl Geom {
    pub fn new(sizes: &[i64], strides: &[i64], requires_grad: bool) -> Geom {
        Geom {
            sizes: GeomDims::from_slice(sizes),
            strides: GeomDims::from_slice(strides),
            requires_grad,
        }
    }

    /// A contiguous tensor of these sizes.
    pub fn contiguous(sizes: &[i64], requires_grad: bool) -> Geom {
        let mut strides = vec![1; sizes.len()];
        for i in (0..sizes.len().saturating_sub(1)).rev() {
            strides[i] = strides[i + 1] * sizes[i + 1].max(1);
        }
        Geom::new(sizes, &strides, requires_grad)
    }

    fn dim(&self) -> usize {
        self.sizes.len()
    }

    fn numel(&self) -> i64 {
        self.sizes.iter().product()
    }

    /// `x.mT` (or `x.t()` for 2-D): swap the last two dims.
    pub fn mt(&self) -> Geom {
        let mut g = self.clone();
        let n = g.dim();
        if n >= 2 {
            g.sizes.swap(n - 2, n - 1);
            g.strides.swap(n - 2, n - 1);
        }
        g
    }

    fn squeeze0(&self) -> Geom {
        Geom {
            sizes: GeomDims::from_slice(&self.sizes[1..]),
            strides: GeomDims::from_slice(&self.strides[1..]),
            requires_grad: self.requires_grad,
        }
    }

    /// `x.expand(sizes)` (aten `inferExpandGeometry`).
    fn expand(&self, target: &[i64]) -> Geom {
        let nd = target.len();
        let td = self.dim();
        let mut sizes: GeomDims = smallvec::smallvec![0; nd];
        let mut strides: GeomDims = smallvec::smallvec![0; nd];
        for i in (0..nd).rev() {
            let offset = nd - 1 - i;
            let (mut size, mut stride) = if offset < td {
                (self.sizes[td - 1 - offset], self.strides[td - 1 - offset])
            } else if i + 1 < nd {
                (1, sizes[i + 1] * strides[i + 1])
            } else {
                (1, 1)
            };
            if size != target[i] {
                size = target[i];
                stride = 0;
            }
            sizes[i] = size;
            strides[i] = stride;
        }
        Geom {
            sizes,
            strides,
            requires_grad: self.requires_grad,
        }
    }
}

/// Whether `reshape(new_sizes)` of a tensor with these sizes and strides is a
/// view (aten `computeStride`); when it is not, reshape copies.
pub fn reshape_is_view(sizes: &[i64], strides: &[i64], new_sizes: &[i64]) -> bool {
    if sizes.is_empty() || sizes.iter().product::<i64>() == 0 {
        return true;
    }
    let mut view_d = new_sizes.len() as i64 - 1;
    let mut chunk_base_stride = *strides.last().unwrap_or(&1);
    let mut tensor_numel: i64 = 1;
    let mut view_numel: i64 = 1;
    for tensor_d in (0..sizes.len()).rev() {
        tensor_numel *= sizes[tensor_d];
        let chunk_end = tensor_d == 0
            || (sizes[tensor_d - 1] != 1
                && strides[tensor_d - 1] != tensor_numel * chunk_base_stride);
        if chunk_end {
            while view_d >= 0 && (view_numel < tensor_numel || new_sizes[view_d as usize] == 1) {
                view_numel *= new_sizes[view_d as usize];
                view_d -= 1;
            }
            if view_numel != tensor_numel {
                return false;
            }
            if tensor_d > 0 {
                chunk_base_stride = strides[tensor_d - 1];
                tensor_numel = 1;
                view_numel = 1;
            }
        }
    }
    view_d == -1
}

/// aten `should_fold` (torch 2.7, `LinearAlgebra.cpp`).
fn should_fold(a: &Geom, b: &Geom) -> bool {
    let a_larger = a.dim() >= b.dim();
    let t1 = if a_larger { a.clone() } else { b.mt() };
    let dim_t2 = if a_larger { b.dim() } else { a.dim() };
    if !(t1.dim() >= 3 && dim_t2 <= 2) {
        return false;
    }
    let t2_requires_grad = if a_larger {
        b.requires_grad
    } else {
        a.requires_grad
    };
    if t2_requires_grad {
        return true;
    }
    if a.dim() == 2 {
        return false;
    }
    if t1.numel() == 0 {
        return true;
    }
    (0..t1.dim() - 2).all(|i| t1.strides[i] == t1.strides[i + 1] * t1.sizes[i + 1])
}

fn broadcast(a: &[i64], b: &[i64]) -> Vec<i64> {
    let n = a.len().max(b.len());
    (0..n)
        .map(|i| {
            let x = if i + a.len() >= n {
                a[i + a.len() - n]
            } else {
                1
            };
            let y = if i + b.len() >= n {
                b[i + b.len() - n]
            } else {
                1
            };
            if x == 1 {
                y
            } else {
                x
            }
        })
        .collect()
}

/// `matmul(a, b)` (a CompositeImplicitAutograd op): whether `a` (index 0) and
/// `b` (index 1) end up saved as themselves or as views of themselves (sharing
/// their version counter), following torch 2.7's `_matmul_impl`. An operand is
/// saved at most when the other requires grad; it is not saved as an alias
/// when matmul's fold or batch reshape had to copy it. Assumes the shapes are
/// valid for matmul and grad mode is on.
pub fn matmul_saved(a: &Geom, b: &Geom) -> [bool; 2] {
    let (d1, d2) = (a.dim(), b.dim());
    if d1 == 0 || d2 == 0 {
        return [false, false];
    }
    if d1 <= 2 && d2 <= 2 {
        // dot, mv, unsqueeze(0).mm, mm: each operand (or a view) saved when the other requires grad.
        return [b.requires_grad, a.requires_grad];
    }
    if should_fold(a, b) {
        let transpose = d2 > d1;
        let (larger, smaller) = if transpose {
            (b.mt(), a)
        } else {
            (a.clone(), b)
        };
        let mut folded = larger.sizes.clone();
        let last = folded.pop().unwrap_or(1);
        let folded = [folded.iter().product(), last];
        let larger_saved =
            smaller.requires_grad && reshape_is_view(&larger.sizes, &larger.strides, &folded);
        let smaller_saved = larger.requires_grad;
        return if transpose {
            [smaller_saved, larger_saved]
        } else {
            [larger_saved, smaller_saved]
        };
    }
    let batch1 = &a.sizes[..d1.saturating_sub(2)];
    let batch2 = &b.sizes[..d2.saturating_sub(2)];
    if d1 == 3 && d2 == 3 && batch1[0] != batch2[0] {
        if batch1[0] == 1 && a.requires_grad {
            return matmul_saved(&a.squeeze0(), b);
        }
        if batch2[0] == 1 && b.requires_grad {
            return matmul_saved(a, &b.squeeze0());
        }
    }
    let n = if d1 > 1 { a.sizes[d1 - 2] } else { 1 };
    let m1 = a.sizes[d1 - 1];
    let m2 = if d2 > 1 { b.sizes[d2 - 2] } else { b.sizes[0] };
    let p = if d2 > 1 { b.sizes[d2 - 1] } else { 1 };
    let batch = broadcast(batch1, batch2);
    let prod: i64 = batch.iter().product();
    let a_exp = a.expand(&[batch.clone(), vec![n, m1]].concat());
    let a_view = reshape_is_view(&a_exp.sizes, &a_exp.strides, &[prod, n, m1]);
    let b_view = if d2 == 1 {
        let b_exp = b.expand(&[batch.clone(), vec![m2]].concat());
        reshape_is_view(&b_exp.sizes, &b_exp.strides, &[prod, m2])
    } else {
        let b_exp = b.expand(&[batch.clone(), vec![m2, p]].concat());
        reshape_is_view(&b_exp.sizes, &b_exp.strides, &[prod, m2, p])
    };
    [b.requires_grad && a_view, a.requires_grad && b_view]
}

/// `linear(input, weight, bias)`: whether `input` (0) and `weight` (1) are
/// saved as aliases. Every path of torch 2.7's `linear` (addmm on the input or
/// its 2-D view, or matmul) saves the same as `matmul(input, weight.t())`;
/// the bias is never saved.
pub fn linear_saved(input: &Geom, weight: &Geom) -> [bool; 2] {
    matmul_saved(input, &weight.mt())
}

/// `conv2d(..., padding='same')`: true when the input is padded first (a copy
/// is then saved instead of the input), i.e. when some spatial dim needs an
/// odd total padding `dilation * (kernel - 1)`. `padding='valid'` never pads.
pub fn conv_same_pads_input(kernel: &[i64], dilation: &[i64]) -> bool {
    kernel.iter().enumerate().any(|(i, k)| {
        let d = dilation.get(i).or(dilation.first()).copied().unwrap_or(1);
        (d * (k - 1)) % 2 != 0
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rg_of(v: &'static [usize]) -> impl Fn(usize) -> bool + Copy {
        move |i| v.contains(&i)
    }
    fn tensors(v: &'static [usize]) -> impl Fn(usize) -> bool + Copy {
        move |i| v.contains(&i)
    }

    /// The overloads the table spells, and only those, are found with
    /// their row's own text (an alias's overload included: it has none).
    #[test]
    fn overload_row_names_are_the_rows_own() {
        for row in TABLE {
            if let Some((name, overload)) = row.op.split_once('.') {
                let found = overload_row_name(name, overload).expect("a row's overload");
                assert_eq!(found, row.op);
            }
        }
        for (alias, canonical) in ALIASES {
            for row in TABLE {
                if let Some((name, overload)) = row.op.split_once('.') {
                    if name == *canonical {
                        assert_eq!(
                            overload_row_name(alias, overload),
                            None,
                            "{alias}.{overload}"
                        );
                    }
                }
            }
        }
        assert_eq!(overload_row_name("max", "dim"), Some("max.dim"));
        assert_eq!(overload_row_name("pad", "bogus"), None);
        assert_eq!(overload_row_name("nonexistent", "dim"), None);
    }

    #[test]
    fn keys_are_unique_and_positions_valid() {
        for (i, r) in TABLE.iter().enumerate() {
            for s in &TABLE[..i] {
                assert!(
                    !(s.op == r.op && s.inplace == r.inplace),
                    "duplicate row {} {}",
                    r.op,
                    r.inplace
                );
            }
            for s in r.saved {
                if let Saved::Input(p, _) = s {
                    assert!(*p < r.args.len(), "{}: input {p} out of range", r.op);
                }
                match s.when() {
                    When::InputRequiresGrad(p) | When::ArgIsTensor(p) => {
                        assert!(p < r.args.len(), "{}: condition on {p} out of range", r.op)
                    }
                    When::Always => {}
                }
                if r.inplace {
                    assert_ne!(
                        *s,
                        Saved::Input(0, When::Always),
                        "{}_: in-place ops save a clone of self",
                        r.op
                    );
                    assert!(
                        !matches!(s, Saved::Input(0, _)),
                        "{}_: in-place ops save a clone of self",
                        r.op
                    );
                }
            }
            if r.exactness == Exactness::Undetermined {
                assert!(r.saved.is_empty());
            }
        }
    }

    #[test]
    fn core_set_is_covered() {
        let functional = "add sub mul div true_divide floor_divide remainder pow neg abs exp log log1p sqrt rsqrt \
            sin cos tan tanh sigmoid relu gelu silu softplus elu leaky_relu hardtanh clamp clamp_min clamp_max floor \
            ceil round trunc sign reciprocal square lerp where masked_fill maximum minimum eq ne lt le gt ge \
            logical_and logical_or logical_not isnan isfinite sum mean prod amax amin max min argmax argmin std var \
            norm logsumexp all any cumsum cumprod softmax log_softmax sort argsort topk matmul mm bmm mv dot outer \
            addmm baddbmm einsum linear clone cat concat stack repeat repeat_interleave tile flip roll index_select \
            gather scatter take index masked_select tril triu pad dropout layer_norm embedding conv2d \
            view view_as as_strided expand expand_as broadcast_to transpose swapaxes swapdims t permute movedim \
            moveaxis squeeze unsqueeze flatten unflatten narrow select slice diagonal unfold detach alias real imag \
            view_as_real view_as_complex unbind split split_with_sizes chunk tensor_split reshape reshape_as \
            contiguous to type_as zeros_like ones_like empty_like full_like rand_like randn_like new_zeros new_ones \
            new_empty new_full max.dim min.dim max.other min.other";
        for op in functional.split_whitespace() {
            assert!(lookup(op, false).is_some(), "missing {op}");
        }
        let inplace = "add_ sub_ mul_ div_ pow_ neg_ abs_ exp_ log_ sqrt_ rsqrt_ sin_ cos_ tanh_ sigmoid_ relu_ \
            clamp_ clamp_min_ clamp_max_ floor_ ceil_ round_ trunc_ sign_ reciprocal_ zero_ fill_ copy_ \
            masked_fill_ index_add_ index_copy_ index_fill_ index_put_ scatter_ scatter_add_ addmm_ addcmul_ \
            addcdiv_ lerp_ normal_ uniform_ bernoulli_ random_ exponential_ dropout_ transpose_ t_ squeeze_ \
            unsqueeze_ swapdims_ swapaxes_ as_strided_ resize_ resize_as_ detach_ requires_grad_ set_ \
            floor_divide_ remainder_ tan_ log1p_ elu_ leaky_relu_ hardtanh_ silu_ cumsum_ cumprod_ tril_ triu_ \
            baddbmm_ square_";
        for op in inplace.split_whitespace() {
            assert!(lookup(op, false).is_some(), "missing {op}");
            assert!(
                lookup(op, false).unwrap().inplace,
                "{op} should find the in-place row"
            );
        }
    }

    #[test]
    fn documented_examples() {
        // mul saves each operand when the other requires grad, `other`
        // first (the order MulBackward0 unpacks them).
        let mul = saved_for_backward("mul", false).unwrap();
        assert_eq!(
            mul,
            &[
                Saved::Input(1, When::InputRequiresGrad(0)),
                Saved::Input(0, When::InputRequiresGrad(1))
            ]
        );
        assert_eq!(
            resolve(mul, rg_of(&[0]), tensors(&[0, 1])),
            (vec![1], vec![])
        );
        assert_eq!(
            resolve(mul, rg_of(&[0, 1]), tensors(&[0, 1])),
            (vec![1, 0], vec![])
        );
        // `x * 2`: the number is not a tensor anyone can touch.
        assert_eq!(resolve(mul, rg_of(&[0]), tensors(&[0])), (vec![], vec![]));
        // layer_norm without bias: input and weight.
        let ln = saved_for_backward("layer_norm", false).unwrap();
        assert_eq!(
            resolve(ln, rg_of(&[0]), tensors(&[0, 2])),
            (vec![0, 2], vec![])
        );
        // Outputs of sigmoid/tanh/exp, inputs of sin/log.
        for op in [
            "sigmoid",
            "tanh",
            "exp",
            "sqrt",
            "rsqrt",
            "relu",
            "tan",
            "reciprocal",
        ] {
            assert_eq!(
                saved_for_backward(op, false).unwrap(),
                &[Saved::Output(0, When::Always)],
                "{op}"
            );
        }
        for op in [
            "sin",
            "cos",
            "log",
            "log1p",
            "abs",
            "gelu",
            "silu",
            "softplus",
            "elu",
            "leaky_relu",
            "hardtanh",
        ] {
            assert_eq!(
                saved_for_backward(op, false).unwrap(),
                &[Saved::Input(0, When::Always)],
                "{op}"
            );
        }
        // In-place: result-savers save self after the op; self-savers save a clone (nothing listed).
        for op in [
            "sigmoid",
            "tanh",
            "exp",
            "relu",
            "sqrt",
            "rsqrt",
            "reciprocal",
            "elu",
            "leaky_relu",
        ] {
            assert_eq!(
                saved_for_backward(op, true).unwrap(),
                &[Saved::Output(0, When::Always)],
                "{op}_"
            );
        }
        for op in [
            "sin", "cos", "log", "abs", "hardtanh", "silu", "add", "neg", "zero", "fill", "copy",
        ] {
            assert_eq!(saved_for_backward(op, true).unwrap(), &[], "{op}_");
        }
        assert_eq!(
            saved_for_backward("mul_", false).unwrap(),
            &[Saved::Input(1, When::InputRequiresGrad(0))]
        );
        assert_eq!(
            saved_for_backward("where", false).unwrap(),
            &[Saved::Input(0, When::Always)]
        );
        assert_eq!(
            saved_for_backward("masked_fill", false).unwrap(),
            &[Saved::Input(1, When::Always)]
        );
        assert!(saved_for_backward("sum", false).unwrap().is_empty());
        assert!(saved_for_backward("cat", false).unwrap().is_empty());
        assert!(saved_for_backward("view", false).unwrap().is_empty());
        assert!(saved_for_backward("nonexistent_op", false).is_none());
        // Reductions that return (values, indices) save the indices.
        assert_eq!(
            saved_for_backward("max.dim", false).unwrap(),
            &[Saved::Output(1, When::Always)]
        );
        assert_eq!(
            saved_for_backward("sort.stable", false).unwrap(),
            &[Saved::Output(1, When::Always)]
        );
    }

    #[test]
    fn pow_overloads() {
        let pow = saved_for_backward("pow", false).unwrap();
        // x ** 2 (Tensor_Scalar): self only.
        assert_eq!(resolve(pow, rg_of(&[0]), tensors(&[0])), (vec![0], vec![]));
        // x ** y (Tensor_Tensor): self, exponent, result.
        assert_eq!(
            resolve(pow, rg_of(&[0]), tensors(&[0, 1])),
            (vec![0, 1], vec![0])
        );
        // 2 ** y (Scalar): exponent, result.
        assert_eq!(resolve(pow, rg_of(&[1]), tensors(&[1])), (vec![1], vec![0]));
        let pow_ = saved_for_backward("pow", true).unwrap();
        assert_eq!(resolve(pow_, rg_of(&[0]), tensors(&[0])), (vec![], vec![]));
        assert_eq!(
            resolve(pow_, rg_of(&[0]), tensors(&[0, 1])),
            (vec![1], vec![0])
        );
    }

    #[test]
    fn lookup_spellings() {
        assert!(lookup("sigmoid_", false).unwrap().inplace);
        assert_eq!(lookup("sigmoid", true).unwrap().op, "sigmoid");
        assert_eq!(lookup("pow.Tensor_Scalar", false).unwrap().op, "pow");
        assert_eq!(lookup("max.dim", false).unwrap().op, "max.dim");
        assert_eq!(lookup("max", false).unwrap().op, "max");
        assert_eq!(lookup("concat", false).unwrap().op, "cat");
        assert_eq!(lookup("clip_", false).unwrap().op, "clamp");
        assert_eq!(lookup("_softmax", false).unwrap().op, "_softmax");
        assert_eq!(lookup("_to_copy", false).unwrap().op, "_to_copy");
        assert!(lookup("softplus", true).is_none());
        assert!(lookup("gather_", false).is_none());
        assert_eq!(composite_of("square"), Some("pow(self, 2)"));
        assert_eq!(composite_of("mul"), None);
        assert!(saved_for_backward("norm.nuc", false).unwrap().is_empty());
        assert_eq!(saved_for_backward("norm.fro", false).unwrap().len(), 2);
        assert!(backward_not_implemented("floor_divide").is_some());
        assert!(backward_not_implemented("floor_divide_.Scalar").is_some());
        assert!(backward_not_implemented("remainder").is_none());
    }

    #[test]
    fn reshape_view_rule() {
        assert!(reshape_is_view(&[2, 3, 4], &[12, 4, 1], &[6, 4]));
        assert!(!reshape_is_view(&[2, 3, 4], &[4, 8, 1], &[6, 4])); // transposed batch dims
        assert!(reshape_is_view(&[3, 4], &[1, 3], &[1, 3, 4])); // a transposed matrix gains a leading 1
        assert!(!reshape_is_view(&[3, 4], &[1, 3], &[12]));
        assert!(reshape_is_view(&[2, 3, 4], &[0, 4, 1], &[2, 3, 4])); // expanded, same shape
        assert!(!reshape_is_view(&[2, 2, 3, 4], &[12, 0, 4, 1], &[4, 3, 4])); // expanded dim merged
        assert!(reshape_is_view(&[0, 4], &[4, 1], &[2, 0]));
    }

    fn mm(a: &[i64], arg: bool, b: &[i64], brg: bool) -> [bool; 2] {
        matmul_saved(&Geom::contiguous(a, arg), &Geom::contiguous(b, brg))
    }

    #[test]
    fn matmul_cases_checked_against_torch() {
        // (a sizes, b sizes, [saved when only a rg], [saved when only b rg], [both rg])
        type Case<'a> = (&'a [i64], &'a [i64], [bool; 2], [bool; 2], [bool; 2]);
        let cases: &[Case] = &[
            (&[3, 4], &[4, 5], [false, true], [true, false], [true, true]),
            (&[4], &[4], [false, true], [true, false], [true, true]),
            (&[3, 4], &[4], [false, true], [true, false], [true, true]),
            (&[4], &[4, 5], [false, true], [true, false], [true, true]),
            (
                &[2, 3, 4],
                &[4, 5],
                [false, true],
                [true, false],
                [true, true],
            ),
            (&[2, 3, 4], &[4], [false, true], [true, false], [true, true]),
            (
                &[3, 4],
                &[2, 4, 5],
                [false, false],
                [true, false],
                [true, false],
            ),
            (
                &[4],
                &[2, 4, 5],
                [false, false],
                [true, false],
                [true, false],
            ),
            (
                &[2, 3, 4],
                &[2, 4, 5],
                [false, true],
                [true, false],
                [true, true],
            ),
            (
                &[1, 3, 4],
                &[2, 4, 5],
                [false, false],
                [true, false],
                [true, false],
            ),
            (
                &[2, 2, 3, 4],
                &[2, 4, 5],
                [false, false],
                [true, false],
                [true, false],
            ),
            (
                &[2, 1, 3, 4],
                &[1, 2, 4, 5],
                [false, false],
                [false, false],
                [false, false],
            ),
            (
                &[2, 2, 3, 4],
                &[4, 5],
                [false, true],
                [true, false],
                [true, true],
            ),
        ];
        for (a, b, only_a, only_b, both) in cases {
            assert_eq!(mm(a, true, b, false), *only_a, "{a:?}@{b:?} a rg");
            assert_eq!(mm(a, false, b, true), *only_b, "{a:?}@{b:?} b rg");
            assert_eq!(mm(a, true, b, true), *both, "{a:?}@{b:?} both rg");
        }
        // x.transpose(0, 1) @ w with x contiguous [3, 2, 4]: the fold copies x.
        let xt = Geom::new(&[2, 3, 4], &[4, 8, 1], true);
        let w = Geom::contiguous(&[4, 5], false);
        assert_eq!(
            matmul_saved(
                &Geom {
                    requires_grad: false,
                    ..xt.clone()
                },
                &Geom {
                    requires_grad: true,
                    ..w.clone()
                }
            ),
            [false, false]
        );
        assert_eq!(matmul_saved(&xt, &w), [false, true]);
    }

    #[test]
    fn linear_cases_checked_against_torch() {
        let w = |rg| Geom::contiguous(&[5, 4], rg);
        assert_eq!(
            linear_saved(&Geom::contiguous(&[3, 4], true), &w(false)),
            [false, true]
        );
        assert_eq!(
            linear_saved(&Geom::contiguous(&[3, 4], false), &w(true)),
            [true, false]
        );
        assert_eq!(
            linear_saved(&Geom::contiguous(&[2, 3, 4], false), &w(true)),
            [true, false]
        );
        assert_eq!(
            linear_saved(&Geom::contiguous(&[2, 2, 3, 4], true), &w(true)),
            [true, true]
        );
        // non-contiguous 3-D input: folded by a copy, only the weight is kept
        let xt = Geom::new(&[2, 3, 4], &[4, 8, 1], true);
        assert_eq!(linear_saved(&xt, &w(true)), [false, true]);
    }

    #[test]
    fn conv_same_padding() {
        assert!(!conv_same_pads_input(&[3, 3], &[1, 1]));
        assert!(conv_same_pads_input(&[2, 2], &[1, 1]));
        assert!(!conv_same_pads_input(&[2, 2], &[2]));
        assert!(conv_same_pads_input(&[3, 4], &[1]));
    }
}
