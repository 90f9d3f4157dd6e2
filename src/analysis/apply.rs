//! The op rules: for every family of the op table, PyTorch's shape, stride and
//! dtype rule (its meta function) and what the op does to the domain (a fresh
//! tensor, a view, an in-place data or metadata mutation, a storage swap).

use super::domain::*;
use super::interp::{op_error, ArgValues, Interp, R};
use super::state::{view_stride_error, Meta, Mode, ViewArg};
use super::value::{Value, Values};
use crate::ops::shape::invalid_shape_error;
use crate::ops::shape::{self, show, IterOperand, OpError, OpResult};
use crate::ops::{OpClass, OpDef, OpTable, ParamType};
use crate::report::Diagnostic;
use crate::sym::{Dims, SymInt};
use crate::syntax::ast::{BinOp, CmpOp, Name};
use crate::syntax::Span;
use smallvec::smallvec;
use std::rc::Rc;

fn err(code: &'static str, msg: impl Into<String>, span: Span) -> Diagnostic {
    Diagnostic::error(code, msg, span)
}

fn oe(code: &'static str, msg: impl Into<String>) -> OpError {
    OpError::new(code, msg)
}

/// A dim of a 0-d tensor read with TensorImpl's `size(d)`/`sym_size(d)`,
/// which wrap without the scalar allowance: PyTorch's IndexError.
pub(crate) fn no_dims_error(d: impl std::fmt::Display) -> OpError {
    oe(
        "other",
        format!("Dimension specified as {d} but tensor has no dimensions"),
    )
}

/// Does eager argmax/argmin reach its dtype-dispatched kernel?
/// argmax_argmin_impl fills zeros for a reduced dim of size 1, and runs
/// nothing on no elements.
fn argmax_runs_kernel(it: &Interp, t: &Tensor, a: &Args) -> bool {
    let sizes = t.sizes();
    if sizes.iter().any(|s| s.as_int() == Some(0)) {
        return false;
    }
    match a.get("dim") {
        Value::Int(d) => match d.as_int() {
            // A dim out of range fails the meta function first.
            Some(d) => shape::wrap_dim(d, sizes.len()).is_ok_and(|w| {
                sizes
                    .get(w)
                    .is_none_or(|s| it.m.sizes.env.hint(s) != Some(1))
            }),
            None => true,
        },
        _ => true,
    }
}

/// setStorage's bounds check (`checkInBoundsForStorage`): a layout `meta`
/// that reaches past the end of `storage`.
fn check_storage_bounds(it: &Interp, storage: StorageId, meta: &Meta) -> OpResult<()> {
    let (sizes, strides, offset) = (&meta.sizes, &meta.strides, &meta.offset);
    match it
        .m
        .storage_overrun(storage, sizes, strides, offset, meta.dtype)
    {
        Some((need, have)) => Err(super::state::set_storage_error(
            sizes,
            strides,
            offset,
            meta.dtype.itemsize(),
            need,
            have,
        )),
        None => Ok(()),
    }
}

/// AT_DISPATCH's refusal of a dtype an eager CPU kernel is not built for.
fn not_implemented_for(kernel: &str, dtype: DType) -> OpError {
    oe(
        "other",
        format!(
            "\"{kernel}\" not implemented for '{}'",
            torch_type_name(dtype)
        ),
    )
}

/// Index tensors must be long, int, byte or bool (checkIndexTensorTypes,
/// meta_index_Tensor).
fn index_dtype_error() -> OpError {
    oe(
        "other",
        "tensors used as indices must be long, int, byte or bool tensors",
    )
}

/// Python's IndexError of a decomposition that assigns into a size list
/// (`shape[dim] = ...`, `split_sizes[-1] = ...`) out of its range.
fn list_index_error() -> OpError {
    oe("index-out-of-range", "list assignment index out of range")
}

/// The bound arguments of one call, with typed accessors.
pub struct Args<'o> {
    pub op: &'o OpDef,
    pub v: ArgValues,
}

impl Args<'_> {
    fn idx(&self, name: &str) -> usize {
        self.op
            .params
            .iter()
            .position(|p| p.name == name)
            .unwrap_or(usize::MAX)
    }

    pub fn get(&self, name: &str) -> &Value {
        self.v.get(self.idx(name)).unwrap_or(&Value::None)
    }

    pub fn tensor(&self, name: &str) -> OpResult<TensorId> {
        match self.get(name) {
            Value::Tensor(t) => Ok(*t),
            other => Err(oe(
                "arguments",
                format!(
                    "{}(): argument `{name}` must be a Tensor, not `{}`",
                    self.op.name,
                    other.type_name()
                ),
            )),
        }
    }

    pub fn opt_tensor(&self, name: &str) -> OpResult<Option<TensorId>> {
        match self.get(name) {
            Value::None => Ok(None),
            _ => self.tensor(name).map(Some),
        }
    }

    pub fn int(&self, it: &mut Interp, name: &str) -> OpResult<i64> {
        match self.get(name) {
            Value::Int(i) => match i.as_int() {
                Some(v) => Ok(v),
                None => {
                    it.m.sizes
                        .concrete(i, &format!("{}()'s `{name}`", self.op.name))
                }
            },
            // PyTorch's parser takes no bool for an int (THPUtils_checkLong).
            Value::Bool(_) => Err(oe(
                "arguments",
                format!(
                    "{}(): argument '{name}' must be int, not bool",
                    self.op.name
                ),
            )),
            other => Err(oe(
                "arguments",
                format!(
                    "{}(): argument `{name}` must be an int, not `{}`",
                    self.op.name,
                    other.type_name()
                ),
            )),
        }
    }

    pub fn sym(&self, name: &str) -> OpResult<SymInt> {
        match self.get(name) {
            Value::Int(i) => Ok(i.clone()),
            Value::Bool(b) => Ok(SymInt::int(*b as i64)),
            other => Err(oe(
                "arguments",
                format!(
                    "{}(): argument `{name}` must be an int, not `{}`",
                    self.op.name,
                    other.type_name()
                ),
            )),
        }
    }

    pub fn opt_int(&self, it: &mut Interp, name: &str) -> OpResult<Option<i64>> {
        match self.get(name) {
            Value::None => Ok(None),
            _ => self.int(it, name).map(Some),
        }
    }

    pub fn bool(&self, name: &str) -> OpResult<bool> {
        match self.get(name) {
            Value::Bool(b) => Ok(*b),
            Value::Int(i) if i.as_int().is_some() => Ok(i.as_int() != Some(0)),
            other => Err(oe(
                "arguments",
                format!(
                    "{}(): argument `{name}` must be a bool, not `{}`",
                    self.op.name,
                    other.type_name()
                ),
            )),
        }
    }

    /// An int list (a tuple/list of ints, or one int).
    pub fn syms(&self, name: &str) -> OpResult<Dims> {
        to_syms(self.get(name)).ok_or_else(|| {
            oe(
                "arguments",
                format!(
                    "{}(): argument `{name}` must be a tuple of ints, not `{}`",
                    self.op.name,
                    self.get(name).type_name()
                ),
            )
        })
    }

    pub fn ints(&self, it: &mut Interp, name: &str) -> OpResult<Vec<i64>> {
        let syms = self.syms(name)?;
        syms.iter()
            .map(|s| {
                it.m.sizes
                    .concrete(s, &format!("{}()'s `{name}`", self.op.name))
            })
            .collect()
    }

    /// None, an int or a list of ints (dims).
    pub fn opt_dims(&self, it: &mut Interp, name: &str) -> OpResult<Option<Vec<i64>>> {
        match self.get(name) {
            Value::None => Ok(None),
            Value::Int(_) | Value::Bool(_) => Ok(Some(vec![self.int(it, name)?])),
            _ => Ok(Some(self.ints(it, name)?)),
        }
    }

    pub fn dtype(&self, name: &str) -> OpResult<Option<DType>> {
        match self.get(name) {
            Value::None => Ok(None),
            Value::Dtype(d) => Ok(Some(*d)),
            other => Err(oe(
                "arguments",
                format!(
                    "{}(): argument `{name}` must be a torch.dtype, not `{}`",
                    self.op.name,
                    other.type_name()
                ),
            )),
        }
    }

    pub fn memory_format(&self, name: &str) -> OpResult<Option<MemoryFormat>> {
        match self.get(name) {
            Value::None => Ok(None),
            Value::MemoryFormat(f) => Ok(Some(*f)),
            other => Err(oe(
                "arguments",
                format!(
                    "{}(): argument `{name}` must be a torch.memory_format, not `{}`",
                    self.op.name,
                    other.type_name()
                ),
            )),
        }
    }

    pub fn tensors(&self, name: &str) -> OpResult<Vec<TensorId>> {
        let items = self.get(name).sequence().ok_or_else(|| {
            oe(
                "arguments",
                format!(
                    "{}(): argument `{name}` must be a tuple or list of tensors",
                    self.op.name
                ),
            )
        })?;
        items
            .iter()
            .map(|v| match v {
                Value::Tensor(t) => Ok(*t),
                other => Err(oe(
                    "arguments",
                    format!(
                        "{}(): expected a tensor in `{name}`, got `{}`",
                        self.op.name,
                        other.type_name()
                    ),
                )),
            })
            .collect()
    }
}

/// The op's tensor arguments by parameter name (tensor lists give one entry
/// per tensor), for autograd's edges and saved tensors.
fn named_inputs(a: &Args) -> NamedInputs {
    let mut out = NamedInputs::new();
    for (p, v) in a.op.params.iter().zip(&a.v) {
        match v {
            Value::Tensor(t) => out.push((p.name, Some(*t))),
            Value::Tuple(_) | Value::List(_) => {
                for x in v.sequence().unwrap_or_default() {
                    if let Value::Tensor(t) = x {
                        out.push((p.name, Some(t)));
                    }
                }
            }
            _ => {}
        }
    }
    out
}

/// An op's tensor arguments by parameter name (few: kept in place).
type NamedInputs = smallvec::SmallVec<[(&'static str, Option<TensorId>); 4]>;

/// The overload whose saved tensors apply (`max.dim`, `max.other`,
/// `pad.reflect`), spelled as `ops::saved`'s table spells it. A variant the
/// table has no row for is the plain name, which is the row `lookup` falls
/// back to for it.
fn saved_variant(a: &Args) -> &'static str {
    let name = a.op.name.trim_end_matches('_');
    let overload = match name {
        "max" | "min" => match a.get("dim") {
            Value::None => return name,
            Value::Tensor(_) => "other",
            _ => "dim",
        },
        "pad" => match a.get("mode") {
            Value::Str(m) if &**m != "constant" => &**m,
            _ => return name,
        },
        // p='nuc' is linalg_matrix_norm's svdvals: nothing the user holds.
        "norm" => match a.get("p") {
            Value::Str(p) if &**p == "nuc" => "nuc",
            _ => return name,
        },
        _ => return name,
    };
    crate::ops::saved::overload_row_name(name, overload).unwrap_or(name)
}

/// The name PyTorch's autograd gives the node `a`'s op records, where it is
/// not the op's own name and `Backward0` (`state::node_name`):
/// derivatives.yaml numbers the entries of one name in their order
/// (`pow.Tensor_Tensor` is PowBackward1, `sum.dim_IntList` SumBackward1),
/// gives some in-place ops an entry of their own (`elu_` is EluBackward1,
/// `t_` TBackward1), and a CompositeImplicitAutograd op records the node of
/// the op it calls (`selu` is EluBackward0). The names show in autograd's
/// messages (tests/oracle/autograd_messages.tp). An argument given as its default
/// (`sort(stable=False)`, `sum(dim=None)`) cannot be told from one left out:
/// it is named as left out.
fn overload_node_name(it: &Interp, a: &Args) -> Option<&'static str> {
    let name = a.op.name;
    let rank = |k: &str| match a.get(k) {
        Value::Tensor(t) => Some(it.m.t(*t).sizes().len()),
        _ => None,
    };
    let inplace = name.ends_with('_') || matches!(a.get("inplace"), Value::Bool(true));
    let tensor = |k: &str| matches!(a.get(k), Value::Tensor(_));
    let given = |k: &str| !matches!(a.get(k), Value::None);
    let pick = |plain: &'static str, numbered: &'static str, numbered_if: bool| {
        Some(if numbered_if { numbered } else { plain })
    };
    match name.trim_end_matches('_') {
        // (Each name here is in `ops::RENAMED_NODES`.)
        "sub" | "subtract" if !tensor("self") => Some("RsubBackward1"),
        "rsub" => pick("RsubBackward0", "RsubBackward1", !tensor("other")),
        "div" | "divide" if given("rounding_mode") => Some("DivBackward2"),
        "true_divide" => Some("DivBackward0"),
        "remainder" if tensor("self") => {
            pick("RemainderBackward0", "RemainderBackward1", tensor("other"))
        }
        "fmod" => pick("FmodBackward0", "FmodBackward1", tensor("other")),
        "pow" if !tensor("self") => Some("PowBackward2"),
        "pow" => pick("PowBackward0", "PowBackward1", tensor("exponent")),
        "square" => Some("PowBackward0"),
        "sum" => pick("SumBackward0", "SumBackward1", given("dim")),
        "mean" => pick("MeanBackward0", "MeanBackward1", given("dim")),
        "prod" => pick("ProdBackward0", "ProdBackward1", given("dim")),
        "max" if !given("dim") => Some("MaxBackward1"),
        "min" if !given("dim") => Some("MinBackward1"),
        "clamp" => pick(
            "ClampBackward0",
            "ClampBackward1",
            !tensor("min") && !tensor("max"),
        ),
        "clamp_min" => pick("ClampMinBackward0", "ClampMinBackward1", tensor("min")),
        "clamp_max" => pick("ClampMaxBackward0", "ClampMaxBackward1", tensor("max")),
        "lerp" => pick("LerpBackward0", "LerpBackward1", tensor("weight")),
        "masked_fill" => pick(
            "MaskedFillBackward0",
            "MaskedFillBackward1",
            tensor("value"),
        ),
        "index_fill" => pick("IndexFillBackward0", "IndexFillBackward1", tensor("value")),
        "scatter" if !given("reduce") => {
            pick("ScatterBackward0", "ScatterBackward1", !tensor("src"))
        }
        "round" => pick("RoundBackward0", "RoundBackward1", given("decimals")),
        "sort" => pick(
            "SortBackward0",
            "SortBackward1",
            matches!(a.get("stable"), Value::Bool(true)),
        ),
        "norm" if !matches!(a.get("p"), Value::Str(p) if &**p == "nuc") => {
            Some("LinalgVectorNormBackward0")
        }
        "selu" => pick("EluBackward0", "EluBackward1", inplace),
        "elu" => pick("EluBackward0", "EluBackward1", inplace),
        "leaky_relu" => pick("LeakyReluBackward0", "LeakyReluBackward1", inplace),
        "relu6" => Some("HardtanhBackward0"),
        "tile" => Some("RepeatBackward0"),
        "outer" | "ger" => Some("MulBackward0"),
        // (The paths that fold or batch their operands end in a view.)
        "matmul" => match (rank("self")?, rank("other")?) {
            (1, 1) => Some("DotBackward0"),
            (2, 1) => Some("MvBackward0"),
            (2, 2) => Some("MmBackward0"),
            _ => None,
        },
        "linear" if rank("input") == Some(2) => {
            pick("MmBackward0", "AddmmBackward0", tensor("bias"))
        }
        "pad" => {
            // reflection_pad{1,2,3}d and replication_pad{1,2,3}d by the
            // number of padded dims.
            const PADS: [[&str; 3]; 2] = [
                [
                    "ReflectionPad1DBackward0",
                    "ReflectionPad2DBackward0",
                    "ReflectionPad3DBackward0",
                ],
                [
                    "ReplicationPad1DBackward0",
                    "ReplicationPad2DBackward0",
                    "ReplicationPad3DBackward0",
                ],
            ];
            let dims = a.get("pad").sequence().map_or(0, |p| p.len() / 2);
            let padded = |kind: usize| PADS[kind].get(dims.checked_sub(1)?).copied();
            match a.get("mode") {
                Value::Str(m) if &**m == "reflect" => padded(0),
                Value::Str(m) if &**m == "replicate" => padded(1),
                Value::Str(m) if &**m != "constant" => None,
                _ => Some("ConstantPadNdBackward0"),
            }
        }
        "fill" if inplace => pick("FillBackward2", "FillBackward3", tensor("value")),
        "copy" if inplace => Some("torch::autograd::CopyBackwards"),
        "t" if inplace => Some("TBackward1"),
        "transpose" | "swapaxes" | "swapdims" if inplace => Some("TransposeBackward1"),
        "unsqueeze" if inplace => Some("UnsqueezeBackward1"),
        // (`squeeze_(0)` reaches tpi as the list [0], as `squeeze_((0,))`
        // does: named as the first, the usual spelling.)
        "squeeze" if inplace => Some(match a.get("dim") {
            Value::None => "SqueezeBackward3",
            v if v.sequence().is_some_and(|d| d.len() > 1) => "SqueezeBackward5",
            _ => "SqueezeBackward4",
        }),
        "as_strided" if inplace => Some("AsStridedBackward1"),
        "random" if inplace => Some(match (given("a"), given("b")) {
            (false, _) => "RandomBackward2",
            (true, false) => "RandomBackward1",
            (true, true) => "RandomBackward0",
        }),
        "bernoulli" if inplace => pick("BernoulliBackward2", "BernoulliBackward1", tensor("p")),
        _ => None,
    }
}

/// Gives `node` the name PyTorch's autograd gives it (`overload_node_name`).
fn name_node(it: &mut Interp, a: &Args, node: NodeId) {
    if it.m.mode == Mode::Eager && a.op.renames_node {
        if let Some(name) = overload_node_name(it, a) {
            it.m.nodes[node].name = OpName::of(name);
        }
    }
}

pub fn to_syms(v: &Value) -> Option<Dims> {
    match v {
        Value::Int(i) => Some(smallvec![i.clone()]),
        Value::Tuple(_) | Value::List(_) => v
            .sequence()?
            .iter()
            .map(|x| match x {
                Value::Int(i) => Some(i.clone()),
                Value::Bool(b) => Some(SymInt::int(*b as i64)),
                _ => None,
            })
            .collect(),
        _ => None,
    }
}

fn int_list_str(v: &[i64]) -> String {
    format!(
        "[{}]",
        v.iter()
            .map(|x| x.to_string())
            .collect::<Vec<_>>()
            .join(", ")
    )
}

// ---------------------------------------------------------------- entry

pub fn apply(it: &mut Interp, op: &'static OpDef, args: ArgValues, span: Span) -> R<Value> {
    let mut a = Args { op, v: args };
    // python_arg_parser's should_allow_numbers_as_tensors: copy_ takes a
    // number as its `src`, a 0-dim wrapped-number tensor (scalar_to_tensor:
    // float64, int64 or bool).
    // (Every op comes here: the name is looked at first.)
    let number = (op.name == "copy_")
        .then(|| scalar_dtype(a.get("src")))
        .flatten();
    let copy_number = match number {
        Some(dtype) => {
            let meta =
                it.m.contiguous_meta(Dims::new(), dtype)
                    .map_err(|e| op_error(e, span))?;
            let src = it.m.fresh(meta, span, "scalar_tensor");
            let k = a.idx("src");
            a.v[k] = Value::Tensor(src);
            true
        }
        _ => false,
    };
    normalise_overloads(&mut a).map_err(|e| op_error(e, span))?;
    let wraps = copy_number || wraps_number(&a);
    let outer = std::mem::replace(&mut it.m.wrapped_number, wraps);
    let r = apply_op(it, op, a, span);
    it.m.wrapped_number = outer;
    r
}

/// Eager CPU kernels that are not built for a complex or a bool `self`
/// (AT_DISPATCH's "not implemented for", or the kernel's own words), where
/// promotion and the analysis's decompositions pass. floor_divide of a
/// complex tensor fails in the analysis too.
fn cpu_kernel_dtype_error(it: &Interp, op: &OpDef, a: &Args) -> Option<OpError> {
    // (Every op comes here: the first argument, by position, decides.)
    let Some(Value::Tensor(me)) = a.v.first() else {
        return None;
    };
    let me = it.m.t(*me);
    let own = me.dtype;
    if !own.is_complex() && own != DType::Bool {
        return None;
    }
    let base = op.name.trim_end_matches('_');
    let eager = it.m.mode == Mode::Eager;
    let missing = |kernel: &str| not_implemented_for(kernel, own);
    if own.is_complex() {
        if base == "floor_divide" {
            return Some(match it.m.mode {
                Mode::Eager => missing("div_floor_cpu"),
                Mode::Analysis => oe(
                    "other",
                    format!("torch.{} not supported for floor_divide", own.name()),
                ),
            });
        }
        if !eager {
            return None;
        }
        let no_dim = matches!(a.get("dim"), Value::None);
        let last_dim = match a.get("dim") {
            Value::Int(d) => d
                .as_int()
                .is_some_and(|d| d == -1 || d + 1 == me.sizes().len() as i64),
            _ => true,
        };
        return Some(match (op.name, base) {
            (_, "amax") => missing("max_values_cpu"),
            (_, "amin") => missing("min_values_cpu"),
            (_, "max" | "min") if no_dim => missing(&format!("{base}_all")),
            (_, "max" | "min") => oe("other", format!("{base}(): does not support complex input")),
            (_, "argmax" | "argmin") if argmax_runs_kernel(it, me, a) => {
                missing(&format!("{base}_cpu"))
            }
            (_, "sort" | "argsort" | "msort") => oe(
                "other",
                "Sort currently does not support complex dtypes on CPU.",
            ),
            (_, "topk") => missing("topk_cpu"),
            (_, "softmax" | "log_softmax") if last_dim => {
                missing(&format!("{base}_lastdim_kernel_impl"))
            }
            (_, "softmax" | "log_softmax") => missing(&format!("{base}_kernel_impl")),
            (_, "gelu") => missing("GeluKernelImpl"),
            (_, "elu" | "softplus" | "leaky_relu") => missing(&format!("{base}_cpu")),
            (_, "hardtanh") => oe("other", "clamp is not supported for complex types"),
            (_, "remainder") => missing("remainder_cpu"),
            ("bernoulli_", _) => missing("bernoulli_scalar_cpu_"),
            ("random_", _) if matches!(a.get("a"), Value::None) => missing("random_kernel_cpu"),
            ("random_", _) => oe(
                "other",
                "check_random_bounds handles only integral, floating-point and boolean types",
            ),
            _ => return None,
        });
    }
    if own != DType::Bool || !eager {
        return None;
    }
    Some(match base {
        "dot" => missing("dot"),
        "mv" => missing("addmv_impl_cpu"),
        "bmm" => missing("bmm"),
        "addmm" => missing("addmm_impl_cpu_"),
        "addcmul" => missing("addcmul_cpu_out"),
        "pad" => {
            let dims = a.get("pad").sequence().map_or(0, |p| p.len() / 2);
            match a.get("mode") {
                Value::Str(m) if &**m == "reflect" => missing(&format!("reflection_pad{dims}d")),
                Value::Str(m) if &**m == "replicate" => missing(&format!("replication_pad{dims}d")),
                _ => return None,
            }
        }
        _ => return None,
    })
}

/// `empty_like`'s strides for a copy of `t`: torch._refs' in the analysis,
/// ATen's in eager (which keeps a dense layout exactly).
fn like_strides_for(it: &mut Interp, t: &Tensor, format: MemoryFormat) -> OpResult<Dims> {
    like_strides_of(it, t.sizes(), t.strides(), format)
}

/// `like_strides_for` a tensor of these sizes and strides.
fn like_strides_of(
    it: &mut Interp,
    sizes: &[SymInt],
    strides: &[SymInt],
    format: MemoryFormat,
) -> OpResult<Dims> {
    let s = &mut it.m.sizes;
    match it.m.mode {
        Mode::Eager => shape::eager_like_strides(sizes, strides, format, s),
        Mode::Analysis => shape::like_strides(sizes, strides, format, s),
    }
}

/// rand/randn (and their `_like`s) of a dtype that is not floating or
/// complex: randn's meta wants a floating dtype; rand's is plain empty(),
/// so only eager's uniform_ kernel refuses it.
fn random_dtype_check(it: &Interp, name: &str, dtype: DType) -> OpResult<()> {
    if !matches!(name, "rand" | "randn")
        || dtype.is_floating()
        || dtype.is_complex()
        || (name == "rand" && it.m.mode == Mode::Analysis)
    {
        return Ok(());
    }
    Err(match (it.m.mode, name) {
        (Mode::Eager, "rand") => not_implemented_for("check_uniform_bounds", dtype),
        (Mode::Eager, _) => not_implemented_for("normal_kernel_cpu", dtype),
        (Mode::Analysis, _) => oe(
            "other",
            format!(
                "expected a floating-point or complex dtype, but got dtype=torch.{}",
                dtype.name()
            ),
        ),
    })
}

/// The overloads one table row stands for, bound by keyword:
/// `arange(end=5)` is `arange(end)`, and `randint_like(x, high=9)`
/// `randint_like(self, high)`. The rules read the positional forms: a lone
/// bound is the first argument.
fn normalise_overloads(a: &mut Args) -> OpResult<()> {
    let (first, second) = match a.op.name {
        "arange" => ("start", "end"),
        "randint_like" => ("low", "high"),
        _ => return Ok(()),
    };
    let (i, j) = (a.idx(first), a.idx(second));
    match (a.get(first), a.get(second)) {
        (Value::None, Value::None) => Err(oe(
            "arguments",
            format!("{}() missing required argument `{second}`", a.op.name),
        )),
        (Value::None, _) if a.op.name == "randint_like" || matches!(a.get("step"), Value::None) => {
            a.v[i] = std::mem::replace(&mut a.v[j], Value::None);
            Ok(())
        }
        (Value::None, _) => Err(oe(
            "arguments",
            format!("{}() missing required argument `{first}`", a.op.name),
        )),
        _ => Ok(()),
    }
}

/// Checks of arguments that are not tensors, made before any op runs:
/// gelu's `approximate` (C++'s get_gelutype_enum, the ref's check), div's
/// `rounding_mode` (the ref's ValueError, the meta function's check), and
/// F.hardtanh's bounds (torch/nn/functional.py, a ValueError; `hardtanh_`
/// itself has no such check).
fn argument_checks(op: &OpDef, a: &Args) -> OpResult<()> {
    match op.name {
        "gelu" | "gelu_" => {
            if let Value::Str(s) = a.get("approximate") {
                if !matches!(&**s, "none" | "tanh") {
                    return Err(oe(
                        "other",
                        "approximate argument must be either none or tanh.",
                    ));
                }
            }
        }
        "div" | "div_" | "divide" | "divide_" => {
            if let Value::Str(mode) = a.get("rounding_mode") {
                if !matches!(&**mode, "trunc" | "floor") {
                    return Err(oe("other", format!("div expected rounding_mode to be one of None, 'trunc', or 'floor' but found '{mode}'")));
                }
            }
        }
        "hardtanh" => {
            let num = |v: &Value| match v {
                Value::Float(f) => Some(*f),
                Value::Int(i) => i.as_int().map(|i| i as f64),
                _ => None,
            };
            if let (Some(lo), Some(hi)) = (num(a.get("min_val")), num(a.get("max_val"))) {
                if lo > hi {
                    return Err(oe("other", "min_val cannot be greater than max_val"));
                }
            }
        }
        _ => {}
    }
    Ok(())
}

/// `x.mT`, or with `conj` `x.mH` / `x.H`: the last two dims transposed,
/// and for a complex tensor a lazy conjugate (the conj bit, which
/// `view_as_real` refuses; `Machine::conj`).
fn conjugate_transpose(it: &mut Interp, t: TensorId, conj: bool, span: Span) -> R<Value> {
    let v = it.call_op(
        "transpose",
        smallvec::smallvec![Value::Tensor(t), Value::int(-2), Value::int(-1)],
        Vec::new(),
        span,
    )?;
    if let (true, Value::Tensor(id)) = (conj, &v) {
        if it.m.t(*id).dtype.is_complex() {
            it.m.conj.insert(*id);
        }
    }
    Ok(v)
}

/// ScatterBackward's gradient for `src` is `grad.gather(dim, index)`, of
/// the index's shape: eager's engine (validate_outputs) refuses it unless
/// src's shape expands to it (`Machine::bad_grads`, edge 1 of the node).
fn scatter_src_grad(it: &mut Interp, op: &OpDef, a: &Args, node: super::domain::NodeId) {
    if it.m.mode != Mode::Eager || op.rule != "scatter" {
        return;
    }
    let (Value::Tensor(src), Value::Tensor(index)) = (a.get("src"), a.get("index")) else {
        return;
    };
    if !it.m.requires_grad(*src) {
        return;
    }
    let expected = it.m.t(*src).sizes().clone();
    let got = it.m.t(*index).sizes().clone();
    if !shape::is_expandable_to(&expected, &got) {
        it.m.bad_grads.entry(node).or_insert((1, got, expected));
    }
}

/// ConstantPadNdBackward0 pads the gradient back with the pads negated
/// (`constant_pad_nd_backward`), through the same checks: a positive pad
/// there needs every new size above 0, so a forward pad that grew a dim
/// of size 0 to 1 fails in backward (`Machine::backward_errors`;
/// tests/oracle/eager_pad_backward_checks.tp). Eager only.
#[cold]
#[inline(never)]
fn pad_backward_check(it: &mut Interp, a: &Args, node: NodeId, outs: &[TensorId]) {
    let (true, [out], Ok(pad)) = (constant_pad_mode(a), outs, a.syms("pad")) else {
        return;
    };
    let Some(negated) = pad
        .iter()
        .map(|p| p.as_int().map(|v| SymInt::int(-v)))
        .collect::<Option<Dims>>()
    else {
        return;
    };
    let sizes = it.m.t(*out).sizes().clone();
    if let Err(e) = constant_pad_checks(Mode::Eager, &sizes, &negated, &mut it.m.sizes) {
        it.m.backward_errors.entry(node).or_insert(e);
    }
}

/// F.pad's mode is "constant" (given or by default): constant_pad_nd.
fn constant_pad_mode(a: &Args) -> bool {
    match a.get("mode") {
        Value::None => true,
        Value::Str(m) => &**m == "constant",
        _ => false,
    }
}

/// Does matmul refuse its operands before its first op (a dot, mv, mm,
/// unsqueeze, expand or transpose, whose autograd kernel regenerates a
/// stale view's grad_fn)? Only a 0-d operand, or batch dims that do not
/// broadcast, are refused that early (both the analysis's torch._decomp
/// matmul and eager's); mismatched inner sizes are mm's or bmm's to refuse.
/// (A symbolic batch size is taken to broadcast.)
/// tests/oracle/matmul_stale_view_regenerated_first.tp.
fn matmul_checks_first(it: &Interp, a: &Args) -> bool {
    let (Ok(x), Ok(y)) = (a.tensor("self"), a.tensor("other")) else {
        return true;
    };
    let (xs, ys) = (it.m.t(x).sizes(), it.m.t(y).sizes());
    if xs.is_empty() || ys.is_empty() {
        return true;
    }
    let (bx, by) = (
        &xs[..xs.len().saturating_sub(2)],
        &ys[..ys.len().saturating_sub(2)],
    );
    bx.iter().rev().zip(by.iter().rev()).any(|(p, q)| {
        matches!((p.as_int(), q.as_int()), (Some(p), Some(q)) if p != q && p != 1 && q != 1)
    })
}

/// The analysis's refusals of the views the matmul family's
/// decompositions take of operands `x` and `o` (`t`, `ot`; under autocast
/// the cast copies).
fn matmul_composite_views(
    it: &mut Interp,
    rule: &str,
    t: &Tensor,
    ot: &Tensor,
    x: TensorId,
    o: TensorId,
    op: &str,
) -> OpResult<()> {
    let viewed = match rule {
        "outer" => [true, false],
        "matmul" => analysis_matmul_viewed(it, t, ot, x, o),
        _ => [false, false],
    };
    for (id, v) in [(x, viewed[0]), (o, viewed[1])] {
        if v {
            it.m.check_composite_view(id, op)?;
        }
    }
    Ok(())
}

/// Does the Python binding wrap a number argument of `a` into a tensor
/// (`Machine::wrapped_number`)? The arithmetic ops' Tensor overloads do
/// (`c * 2` is `mul.Tensor`); ops with a Scalar overload (`clamp(0)`,
/// `pow(2)`) take it as a Scalar.
fn wraps_number(a: &Args) -> bool {
    matches!(
        a.op.name.trim_end_matches('_'),
        "add" | "sub" | "subtract" | "mul" | "multiply" | "div" | "divide" | "true_divide" | "rsub"
    ) && a.op.params.iter().zip(a.v.iter()).any(|(p, v)| {
        matches!(
            p.ty,
            ParamType::TensorOrNumber | ParamType::OptTensorOrNumber
        ) && matches!(v, Value::Int(_) | Value::Float(_) | Value::Bool(_))
    })
}

/// functionalization's `sync` of a non-view op's tensor arguments
/// (`Machine::pending_values`). Analysis only; free when no write changed
/// a layout.
fn sync_args(it: &mut Interp, a: &Args) -> OpResult<()> {
    if it.m.pending_values.is_empty() {
        return Ok(());
    }
    fn sync_value(it: &mut Interp, v: &Value) -> OpResult<()> {
        match v {
            Value::Tensor(t) => it.m.sync(*t),
            Value::Tuple(items) => items.iter().try_for_each(|v| sync_value(it, v)),
            Value::List(items) => {
                let items = items.borrow().clone();
                items.iter().try_for_each(|v| sync_value(it, v))
            }
            _ => Ok(()),
        }
    }
    a.v.iter().try_for_each(|v| sync_value(it, v))
}

/// `Machine::read_value` of a non-view op's tensor arguments.
fn read_args(it: &mut Interp, a: &Args) {
    fn read(m: &mut crate::analysis::state::Machine, v: &Value) {
        match v {
            Value::Tensor(t) => m.read_value(*t),
            Value::Tuple(items) => items.iter().for_each(|v| read(m, v)),
            Value::List(items) => items.borrow().iter().for_each(|v| read(m, v)),
            _ => {}
        }
    }
    a.v.iter().for_each(|v| read(&mut it.m, v));
}

fn apply_op(it: &mut Interp, op: &'static OpDef, mut a: Args, span: Span) -> R<Value> {
    // View ops read their input's value as it is; the reshape family
    // decides in `reshape_to`. So do in-place view ops (t_, transpose_,
    // ...): functionalization appends them to the tensor's view metas
    // without a sync (`Machine::mutate_metadata`); resize_ and resize_as_
    // are mutations and sync (tests/oracle/inplace_view_no_sync.tp).
    // (detach_ is one too, tagged inplace_view: tests/oracle/detach_inplace_no_sync.tp.)
    let inplace_view = (op.class == OpClass::InplaceMeta
        && !matches!(op.rule, "resize" | "resize_as"))
        || op.name == "detach_";
    // set__functionalize syncs neither tensor: self takes the source's
    // value as it is, and its pending one (tests/oracle/set_to_pending_view.tp).
    // The view-or-copy composites (reshape, flatten, contiguous, to, the
    // casts) sync only when they copy (`reshape_to`, `copy_of`): returning
    // self dispatches nothing (tests/oracle/contiguous_does_not_sync.tp).
    let syncs = !matches!(
        op.class,
        OpClass::View | OpClass::MultiView | OpClass::ViewOrCopy
    ) && !inplace_view
        && op.rule != "set";
    if syncs && !it.m.pending_values.is_empty() {
        // (matmul, a composite, views its operands before anything syncs
        // them: their wrappers' geometries then.)
        it.m.unsynced_operands.clear();
        if op.name == "matmul" {
            for v in &a.v {
                if let Value::Tensor(t) = v {
                    if matches!(it.m.pending_values.get(t), Some(Ok(_))) {
                        let g = it.m.tensors[*t].geometry().clone();
                        it.m.unsynced_operands.push((*t, g));
                    }
                }
            }
        }
        sync_args(it, &a).map_err(|e| op_error(e, span))?;
    }
    // (set_() and the autograd flags read no value.)
    if syncs
        && !it.m.fresh_values.is_empty()
        && !matches!(op.class, OpClass::Storage | OpClass::Autograd)
    {
        read_args(it, &a);
    }
    if op.scalar_params {
        tensor_scalars(it, &a).map_err(|e| op_error(e, span))?;
    }
    if op.checks_arguments {
        argument_checks(op, &a).map_err(|e| op_error(e, span))?;
    }
    if let Some(e) = cpu_kernel_dtype_error(it, op, &a) {
        return Err(op_error(e, span));
    }
    // F.relu(x, inplace=True) and friends are the in-place op.
    if !op.derived_inplace
        && op.params.iter().any(|p| p.name == "inplace")
        && matches!(a.get("inplace"), Value::Bool(true))
    {
        if op.name == "dropout" {
            // _dropout_impl<inplace>: nothing to do (and nothing written)
            // when p is 0, outside training, or for an empty input.
            if let Some(x) = dropout_returns_input(it, &a).map_err(|e| op_error(e, span))? {
                return Ok(Value::Tensor(x));
            }
        }
        let inplace_name = format!("{}_", op.name);
        if let Some(ip) = OpTable::get().lookup(&inplace_name) {
            return apply_inplace(it, ip, a, span);
        }
        return apply_inplace(it, op, a, span);
    }
    if it.m.mode == Mode::Analysis && !it.m.python_geom.is_empty() {
        let stale = match op.name {
            "flatten" => stale_flatten(it, &a, span),
            "chunk" => stale_chunk(it, &a, span),
            "tile" => stale_tile(it, &a, span),
            _ => Ok(None),
        };
        if let Some(v) = stale.map_err(|e| op_error(e, span))? {
            return Ok(v);
        }
        stale_dims_check(it, op, &a).map_err(|e| op_error(e, span))?;
    }
    match op.class {
        OpClass::InplaceData => apply_inplace(it, op, a, span),
        OpClass::View => {
            let base = a.tensor("self").map_err(|e| op_error(e, span))?;
            // view(dtype) is not differentiable: a view that does not
            // require grad, as `detach` makes.
            let dtype_view =
                op.rule == "view" && matches!(a.get("size"), Value::Dtype(_) | Value::None);
            // A view op with an autograd kernel of its own collects its
            // input's grad_fn (which regenerates a stale view's, and may
            // refuse) before the kernel below checks the arguments; the
            // CompositeImplicit ones (narrow, movedim, unflatten…) check
            // theirs first.
            let autograd_kernel = || {
                matches!(
                    op.name,
                    "view"
                        | "as_strided"
                        | "expand"
                        | "transpose"
                        | "t"
                        | "permute"
                        | "squeeze"
                        | "unsqueeze"
                        | "select"
                        | "slice"
                        | "diagonal"
                        | "unfold"
                        | "alias"
                        | "view_as_real"
                        | "view_as_complex"
                )
            };
            if it.m.is_stale_view(base) && autograd_kernel() && !dtype_view {
                it.m.collect_stale_edge(base)
                    .map_err(|e| op_error(e, span))?;
            }
            let r = view_rule(it, op.rule, &a, span).map_err(|e| op_error(e, span))?;
            Ok(match r {
                ViewResult::Same => Value::Tensor(base),
                ViewResult::View(meta) => {
                    let v = make_view(it, base, meta, op.name, !dtype_view, span)?;
                    if it.m.mode == Mode::Analysis {
                        record_view_args(it, op.rule, &a, base, v);
                    }
                    Value::Tensor(v)
                }
            })
        }
        OpClass::MultiView => multi_view(it, op, &a, span).map_err(|e| op_error(e, span)),
        OpClass::ViewOrCopy => view_or_copy(it, op, &a, span).map_err(|e| op_error(e, span)),
        OpClass::InplaceMeta => inplace_meta(it, op, &a, span).map_err(|e| op_error(e, span)),
        OpClass::Storage => storage_op(it, op, &a, span).map_err(|e| op_error(e, span)),
        OpClass::Autograd => autograd_op(it, op, &a, span).map_err(|e| op_error(e, span)),
        OpClass::Creation => creation(it, op, &a, span).map_err(|e| op_error(e, span)),
        OpClass::Functional => {
            if !it.m.autocast.is_empty() {
                autocast_casts(it, &mut a, span)?;
            }
            let differentiable = !matches!(
                op.rule,
                "compare"
                    | "unary_bool"
                    | "binary_int"
                    | "unary_int"
                    | "argmax"
                    | "argsort"
                    | "all"
            );
            // An op's autograd kernel collects its inputs' grad_fns (which
            // regenerates a stale view's, and may refuse) before the kernel
            // below checks the arguments. The composites that check their
            // own first: linear, einsum, and matmul (`matmul_checks_first`).
            // (Only a stale view's read can refuse: looked for first.)
            // Eager's dropout that returns its input runs no autograd kernel.
            let identity = op.name == "dropout"
                && it.m.mode == Mode::Eager
                && dropout_returns_input(it, &a).is_ok_and(|x| x.is_some());
            let checks_first = |it: &Interp| match op.name {
                "linear" | "einsum" => true,
                "matmul" => matmul_checks_first(it, &a),
                _ => false,
            };
            for v in &a.v {
                if let Value::Tensor(t) = *v {
                    if it.m.is_stale_view(t) && differentiable && !identity && !checks_first(it) {
                        it.m.collect_stale_edge(t).map_err(|e| op_error(e, span))?;
                    }
                }
            }
            // (Only an inference tensor can be refused: looked for first.)
            let inference = it.m.made_inference
                && a.v
                    .iter()
                    .any(|v| matches!(v, Value::Tensor(t) if it.m.t(*t).is_inference));
            if inference
                && differentiable
                && !identity
                && !matches!(op.name, "matmul" | "linear" | "einsum")
            {
                it.m.check_early_saves(saved_variant(&a), false, &named_inputs(&a))
                    .map_err(|e| op_error(e, span))?;
            }
            let (metas, result_fixups) = functional(it, op, &a, span)
                .map_err(|e| analysis_wording(it, op, e))
                .map_err(|e| op_error(e, span))?;
            if let Some(v) = result_fixups {
                return Ok(v);
            }
            // These ops' autograd kernels make a node whenever an input
            // requires grad, and set_history asserts a differentiable
            // result: an integer one fails (`x.sum(dtype=torch.int32)`,
            // an int tensor masked_fill'ed with a float that requires grad).
            let named = named_inputs(&a);
            // So does any differentiable op on an integer tensor that
            // requires grad (an in-place op wrote a value that requires
            // grad into it): its result is an integer too.
            let integer_input_grad = || {
                named
                    .iter()
                    .filter_map(|(_, t)| *t)
                    .any(|t| !it.m.t(t).dtype.can_require_grad() && it.m.requires_grad(t))
            };
            if (matches!(
                op.name,
                "sum" | "prod" | "cumsum" | "cumprod" | "nansum" | "masked_fill" | "index_fill"
            ) && metas.iter().any(|m| !m.dtype.can_require_grad()))
                || (differentiable
                    && metas.first().is_some_and(|m| !m.dtype.can_require_grad())
                    && integer_input_grad())
            {
                let present: smallvec::SmallVec<[TensorId; 4]> =
                    named.iter().filter_map(|(_, t)| *t).collect();
                if it.m.records_grad(&present, DType::F32) {
                    return Err(op_error(
                        oe("other", "isDifferentiableType(variable.scalar_type()) INTERNAL ASSERT FAILED at \"/pytorch/torch/csrc/autograd/functions/utils.h\":74, please report a bug to PyTorch.")
                            .help("an integer result cannot carry gradients: detach the input, or reduce in a floating dtype and convert after"),
                        span,
                    ));
                }
            }
            // Autograd's generated kernels refuse a complex result that
            // requires grad unless the op's derivative is known to be right
            // for complex numbers (`throw_error_for_complex_autograd`).
            if let Some(base) = complex_autograd_refused(op.name) {
                let complex = metas.iter().any(|m| m.dtype.is_complex())
                    || (op.name == "argsort"
                        && a.tensor("self").is_ok_and(|t| it.m.t(t).dtype.is_complex()));
                if complex {
                    let present: smallvec::SmallVec<[TensorId; 4]> =
                        named.iter().filter_map(|(_, t)| *t).collect();
                    if it.m.records_grad(&present, DType::C64) {
                        return Err(op_error(complex_autograd_error(base), span));
                    }
                }
            }
            let mut outs = smallvec::SmallVec::<[TensorId; 2]>::new();
            for m in metas {
                outs.push(it.m.fresh(m, span, op.name));
            }
            if let ([out], Mode::Eager) = (outs.as_slice(), it.m.mode) {
                let get = |k: &str| a.get(k).clone();
                if let Some(sets) = super::values::after_functional(&it.m, op.name, &get, *out) {
                    it.m.record_values(*out, sets);
                    super::values::note_compare_mask(&mut it.m, op.name, &get, *out);
                }
            }
            if let ([_, indices], Mode::Eager) = (outs.as_slice(), it.m.mode) {
                // sort's, topk's and max/min(dim)'s indices: positions
                // along the dim (tests/oracle/sort_topk_indices.tp).
                let get = |k: &str| a.get(k).clone();
                if let Some(sets) = super::values::indices_along(&it.m, op.name, &get, *indices) {
                    it.m.record_values(*indices, sets);
                }
            }
            let node = record_composite(it, &a, &named, saved_variant(&a), false, &outs, span)
                .map_err(|e| op_error(e, span))?;
            if let Some(node) = node {
                name_node(it, &a, node);
                scatter_src_grad(it, op, &a, node);
                if op.name == "roll" && it.m.mode == Mode::Eager {
                    // RollBackward0 rolls the gradient back: a CPU roll,
                    // which concatenates two slices (`autocast_concat`).
                    let out = &it.m.tensors[outs[0]];
                    let dtype = out.dtype;
                    if matches!(dtype, DType::F16 | DType::BF16)
                        && !it.m.sizes.any_zero(out.sizes())
                    {
                        it.m.concat_backward.push((node, dtype));
                    }
                }
                if op.rule == "pad" && it.m.mode == Mode::Eager {
                    pad_backward_check(it, &a, node, &outs);
                }
                // A reduction to a complex dtype of a real input: its
                // gradient is complex (validate_outputs refuses it;
                // cumsum's backward converts it back).
                if it.m.mode == Mode::Eager
                    && matches!(op.name, "sum" | "mean" | "prod" | "cumprod")
                    && matches!(a.get("dtype"), Value::Dtype(d) if d.is_complex())
                    && matches!(a.get("self"), Value::Tensor(t) if !it.m.t(*t).dtype.is_complex())
                {
                    it.m.complex_grad_nodes.insert(node);
                }
                // (Saved tensors matter to the eager run's backward only.)
                if it.m.mode == Mode::Eager && op.name == "matmul" {
                    if let [(_, Some(x)), (_, Some(y))] = named.as_slice() {
                        matmul_saved_views(it, *x, *y, node);
                    }
                }
                if it.m.mode == Mode::Eager && op.name == "linear" {
                    linear_saved_views(it, &a, node, false);
                }
                if it.m.mode == Mode::Eager && op.name == "outer" {
                    // `self.reshape({-1, 1}) * vec2`: mul saves the reshape,
                    // a view of `self` with a node of its own, which an
                    // in-place detach of `self` leaves alone.
                    for s in it.m.nodes[node].saved.iter_mut() {
                        if s.role == "self" {
                            s.detachable = false;
                        }
                    }
                }
            }
            mark_reduce_not_differentiable(it, &a, it.m.tensors[outs[0]].grad_fn);
            // Integer outputs (indices) never require grad: detach them from the node.
            for &o in &outs {
                if !it.m.tensors[o].dtype.can_require_grad() {
                    it.m.tensors[o].grad_fn = None;
                }
            }
            Ok(if outs.len() == 1 {
                Value::Tensor(outs[0])
            } else {
                Value::tuple(outs.into_iter().map(Value::Tensor).collect())
            })
        }
    }
}

/// The input of an eager `dropout` (`_dropout_impl`) that returns it as it
/// is, writing nothing: p is 0, outside training, or the input is empty.
fn dropout_returns_input(it: &Interp, a: &Args) -> OpResult<Option<TensorId>> {
    let x = a.tensor("input")?;
    let p = match a.get("p") {
        Value::Float(f) => Some(*f),
        Value::Int(i) => i.as_int().map(|i| i as f64),
        _ => None,
    };
    let empty = it.m.t(x).sizes().iter().any(|s| s.as_int() == Some(0));
    let training = a.bool("training")?;
    let identity =
        p.is_some_and(|p| (0.0..=1.0).contains(&p)) && (p == Some(0.0) || !training || empty);
    Ok(identity.then_some(x))
}

/// The checks of `index_add`, `index_copy` and `index_fill` (in place or
/// not). The analysis runs torch._refs' `_index_add` (index rank, then the
/// number of indices against the source's size, a guard) and the
/// decompositions of the other two (index rank for `index_fill`); eager
/// runs the C++ meta functions, which also check dtypes and slice shapes.
fn index_func_checks(it: &mut Interp, a: &Args) -> OpResult<()> {
    let name = a.op.name.trim_end_matches('_');
    let me = a.tensor("self")?;
    let index = a.tensor("index")?;
    let t = it.m.t(me).clone();
    let ix = it.m.t(index).clone();
    let nd = t.sizes().len();
    let ix_dim = ix.sizes().len();
    let analysis = it.m.mode == Mode::Analysis;
    // The analysis's refs check the index's rank (`index.ndim <= 1`).
    let rank_error = || {
        oe(
            "other",
            format!("Index should have dimension 1 or 0 (got {ix_dim})"),
        )
    };
    // torch._refs' _index_fill checks the index rank first, then indexes
    // a Python list with the unwrapped dim (an IndexError); _index_copy
    // canonicalizes the dim first.
    if analysis && name == "index_fill" && ix_dim > 1 {
        return Err(rank_error());
    }
    let dim = match shape::wrap_dim(a.int(it, "dim")?, nd.max(1)) {
        Err(_) if analysis && name == "index_fill" => return Err(list_index_error()),
        d => d?,
    };
    if analysis && name == "index_copy" && ix_dim > 1 {
        return Err(rank_error());
    }
    let source = match a.get("source") {
        Value::Tensor(s) => Some(it.m.t(*s).clone()),
        _ => None,
    };
    let numel = it.m.sizes.prod(ix.sizes())?;
    let mut promoted = None;
    if a.op.name == "index_copy" {
        if let Value::Tensor(s) = a.get("source") {
            promoted = autocast_promote(it, &[me, *s])?;
        }
    }
    if it.m.mode == Mode::Analysis {
        if name == "index_copy" {
            return Ok(());
        }
        if ix_dim > 1 {
            return Err(rank_error());
        }
        if let (Some(s), "index_add") = (&source, name) {
            let size = if s.sizes().is_empty() {
                SymInt::int(1)
            } else {
                s.sizes().get(dim).cloned().unwrap_or(SymInt::int(1))
            };
            let index_size = ix.sizes().first().cloned().unwrap_or(SymInt::int(1));
            if !it.m.sizes.eq(&size, &index_size) {
                return Err(oe("other", format!("Number of indices ({index_size}) should be equal to tensor.size(dim) ({size}), for dim={dim}")));
            }
        }
        return Ok(());
    }
    let ix_dtype = ix.dtype;
    let sizes_of = |d: &Dims| show(d);
    match name {
        "index_fill" => {
            eager_scalar_fits(it, t.dtype, a.get("value"))?;
            if ix_dim > 1 {
                return Err(oe("other", "Index has to be a vector/scalar"));
            }
            if ix_dtype != DType::I64 {
                return Err(oe(
                    "other",
                    "index_fill_(): Expected dtype int64 for index.",
                ));
            }
        }
        "index_add" => {
            let Some(s) = source else { return Ok(()) };
            if ix_dim > 1 {
                return Err(oe("other", format!("index_add_(): Index is supposed to be a vector, but got dim: {ix_dim} with type: {} and size: {}", torch_type_name(ix_dtype), sizes_of(ix.sizes()))));
            }
            if !matches!(ix_dtype, DType::I64 | DType::I32) {
                return Err(oe(
                    "other",
                    format!(
                        "index_add_(): Expected dtype int32/int64 for index but got: {}",
                        torch_type_name(ix_dtype)
                    ),
                ));
            }
            if t.dtype != s.dtype {
                return Err(oe(
                    "other",
                    format!(
                        "index_add_(): self ({}) and source ({}) must have the same scalar type",
                        torch_type_name(t.dtype),
                        torch_type_name(s.dtype)
                    ),
                ));
            }
            let sd = s.sizes().len();
            if !(dim == 0 || dim < sd) {
                return Err(oe("other", format!("index_add_(): Indexing dim {dim} is out of bounds of the source tensor with dim {sd}")));
            }
            let size = if sd == 0 {
                SymInt::int(1)
            } else {
                s.sizes()[dim].clone()
            };
            if !it.m.sizes.eq(&numel, &size) {
                return Err(oe("other", format!("index_add_(): Number of indices ({numel}) should be equal to source.size(dim): ({size}), for dim: {dim}")));
            }
            let (mut ss, mut ds): (Dims, Dims) = (t.sizes().clone(), s.sizes().clone());
            if sd != 0 && nd != 0 {
                ss.remove(dim);
                ds.remove(dim);
            }
            if ss.len() != ds.len() || !it.m.sizes.eq_dims(&ss, &ds) {
                return Err(oe("other", format!("source tensor shape must match self tensor shape, excluding the specified dimension. Got self.shape = {} source.shape = {}", sizes_of(t.sizes()), sizes_of(s.sizes()))));
            }
        }
        _ => {
            // index_copy
            let Some(s) = source else { return Ok(()) };
            if ix_dim > 1 {
                return Err(oe(
                    "other",
                    format!("index_copy_(): Index should have dimension 1 or 0 (got {ix_dim})"),
                ));
            }
            let sd = s.sizes().len();
            if sd == 0 && !it.m.sizes.eq_int(&numel, 1) {
                return Err(oe("other", format!("index_copy_(): When source is scalar, index should have one element (got {numel})")));
            }
            if sd != nd && sd != 0 && nd != 0 {
                return Err(oe("other", format!("index_copy_(): When source and destination are not scalars, their dimensionality must match. Source dimensionality ({sd}), destination dimensionality ({nd})")));
            }
            if ix_dtype != DType::I64 {
                return Err(oe(
                    "other",
                    format!(
                        "index_copy_(): Expected a long tensor for index, but got {}",
                        torch_type_name(ix_dtype)
                    ),
                ));
            }
            let (td, sdt) = (
                promoted_operand(promoted, t.dtype),
                promoted_operand(promoted, s.dtype),
            );
            if td != sdt {
                return Err(oe("other", format!("index_copy_(): self and source expected to have the same dtype, but got (self) {} and (source) {}", torch_type_name(td), torch_type_name(sdt))));
            }
            let (mut ss, mut ds): (Dims, Dims) = (t.sizes().clone(), s.sizes().clone());
            if !ss.is_empty() {
                ss.remove(dim);
            }
            if !ds.is_empty() && dim < ds.len() {
                ds.remove(dim);
            }
            if ss.len() != ds.len() || !it.m.sizes.eq_dims(&ss, &ds) {
                return Err(oe("other", format!("index_copy_(): Source/destination tensor must have same slice shapes. Destination slice shape: {} at dimension {dim} and source slice shape: {} at dimension 0.", sizes_of(&ss), sizes_of(&ds))));
            }
            if sd != 0 {
                let size = s.sizes()[dim].clone();
                if !it.m.sizes.eq(&numel, &size) {
                    return Err(oe("other", format!("index_copy_(): Number of indices ({numel}) should be equal to source.size(dim) ({size})")));
                }
            }
        }
    }
    // The eager kernels read the index values: ones tpi knows must fit the
    // dim. index_copy and index_fill take negative ones from the end;
    // index_add does not, and words a 0-d or 1-d self's error otherwise.
    let n = if nd == 0 {
        Some(1)
    } else {
        t.sizes()[dim].as_int()
    };
    let negatives = name != "index_add";
    let refused = |n: i64| move |v: i64| (v < 0 && !negatives) || v < -n || v >= n;
    if let Some((values, n)) = n.and_then(|n| Some((it.m.index_values(index, refused(n))?, n))) {
        let outside = values.iter().find(|&&v| refused(n)(v));
        if let Some(v) = outside {
            return Err(match name {
                "index_copy" => oe(
                    "index-out-of-range",
                    format!("index_copy_(): index {v} is out of bounds for dimension {dim} with size {n}"),
                ),
                "index_add" if nd <= 1 => oe("index-out-of-range", "index out of range in self"),
                _ => oe(
                    "index-out-of-range",
                    format!("index {v} is out of bounds for dimension {dim} with size {n}"),
                ),
            });
        }
    }
    Ok(())
}

/// `scatter(..., reduce=...)` is the `scatter.reduce` / `scatter.value_reduce`
/// overload, which has no derivative: backward through it fails
/// ("derivative for aten::scatter is not implemented").
/// In place, the backward of leaky_relu_/elu_ works on the result, which
/// refuses a negative slope (`NoDerivative::LeakyReluNegativeSlope`).
fn mark_negative_slope(it: &mut Interp, a: &Args, node: Option<NodeId>) {
    let (param, why) = match a.op.name.trim_end_matches('_') {
        "leaky_relu" => ("negative_slope", NoDerivative::LeakyReluNegativeSlope),
        "elu" => ("alpha", NoDerivative::EluNegativeAlpha),
        _ => return,
    };
    let negative = match a.get(param) {
        Value::Float(f) => *f < 0.0,
        Value::Int(i) => i.as_int().is_some_and(|i| i < 0),
        _ => false,
    };
    if let (true, Some(node)) = (negative, node) {
        it.m.nodes[node].not_implemented = Some(why);
    }
}

/// at::_pad_enum's checks of the non-constant modes: no fill value, a
/// pad length its 1-d / 2-d / 3-d kernels take for this rank, then each
/// kernel's own bounds (reflection_pad*d's metas, `_pad_circular`).
fn pad_mode_checks(
    it: &mut Interp,
    a: &Args,
    pad: &[SymInt],
    rank: usize,
    sizes: &Dims,
) -> OpResult<()> {
    let mode = match a.get("mode") {
        Value::Str(m) if &**m != "constant" => m.clone(),
        _ => return Ok(()),
    };
    let zero = match a.get("value") {
        Value::None => true,
        Value::Int(i) => i.as_int() == Some(0),
        Value::Float(f) => *f == 0.0,
        _ => false,
    };
    if !zero {
        return Err(oe(
            "other",
            format!("Padding mode \"{mode}\" doesn't take in value argument"),
        ));
    }
    if !matches!((pad.len(), rank), (2, 2 | 3) | (4, 3 | 4) | (6, 4 | 5)) {
        return Err(oe(
            "other",
            "Only 2D, 3D, 4D, 5D padding with non-constant padding are supported for now",
        ));
    }
    let nd = sizes.len();
    for i in 0..pad.len() / 2 {
        let d = nd - 1 - i;
        let (l, r, size) = (&pad[2 * i], &pad[2 * i + 1], &sizes[d]);
        match &*mode {
            "reflect" if !(it.m.sizes.lt(l, size) && it.m.sizes.lt(r, size)) => {
                return Err(oe(
                    "other",
                    format!(
                        "Argument #{}: Padding size should be less than the corresponding input dimension, but got: padding ({l}, {r}) at dimension {d} of input {}",
                        4 + 2 * i,
                        show(sizes)
                    ),
                ));
            }
            "circular" if it.m.sizes.lt(size, l) || it.m.sizes.lt(size, r) => {
                return Err(oe(
                    "other",
                    "Padding value causes wrapping around more than once.",
                ));
            }
            _ => {}
        }
    }
    Ok(())
}

/// The aten op whose autograd kernel `op` reaches, when that kernel refuses
/// complex results requiring grad: every differentiable op outside
/// `GRADIENT_IMPLEMENTED_FOR_COMPLEX` (torchgen's gen_variable_type.py).
/// Composite ops name the op they decompose into (`softmax` -> `_softmax`,
/// `relu6` -> `hardtanh`, `argsort` -> `sort`); `square` (pow), `linear`,
/// the matmul family, the reductions and index ops in that list pass.
fn complex_autograd_refused(op: &str) -> Option<&'static str> {
    let base = op.trim_end_matches('_');
    Some(match base {
        "relu" => "relu",
        "floor" => "floor",
        "ceil" => "ceil",
        "round" => "round",
        "trunc" | "fix" => "trunc",
        "sign" => "sign",
        "erf" => "erf",
        "gelu" => "gelu",
        "silu" => "silu",
        "mish" => "mish",
        "softplus" => "softplus",
        "elu" | "selu" => "elu",
        "leaky_relu" => "leaky_relu",
        "hardtanh" | "relu6" => "hardtanh",
        "hardsigmoid" => "hardsigmoid",
        "hardswish" => "hardswish",
        "logsigmoid" => "log_sigmoid_forward",
        "clamp" | "clip" => "clamp",
        "clamp_min" => "clamp_min",
        "clamp_max" => "clamp_max",
        "remainder" => "remainder",
        "fmod" => "fmod",
        "floor_divide" => "floor_divide",
        "maximum" => "maximum",
        "minimum" => "minimum",
        "atan2" => "atan2",
        "amax" => "amax",
        "amin" => "amin",
        "max" => "max",
        "min" => "min",
        "softmax" => "_softmax",
        "log_softmax" => "_log_softmax",
        "sort" | "argsort" => "sort",
        "topk" => "topk",
        "layer_norm" => "native_layer_norm",
        "conv2d" => "convolution",
        "embedding" => "embedding",
        _ => return None,
    })
}

fn complex_autograd_error(op: &str) -> OpError {
    oe(
        "other",
        format!("{op} does not support automatic differentiation for outputs with complex dtype."),
    )
    .help("compute on the real and imaginary parts (`torch.view_as_real`), or detach the input")
}

/// Overloads without a derivative whose op has one: `scatter` with a
/// `reduce` (the scatter.reduce overloads) and `remainder` of a number by a
/// tensor (remainder.Scalar_Tensor).
fn mark_reduce_not_differentiable(it: &mut Interp, a: &Args, node: Option<NodeId>) {
    let missing = match a.op.name {
        "scatter" | "scatter_" if matches!(a.get("reduce"), Value::Str(_)) => {
            if a.op.name.ends_with('_') {
                NoDerivative::ScatterReduceInplace
            } else {
                NoDerivative::ScatterReduce
            }
        }
        "remainder"
            if matches!(
                a.get("self"),
                Value::Int(_) | Value::Float(_) | Value::Bool(_)
            ) =>
        {
            NoDerivative::RemainderScalarSelf
        }
        _ => return,
    };
    if let Some(node) = node {
        it.m.nodes[node].not_implemented = Some(missing);
    }
}

fn make_view(
    it: &mut Interp,
    base: TensorId,
    meta: Meta,
    op: &'static str,
    differentiable: bool,
    span: Span,
) -> R<TensorId> {
    let autograd_view = differentiable && !matches!(op, "detach");
    it.m.view_of(base, meta, op, false, autograd_view, span)
        .map_err(|e| op_error(e, span))
}

// ---------------------------------------------------------------- dtypes

/// One operand of a pointwise op for type promotion.
#[derive(Clone, Copy, Debug)]
pub enum Operand {
    Tensor(TensorId),
    /// A Python number: its dtype category's default dtype.
    Scalar(DType),
}

fn scalar_dtype(v: &Value) -> Option<DType> {
    match v {
        Value::Bool(_) => Some(DType::Bool),
        Value::Int(_) => Some(DType::I64),
        Value::Float(_) => Some(DType::F64),
        _ => None,
    }
}

fn operand(v: &Value) -> Option<Operand> {
    match v {
        Value::Tensor(t) => Some(Operand::Tensor(*t)),
        other => scalar_dtype(other).map(Operand::Scalar),
    }
}

fn combine_categories(higher: Option<DType>, lower: Option<DType>) -> Option<DType> {
    let (Some(h), l) = (higher, lower) else {
        return lower;
    };
    if h.is_complex() {
        return Some(h);
    }
    if let Some(l) = l {
        if l.is_complex() {
            return Some(if h.is_floating() { h.to_complex() } else { l });
        }
    }
    if h.is_floating() {
        return Some(h);
    }
    if h == DType::Bool || l.is_some_and(|l| l.is_floating()) {
        return Some(match l {
            Some(l) => DType::promote(h, l),
            None => h,
        });
    }
    Some(h)
}

/// ATen's `result_type`: tensors with dims, then zero-dim tensors, then
/// wrapped numbers, each only when of a higher category.
pub fn result_type(it: &Interp, ops: &[Operand]) -> DType {
    let (mut dim, mut zero, mut wrapped): (Option<DType>, Option<DType>, Option<DType>) =
        (None, None, None);
    let promote = |acc: Option<DType>, d: DType| Some(acc.map_or(d, |a| DType::promote(a, d)));
    for o in ops {
        match o {
            Operand::Tensor(t) => {
                let t = it.m.t(*t);
                if t.sizes().is_empty() {
                    zero = promote(zero, t.dtype);
                } else {
                    dim = promote(dim, t.dtype);
                }
            }
            Operand::Scalar(d) => {
                let d = if d.is_floating() {
                    DType::F32
                } else if d.is_complex() {
                    DType::C64
                } else {
                    *d
                };
                wrapped = promote(wrapped, d);
            }
        }
    }
    combine_categories(dim, combine_categories(zero, wrapped)).unwrap_or(DType::F32)
}

// ---------------------------------------------------------------- pointwise

struct Pointwise {
    sizes: Dims,
    dtype: DType,
    tensors: smallvec::SmallVec<[TensorId; 4]>,
    /// TensorIterator's common dtype (`compute_types`): an input of
    /// another dtype is replaced by `input.to(common)` before the strides
    /// are computed.
    common: DType,
    /// The analysis's add/sub with an alpha: torch._refs' add multiplies
    /// the broadcast `other` by alpha first (`prims.mul(b, alpha)`), so
    /// the op sees that product, laid out by the expanded `other` alone.
    scaled: Option<TensorId>,
    /// Which operands, in order, are numbers (bit i for operand i; the
    /// others are tensors): a clamp's number bounds, torch.where's numbers.
    number_mask: u32,
    /// The analysis's decomposition into several elementwise ops, if the
    /// op has one (`Decomposed`).
    decomposed: Option<Decomposed>,
}

impl Pointwise {
    /// How many operands are numbers.
    fn numbers(&self) -> usize {
        self.number_mask.count_ones() as usize
    }
}

/// Broadcast shape and promoted dtype of a pointwise op's operands.
fn pointwise(it: &mut Interp, values: &[&Value], dtype_rule: &str) -> OpResult<Pointwise> {
    let mut ops = smallvec::SmallVec::<[Operand; 4]>::new();
    let mut tensors = smallvec::SmallVec::<[TensorId; 4]>::new();
    let mut sizes: Dims = Dims::new();
    for v in values {
        if let Value::None = v {
            continue;
        }
        let o = operand(v).ok_or_else(|| {
            oe(
                "arguments",
                format!("expected a tensor or a number, got `{}`", v.type_name()),
            )
        })?;
        if let Operand::Tensor(t) = o {
            let m = &mut it.m;
            let ts = m.tensors[t].sizes();
            // Broadcasting to the shape so far. The first operand's shape
            // is the shape; an equal concrete one leaves it (a symbolic
            // one goes through the rule, which may record guards).
            if tensors.is_empty() {
                sizes = ts.clone();
            } else if !(sizes == *ts && ts.iter().all(|d| d.as_int().is_some())) {
                sizes = shape::broadcast_shapes(&sizes, ts, &mut m.sizes)?;
            }
            tensors.push(t);
        }
        ops.push(o);
    }
    let number_mask = ops
        .iter()
        .take(32)
        .enumerate()
        .filter(|(_, o)| !matches!(o, Operand::Tensor(_)))
        .fold(0u32, |mask, (i, _)| mask | (1 << i));
    let common = result_type(it, &ops);
    let dtype = match dtype_rule {
        "float" => {
            if common.is_integral() {
                DType::F32
            } else {
                common
            }
        }
        "bool" => DType::Bool,
        // Bitwise ops on floating point: only eager's kernels refuse them
        // (`kernel_dtype_error`).
        "int" => common,
        _ => common,
    };
    // Integer inputs of the "float" ops are promoted (promote_integer_inputs_to_float).
    let common = if dtype_rule == "float" { dtype } else { common };
    Ok(Pointwise {
        sizes,
        dtype,
        tensors,
        common,
        scaled: None,
        number_mask,
        decomposed: None,
    })
}

/// Does FakeTensor's fast path for add/sub/mul/div.Tensor (fake_impls'
/// `make_fast_binary_impl`) take the op: an operand has symbolic sizes,
/// one operand already has the broadcast shape, and the operands are all
/// contiguous or all channels-last? (Otherwise it runs the ref.) The
/// layout of its result: `torch.empty` of the broadcast shape in the
/// first of those formats that fits.
fn fake_fast_binary(it: &mut Interp, p: &Pointwise) -> Option<MemoryFormat> {
    let m = &mut it.m;
    let symbolic = m.any_symbolic_sizes(p.tensors.iter().copied());
    if !symbolic || !p.tensors.iter().any(|&t| *m.tensors[t].sizes() == p.sizes) {
        return None;
    }
    let geoms: smallvec::SmallVec<[SharedGeometry; 3]> = p
        .tensors
        .iter()
        .map(|&t| m.tensors[t].geometry().clone())
        .collect();
    let operands: smallvec::SmallVec<[IterOperand; 3]> = geoms
        .iter()
        .map(|g| IterOperand {
            sizes: g.sizes(),
            strides: g.strides(),
        })
        .collect();
    shape::fast_binary_format(&operands, &mut m.sizes)
}

/// The analysis's layout of index_copy and index_add (and of the
/// functional forms of their in-place variants): their decompositions
/// (torch/_decomp/decompositions.py `_index_copy`, `_index_add`) run
/// `index_put`, which clones self with `MemoryFormat::Preserve`, and then
/// call `.contiguous()`, a no-op on a clone that `is_contiguous()` already
/// accepts: a channels-last self with one channel keeps its strides
/// (tests/oracle/index_copy_cloned_layout.tp).
fn cloned_contiguous_strides(it: &mut Interp, t: &Tensor) -> OpResult<Dims> {
    let cloned = shape::like_strides(
        t.sizes(),
        t.strides(),
        MemoryFormat::Preserve,
        &mut it.m.sizes,
    )?;
    if shape::is_contiguous(t.sizes(), &cloned, &mut it.m.sizes) {
        Ok(cloned)
    } else {
        shape::contiguous_strides(t.sizes(), &mut it.m.sizes)
    }
}

/// The analysis's layout of tril's and triu's results: torch._refs'
/// `mask_tensor(mask, a).contiguous()`, where the mask over the last two
/// dims is a contiguous `(h, w)` tensor broadcast to `a`'s shape and comes
/// first in `where`'s elementwise layout; `.contiguous()` keeps a result
/// `is_contiguous()` accepts (tests/oracle/normalized_layouts.tp).
fn masked_layout(it: &mut Interp, x: TensorId) -> OpResult<Dims> {
    let t = it.m.t(x).clone();
    let sizes = t.sizes();
    let s = &mut it.m.sizes;
    let mask_sizes = &sizes[sizes.len() - 2..];
    let mask_strides = shape::contiguous_strides(mask_sizes, s)?;
    let mask = IterOperand {
        sizes: mask_sizes,
        strides: &mask_strides,
    };
    let me = IterOperand {
        sizes,
        strides: t.strides(),
    };
    let strides = shape::iterator_output_strides(sizes, &[mask, me], true, s)?;
    if shape::is_contiguous(sizes, &strides, s) {
        Ok(strides)
    } else {
        shape::contiguous_strides(sizes, s)
    }
}

/// The analysis's layout of layer_norm's and log_softmax's results: their
/// decompositions (torch._refs.native_layer_norm and `_normalize`,
/// torch._decomp's `_log_softmax`) take `x.contiguous()`, a no-op on a
/// layout `is_contiguous()` accepts (size-1 dims with any strides), and
/// combine it elementwise with keepdim reductions over `dims` (mean and
/// rstd; amax and logsumexp), then with the parameters. Each step is
/// `compute_elementwise_output_strides`, where a reduction's zero strides
/// keep the contiguous short cut from applying, so the input's order of
/// dims, size-1 dims included, decides. (float16 and bfloat16 are computed
/// in float32; the conversions keep a dense layout.)
/// (tests/oracle/normalized_layouts.tp). `params`: layer_norm's weight and
/// bias; `twice`: layer_norm multiplies by rstd after subtracting the mean.
fn normalized_layout(
    it: &mut Interp,
    x: TensorId,
    dims: &[usize],
    params: &[TensorId],
    twice: bool,
) -> OpResult<Dims> {
    let t = it.m.t(x).clone();
    let sizes = t.sizes();
    // With symbolic sizes FakeTensor takes its fast path for the sub, mul
    // and add of these decompositions (`shape::fast_binary_format`): contiguous (or
    // channels-last) operands give a plainly contiguous (channels-last)
    // result, whatever strides the input's size-1 dims had
    // (tests/oracle/normalized_layout_symbolic.tp).
    let symbolic = !it.m.has_static_sizes(x);
    let param_geoms: smallvec::SmallVec<[SharedGeometry; 2]> = params
        .iter()
        .map(|&p| it.m.t(p).geometry().clone())
        .collect();
    let s = &mut it.m.sizes;
    let dense = |sizes: &[SymInt], strides: &[SymInt], s: &mut shape::Sizes| {
        if shape::is_contiguous(sizes, strides, s) {
            Ok(Dims::from(strides))
        } else {
            shape::contiguous_strides(sizes, s)
        }
    };
    let mut strides = dense(sizes, t.strides(), s)?;
    let keep: Dims = sizes
        .iter()
        .enumerate()
        .map(|(i, n)| {
            if dims.contains(&i) {
                SymInt::int(1)
            } else {
                n.clone()
            }
        })
        .collect();
    let reduced = shape::contiguous_strides(&keep, s)?;
    let with = |strides: &Dims, other: IterOperand, s: &mut shape::Sizes| {
        let me = IterOperand { sizes, strides };
        if symbolic {
            if let Some(format) = shape::fast_binary_format(&[me, other], s) {
                return shape::format_strides(sizes, format, s);
            }
        }
        shape::iterator_output_strides(sizes, &[me, other], true, s)
    };
    let by_reduction = IterOperand {
        sizes: &keep,
        strides: &reduced,
    };
    if !s.eq_int(&s.prod(sizes)?, 0) || twice {
        strides = with(&strides, by_reduction, s)?;
    }
    strides = with(&strides, by_reduction, s)?;
    for g in &param_geoms {
        let p_strides = dense(g.sizes(), g.strides(), s)?;
        let p = IterOperand {
            sizes: g.sizes(),
            strides: &p_strides,
        };
        strides = with(&strides, p, s)?;
    }
    Ok(strides)
}

/// The analysis's result layout for ops whose decomposition computes
/// elementwise on `x.contiguous()` (log_softmax, layer_norm) or
/// whose result otherwise follows a contiguous input (tril, triu,
/// index_add): contiguous, except that an input `is_contiguous()` already
/// accepts (size-1 dims with any strides, so possibly channels-last as
/// well) goes through the elementwise rule as it is, keeping an ambiguous
/// layout (tests/oracle/audit_layout_2.tp, `amb_*`). Eager's kernels make
/// contiguous results.
fn after_contiguous_strides(
    it: &mut Interp,
    x: Option<TensorId>,
    sizes: &[SymInt],
) -> OpResult<Dims> {
    if let (Some(x), Mode::Analysis) = (x, it.m.mode) {
        let t = it.m.t(x);
        let (own, strides) = (t.sizes().clone(), t.strides().clone());
        if own.len() == 4 && *own == *sizes && shape::is_contiguous(&own, &strides, &mut it.m.sizes)
        {
            return iter_strides(it, sizes, &[x]);
        }
    }
    shape::contiguous_strides(sizes, &mut it.m.sizes)
}

/// `infer_size` folded over the operands as `make_fast_binary_impl`
/// does (torch/_subclasses/fake_impls.py): the first operand's shape, then
/// each operand's in turn (a number's is `()`, a missing dim is 1); where
/// the running size is 1 (at its hint) the other operand's size is taken.
fn fast_binary_shape(it: &mut Interp, vals: &[&Value]) -> Dims {
    let mut shape: Option<Dims> = None;
    // A number comes after the tensor: Python's reflected operators
    // (`2 * y` is `y.__rmul__(2)`, `mul(y, 2)`).
    let tensors = vals.iter().filter(|v| matches!(v, Value::Tensor(_)));
    let numbers = vals.iter().filter(|v| !matches!(v, Value::Tensor(_)));
    for v in tensors.chain(numbers) {
        let other: Dims = match v {
            Value::Tensor(t) => it.m.t(*t).sizes().clone(),
            _ => Dims::new(),
        };
        let a = shape.take().unwrap_or_else(|| other.clone());
        let ndim = a.len().max(other.len());
        let mut out = Dims::with_capacity(ndim);
        for i in 0..ndim {
            let offset = ndim - 1 - i;
            let size_a = (offset < a.len()).then(|| a[a.len() - 1 - offset].clone());
            let size_b = (offset < other.len()).then(|| other[other.len() - 1 - offset].clone());
            let size_a = size_a.unwrap_or_else(|| SymInt::int(1));
            let size_b = size_b.unwrap_or_else(|| SymInt::int(1));
            out.push(if it.m.sizes.eq_int(&size_a, 1) {
                size_b
            } else {
                size_a
            });
        }
        shape = Some(out);
    }
    shape.unwrap_or_default()
}

fn iter_strides(it: &mut Interp, sizes: &[SymInt], tensors: &[TensorId]) -> OpResult<Dims> {
    let m = &mut it.m;
    let operands: smallvec::SmallVec<[IterOperand; 4]> = tensors
        .iter()
        .map(|&t| {
            let t = &m.tensors[t];
            IterOperand {
                sizes: t.sizes(),
                strides: t.strides(),
            }
        })
        .collect();
    let refs_expand = m.mode == Mode::Analysis;
    iter_layout(&mut m.sizes, sizes, &operands, refs_expand)
}

/// The output strides of an elementwise op over `operands`: the analysis's
/// refs rule (`refs_expand`), or eager's TensorIterator, whose fast setup
/// comes first: operands all of the output's shape (no broadcast, no 0-d
/// one) that are all contiguous give a contiguous output, even when they
/// are channels-last too (`(2, 1, 4, 5)` with channels-last strides), where
/// the refs' rule sorts the dims. (Eager casts an operand of another dtype
/// before the fast setup: `operands` are then the cast copies.)
fn iter_layout(
    s: &mut shape::Sizes,
    sizes: &[SymInt],
    operands: &[IterOperand],
    refs_expand: bool,
) -> OpResult<Dims> {
    if !refs_expand
        && sizes.len() == 4
        && !operands.is_empty()
        && operands.iter().all(|op| op.sizes == sizes)
        && operands
            .iter()
            .all(|op| shape::is_contiguous(op.sizes, op.strides, s))
    {
        return shape::contiguous_strides(sizes, s);
    }
    shape::iterator_output_strides(sizes, operands, refs_expand, s)
}

/// A tensor's layout: its sizes and strides.
type Geo = (Dims, Dims);

/// The strides of one elementwise op of a torch._refs decomposition, as
/// the analysis lays it out: `compute_elementwise_output_strides` over the
/// operands (each a `(sizes, strides)` pair) broadcast to `shape`. A Python
/// number (a CPU scalar to the refs) is no operand.
fn refs_elementwise_on(
    m: &mut super::state::Machine,
    shape: &[SymInt],
    ops: &[(&Dims, &Dims)],
) -> OpResult<Dims> {
    let operands: smallvec::SmallVec<[IterOperand; 3]> = ops
        .iter()
        .map(|(sizes, strides)| IterOperand { sizes, strides })
        .collect();
    shape::iterator_output_strides(shape, &operands, true, &mut m.sizes)
}

/// [`refs_elementwise_on`] at the operands' broadcast shape, with it.
fn refs_elementwise(m: &mut super::state::Machine, ops: &[&Geo]) -> OpResult<Geo> {
    let mut shape: Dims = Dims::new();
    for g in ops {
        shape = shape::broadcast_shapes(&shape, &g.0, &mut m.sizes)?;
    }
    let pairs: smallvec::SmallVec<[(&Dims, &Dims); 3]> = ops.iter().map(|g| (&g.0, &g.1)).collect();
    let strides = refs_elementwise_on(m, &shape, &pairs)?;
    Ok((shape, strides))
}

/// Pointwise ops whose analysis meta kernel (activate_meta, under the
/// Python dispatcher) is a decomposition running several elementwise ops
/// (torch._refs.nn.functional, torch._decomp.decompositions, torch._refs),
/// or, for isfinite, a CompositeImplicitAutograd kernel that does. Each op
/// lays its output out by the refs' rule on the operands it sees, so a
/// size-1 dim's stride can change from one op to the next: a `(1, 3, 1)`
/// input strided `(1, 16, 5)` gives `(1, 1, 1)` after one op, which is
/// contiguous, and `(3, 1, 1)` after the next.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Decomposed {
    /// `a * 0.5 * (1 + erf(a * M_SQRT1_2))`.
    Gelu,
    /// `0.5 * a * (1 + tanh(kBeta * (a + kKappa * (a * a * a))))`.
    GeluTanh,
    /// `where(a > 0, scale * a, (alpha * scale) * expm1(a * input_scale))`.
    Elu,
    /// `scale * where(a > 0, a, alpha * expm1(a))`.
    Selu,
    /// `where(a * beta > threshold, a, log1p(exp(a * beta)) / beta)`.
    Softplus,
    /// Softplus called with the schema's defaults (the integers `beta=1`,
    /// `threshold=20`), which __torch_dispatch__ does not pass on: the
    /// decomposition's `beta is None` branch, `where(a > threshold, a,
    /// log1p(exp(a)))`. A float `1.0` is not the default.
    SoftplusNoBeta,
    /// `a * tanh(F.softplus(a))`.
    Mish,
    /// `where(gt(a, 0), a, mul(a, negative_slope))`.
    LeakyRelu,
    /// `clamp(clamp(a + 3, min=0), max=6) / 6`.
    Hardsigmoid,
    /// `a * clamp(clamp(a + 3, min=0), max=6) / 6`.
    Hardswish,
    /// log_sigmoid_forward: `minimum(0, a) - log1p(exp(-abs(a)))`.
    LogSigmoid,
    /// A floating `a`: `abs(a) == inf`.
    IsInf,
    /// A floating or complex `a` (C++'s composite): `(a == a) * (a.abs() != inf)`.
    IsFinite,
    /// logical_and/or/xor of operands converted to a non-bool dtype:
    /// each broadcast, then `!= 0`, then the bitwise op.
    Logical,
}

impl Decomposed {
    /// The decomposition the analysis runs for `op` (an in-place op's
    /// functional form is the op), given its common dtype.
    fn of(op: &str, a: &Args, common: DType) -> Option<Decomposed> {
        let is_int = |name: &str, default: i64| matches!(a.get(name), Value::Int(i) if i.as_int() == Some(default));
        Some(match op.trim_end_matches('_') {
            "gelu" => match a.get("approximate") {
                Value::Str(s) if s.as_ref() == "tanh" => Decomposed::GeluTanh,
                _ => Decomposed::Gelu,
            },
            "elu" => Decomposed::Elu,
            "selu" => Decomposed::Selu,
            "softplus" if is_int("beta", 1) && is_int("threshold", 20) => {
                Decomposed::SoftplusNoBeta
            }
            "softplus" => Decomposed::Softplus,
            "mish" => Decomposed::Mish,
            "leaky_relu" => Decomposed::LeakyRelu,
            "hardsigmoid" => Decomposed::Hardsigmoid,
            "hardswish" => Decomposed::Hardswish,
            "logsigmoid" => Decomposed::LogSigmoid,
            "isinf" if common.is_floating() => Decomposed::IsInf,
            "isfinite" if common.is_floating() || common.is_complex() => Decomposed::IsFinite,
            "logical_and" | "logical_or" | "logical_xor" if common != DType::Bool => {
                Decomposed::Logical
            }
            _ => return None,
        })
    }
}

/// The analysis's strides of `chain` over its operands as its
/// decomposition sees them (converted to the compute dtype already).
fn refs_decomposed_strides(
    m: &mut super::state::Machine,
    chain: Decomposed,
    sizes: &[SymInt],
    operands: &[Geo],
) -> OpResult<Dims> {
    let r = refs_elementwise;
    let Some(a) = operands.first() else {
        return Ok(Dims::new());
    };
    // An op of `a` and numbers: `a * 0.5`, `a > 0`, `expm1(a)`.
    let of_a = r(m, &[a])?;
    // With a beta: `a * beta` first, and a division by beta last.
    let softplus = |m: &mut super::state::Machine, beta: bool| -> OpResult<Geo> {
        if !beta {
            let log1p = r(m, &[&of_a])?;
            return r(m, &[&of_a, a, &log1p]);
        }
        let exp = r(m, &[&of_a])?;
        let log1p = r(m, &[&exp])?;
        let divided = r(m, &[&log1p])?;
        let above = r(m, &[&of_a])?;
        r(m, &[&above, a, &divided])
    };
    // torch.clamp(torch.clamp(a + 3, min=0), max=6) / 6.
    let hard = |m: &mut super::state::Machine| -> OpResult<Geo> {
        let mut x = of_a.clone();
        for _ in 0..2 {
            x.1 = refs_clamp_strides(m, std::slice::from_ref(&x), 1)?;
        }
        Ok(x)
    };
    let out = match chain {
        Decomposed::Gelu => {
            let erf = r(m, &[&of_a])?;
            let one_plus = r(m, &[&erf])?;
            r(m, &[&of_a, &one_plus])?
        }
        Decomposed::GeluTanh => {
            let square = r(m, &[a, a])?;
            let cube = r(m, &[&square, a])?;
            let scaled_cube = r(m, &[&cube])?;
            let sum = r(m, &[a, &scaled_cube])?;
            let inner = r(m, &[&sum])?;
            let tanh = r(m, &[&inner])?;
            let one_plus = r(m, &[&tanh])?;
            r(m, &[&of_a, &one_plus])?
        }
        Decomposed::Elu => {
            let expm1 = r(m, &[&of_a])?;
            let scaled = r(m, &[&expm1])?;
            r(m, &[&of_a, &of_a, &scaled])?
        }
        Decomposed::Selu => {
            let rhs = r(m, &[&of_a])?;
            let chosen = r(m, &[&of_a, a, &rhs])?;
            r(m, &[&chosen])?
        }
        Decomposed::Softplus => softplus(m, true)?,
        Decomposed::SoftplusNoBeta => softplus(m, false)?,
        Decomposed::Mish => {
            // (F.softplus(a): the defaults.)
            let softplus = softplus(m, false)?;
            let tanh = r(m, &[&softplus])?;
            r(m, &[a, &tanh])?
        }
        Decomposed::LeakyRelu => r(m, &[&of_a, a, &of_a])?,
        Decomposed::Hardsigmoid => {
            let clamped = hard(m)?;
            r(m, &[&clamped])?
        }
        Decomposed::Hardswish => {
            let clamped = hard(m)?;
            let product = r(m, &[a, &clamped])?;
            r(m, &[&product])?
        }
        Decomposed::LogSigmoid => {
            // (`of_a` is abs(a) and minimum(0, a) alike.)
            let neg = r(m, &[&of_a])?;
            let exp = r(m, &[&neg])?;
            let log1p = r(m, &[&exp])?;
            r(m, &[&of_a, &log1p])?
        }
        Decomposed::IsInf => r(m, &[&of_a])?,
        Decomposed::IsFinite => {
            let finite = r(m, &[&of_a])?;
            r(m, &[&of_a, &finite])?
        }
        Decomposed::Logical => {
            let mut nonzero: smallvec::SmallVec<[Geo; 2]> = smallvec::SmallVec::new();
            for (s, st) in operands {
                let expanded = (
                    Dims::from(sizes),
                    shape::refs_expanded_strides(s, st, sizes, &mut m.sizes)?,
                );
                nonzero.push(r(m, &[&expanded])?);
            }
            let refs: smallvec::SmallVec<[&Geo; 2]> = nonzero.iter().collect();
            r(m, &refs)?
        }
    };
    Ok(out.1)
}

/// torch._refs.clamp, the analysis's, over `layouts` (`a`'s, then each
/// tensor bound's): for each bound (min, then max) `where(ge(a, min) |
/// isnan(a), a, min)` (`le` for max), each op laid out by the refs'
/// elementwise rule on the tensors it sees. A number bound (`numbers` of
/// them, when there is no tensor bound) is none of those tensors: inside
/// the kernel, where takes it as a number. isnan's output of a contiguous
/// `a` is contiguous whatever `a`'s size-1 strides, which then decides the
/// `where` (tests/oracle/clamp_tensor_layout.tp, clamp_number_bounds_layout.tp).
fn refs_clamp_strides(
    m: &mut super::state::Machine,
    layouts: &[Geo],
    numbers: usize,
) -> OpResult<Dims> {
    let Some(((a_sizes, a_strides), bounds)) = layouts.split_first() else {
        return Ok(Dims::new());
    };
    let (mut sizes, mut strides) = (a_sizes.clone(), a_strides.clone());
    let run = refs_elementwise_on;
    let tensor_bounds = bounds.iter().map(Some);
    let number_bounds = std::iter::repeat_n(None, if bounds.is_empty() { numbers } else { 0 });
    for bound in tensor_bounds.chain(number_bounds) {
        let out = match bound {
            Some((bs, _)) => shape::broadcast_shapes(&sizes, bs, &mut m.sizes)?,
            None => sizes.clone(),
        };
        let me = (&sizes, &strides);
        let cmp = match bound {
            Some((bs, bst)) => run(m, &out, &[me, (bs, bst)])?,
            None => run(m, &out, &[me])?,
        };
        let nan = run(m, &sizes, &[me])?;
        let cond = run(m, &out, &[(&out, &cmp), (&sizes, &nan)])?;
        strides = match bound {
            Some((bs, bst)) => run(m, &out, &[(&out, &cond), me, (bs, bst)])?,
            None => run(m, &out, &[(&out, &cond), me])?,
        };
        sizes = out;
    }
    Ok(strides)
}

/// torch._refs.floor_divide, the analysis's floor division (`//`,
/// `div(rounding_mode="floor")`), laid out op by op: `_floor_divide_float`'s
/// fmod, sub, true_divide, comparisons and wheres (or the integer path's
/// signbit, fmod and div), each by the refs' elementwise rule on the
/// operands it sees. A Python number becomes `scalar_tensor(b)`, a 0-d
/// tensor on the meta device that each op expands (with static sizes; with
/// symbolic ones a CPU scalar that the ops leave out,
/// tests/oracle/floor_divide_symbolic_layout.tp); tensor operands are
/// broadcast to the common shape first. `a`/`b` None: a number. None when
/// neither is a tensor. tests/oracle/floor_divide_layout.tp.
fn refs_floor_divide_strides(
    m: &mut super::state::Machine,
    a: Option<TensorId>,
    b: Option<TensorId>,
    dtype: DType,
) -> OpResult<Option<Dims>> {
    let geo = |m: &super::state::Machine, t: Option<TensorId>| -> Geo {
        t.map_or_else(Default::default, |t| {
            (m.tensors[t].sizes().clone(), m.tensors[t].strides().clone())
        })
    };
    if a.is_none() && b.is_none() {
        return Ok(None);
    }
    let (mut x, mut y) = (geo(m, a), geo(m, b));
    if a.is_some() && b.is_some() {
        // The reference's own _maybe_broadcast.
        let out = shape::broadcast_shapes(&x.0, &y.0, &mut m.sizes)?;
        x = (
            out.clone(),
            shape::refs_expanded_strides(&x.0, &x.1, &out, &mut m.sizes)?,
        );
        y = (
            out.clone(),
            shape::refs_expanded_strides(&y.0, &y.1, &out, &mut m.sizes)?,
        );
    }
    // With symbolic sizes FakeTensor runs the decomposition under the fake
    // mode itself (`has_symbolic_sizes`), not inside the kernel on `meta`:
    // a number's `scalar_tensor` is then a CPU scalar, which the refs
    // neither expand nor count when they lay the output out.
    let cpu_scalars = m.any_symbolic_sizes([a, b].into_iter().flatten());
    let op = |m: &mut super::state::Machine, ops: &[&Geo]| -> OpResult<Geo> {
        if cpu_scalars {
            let kept: smallvec::SmallVec<[&Geo; 3]> =
                ops.iter().copied().filter(|g| !g.0.is_empty()).collect();
            if !kept.is_empty() {
                return refs_elementwise(m, &kept);
            }
        }
        refs_elementwise(m, ops)
    };
    // A half dtype is computed in float32: the tensors are converted first
    // and the result back (prims.convert_element_type, which keeps a
    // non-overlapping and dense tensor's strides, else lays it out as an
    // elementwise op of one operand).
    let half = matches!(dtype, DType::F16 | DType::BF16);
    let convert = |m: &mut super::state::Machine, g: Geo| -> OpResult<Geo> {
        if shape::is_non_overlapping_and_dense(&g.0, &g.1, &mut m.sizes) {
            Ok(g)
        } else {
            refs_elementwise(m, &[&g])
        }
    };
    if half {
        if a.is_some() {
            x = convert(m, x)?;
        }
        if b.is_some() {
            y = convert(m, y)?;
        }
    }
    let result = if dtype.is_floating() {
        let md = op(m, &[&x, &y])?;
        let diff = op(m, &[&x, &md])?;
        let mut div = op(m, &[&diff, &y])?;
        let (lx, ly) = (op(m, &[&x])?, op(m, &[&y])?);
        let signs = op(m, &[&lx, &ly])?;
        let nonzero = op(m, &[&md])?;
        let mask = op(m, &[&nonzero, &signs])?;
        let less = op(m, &[&div])?;
        div = op(m, &[&mask, &less, &div])?;
        let mut floor = op(m, &[&div])?;
        let frac = op(m, &[&div, &floor])?;
        let mask = op(m, &[&frac])?;
        let more = op(m, &[&floor])?;
        floor = op(m, &[&mask, &more, &floor])?;
        let basic = op(m, &[&x, &y])?;
        let zero: Geo = Default::default();
        let signed_zero = op(m, &[&zero, &basic])?;
        let nonzero_div = op(m, &[&div])?;
        floor = op(m, &[&nonzero_div, &floor, &signed_zero])?;
        let nonzero_b = op(m, &[&y])?;
        let result = op(m, &[&nonzero_b, &floor, &basic])?;
        if half {
            convert(m, result)?
        } else {
            result
        }
    } else if dtype.is_integral() && dtype != DType::Bool {
        // _floor_divide_integer broadcasts again (a 0-d operand too).
        let out = shape::broadcast_shapes(&x.0, &y.0, &mut m.sizes)?;
        let x = (
            out.clone(),
            shape::refs_expanded_strides(&x.0, &x.1, &out, &mut m.sizes)?,
        );
        let y = (
            out.clone(),
            shape::refs_expanded_strides(&y.0, &y.1, &out, &mut m.sizes)?,
        );
        let quotient = op(m, &[&x, &y])?;
        if dtype == DType::U8 {
            quotient
        } else {
            let (sx, sy) = (op(m, &[&x])?, op(m, &[&y])?);
            let signs = op(m, &[&sx, &sy])?;
            let md = op(m, &[&x, &y])?;
            let nonzero = op(m, &[&md])?;
            let offset = op(m, &[&signs, &nonzero])?;
            let offset = op(m, &[&offset])?;
            op(m, &[&quotient, &offset])?
        }
    } else {
        return Ok(None);
    };
    Ok(Some(result.1))
}

// (Its one caller inlined it before the decompositions made it longer.)
#[inline(always)]
fn pointwise_meta(it: &mut Interp, op: &str, p: Pointwise) -> OpResult<Meta> {
    let m = &mut it.m;
    // The analysis's meta kernels of most pointwise ops are torch._refs
    // (activate_meta): for float16/bfloat16 they compute in float32, so each
    // operand is first converted (`prims.convert_element_type` lays a
    // non-dense one out densely), and the output's strides come from the
    // converted operands (whose size-1 dims then no longer tell the layout
    // apart: a transposed size-1 slice comes out contiguous). Measured on
    // the meta device against every layout of up to 4 dims; round, sigmoid,
    // silu, lerp, addcmul, addcdiv and where keep eager's layout.
    let upcast = m.mode == Mode::Analysis
        && matches!(p.common, DType::F16 | DType::BF16)
        && !matches!(
            op.trim_end_matches('_'),
            "round" | "sigmoid" | "silu" | "lerp" | "addcmul" | "addcdiv" | "where"
        );
    let converted =
        upcast || p.scaled.is_some() || p.tensors.iter().any(|&t| m.tensors[t].dtype != p.common);
    let name = op.trim_end_matches('_');
    let analysis = m.mode == Mode::Analysis;
    // (torch._refs' hardtanh is clamp with its two number bounds; relu6 is
    // hardtanh.)
    let hardtanh = matches!(name, "hardtanh" | "relu6");
    let clamp = analysis
        && (hardtanh
            || ((p.tensors.len() > 1 || p.numbers() > 0)
                && matches!(name, "clamp" | "clip" | "clamp_min" | "clamp_max")));
    // torch.where with a number (where.ScalarSelf/ScalarOther) takes it as
    // a 0-d tensor, which the refs expand like any operand.
    let zero_d = analysis && name == "where" && p.numbers() > 0;
    let decomposed = p.decomposed.filter(|_| analysis);
    let strides = if converted || clamp || zero_d || decomposed.is_some() {
        // `.to(common)` keeps a dense input's strides and lays a non-dense
        // one (expanded, stepped) out densely (preserve_format): its zero
        // strides no longer step aside in the permutation.
        let mut owned: smallvec::SmallVec<[Geo; 4]> = smallvec::SmallVec::new();
        let mut ids = p.tensors.iter();
        for i in 0..p.tensors.len() + p.numbers() {
            if i < 32 && p.number_mask & (1 << i) != 0 {
                if zero_d {
                    owned.push((Dims::new(), Dims::new()));
                }
                continue;
            }
            let Some(&id) = ids.next() else { break };
            let t = &m.tensors[id];
            if p.scaled == Some(id) {
                let me = IterOperand {
                    sizes: t.sizes(),
                    strides: t.strides(),
                };
                let product = shape::iterator_output_strides(&p.sizes, &[me], true, &mut m.sizes)?;
                owned.push((p.sizes.clone(), product));
                continue;
            }
            let (sizes, strides) = (t.sizes().clone(), t.strides().clone());
            // (_to_copy keeps a dense input's strides exactly, size-1 dims too.)
            let strides = if (upcast || t.dtype != p.common)
                && !shape::is_non_overlapping_and_dense(&sizes, &strides, &mut m.sizes)
            {
                shape::like_strides(&sizes, &strides, MemoryFormat::Preserve, &mut m.sizes)?
            } else {
                strides
            };
            owned.push((sizes, strides));
        }
        if let Some(chain) = decomposed {
            // (The decomposition runs on the converted operands.)
            refs_decomposed_strides(m, chain, &p.sizes, &owned)?
        } else if clamp {
            // torch._refs.clamp runs on the converted operands.
            refs_clamp_strides(m, &owned, if hardtanh { 2 } else { p.numbers() })?
        } else {
            let operands: smallvec::SmallVec<[IterOperand; 4]> = owned
                .iter()
                .map(|(sizes, strides)| IterOperand { sizes, strides })
                .collect();
            iter_layout(&mut m.sizes, &p.sizes, &operands, analysis)?
        }
    } else {
        iter_strides(it, &p.sizes, &p.tensors)?
    };
    Ok(Meta {
        sizes: p.sizes,
        strides,
        offset: SymInt::int(0),
        dtype: p.dtype,
    })
}

// ---------------------------------------------------------------- tensor operators

pub fn tensor_binop(it: &mut Interp, op: BinOp, l: Value, r: Value, span: Span) -> R<Value> {
    let (name, swap) = match op {
        BinOp::Add => ("add", false),
        BinOp::Sub => ("sub", false),
        BinOp::Mul => ("mul", false),
        BinOp::Div => ("div", false),
        BinOp::FloorDiv => ("floor_divide", false),
        BinOp::Mod => ("remainder", false),
        BinOp::Pow => ("pow", false),
        BinOp::MatMul => ("matmul", false),
        BinOp::BitAnd => ("bitwise_and", false),
        BinOp::BitOr => ("bitwise_or", false),
        BinOp::BitXor => ("bitwise_xor", false),
        BinOp::LShift => ("bitwise_left_shift", false),
        BinOp::RShift => ("bitwise_right_shift", false),
    };
    let _ = swap;
    if !matches!(l, Value::Tensor(_)) && !matches!(r, Value::Tensor(_)) {
        return it.binop(op, l, r, span);
    }
    // `<<` and `>>` are Tensor.__lshift__/__rshift__, whose decomposition
    // under the analysis (torch._refs) checks the left operand's dtype;
    // eager's kernel refuses it in its own words (`kernel_dtype_error`).
    if matches!(op, BinOp::LShift | BinOp::RShift) && it.m.mode == Mode::Analysis {
        let which = if op == BinOp::LShift {
            "lshift"
        } else {
            "rshift"
        };
        let refused = match &l {
            Value::Tensor(t) => shift_meta_error(it, which, it.m.t(*t).dtype, &r),
            // (`2 << x` is x.__rlshift__: only the tensor's dtype is looked at.)
            _ if matches!(r, Value::Tensor(_)) => shift_value_error(it, which, &r),
            _ => None,
        };
        if let Some(e) = refused {
            return Err(op_error(e, span));
        }
    }
    for v in [&l, &r] {
        if !matches!(v, Value::Tensor(_)) && scalar_dtype(v).is_none() {
            return Err(err(
                "type",
                format!(
                    "unsupported operand types for {}: `{}` and `{}`",
                    op.symbol(),
                    l.type_name(),
                    r.type_name()
                ),
                span,
            ));
        }
    }
    if op == BinOp::MatMul && !(matches!(l, Value::Tensor(_)) && matches!(r, Value::Tensor(_))) {
        return Err(err("type", "@ needs two tensors", span));
    }
    // `2 / x` is Tensor.__rtruediv__ (torch/_tensor.py): `x.reciprocal() * 2`,
    // a float result for an integer x and other saved tensors than div's.
    if op == BinOp::Div && !matches!(l, Value::Tensor(_)) {
        let reciprocal = it.call_op("reciprocal", smallvec::smallvec![r], Vec::new(), span)?;
        return it.call_op("mul", smallvec::smallvec![reciprocal, l], Vec::new(), span);
    }
    it.call_op(name, smallvec::smallvec![l, r], Vec::new(), span)
}

pub fn tensor_compare(it: &mut Interp, op: CmpOp, l: Value, r: Value, span: Span) -> R<Value> {
    let name = match op {
        CmpOp::Eq => "eq",
        CmpOp::Ne => "ne",
        CmpOp::Lt => "lt",
        CmpOp::Le => "le",
        CmpOp::Gt => "gt",
        CmpOp::Ge => "ge",
        _ => {
            return Err(err(
                "unsupported",
                format!("`{}` on tensors is not supported", op.symbol()),
                span,
            ))
        }
    };
    // 2 < x is x > 2.
    let (name, l, r) = if matches!(l, Value::Tensor(_)) {
        (name, l, r)
    } else {
        let flipped = match name {
            "lt" => "gt",
            "gt" => "lt",
            "le" => "ge",
            "ge" => "le",
            n => n,
        };
        (flipped, r, l)
    };
    if matches!(r, Value::None) {
        return Ok(Value::Bool(name == "ne"));
    }
    it.call_op(name, smallvec::smallvec![l, r], Vec::new(), span)
}

// ---------------------------------------------------------------- attributes and queries

pub fn tensor_attr(
    it: &mut Interp,
    t: TensorId,
    attr: &str,
    attr_span: Span,
    span: Span,
) -> R<Value> {
    // Methods are the common case: no need to look at the tensor for them.
    if !matches!(attr, "shape" | "ndim" | "dtype" | "T" | "mT" | "H" | "mH")
        && OpTable::get().lookup(attr).is_some_and(|o| o.method)
    {
        return Ok(Value::method(Value::Tensor(t), attr));
    }
    let tt = it.m.t(t);
    let sizes = it.m.python_geometry(t).sizes();
    let (ndim, dtype) = (sizes.len(), tt.dtype);
    Ok(match attr {
        "shape" => Value::tuple(sizes.iter().cloned().map(Value::Int).collect()),
        "ndim" => Value::int(ndim as i64),
        "dtype" => Value::Dtype(dtype),
        "requires_grad" => Value::Bool(it.m.requires_grad(t)),
        // The analysis's wrapper of an input that requires grad mirrors its
        // autograd meta with an `Error` grad_fn: not a leaf.
        "is_leaf" => Value::Bool(
            !(it.m.mode == Mode::Analysis && tt.analysis_input_grad)
                && it.m.is_leaf(t).map_err(|e| op_error(e, span))?,
        ),
        "grad_fn" => {
            if it.m.grad_fn(t).map_err(|e| op_error(e, span))?.is_some() {
                Value::Str(Rc::from("grad_fn"))
            } else {
                Value::None
            }
        }
        "device" => Value::Device(Rc::from("cpu")),
        "is_cuda" => Value::Bool(false),
        "layout" => Value::Str(Rc::from("strided")),
        // These decompose in Python (CompositeImplicitAutograd), reading the
        // wrapper's own rank (`ndim`: stale after set_); the view op they
        // call runs on the tensor's real sizes.
        "T" => {
            let n = ndim as i64;
            let dims: Vec<Value> = (0..n).rev().map(Value::int).collect();
            return it.call_op(
                "permute",
                smallvec::smallvec![Value::Tensor(t), Value::tuple(dims)],
                Vec::new(),
                span,
            );
        }
        "mT" | "mH" => {
            if ndim == 0 {
                return Ok(Value::Tensor(t));
            }
            if ndim < 2 {
                return Err(err(
                    "other",
                    format!("tensor.{attr} is only supported on matrices or batches of matrices. Got {ndim}-D tensor."),
                    span,
                ));
            }
            return conjugate_transpose(it, t, attr == "mH", span);
        }
        "H" => {
            if ndim == 0 {
                return Ok(Value::Tensor(t));
            }
            if ndim != 2 {
                return Err(err(
                    "other",
                    format!("tensor.H is only supported on matrices (2-D tensors). Got {ndim}-D tensor."),
                    span,
                ));
            }
            return conjugate_transpose(it, t, true, span);
        }
        "real" | "imag" => {
            return it.call_op(
                attr,
                smallvec::smallvec![Value::Tensor(t)],
                Vec::new(),
                span,
            )
        }
        "data" => {
            return Err(err("unsupported", "`.data` is not supported", attr_span)
                .with_help("use `.detach()`"));
        }
        _ => {
            if is_query(attr) || OpTable::get().lookup(attr).is_some_and(|o| o.method) {
                Value::method(Value::Tensor(t), attr)
            } else {
                let table = OpTable::get();
                let names = table
                    .names(|o| o.method)
                    .chain(QUERIES.iter().copied())
                    .chain([
                        "shape",
                        "ndim",
                        "dtype",
                        "requires_grad",
                        "is_leaf",
                        "T",
                        "mT",
                        "H",
                    ]);
                let mut d = err(
                    "unknown-op",
                    format!("tensors have no method or attribute `{attr}` that tpi knows"),
                    attr_span,
                )
                .with_label("unknown here");
                if let Some(s) = crate::ops::did_you_mean(attr, names) {
                    d = d.with_help(format!("did you mean `{s}`?"));
                }
                return Err(d);
            }
        }
    })
}

const QUERIES: &[&str] = &[
    "size",
    "dim",
    "ndimension",
    "numel",
    "nelement",
    "stride",
    "storage_offset",
    "is_contiguous",
    "is_floating_point",
    "is_complex",
    "element_size",
    "item",
    "tolist",
    "type",
    "untyped_storage",
    "data_ptr",
    "get_device",
    "is_inference",
];

fn is_query(name: &str) -> bool {
    QUERIES.contains(&name)
}

pub fn tensor_method(
    it: &mut Interp,
    t: TensorId,
    name: &str,
    pos: Values,
    kw: Vec<(Name, Value)>,
    span: Span,
    func_span: Span,
) -> R<Value> {
    if is_query(name) {
        return query(it, t, name, pos, kw, span);
    }
    let table = OpTable::get();
    match table.lookup(name).filter(|o| o.method) {
        Some(op) => call_tensor_method(it, t, op, pos, kw, span),
        None => Err(err(
            "unknown-op",
            format!("`{name}` is not a tensor method tpi knows"),
            func_span,
        )),
    }
}

/// The op `tensor.NAME(...)` calls when `NAME` is a method of the op table
/// (what `tensor_attr` then `tensor_method` resolve it to); None for the
/// attributes and queries they handle otherwise.
pub fn direct_tensor_method(name: &str) -> Option<&'static OpDef> {
    // Decided once per spelling: a method call looks its name up once,
    // not also against the attributes and queries by text.
    static DIRECT: std::sync::OnceLock<rustc_hash::FxHashMap<&'static str, &'static OpDef>> =
        std::sync::OnceLock::new();
    DIRECT
        .get_or_init(|| {
            OpTable::get()
                .spellings()
                .filter(|(name, op)| op.method && is_direct_method_name(name))
                .collect()
        })
        .get(name)
        .copied()
}

/// Whether a method spelling is called as its op, not answered as a tensor
/// attribute or a query (`direct_tensor_method`).
fn is_direct_method_name(name: &str) -> bool {
    !matches!(name, "shape" | "ndim" | "dtype" | "T" | "mT" | "H" | "mH") && !is_query(name)
}

/// Does `op`, called as `spelling` with these positional arguments, reach
/// an ADInplaceOrView kernel that makes its output a differentiable view
/// (`as_view`, which shares the base's version counter)? Composite ops
/// (`reshape`, `flatten`, `swapaxes`, `movedim`, `mT`, `tensor_split`, …)
/// decompose inside the functionalization mode instead, and `detach` and
/// `view(dtype)` are non-differentiable views. Checked with PyTorch 2.7.1's
/// dispatcher (`_dispatch_has_kernel_for_dispatch_key`) and its analysis.
pub fn view_kernel_shares_version(op: &OpDef, spelling: &str, pos: &[Value]) -> bool {
    if !matches!(op.class, OpClass::View | OpClass::MultiView) {
        return false;
    }
    match spelling {
        "view" => !matches!(pos.first(), Some(Value::Dtype(_))),
        "as_strided" | "expand" | "transpose" | "t" | "permute" | "squeeze" | "unsqueeze"
        | "narrow" | "select" | "slice" | "diagonal" | "unfold" | "alias" | "unbind" | "split"
        | "split_with_sizes" | "chunk" | "view_as_real" | "view_as_complex" => true,
        _ => false,
    }
}

/// Calls the method `op` on tensor `t`.
pub fn call_tensor_method(
    it: &mut Interp,
    t: TensorId,
    op: &'static OpDef,
    pos: Values,
    kw: Vec<(Name, Value)>,
    span: Span,
) -> R<Value> {
    let args = it.bind_with(op, Some(Value::Tensor(t)), pos, kw, span)?;
    apply(it, op, args, span)
}

fn query(
    it: &mut Interp,
    t: TensorId,
    name: &str,
    pos: Values,
    kw: Vec<(Name, Value)>,
    span: Span,
) -> R<Value> {
    let mut tt = it.m.t(t).clone();
    // Python reads the wrapper's own sizes (stale after set_).
    tt.set_geometry(it.m.python_geometry(t).clone());
    let dim_arg = |it: &mut Interp, v: Option<&Value>| -> R<Option<usize>> {
        match v {
            None | Some(Value::None) => Ok(None),
            Some(Value::Int(i)) => {
                let d =
                    it.m.sizes
                        .concrete(i, "a dim")
                        .map_err(|e| op_error(e, span))?;
                // TensorImpl::size(d) / stride(d) wrap without the scalar
                // allowance: a 0-d tensor has no dim to read.
                if tt.sizes().is_empty() {
                    return Err(op_error(no_dims_error(d), span));
                }
                shape::wrap_dim(d, tt.sizes().len())
                    .map(Some)
                    .map_err(|e| op_error(e, span))
            }
            Some(other) => Err(err(
                "type",
                format!("a dim must be an int, not `{}`", other.type_name()),
                span,
            )),
        }
    };
    let first = pos
        .first()
        .or(kw.iter().find(|(k, _)| k == "dim").map(|(_, v)| v));
    Ok(match name {
        "size" => match dim_arg(it, first)? {
            Some(d) => Value::Int(tt.sizes()[d].clone()),
            None => Value::tuple(tt.sizes().iter().cloned().map(Value::Int).collect()),
        },
        "stride" => match dim_arg(it, first)? {
            Some(d) => Value::Int(tt.strides()[d].clone()),
            None => Value::tuple(tt.strides().iter().cloned().map(Value::Int).collect()),
        },
        "dim" | "ndimension" => Value::int(tt.sizes().len() as i64),
        "numel" | "nelement" => {
            Value::Int(it.m.sizes.prod(tt.sizes()).map_err(|e| op_error(e, span))?)
        }
        "storage_offset" => Value::Int(tt.offset.clone()),
        "is_contiguous" => {
            let f = match first.or(kw
                .iter()
                .find(|(k, _)| k == "memory_format")
                .map(|(_, v)| v))
            {
                Some(Value::MemoryFormat(f)) => *f,
                _ => MemoryFormat::Contiguous,
            };
            Value::Bool(shape::is_contiguous_as(
                tt.sizes(),
                tt.strides(),
                f,
                &mut it.m.sizes,
            ))
        }
        "is_floating_point" => Value::Bool(tt.dtype.is_floating()),
        "is_complex" => Value::Bool(tt.dtype.is_complex()),
        "element_size" => Value::int(tt.dtype.itemsize()),
        "is_inference" => Value::Bool(tt.is_inference),
        "get_device" => Value::int(-1),
        // `.item()` of a one-element tensor tpi knows the value of: in the
        // analysis a FakeTensor constant (an int `torch.tensor` literal,
        // not written since), in eager any literal.
        "item" if it.m.constant_value(t).is_some() => {
            Value::int(it.m.constant_value(t).unwrap_or_default())
        }
        "item" | "tolist" | "data_ptr" => {
            return Err(err(
                "data-dependent",
                format!("`.{name}()` reads the tensor's data, which tpi does not know"),
                span,
            ))
        }
        _ => {
            return Err(err(
                "unsupported",
                format!("`.{name}()` is not supported"),
                span,
            ))
        }
    })
}

// ---------------------------------------------------------------- views

enum ViewResult {
    Same,
    View(Meta),
}

/// What autograd's view replay needs of a view op's arguments that the
/// geometries do not tell (the analysis only): unfold's window
/// (`unfold_windows`), and the `ViewArg`s (`Machine::view_args`).
fn record_view_args(it: &mut Interp, rule: &str, a: &Args, base: TensorId, v: TensorId) {
    let int = |name: &str| match a.get(name) {
        Value::Int(i) => i.as_int(),
        _ => None,
    };
    // A size given as -1 (view infers it; expand keeps the dim).
    let minus_one = |d: &Value| matches!(d, Value::Int(i) if i.as_int() == Some(-1));
    match rule {
        "squeeze" => {
            // Autograd's replay is squeeze with the dims as given: record
            // them, a dim the squeeze kept included (its geometry tells
            // nothing of it).
            let given: Option<smallvec::SmallVec<[i64; 8]>> = match a.get("dim") {
                Value::Int(i) => i.as_int().map(|d| smallvec::smallvec![d]),
                Value::Tuple(ds) => ds
                    .iter()
                    .map(|d| match d {
                        Value::Int(i) => i.as_int(),
                        _ => None,
                    })
                    .collect(),
                Value::None => {
                    it.m.view_args.insert(v, ViewArg::SqueezeAll);
                    return;
                }
                _ => None,
            };
            let Some(given) = given.filter(|g| g.len() <= 8) else {
                return;
            };
            let mut dims = [0i8; 8];
            for (slot, &d) in dims.iter_mut().zip(&given) {
                let Ok(d) = i8::try_from(d) else {
                    return;
                };
                *slot = d;
            }
            let len = given.len() as u8;
            it.m.view_args.insert(v, ViewArg::SqueezeDims { dims, len });
        }
        "unsqueeze" => {
            let given = match a.get("dim") {
                Value::Int(i) => i.as_int(),
                _ => None,
            };
            if let Some(g) = given {
                record_given_dim(it, g, base, v);
            }
        }
        "expand" => {
            let mask = match a.get("size") {
                Value::Tuple(items) => minus_ones_mask(items.iter(), minus_one),
                Value::List(items) => minus_ones_mask(items.borrow().iter(), minus_one),
                _ => 0,
            };
            if mask != 0 {
                it.m.view_args.insert(v, ViewArg::ExpandKeep(mask));
            }
        }
        "unfold" => {
            let (size, step) = (a.int(it, "size"), a.int(it, "step"));
            if let (Ok(size), Ok(step)) = (size, step) {
                it.m.unfold_windows.insert(v, (size, step));
            }
            // (The replay needs the dimension: the geometries tell it only
            // with the window's.)
            if let Some(d) = int("dimension").and_then(|d| i8::try_from(d).ok()) {
                it.m.view_args.insert(v, ViewArg::GivenDim(d));
            }
        }
        "select" => record_select_args(it, base, v, int("dim"), int("index")),
        "permute" => {
            // The permutation, where the base has dims alike (same size and
            // stride) that the geometries do not tell apart.
            let b = it.m.t(base);
            let rank = b.sizes().len();
            let alike = (0..rank).any(|i| {
                (i + 1..rank)
                    .any(|j| b.sizes()[i] == b.sizes()[j] && b.strides()[i] == b.strides()[j])
            });
            let given: Option<Vec<i64>> = a.get("dims").sequence().and_then(|ds| {
                ds.iter()
                    .map(|d| match d {
                        Value::Int(i) => i.as_int(),
                        _ => None,
                    })
                    .collect()
            });
            let Some(given) = given else {
                return;
            };
            // The dims as given, when one is negative: the replay wraps
            // them on the new rank.
            let small: Option<Vec<i8>> = given.iter().map(|&d| i8::try_from(d).ok()).collect();
            if let Some(small) = small.filter(|g| g.len() <= 8 && g.iter().any(|&d| d < 0)) {
                let mut dims = [0i8; 8];
                dims[..small.len()].copy_from_slice(&small);
                let len = small.len() as u8;
                it.m.view_args
                    .insert(v, ViewArg::GivenPermutation { dims, len });
            } else if alike {
                let dims: Option<Vec<usize>> = given
                    .iter()
                    .map(|&d| shape::wrap_dim(d, rank).ok())
                    .collect();
                if let Some(p) = dims.as_deref().and_then(shape::Perm::new) {
                    it.m.view_args.insert(v, ViewArg::Permutation(p));
                }
            }
        }
        "transpose" => {
            // The dims as given, where the geometries do not tell them:
            // the replay wraps them on the new rank.
            let rank = it.m.t(base).sizes().len();
            // (swapaxes names them axis0 and axis1.)
            let (g0, g1) = (
                int("dim0").or_else(|| int("axis0")),
                int("dim1").or_else(|| int("axis1")),
            );
            let wrap = |d: Option<i64>| d.and_then(|d| shape::wrap_dim(d, rank).ok());
            if let (Some(d0), Some(d1)) = (wrap(g0), wrap(g1)) {
                let b = it.m.t(base);
                // (A transpose of a dim with itself changes nothing either.)
                let alike = d0 == d1
                    || (b.sizes()[d0] == b.sizes()[d1] && b.strides()[d0] == b.strides()[d1]);
                let given = g0
                    .zip(g1)
                    .and_then(|(a, b)| Some((i8::try_from(a).ok()?, i8::try_from(b).ok()?)));
                // Negative dims wrap on the new rank too.
                let negative = g0.is_some_and(|d| d < 0) || g1.is_some_and(|d| d < 0);
                if let (true, Some(given)) = (alike || negative, given) {
                    it.m.view_args
                        .insert(v, ViewArg::TransposeDims(given.0, given.1));
                }
            }
        }
        "view" => {
            let inferred = match a.get("size") {
                Value::Tuple(items) => items.iter().position(minus_one),
                Value::List(items) => items.borrow().iter().position(minus_one),
                d => minus_one(d).then_some(0),
            };
            if let Some(k) = inferred.and_then(|k| u8::try_from(k).ok()) {
                it.m.view_args.insert(v, ViewArg::InferredViewDim(k));
            }
        }
        "slice" | "narrow" => {
            let rank = it.m.t(base).sizes().len();
            let dim = int("dim").and_then(|d| shape::wrap_dim(d, rank).ok());
            if let Some(d) = dim {
                let (b, t) = (it.m.t(base), it.m.t(v));
                let size = b.sizes().get(d).and_then(SymInt::as_int);
                if b.sizes().get(d) == t.sizes().get(d) && b.strides().get(d) == t.strides().get(d)
                {
                    if let Ok(d) = u8::try_from(d) {
                        it.m.view_args.insert(v, ViewArg::FullSliceDim(d));
                    }
                } else if let (Ok(dim), Some(size)) = (u8::try_from(d), size) {
                    // narrow is slice(dim, start wrapped, start + length).
                    let given = if rule == "narrow" {
                        let start = int("start").map(|s| if s < 0 { s + size } else { s });
                        start.zip(int("length")).map(|(s, l)| (s, s + l, 1))
                    } else {
                        // An argument left out has its default; a symbolic
                        // one leaves the slice unrecorded.
                        let or = |name: &str, default: i64| match a.get(name) {
                            Value::None => Some(default),
                            _ => int(name),
                        };
                        match (or("start", 0), or("end", i64::MAX), or("step", 1)) {
                            (Some(s), Some(e), Some(st)) => Some((s, e, st)),
                            _ => None,
                        }
                    };
                    if let Some((start, end, step)) = given.filter(|g| g.2 > 0) {
                        record_slice(it, v, dim, start, end, step);
                    }
                }
            }
        }
        _ => {}
    }
}

/// `ViewArg::Slice` for slice view `v`: what autograd's replay needs of a
/// slice that does not keep its whole dim.
fn record_slice(it: &mut Interp, v: TensorId, dim: u8, start: i64, end: i64, step: i64) {
    let arg = ViewArg::Slice {
        dim,
        start,
        end,
        step,
    };
    it.m.view_args.insert(v, arg);
}

/// Bit `i` set for the `i`th of the first 64 `items` that `pick` picks.
fn minus_ones_mask<'v>(
    items: impl Iterator<Item = &'v Value>,
    pick: impl Fn(&Value) -> bool,
) -> u64 {
    items
        .take(64)
        .enumerate()
        .filter(|(_, d)| pick(d))
        .fold(0, |m, (i, _)| m | 1 << i)
}

/// `ViewArg::GivenDim` for `unsqueeze` view `v` of `base`, given dim `g`,
/// where the replay needs it: it reads the dim back from the geometries,
/// as the first place they differ, which is right unless the dim is
/// negative or a size-1 dim of the same stride sits where they would
/// first agree.
fn record_given_dim(it: &mut Interp, g: i64, base: TensorId, v: TensorId) {
    let Ok(given) = i8::try_from(g) else {
        return;
    };
    let (short, long) = (it.m.t(base), it.m.t(v));
    let ambiguous = shape::wrap_dim(g, long.sizes().len()).is_ok_and(|w| {
        short.sizes().get(w).is_some_and(|s| s.as_int() == Some(1))
            && short.strides().get(w) == long.strides().get(w)
    });
    if g < 0 || ambiguous {
        it.m.view_args.insert(v, ViewArg::GivenDim(given));
    }
}

/// constant_pad_nd's checks, first dim first (PadNd.cpp, and the
/// analysis's refs alike): it narrows by each negative pad, whose length
/// must not be negative; it returns that when no pad is positive (eager) or
/// every pad is negative (the refs); otherwise each new size must be
/// positive. Whether it returns the narrowed input's clone.
fn constant_pad_checks(
    mode: Mode,
    sizes: &[SymInt],
    pad: &[SymInt],
    s: &mut shape::Sizes,
) -> OpResult<bool> {
    let nd = sizes.len();
    let dims = || {
        (0..pad.len() / 2)
            .rev()
            .filter_map(|i| Some((nd.checked_sub(1 + i)?, i)))
    };
    for (d, i) in dims() {
        let mut cur = sizes[d].clone();
        for p in [&pad[2 * i], &pad[2 * i + 1]] {
            if s.lt_int(p, 0) {
                cur = s.add(&cur, p)?;
                if s.lt_int(&cur, 0) {
                    return Err(oe("other", "narrow(): length must be non-negative."));
                }
            }
        }
    }
    let narrow_only = pad.iter().all(|p| match mode {
        Mode::Eager => s.le(p, &SymInt::int(0)),
        Mode::Analysis => s.lt_int(p, 0),
    });
    if narrow_only {
        return Ok(true);
    }
    for (d, i) in dims() {
        let (l, r) = (&pad[2 * i], &pad[2 * i + 1]);
        let new = s.add(&s.add(&sizes[d], l)?, r)?;
        if s.lt_int(&new, 1) {
            return Err(oe(
                "other",
                format!("The input size {}, plus negative padding {l} and {r} resulted in a negative output size, which is invalid. Check dimension {d} of your input.", sizes[d]),
            ));
        }
    }
    Ok(false)
}

/// The metadata of the view an op makes of `self`.
/// The two dims a transpose (or swapdims, swapaxes, in place or not) was
/// given, as given; swapaxes names them axis0 and axis1.
fn transpose_dims(it: &mut Interp, a: &Args) -> OpResult<(i64, i64)> {
    let (k0, k1) = if a.op.name.starts_with("swapaxes") {
        ("axis0", "axis1")
    } else {
        ("dim0", "dim1")
    };
    Ok((a.int(it, k0)?, a.int(it, k1)?))
}

fn view_rule(it: &mut Interp, rule: &str, a: &Args, span: Span) -> OpResult<ViewResult> {
    let _ = span;
    let me = a.tensor("self")?;
    let nd = it.m.t(me).sizes().len();
    let mut meta = it.m.meta_of(me);
    // The rules that need only the metadata (the common views) go first,
    // without a copy of the whole tensor.
    match rule {
        "transpose" => {
            let (g0, g1) = transpose_dims(it, a)?;
            let d0 = shape::wrap_dim(g0, nd)?;
            let d1 = shape::wrap_dim(g1, nd)?;
            if nd == 0 {
                return Ok(ViewResult::View(meta));
            }
            meta.sizes.swap(d0, d1);
            meta.strides.swap(d0, d1);
            return Ok(ViewResult::View(meta));
        }
        "t" => {
            if nd > 2 {
                return Err(shape::t_rank_error(nd));
            }
            if nd == 2 {
                meta.sizes.swap(0, 1);
                meta.strides.swap(0, 1);
            }
            return Ok(ViewResult::View(meta));
        }
        "unsqueeze" => {
            let d = shape::wrap_dim(a.int(it, "dim")?, nd + 1)?;
            shape::unsqueeze_geometry(&mut meta.sizes, &mut meta.strides, d, &mut it.m.sizes)?;
            return Ok(ViewResult::View(meta));
        }
        "detach" | "alias" => return Ok(ViewResult::View(meta)),
        _ => {}
    }
    let t = it.m.t(me).clone();
    match rule {
        "view" | "view_as" => {
            // view(dtype) also as `view(dtype=...)`; `size` is the other overload.
            if rule == "view" && matches!(a.get("size"), Value::None) {
                return match a.get("dtype") {
                    Value::Dtype(d) => view_dtype(it, &t, *d).map(ViewResult::View),
                    _ => Err(oe(
                        "arguments",
                        "view() received an invalid combination of arguments: expected a dtype (`view(torch.int32)`) or a size (`view(2, 3)`)",
                    )),
                };
            }
            if let Value::Dtype(d) = a.get("size") {
                return view_dtype(it, &t, *d).map(ViewResult::View);
            }
            let target = if rule == "view_as" {
                // view_as reads `other`'s sizes as Python sees them (stale
                // after set_()).
                it.m.python_geometry(a.tensor("other")?).sizes().clone()
            } else {
                a.syms("size")?
            };
            view_sizes(it, &t, &target, &mut meta)?;
        }
        "as_strided" => {
            let sizes = a.syms("size")?;
            let strides = a.syms("stride")?;
            if sizes.len() != strides.len() {
                return Err(oe(
                    "other",
                    format!(
                        "mismatch in length of strides and shape: {} vs {}",
                        strides.len(),
                        sizes.len()
                    ),
                ));
            }
            for s in &sizes {
                if it.m.sizes.lt_int(s, 0) {
                    return Err(oe(
                        "other",
                        "as_strided: negative sizes or strides are not allowed",
                    ));
                }
            }
            // Negative strides and storage bounds: eager's setStrided, and
            // the in-place as_strided_ everywhere, refuse them (the
            // analysis's as_strided meta takes them).
            let checked = it.m.mode == Mode::Eager || a.op.name == "as_strided_";
            if checked && strides.iter().any(|s| it.m.sizes.lt_int(s, 0)) {
                return Err(oe(
                    "other",
                    format!("as_strided: Negative strides are not supported at the moment, got strides: {}", show(&strides)),
                ));
            }
            meta.sizes = sizes;
            meta.strides = strides;
            if let Value::Int(o) = a.get("storage_offset") {
                if it.m.sizes.lt_int(o, 0) {
                    return Err(oe("other", format!("Tensor: invalid storage offset {o}")));
                }
                meta.offset = o.clone();
            }
            // The analysis's as_strided_ is refused by the Python wrapper,
            // whose storage and offset set_() did not swap
            // (tests/oracle/as_strided_after_set.tp).
            if checked {
                let wrapper = match it.m.mode {
                    Mode::Analysis => it.m.python_storage.get(&a.tensor("self")?).cloned(),
                    Mode::Eager => None,
                };
                match wrapper {
                    Some((storage, offset)) => {
                        let mut meta = meta.clone();
                        if matches!(a.get("storage_offset"), Value::None) {
                            meta.offset = offset;
                        }
                        check_storage_bounds(it, storage, &meta)?;
                    }
                    None => check_storage_bounds(it, t.storage, &meta)?,
                }
            }
        }
        "expand" | "expand_as" => {
            let target = if rule == "expand_as" {
                it.m.t(a.tensor("other")?).sizes().clone()
            } else {
                a.syms("size")?
            };
            let (sizes, strides) = expand_geometry(it, &t, &target)?;
            // The result's numel (TensorImpl's checked product).
            if it.m.sizes.prod(&sizes).is_err() {
                return Err(oe("other", "numel: integer multiplication overflow"));
            }
            meta.sizes = sizes;
            meta.strides = strides;
        }
        "permute" => {
            let dims = a.ints(it, "dims")?;
            if it.m.mode == Mode::Analysis {
                // torch._refs.permute: dims are canonicalized first, then checked.
                for &d in &dims {
                    shape::wrap_dim(d, nd)?;
                }
                if dims.len() != nd {
                    return Err(shape::permute_length_error(nd, dims.len()));
                }
            }
            if dims.len() != nd {
                return Err(oe(
                    "permute",
                    format!("permute(sparse_coo): number of dimensions in the tensor input does not match the length of the desired ordering of dimensions i.e. input.dim() = {nd} is not equal to len(dims) = {}", dims.len()),
                ));
            }
            let mut seen = vec![false; nd];
            let mut sizes = Dims::with_capacity(nd);
            let mut strides = Dims::with_capacity(nd);
            for &d in &dims {
                let w = shape::wrap_dim(d, nd)?;
                if seen[w] {
                    return Err(oe("other", format!("Received an invalid permutation, {}! (permute(): duplicate dims are not allowed.)", int_list_str(&dims))));
                }
                seen[w] = true;
                sizes.push(t.sizes()[w].clone());
                strides.push(t.strides()[w].clone());
            }
            meta.sizes = sizes;
            meta.strides = strides;
        }
        "movedim" => {
            let src: Vec<i64> = match a.get("source") {
                Value::Int(_) => vec![a.int(it, "source")?],
                _ => a.ints(it, "source")?,
            };
            let dst: Vec<i64> = match a.get("destination") {
                Value::Int(_) => vec![a.int(it, "destination")?],
                _ => a.ints(it, "destination")?,
            };
            if src.len() != dst.len() {
                return Err(oe("other", format!("movedim: Invalid source or destination dims: source ({}) dims should contain the same number of dims as destination ({}) dims", int_list_str(&src), int_list_str(&dst))));
            }
            let src: Vec<usize> = src
                .iter()
                .map(|&d| shape::wrap_dim(d, nd))
                .collect::<OpResult<_>>()?;
            let dst: Vec<usize> = dst
                .iter()
                .map(|&d| shape::wrap_dim(d, nd))
                .collect::<OpResult<_>>()?;
            let repeated = |ds: &[usize]| ds.iter().enumerate().any(|(i, d)| ds[..i].contains(d));
            for (ds, what) in [(&src, "source"), (&dst, "destination")] {
                if repeated(ds) {
                    let raw = a.get(what);
                    let shown = match raw {
                        Value::Int(i) => format!("[{i}]"),
                        _ => int_list_str(&a.ints(it, what)?),
                    };
                    return Err(oe(
                        "other",
                        format!("movedim: repeated dim in `{what}` ({shown})"),
                    ));
                }
            }
            // A 0-d tensor takes dim 0 (or -1) and comes back as it is.
            if nd > 0 {
                let mut order: Vec<Option<usize>> = vec![None; nd];
                for (&s, &d) in src.iter().zip(&dst) {
                    order[d] = Some(s);
                }
                let mut rest = (0..nd).filter(|d| !src.contains(d));
                let perm: Vec<usize> = order
                    .into_iter()
                    .map(|o| o.unwrap_or_else(|| rest.next().unwrap_or(0)))
                    .collect();
                meta.sizes = perm.iter().map(|&d| t.sizes()[d].clone()).collect();
                meta.strides = perm.iter().map(|&d| t.strides()[d].clone()).collect();
            }
        }
        "squeeze" => {
            let dims: Vec<usize> = match a.opt_dims(it, "dim")? {
                None => (0..nd).collect(),
                Some(ds) => ds
                    .iter()
                    .map(|&d| shape::wrap_dim(d, nd))
                    .collect::<OpResult<_>>()?,
            };
            let mut sizes = Dims::new();
            let mut strides = Dims::new();
            for d in 0..nd {
                if dims.contains(&d) && it.m.sizes.eq_int(&t.sizes()[d], 1) {
                    continue;
                }
                sizes.push(t.sizes()[d].clone());
                strides.push(t.strides()[d].clone());
            }
            meta.sizes = sizes;
            meta.strides = strides;
        }
        "unflatten" => {
            // CompositeImplicitAutograd: the shape is built from the sizes
            // Python sees, which set_() may have left stale
            // (`Machine::python_geom`), and viewed on the value.
            let own = match it.m.mode {
                Mode::Analysis => it.m.stale_python_sizes(me).cloned(),
                Mode::Eager => None,
            }
            .unwrap_or_else(|| t.sizes().clone());
            let nd = own.len();
            let d = shape::wrap_dim(a.int(it, "dim")?, nd)?;
            if nd == 0 {
                return Err(no_dims_error(d));
            }
            let parts = a.syms("sizes")?;
            if parts.is_empty() {
                return Err(oe("other", "unflatten: sizes must be non-empty"));
            }
            let parts = unflatten_parts(it, &parts, d, &own[d])?;
            let mut sizes = Dims::from(&own[..d]);
            sizes.extend(parts);
            sizes.extend(own[d + 1..].iter().cloned());
            let strides = shape::compute_stride(t.sizes(), t.strides(), &sizes, &mut it.m.sizes)?
                .ok_or_else(|| {
                oe(
                    "view-stride",
                    "view size is not compatible with input tensor's size and stride",
                )
            })?;
            // unflatten is `view` (CompositeImplicitAutograd).
            (meta.sizes, meta.strides) = view_geometry(it, t.sizes(), t.strides(), sizes, strides)?;
        }
        "narrow" => {
            // narrow_symint (TensorShape.cpp), and narrow.Tensor's start.
            let mut start = match a.get("start") {
                Value::Tensor(s) => narrow_tensor_start(it, *s)?,
                _ => a.sym("start")?,
            };
            if nd == 0 {
                return Err(oe("other", "narrow() cannot be applied to a 0-dim tensor."));
            }
            let dim = a.int(it, "dim")?;
            let d = shape::wrap_dim(dim, nd)?;
            let length = a.sym("length")?;
            if it.m.sizes.lt_int(&length, 0) {
                return Err(oe("other", "narrow(): length must be non-negative."));
            }
            // After set_(), narrow_symint's bounds read the wrapper's stale
            // size (concrete ones here); the slice it makes clamps to the
            // value's.
            let stale = match it.m.mode {
                Mode::Analysis if !it.m.python_geom.is_empty() => it.m.stale_python_sizes(me),
                _ => None,
            };
            let concrete = start.as_int().is_some() && length.as_int().is_some();
            let stale_size = stale
                .and_then(|s| s.get(shape::wrap_dim(dim, s.len()).ok()?))
                .filter(|s| concrete && s.as_int().is_some())
                .cloned();
            let size = stale_size.unwrap_or_else(|| t.sizes()[d].clone());
            // -size <= start <= size, checked before any arithmetic.
            let below = match (start.as_int(), size.as_int()) {
                (Some(st), Some(sz)) => st < -sz,
                _ => false,
            };
            if below || it.m.sizes.lt(&size, &start) {
                return Err(oe(
                    "index-out-of-range",
                    format!("start out of range (expected to be in range of [-{size}, {size}], but got {start})"),
                ));
            }
            if it.m.sizes.lt_int(&start, 0) {
                start = it.m.sizes.add(&start, &size)?;
            }
            let end = it.m.sizes.add(&start, &length)?;
            if it.m.sizes.lt_int(&start, 0) || it.m.sizes.lt(&size, &end) {
                return Err(oe(
                    "index-out-of-range",
                    format!("start ({start}) + length ({length}) exceeds dimension size ({size})."),
                ));
            }
            return slice_meta(it, &t, d, Some(start), Some(end), 1, true).map(ViewResult::View);
        }
        "select" => {
            if nd == 0 {
                // TORCH_CHECK_INDEX: an IndexError, but not "out of range".
                return Err(oe("other", "select() cannot be applied to a 0-dim tensor."));
            }
            let d = shape::wrap_dim(a.int(it, "dim")?, nd)?;
            let idx = a.sym("index")?;
            return select_meta(it, &t, d, idx).map(ViewResult::View);
        }
        "slice" => {
            let d = shape::wrap_dim(a.int(it, "dim")?, nd)?;
            let start = match a.get("start") {
                Value::Int(i) => Some(i.clone()),
                _ => None,
            };
            let end = match a.get("end") {
                Value::Int(i) => Some(i.clone()),
                _ => None,
            };
            let step = a.int(it, "step")?;
            return slice_meta(it, &t, d, start, end, step, false).map(ViewResult::View);
        }
        "diagonal" => {
            let off = a.int(it, "offset")?;
            let d1 = shape::wrap_dim(a.int(it, "dim1")?, nd)?;
            let d2 = shape::wrap_dim(a.int(it, "dim2")?, nd)?;
            if d1 == d2 {
                return Err(oe(
                    "other",
                    format!("diagonal dimensions cannot be identical {d1}, {d2}"),
                ));
            }
            // diag_size = max(min(size1, size2 - offset), 0) for offset >= 0,
            // max(min(size1 + offset, size2), 0) otherwise; SymInt min/max only
            // guard when the symbols do not decide them.
            let (a1, a2) = if off >= 0 {
                (
                    t.sizes()[d1].clone(),
                    it.m.sizes.sub(&t.sizes()[d2], &SymInt::int(off))?,
                )
            } else {
                (
                    it.m.sizes.add(&t.sizes()[d1], &SymInt::int(off))?,
                    t.sizes()[d2].clone(),
                )
            };
            let smaller = match it.m.sizes.env.cmp_le(&a1, &a2) {
                crate::sym::Truth::Proven(true) => a1,
                crate::sym::Truth::Proven(false) => a2,
                _ => {
                    if it.m.sizes.le(&a1, &a2) {
                        a1
                    } else {
                        a2
                    }
                }
            };
            let len_sym = match it.m.sizes.env.cmp_le(&SymInt::int(0), &smaller) {
                crate::sym::Truth::Proven(true) => smaller,
                _ => {
                    if it.m.sizes.lt_int(&smaller, 0) {
                        SymInt::int(0)
                    } else {
                        smaller
                    }
                }
            };
            let start = off.abs();
            let mut offset = meta.offset.clone();
            if start > 0 && !it.m.sizes.eq_int(&len_sym, 0) {
                let st = if off >= 0 {
                    &t.strides()[d2]
                } else {
                    &t.strides()[d1]
                };
                offset =
                    it.m.sizes
                        .add(&offset, &it.m.sizes.mul(st, &SymInt::int(start))?)?;
            }
            let mut sizes = Dims::new();
            let mut strides = Dims::new();
            for d in 0..nd {
                if d != d1 && d != d2 {
                    sizes.push(t.sizes()[d].clone());
                    strides.push(t.strides()[d].clone());
                }
            }
            sizes.push(len_sym);
            strides.push(it.m.sizes.add(&t.strides()[d1], &t.strides()[d2])?);
            meta = Meta {
                sizes,
                strides,
                offset,
                dtype: t.dtype,
            };
        }
        "unfold" => {
            let d = shape::wrap_dim(a.int(it, "dimension")?, nd)?;
            // `int size` in the schema (not SymInt): a symbolic value is
            // guarded to its hint.
            let size = SymInt::int(a.int(it, "size")?);
            let step = a.int(it, "step")?;
            if step <= 0 {
                return Err(oe("other", format!("step is {step} but must be > 0")));
            }
            if it.m.sizes.lt_int(&size, 0) {
                return Err(oe(
                    "other",
                    if it.m.mode == Mode::Analysis {
                        // The fake tensor's numel of the negative-size result.
                        "numel: integer multiplication overflow".to_string()
                    } else {
                        format!("size is {size} but must be >= 0")
                    },
                ));
            }
            let dim_size = if nd == 0 {
                SymInt::int(1)
            } else {
                t.sizes()[d].clone()
            };
            if it.m.sizes.lt(&dim_size, &size) {
                let analysis = it.m.mode == Mode::Analysis;
                return Err(shape::unfold_size_error(d, dim_size, size, analysis));
            }
            let n = it.m.sizes.add(
                &it.m
                    .sizes
                    .floordiv(&it.m.sizes.sub(&dim_size, &size)?, &SymInt::int(step))?,
                &SymInt::int(1),
            )?;
            if nd == 0 {
                meta.sizes = smallvec![size];
                meta.strides = smallvec![SymInt::int(1)];
            } else {
                let st = t.strides()[d].clone();
                meta.sizes[d] = n;
                meta.strides[d] = it.m.sizes.mul(&st, &SymInt::int(step))?;
                meta.sizes.push(size);
                meta.strides.push(st);
            }
        }
        "real" | "imag" => {
            if !t.dtype.is_complex() {
                if rule == "real" {
                    return Ok(ViewResult::Same);
                }
                return Err(oe(
                    "other",
                    "imag is not implemented for tensors with non-complex dtypes.",
                ));
            }
            meta = view_as_real_meta(it, &t)?;
            meta.sizes.pop();
            meta.strides.pop();
            if rule == "imag" {
                meta.offset = it.m.sizes.add(&meta.offset, &SymInt::int(1))?;
            }
        }
        "view_as_real" => {
            if !t.dtype.is_complex() {
                return Err(oe(
                    "other",
                    "view_as_real is only supported for complex tensors",
                ));
            }
            if !it.m.conj.is_empty() && it.m.conj.contains(&a.tensor("self")?) {
                return Err(oe("other", "view_as_real doesn't work on unresolved conjugated tensors.  To resolve the conjugate tensor so you can view it as real, use self.resolve_conj()")
                    .help("make the conjugate real first: `x.H.contiguous()`"));
            }
            meta = view_as_real_meta(it, &t)?;
        }
        "view_as_complex" => {
            // ComplexHelper.h's checks, in its order.
            if !matches!(t.dtype, DType::F32 | DType::F64 | DType::F16) {
                return Err(oe(
                    "other",
                    format!("view_as_complex is only supported for half, float and double tensors, but got a tensor of scalar type: {}", torch_type_name(t.dtype)),
                ));
            }
            if nd == 0 {
                return Err(oe("other", "Input tensor must have one or more dimensions"));
            }
            if !it.m.sizes.eq_int(&t.sizes()[nd - 1], 2) {
                return Err(oe("other", "Tensor must have a last dimension of size 2"));
            }
            let strides = shape::view_as_complex_strides(&meta.strides, &mut it.m.sizes)?;
            if meta.offset.as_int().is_some_and(|v| v % 2 != 0) {
                return Err(oe(
                    "other",
                    "Tensor must have a storage_offset divisible by 2",
                ));
            }
            meta.sizes.pop();
            meta.strides = strides;
            meta.offset = it.m.sizes.floordiv(&meta.offset, &SymInt::int(2))?;
            meta.dtype = t.dtype.to_complex();
        }
        other => return Err(oe("other", format!("internal: no view rule `{other}`"))),
    }
    Ok(ViewResult::View(meta))
}

fn view_as_real_meta(it: &mut Interp, t: &Tensor) -> OpResult<Meta> {
    let mut strides = Dims::new();
    for s in t.strides() {
        strides.push(it.m.sizes.mul(s, &SymInt::int(2))?);
    }
    let mut sizes = t.sizes().clone();
    sizes.push(SymInt::int(2));
    strides.push(SymInt::int(1));
    Ok(Meta {
        sizes,
        strides,
        offset: it.m.sizes.mul(&t.offset, &SymInt::int(2))?,
        dtype: t.dtype.to_real(),
    })
}

/// `view(size)` of `t` into `meta`: the size with its -1 inferred, and the
/// strides `computeStride` finds, or the view error when there are none.
/// The analysis's view is `torch._refs.view`, whose `_collapse_view_helper`
/// checks a dim's stride only against the next dim's when that one is not
/// of size 1: it also views `(2, 1, 4)` with strides `(0, 4, 1)` as `(8,)`
/// (stride 0), which eager refuses.
fn view_sizes(it: &mut Interp, t: &Tensor, target: &[SymInt], meta: &mut Meta) -> OpResult<()> {
    let numel = it.m.sizes.prod(t.sizes())?;
    let sizes = shape::infer_size(target, &numel, &mut it.m.sizes)?;
    match shape::compute_stride(t.sizes(), t.strides(), &sizes, &mut it.m.sizes)? {
        Some(strides) => {
            (meta.sizes, meta.strides) = view_geometry(it, t.sizes(), t.strides(), sizes, strides)?;
            Ok(())
        }
        None if it.m.mode == Mode::Analysis
            && let Some(g) =
                shape::ref_view_geometry(t.sizes(), t.strides(), &sizes, &mut it.m.sizes)? =>
        {
            (meta.sizes, meta.strides) = g;
            Ok(())
        }
        None => Err(oe(
            "view-stride",
            format!(
                "view size is not compatible with input tensor's size and stride (at least one dimension spans across two contiguous subspaces): cannot view a tensor with shape {} and strides {} as shape {}",
                show(t.sizes()),
                show(t.strides()),
                show(&sizes)
            ),
        )
        .help("use .reshape(...) instead, which copies when a view is impossible")),
    }
}

/// The sizes and strides of a view that `computeStride` found
/// (`strides`): eager's; the analysis's come from `torch._refs.view`
/// (`shape::ref_view_geometry`), which differ in size-1 dims.
fn view_geometry(
    it: &mut Interp,
    old_sizes: &[SymInt],
    old_strides: &[SymInt],
    sizes: Dims,
    strides: Dims,
) -> OpResult<(Dims, Dims)> {
    if it.m.mode == Mode::Analysis {
        if old_sizes == sizes.as_slice() {
            // _reshape_view_helper skips every dim: view_of(a).
            return Ok((sizes, old_strides.into()));
        }
        if let Some(g) = shape::ref_view_geometry(old_sizes, old_strides, &sizes, &mut it.m.sizes)?
        {
            return Ok(g);
        }
        let sizes = shape::ref_view_sizes(old_sizes, Some(old_strides), sizes, &mut it.m.sizes)?;
        return Ok((sizes, strides));
    }
    Ok((sizes, strides))
}

/// `view(dtype)` (TensorConversions.cpp's `view_dtype`): the same memory
/// read as `d`. With a different element size the last dim (stride 1)
/// grows or shrinks by the ratio, and the other strides and the offset
/// scale; growing the element size needs the last size, the offset and
/// the other strides divisible by the ratio.
fn view_dtype(it: &mut Interp, t: &Tensor, d: DType) -> OpResult<Meta> {
    let (a, b) = (t.dtype.itemsize(), d.itemsize());
    let mut meta = Meta {
        sizes: t.sizes().clone(),
        strides: t.strides().clone(),
        offset: t.offset.clone(),
        dtype: d,
    };
    if a == b {
        return Ok(meta);
    }
    let (from, to) = (torch_type_name(t.dtype), torch_type_name(d));
    let nd = t.sizes().len();
    if nd == 0 {
        return Err(oe(
            "other",
            format!("self.dim() cannot be 0 to view {from} as {to} (different element sizes)"),
        ));
    }
    // `v % f == 0`, a guard on symbolic values (decided by their hints).
    let indivisible = |it: &mut Interp, v: &SymInt, f: i64| match v.as_int() {
        Some(v) => v % f != 0,
        None => v
            .modulo(&SymInt::int(f))
            .is_ok_and(|r| !it.m.sizes.eq_int(&r, 0)),
    };
    if a < b {
        let f = b / a;
        let last = &t.sizes()[nd - 1];
        if indivisible(it, last, f) {
            return Err(oe("other", format!("self.size(-1) must be divisible by {f} to view {from} as {to} (different element sizes), but got {last}")));
        }
        if indivisible(it, &t.offset, f) {
            return Err(oe("other", format!("self.storage_offset() must be divisible by {f} to view {from} as {to} (different element sizes), but got {}", t.offset)));
        }
    }
    let last_stride = &t.strides()[nd - 1];
    if !it.m.sizes.eq_int(last_stride, 1) {
        return Err(oe(
            "other",
            format!("self.stride(-1) must be 1 to view {from} as {to} (different element sizes), but got {last_stride}"),
        ));
    }
    if a > b {
        let f = a / b;
        meta.sizes[nd - 1] = it.m.sizes.mul(&t.sizes()[nd - 1], &SymInt::int(f))?;
        for s in meta.strides.iter_mut().take(nd - 1) {
            *s = s.mul(&SymInt::int(f))?;
        }
        meta.offset = meta.offset.mul(&SymInt::int(f))?;
    } else {
        let f = b / a;
        for (i, s) in t.strides().iter().take(nd - 1).enumerate() {
            if indivisible(it, s, f) {
                return Err(oe("other", format!("self.stride({i}) must be divisible by {f} to view {from} as {to} (different element sizes), but got {s}")));
            }
        }
        meta.sizes[nd - 1] = it.m.sizes.floordiv(&t.sizes()[nd - 1], &SymInt::int(f))?;
        for s in meta.strides.iter_mut().take(nd - 1) {
            *s = s.floordiv(&SymInt::int(f))?;
        }
        meta.offset = meta.offset.floordiv(&SymInt::int(f))?;
    }
    Ok(meta)
}

/// `inferExpandGeometry`.
fn expand_geometry(it: &mut Interp, t: &Tensor, target: &[SymInt]) -> OpResult<(Dims, Dims)> {
    let nd = target.len();
    let td = t.sizes().len();
    if nd < td && it.m.mode == Mode::Analysis {
        return Err(oe(
            "other",
            "expand: the requested shape has too few dimensions!",
        ));
    }
    if nd < td {
        return Err(oe(
            "expand",
            format!("expand(torch.FloatTensor{{{}}}, size={}): the number of sizes provided ({}) must be greater or equal to the number of dimensions in the tensor ({})", show(t.sizes()), show(target), nd, td),
        ));
    }
    let mut sizes = smallvec![SymInt::int(0); nd];
    let mut strides = smallvec![SymInt::int(0); nd];
    let mut negative = false;
    // The analysis runs torch._refs.expand, `prims.broadcast_in_dim`: a new
    // dim of size 1 gets the tensor's first size times stride (1 for a 0-d
    // tensor), whatever new dims come between
    // (tests/oracle/normalized_layouts.tp).
    let lead = match it.m.mode {
        Mode::Analysis => Some(shape::new_dim_stride(
            t.sizes(),
            t.strides(),
            &mut it.m.sizes,
        )?),
        Mode::Eager => None,
    };
    for i in (0..nd).rev() {
        let offset = nd - 1 - i;
        let dim = td as i64 - 1 - offset as i64;
        let (mut size, mut stride) = if dim >= 0 {
            (
                t.sizes()[dim as usize].clone(),
                t.strides()[dim as usize].clone(),
            )
        } else if let Some(lead) = &lead {
            (SymInt::int(1), lead.clone())
        } else if i + 1 < nd {
            (
                SymInt::int(1),
                it.m.sizes.mul(&sizes[i + 1], &strides[i + 1])?,
            )
        } else {
            // inferExpandGeometry: a 0-d tensor expands with all strides 0.
            (SymInt::int(1), SymInt::int(0))
        };
        let mut tsize = target[i].clone();
        let requested = tsize.as_int();
        if dim < 0 && requested == Some(-1) {
            if it.m.mode == Mode::Analysis {
                // torch._refs.expand keeps a new dim's size as given, and
                // validate_shape's `_check_is_size` fails without a message.
                return Err(oe("other", EXPECTED_COND));
            }
            return Err(oe("expand", format!("The expanded size of the tensor (-1) isn't allowed in a leading, non-existing dimension {i}")));
        }
        if requested == Some(-1) {
            tsize = size.clone();
        } else if requested.is_some_and(|r| r < 0) && (dim < 0 || it.m.sizes.eq_int(&size, 1)) {
            // A new dim or a size-1 dim takes any other negative size:
            // eager's inferExpandGeometry keeps it and the result's checked
            // numel (unsigned) overflows; torch._refs.expand checks every
            // dim against its length first, then validate_shape fails.
            negative = true;
        }
        if it.m.sizes.eq(&size, &tsize) {
            // The requested size, as PyTorch's expand keeps it.
            size = tsize;
        } else {
            if !it.m.sizes.eq_int(&size, 1) {
                return Err(oe(
                    "expand",
                    format!("The expanded size of the tensor ({tsize}) must match the existing size ({size}) at non-singleton dimension {i}.  Target sizes: {}.  Tensor sizes: {}", show(target), show(t.sizes())),
                ));
            }
            size = tsize;
            stride = SymInt::int(0);
        }
        sizes[i] = size;
        strides[i] = stride;
    }
    if negative {
        return Err(match it.m.mode {
            Mode::Analysis => oe("other", EXPECTED_COND),
            _ => oe("other", "numel: integer multiplication overflow"),
        });
    }
    Ok((sizes, strides))
}

/// `torch._check(cond)` without a message (e.g. `_check_is_size`).
const EXPECTED_COND: &str = "Expected cond to be True, but got False. (Could this error message be improved? If so, please report an enhancement request to PyTorch.)";

fn select_meta(it: &mut Interp, t: &Tensor, d: usize, idx: SymInt) -> OpResult<Meta> {
    let size = t.sizes()[d].clone();
    let neg_size = size.neg()?;
    if it.m.sizes.lt(&idx, &neg_size) || it.m.sizes.le(&size, &idx) {
        return Err(shape::select_index_error(
            &idx,
            t.sizes(),
            d,
            it.m.mode == Mode::Analysis,
        ));
    }
    let idx = if it.m.sizes.lt_int(&idx, 0) {
        it.m.sizes.add(&idx, &size)?
    } else {
        idx
    };
    let offset =
        it.m.sizes
            .add(&t.offset, &it.m.sizes.mul(&idx, &t.strides()[d])?)?;
    let mut sizes = t.sizes().clone();
    let mut strides = t.strides().clone();
    sizes.remove(d);
    strides.remove(d);
    Ok(Meta {
        sizes,
        strides,
        offset,
        dtype: t.dtype,
    })
}

/// `slice(dim, start, end, step)` with Python's clamping of bounds.
fn slice_meta(
    it: &mut Interp,
    t: &Tensor,
    d: usize,
    start: Option<SymInt>,
    end: Option<SymInt>,
    step: i64,
    exact: bool,
) -> OpResult<Meta> {
    if step <= 0 {
        return Err(oe("other", "slice step must be positive"));
    }
    // A dim read from sizes Python sees (stale after set_()) may not
    // exist on the value.
    if t.sizes().is_empty() {
        return Err(oe("other", "slice() cannot be applied to a 0-dim tensor."));
    }
    shape::wrap_dim(d as i64, t.sizes().len())?;
    let s = &mut it.m.sizes;
    let size = t.sizes()[d].clone();
    let zero = SymInt::int(0);
    let norm = |v: Option<SymInt>,
                default: SymInt,
                s: &mut crate::ops::shape::Sizes|
     -> OpResult<SymInt> {
        let Some(mut v) = v else { return Ok(default) };
        if !exact && s.lt_int(&v, 0) {
            v = s.add(&v, &size)?;
        }
        if s.lt_int(&v, 0) {
            v = SymInt::int(0);
        } else if s.lt(&size, &v) {
            v = size.clone();
        }
        Ok(v)
    };
    let start = norm(start, zero.clone(), s)?;
    let mut end = norm(end, size.clone(), s)?;
    if s.lt(&end, &start) {
        end = start.clone();
    }
    let len = s.sub(&end, &start)?;
    let n = if step == 1 {
        len
    } else {
        s.floordiv(&s.add(&len, &SymInt::int(step - 1))?, &SymInt::int(step))?
    };
    let offset = s.add(&t.offset, &s.mul(&start, &t.strides()[d])?)?;
    let mut sizes = t.sizes().clone();
    let mut strides = t.strides().clone();
    sizes[d] = n;
    strides[d] = s.mul(&strides[d], &SymInt::int(step))?;
    Ok(Meta {
        sizes,
        strides,
        offset,
        dtype: t.dtype,
    })
}

// ---------------------------------------------------------------- indexing

/// One parsed index item.
enum Index {
    Int(SymInt),
    Slice(Option<SymInt>, Option<SymInt>, Option<SymInt>),
    None,
    Ellipsis,
    Tensor(TensorId),
    Bool,
}

fn parse_index(it: &mut Interp, idx: &Value, span: Span) -> R<Vec<Index>> {
    let items = match idx {
        Value::Tuple(items) => items.as_ref().clone(),
        other => vec![other.clone()],
    };
    let mut out = Vec::new();
    for v in items {
        out.push(match v {
            Value::Int(i) => Index::Int(i),
            Value::Bool(_) => Index::Bool,
            Value::Slice(parts) => {
                let [a, b, c] = *parts;
                Index::Slice(a, b, c)
            }
            Value::None => Index::None,
            Value::Ellipsis => Index::Ellipsis,
            Value::Tensor(t) => Index::Tensor(t),
            Value::List(ref items) => {
                // An empty list indexes as an empty int64 tensor.
                let kwargs = if items.borrow().is_empty() {
                    vec![("dtype".into(), Value::Dtype(DType::I64))]
                } else {
                    Vec::new()
                };
                let t = it.call_op("tensor", smallvec::smallvec![v.clone()], kwargs, span)?;
                match t {
                    Value::Tensor(t) => Index::Tensor(t),
                    _ => return Err(err("type", "bad list index", span)),
                }
            }
            other => {
                return Err(err(
                    "type",
                    format!("a `{}` cannot index a tensor", other.type_name()),
                    span,
                ))
            }
        });
    }
    Ok(out)
}

/// `x[i]` (one int, not in a tuple) goes to `applySelect`, which on a 0-dim
/// tensor refuses index 0 as a 0-dim index and any other as out of bounds
/// of a size 0 (it reads past the empty sizes). In a tuple an int on a
/// 0-dim tensor is one index too many (`apply_slicing`).
fn check_zero_dim_select(
    it: &Interp,
    t: TensorId,
    idx: &Value,
    items: &[Index],
    span: Span,
) -> R<()> {
    let ([Index::Int(i)], false) = (items, matches!(idx, Value::Tuple(_))) else {
        return Ok(());
    };
    // The sizes Python sees (stale after set_()).
    if !it.m.python_geometry(t).sizes().is_empty() {
        return Ok(());
    }
    match i.as_int() {
        Some(0) => Err(err("other", "invalid index of a 0-dim tensor. Use `tensor.item()` in Python to convert a 0-dim tensor to a number", span)),
        Some(i) => Err(err(
            "index-out-of-range",
            format!("index {i} is out of bounds for dimension 0 with size 0"),
            span,
        )),
        None => Ok(()),
    }
}

/// Applies the basic (view) part of an index; returns the view and the
/// advanced (tensor) indices with the dims they apply to.
fn apply_slicing(
    it: &mut Interp,
    t: TensorId,
    items: &[Index],
    span: Span,
    single: bool,
    lone: bool,
) -> R<(TensorId, Vec<(usize, TensorId)>)> {
    // applySlicing reads the sizes Python sees (stale after set_()) for its
    // rank and bounds checks; the views it makes run on the real ones.
    // A lone slice (`t[1:]`, read or written: `lone`) goes straight to
    // `applySlice(self, 0, ...)`, a slice op on the real sizes, without the
    // rank check (tests/oracle/set_stale_setitem_slice.tp).
    let lone_slice = lone && matches!(items, [Index::Slice(..)]);
    // The sizes Python sees, when stale. set_item's lone slice still takes
    // applySlice's shortcut below, its length read from them (a 0-d one
    // has none: the slice op).
    let python = match it.m.mode {
        Mode::Analysis if !it.m.python_geom.is_empty() => it.m.stale_python_sizes(t).cloned(),
        _ => None,
    };
    let stale = python.as_ref().filter(|_| !lone_slice);
    let nd = stale.map_or(it.m.t(t).sizes().len(), |s| s.len());
    // count_specified_dimensions: a mask (bool or uint8) counts its dims.
    let specified: usize = items
        .iter()
        .map(|i| match i {
            Index::None | Index::Ellipsis | Index::Bool => 0,
            Index::Tensor(ix) if matches!(it.m.t(*ix).dtype, DType::Bool | DType::U8) => {
                it.m.t(*ix).sizes().len()
            }
            _ => 1,
        })
        .sum();
    if specified > nd && !lone_slice {
        return Err(err(
            "other",
            format!("too many indices for tensor of dimension {nd}"),
            span,
        ));
    }
    let mut cur = t;
    let mut dim = 0usize;
    let mut advanced = Vec::new();
    for item in items {
        // applySlicing reads a 0-dim integer index's value (`item()`) and
        // selects with it as with an int (after counting it as a tensor).
        let known_int = match item {
            Index::Tensor(ix)
                if it.m.t(*ix).sizes().is_empty()
                    && !matches!(it.m.t(*ix).dtype, DType::Bool | DType::U8) =>
            {
                it.m.constant_value(*ix).map(|v| Index::Int(SymInt::int(v)))
            }
            _ => None,
        };
        let item = known_int.as_ref().unwrap_or(item);
        // applySlice returns `self` only when the slice is exactly
        // `0:length:1`, the length read from the sizes Python sees (stale
        // after set_(): the original tensor's, then the view's own); an open
        // `x[:]` has stop = sys.maxsize, so it is a real slice. A lone slice
        // (`x[:5]`) disables the shortcut; within a tuple it asks
        // guard_size_oblivious whether the stop is the length (before
        // looking at the step), which specialises a symbolic length equal to
        // it at its hint (tests/oracle/random/regress_symbolic_sizes.tp).
        let full_slice = match item {
            Index::Slice(a, Some(b), c) if !single => {
                let length = match python.as_ref().filter(|_| cur == t) {
                    Some(s) => s.get(dim).cloned(),
                    None => it.m.t(cur).sizes().get(dim).cloned(),
                };
                a.as_ref().is_none_or(|x| x.as_int() == Some(0))
                    && length.is_some_and(|size| it.m.sizes.eq(&size, b))
                    && c.as_ref().is_none_or(|s| s.as_int() == Some(1))
            }
            _ => false,
        };
        if stale.is_some() && !full_slice {
            // A dim the stale rank allows may not exist: the op's own check.
            let real = it.m.t(cur).sizes().len();
            let bound = if matches!(item, Index::None) {
                real + 1
            } else {
                real
            };
            // (An index tensor is only recorded here: `index` checks its
            // count against the real rank.)
            if dim >= bound && !matches!(item, Index::Ellipsis | Index::Bool | Index::Tensor(_)) {
                shape::wrap_dim(dim as i64, bound).map_err(|e| op_error(e, span))?;
            }
        }
        match item {
            Index::Int(i) => {
                // The stale sizes are the original tensor's: after a first
                // view, handleDimInMultiDimIndexing reads the result's own.
                let stale_size = stale.filter(|_| cur == t).and_then(|s| s.get(dim));
                if let Some(size) = stale_size {
                    let (lo, hi) = (
                        it.m.sizes
                            .lt(i, &size.neg().map_err(|e| op_error(e.into(), span))?),
                        it.m.sizes.le(size, i),
                    );
                    if lo || hi {
                        return Err(err(
                            "index-out-of-range",
                            format!(
                                "index {i} is out of bounds for dimension {dim} with size {size}"
                            ),
                            span,
                        ));
                    }
                }
                let tt = it.m.t(cur).clone();
                if tt.sizes().is_empty() {
                    return Err(err("other", "invalid index of a 0-dim tensor. Use `tensor.item()` in Python to convert a 0-dim tensor to a number", span));
                }
                let meta = select_meta(it, &tt, dim, i.clone()).map_err(|e| {
                    op_error(
                        OpError::new(
                            "index-out-of-range",
                            format!(
                                "index {i} is out of bounds for dimension {dim} with size {}",
                                tt.sizes()[dim]
                            ),
                        ),
                        span,
                    )
                    .with_note(e.message)
                })?;
                let base = cur;
                cur =
                    it.m.view_of(cur, meta, "select", false, true, span)
                        .map_err(|e| op_error(e, span))?;
                if it.m.mode == Mode::Analysis {
                    record_select_args(it, base, cur, Some(dim as i64), i.as_int());
                }
            }
            Index::Slice(a, b, c) => {
                let tt = it.m.t(cur).clone();
                let step = match c {
                    Some(s) => {
                        it.m.sizes
                            .concrete(s, "a slice step")
                            .map_err(|e| op_error(e, span))?
                    }
                    None => 1,
                };
                if step <= 0 {
                    return Err(err("value", "step must be greater than zero", span));
                }
                if !full_slice {
                    let meta = slice_meta(it, &tt, dim, a.clone(), b.clone(), step, false)
                        .map_err(|e| op_error(e, span))?;
                    let keeps_dim = it.m.mode == Mode::Analysis
                        && step == 1
                        && meta.sizes.get(dim) == tt.sizes().get(dim);
                    cur =
                        it.m.view_of(cur, meta, "slice", false, true, span)
                            .map_err(|e| op_error(e, span))?;
                    if keeps_dim {
                        if let Ok(d) = u8::try_from(dim) {
                            it.m.view_args.insert(cur, ViewArg::FullSliceDim(d));
                        }
                    } else if it.m.mode == Mode::Analysis {
                        let start = a.as_ref().map_or(Some(0), SymInt::as_int);
                        let end = b.as_ref().map_or(Some(i64::MAX), SymInt::as_int);
                        if let (Some(start), Some(end), Ok(dim)) = (start, end, u8::try_from(dim)) {
                            record_slice(it, cur, dim, start, end, step);
                        }
                    }
                }
                dim += 1;
            }
            Index::None => {
                cur = unsqueeze_at(it, cur, dim, span)?;
                dim += 1;
            }
            Index::Ellipsis => {
                dim += nd - specified;
                if single {
                    let meta = it.m.meta_of(cur);
                    cur =
                        it.m.view_of(cur, meta, "alias", false, true, span)
                            .map_err(|e| op_error(e, span))?;
                }
            }
            Index::Tensor(ix)
                if it.m.t(*ix).sizes().is_empty() && it.m.constant_value(*ix).is_some() =>
            {
                // A 0-dim bool (or uint8) index adds a dim of size 1 or 0: an
                // unsqueeze indexed by `[0]` or `[]` (boolToIndexingTensor).
                // A 0-dim integer index with a known value is an `Index::Int`.
                let v = it.m.constant_value(*ix).unwrap_or(0);
                cur = unsqueeze_at(it, cur, dim, span)?;
                let picks: &[i64] = if v != 0 { &[0] } else { &[] };
                advanced.push((dim, long_index(it, picks, span)?));
                dim += 1;
            }
            Index::Tensor(ix) => {
                advanced.push((dim, *ix));
                dim += 1;
            }
            Index::Bool => {
                return Err(err(
                    "unsupported",
                    "indexing with a Python bool is not supported",
                    span,
                ));
            }
        }
    }
    Ok((cur, advanced))
}

/// Eager's `index` and `index_put_` kernels check every index value against
/// the size of the dim it indexes (ATen's `Indexer::get`, which names the
/// index's place among the advanced indices as its "dimension"), after the
/// op's shape checks. tpi knows the values of literal lists (`x[[0, 6]]`),
/// so it checks those: one list, or several of one length (element by
/// element, each list in turn, as the kernel goes). The analysis runs on
/// fake tensors and checks nothing.
fn check_literal_index_bounds(
    it: &Interp,
    src: TensorId,
    advanced: &[(usize, TensorId)],
) -> OpResult<()> {
    if it.m.mode != Mode::Eager {
        return Ok(());
    }
    let st = it.m.t(src);
    let env = &it.m.sizes.env;
    // A result with no elements runs no kernel.
    let empty = st
        .sizes()
        .iter()
        .enumerate()
        .any(|(d, s)| !advanced.iter().any(|(a, _)| *a == d) && env.hint(s) == Some(0));
    if empty {
        return Ok(());
    }
    // When tpi knows the values of every index tensor (literal lists and
    // tensors, integer fills): each against the size of the dim it indexes.
    let mut known = Vec::new();
    for &(d, ix) in advanced {
        let ixt = it.m.t(ix);
        if matches!(ixt.dtype, DType::Bool | DType::U8) {
            return Ok(());
        }
        let values = match st.sizes().get(d).and_then(|s| env.hint(s)) {
            Some(size) => it.m.index_values(ix, |v| v < -size || v >= size),
            None => it.m.literal_values(ix),
        };
        match values {
            Some(values) if !values.is_empty() => known.push((d, values)),
            // An index whose values tpi does not know may fail first.
            _ => return Ok(()),
        }
    }
    for (d, values) in known {
        let Some(size) = st.sizes().get(d).and_then(|s| env.hint(s)) else {
            continue;
        };
        if let Some(&v) = values.iter().find(|&&v| v < -size || v >= size) {
            if size == 0 {
                return Err(oe(
                    "other",
                    "index is out of bounds for dimension with size 0",
                ));
            }
            return Err(oe(
                "index-out-of-range",
                format!("index {v} is out of bounds for dimension {d} with size {size}"),
            ));
        }
    }
    Ok(())
}

/// Tensor indexing reads an integer index as a Python int
/// (THPUtils_unpackLong in applySlicing), which guards a symbolic one to its
/// hint: `x[n - 1]` and `x[:, m - 1] = 0` make the size static. Only
/// __setitem__ with a lone integer index selects with the SymInt itself.
fn guard_int_indices(it: &mut Interp, idx: &Value, lone_symint: bool, span: Span) -> R<()> {
    let ints: &[Value] = match idx {
        Value::Tuple(items) => items,
        Value::Int(i) if i.is_symbolic() && !lone_symint => std::slice::from_ref(idx),
        _ => return Ok(()),
    };
    for v in ints {
        if let Value::Int(i) = v {
            if i.is_symbolic() {
                it.m.sizes
                    .concrete(i, "an index")
                    .map_err(|e| op_error(e, span))?;
            }
        }
    }
    Ok(())
}

/// Python's `treatSequenceAsTuple` (python_variable_indexing.cpp): a list
/// index of fewer than 32 items, one of which is a sequence, a slice,
/// `...`, `None` or a tensor, indexes as the tuple of its items
/// (`t[[[0, 1], [1, 2]]]` is `t[[0, 1], [1, 2]]`).
fn sequence_as_tuple(idx: &Value) -> Option<Value> {
    let Value::List(items) = idx else {
        return None;
    };
    let items = items.borrow();
    let tuple_like = items.len() < 32
        && items.iter().any(|v| {
            matches!(
                v,
                Value::List(_)
                    | Value::Tuple(_)
                    | Value::Slice(_)
                    | Value::Ellipsis
                    | Value::None
                    | Value::Tensor(_)
            )
        });
    tuple_like.then(|| Value::tuple(items.clone()))
}

pub fn getitem(it: &mut Interp, t: TensorId, idx: &Value, span: Span) -> R<Value> {
    let as_tuple = sequence_as_tuple(idx);
    let idx = as_tuple.as_ref().unwrap_or(idx);
    guard_int_indices(it, idx, false, span)?;
    let items = parse_index(it, idx, span)?;
    check_zero_dim_select(it, t, idx, &items, span)?;
    let single = items.len() == 1 && !matches!(idx, Value::Tuple(_));
    let (cur, mut advanced) = apply_slicing(it, t, &items, span, single, single)?;
    resolve_known_masks(it, cur, &mut advanced, span)?;
    if advanced.is_empty() {
        if cur == t {
            // x[:, :] returns a fresh alias, never x itself.
            let meta = it.m.meta_of(cur);
            return Ok(Value::Tensor(
                it.m.view_of(cur, meta, "alias", false, true, span)
                    .map_err(|e| op_error(e, span))?,
            ));
        }
        return Ok(Value::Tensor(cur));
    }
    if !it.m.pending_values.is_empty() {
        // aten.index syncs its tensors.
        it.m.sync(cur).map_err(|e| op_error(e, span))?;
        for &(_, t) in advanced.iter() {
            it.m.sync(t).map_err(|e| op_error(e, span))?;
        }
    }
    let out = advanced_index(it, cur, &advanced, span)?;
    check_literal_index_bounds(it, cur, &advanced).map_err(|e| op_error(e, span))?;
    Ok(out)
}

/// A 1-d mask whose values tpi knows (a FakeTensor constant in the
/// analysis, a literal in eager) selects known positions: index with them
/// (`nonzero` of a constant is a constant), after the mask's shape check.
fn resolve_known_masks(
    it: &mut Interp,
    src: TensorId,
    advanced: &mut [(usize, TensorId)],
    span: Span,
) -> R<()> {
    for entry in advanced.iter_mut() {
        let (d, ix) = *entry;
        let t = it.m.t(ix);
        if !matches!(t.dtype, DType::Bool | DType::U8) || t.sizes().len() != 1 {
            continue;
        }
        // With a ShapeEnv FakeTensor's nonzero gives an unbacked size
        // even for a constant mask.
        if it.m.has_shape_env() {
            continue;
        }
        let Some(values) = it.m.known_values(ix) else {
            continue;
        };
        let st = it.m.t(src).clone();
        check_mask_shapes(it, &st, &[(d, ix)]).map_err(|e| op_error(e, span))?;
        let picks: Vec<i64> = (0i64..)
            .zip(values.iter())
            .filter(|(_, &v)| v != 0)
            .map(|(i, _)| i)
            .collect();
        *entry = (d, long_index(it, &picks, span)?);
    }
    Ok(())
}

/// Indexing's `unsqueeze` of `cur` at `dim` (a `None` index, or a 0-dim
/// bool one).
fn unsqueeze_at(it: &mut Interp, cur: TensorId, dim: usize, span: Span) -> R<TensorId> {
    let mut meta = it.m.meta_of(cur);
    shape::unsqueeze_geometry(&mut meta.sizes, &mut meta.strides, dim, &mut it.m.sizes)
        .map_err(|e| op_error(e, span))?;
    let v =
        it.m.view_of(cur, meta, "unsqueeze", false, true, span)
            .map_err(|e| op_error(e, span))?;
    if it.m.mode == Mode::Analysis {
        record_given_dim(it, dim as i64, cur, v);
    }
    Ok(v)
}

/// `torch.tensor(picks, dtype=torch.long)`: the index a known mask or a
/// 0-dim bool index stands for (its values are known, as a literal's are).
fn long_index(it: &mut Interp, picks: &[i64], span: Span) -> R<TensorId> {
    let items = picks.iter().map(|&i| Value::Int(SymInt::int(i))).collect();
    match it.call_op(
        "tensor",
        smallvec::smallvec![Value::list(items)],
        vec![("dtype".into(), Value::Dtype(DType::I64))],
        span,
    )? {
        Value::Tensor(t) => Ok(t),
        _ => Err(err("other", "internal: torch.tensor made no tensor", span)),
    }
}

/// `aten.index`: a copy with the indexed dims replaced by the broadcast index shape.
fn advanced_index(
    it: &mut Interp,
    src: TensorId,
    adv: &[(usize, TensorId)],
    span: Span,
) -> R<Value> {
    let st = it.m.t(src).clone();
    let unbacked;
    let adv = if it.m.has_shape_env() {
        unbacked = unbacked_mask_indices(it, &st, adv).map_err(|e| op_error(e, span))?;
        &unbacked[..]
    } else {
        adv
    };
    let mut idx_shape: Dims = Dims::new();
    for &(d, ix) in adv {
        let ixt = it.m.t(ix).clone();
        let data_dependent =
            ixt.dtype == DType::Bool || ixt.dtype == DType::U8 || ixt.sizes().is_empty();
        if data_dependent && it.m.mode == Mode::Analysis {
            let what = if ixt.sizes().is_empty() {
                "indexing with a 0-dim integer tensor reads its value"
            } else {
                "indexing with a boolean mask gives a data-dependent shape"
            };
            return Err(err("data-dependent", what, span).with_help(
                "use torch.where(mask, x, other) or index_select to keep the shape static",
            ));
        }
        if data_dependent && !ixt.sizes().is_empty() {
            check_mask_shapes(it, &st, &[(d, ix)]).map_err(|e| op_error(e, span))?;
        }
        if data_dependent {
            // Eager knows the data: an unknown number of selected elements.
            let u = it.m.unbacked_size();
            let keep = if ixt.sizes().is_empty() {
                vec![]
            } else {
                vec![u]
            };
            let rest: Dims = st
                .sizes()
                .iter()
                .skip(d + ixt.sizes().len().max(1))
                .cloned()
                .collect();
            let mut sizes = Dims::from(&st.sizes()[..d]);
            sizes.extend(keep);
            sizes.extend(rest);
            let meta =
                it.m.contiguous_meta(sizes, st.dtype)
                    .map_err(|e| op_error(e, span))?;
            // index.Tensor saves its indices as given: the mask too.
            let mut inputs = vec![("self", Some(src))];
            inputs.extend(adv.iter().map(|(_, t)| ("indices", Some(*t))));
            let out =
                it.m.op_result(meta, "index", &inputs, span)
                    .map_err(|e| op_error(e, span))?;
            return Ok(Value::Tensor(out));
        }
        if !ixt.dtype.is_integral() {
            return Err(op_error(index_dtype_error(), span));
        }
        if d >= st.sizes().len() {
            // The index list has an entry for every dim up to the last
            // indexed one (an undefined tensor for the others).
            let got = adv.iter().map(|(d, _)| d + 1).max().unwrap_or(d + 1);
            return Err(err(
                "other",
                format!(
                    "too many indices for tensor of dimension {} (got {got})",
                    st.sizes().len()
                ),
                span,
            ));
        }
        idx_shape = shape::broadcast_shapes(&idx_shape, ixt.sizes(), &mut it.m.sizes)
            .map_err(|e| op_error(e, span))?;
    }
    let dims: Vec<usize> = adv.iter().map(|(d, _)| *d).collect();
    let adjacent = dims.windows(2).all(|w| w[1] == w[0] + 1);
    let sizes = indexed_sizes(st.sizes(), &dims, &idx_shape);
    // meta_index_Tensor (2.7.1) follows eager's TensorIterator: the output
    // takes the dim order of `self` restrided as restride_src does (the
    // indexed dims, moved to the front when not adjacent, replaced by
    // stride-0 dims of the index shape).
    let kept = (0..st.sizes().len()).filter(|d| !dims.contains(d));
    let zeros = std::iter::repeat_n(SymInt::int(0), idx_shape.len());
    let restrided: Dims = if adjacent {
        let first = dims[0];
        st.strides()[..first]
            .iter()
            .cloned()
            .chain(zeros)
            .chain(kept.filter(|&d| d > first).map(|d| st.strides()[d].clone()))
            .collect()
    } else {
        zeros.chain(kept.map(|d| st.strides()[d].clone())).collect()
    };
    let empty = it.m.sizes.any_zero(st.sizes());
    let strides = if empty {
        shape::contiguous_strides(&sizes, &mut it.m.sizes)
    } else {
        // Eager's TensorIterator also has the index tensors as operands
        // (reshape_indexer); they decide between dims where self's restrided
        // strides are 0, size-1 dims of the result included (the meta
        // function leaves those to self alone).
        let indexers = match it.m.mode {
            Mode::Analysis => vec![],
            Mode::Eager => {
                let before = if adjacent { dims[0] } else { 0 };
                let after = st.sizes().len().saturating_sub(before + dims.len());
                let mut out = Vec::with_capacity(adv.len());
                for &(_, ix) in adv {
                    out.push(
                        index_operand(it, ix, &idx_shape, before, after)
                            .map_err(|e| op_error(e, span))?,
                    );
                }
                out
            }
        };
        let mut ops = vec![IterOperand {
            sizes: &sizes,
            strides: &restrided,
        }];
        ops.extend(
            indexers
                .iter()
                .map(|(sizes, strides)| IterOperand { sizes, strides }),
        );
        shape::iterator_output_strides(&sizes, &ops, false, &mut it.m.sizes)
    }
    .map_err(|e| op_error(e, span))?;
    let meta = Meta {
        sizes,
        strides,
        offset: SymInt::int(0),
        dtype: st.dtype,
    };
    let mut inputs = vec![("self", Some(src))];
    inputs.extend(adv.iter().map(|(_, t)| ("indices", Some(*t))));
    let out =
        it.m.op_result(meta, "index", &inputs, span)
            .map_err(|e| op_error(e, span))?;
    Ok(Value::Tensor(out))
}

/// An index tensor as eager's index kernel iterates it: broadcast to the
/// index shape (`expand_outplace`), then `reshape_indexer`'s size-1 dims
/// `before` and `after` it (a view: `computeStride`).
fn index_operand(
    it: &mut Interp,
    ix: TensorId,
    idx_shape: &[SymInt],
    before: usize,
    after: usize,
) -> OpResult<(Dims, Dims)> {
    let t = it.m.t(ix).clone();
    let (sizes, strides) = if t.sizes()[..] == *idx_shape {
        (t.sizes().clone(), t.strides().clone())
    } else {
        expand_geometry(it, &t, idx_shape)?
    };
    let one = SymInt::int(1);
    let new_sizes: Dims = std::iter::repeat_n(one.clone(), before)
        .chain(sizes.iter().cloned())
        .chain(std::iter::repeat_n(one, after))
        .collect();
    let new_strides = match shape::compute_stride(&sizes, &strides, &new_sizes, &mut it.m.sizes)? {
        Some(st) => st,
        None => shape::contiguous_strides(&new_sizes, &mut it.m.sizes)?,
    };
    Ok((new_sizes, new_strides))
}

/// meta_index_Tensor with a ShapeEnv: each boolean (or uint8) mask of
/// rank k becomes `nonzero(mask).select(1, j)` for its k dims, a long
/// index of an unbacked size (none when the mask is statically empty),
/// after the mask's shape check.
fn unbacked_mask_indices(
    it: &mut Interp,
    st: &Tensor,
    adv: &[(usize, TensorId)],
) -> OpResult<Vec<(usize, TensorId)>> {
    let mut out = Vec::with_capacity(adv.len());
    for &(d, ix) in adv {
        let t = it.m.t(ix);
        let rank = t.sizes().len();
        if !matches!(t.dtype, DType::Bool | DType::U8) || rank == 0 {
            out.push((d, ix));
            continue;
        }
        check_mask_shapes(it, st, &[(d, ix)])?;
        let nnz = nonzero_size(it, ix)?;
        let strides = smallvec![SymInt::int(1)];
        let meta = Meta {
            sizes: smallvec![nnz],
            strides,
            offset: SymInt::int(0),
            dtype: DType::I64,
        };
        let index = it.m.fresh(meta, Span::default(), "nonzero");
        out.extend((0..rank).map(|j| (d + j, index)));
    }
    Ok(out)
}

/// FakeTensor's nonzero/masked_select size with a ShapeEnv: 0 for a
/// tensor statically empty, else a new unbacked size.
fn nonzero_size(it: &mut Interp, t: TensorId) -> OpResult<SymInt> {
    let numel = it.m.numel(t)?;
    Ok(if numel.as_int() == Some(0) {
        SymInt::int(0)
    } else {
        it.m.unbacked_size()
    })
}

/// The sizes of `x[indices]` with index tensors at `dims` broadcast to
/// `idx_shape`: in place of adjacent indexed dims, or in front otherwise.
fn indexed_sizes(sizes: &[SymInt], dims: &[usize], idx_shape: &[SymInt]) -> Dims {
    let adjacent = dims.windows(2).all(|w| w[1] == w[0] + 1);
    let first = if adjacent { dims[0] } else { 0 };
    let mut out: Dims = sizes[..first].iter().cloned().collect();
    out.extend(idx_shape.iter().cloned());
    out.extend(
        (first..sizes.len())
            .filter(|d| !dims.contains(d))
            .map(|d| sizes[d].clone()),
    );
    out
}

/// Eager `index_put_`'s shape checks of `x[indices] = value`: each mask
/// matches the dims it indexes, the index tensors broadcast together, and
/// the value (without its leading 1s, as setitem views it) expands to the
/// indexing result. Masks whose number of selected elements tpi does not
/// know leave the result's shape unknown: no value check then.
fn index_put_shape_checks(
    it: &mut Interp,
    dst: TensorId,
    advanced: &[(usize, TensorId)],
    value: &Value,
) -> OpResult<()> {
    let st = it.m.t(dst).clone();
    check_mask_shapes(it, &st, advanced)?;
    let mut idx_shape = Dims::new();
    let mut shapes = Vec::new();
    for &(_, ix) in advanced {
        let t = it.m.t(ix);
        if matches!(t.dtype, DType::Bool | DType::U8) {
            return Ok(());
        }
        shapes.push(t.sizes().clone());
    }
    for sh in &shapes {
        idx_shape = shape::broadcast_shapes(&idx_shape, sh, &mut it.m.sizes).map_err(|_| {
            let all: Vec<String> = shapes.iter().map(|s| show(s)).collect();
            oe(
                "broadcast",
                format!("shape mismatch: indexing tensors could not be broadcast together with shapes {}", all.join(", ")),
            )
        })?;
    }
    let dims: Vec<usize> = advanced.iter().map(|(d, _)| *d).collect();
    if dims.iter().any(|&d| d >= st.sizes().len()) {
        return Ok(());
    }
    let result = indexed_sizes(st.sizes(), &dims, &idx_shape);
    let Value::Tensor(v) = value else {
        return Ok(());
    };
    let vs = it.m.t(*v).sizes().clone();
    let trimmed: Vec<&SymInt> = vs.iter().skip_while(|s| s.as_int() == Some(1)).collect();
    let expandable = trimmed.len() <= result.len()
        && trimmed.iter().rev().zip(result.iter().rev()).all(|(a, b)| {
            a.as_int() == Some(1)
                || it.m.sizes.eq(a, b)
                || a.as_int().is_none()
                || b.as_int().is_none()
        });
    if !expandable {
        return Err(oe(
            "broadcast",
            format!(
                "shape mismatch: value tensor of shape {} cannot be broadcast to indexing result of shape {}",
                show(&vs),
                show(&result)
            ),
        ));
    }
    index_put_dtype_check(st.dtype, it.m.t(*v).dtype)
}

/// Eager's index_put_/index_put (make_index_put_iterator): the value must
/// expand to the indexing result, and have the destination's dtype. A None
/// in the index list is a full slice of its dim.
fn eager_index_put_checks(it: &mut Interp, dst: TensorId, a: &Args) -> OpResult<()> {
    if it.m.mode != Mode::Eager {
        return Ok(());
    }
    // _index_put_impl_ counts the indices, then make_index_put_iterator's
    // checkIndexTensorTypes (allow_int) looks at their dtypes. The
    // analysis's meta kernel does neither.
    let indices = a.get("indices").sequence().unwrap_or_default();
    let rank = it.m.t(dst).sizes().len();
    if !it.m.setitem_index_put && indices.len() > rank {
        return Err(oe(
            "other",
            format!(
                "too many indices for tensor of dimension {rank} (got {})",
                indices.len()
            ),
        ));
    }
    for ix in &indices {
        if let Value::Tensor(t) = ix {
            if !matches!(
                it.m.t(*t).dtype,
                DType::I64 | DType::I32 | DType::U8 | DType::Bool
            ) {
                return Err(index_dtype_error());
            }
        }
    }
    if it.m.setitem_index_put {
        // __setitem__ checked the value against its own indexing.
        return match a.get("values") {
            Value::Tensor(v) => index_put_dtype_check(it.m.t(dst).dtype, it.m.t(*v).dtype),
            _ => Ok(()),
        };
    }
    let Value::Tensor(v) = a.get("values") else {
        return Ok(());
    };
    let v = *v;
    let advanced: Vec<(usize, TensorId)> = a
        .get("indices")
        .sequence()
        .unwrap_or_default()
        .iter()
        .enumerate()
        .filter_map(|(d, ix)| match ix {
            Value::Tensor(t) => Some((d, *t)),
            _ => None,
        })
        .collect();
    if advanced.is_empty() {
        return index_put_dtype_check(it.m.t(dst).dtype, it.m.t(v).dtype);
    }
    index_put_shape_checks(it, dst, &advanced, &Value::Tensor(v))?;
    check_literal_index_bounds(it, dst, &advanced)
}

/// make_index_put_iterator (eager): the value is not cast to the
/// destination's dtype (the analysis's meta does not check).
fn index_put_dtype_check(dst: DType, value: DType) -> OpResult<()> {
    if value != dst {
        return Err(oe(
            "other",
            format!(
                "Index put requires the source and destination dtypes match, got {} for the destination and {} for the source.",
                torch_type_name(dst),
                torch_type_name(value)
            ),
        )
        .help(format!("convert the value first: `value.to(torch.{})`", dst.name())));
    }
    Ok(())
}

/// Eager indexing checks each boolean (or uint8) mask against the sizes of
/// the dims it covers before it counts the selected elements.
fn check_mask_shapes(it: &Interp, st: &Tensor, advanced: &[(usize, TensorId)]) -> OpResult<()> {
    for &(d, ix) in advanced {
        let t = it.m.t(ix);
        if !matches!(t.dtype, DType::Bool | DType::U8) {
            continue;
        }
        for (j, ms) in t.sizes().iter().enumerate() {
            let Some(ts) = st.sizes().get(d + j) else {
                return Err(oe(
                    "other",
                    format!(
                        "too many indices for tensor of dimension {}",
                        st.sizes().len()
                    ),
                ));
            };
            if let (Some(m), Some(n)) = (ms.as_int(), ts.as_int()) {
                if m != n {
                    return Err(oe(
                        "other",
                        format!(
                            "The shape of the mask {} at index {j} does not match the shape of the indexed tensor {} at index {}",
                            show(t.sizes()),
                            show(st.sizes()),
                            d + j
                        ),
                    ));
                }
            }
        }
    }
    Ok(())
}

/// ATen's `copy_to`: `copy_` when the shapes agree or the value has dims,
/// `fill_` for a 0-d value into a tensor with dims.
fn copy_to(it: &mut Interp, dst: TensorId, value: TensorId, span: Span) -> R<()> {
    // It decides on the sizes Python sees: a value set_() onto a tensor of
    // more dims while it looked 0-d is filled in (tests/oracle/set_stale_setitem_slice.tp).
    let python = |it: &Interp, t: TensorId| match it.m.mode {
        Mode::Analysis if !it.m.python_geom.is_empty() => it.m.python_geometry(t).sizes().clone(),
        _ => it.m.t(t).sizes().clone(),
    };
    let (vs, ds) = (python(it, value), python(it, dst));
    let same = vs == ds;
    let op = if !same && vs.is_empty() {
        "fill_"
    } else {
        "copy_"
    };
    it.call_op(
        op,
        smallvec::smallvec![Value::Tensor(dst), Value::Tensor(value)],
        Vec::new(),
        span,
    )?;
    Ok(())
}

/// setitem's view of value `v` to `sizes` (as Python sees them) without
/// their leading 1s (`slicePrefix1sSize`): `v` itself when there are none,
/// unless `always` (stale sizes: the view runs on the real ones).
fn view_without_leading_ones(
    it: &mut Interp,
    v: TensorId,
    sizes: &[SymInt],
    always: bool,
    span: Span,
) -> R<Value> {
    let trimmed: Vec<Value> = sizes
        .iter()
        .skip_while(|s| s.as_int() == Some(1))
        .cloned()
        .map(Value::Int)
        .collect();
    if trimmed.len() == sizes.len() && !always {
        return Ok(Value::Tensor(v));
    }
    it.call_op(
        "view",
        smallvec::smallvec![Value::Tensor(v), Value::tuple(trimmed)],
        Vec::new(),
        span,
    )
}

pub fn setitem(it: &mut Interp, t: TensorId, idx: &Value, value: Value, span: Span) -> R<()> {
    let as_tuple = sequence_as_tuple(idx);
    let idx = as_tuple.as_ref().unwrap_or(idx);
    guard_int_indices(it, idx, true, span)?;
    let items = parse_index(it, idx, span)?;
    check_zero_dim_select(it, t, idx, &items, span)?;
    // set_item's lone slice (not in a tuple) is applySlice on dim 0.
    let lone = items.len() == 1 && !matches!(idx, Value::Tuple(_));
    // Indexing calls select/slice/unsqueeze/alias from C++.
    let entry = it.m.inference_mode;
    let (dst, mut advanced) =
        it.dispatched_view(entry, |it| apply_slicing(it, t, &items, span, false, lone))?;
    resolve_known_masks(it, dst, &mut advanced, span)?;
    // A number is converted to the tensor's dtype first, in both runs.
    if let Some(e) = scalar_overflow(it.m.t(t).dtype, &value) {
        return Err(op_error(e, span));
    }
    if !advanced.is_empty() {
        let vals = match value {
            Value::Tensor(v) => Value::Tensor(v),
            other => {
                let dtype = it.m.t(t).dtype;
                it.call_op(
                    "tensor",
                    smallvec::smallvec![other],
                    vec![("dtype".into(), Value::Dtype(dtype))],
                    span,
                )?
            }
        };
        // THPVariable_setitem views the value without its leading 1s (its
        // sizes as Python sees them, stale after set_(); the view runs on
        // the real ones).
        let vals = match vals {
            Value::Tensor(v) => {
                let sizes = match it.m.mode {
                    Mode::Analysis => it.m.stale_python_sizes(v).cloned(),
                    Mode::Eager => None,
                }
                .unwrap_or_else(|| it.m.t(v).sizes().clone());
                let entry = it.m.inference_mode;
                it.dispatched_view(entry, |it| {
                    view_without_leading_ones(it, v, &sizes, false, span)
                })?
            }
            other => other,
        };
        if it.m.mode == Mode::Eager {
            index_put_shape_checks(it, dst, &advanced, &vals).map_err(|e| op_error(e, span))?;
        }
        let indices = Value::tuple(advanced.iter().map(|(_, ix)| Value::Tensor(*ix)).collect());
        // (The value was checked above against the indexed dims, which
        // this list of tensors alone no longer tells.)
        it.m.setitem_index_put = true;
        let put = it.call_op(
            "index_put_",
            smallvec::smallvec![Value::Tensor(dst), indices, vals],
            Vec::new(),
            span,
        );
        it.m.setitem_index_put = false;
        put?;
        return check_literal_index_bounds(it, dst, &advanced).map_err(|e| op_error(e, span));
    }
    // copy_to: copy_ for tensors of the same shape or any non-0-d tensor; fill_ for numbers and 0-d tensors.
    match value {
        Value::Tensor(v) => {
            // copy_to reads the value's sizes as Python sees them (stale
            // after set_()); its view of the value runs on the real ones.
            let stale = match it.m.mode {
                Mode::Analysis if !it.m.python_geom.is_empty() => {
                    it.m.stale_python_sizes(v).cloned()
                }
                _ => None,
            };
            let stale_value = stale.is_some();
            // copy_to reads the destination's sizes as Python sees them: when
            // slicing returned x itself (`x[...]`, `x[..., :n]` with n its
            // length) after set_(), x's stale ones, and expands the value to
            // them (tests/oracle/set_stale_setitem_full_slice.tp).
            let stale_dst = match it.m.mode {
                Mode::Analysis if !it.m.python_geom.is_empty() => {
                    it.m.stale_python_sizes(dst).cloned()
                }
                _ => None,
            };
            let ds = stale_dst.unwrap_or_else(|| it.m.t(dst).sizes().clone());
            let vs = stale.unwrap_or_else(|| it.m.t(v).sizes().clone());
            if !vs.is_empty() && vs != ds {
                // copy_to's first op on a value of another shape is its
                // view, whose autograd kernel reads the value's grad_fn
                // before any shape check: a stale view's may refuse. (Of the
                // same shape or 0-d, it is copy_ or fill_, which check the
                // destination first.)
                it.m.collect_stale_edge(v).map_err(|e| op_error(e, span))?;
                // That view is made before expand_inplace checks the sizes:
                // the analysis's refusals of a view come first.
                it.m.check_view_allowed(v).map_err(|e| op_error(e, span))?;
            }
            if !vs.is_empty() && vs != ds && !stale_value {
                // copy_to: expand_inplace(dst, value) first.
                let vt = it.m.t(v).clone();
                let trimmed: Dims = vs
                    .iter()
                    .skip_while(|s| s.as_int() == Some(1))
                    .cloned()
                    .collect();
                let mut probe = vt;
                let ones = smallvec![SymInt::int(1); trimmed.len()];
                probe.set_geometry(SharedGeometry::new(trimmed, ones));
                expand_geometry(it, &probe, &ds).map_err(|e| op_error(e, span))?;
            }
            // copy_to: a value of another shape is first viewed without its
            // leading 1s and expanded to the destination (a view of it).
            // (Both are view ops called from C++ through the dispatcher:
            // under inference_mode their autograd kernels give the result
            // the value's version counter, `dispatched_view`.)
            let v = if !vs.is_empty() && vs != ds {
                let entry = it.m.inference_mode;
                let expanded = it.dispatched_view(entry, |it| {
                    let viewed = view_without_leading_ones(it, v, &vs, stale_value, span)?;
                    let sizes: Vec<Value> = ds.iter().cloned().map(Value::Int).collect();
                    it.call_op(
                        "expand",
                        smallvec::smallvec![viewed, Value::tuple(sizes)],
                        Vec::new(),
                        span,
                    )
                })?;
                match expanded {
                    Value::Tensor(e) => e,
                    _ => v,
                }
            } else {
                v
            };
            copy_to(it, dst, v, span)?;
        }
        other => {
            if scalar_dtype(&other).is_none() {
                return Err(err(
                    "type",
                    format!("cannot assign a `{}` into a tensor", other.type_name()),
                    span,
                ));
            }
            // valueToTensor: the number becomes a 0-d tensor of self's dtype.
            let dtype = it.m.t(t).dtype;
            let meta = Meta {
                sizes: smallvec![],
                strides: smallvec![],
                offset: SymInt::int(0),
                dtype,
            };
            let value = it.m.fresh(meta, span, "scalar_tensor");
            // Eager's index checks read an integer written so (`values`).
            let number = match &other {
                Value::Int(i) => i.as_int(),
                Value::Bool(b) => Some(i64::from(*b)),
                _ => None,
            };
            if let (Mode::Eager, Some(n), true) = (it.m.mode, number, dtype.is_integral()) {
                it.m.record_literal(value, [n].into());
            }
            copy_to(it, dst, value, span)?;
        }
    }
    Ok(())
}

// ---------------------------------------------------------------- multi-output views

/// tensor_split's first check (CompositeImplicit: on the rank Python sees).
fn tensor_split_rank_error() -> OpError {
    oe(
        "other",
        "tensor_split expected at least a 1-dimensional tensor, but got a tensor with 0 dims",
    )
}

fn multi_view(it: &mut Interp, op: &'static OpDef, a: &Args, span: Span) -> OpResult<Value> {
    let me = a.tensor("self")?;
    // split's, split_with_sizes' and unbind's autograd kernels collect the
    // input's grad_fn (regenerating a stale view's, which may refuse)
    // before the op checks its arguments (tests/oracle/multi_view_stale_edge_first.tp).
    if matches!(op.name, "split" | "split_with_sizes" | "unbind") {
        it.m.collect_stale_edge(me)?;
    }
    let t = it.m.t(me).clone();
    let nd = t.sizes().len();
    // (tensor_split, CompositeImplicit, checks the dims Python sees.)
    if op.rule == "tensor_split" && (nd == 0 || it.m.python_geometry(me).sizes().is_empty()) {
        return Err(tensor_split_rank_error());
    }
    let dim = a.int(it, "dim")?;
    match op.rule {
        // chunk and split (C++) check the rank before the dim.
        "chunk" if nd == 0 => {
            return Err(oe("split", "chunk expects at least a 1-dimensional tensor"));
        }
        // The analysis's decompositions of split and split_with_sizes read
        // `self.shape[dim]`: Python's indexing, without wrapping (on a 0-dim
        // tensor every dim fails here, before the rank check below).
        "split" | "split_with_sizes"
            if it.m.mode == Mode::Analysis && (dim >= nd as i64 || dim < -(nd as i64)) =>
        {
            return Err(oe("index-out-of-range", "tuple index out of range"));
        }
        "split" | "split_with_sizes" if nd == 0 => {
            return Err(oe("other", "split expects at least a 1-dimensional tensor"));
        }
        _ => {}
    }
    let d = shape::wrap_dim(dim, nd)?;
    if nd == 0 {
        return Err(no_dims_error(0));
    }
    let size = t.sizes()[d].clone();
    let mut metas = Vec::new();
    let mut multi = true;
    // A split's view metas: the pieces' ends their inverses clamp
    // (`Machine::split_ends`), when a size is symbolic.
    let mut inverse_ends: Vec<SymInt> = Vec::new();
    match op.rule {
        "unbind" => {
            let n = it.m.sizes.concrete(&size, "unbind")?;
            for i in 0..n {
                metas.push(select_meta(it, &t, d, SymInt::int(i))?);
            }
        }
        "split" | "split_with_sizes" | "chunk" => {
            let sizes: Dims = match (
                op.rule,
                a.get(if op.rule == "split" {
                    "split_size_or_sections"
                } else {
                    "split_sizes"
                }),
            ) {
                ("chunk", _) => {
                    let chunks = a.int(it, "chunks")?;
                    if chunks <= 0 {
                        return Err(oe(
                            "split",
                            format!("chunk expects `chunks` to be greater than 0, got: {chunks}"),
                        ));
                    }
                    if size.is_symbolic() {
                        // chunk is split(ceil(size / chunks)): symbolic piece sizes.
                        let c = SymInt::int(chunks);
                        let each =
                            it.m.sizes
                                .floordiv(&it.m.sizes.add(&size, &SymInt::int(chunks - 1))?, &c)?;
                        let parts = symbolic_split(it, &size, &each)?;
                        inverse_ends = split_tensor_ends(it, &each, parts.len())?;
                        parts
                    } else {
                        let n = it.m.sizes.concrete(&size, "chunk")?;
                        let each = (n + chunks - 1) / chunks;
                        if n == 0 {
                            // split_with_sizes keeps the number of chunks: all empty.
                            smallvec![SymInt::int(0); usize::try_from(chunks).unwrap_or(1).min(1 << 16)]
                        } else {
                            split_sizes(n, each)
                        }
                    }
                }
                // ATen's split: only the number of pieces is fixed (guarded);
                // each piece's length stays the (symbolic) split size.
                (_, Value::Int(s))
                    if (size.is_symbolic() && s.as_int().is_some_and(|e| e > 0))
                        || (s.is_symbolic() && !it.m.sizes.lt_int(s, 1)) =>
                {
                    let parts = symbolic_split(it, &size, s)?;
                    inverse_ends = split_tensor_ends(it, s, parts.len())?;
                    parts
                }
                (_, Value::Int(s)) => {
                    let n = it.m.sizes.concrete(&size, "split")?;
                    let each = it.m.sizes.concrete(s, "split")?;
                    if each < 0 {
                        if it.m.mode == Mode::Analysis && n > 0 {
                            // torch/_decomp's split: (n + each - 1) // each
                            // chunks is 0, then `split_sizes[-1] = ...` on
                            // the empty list.
                            return Err(list_index_error().help("a split size must be positive"));
                        }
                        return Err(oe("other", format!("split expects split_size be non-negative, but got split_size={each}")));
                    }
                    if each == 0 {
                        if n != 0 {
                            let code = if it.m.mode == Mode::Analysis {
                                "other"
                            } else {
                                "split"
                            };
                            return Err(oe(code, "split_size can only be 0 if dimension size is 0, but got dimension size of ".to_string() + &n.to_string()));
                        }
                        smallvec![SymInt::int(0)]
                    } else if n == 0 && it.m.mode == Mode::Analysis {
                        // Fake tensors run torch/_decomp's split: no chunks,
                        // then `split_sizes[-1] = ...` on the empty list.
                        return Err(list_index_error()
                            .help("the analysis cannot split an empty dimension into pieces of a positive size: skip the split when the dimension is empty"));
                    } else {
                        split_sizes(n, each)
                    }
                }
                (_, v) => {
                    let parts =
                        to_syms(v).ok_or_else(|| oe("arguments", "split sizes must be ints"))?;
                    let total = it.m.sizes.prod(&[])?;
                    let _ = total;
                    let mut sum = SymInt::int(0);
                    for p in &parts {
                        sum = it.m.sizes.add(&sum, p)?;
                    }
                    if !it.m.sizes.eq(&sum, &size) {
                        return Err(oe(
                            "split",
                            format!("split_with_sizes expects split_sizes to sum exactly to {size} (input tensor's size at dimension {d}), but got split_sizes={}", show(&parts)),
                        ));
                    }
                    if parts.iter().any(|p| it.m.sizes.lt_int(p, 0)) {
                        let msg =
                            "split_with_sizes expects split_sizes have only non-negative entries";
                        return Err(oe(
                            "other",
                            match it.m.mode {
                                Mode::Analysis => msg.to_string(),
                                Mode::Eager => {
                                    format!("{msg}, but got split_sizes={}", show(&parts))
                                }
                            },
                        ));
                    }
                    if it.m.mode == Mode::Analysis
                        && (size.is_symbolic() || parts.iter().any(SymInt::is_symbolic))
                    {
                        let mut end = SymInt::int(0);
                        for p in &parts {
                            end = it.m.sizes.add(&end, p)?;
                            inverse_ends.push(end.clone());
                        }
                    }
                    parts
                }
            };
            metas = consecutive_slices(it, &t, d, &sizes)?;
        }
        "tensor_split" => {
            // CompositeImplicitAutograd: plain slices, not a multi-output view.
            multi = false;
            // It reads the dim's size as Python sees it (stale after set_():
            // the sections' bounds and the last piece's end come from it),
            // and the slices run on the value
            // (tests/oracle/set_stale_tensor_split.tp).
            let (d, seen) = match it.m.mode {
                Mode::Analysis => match it.m.stale_python_sizes(me) {
                    Some(stale) => match shape::wrap_dim(dim, stale.len()) {
                        Ok(pd) if pd < nd => (pd, stale[pd].clone()),
                        _ => (d, size.clone()),
                    },
                    None => (d, size.clone()),
                },
                Mode::Eager => (d, size.clone()),
            };
            if let (Value::Int(k), true) = (a.get("indices_or_sections"), seen.is_symbolic()) {
                // Sections of a symbolic dim: size // k each, one more for the
                // first size % k pieces (guarded, as PyTorch's loop does).
                let k = it.m.sizes.concrete(k, "tensor_split")?;
                if k <= 0 {
                    return Err(oe(
                        "other",
                        format!("number of sections must be larger than 0, got {k}"),
                    ));
                }
                let ks = SymInt::int(k);
                let min = it.m.sizes.floordiv(&seen, &ks)?;
                let extra = seen.modulo(&ks)?;
                let mut pieces = Vec::new();
                for i in 0..k {
                    pieces.push(if it.m.sizes.lt(&SymInt::int(i), &extra) {
                        it.m.sizes.add(&min, &SymInt::int(1))?
                    } else {
                        min.clone()
                    });
                }
                metas = consecutive_slices(it, &t, d, &pieces)?;
                let outs: Vec<Value> = metas
                    .into_iter()
                    .map(|m| {
                        it.m.view_of(me, m, "slice", false, true, span)
                            .map(Value::Tensor)
                    })
                    .collect::<OpResult<_>>()?;
                return Ok(Value::tuple(outs));
            }
            // tensor_split.tensor_indices_or_sections: a 0-dim tensor holds
            // the number of sections, a 1-d one the indices (read with item()
            // and tolist(): the analysis cannot, eager reads the data).
            let arg = match a.get("indices_or_sections") {
                Value::Tensor(ix) => {
                    let xt = it.m.t(*ix);
                    if xt.dtype != DType::I64 {
                        return Err(oe("other", format!("tensor_split expected tensor_indices_or_sections to have dtype of long, but got {}", cpp_type_name(xt.dtype))));
                    }
                    let rank = xt.sizes().len();
                    if rank > 1 {
                        return Err(oe("other", format!("tensor_split expected tensor_indices_or_sections to be a zero-dimensional or one-dimensional tensor, but got a tensor with {rank} dims")));
                    }
                    // item() of a FakeTensor constant works; tolist() does not.
                    let unknown = || {
                        oe(
                            "data-dependent",
                            "tensor_split's indices are a tensor's data",
                        )
                    };
                    if rank == 0 {
                        Value::int(it.m.constant_value(*ix).ok_or_else(unknown)?)
                    } else {
                        let values = it.m.literal_values(*ix).ok_or_else(unknown)?;
                        Value::list(values.iter().map(|&v| Value::int(v)).collect())
                    }
                }
                v => v.clone(),
            };
            let bounds: Vec<SymInt> = match &arg {
                Value::Int(s) => {
                    let n = it.m.sizes.concrete(&seen, "tensor_split")?;
                    let k = it.m.sizes.concrete(s, "tensor_split")?;
                    if k <= 0 {
                        return Err(oe(
                            "other",
                            format!("number of sections must be larger than 0, got {k}"),
                        ));
                    }
                    let (q, r) = (n / k, n % k);
                    let mut b = Vec::new();
                    let mut acc = 0;
                    for i in 0..k - 1 {
                        acc += q + i64::from(i < r);
                        b.push(SymInt::int(acc));
                    }
                    b
                }
                v => to_syms(v)
                    .ok_or_else(|| oe("arguments", "tensor_split indices must be ints"))?
                    .to_vec(),
            };
            // tensor_split_indices_symint: `slice(self, dim, start, end)`
            // between consecutive indices as given (slice wraps a negative
            // one and clamps), the last piece to the dim's end.
            let mut start = SymInt::int(0);
            for end in bounds.into_iter().chain([seen.clone()]) {
                metas.push(slice_meta(
                    it,
                    &t,
                    d,
                    Some(start),
                    Some(end.clone()),
                    1,
                    false,
                )?);
                start = end;
            }
        }
        other => {
            return Err(oe(
                "other",
                format!("internal: no multi-output rule `{other}`"),
            ))
        }
    }
    let opname: &'static str = if op.rule == "chunk" { "split" } else { op.name };
    let outs: Vec<Value> = metas
        .into_iter()
        .map(|m| {
            it.m.view_of(me, m, opname, multi, true, span)
                .map(Value::Tensor)
        })
        .collect::<OpResult<_>>()?;
    if multi && !outs.is_empty() {
        // One autograd node (UnbindBackward0 / SplitBackward0) for all outputs.
        let ids: Vec<TensorId> = outs
            .iter()
            .filter_map(|v| {
                if let Value::Tensor(t) = v {
                    Some(*t)
                } else {
                    None
                }
            })
            .collect();
        let first = it.m.tensors[ids[0]].grad_fn;
        // Its backward concatenates the outputs' gradients, of self's dtype.
        let dtype = it.m.t(me).dtype;
        if let (Some(node), Mode::Eager, DType::F16 | DType::BF16) = (first, it.m.mode, dtype) {
            it.m.concat_backward.push((node, dtype));
        }
        if inverse_ends.len() == ids.len() {
            for (&i, end) in ids.iter().zip(inverse_ends) {
                it.m.split_ends.insert(i, (d as u8, end));
            }
        }
        for (k, &i) in ids.iter().enumerate() {
            let t = &mut it.m.tensors[i];
            // "Output k of SplitBackward0" in autograd's messages.
            t.output_index = k as u32;
            if first.is_some() {
                t.grad_fn = first;
            }
        }
    }
    Ok(Value::tuple(outs))
}

/// The views of dim `d` cut into consecutive pieces of these lengths.
fn consecutive_slices(
    it: &mut Interp,
    t: &Tensor,
    d: usize,
    pieces: &[SymInt],
) -> OpResult<Vec<Meta>> {
    let mut metas = Vec::with_capacity(pieces.len());
    let mut start = SymInt::int(0);
    for piece in pieces {
        let end = it.m.sizes.add(&start, piece)?;
        metas.push(slice_meta(
            it,
            t,
            d,
            Some(start.clone()),
            Some(end.clone()),
            1,
            true,
        )?);
        start = end;
    }
    Ok(metas)
}

/// `split(each)` of a symbolic dim: the number of pieces,
/// `ceil(size / each)`, is decided from the hints (PyTorch guards on it
/// without fixing the size); every piece has `each` elements but the last,
/// which has the rest.
fn symbolic_split(it: &mut Interp, size: &SymInt, each: &SymInt) -> OpResult<Dims> {
    let hint_each = it.m.sizes.env.hint(each).unwrap_or(1).max(1);
    let hint_size = it.m.sizes.env.hint(size).unwrap_or(hint_each);
    let k = ((hint_size + hint_each - 1) / hint_each).max(1);
    let count = it.m.sizes.floordiv(
        &it.m
            .sizes
            .add(size, &it.m.sizes.sub(each, &SymInt::int(1))?)?,
        each,
    )?;
    if count.is_symbolic() {
        // The number of outputs must be an int: PyTorch guards `count == k`,
        // which fixes the size when the equation is solvable (split(1)).
        it.m.sizes.eq(&count, &SymInt::int(k));
    }
    let mut parts = smallvec![each.clone(); (k - 1) as usize];
    let used = it.m.sizes.mul(each, &SymInt::int(k - 1))?;
    parts.push(it.m.sizes.sub(size, &used)?);
    Ok(parts)
}

/// The ends `split_Tensor_inverse` computes for `count` pieces of `each`
/// (`split_size * (idx + 1)`; the last may pass the dim's size). Analysis
/// only: eager has no view metas.
fn split_tensor_ends(it: &Interp, each: &SymInt, count: usize) -> OpResult<Vec<SymInt>> {
    if it.m.mode != Mode::Analysis {
        return Ok(Vec::new());
    }
    (1..=count as i64)
        .map(|k| it.m.sizes.mul(each, &SymInt::int(k)))
        .collect()
}

fn split_sizes(n: i64, each: i64) -> Dims {
    let mut out = Dims::new();
    let mut left = n;
    while left > 0 {
        out.push(SymInt::int(left.min(each)));
        left -= each;
    }
    if out.is_empty() {
        out.push(SymInt::int(0));
    }
    out
}

// ---------------------------------------------------------------- view or copy

fn copy_of(
    it: &mut Interp,
    me: TensorId,
    dtype: DType,
    format: MemoryFormat,
    op: &'static str,
    span: Span,
) -> OpResult<Value> {
    let m = &mut it.m;
    // The copy (`clone`, `_to_copy`) syncs.
    m.sync(me)?;
    m.read_value(me);
    let t = &m.tensors[me];
    // `_to_copy` keeps a dense layout exactly (`empty_strided` with self's
    // strides, size-1 dims' too) and gives another its dense permutation
    // (`infer_dense_strides`); `clone` is torch._refs' (`like_strides`).
    let strides = if op == "_to_copy" && format == MemoryFormat::Preserve {
        // (The analysis's decomposition asks torch._prims_common, with its
        // own guards: tests/oracle/to_copy_python_dense_guards.tp.)
        let dense = match m.mode {
            Mode::Analysis => {
                shape::py_is_non_overlapping_and_dense(t.sizes(), t.strides(), &mut m.sizes)?
            }
            Mode::Eager => {
                shape::is_non_overlapping_and_dense(t.sizes(), t.strides(), &mut m.sizes)
            }
        };
        if dense {
            t.strides().clone()
        } else {
            let me = shape::IterOperand {
                sizes: t.sizes(),
                strides: t.strides(),
            };
            shape::iterator_output_strides(t.sizes(), &[me], false, &mut m.sizes)?
        }
    } else {
        shape::like_strides(t.sizes(), t.strides(), format, &mut m.sizes)?
    };
    let meta = Meta {
        sizes: t.sizes().clone(),
        strides,
        offset: SymInt::int(0),
        dtype,
    };
    let out = it.m.op_result(meta, op, &[("self", Some(me))], span)?;
    if it.m.mode == Mode::Eager {
        if let Some(sets) = super::values::after_copy(&it.m, me, out) {
            it.m.record_values(out, sets);
        }
    }
    Ok(Value::Tensor(out))
}

/// `to(dtype, memory_format=format, copy=copy)`: `me` itself when nothing
/// changes (no format, preserve_format, or a layout already contiguous in
/// it), else a `_to_copy`.
fn to_copy(
    it: &mut Interp,
    me: TensorId,
    dtype: DType,
    format: Option<MemoryFormat>,
    copy: bool,
    span: Span,
) -> OpResult<Value> {
    let in_format = match format {
        None | Some(MemoryFormat::Preserve) => true,
        Some(f) => {
            let m = &mut it.m;
            let t = &m.tensors[me];
            shape::is_contiguous_as(t.sizes(), t.strides(), f, &mut m.sizes)
        }
    };
    if dtype == it.m.t(me).dtype && !copy && in_format {
        Ok(Value::Tensor(me))
    } else {
        let format = format.unwrap_or(MemoryFormat::Preserve);
        copy_of(it, me, dtype, format, "_to_copy", span)
    }
}

fn view_or_copy(it: &mut Interp, op: &'static OpDef, a: &Args, span: Span) -> OpResult<Value> {
    let me = a.tensor("self")?;
    let dtype = it.m.t(me).dtype;
    let cast = |d: DType| -> Option<DType> { Some(d) };
    let target_dtype: Option<DType> = match op.rule {
        "cast_float32" => cast(DType::F32),
        "cast_float64" => cast(DType::F64),
        "cast_float16" => cast(DType::F16),
        "cast_bfloat16" => cast(DType::BF16),
        "cast_int64" => cast(DType::I64),
        "cast_int32" => cast(DType::I32),
        "cast_int16" => cast(DType::I16),
        "cast_bool" => cast(DType::Bool),
        "type_as" => Some(it.m.t(a.tensor("other")?).dtype),
        _ => None,
    };
    if let Some(d) = target_dtype {
        // `x.double(memory_format=f)` is `x.to(torch.float64, memory_format=f)`.
        let format = a.memory_format("memory_format")?;
        return to_copy(it, me, d, format, false, span);
    }
    match op.rule {
        "identity" => Ok(Value::Tensor(me)),
        "reshape" | "reshape_as" => {
            let target = if op.rule == "reshape_as" {
                it.m.t(a.tensor("other")?).sizes().clone()
            } else {
                a.syms("shape")?
            };
            if it.m.mode == Mode::Analysis && it.m.stale_python_sizes(me).is_some() {
                return stale_reshape(it, me, target, span).map(Value::Tensor);
            }
            let numel = it.m.numel(me)?;
            let sizes = shape::infer_size(&target, &numel, &mut it.m.sizes)?;
            // A contiguous tensor's reshape is `view(proposed)`, whose -1
            // autograd's view replay infers again on the base of then.
            let inferred = if it.m.mode == Mode::Analysis {
                target.iter().position(|d| d.as_int() == Some(-1))
            } else {
                None
            };
            // (Told without a guard: each stride is the product of the
            // sizes after it.)
            let contiguous = inferred.is_some() && {
                let g = decomposition_geometry(&it.m, me);
                let mut expect = SymInt::int(1);
                let mut same = true;
                for (size, stride) in g.sizes().iter().zip(g.strides()).rev() {
                    same &= *stride == expect;
                    match expect.mul(size) {
                        Ok(next) => expect = next,
                        Err(_) => same = false,
                    }
                }
                same
            };
            let out = reshape_to(it, me, sizes, span)?;
            if let (true, Value::Tensor(v), Some(k)) = (contiguous, &out, inferred) {
                let k = u8::try_from(k).ok();
                if let (true, Some(k)) = (*v != me && it.m.t(*v).origin_op.as_str() == "view", k) {
                    it.m.view_args.insert(*v, ViewArg::InferredViewDim(k));
                }
            }
            Ok(out)
        }
        "flatten" => {
            let sizes = it.m.t(me).sizes().clone();
            match flatten_shape(it, a, &sizes)? {
                Some(shape) => reshape_to(it, me, shape, span),
                None => Ok(Value::Tensor(me)),
            }
        }
        "contiguous" => {
            let f = a
                .memory_format("memory_format")?
                .unwrap_or(MemoryFormat::Contiguous);
            let m = &mut it.m;
            let t = decomposition_geometry(m, me);
            if shape::is_contiguous_as(t.sizes(), t.strides(), f, &mut m.sizes) {
                Ok(Value::Tensor(me))
            } else {
                let f = if f == MemoryFormat::Preserve {
                    MemoryFormat::Contiguous
                } else {
                    f
                };
                copy_of(it, me, dtype, f, "clone", span)
            }
        }
        "to" => {
            // The overloads' positional forms: to(device, dtype, non_blocking,
            // copy), to(dtype, non_blocking, copy), to(other, non_blocking, copy).
            let mut dtype = a.dtype("dtype")?;
            let mut copy = a.bool("copy")?;
            let mut flags = 0;
            for k in ["a", "b", "c", "d"] {
                match a.get(k) {
                    Value::Dtype(d) if flags == 0 => dtype = Some(*d),
                    Value::Tensor(o) if flags == 0 => dtype = Some(it.m.t(*o).dtype),
                    Value::Str(_) | Value::Device(_) if flags == 0 => {}
                    Value::None => {}
                    // non_blocking, then copy.
                    Value::Bool(b) if flags < 2 => {
                        copy |= flags == 1 && *b;
                        flags += 1;
                    }
                    other => {
                        return Err(oe(
                            "arguments",
                            format!("to(): unexpected argument of type `{}`", other.type_name()),
                        ))
                    }
                }
            }
            let format = a.memory_format("memory_format")?;
            let own = it.m.t(me).dtype;
            to_copy(it, me, dtype.unwrap_or(own), format, copy, span)
        }
        other => Err(oe("other", format!("internal: no rule `{other}`"))),
    }
}

/// Is this in-place transpose a no-op in C++ (`transpose_` with two dims
/// that wrap to the same one, `t_` of fewer than 2 dims)?
fn swaps_nothing(it: &mut Interp, op: &str, a: &Args, rank: usize) -> bool {
    let (first, second) = match op {
        "t_" => return rank < 2,
        "transpose_" | "swapdims_" => ("dim0", "dim1"),
        "swapaxes_" => ("axis0", "axis1"),
        _ => return false,
    };
    let mut wrap = |name: &str| {
        a.int(it, name)
            .ok()
            .and_then(|d| shape::wrap_dim(d, rank).ok())
    };
    matches!((wrap(first), wrap(second)), (Some(x), Some(y)) if x == y)
}

/// `flatten` of a tensor whose Python sizes are stale (`Machine::python_geom`,
/// after `set_`): the C++ composite runs inside the analysis's mode and
/// reads the wrapper's rank and sizes to wrap the dims and make the new
/// shape, and the `view` it ends in runs on the real sizes (and may refuse
/// the shape; `stale_reshape`). `None`: the sizes are not stale, the usual
/// rule applies. Only the strides stale (after a write,
/// `Machine::replace_value`): the usual rule, which reads them.
fn stale_flatten(it: &mut Interp, a: &Args, span: Span) -> OpResult<Option<Value>> {
    let me = a.tensor("self")?;
    let Some(sizes) = it.m.stale_python_sizes(me).cloned() else {
        return Ok(None);
    };
    let Some(shape) = flatten_shape(it, a, &sizes)? else {
        return Ok(Some(Value::Tensor(me)));
    };
    stale_reshape(it, me, shape, span).map(|t| Some(Value::Tensor(t)))
}

/// `chunk` of a tensor whose Python sizes are stale (after `set_`): C++'s
/// chunk (CompositeImplicitAutograd) checks the rank, wraps the dim and reads
/// that dim's size on the wrapper, then calls `split` with the piece size
/// that gives, and split's decomposition reads the real sizes
/// (tests/oracle/stale_chunk.tp). `None`: the sizes are not stale, or the
/// stale size is symbolic; the usual rule applies.
fn stale_chunk(it: &mut Interp, a: &Args, span: Span) -> OpResult<Option<Value>> {
    let me = a.tensor("self")?;
    let Some(sizes) = it.m.stale_python_sizes(me).cloned() else {
        return Ok(None);
    };
    if sizes.is_empty() {
        return Err(oe("split", "chunk expects at least a 1-dimensional tensor"));
    }
    let chunks = a.int(it, "chunks")?;
    if chunks <= 0 {
        return Err(oe(
            "split",
            format!("chunk expects `chunks` to be greater than 0, got: {chunks}"),
        ));
    }
    let d = shape::wrap_dim(a.int(it, "dim")?, sizes.len())?;
    let Some(n) = sizes[d].as_int() else {
        return Ok(None);
    };
    let each = (n + chunks - 1) / chunks;
    let (name, piece) = if each == 0 && n == 0 {
        // split_with_sizes keeps the number of chunks: all empty.
        let pieces = usize::try_from(chunks).unwrap_or(1).min(1 << 16);
        ("split_with_sizes", Value::list(vec![Value::int(0); pieces]))
    } else {
        ("split", Value::int(each))
    };
    let args = smallvec::smallvec![Value::Tensor(me), piece, Value::int(d as i64)];
    it.call_op(name, args, Vec::new(), span)
        .map(Some)
        .map_err(|d| OpError::new(d.code, d.message))
}

/// `tile` of a tensor whose Python sizes are stale (after `set_`): C++'s
/// tile (CompositeImplicitAutograd) pads the reps with 1s to the wrapper's
/// rank, then calls `repeat`, which runs on the real sizes
/// (tests/oracle/set_stale_tile.tp).
fn stale_tile(it: &mut Interp, a: &Args, span: Span) -> OpResult<Option<Value>> {
    let me = a.tensor("self")?;
    let Some(rank) = it.m.stale_python_sizes(me).map(|s| s.len()) else {
        return Ok(None);
    };
    let reps = a.syms("dims")?;
    let mut padded = vec![Value::int(1); rank.saturating_sub(reps.len())];
    padded.extend(reps.into_iter().map(Value::Int));
    let args = smallvec::smallvec![Value::Tensor(me), Value::list(padded)];
    it.call_op("repeat", args, Vec::new(), span)
        .map(Some)
        .map_err(|d| OpError::new(d.code, d.message))
}

/// The checks of ops that decompose in Python (CompositeImplicitAutograd)
/// on a tensor whose Python sizes are stale (`Machine::python_geom`, after
/// `set_`): the decomposition wraps its dims against the wrapper's rank and
/// reads its sizes before the view ops it calls run on the real ones
/// (tests/oracle/stale_rank_decompositions.tp).
fn stale_dims_check(it: &mut Interp, op: &OpDef, a: &Args) -> OpResult<()> {
    if op.name == "outer" {
        // CompositeImplicitAutograd: check_1d reads the wrapper's rank.
        for name in ["self", "vec2"] {
            if let Value::Tensor(t) = a.get(name) {
                if let Some(rank) = it.m.stale_python_sizes(*t).map(|s| s.len()) {
                    if rank != 1 {
                        return Err(oe(
                            "other",
                            format!("outer: Expected 1-D argument {name}, but got {rank}-D"),
                        ));
                    }
                }
            }
        }
        // `self.reshape({self.size(0), 1}) * vec2`, with the wrapper's size.
        if let Value::Tensor(me) = a.get("self") {
            if let Some(size) =
                it.m.stale_python_sizes(*me)
                    .and_then(|s| s.first())
                    .cloned()
            {
                // (Sizes compared as the view's check does: symbolic ones
                // by their hints, with a guard.)
                let numel = it.m.numel(*me)?;
                if !it.m.sizes.eq(&size, &numel) {
                    return Err(invalid_shape_error(&[size, SymInt::int(1)], &numel));
                }
            }
        }
        return Ok(());
    }
    if op.name == "repeat_interleave" && !matches!(a.get("repeats"), Value::None) {
        // Without a dim it repeats `self.flatten()`, a composite that views
        // the wrapper's stale sizes flat.
        if let (Value::None, Value::Tensor(me)) = (a.get("dim"), a.get("self")) {
            // A write that re-laid the value out leaves the wrapper's
            // strides: flatten's reshape decides on them to view, and the
            // view (torch._refs') runs on the value's, which may refuse.
            let python = it.m.python_geometry(*me).clone();
            let real = it.m.t(*me).geometry().clone();
            if python.sizes().len() > 1 && python.sizes() == real.sizes() && python != real {
                let numel = it.m.numel(*me)?;
                let flat = [numel];
                let viewed = shape::compute_stride(
                    python.sizes(),
                    python.strides(),
                    &flat,
                    &mut it.m.sizes,
                )?;
                if viewed.is_some()
                    && shape::ref_view_geometry(
                        real.sizes(),
                        real.strides(),
                        &flat,
                        &mut it.m.sizes,
                    )?
                    .is_none()
                {
                    return Err(view_stride_error(real.sizes(), real.strides(), &flat));
                }
            }
            if let Some(sizes) = it.m.stale_python_sizes(*me).cloned() {
                // A 1-d wrapper's flatten() is the tensor itself, which
                // is then unsqueezed at dim 1: a 0-d value refuses that
                // (tests/oracle/set_stale_repeat_interleave_dim.tp).
                if sizes.len() == 1 {
                    shape::wrap_dim(1, it.m.t(*me).sizes().len() + 1)?;
                }
                // The view to the stale numel runs on the value: its
                // infer_size compares the two (a guard when symbolic).
                if sizes.len() != 1 {
                    let stale = it.m.sizes.prod(&sizes)?;
                    let real = it.m.numel(*me)?;
                    if !it.m.sizes.eq(&real, &stale) {
                        return Err(invalid_shape_error(&[stale], &real));
                    }
                }
            }
        }
        // With a dim, it is wrapped against the wrapper's (stale) rank.
        if let (Value::Int(_), Value::Tensor(me)) = (a.get("dim"), a.get("self")) {
            if let Some(rank) = it.m.stale_python_sizes(*me).map(|s| s.len()) {
                shape::wrap_dim(a.int(it, "dim")?, rank)?;
            }
        }
        return Ok(());
    }
    let dim_params: &[&str] = match op.name {
        "movedim" => &["source", "destination"],
        "narrow" | "unflatten" | "tensor_split" => &["dim"],
        _ => return Ok(()),
    };
    let Value::Tensor(me) = a.get("self") else {
        return Ok(());
    };
    let Some(sizes) = it.m.stale_python_sizes(*me).cloned() else {
        return Ok(());
    };
    let rank = sizes.len();
    if op.name == "narrow" && rank == 0 {
        return Err(oe("other", "narrow() cannot be applied to a 0-dim tensor."));
    }
    if op.name == "tensor_split" && rank == 0 {
        return Err(tensor_split_rank_error());
    }
    for name in dim_params {
        for d in a.opt_dims(it, name)?.unwrap_or_default() {
            let d = shape::wrap_dim(d, rank)?;
            if op.name == "unflatten" {
                // unflatten is a `view` to the shape it builds from the
                // stale sizes, which then runs on the value.
                let Some(size) = sizes.get(d).cloned() else {
                    return Err(no_dims_error(d));
                };
                let parts = unflatten_parts(it, &a.syms("sizes")?, d, &size)?;
                let mut target = Dims::from(&sizes[..d]);
                target.extend(parts);
                target.extend(sizes[d + 1..].iter().cloned());
                let stale = it.m.sizes.prod(&target)?;
                let real = it.m.numel(*me)?;
                if !it.m.sizes.eq(&real, &stale) {
                    return Err(invalid_shape_error(&target, &real));
                }
            }
        }
    }
    if op.name == "movedim" {
        // movedim builds a permutation of the wrapper's rank, which
        // permute then checks against the value's
        // (tests/oracle/stale_rank_decompositions.tp).
        let real = it.m.t(*me).sizes().len();
        if rank != real && rank > 0 && real > 0 {
            if rank < real {
                return Err(shape::permute_length_error(real, rank));
            }
            let mut wrapped = |name: &str| -> OpResult<Vec<usize>> {
                let dims = a.opt_dims(it, name)?.unwrap_or_default();
                dims.into_iter().map(|d| shape::wrap_dim(d, rank)).collect()
            };
            let (src, dst) = (wrapped("source")?, wrapped("destination")?);
            let repeated = |ds: &[usize]| ds.iter().enumerate().any(|(i, d)| ds[..i].contains(d));
            if src.len() != dst.len() || repeated(&src) || repeated(&dst) {
                // movedim's own checks refuse these.
                return Ok(());
            }
            let mut order: Vec<Option<usize>> = vec![None; rank];
            for (&s, &d) in src.iter().zip(&dst) {
                order[d] = Some(s);
            }
            let mut rest = (0..rank).filter(|d| !src.contains(d));
            for o in order {
                let d = o.or_else(|| rest.next()).unwrap_or(0);
                shape::wrap_dim(d as i64, real)?;
            }
        }
    }
    Ok(())
}

/// unflatten's sizes for dim `dim` of size `size`, a -1 inferred
/// (`infer_size_dv`), or its words when they do not multiply up to it.
fn unflatten_parts(it: &mut Interp, parts: &[SymInt], dim: usize, size: &SymInt) -> OpResult<Dims> {
    if parts.iter().filter(|p| p.as_int() == Some(-1)).count() > 1 {
        // infer_size's own error, which unflatten rethrows with its prefix.
        return Err(oe(
            "invalid-shape",
            "unflatten got an unexpected error:\nonly one dimension can be inferred",
        ));
    }
    shape::infer_size(parts, size, &mut it.m.sizes).map_err(|_| {
        oe(
            "other",
            format!(
                "unflatten: Provided sizes {} don't multiply up to the size of dim {dim} ({size}) in the input tensor",
                show(parts)
            ),
        )
    })
}

/// The shape native `flatten(start_dim, end_dim)` makes of `sizes` (a 0-d
/// tensor becomes `[1]`); `None` when it returns the tensor itself (the
/// dims to merge are one).
fn flatten_shape(it: &mut Interp, a: &Args, sizes: &[SymInt]) -> OpResult<Option<Dims>> {
    let nd = sizes.len();
    // flatten wraps both dims (a 0-d tensor's in [-1, 0]) before anything.
    let s = shape::wrap_dim(a.int(it, "start_dim")?, nd)?;
    let e = shape::wrap_dim(a.int(it, "end_dim")?, nd)?;
    if s > e {
        return Err(oe(
            "other",
            "flatten() has invalid args: start_dim cannot come after end_dim",
        ));
    }
    if nd == 0 {
        return Ok(Some(smallvec![SymInt::int(1)]));
    }
    if s == e {
        return Ok(None);
    }
    let mid = it.m.sizes.prod(&sizes[s..=e])?;
    let mut shape = Dims::from(&sizes[..s]);
    shape.push(mid);
    shape.extend(sizes[e + 1..].iter().cloned());
    Ok(Some(shape))
}

/// `reshape`: a view when `view` can express it, else a contiguous copy.
/// The sizes and strides `reshape` and `contiguous()` decide on: in the
/// analysis these composites run on the FunctionalTensor, whose own
/// metadata a write or `set_()` does not update (`Machine::python_geom`;
/// `stale_reshape` for the sizes).
fn decomposition_geometry(m: &crate::analysis::state::Machine, me: TensorId) -> SharedGeometry {
    if m.mode == Mode::Analysis {
        m.python_geometry(me).clone()
    } else {
        m.tensors[me].geometry().clone()
    }
}

fn reshape_to(it: &mut Interp, me: TensorId, sizes: Dims, span: Span) -> OpResult<Value> {
    let m = &mut it.m;
    let t = &m.tensors[me];
    let (offset, dtype) = (t.offset.clone(), t.dtype);
    let geom = decomposition_geometry(m, me);
    match shape::compute_stride(geom.sizes(), geom.strides(), &sizes, &mut m.sizes)? {
        Some(strides) => {
            let real = m.tensors[me].geometry().clone();
            let (sizes, strides) = if m.mode == Mode::Analysis && real != geom {
                // reshape chose a view on the Python wrapper's strides;
                // the view itself runs on the value, whose strides a write
                // through a view replaced (`replace_value`).
                let (from_sizes, from_strides) = (real.sizes(), real.strides());
                if from_sizes == &sizes {
                    (sizes, from_strides.clone())
                } else {
                    match shape::ref_view_geometry(from_sizes, from_strides, &sizes, &mut m.sizes)? {
                        Some(g) => g,
                        None => {
                            return Err(view_stride_error(from_sizes, from_strides, &sizes)
                            .help("a write through a transposing view gave this tensor's value new strides; reshape still decides on the old ones and views: clone() it first"))
                        }
                    }
                }
            } else {
                view_geometry(it, geom.sizes(), geom.strides(), sizes, strides)?
            };
            let meta = Meta {
                sizes,
                strides,
                offset,
                dtype,
            };
            Ok(Value::Tensor(
                it.m.view_of(me, meta, "view", false, true, span)?,
            ))
        }
        None => {
            // The copy (`clone`) syncs.
            m.sync(me)?;
            m.read_value(me);
            let sizes = shape::ref_view_sizes(geom.sizes(), None, sizes, &mut m.sizes)?;
            let meta = it.m.contiguous_meta(sizes, dtype)?;
            let out =
                it.m.op_result(meta, "_unsafe_view", &[("self", Some(me))], span)?;
            if it.m.mode == Mode::Analysis {
                let source = it.m.t(me).sizes().clone();
                it.m.unsafe_view_sources.insert(out, source);
            }
            Ok(Value::Tensor(out))
        }
    }
}

// ---------------------------------------------------------------- in-place

/// Does the analysis's in-place `op` resize `self` to a larger broadcast
/// shape instead of refusing? FakeTensor's meta for most in-place ops is
/// torch._refs' `_make_inplace(fn)`, `fn(self, ..., out=self)`, whose out
/// wrapper resizes. torch/_meta_registrations.py's own metas for add_, sub_,
/// mul_, div_ (without a rounding mode), logical_and_/or_/xor_ and
/// masked_fill_ check the broadcast (`check_inplace_broadcast`), as do the
/// metas of lerp_ and addcmul_/addcdiv_; `<<=` and `>>=` are decompositions
/// that copy_ the result back.
fn resizes_self(op: &OpDef, a: &Args) -> bool {
    match op.name {
        "pow_" => true,
        _ if op.rule == "clamp" => op.name.ends_with('_'),
        "add_" | "sub_" | "subtract_" | "mul_" | "multiply_" | "true_divide_" | "logical_and_"
        | "logical_or_" | "logical_xor_" => false,
        "div_" | "divide_" => !matches!(a.get("rounding_mode"), Value::None),
        _ => {
            matches!(
                op.rule,
                "binary" | "binary_float" | "binary_int" | "compare"
            ) && !op.name.starts_with("__")
        }
    }
}

/// Does this in-place op's kernel check the written tensor for internal
/// overlap in this mode? `copy_` checks in both (the analysis raises too);
/// TensorIterator ops only in eager; `fill_` with a number never (fill is
/// idempotent), with a tensor value it is a `copy_` in eager.
fn checks_overlap(it: &Interp, op: &str, a: &Args) -> bool {
    match op {
        "copy_" => true,
        // Unary in-place ops keep their TensorIterator meta under the
        // analysis; the ops whose meta is torch._refs' `_make_inplace` end in
        // a copy_ into self, whose meta refuses internal overlap, as does
        // the copy_ back of `<<=` and `>>=`.
        // (logical_not_ keeps eager's TensorIterator check only.) addmm_ and
        // baddbmm_ are `register_inplace` decompositions and cumsum_,
        // cumprod_, tril_ and triu_ `_make_inplace` refs: the out-of-place
        // op, then a copy_ into self.
        _ if it.m.mode == Mode::Analysis => {
            (matches!(
                a.op.rule,
                "unary" | "unary_float" | "unary_bool" | "unary_int"
            ) && !matches!(a.op.name.trim_end_matches('_'), "relu" | "logical_not"))
                || resizes_self(a.op, a)
                || matches!(
                    op,
                    "__ilshift__"
                        | "__irshift__"
                        | "addmm_"
                        | "baddbmm_"
                        | "cumsum_"
                        | "cumprod_"
                        | "tril_"
                        | "triu_"
                )
        }
        // Structured kernels that write without an overlap assert.
        "tril_" | "triu_" | "baddbmm_" => false,
        "fill_" => it.m.mode == Mode::Eager && matches!(a.get("value"), Value::Tensor(_)),
        "zero_" | "normal_" | "uniform_" | "bernoulli_" | "random_" | "exponential_"
        | "index_put_" | "index_add_" | "index_copy_" | "index_fill_" | "masked_fill_"
        | "scatter_" | "scatter_add_" => false,
        _ => it.m.mode == Mode::Eager,
    }
}

/// The analysis's `meta_copy_` refuses a written tensor with internal
/// overlap, in its own words.
fn meta_copy_overlap(it: &mut Interp, me: TensorId) -> OpResult<()> {
    it.m.check_no_internal_overlap(me).map_err(|e| OpError {
        message:
            "more than one element of the written-to tensor refers to a single memory location"
                .into(),
        ..e
    })
}

/// The memory-overlap checks of the index, scatter and random in-place
/// ops, which run after their shape checks (checked on torch 2.7.1):
/// eager refuses an expanded `self` (`assert_no_internal_overlap`) for
/// index_add_/index_copy_/scatter_/scatter_add_ and the random fills, and
/// any overlap of `self` with the index, source, mask or values
/// (`assert_no_overlap`); the analysis's decompositions of uniform_,
/// normal_ and exponential_ (and of masked_fill_ with a tensor value) end
/// in a `copy_`, whose meta refuses an expanded `self`.
fn index_op_overlaps(it: &mut Interp, op: &str, a: &Args, me: TensorId) -> OpResult<()> {
    let internal = match it.m.mode {
        Mode::Eager => matches!(
            op,
            "index_add_"
                | "index_copy_"
                | "scatter_"
                | "scatter_add_"
                | "uniform_"
                | "normal_"
                | "bernoulli_"
                | "exponential_"
                | "random_"
        ),
        Mode::Analysis => {
            matches!(op, "uniform_" | "normal_" | "exponential_")
                // torch._refs.masked_fill_ with a tensor value: masked_fill, then copy_.
                || (op == "masked_fill_" && matches!(a.get("value"), Value::Tensor(_)))
        }
    };
    if internal {
        match it.m.mode {
            Mode::Analysis => meta_copy_overlap(it, me)?,
            Mode::Eager => it.m.check_no_internal_overlap(me)?,
        }
    }
    if it.m.mode != Mode::Eager {
        return Ok(());
    }
    let others: &[&str] = match op {
        "index_add_" | "index_copy_" => &["index", "source"],
        "index_fill_" => &["index"],
        "index_put_" => &["values"],
        "scatter_" | "scatter_add_" => &["index", "src"],
        _ => &[],
    };
    for name in others {
        if let Value::Tensor(o) = a.get(name) {
            it.m.check_no_overlap(me, *o)?;
        }
    }
    // masked_fill__cpu asserts only no *partial* overlap with the mask: a
    // bool tensor masking itself (`m.masked_fill_(m, False)`) runs.
    if let ("masked_fill_", Value::Tensor(mask)) = (op, a.get("mask")) {
        it.m.check_no_partial_overlap(me, *mask)?;
    }
    Ok(())
}

/// The error for an in-place op whose computed dtype cannot be cast to
/// `self`'s: eager's TensorIterator says `dtype-cast`; in the analysis only
/// `add_`/`sub_` keep that check, `mul_`/`div_`/`addc*_` decompose into a
/// casting copy, and the other decompositions fail with their own message.
fn cast_error(it: &Interp, op: &str, a: &Args, from: DType, to: DType) -> Option<OpError> {
    let cast = || {
        OpError::new(
            "dtype-cast",
            format!(
                "result type {} can't be cast to the desired output type {}",
                torch_type_name(from),
                torch_type_name(to)
            ),
        )
        .help("use the out-of-place op, or convert with `.to(dtype)` first")
    };
    if it.m.mode == Mode::Eager {
        return Some(cast());
    }
    match op.trim_end_matches('_') {
        // meta_binop_inplace_alpha refuses only an integer self with a
        // floating other and a bool self with a non-bool other; the rest
        // (a complex result into a real self) decompose into a casting copy.
        "add" | "sub" | "subtract" => {
            let int_from_float = to.is_integral() && to != DType::Bool && from.is_floating();
            let bool_from_other = to == DType::Bool && from != DType::Bool;
            (int_from_float || bool_from_other).then(cast)
        }
        // (div_ with a rounding mode is torch._refs' `_make_inplace`: its
        // out wrapper's safe-cast check refuses, as for the ops below.)
        "div" | "divide" if !matches!(a.get("rounding_mode"), Value::None) => Some(OpError::new(
            "other",
            format!("Attempting to cast from torch.{} to out tensor with dtype torch.{}, but this can't be cast because it is not safe!", from.name(), to.name()),
        )),
        "mul" | "multiply" | "div" | "divide" | "true_divide" | "addcmul" | "addcdiv" => None,
        // torch._decomp's register_inplace ops: `self.copy_(op(...))`, a
        // casting copy (tests/oracle/addmm_promotion.tp).
        "addbmm" | "addmm" | "addmv" | "baddbmm" | "fill" | "gelu" | "hardswish" | "hardtanh"
        | "hardsigmoid" | "__iand" | "__ior" | "__ixor"
        | "index_put" | "index_reduce" | "leaky_relu" | "logit" | "relu" | "renorm" | "round"
        | "scatter" | "scatter_add" | "scatter_reduce" | "silu" => None,
        _ => Some(OpError::new(
            "other",
            format!(
                "{op}: the result type {} cannot be written into a {} tensor",
                from.name(),
                to.name()
            ),
        )),
    }
}

/// meta_binop_inplace_alpha's dtype checks of `add_`/`sub_`: an integer
/// `self` takes no floating `other`, a bool `self` only a bool one (by the
/// operand's own dtype or Python type, not the promoted one).
fn binop_inplace_alpha_check(it: &Interp, op: &str, to: DType, other: &Value) -> Option<OpError> {
    if !matches!(op.trim_end_matches('_'), "add" | "sub" | "subtract") {
        return None;
    }
    let (floating, boolean) = match other {
        Value::Tensor(o) => {
            let d = it.m.t(*o).dtype;
            (d.is_floating(), d == DType::Bool)
        }
        Value::Float(_) => (true, false),
        Value::Bool(_) => (false, true),
        _ => (false, false),
    };
    let message = if to.is_integral() && to != DType::Bool && floating {
        "Promotion of int.add/sub_(float) in in-place ops are not possible due to element size change."
    } else if to == DType::Bool && !boolean {
        // (sic: PyTorch's message)
        "Promotion of book.add/sub_(others) in in-place ops are not possible due to element size change."
    } else {
        return None;
    };
    Some(
        OpError::new("dtype-cast", message)
            .help("use the out-of-place op, or convert with `.to(dtype)` first"),
    )
}

fn apply_inplace(it: &mut Interp, op: &'static OpDef, a: Args, span: Span) -> R<Value> {
    let self_name = op.params.first().map_or("self", |p| p.name);
    let me = a.tensor(self_name).map_err(|e| op_error(e, span))?;
    let others: NamedInputs = named_inputs(&a)
        .into_iter()
        .filter(|(n, _)| *n != self_name)
        .collect();
    let other_ids: smallvec::SmallVec<[TensorId; 4]> =
        others.iter().filter_map(|(_, t)| *t).collect();
    // copy_ (VariableTypeManual.cpp) also requires a differentiable `self`
    // before it checks the view + in-place rules.
    let checked = if op.name == "copy_" && !it.m.t(me).dtype.can_require_grad() {
        &[][..]
    } else {
        &other_ids[..]
    };
    // An inference tensor's version bump (ADInplaceOrView, after the
    // kernel) refuses the write: the kernel's own shape, dtype and overlap
    // errors come first (tests/oracle/inference_inplace_order.tp).
    let refused = match it.m.check_inplace(me, checked) {
        Err(e) if e.code == "inference-tensor" => Some(e),
        r => {
            r.map_err(|e| op_error(e, span))?;
            None
        }
    };
    let t = {
        let t = it.m.t(me);
        InplaceTarget {
            sizes: t.sizes().clone(),
            dtype: t.dtype,
        }
    };
    // autograd's kernel collects the inputs' grad_fns (regenerating a
    // view's, which may raise), `self`'s first, before the op itself checks
    // anything (tests/oracle/regenerate_before_copy_checks.tp).
    let mut inputs = other_ids.clone();
    inputs.push(me);
    if it.m.records_grad(&inputs, t.dtype) {
        for &o in std::iter::once(&me).chain(&other_ids) {
            it.m.grad_fn(o).map_err(|e| op_error(e, span))?;
        }
        // Then it saves what backward needs, before the kernel's checks.
        if it.m.made_inference && other_ids.iter().any(|&o| it.m.t(o).is_inference) {
            it.m.check_early_saves(saved_variant(&a), true, &named_inputs(&a))
                .map_err(|e| op_error(e, span))?;
        }
    }
    if op.name == "copy_" && it.m.mode == Mode::Analysis {
        // meta_copy_ refuses internal overlap first, then expands `src`.
        meta_copy_overlap(it, me).map_err(|e| op_error(e, span))?;
        if let Value::Tensor(src) = a.get("src") {
            copy_expand_check(it, *src, &t.sizes).map_err(|e| op_error(e, span))?;
        }
    }
    // Eager's TensorIterator checks memory overlap before shapes and types
    // (compute_mem_overlaps, then compute_shape, then compute_types).
    if it.m.mode == Mode::Eager
        && checks_overlap(it, op.name, &a)
        && !copies_same_data(it, op, &a, me)
    {
        it.m.check_no_internal_overlap(me)
            .map_err(|e| op_error(e, span))?;
        // Partial overlap with an input: eager kernels only (the analysis
        // accepts these); fill_ with an aliasing value clones it first.
        if op.name != "fill_" {
            for &o in &other_ids {
                it.m.check_no_partial_overlap(me, o)
                    .map_err(|e| op_error(e, span))?;
            }
        }
    }
    // Eager's TensorIterator checks that the common dtype can be cast to
    // `self` before the bitwise and shift kernels look at it.
    if it.m.mode == Mode::Eager && op.rule == "binary_int" {
        let vals = [a.get(self_name), a.get("other")];
        let common = pointwise(it, &vals, "int")
            .map_err(|e| op_error(e, span))?
            .dtype;
        if !DType::can_cast(common, t.dtype) {
            if let Some(e) = cast_error(it, op.name, &a, common, t.dtype) {
                return Err(op_error(e, span));
            }
        }
    }
    // meta_binop_inplace_alpha (add_, sub_) checks the dtypes before the
    // broadcast.
    if it.m.mode == Mode::Analysis {
        if let Some(e) = binop_inplace_alpha_check(it, op.name, t.dtype, a.get("other")) {
            return Err(op_error(e, span));
        }
    }
    // The result the op would compute, which must fit into `self`.
    let InplaceResult {
        sizes,
        dtype,
        strides,
    } = inplace_result(it, op, &a, span).map_err(|e| op_error(e, span))?;
    let cast = dtype
        .filter(|d| !DType::can_cast(*d, t.dtype))
        .and_then(|d| cast_error(it, op.name, &a, d, t.dtype));
    // The analysis's decompositions check the cast before broadcasting;
    // eager's TensorIterator the other way round.
    if it.m.mode == Mode::Analysis {
        if let Some(e) = cast.clone() {
            return Err(op_error(e, span));
        }
    }
    if let Some(sizes) = sizes.filter(|s| !it.m.sizes.eq_dims(s, &t.sizes)) {
        if it.m.mode == Mode::Analysis && resizes_self(op, &a) {
            // The analysis runs torch._refs' in-place op,
            // `pow(self, exponent, out=self)` (`_make_inplace`): its out
            // wrapper resizes `self` to the broadcast shape (with a warning)
            // instead of refusing. The wrapper's Python sizes stay the old
            // ones, and no metadata mutation is recorded
            // (tests/oracle/pytorch/binary_ufuncs_2.tp, opinfo_index_2.tp,
            // tests/oracle/inplace_ref_resize.tp).
            let strides = shape::contiguous_strides(&sizes, &mut it.m.sizes)
                .map_err(|e| op_error(e, span))?;
            // The new value is a fresh tensor (replace_), not a grown storage.
            let numel = it.m.sizes.prod(&sizes).map_err(|e| op_error(e, span))?;
            let itemsize = SymInt::int(it.m.t(me).dtype.itemsize());
            let nbytes =
                it.m.sizes
                    .mul(&numel, &itemsize)
                    .map_err(|e| op_error(e, span))?;
            let storage = it.m.t(me).storage;
            it.m.storages[storage].nbytes = Some(nbytes);
            let old = it.m.t(me).geom.clone();
            let geom = it.m.geometry(sizes, strides);
            it.m.python_geom.entry(me).or_insert(old);
            it.m.set_geometry_in_place(me, geom);
        } else {
            let structured = matches!(op.name, "addmm_" | "baddbmm_");
            let e = if structured && it.m.mode == Mode::Eager {
                // Structured in-place kernels check their output (eager).
                bad_inplace_call(&t.sizes, &sizes)
            } else if (structured || matches!(op.name, "copy_" | "__ilshift__" | "__irshift__"))
                && it.m.mode == Mode::Analysis
                && sizes.len() > t.sizes.len()
            {
                // The analysis's copy_ back expands the result.
                OpError::new(
                    "other",
                    "expand: the requested shape has too few dimensions!",
                )
            } else if (structured || matches!(op.name, "__ilshift__" | "__irshift__"))
                && it.m.mode == Mode::Analysis
            {
                // torch/_decomp's register_inplace: `self.copy_(self << other)`,
                // whose expand of the larger result refuses (so does addmm_'s
                // and baddbmm_'s copy_ back, tests/oracle/addmm_inplace_checks.tp).
                let grown = sizes.iter().zip(t.sizes.iter()).find(|(r, s)| r != s);
                let length = grown.map_or_else(|| SymInt::int(1), |(r, _)| r.clone());
                OpError::new(
                    "expand",
                    format!("expand: attempting to expand a dimension of length {length}!"),
                )
            } else {
                shape::output_broadcast_error(&t.sizes, &sizes)
            };
            return Err(op_error(
                e.help(format!("an in-place op cannot grow `self`; use the out-of-place `{}` and rebind the name", op.name.trim_end_matches('_'))),
                span,
            ));
        }
    }
    if let Some(e) = cast {
        return Err(op_error(e, span));
    }
    if it.m.mode == Mode::Analysis && checks_overlap(it, op.name, &a) {
        it.m.check_no_internal_overlap(me)
            .map_err(|e| op_error(e, span))?;
    }
    index_op_overlaps(it, op.name, &a, me).map_err(|e| op_error(e, span))?;
    if let Some(e) = refused {
        // (So does functionalization's frozen-storage check.)
        it.m.check_not_frozen(me).map_err(|e| op_error(e, span))?;
        return Err(op_error(e, span));
    }
    let name = OpTable::get().inplace_name(op.name);
    let values = if it.m.mode == Mode::Eager && t.dtype.is_integral() {
        super::values::after_inplace(&it.m, name, &|k: &str| a.get(k).clone(), me)
            .and_then(|sets| it.m.written_values(me, sets))
    } else {
        None
    };
    it.m.defer_lookup = it.m.mode == Mode::Analysis;
    it.m.deferred_lookup = None;
    let node = it.m.mutate_data(me, name, &others, span);
    it.m.defer_lookup = false;
    let node = node.map_err(|e| op_error(e, span))?;
    if let Some(values) = values {
        it.m.commit_values(values);
    }
    // (Eager only: the analysis runs these in-place ops as the refs'
    // `out=` form, whose autograd kernel makes no such check.)
    if let Some(base) = complex_autograd_refused(op.name) {
        if it.m.mode == Mode::Eager && t.dtype.is_complex() && it.m.records_grad(&inputs, t.dtype) {
            return Err(op_error(complex_autograd_error(base), span));
        }
    }
    if let Some(node) = node {
        name_node(it, &a, node);
        scatter_src_grad(it, op, &a, node);
    }
    mark_reduce_not_differentiable(it, &a, node);
    mark_negative_slope(it, &a, node);
    if it.m.mode == Mode::Analysis {
        let strides = match strides {
            Some(strides) => strides,
            None => functional_strides(it, name, &a, me).map_err(|e| op_error(e, span))?,
        };
        it.m.check_as_strided_chain(me)
            .map_err(|e| op_error(e, span))?;
        it.m.check_scatter_bounds(me)
            .map_err(|e| op_error(e, span))?;
        it.m.check_resize_view_bounds(me)
            .map_err(|e| op_error(e, span))?;
        it.m.check_unfold_inverse(me)
            .map_err(|e| op_error(e, span))?;
        it.m.check_expand_inverse_dtype(me)
            .map_err(|e| op_error(e, span))?;
        it.m.replace_value(me, strides)
            .map_err(|e| op_error(e, span))?;
        if let Some(e) = it.m.deferred_lookup.take() {
            return Err(op_error(e, span));
        }
    }
    Ok(Value::Tensor(me))
}

/// Eager `copy_` returns at once when `src` is the same data as `self`
/// (`copy_impl`, Copy.cpp: `is_same` or `is_same_data`), before the
/// TensorIterator that checks for overlap; autograd still counts the write.
fn copies_same_data(it: &mut Interp, op: &OpDef, a: &Args, me: TensorId) -> bool {
    if op.name != "copy_" {
        return false;
    }
    let Value::Tensor(src) = a.get("src") else {
        return false;
    };
    let (x, y) = (it.m.t(me).clone(), it.m.t(*src).clone());
    x.storage == y.storage
        && x.dtype == y.dtype
        && it.m.sizes.eq(&x.offset, &y.offset)
        && it.m.sizes.eq_dims(x.sizes(), y.sizes())
        && it.m.sizes.eq_dims(x.strides(), y.strides())
}

/// What `apply_inplace` reads of the tensor it writes.
struct InplaceTarget {
    sizes: Dims,
    dtype: DType,
}

/// The analysis runs `copy_` as its decomposition, which expands `src` to
/// `self`'s shape with torch._refs' `expand`: its checks, and its words,
/// come before any broadcasting error.
/// Before that, meta_copy_ compares `self.size() != src.size()` as Python
/// tuples, which (unlike lists) compare pair by pair from the left whatever
/// their lengths: a guard on each pair up to the first that differs, which
/// may specialise a symbol (`n` of hint 5 against a 5).
fn copy_expand_check(it: &mut Interp, src: TensorId, target: &[SymInt]) -> OpResult<()> {
    let sizes = it.m.t(src).sizes().clone();
    for (x, y) in target.iter().zip(&sizes) {
        if !it.m.sizes.eq(x, y) {
            break;
        }
    }
    if sizes.len() > target.len() {
        return Err(OpError::new(
            "other",
            "expand: the requested shape has too few dimensions!",
        ));
    }
    let offset = target.len() - sizes.len();
    for (x, requested) in sizes.iter().zip(&target[offset..]) {
        if !it.m.sizes.eq(requested, x) && !it.m.sizes.eq_int(x, 1) {
            return Err(OpError::new(
                "expand",
                format!("expand: attempting to expand a dimension of length {x}!"),
            ));
        }
    }
    Ok(())
}

/// `utils.is_integer_dtype`: an integer dtype, bool not included.
fn is_integer_dtype(dtype: DType) -> bool {
    dtype.is_integral() && dtype != DType::Bool
}

/// The meta function of `__lshift__`/`__rshift__` (and so of their in-place
/// forms) under the analysis, `shift_dtype_check`: self of an integer dtype
/// (bool is not one), and a shift value that is a tensor of one, or an int.
fn shift_meta_error(it: &Interp, which: &str, own: DType, other: &Value) -> Option<OpError> {
    if !is_integer_dtype(own) {
        return Some(shift_dtype_error(which, "input tensor", own));
    }
    shift_value_error(it, which, other)
}

/// `shift_dtype_check`'s check of the shift value: a tensor of an integer
/// dtype, or an int.
fn shift_value_error(it: &Interp, which: &str, other: &Value) -> Option<OpError> {
    match other {
        Value::Tensor(t) => {
            let dtype = it.m.t(*t).dtype;
            (!is_integer_dtype(dtype)).then(|| shift_dtype_error(which, "shift value", dtype))
        }
        Value::Float(f) => Some(oe(
            "other",
            format!("{which}: Expected shift value to be an int. Got {f:?}"),
        )),
        _ => None,
    }
}

/// torch._refs' shift ops refuse a floating-point operand (`what`: the
/// "input tensor" or the "shift value") under the analysis.
fn shift_dtype_error(which: &str, what: &str, dtype: DType) -> OpError {
    oe(
        "other",
        format!(
            "{which}: Expected {what} to have an integral dtype. Got torch.{}",
            dtype.name()
        ),
    )
}

/// sub_check's and torch._refs' words for subtracting two bool tensors.
const SUBTRACT_TWO_BOOLS: &str = "Subtraction, the `-` operator, with two bool tensors is not supported. Use the `^` or `logical_xor()` operator instead.";

/// The words for negating a bool tensor (neg_check, and torch._refs.neg).
const NEGATE_BOOL: &str = "Negation, the `-` operator, on a bool tensor is not supported. If you are trying to invert a mask, use the `~` or `logical_not()` operator instead.";

/// The dtypes a pointwise kernel refuses although promotion gives them:
/// eager's kernels are built for some dtypes only and fail with
/// AT_DISPATCH's words, while the analysis runs the op's decomposition,
/// which passes or fails in its own words (tests/oracle/kernel_dtypes.tp).
/// `common` is the operands' promoted dtype.
fn kernel_dtype_error(it: &Interp, op: &str, a: &Args, common: DType) -> Option<OpError> {
    let Value::Tensor(me) = a.get("self") else {
        return None;
    };
    let own = it.m.t(*me).dtype;
    let eager = it.m.mode == Mode::Eager;
    let not_built = |kernel: &str, dtype: DType| eager.then(|| not_implemented_for(kernel, dtype));
    let python_type = if own == DType::Bool { "bool" } else { "int" };
    let cast = |arg: &str| {
        oe(
            "other",
            format!("{arg} argument of type <class 'float'> cannot be safely cast to type <class '{python_type}'>!"),
        )
    };
    // In-place and operator spellings: `abs_`, `__ilshift__`.
    let base = op.trim_end_matches('_').trim_start_matches("__");
    match base {
        "relu" if own == DType::Bool => {
            eager.then(|| oe("other", "Boolean inputs not supported for relu"))
        }
        "hardtanh" | "relu6" if own == DType::Bool => {
            Some(oe("other", "Bool inputs not supported for hardtanh"))
        }
        "abs" | "absolute" if own == DType::Bool => not_built("abs_cpu", own),
        "floor" | "ceil" | "round" | "trunc" | "fix" if own == DType::Bool => {
            let name = if base == "fix" { "trunc" } else { base };
            not_built(&format!("{name}_vml_cpu"), own)
        }
        "logsigmoid" if own == DType::Bool && !eager => Some(oe("other", NEGATE_BOOL)),
        "gelu" | "silu" | "mish" | "softplus" | "hardsigmoid" | "hardswish" | "logsigmoid"
            if own.is_integral() =>
        {
            let kernel = match base {
                "gelu" => "GeluKernelImpl".to_string(),
                "logsigmoid" => "log_sigmoid_cpu".to_string(),
                other => format!("{other}_cpu"),
            };
            not_built(&kernel, own)
        }
        "elu" | "selu" if own.is_integral() => {
            not_built("elu_cpu", own).or_else(|| Some(cast("input_scale")))
        }
        "leaky_relu" if own.is_integral() => {
            not_built("leaky_relu_cpu", own).or_else(|| Some(cast("negative_slope")))
        }
        "lt" | "le" | "gt" | "ge" | "less" | "less_equal" | "greater" | "greater_equal"
            if own.is_complex()
                || matches!(a.get("other"), Value::Tensor(o) if it.m.t(*o).dtype.is_complex()) =>
        {
            let name = match base {
                "less" => "lt",
                "less_equal" => "le",
                "greater" => "gt",
                "greater_equal" => "ge",
                b => b,
            };
            let operands = DType::promote(
                own,
                match a.get("other") {
                    Value::Tensor(o) => it.m.t(*o).dtype,
                    _ => own,
                },
            );
            not_built(&format!("{name}_cpu"), operands)
        }
        "maximum" | "minimum" | "fmax" | "fmin" if common.is_complex() && eager => Some(oe(
            "other",
            format!("{base} not implemented for complex tensors."),
        )),
        "sign" if own.is_complex() && eager => Some(oe(
            "other",
            "Unlike NumPy, torch.sign is not intended to support complex numbers. Please use torch.sgn instead.",
        )),
        "relu" | "clamp" | "clip" | "clamp_min" | "clamp_max" if own.is_complex() && eager => {
            Some(oe("other", "clamp is not supported for complex types"))
        }
        "round" if own.is_complex() => not_built("round_vml_cpu", own),
        // round(decimals=) has no integer shortcut (round_decimals_out).
        "round" if own.is_integral() && !matches!(a.get("decimals"), Value::None) => {
            let zero = matches!(a.get("decimals"), Value::Int(d) if d.as_int() == Some(0));
            not_built(if zero { "round_vml_cpu" } else { "round_cpu" }, own)
        }
        "floor" | "ceil" | "trunc" | "fix" if own.is_complex() && eager => {
            let name = if base == "fix" { "trunc" } else { base };
            Some(oe(
                "other",
                format!("{name} is not supported for complex inputs"),
            ))
        }
        "lerp" if own.is_integral() => {
            let kernel = match a.get("weight") {
                Value::Tensor(_) => "lerp_kernel_tensor",
                _ => "lerp_kernel_scalar",
            };
            not_built(kernel, common)
        }
        // TORCH_META_FUNC2(pow, Tensor_Scalar).
        "pow"
            if own.is_integral()
                && eager
                && matches!(a.get("exponent"), Value::Int(e) if e.as_int().is_some_and(|e| e < 0)) =>
        {
            Some(oe(
                "other",
                "Integers to negative integer powers are not allowed.",
            ))
        }
        // The integral CPU kernels (div_floor, div_trunc, remainder) check
        // each divisor: a literal 0 fails in eager.
        "floor_divide" | "remainder" | "div" | "divide"
            if eager
                && common.is_integral()
                && common != DType::Bool
                && (base.starts_with('f') || base == "remainder" || !matches!(a.get("rounding_mode"), Value::None))
                && matches!(a.get("other"), Value::Int(d) if d.as_int() == Some(0)) =>
        {
            Some(oe("other", "ZeroDivisionError"))
        }
        "floor_divide" if common == DType::Bool => not_built("div_floor_cpu", common)
            .or_else(|| Some(oe("other", "torch.bool not supported for floor_divide"))),
        "remainder" | "fmod" if common == DType::Bool => not_built(&format!("{base}_cpu"), common),
        "pow" if common == DType::Bool => not_built("pow", common),
        // (The analysis's shift kernels check nothing more.)
        "ilshift" | "irshift" if !eager => {
            shift_meta_error(it, base.trim_start_matches('i'), own, a.get("other"))
        }
        "bitwise_left_shift" | "lshift" | "ilshift"
            if common == DType::Bool || !common.is_integral() =>
        {
            not_built("lshift_cpu", common)
        }
        "bitwise_right_shift" | "rshift" | "irshift"
            if common == DType::Bool || !common.is_integral() =>
        {
            not_built("rshift_cpu", common)
        }
        "bitwise_and" | "bitwise_or" | "bitwise_xor" | "bitwise_not" | "and" | "or" | "xor"
        | "iand" | "ior" | "ixor"
            if !common.is_integral() =>
        {
            let name = base.trim_start_matches("bitwise_").trim_start_matches('i');
            not_built(&format!("bitwise_{name}_cpu"), common)
        }
        _ => None,
    }
}

/// The distribution checks of the random in-place fills (ATen's
/// DistributionTemplates.h). normal_'s std and exponential_'s lambda are
/// checked by the analysis's decompositions too; the range checks of
/// uniform_, random_ and bernoulli_ only by eager's kernels.
fn random_bounds(it: &Interp, op: &str, a: &Args) -> OpResult<()> {
    let num = |name: &str| match a.get(name) {
        Value::Int(i) => i.as_int().map(|i| i as f64),
        Value::Float(f) => Some(*f),
        _ => None,
    };
    let eager = it.m.mode == Mode::Eager;
    let show = |v: f64| {
        if eager && v.fract() == 0.0 {
            format!("{v:.0}")
        } else {
            format!("{v:?}")
        }
    };
    let help = "check the distribution's parameters";
    // The dtype checks: torch._refs' exponential and normal in the analysis
    // (exponential's before its lambda check), the CPU kernels' dispatch
    // in eager (after it).
    let dtype = match a.get("self") {
        Value::Tensor(t) => it.m.t(*t).dtype,
        _ => DType::F32,
    };
    let exponential_dtype = || {
        let name = if eager {
            torch_type_name(dtype).to_string()
        } else {
            format!("torch.{}", dtype.name())
        };
        oe("other", format!("Exponential distribution is a continuous probability distribution. dtype must be a floating point but you specified {name}"))
            .help("fill a floating-point tensor")
    };
    let floating = dtype.is_floating();
    match op {
        "exponential_" if !floating && !eager => return Err(exponential_dtype()),
        // As randn's and rand's (normal_ and uniform_ fill them).
        "normal_" | "uniform_" => {
            let like = if op == "normal_" { "randn" } else { "rand" };
            random_dtype_check(it, like, dtype)
                .map_err(|e| e.help("fill a floating-point tensor"))?;
        }
        _ => {}
    }
    match op {
        "normal_" => {
            if let Some(std) = num("std").filter(|&s| s < 0.0) {
                return Err(oe(
                    "other",
                    format!("normal expects std >= 0.0, but found std {}", show(std)),
                )
                .help(help));
            }
        }
        "exponential_" => {
            if let Some(l) = num("lambd").filter(|&l| l <= 0.0) {
                return Err(oe(
                    "other",
                    format!(
                        "exponential_ expects lambda > 0.0, but found lambda={}",
                        show(l)
                    ),
                )
                .help(help));
            }
            if !floating {
                return Err(exponential_dtype());
            }
        }
        "uniform_" if eager => {
            if let (Some(from), Some(to)) = (num("from"), num("to")) {
                if from > to {
                    return Err(oe("other", format!("uniform_ expects to return a [from, to) range, but found from={} > to={}", show(from), show(to))).help(help));
                }
            }
        }
        "bernoulli_" if eager => {
            if let Some(p) = num("p").filter(|p| !(0.0..=1.0).contains(p)) {
                return Err(oe(
                    "other",
                    format!(
                        "bernoulli_ expects p to be in [0, 1], but got p={}",
                        show(p)
                    ),
                )
                .help(help));
            }
        }
        "random_" if eager => {
            // random_(to) or random_(from, to).
            let (from, to) = match (num("a"), num("b")) {
                (Some(to), None) if matches!(a.get("b"), Value::None) => (Some(0.0), Some(to)),
                (from, to) => (from, to),
            };
            if let (Some(from), Some(to)) = (from, to) {
                if from >= to {
                    return Err(oe(
                        "other",
                        format!(
                            "random_ expects 'from' to be less than 'to', but got from={} >= to={}",
                            show(from),
                            show(to)
                        ),
                    )
                    .help(help));
                }
                let dtype = it.m.t(a.tensor("self")?).dtype;
                from_to_in_range(dtype, from, to)?;
            }
        }
        _ => {}
    }
    Ok(())
}

/// check_from_to_in_range (eager random_, and randint/randint_like, which
/// fill through it): `from` and `to - 1` within the dtype's range.
fn from_to_in_range(dtype: DType, from: f64, to: f64) -> OpResult<()> {
    // (int64 takes any int bound; float64 and complex are not checked.)
    let (min, max) = match dtype {
        DType::I64 => return Ok(()),
        d => match value_range(d) {
            Some(r) => r,
            None => return Ok(()),
        },
    };
    let name = cpp_type_name(dtype);
    let help = "check the distribution's parameters";
    if from < min || from > max {
        return Err(oe("other", format!("from is out of bounds for {name}")).help(help));
    }
    if to - 1.0 < min || to - 1.0 > max {
        return Err(oe("other", format!("to - 1 is out of bounds for {name}")).help(help));
    }
    Ok(())
}

/// caffe2 TypeMeta names, which C++ checks print for a tensor's dtype.
fn cpp_type_name(d: DType) -> &'static str {
    match d {
        DType::Bool => "bool",
        DType::U8 => "unsigned char",
        DType::I8 => "signed char",
        DType::I16 => "short int",
        DType::I32 => "int",
        DType::I64 => "long int",
        DType::F16 => "c10::Half",
        DType::BF16 => "c10::BFloat16",
        DType::F32 => "float",
        DType::F64 => "double",
        DType::C64 => "c10::complex<float>",
        DType::C128 => "c10::complex<double>",
    }
}

/// ScalarType names as PyTorch prints them in cast errors.
fn torch_type_name(d: DType) -> &'static str {
    match d {
        DType::Bool => "Bool",
        DType::U8 => "Byte",
        DType::I8 => "Char",
        DType::I16 => "Short",
        DType::I32 => "Int",
        DType::I64 => "Long",
        DType::F16 => "Half",
        DType::BF16 => "BFloat16",
        DType::F32 => "Float",
        DType::F64 => "Double",
        DType::C64 => "ComplexFloat",
        DType::C128 => "ComplexDouble",
    }
}

/// What an in-place op computes before writing it into `self`.
struct InplaceResult {
    /// The broadcast shape of its operands (None when the op does not
    /// broadcast into self).
    sizes: Option<Dims>,
    /// The computed dtype to cast.
    dtype: Option<DType>,
    /// The strides of the functional op's result, when the op's rule
    /// computed it (`functional_strides` otherwise).
    strides: Option<Dims>,
}

/// For an in-place op: what it computes (`InplaceResult`).
fn inplace_result(
    it: &mut Interp,
    op: &'static OpDef,
    a: &Args,
    span: Span,
) -> OpResult<InplaceResult> {
    let none = InplaceResult {
        sizes: None,
        dtype: None,
        strides: None,
    };
    let me = a.tensor(op.params.first().map_or("self", |p| p.name))?;
    let t = it.m.t(me).clone();
    match op.rule {
        "fill" => {
            random_bounds(it, op.name, a)?;
            eager_scalar_fits(it, t.dtype, a.get("value"))?;
            if let (Value::Tensor(v), Mode::Eager) = (a.get("value"), it.m.mode) {
                // (The analysis's fill.Tensor takes any value tensor.)
                let nd = it.m.t(*v).sizes().len();
                if nd != 0 {
                    return Err(oe("other", format!("fill_ only supports 0-dimension value tensor but got tensor with {nd} dimensions.")));
                }
            }
            Ok(none)
        }
        "copy" => {
            let src = a.tensor("src")?;
            let ss = it.m.t(src).sizes().clone();
            // src must broadcast to self.
            let b = shape::broadcast_shapes(t.sizes(), &ss, &mut it.m.sizes)?;
            Ok(InplaceResult {
                sizes: Some(b),
                ..none
            })
        }
        "masked_fill" => {
            let mask = a.tensor("mask")?;
            let b =
                masked_fill_checks(it, t.dtype, t.sizes(), mask, a.get("value"), false, |md| {
                    format!(
                        "masked_fill_ only supports boolean masks, but got mask with dtype {}",
                        md.name()
                    )
                })?;
            Ok(InplaceResult {
                sizes: Some(b),
                ..none
            })
        }
        "index_add" | "index_fill" => {
            index_func_checks(it, a)?;
            Ok(none)
        }
        "scatter" => {
            scatter_checks(it, a)?;
            Ok(none)
        }
        "index_put" => {
            eager_index_put_checks(it, me, a)?;
            Ok(none)
        }
        _ => {
            let (metas, _) = functional(it, op, a, span)?;
            let first = metas.into_iter().next();
            Ok(match first {
                Some(m) => InplaceResult {
                    sizes: Some(m.sizes),
                    dtype: Some(m.dtype),
                    strides: Some(m.strides),
                },
                None => none,
            })
        }
    }
}

/// The strides of the functional result that replaces `self` in the
/// analysis after in-place op `op` (`Machine::replace_value`), for the ops
/// whose rule did not compute it. Read from PyTorch 2.7.1's answers for a
/// transposed and a size-1 `self` (tests/oracle/inplace_functional_strides.tp):
/// - `copy_` is `aten.copy`, a `clone_preserve_strides` of self: the same
///   strides;
/// - ops whose functional form makes a new contiguous tensor (`zero_`'s
///   `new_empty`, `uniform_`, `bernoulli_`, the index and scatter ops that
///   `clone` first): contiguous; `masked_fill_` is `where(mask, value,
///   self).contiguous()`;
/// - the rest (`fill_`, `normal_`, `random_`, `exponential_`,
///   `index_fill_`, `index_put_`): `empty_like`, the layout with fresh
///   strides for size-1 dims.
fn functional_strides(it: &mut Interp, op: &str, a: &Args, me: TensorId) -> OpResult<Dims> {
    let t = it.m.t(me).clone();
    match op {
        "copy_" => Ok(t.strides().clone()),
        "masked_fill_" => {
            // where(mask, value, self)'s layout, then contiguous() (a no-op
            // when it already is, size-1 dims' strides and all).
            let mask = a.tensor("mask")?;
            let strides = iter_strides(it, t.sizes(), &[mask, me])?;
            if shape::is_contiguous(t.sizes(), &strides, &mut it.m.sizes) {
                Ok(strides)
            } else {
                shape::contiguous_strides(t.sizes(), &mut it.m.sizes)
            }
        }
        "index_add_" | "index_copy_" => cloned_contiguous_strides(it, &t),
        "zero_" | "uniform_" | "bernoulli_" | "scatter_" | "scatter_add_" => {
            shape::contiguous_strides(t.sizes(), &mut it.m.sizes)
        }
        _ => shape::like_strides(
            t.sizes(),
            t.strides(),
            MemoryFormat::Preserve,
            &mut it.m.sizes,
        ),
    }
}

fn inplace_meta(it: &mut Interp, op: &'static OpDef, a: &Args, span: Span) -> OpResult<Value> {
    // resize_ and resize_as_ move the version counter on only when they
    // change the sizes (a new memory format alone relays the strides and
    // leaves it; tests/oracle/resize_version_bump.tp); in the analysis too,
    // whose autograd kernel is the same (tests/oracle/resize_same_size_views.tp).
    let before = match op.rule {
        "resize" | "resize_as" => {
            let me = a.tensor("self")?;
            let t = it.m.t(me);
            Some((
                me,
                t.sizes().clone(),
                it.m.versions[t.version],
                it.m.version_spans[t.version],
            ))
        }
        _ => None,
    };
    let result = inplace_meta_op(it, op, a, span)?;
    if let Some((me, sizes, version, at)) = before {
        let (now, v) = (it.m.t(me).sizes().clone(), it.m.t(me).version);
        if it.m.sizes.eq_dims(&now, &sizes) {
            it.m.versions[v] = version;
            it.m.version_spans[v] = at;
        }
    }
    Ok(result)
}

fn inplace_meta_op(it: &mut Interp, op: &'static OpDef, a: &Args, span: Span) -> OpResult<Value> {
    let me = a.tensor("self")?;
    let t = it.m.t(me).clone();
    // resize_'s Autograd kernel (VariableTypeManual.cpp) refuses before
    // autograd's in-place checks, in any grad mode; inference_mode skips
    // the Autograd key.
    let resize = matches!(op.rule, "resize" | "resize_as");
    if resize && it.m.requires_grad(me) && !it.m.inference_mode {
        return Err(oe("other", "cannot resize variables that require grad"));
    }
    // swapaxes_/swapdims_ (CompositeImplicitAutograd) on an inference
    // tensor outside inference_mode pass the analysis, which decomposes them
    // below autograd's version check; eager refuses (measured:
    // tests/oracle/audit_coverage_2.tp).
    let decomposed = it.m.mode == Mode::Analysis
        && matches!(op.name, "swapaxes_" | "swapdims_")
        && t.is_inference
        && !it.m.inference_mode;
    if !resize && !decomposed {
        it.m.check_inplace(me, &[])?;
    }
    let mut grown = false;
    let mut relaid = false;
    // The Python wrapper's geometry after resize_as_, when it was stale.
    let mut wrapper: Option<SharedGeometry> = None;
    // Eager: the values of a storage a resize reallocated (`Machine::reallocate_values`).
    let mut realloc = None;
    let meta = match op.rule {
        "resize" | "resize_as" => {
            if it.m.requires_grad(me) && !it.m.inference_mode {
                return Err(oe("other", "cannot resize variables that require grad"));
            }
            let template = if op.rule == "resize_as" {
                Some(it.m.t(a.tensor("the_template")?).clone())
            } else {
                None
            };
            let sizes = match &template {
                Some(t) => t.sizes().clone(),
                None => a.syms("size")?,
            };
            // The analysis: the sizes the template's Python wrapper has,
            // where a set_() left them stale (the wrapper is resized to
            // those; tests/oracle/resize_as_stale_template.tp).
            let wrapper_sizes = match op.rule {
                "resize_as" if it.m.mode == Mode::Analysis => {
                    let template = a.tensor("the_template")?;
                    it.m.python_geom.get(&template).map(|g| g.sizes().clone())
                }
                _ => None,
            };
            for s in &sizes {
                if it.m.sizes.lt_int(s, 0) {
                    return Err(oe(
                        "other",
                        format!("Trying to create tensor with negative dimension {s}"),
                    ));
                }
            }
            // A resize to the sizes the tensor has changes nothing: an
            // inference tensor outside inference_mode is refused only when
            // they differ (tests/oracle/inference_resize.tp).
            if !it.m.sizes.eq_dims(&sizes, t.sizes()) {
                // The analysis's functionalized resize_ refuses to grow a
                // shared storage before the version bump refuses an
                // inference tensor outside inference_mode.
                if it.m.mode == Mode::Analysis && it.m.inference_update_refused(me) {
                    it.m.resize_storage_for(
                        me,
                        &sizes,
                        op.rule == "resize",
                        wrapper_sizes.as_deref(),
                    )?;
                }
                it.m.check_inplace(me, &[])?;
            }
            if it.m.mode == Mode::Analysis {
                // PyTorch 2.7.1's functionalized resize_ takes only static
                // sizes, and (as resize_as_) only on a tensor whose own are
                // static.
                if op.rule == "resize" && sizes.iter().any(SymInt::is_symbolic) {
                    return Err(oe("other", "isIntList() INTERNAL ASSERT FAILED at \"/pytorch/aten/src/ATen/core/ivalue_inl.h\":1979, please report a bug to PyTorch. Expected IntList but got GenericList")
                        .help("PyTorch's analysis cannot resize_ to symbolic sizes: allocate the tensor at its size instead"));
                }
                if !it.m.has_static_wrapper_sizes(me) {
                    // FakeTensor's resize of the unwrapped value passes once
                    // guards made every size a number; the wrapper's
                    // storage_offset() then refuses its SymInts
                    // (tests/oracle/resize_after_specialisation.tp).
                    let env = &it.m.sizes.env;
                    let specialised = (t.sizes().iter().chain(t.strides().iter()))
                        .all(|d| env.resolved_int(d).is_some());
                    let message = if specialised {
                        "Cannot call storage_offset() on tensor with symbolic sizes/strides"
                    } else {
                        "tried to directly modify sizes for customized tensor"
                    };
                    return Err(oe("other", message)
                        .help("PyTorch's analysis cannot resize_ a tensor of symbolic sizes: allocate a new one instead"));
                }
                // resize__functionalization then compares the new size in
                // bytes with `storage().nbytes()`, which refuses a storage
                // whose size is symbolic (a view of an input of symbolic
                // sizes), even once a guard made it a number.
                let nbytes = &it.m.storages[t.storage].nbytes;
                if op.rule == "resize" && nbytes.as_ref().and_then(SymInt::as_int).is_none() {
                    return Err(oe("other", "Expected !size_bytes_is_heap_allocated_ to be true, but got false.  (Could this error message be improved?  If so, please report an enhancement request to PyTorch.)")
                        .help("PyTorch's analysis cannot resize_ a view of a storage of symbolic size: resize a clone instead"));
                }
            }
            // resize_ keeps the strides when the sizes do not change and no
            // memory format is asked for; resize_as_ turns preserve_format
            // into the template's suggested format.
            let fmt = match (a.memory_format("memory_format").ok().flatten(), &template) {
                (Some(MemoryFormat::Preserve), Some(t)) => Some(shape::suggest_memory_format(
                    t.sizes(),
                    t.strides(),
                    &mut it.m.sizes,
                )),
                (Some(MemoryFormat::Preserve), None) => {
                    return Err(oe("other", "Unsupported memory format Preserve"));
                }
                // The analysis's resize_as (torch._decomp) resizes to a
                // contiguous layout when no format is given
                // (tests/oracle/resize_as_layout.tp).
                (None, Some(_)) if it.m.mode == Mode::Analysis => Some(MemoryFormat::Contiguous),
                (f, _) => f,
            };
            if op.rule == "resize_as" && it.m.mode == Mode::Analysis {
                resize_as_view_inverse(it, me, &sizes)?;
            }
            let storage = t.storage;
            let before = match it.m.mode {
                Mode::Eager => Some((
                    it.m.current_values(storage),
                    it.m.storages[storage]
                        .nbytes
                        .as_ref()
                        .and_then(SymInt::as_int),
                )),
                Mode::Analysis => None,
            };
            grown =
                it.m.resize_storage_for(me, &sizes, op.rule == "resize", wrapper_sizes.as_deref())?;
            if let (true, Some((values, old_nbytes))) = (grown, before) {
                // Eager reallocated the storage: its new part is uninitialized.
                realloc = it.m.reallocate_values(storage, t.dtype, values, old_nbytes);
            }
            if it.m.mode == Mode::Analysis && op.rule == "resize" {
                // resize__functionalization: a resize_ that fits the
                // storage is a view of it (tests/oracle/resize_view_meta.tp).
                if grown {
                    it.m.resize_views.remove(&me);
                    // A new value, on a new storage.
                    it.m.fresh_values.remove(&me);
                } else {
                    it.m.resize_views.insert(me, sizes.clone());
                    it.m.viewed_in_place.insert(me);
                }
            }
            // resize__functionalization runs a resize_ that fits the storage
            // as the view `as_strided(size, contiguous_strides(size))`: the
            // same sizes lose a non-contiguous layout there.
            let keeps = it.m.mode == Mode::Eager || grown || op.rule == "resize_as";
            let same = it.m.sizes.eq_dims(&sizes, t.sizes());
            // resize_'s layout of `sizes` for a tensor whose own geometry
            // is `current`: its strides kept when the sizes are the same,
            // no memory format is asked for and `keeps`; else laid out anew.
            let resized_strides = |it: &mut Interp,
                                   sizes: &[SymInt],
                                   current: &SharedGeometry,
                                   keeps: bool| match fmt {
                None if keeps && it.m.sizes.eq_dims(sizes, current.sizes()) => {
                    Ok(current.strides().clone())
                }
                f => shape::format_strides(
                    sizes,
                    f.unwrap_or(MemoryFormat::Contiguous),
                    &mut it.m.sizes,
                ),
            };
            // FunctionalTensorMode runs resize_as_ on the Python wrapper too
            // (an inplace_view op), with the template's wrapper's sizes
            // (stale after a set_(), tests/oracle/resize_as_stale_template.tp):
            // a wrapper whose sizes were stale, or that takes stale ones,
            // is laid out anew unless they are the sizes it had.
            if it.m.mode == Mode::Analysis
                && op.rule == "resize_as"
                && (wrapper_sizes.is_some() || it.m.python_geom.contains_key(&me))
            {
                let python = it.m.python_geometry(me).clone();
                let wanted = wrapper_sizes.as_ref().unwrap_or(&sizes).clone();
                let strides = resized_strides(it, &wanted, &python, true)?;
                wrapper = Some(it.m.geometry(wanted, strides));
            }
            relaid = !keeps && same && fmt.is_none();
            let strides = resized_strides(it, &sizes, &t.geom, keeps)?;
            Meta {
                sizes,
                strides,
                offset: t.offset.clone(),
                dtype: t.dtype,
            }
        }
        rule => match view_rule(it, rule, a, span)? {
            ViewResult::Same => it.m.meta_of(me),
            ViewResult::View(m) => m,
        },
    };
    // FunctionalTensorMode also runs an in-place view op on the Python
    // wrapper itself (`as_strided_` underneath), whose storage is its
    // base's: a layout past its end (an as_strided view the analysis
    // accepted) is refused there (tests/oracle/as_strided_view_bounds.tp).
    // (The wrapper's own layout is the one Python sees.)
    // C++'s transpose_ returns early, without as_strided_, for two equal
    // dims (so does t_ on fewer than 2 dims: transpose_(0, 0)).
    if it.m.mode == Mode::Analysis
        && !resize
        && op.name != "as_strided_"
        && !swaps_nothing(it, op.name, a, t.sizes().len())
    {
        // Where they differ (a write re-laid the value, set_() swapped the
        // storage), tpi does not check.
        let differ = it.m.python_geom.contains_key(&me) || it.m.pending_values.contains_key(&me);
        if !differ {
            // (A view of a set_() tensor: its wrapper's storage is the old.)
            let storage = it.m.python_storage.get(&me).map_or(t.storage, |&(s, _)| s);
            check_storage_bounds(it, storage, &meta)?;
        }
    }
    // Under inference_mode, resize_as_ is a data mutation of the base (see
    // below) and a resize_ that grows the storage replaces it, leaving a
    // base: wrapping either registers the storage. Any other metadata change
    // makes a view (tests/oracle/inference_metadata_ops.tp).
    if grown {
        it.m.register_inference_base(me);
    } else if op.rule != "resize_as" {
        it.m.check_inference_metadata(me)?;
    }
    if op.rule == "resize_as" {
        // Functionalization turns resize_as_ into a data mutation (no metadata flag).
        // Eager's changes no element unless it grew the storage.
        let storage = it.m.tensors[me].storage;
        let kept = match it.m.mode {
            Mode::Eager if !grown => it.m.current_values(storage),
            _ => realloc,
        };
        it.m.mutate_data(me, "resize_as_", &[], span)?;
        if let Some(values) = kept {
            it.m.restamp_values(storage, values);
        }
        if it.m.mode == Mode::Analysis
            && *t.strides() != meta.strides
            && it.m.sizes.eq_dims(t.sizes(), &meta.sizes)
        {
            // Its value is laid out anew; the Python wrapper keeps its
            // strides (`Machine::python_geom`).
            it.m.python_geom.entry(me).or_insert(t.geometry().clone());
        }
        // The value the next sync regenerates through the view metas; the
        // Python wrapper keeps the template's sizes.
        let value = match it.m.mode {
            Mode::Analysis => it.m.resize_as_write_back(me, &meta.sizes, &meta.strides)?,
            Mode::Eager => None,
        };
        if it.m.mode == Mode::Analysis && !it.m.t(me).functional_view {
            // A base's value is now a tensor of the template's elements
            // (`Machine::resized_as_values`).
            if let Some(n) = shape::known_numel(&meta.sizes) {
                let made = it.m.tensors.len();
                it.m.resized_as_values.insert(me, (made, n));
            }
        }
        let geom = it.m.geometry(meta.sizes, meta.strides);
        let geom = match value {
            Some((sizes, strides)) if sizes != *geom.sizes() || strides != *geom.strides() => {
                it.m.python_geom.entry(me).or_insert(geom);
                it.m.geometry(sizes, strides)
            }
            _ => geom,
        };
        if it.m.mode == Mode::Analysis
            && !it.m.sizes.eq_dims(t.sizes(), geom.sizes())
            && !it.m.t(me).functional_view
        {
            it.m.pend_views_of_resized(me, &geom);
        }
        match wrapper {
            Some(python) if python == geom => {
                it.m.python_geom.remove(&me);
            }
            Some(python) => {
                it.m.python_geom.insert(me, python);
            }
            None => {}
        }
        it.m.set_geometry_in_place(me, geom);
        return Ok(Value::Tensor(me));
    }
    if relaid && *t.strides() != meta.strides {
        // The wrapper keeps its strides; only its value is re-laid out
        // (what has_metadata_mutation compares).
        it.m.python_geom.insert(me, t.geometry().clone());
    } else if matches!(op.rule, "resize" | "resize_as") {
        // The wrapper takes the new sizes: nothing stale is left.
        it.m.python_geom.remove(&me);
    } else if let Some(stale) = it.m.python_geom.get(&me).cloned() {
        // FunctionalTensorMode then runs the op on the wrapper itself
        // (under no_dispatch), with the sizes Python sees.
        let real = std::mem::replace(&mut it.m.tensors[me].geom, stale);
        let python = view_rule(it, op.rule, a, span);
        it.m.tensors[me].geom = real;
        if let ViewResult::View(m) = python? {
            let geom = it.m.geometry(m.sizes, m.strides);
            it.m.python_geom.insert(me, geom);
        }
    }
    // (Eager only: comparing symbolic sizes guards on them.)
    let resized = it.m.mode == Mode::Eager && !it.m.sizes.eq_dims(t.sizes(), &meta.sizes);
    let records = it.m.mode == Mode::Eager
        && !matches!(op.rule, "resize" | "resize_as")
        && it.m.records_grad(&[me], t.dtype);
    // Under grad mode an in-place view op rebases the tensor's history on a
    // node of its own (TBackward1, …, which autograd's messages name); a
    // view's is regenerated instead, except where its stale grad_fn may
    // refuse the gradient of the sizes before the op (`record_node` checks
    // them against `Machine::grad_sizes`).
    if records && (t.view.is_none() || (resized && it.m.grad_sizes.contains_key(&me))) {
        let node =
            it.m.record_history(op.name, true, &[("self", Some(me))], &[me], span)?;
        if let Some(node) = node {
            name_node(it, a, node);
        }
    }
    if resized {
        // Under grad mode the node takes gradients of the new sizes;
        // otherwise the tensor's grad_fn keeps expecting the old ones
        // (`Machine::grad_sizes`).
        if it.m.records_grad(&[me], t.dtype) {
            it.m.grad_sizes.remove(&me);
        } else if (t.view.is_none() && (t.grad_fn.is_some() || it.m.accumulators.contains(&me)))
            || it.m.has_view_fn(me)
        {
            // (A view's node is regenerated from its new sizes: the write
            // moved its version on; but one with a view_fn replays its view
            // ops, which give the sizes they made. A leaf's AccumulateGrad
            // keeps the sizes it was made with.)
            it.m.grad_sizes
                .entry(me)
                .or_insert_with(|| t.sizes().clone());
        }
    }
    if it.m.mode == Mode::Analysis && !matches!(op.rule, "resize" | "resize_as") {
        it.m.viewed_in_place.insert(me);
        it.m.resize_views.remove(&me);
    }
    it.m.provenance.metadata(me, t.storage, op.name, span);
    // An in-place view op on a view sets its history (set_history, not
    // rebase_history): its node takes the view's previous one, read first
    // (regenerated if stale), and the view's node is current again, so a
    // later read does not replay its view ops on the base.
    let next = if it.m.mode == Mode::Analysis && t.view.is_some() {
        it.m.next_edges(&[("self", Some(me))], &[me])?
    } else {
        None
    };
    it.m.mutate_metadata(me, op.rule, meta.sizes, meta.strides, meta.offset);
    if it.m.mode == Mode::Analysis {
        // What the view meta keeps that the geometries do not tell: a
        // resize_ that fit, the dim arguments as given (wrapped again when
        // the meta is replayed or inverted on another rank).
        let dims = match op.rule {
            "transpose" => transpose_dims(it, a).ok(),
            // (squeeze_'s meta keeps its dim wrapped: the geometries tell it.)
            "unsqueeze" => a.int(it, "dim").ok().map(|d| (d, d)),
            _ => None,
        };
        let fitted = op.rule == "resize" && !grown;
        if let Some(c) =
            it.m.metadata_changes
                .get_mut(&me)
                .and_then(|c| c.last_mut())
        {
            c.fitted_resize = fitted;
            c.dims = dims;
        }
    }
    if let Some(next) = next {
        it.m.record_node(op.name, true, &[("self", Some(me))], &[me], span, next)?;
        it.m.mark_history_current(me);
    }
    Ok(Value::Tensor(me))
}

// ---------------------------------------------------------------- storage and autograd

fn storage_op(it: &mut Interp, op: &'static OpDef, a: &Args, span: Span) -> OpResult<Value> {
    let me = a.tensor("self")?;
    match op.rule {
        "set" => {
            let src = a.tensor("source")?;
            it.m.check_inplace(me, &[src])?;
            let old = it.m.t(me).storage;
            let s = it.m.t(src).clone();
            if s.dtype != it.m.t(me).dtype {
                return Err(oe(
                    "other",
                    format!(
                        "Could not set tensor of type {} to a tensor of type {}",
                        s.dtype.name(),
                        it.m.t(me).dtype.name()
                    ),
                ));
            }
            // FunctionalTensorWrapper::set__impl freezes self's old storage,
            // then takes the source's: the same frozen one when the source
            // shares it (a view of self, or self a view of it).
            if it.m.mode == Mode::Analysis {
                it.m.storages[old].frozen = Some(span);
            }
            it.m.provenance.set_storage(me, src, s.storage, span);
            // An in-place op on a view rebases its base's history (as for
            // any in-place op): read the base's node first.
            let view = it.m.t(me).view;
            let base_fn = match &view {
                Some(v) if it.m.records_grad(&[me, src], it.m.t(me).dtype) => {
                    it.m.grad_fn(v.base)?
                }
                _ => None,
            };
            let inputs = [("self", Some(me)), ("source", Some(src))];
            let next = it.m.next_edges(&inputs, &[me])?;
            let version = it.m.t(me).version;
            it.m.versions[version] += 1;
            if it.m.mode == Mode::Analysis {
                // The Python wrapper keeps its sizes (`Machine::python_geom`)
                // and its storage.
                let geom = it.m.t(me).geometry().clone();
                it.m.python_geom.entry(me).or_insert(geom);
                let offset = it.m.t(me).offset.clone();
                it.m.python_storage.entry(me).or_insert((old, offset));
                if src != me {
                    match it.m.pending_values.get(&src).cloned() {
                        Some(pending) => it.m.pending_values.insert(me, pending),
                        None => it.m.pending_values.remove(&me),
                    };
                    let made = it.m.tensors.len();
                    it.m.set_sources.insert(me, (src, made));
                    if it.m.functional_view_like(src).is_some() {
                        it.m.set_onto_views.insert(me);
                    } else {
                        it.m.set_onto_views.remove(&me);
                    }
                    // set__impl takes the source's value as it is.
                    match it.m.fresh_values.get(&src).copied() {
                        Some(fresh) => it.m.fresh_values.insert(me, fresh),
                        None => it.m.fresh_values.remove(&me),
                    };
                }
                // Views made before replay their ops on the new geometry
                // when autograd regenerates their node.
                it.m.record_metadata_change(me, "set_");
            } else {
                // As for an in-place metadata op: without history (no_grad),
                // the tensor's grad_fn keeps expecting its old sizes
                // (`Machine::grad_sizes`). A leaf's grad accumulator is
                // reset by set_ (RESET_GRAD_ACCUMULATOR): made anew later.
                let t = it.m.t(me);
                let old_sizes = t.sizes().clone();
                let keeps_node = t.view.is_none() && t.grad_fn.is_some();
                let leaf_accumulator =
                    t.view.is_none() && t.grad_fn.is_none() && it.m.accumulators.contains(&me);
                if !it.m.sizes.eq_dims(&old_sizes, s.sizes()) {
                    if next.is_some() {
                        it.m.grad_sizes.remove(&me);
                    } else if keeps_node {
                        it.m.grad_sizes.entry(me).or_insert(old_sizes);
                    } else if leaf_accumulator && it.m.mode == Mode::Eager {
                        let first_after = it.m.nodes.len() as NodeId;
                        it.m.reset_accumulators
                            .entry(me)
                            .or_default()
                            .push((first_after, old_sizes));
                    }
                }
            }
            it.m.set_geometry_in_place(me, s.geometry().clone());
            let t = &mut it.m.tensors[me];
            t.storage = s.storage;
            t.offset = s.offset;
            t.storage_changed = true;
            // The wrapper takes the source's value and view metas: a view to
            // functionalization exactly when the source is one; it is no
            // longer a changed-metadata view of its old self (its
            // `mutates_metadata` comes from `storage_changed` now, or from
            // the flag, which set_ leaves).
            t.functional_view = s.functional_view;
            if std::mem::take(&mut t.metadata_mutated) {
                it.m.metadata_flag_kept.insert(me);
            }
            it.m.viewed_in_place.remove(&me);
            it.m.resize_views.remove(&me);
            // set_ propagates requires_grad, but has no derivative.
            let node = match next {
                Some(next) => it.m.record_node("set_", true, &inputs, &[me], span, next)?,
                None => None,
            };
            if let Some(node) = node {
                it.m.nodes[node].not_implemented = Some(NoDerivative::Set);
                if let Some(view) = view {
                    it.m.regenerate_view_node(me, view.base)?;
                    it.m.rebase_view_history(me, view.base, node, base_fn, span);
                }
            }
            Ok(Value::Tensor(me))
        }
        "resize_storage" => {
            let n = a.sym("nbytes")?;
            let st = it.m.t(me).storage;
            // torch 2.7.1's analysis records nothing for this op (the input stays
            // NOT_MUTATED, `mutation_inductor_storage_resize` false): its
            // functionalization kernel resizes the inner tensor's storage,
            // any size to any size, as eager's resize_bytes_nocuda does
            // (tests/oracle/resize_storage_any_size.tp). The resize is kept
            // for later size checks only.
            let old = it.m.storages[st].nbytes.replace(n.clone());
            if it.m.mode == Mode::Eager && old.as_ref() != Some(&n) {
                // resize_bytes reallocates: only the bytes both sizes have
                // are copied.
                let before = it.m.current_values(st);
                let dtype = it.m.t(me).dtype;
                it.m.reallocate_values(st, dtype, before, old.and_then(|o| o.as_int()));
            }
            Ok(Value::Tensor(me))
        }
        other => Err(oe("other", format!("internal: no storage rule `{other}`"))),
    }
}

fn autograd_op(it: &mut Interp, op: &'static OpDef, a: &Args, span: Span) -> OpResult<Value> {
    let me = a.tensor("self")?;
    let _ = span;
    match op.rule {
        "requires_grad_" => {
            let b = a.bool("requires_grad")?;
            if !it.m.stored_is_leaf(me) {
                if !b {
                    return Err(oe("other", "you can only change requires_grad flags of leaf variables. If you want to use a computed variable in a subgraph that doesn't require differentiation use var_no_grad = var.detach()."));
                }
                return Ok(Value::Tensor(me));
            }
            // THPVariable_requires_grad_ checks the dtype, then
            // TensorImpl::set_requires_grad refuses an inference tensor.
            if b && !it.m.t(me).dtype.can_require_grad() {
                return Err(oe(
                    "requires-grad-dtype",
                    "only Tensors of floating point dtype can require gradients",
                ));
            }
            if b && it.m.t(me).is_inference && !it.m.inference_mode {
                return Err(oe("other", "Setting requires_grad=True on inference tensor outside InferenceMode is not allowed."));
            }
            it.m.tensors[me].requires_grad_flag = b;
            Ok(Value::Tensor(me))
        }
        "detach_" => {
            if it.m.t(me).view.is_some() {
                return Err(oe(
                    "other",
                    "Can't detach views in-place. Use detach() instead.",
                ));
            }
            it.m.check_inference_metadata(me)?;
            let t = &mut it.m.tensors[me];
            t.grad_fn = None;
            t.requires_grad_flag = false;
            // The analysis's input wrapper is a leaf now, as any detached
            // tensor: an older view of it written in place is a view of a
            // leaf for check_inplace.
            t.analysis_input_grad = false;
            Ok(Value::Tensor(me))
        }
        other => Err(oe("other", format!("internal: no autograd rule `{other}`"))),
    }
}

/// at::repeat_interleave_symint (composite, so in both runs): a tensor of
/// repeats is 0-d, one element, or one per element of `self` along `dim`
/// (of the flattened `self` without a dim). The composite reads the sizes
/// Python sees (stale after set_() in the analysis), and names `dim` as
/// given.
fn check_repeats_length(
    it: &mut Interp,
    t: &Tensor,
    repeats: TensorId,
    me: Option<TensorId>,
    a: &Args,
) -> OpResult<()> {
    let rsizes = it.m.t(repeats).sizes().clone();
    let (d, along) = match a.opt_int(it, "dim")? {
        None => (0, it.m.numel(me.unwrap_or(0))?),
        Some(given) => {
            let sizes = match me {
                Some(me) => it.m.python_geometry(me).sizes(),
                None => t.sizes(),
            };
            // `input.sym_size(dim)` of a tensor Python sees as 0-d (stale
            // after set_()) does not wrap the dim as a scalar's.
            if sizes.is_empty() && rsizes.len() <= 1 {
                return Err(oe(
                    "other",
                    format!("Dimension specified as {given} but tensor has no dimensions"),
                ));
            }
            let Ok(d) = shape::wrap_dim(given, sizes.len()) else {
                return Ok(());
            };
            match sizes.get(d) {
                Some(n) => (given, n.clone()),
                None => return Ok(()),
            }
        }
    };
    match rsizes.as_slice() {
        [] => Ok(()),
        [n] if it.m.sizes.eq_int(n, 1) || it.m.sizes.eq(n, &along) => Ok(()),
        [n] => Err(oe(
            "other",
            format!("repeats must have the same size as input along dim, but got repeats.size(0) = {n} and input.size({d}) = {along}"),
        )),
        _ => Err(oe("other", "repeats must be 0-dim or 1-dim tensor")),
    }
}

/// The output size along `dim` of `repeat_interleave` with a tensor of
/// repeats and no `output_size`: the sum of the repeats (a one-element
/// repeats tensor repeats every element). The analysis's FakeTensor refuses
/// the op (DynamicOutputShapeException), even for known repeats; eager
/// reads the values, which tpi knows for literals, else the size is
/// unknown (an unbacked symbol).
fn tensor_repeats_size(
    it: &mut Interp,
    repeats: TensorId,
    me: Option<TensorId>,
    a: &Args,
) -> OpResult<SymInt> {
    if it.m.has_shape_env() {
        return Ok(it.m.unbacked_size());
    }
    if it.m.mode == Mode::Analysis {
        return Err(oe(
            "other",
            "aten.repeat_interleave.Tensor: PyTorch's metadata analysis cannot trace repeat_interleave with tensor repeats, whose output size depends on their values",
        )
        .help("pass output_size=, or use int repeats"));
    }
    if let Some(values) = it.m.known_values(repeats) {
        // repeat_interleave_cpu reads the values first.
        if values.iter().any(|&r| r < 0) {
            return Err(oe("other", "repeats can not be negative"));
        }
        let total = match (&*values, me) {
            ([r], Some(me)) => {
                let n = match a.opt_int(it, "dim")? {
                    None => it.m.numel(me)?,
                    Some(d) => {
                        let sizes = it.m.t(me).sizes().clone();
                        let d = shape::wrap_dim(d, sizes.len())?;
                        match sizes.get(d) {
                            Some(n) => n.clone(),
                            // `input.sym_size(dim)` of a 0-d self.
                            None => return Err(no_dims_error(d)),
                        }
                    }
                };
                return it.m.sizes.mul(&n, &SymInt::int(*r));
            }
            (values, _) => values.iter().sum::<i64>(),
        };
        return Ok(SymInt::int(total));
    }
    Ok(it.m.unbacked_size())
}

/// Functionalization makes `resize_as_` a data mutation: its result goes
/// back to the base through the view's inverse. Through a reshaping view
/// (`view`, `reshape`, matmul's `_unsafe_view`) that inverse views the new
/// value with the base's sizes, which fails when `resize_as_` changed the
/// number of elements. Other views' inverses pass (tests/oracle/resize_as_views.tp).
fn resize_as_view_inverse(it: &mut Interp, me: TensorId, sizes: &[SymInt]) -> OpResult<()> {
    // After a resize_ that fit the storage, commit_update scatters the new
    // value back with as_strided_scatter, which wants that resize's sizes.
    if let Some(slice) = it.m.resize_views.get(&me).cloned() {
        if !it.m.sizes.eq_dims(&slice, sizes) {
            return Err(oe(
                "other",
                format!(
                    "expected src to have a size equal to the slice of self. src size = torch.Size({}), slice size = {}",
                    show(sizes),
                    show(&slice)
                ),
            )
            .help("the earlier resize_ made this tensor a view of its storage in the analysis: resize_as_ it before that, or clone it first"));
        }
    }
    let t = it.m.t(me);
    let base_sizes = match it.m.provenance.parent(me) {
        Some(p) if it.m.t(p).storage == t.storage => {
            let reshaping = matches!(
                t.origin_op.as_str(),
                "view" | "view_as" | "reshape" | "flatten" | "unflatten"
            );
            if !reshaping {
                return Ok(());
            }
            it.m.t(p).sizes().clone()
        }
        _ => match it.m.unsafe_view_sources.get(&me) {
            Some(sizes) => sizes.clone(),
            None => return Ok(()),
        },
    };
    let old = it.m.sizes.prod(t.sizes())?;
    let new = it.m.sizes.prod(sizes)?;
    if it.m.sizes.eq(&old, &new) {
        return Ok(());
    }
    Err(invalid_shape_error(&base_sizes, &new)
        .help("resize the base tensor, or clone the view before resizing it"))
}

/// `custom_view(x)`: the output of a custom autograd.Function whose forward
/// returns `x.view_as(x)`.
pub fn custom_view(it: &mut Interp, x: TensorId, span: Span) -> R<Value> {
    let mut meta = it.m.meta_of(x);
    // `x.view_as(x)` views the real tensor with the sizes Python sees: a
    // view (`computeStride`), which may restride size-1 dims.
    let t = it.m.t(x).clone();
    let sizes = it.m.stale_python_sizes(x).unwrap_or(t.sizes()).clone();
    view_sizes(it, &t, &sizes, &mut meta).map_err(|e| op_error(e, span))?;
    let records = it.m.records_grad(&[x], meta.dtype);
    let v =
        it.m.view_of(x, meta, "view_as", false, true, span)
            .map_err(|e| op_error(e, span))?;
    if records {
        let prev = it.m.grad_fn(x).map_err(|e| op_error(e, span))?;
        let node = it.m.add_node("CustomViewBackward", prev, span);
        it.m.nodes[node].custom = true;
        // Its backward returns a gradient of `x`'s sizes now, which a
        // grad_fn made before an in-place metadata op under no_grad refuses.
        it.m.check_grad_sizes(node, 0, x);
        it.m.tensors[v].grad_fn = Some(node);
    }
    // _process_backward_mode_ad marks every view output IN_CUSTOM_FUNCTION,
    // differentiable or not (an in-place op on it then fails as a view
    // "created in no_grad mode" inside a custom Function).
    if let Some(view) = it.m.tensors[v].view.as_mut() {
        view.creation_meta = CreationMeta::InCustomFunction;
    }
    Ok(Value::Tensor(v))
}

// ---------------------------------------------------------------- creation

fn creation(it: &mut Interp, op: &'static OpDef, a: &Args, span: Span) -> OpResult<Value> {
    let dtype_arg = a.dtype("dtype")?;
    let requires_grad = a.bool("requires_grad")?;
    let (sizes, dtype, strides): (Dims, DType, Option<Dims>) = match op.rule {
        "full_0" | "full_1" | "full" => {
            let sizes = a.syms("size")?;
            let dtype = match (dtype_arg, op.rule) {
                (Some(d), _) => d,
                (None, "full") => match a.get("fill_value") {
                    Value::Bool(_) => DType::Bool,
                    Value::Int(_) => DType::I64,
                    Value::Tensor(t) => it.m.t(*t).dtype,
                    _ => DType::F32,
                },
                _ => DType::F32,
            };
            random_dtype_check(it, op.name, dtype)?;
            let fmt = if op.params.iter().any(|p| p.name == "memory_format") {
                a.memory_format("memory_format")?
            } else {
                None
            };
            let strides = match fmt {
                Some(f) if f != MemoryFormat::Preserve => {
                    Some(shape::format_strides(&sizes, f, &mut it.m.sizes)?)
                }
                _ => None,
            };
            (sizes, dtype, strides)
        }
        "randint" => {
            // randint(high, size) or randint(low, high, size): the size
            // is the last one given.
            let size = match (a.get("low"), a.get("high"), a.get("size")) {
                (_, Value::Tuple(_) | Value::List(_), Value::None) => a.syms("high")?,
                (_, _, Value::Tuple(_) | Value::List(_)) => a.syms("size")?,
                _ => {
                    return Err(oe(
                        "arguments",
                        "randint(low=0, high, size): a size tuple is required",
                    ))
                }
            };
            let dtype = dtype_arg.unwrap_or(DType::I64);
            let (low, high) = randint_range(a);
            if let Some(high) = high.filter(|&h| low >= h) {
                return Err(oe("other", format!("random_ expects 'from' to be less than 'to', but got from={low} >= to={high}")));
            }
            if dtype.is_complex() && it.m.mode == Mode::Eager {
                return Err(oe(
                    "other",
                    "check_random_bounds handles only integral, floating-point and boolean types",
                ));
            }
            if let (Some(high), Mode::Eager) = (high, it.m.mode) {
                from_to_in_range(dtype, low as f64, high as f64)?;
            }
            (size, dtype, None)
        }
        "arange"
            if ["start", "end", "step"]
                .iter()
                .all(|k| matches!(a.get(k), Value::Int(_) | Value::None)) =>
        {
            let get = |k: &str| match a.get(k) {
                Value::Int(i) => Some(i.clone()),
                _ => None,
            };
            let (start, end, step) = match (get("start"), get("end"), get("step")) {
                (Some(e), None, None) => (SymInt::int(0), e, SymInt::int(1)),
                (Some(s0), Some(e), None) => (s0, e, SymInt::int(1)),
                (Some(s0), Some(e), Some(st)) => (s0, e, st),
                _ => return Err(oe("arguments", "arange(): bad arguments")),
            };
            let step_v = it.m.sizes.concrete(&step, "arange's step")?;
            let n = arange_length(it, &start, &end, step_v)?;
            (smallvec![n], dtype_arg.unwrap_or(DType::I64), None)
        }
        "arange" => 'arange: {
            let vals: Vec<&Value> = ["start", "end", "step"]
                .iter()
                .map(|k| a.get(k))
                .filter(|v| !matches!(v, Value::None))
                .collect();
            let any_float = vals.iter().any(|v| matches!(v, Value::Float(_)));
            let d = dtype_arg.unwrap_or(if any_float { DType::F32 } else { DType::I64 });
            if let Some(n) = float_arange_length(it, &vals)? {
                break 'arange (smallvec![n], d, None);
            }
            let nums: Vec<f64> = vals
                .iter()
                .map(|v| match v {
                    Value::Int(i) => it.m.sizes.concrete(i, "arange").map(|x| x as f64),
                    Value::Float(f) => Ok(*f),
                    Value::Bool(b) => Ok(*b as i64 as f64),
                    other => Err(oe(
                        "arguments",
                        format!("arange(): expected a number, got `{}`", other.type_name()),
                    )),
                })
                .collect::<OpResult<_>>()?;
            let (start, end, step) = match nums.len() {
                1 => (0.0, nums[0], 1.0),
                2 => (nums[0], nums[1], 1.0),
                _ => (nums[0], nums[1], nums[2]),
            };
            if step == 0.0 {
                return Err(oe("other", "step must be nonzero"));
            }
            if (step > 0.0 && end < start) || (step < 0.0 && end > start) {
                return Err(oe(
                    "other",
                    "upper bound and larger bound inconsistent with step sign",
                ));
            }
            let n = ((end - start) / step).ceil();
            if !(0.0..=1e15).contains(&n) {
                return Err(oe("other", "arange: too many elements"));
            }
            (smallvec![SymInt::int(n as i64)], d, None)
        }
        "linspace" => (
            // `int steps` (not SymInt): a size passed as steps is read as
            // a Python int, which guards it to its hint.
            smallvec![SymInt::int(
                it.m.sizes.concrete(&a.sym("steps")?, "linspace's steps")?
            )],
            dtype_arg.unwrap_or(DType::F32),
            None,
        ),
        "eye" => {
            let n = a.sym("n")?;
            let m = match a.get("m") {
                Value::Int(m) => m.clone(),
                _ => n.clone(),
            };
            (smallvec![n, m], dtype_arg.unwrap_or(DType::F32), None)
        }
        "tensor" => {
            guard_data_sizes(it, a.get("data"))?;
            let (sizes, inferred) = literal_shape(it, a.get("data"))?;
            (sizes, dtype_arg.unwrap_or(inferred), None)
        }
        "like" => {
            let src = a.tensor("self")?;
            let t = it.m.t(src).clone();
            let fmt = a
                .memory_format("memory_format")?
                .unwrap_or(MemoryFormat::Preserve);
            let strides = like_strides_for(it, &t, fmt)?;
            let dtype = match (dtype_arg, op.name, a.get("fill_value")) {
                (Some(d), _, _) => d,
                (None, _, _) => t.dtype,
            };
            random_dtype_check(it, op.name.trim_end_matches("_like"), dtype)?;
            if op.name == "randint_like" && it.m.mode == Mode::Eager {
                let int = |v: &Value| match v {
                    Value::Int(i) => i.as_int(),
                    _ => None,
                };
                let (low, high) = match (int(a.get("low")), int(a.get("high"))) {
                    (Some(h), None) => (0, Some(h)),
                    (l, h) => (l.unwrap_or(0), h),
                };
                if let Some(high) = high {
                    if low >= high {
                        return Err(oe("other", format!("random_ expects 'from' to be less than 'to', but got from={low} >= to={high}")));
                    }
                    from_to_in_range(dtype, low as f64, high as f64)?;
                }
            }
            (t.sizes().clone(), dtype, Some(strides))
        }
        "new" => {
            let src = a.tensor("self")?;
            let d = dtype_arg.unwrap_or(it.m.t(src).dtype);
            (a.syms("size")?, d, None)
        }
        other => return Err(oe("other", format!("internal: no creation rule `{other}`"))),
    };
    for s in &sizes {
        if it.m.sizes.lt_int(s, 0) {
            return Err(oe(
                "other",
                format!(
                    "Trying to create tensor with negative dimension {s}: {}",
                    show(&sizes)
                ),
            ));
        }
    }
    eager_scalar_fits(it, dtype, a.get("fill_value"))?;
    if dtype == DType::Bool && matches!(op.rule, "arange" | "linspace") && it.m.mode == Mode::Eager
    {
        return Err(not_implemented_for(&format!("{}_cpu", op.name), dtype));
    }
    if op.rule == "tensor" && dtype.is_integral() {
        // torch.tensor stores each number (store_scalar), in both runs;
        // into a floating dtype a plain cast (1e40 becomes inf).
        if let Some(e) = literal_numbers(a.get("data"))
            .iter()
            .find_map(|v| scalar_overflow(dtype, v))
        {
            return Err(OpError {
                message: format!(
                    "value cannot be converted to type {} without overflow",
                    dtype.name()
                ),
                ..e
            });
        }
    }
    if requires_grad && !dtype.can_require_grad() {
        // Factories word it with a capital "Only", which the oracle files under `other`.
        return Err(oe(
            "other",
            "Only Tensors of floating point and complex dtype can require gradients",
        ));
    }
    let strides = match strides {
        Some(s) => s,
        None => shape::contiguous_strides(&sizes, &mut it.m.sizes)?,
    };
    let meta = Meta {
        sizes,
        strides,
        offset: SymInt::int(0),
        dtype,
    };
    let integral = meta.dtype.is_integral() && meta.dtype != DType::Bool;
    // The analysis's fake tensor of a `torch.tensor` literal with at most one
    // element keeps its value (a FakeTensor constant), and `item()` reads it.
    let fake_constant = op.name == "tensor"
        && (integral || meta.dtype == DType::Bool)
        && meta
            .sizes
            .iter()
            .all(|s| s.as_int().is_some_and(|n| n <= 1));
    let id = it.m.fresh(meta, span, op.name);
    if requires_grad {
        it.m.tensors[id].requires_grad_flag = true;
    }
    if it.m.mode == Mode::Analysis && it.m.inference_mode && op.rule != "new" {
        let storage = it.m.tensors[id].storage;
        it.m.storages[storage].factory_in_inference = true;
    }
    if integral && it.m.mode == Mode::Eager && op.name == "randint" {
        // Each element one of randint's values (`values`).
        let (low, high) = randint_range(a);
        let range = high.map(|h| (low, h));
        let numel =
            it.m.t(id)
                .sizes()
                .iter()
                .map(|s| s.as_int())
                .product::<Option<i64>>();
        if let (Some(set), Some(n)) = (
            range.and_then(|(l, h)| super::values::randint_set(l, h)),
            numel,
        ) {
            let sets = vec![set; usize::try_from(n).unwrap_or(0)];
            it.m.record_values(id, sets);
        }
    }
    if (integral && it.m.mode == Mode::Eager) || fake_constant {
        if let Some(values) = created_values(it, op, a, id) {
            if it.m.mode == Mode::Eager {
                let sets = values.iter().map(|&v| smallvec![v]).collect();
                it.m.record_values(id, sets);
            }
            it.m.record_literal(id, values.into());
        }
    }
    Ok(Value::Tensor(id))
}

/// randint's `low` and `high` as given: randint(high, size) or
/// randint(low, high, size); `high` None when it is not a known int.
fn randint_range(a: &Args) -> (i64, Option<i64>) {
    let int = |name: &str| match a.get(name) {
        Value::Int(i) => i.as_int(),
        _ => None,
    };
    match (int("low"), int("high")) {
        (Some(h), None) => (0, Some(h)),
        (l, h) => (l.unwrap_or(0), h),
    }
}

/// The index checks of eager's CPU `index_select` (`index_select_out_cpu_`)
/// for an index whose values tpi knows (a literal tensor): a 0-d or 1-d
/// `self` checks them against its numel; an empty `self` against the
/// indexed dim's size (which must not be 0); otherwise dim 1 takes the fast
/// path (`index_select_out_cpu_dim1_`, the result is always contiguous)
/// and any other dim the general loop, which word their errors apart.
fn literal_index_select_check(
    it: &mut Interp,
    t: &Tensor,
    dim: usize,
    values: &[i64],
) -> OpResult<()> {
    let env = &it.m.sizes.env;
    let hints: Option<Vec<i64>> = t.sizes().iter().map(|s| env.hint(s)).collect();
    let (Some(sizes), false) = (hints, values.is_empty()) else {
        return Ok(());
    };
    let numel: i64 = sizes.iter().product();
    let size = sizes.get(dim).copied().unwrap_or(numel);
    let outside = values.iter().find(|&&v| v < 0 || v >= size);
    let out_of_data = |v: i64| {
        oe(
            "other",
            format!("INDICES element is out of DATA bounds, id={v} axis_dim={size}"),
        )
    };
    if sizes.len() <= 1 {
        if outside.is_some() {
            return Err(oe("index-out-of-range", "index out of range in self"));
        }
    } else if numel == 0 {
        if size == 0 {
            return Err(oe(
                "other",
                "index_select(): self indexing axis dim should be positive",
            ));
        }
        if let Some(&v) = outside {
            return Err(out_of_data(v));
        }
    } else if let Some(&v) = outside {
        return Err(if dim == 1 {
            out_of_data(v)
        } else {
            oe("index-out-of-range", "index out of range in self")
        });
    }
    Ok(())
}

/// The numbers of a literal (a number, or nested lists and tuples of them).
fn literal_numbers(v: &Value) -> Vec<Value> {
    fn walk(v: &Value, out: &mut Vec<Value>, depth: usize) {
        match v {
            Value::Int(_) | Value::Float(_) => out.push(v.clone()),
            Value::List(_) | Value::Tuple(_) if depth < 64 => {
                for x in v.sequence().unwrap_or_default() {
                    walk(&x, out, depth + 1);
                }
            }
            _ => {}
        }
    }
    let mut out = Vec::new();
    walk(v, &mut out, 0);
    out
}

/// The values of a list of literal ints (or one int), nested lists
/// flattened in order.
fn literal_ints(v: &Value) -> Option<Vec<i64>> {
    fn walk(v: &Value, out: &mut Vec<i64>, depth: usize) -> Option<()> {
        match v {
            Value::Int(i) => out.push(i.as_int()?),
            Value::Bool(b) => out.push(i64::from(*b)),
            Value::List(_) | Value::Tuple(_) if depth < 32 => {
                for item in v.sequence()?.iter() {
                    walk(item, out, depth + 1)?;
                }
            }
            _ => return None,
        }
        Some(())
    }
    let mut out = Vec::new();
    walk(v, &mut out, 0)?;
    Some(out)
}

/// scatter's and scatter_add's meta checks (`scatter_gather_checks`), in
/// place or not.
fn scatter_checks(it: &mut Interp, a: &Args) -> OpResult<()> {
    let me = a.tensor("self")?;
    let d = shape::wrap_dim(a.int(it, "dim")?, it.m.t(me).sizes().len())?;
    let src = match a.get("src") {
        Value::Tensor(s) => Some(*s),
        _ => None,
    };
    let ix = a.tensor("index")?;
    scatter_gather_checks(it, "scatter", me, d, ix, src)?;
    literal_index_bounds(it, me, d, ix)
}

/// `std::numeric_limits<T>::lowest()` and `max()` of a dtype, as f64:
/// what c10's `overflows` and `check_from_to_in_range` compare with.
/// None for float64 and complex (nothing to compare a double with).
pub(super) fn value_range(dtype: DType) -> Option<(f64, f64)> {
    Some(match dtype {
        DType::Bool => (0.0, 1.0),
        DType::U8 => (0.0, 255.0),
        DType::I8 => (-128.0, 127.0),
        DType::I16 => (-32768.0, 32767.0),
        DType::I32 => (-2147483648.0, 2147483647.0),
        DType::I64 => (-9.223372036854776e18, 9.223372036854776e18),
        DType::F16 => (-65504.0, 65504.0),
        DType::BF16 => (-3.3895313892515355e38, 3.3895313892515355e38),
        DType::F32 => (-3.4028234663852886e38, 3.4028234663852886e38),
        DType::F64 | DType::C64 | DType::C128 => return None,
    })
}

/// c10's `overflows<To>(value)` for a Python number converted to `dtype`
/// (`Scalar::to<T>` → `checked_convert`): an int out of the integer type's
/// range (an unsigned one also takes negatives down to -max, which wrap),
/// or a float out of the type's finite range (NaN into an integer type;
/// infinities and NaN fit a floating one). Bool and complex never overflow.
fn scalar_overflow(dtype: DType, v: &Value) -> Option<OpError> {
    let name = match dtype {
        DType::U8 => "uint8_t",
        DType::I8 => "int8_t",
        DType::I16 => "int16_t",
        DType::I32 => "int",
        DType::I64 => "int64_t",
        DType::F16 => "at::Half",
        DType::BF16 => "at::BFloat16",
        DType::F32 => "float",
        DType::F64 | DType::Bool | DType::C64 | DType::C128 => return None,
    };
    let (lo, hi) = value_range(dtype)?;
    let over = match v {
        Value::Int(i) => {
            let i = i.as_int()? as f64;
            if dtype == DType::U8 {
                !(-hi..=hi).contains(&i)
            } else {
                dtype != DType::I64 && !(lo..=hi).contains(&i)
            }
        }
        Value::Float(f) => {
            if dtype.is_integral() {
                f.is_nan() || *f < lo || *f > hi
            } else {
                f.is_finite() && (*f < lo || *f > hi)
            }
        }
        _ => false,
    };
    over.then(|| {
        oe(
            "other",
            format!("value cannot be converted to type {name} without overflow"),
        )
        .help(format!("the number does not fit torch.{}", dtype.name()))
    })
}

/// `scalar_overflow` in eager only: the analysis's fake kernels never
/// convert the number.
fn eager_scalar_fits(it: &Interp, dtype: DType, v: &Value) -> OpResult<()> {
    match (it.m.mode, scalar_overflow(dtype, v)) {
        (Mode::Eager, Some(e)) => Err(e),
        _ => Ok(()),
    }
}

/// masked_fill's value: a tensor must be 0-dim (torch._refs' check, and
/// the C++ kernel's), and a complex value does not go into a real tensor
/// (the refs' `is_weakly_lesser_type`; eager's cast of its nonzero
/// imaginary part overflows).
fn masked_fill_value(it: &Interp, dtype: DType, value: &Value) -> OpResult<()> {
    let Value::Tensor(v) = value else {
        // torch._refs.masked_fill converts a number to the tensor's Python
        // type first (`_maybe_convert_to_dtype`): `int(inf)` and
        // `int(nan)` raise (tests/oracle/masked_fill_nonfinite_int.tp).
        if let (Mode::Analysis, Value::Float(f)) = (it.m.mode, value) {
            if dtype.is_integral() && dtype != DType::Bool && !f.is_finite() {
                let what = if f.is_nan() { "NaN" } else { "infinity" };
                return Err(oe(
                    "other",
                    format!("cannot convert float {what} to integer"),
                )
                .help("an integer tensor cannot hold inf or nan: fill with a number it can hold, or convert it to a floating dtype first"));
            }
        }
        return eager_scalar_fits(it, dtype, value);
    };
    let vt = it.m.t(*v);
    let nd = vt.sizes().len();
    if nd != 0 {
        return Err(oe("other", match it.m.mode {
            Mode::Analysis => format!("only supports a 0-dimensional value tensor, but got tensor with {nd} dimension"),
            Mode::Eager => format!("masked_fill_ only supports a 0-dimensional value tensor, but got tensor with {nd} dimension(s)."),
        }));
    }
    if vt.dtype.is_complex() && !dtype.is_complex() {
        return Err(oe(
            "other",
            format!(
                "value cannot be converted to type {} without overflow",
                dtype.name()
            ),
        ));
    }
    Ok(())
}

/// masked_fill's checks in each mode's order, and the broadcast shape of
/// self and mask: the analysis's ref converts the value first, then
/// checks the mask and the shapes; eager's kernel checks a tensor value's
/// rank, the mask, the shapes, and converts a number last
/// (`expand_first`: the out-of-place op's expand_outplace comes before
/// all of them).
fn masked_fill_checks(
    it: &mut Interp,
    dtype: DType,
    sizes: &[SymInt],
    mask: TensorId,
    value: &Value,
    expand_first: bool,
    mask_error: impl Fn(DType) -> String,
) -> OpResult<Dims> {
    let eager = it.m.mode == Mode::Eager;
    let ms = it.m.t(mask).sizes().clone();
    let expanded = if eager && expand_first {
        Some(shape::broadcast_shapes(sizes, &ms, &mut it.m.sizes)?)
    } else {
        None
    };
    let value_first = !eager || matches!(value, Value::Tensor(_));
    if value_first {
        masked_fill_value(it, dtype, value)?;
    }
    let md = it.m.t(mask).dtype;
    if md != DType::Bool {
        return Err(oe("other", mask_error(md)));
    }
    let b = match expanded {
        Some(b) => b,
        None => shape::broadcast_shapes(sizes, &ms, &mut it.m.sizes)?,
    };
    if !value_first {
        masked_fill_value(it, dtype, value)?;
    }
    Ok(b)
}

/// Eager's gather and scatter kernels read their indices: a literal one
/// outside `[0, self.size(dim))` fails (negative ones too).
fn literal_index_bounds(it: &Interp, me: TensorId, dim: usize, ix: TensorId) -> OpResult<()> {
    let t = it.m.t(me);
    let size = match t.sizes().get(dim) {
        Some(s) => s.as_int(),
        None => Some(1),
    };
    let Some(values) = (match size {
        Some(size) => it.m.index_values(ix, |v| v < 0 || v >= size),
        None => it.m.literal_values(ix),
    }) else {
        return Ok(());
    };
    if let (Some(size), false) = (
        size,
        it.m.t(ix).sizes().iter().any(|s| s.as_int() == Some(0)),
    ) {
        if let Some(v) = values.iter().find(|&&v| v < 0 || v >= size) {
            return Err(oe(
                "index-out-of-range",
                format!("index {v} is out of bounds for dimension {dim} with size {size}"),
            ));
        }
    }
    Ok(())
}

/// The meta checks of gather, scatter and scatter_add (ATen's
/// `scatter_gather_dtype_check`, `gather_shape_check` and
/// `scatter_shape_check`, worded as PyTorch 2.7.1 words them): the index's
/// dtype and rank, src's dtype and rank, and index sizes no larger than
/// self's (apart from `dim`) and src's. Symbolic sizes are compared as the
/// analysis's guards compare them, by their hints (`Sizes::lt`).
fn scatter_gather_checks(
    it: &mut Interp,
    name: &str,
    me: TensorId,
    dim: usize,
    ix: TensorId,
    src: Option<TensorId>,
) -> OpResult<()> {
    let (t, index) = (it.m.t(me).clone(), it.m.t(ix).clone());
    let numel = it.m.sizes.prod(index.sizes())?;
    if it.m.sizes.eq_int(&numel, 0) {
        // An empty index skips every check.
        if let Some(s) = src {
            if name == "scatter" && it.m.t(s).dtype != t.dtype {
                return Err(oe(
                    "other",
                    format!("{name}(): Expected self.dtype to be equal to src.dtype"),
                ));
            }
        }
        return Ok(());
    }
    if index.dtype != DType::I64 {
        return Err(oe(
            "other",
            format!("{name}(): Expected dtype int64 for index"),
        ));
    }
    if let Some(s) = src {
        if it.m.t(s).dtype != t.dtype {
            return Err(oe(
                "other",
                format!("{name}(): Expected self.dtype to be equal to src.dtype"),
            ));
        }
    }
    // ensure_nonempty_dim / ensure_nonempty_size: a 0-d tensor counts as [1].
    let rank = |d: &Dims| d.len().max(1);
    let size_at = |d: &Dims, i: usize| -> SymInt {
        if d.is_empty() {
            SymInt::int(1)
        } else {
            d.get(i).cloned().unwrap_or(SymInt::int(1))
        }
    };
    let what = if name == "gather" { "input" } else { "self" };
    // The analysis's Python meta words sizes as torch.Size and drops "size".
    let analysis = it.m.mode == Mode::Analysis;
    let sz = |d: &Dims| {
        if analysis {
            format!("torch.Size({})", show(d))
        } else {
            show(d)
        }
    };
    if rank(t.sizes()) != rank(index.sizes()) {
        return Err(oe(
            "other",
            format!("Index tensor must have the same number of dimensions as {what} tensor"),
        ));
    }
    let n = rank(t.sizes());
    let (is, ts) = (index.sizes(), t.sizes());
    // The first dim (not `dim`) where the index is larger than self.
    let larger = (0..n)
        .filter(|&i| i != dim)
        .find(|&i| it.m.sizes.lt(&size_at(ts, i), &size_at(is, i)));
    if name == "gather" {
        return match larger {
            Some(i) => Err(oe(
                "other",
                format!("Size does not match at dimension {i} expected index {} to be no larger than self {} apart from dimension {dim}", sz(is), sz(ts)),
            )),
            None => Ok(()),
        };
    }
    let mut wrong = larger.is_some();
    let Some(s) = src.map(|s| it.m.t(s).clone()) else {
        if wrong {
            return Err(oe(
                "other",
                format!(
                    "Expected index {} to be no larger than self {} apart from dimension {dim}",
                    sz(is),
                    sz(ts)
                ),
            ));
        }
        return Ok(());
    };
    if !wrong {
        let src_rank = s.sizes().len();
        if src_rank != 0 && src_rank < n {
            // `ensure_nonempty_size(src, d)` reads past src's sizes: a
            // Python IndexError in the analysis's meta, a dim error in C++.
            return Err(if analysis {
                oe("index-out-of-range", "tuple index out of range")
            } else {
                oe("dim-out-of-range", format!("Dimension out of range (expected to be in range of [-{src_rank}, {}], but got {src_rank})", src_rank - 1))
            });
        }
        for i in 0..n {
            if it.m.sizes.lt(&size_at(s.sizes(), i), &size_at(is, i)) {
                wrong = true;
                break;
            }
        }
    }
    if rank(s.sizes()) != rank(index.sizes()) {
        // The analysis's Python meta checks self's rank again instead.
        if !analysis {
            return Err(oe(
                "other",
                "Index tensor must have the same number of dimensions as src tensor",
            ));
        }
    }
    if wrong {
        return Err(oe(
            "other",
            format!(
                "Expected index {} to be no larger than self {} apart from dimension {dim} and to be no larger {}than src {}",
                sz(is),
                sz(ts),
                if analysis { "" } else { "size " },
                sz(s.sizes())
            ),
        ));
    }
    Ok(())
}

/// The values an integer creation op gives a tensor, when they are known
/// without running it: `torch.tensor` of literals, `zeros`/`ones`/`full`
/// (and their `_like` and `new_` forms) and `arange`; at most 65,536 of
/// them.
/// (Eager's index checks read them: `literal_values`.)
fn created_values(it: &Interp, op: &OpDef, a: &Args, id: TensorId) -> Option<Vec<i64>> {
    const MAX: i64 = 1 << 16;
    let numel = || -> Option<i64> {
        let mut n: i64 = 1;
        for s in it.m.t(id).sizes() {
            n = n.checked_mul(s.as_int()?)?;
        }
        (n <= MAX).then_some(n)
    };
    let fill = |v: i64| -> Option<Vec<i64>> { Some(vec![v; usize::try_from(numel()?).ok()?]) };
    let number = |v: &Value| -> Option<i64> {
        match v {
            Value::Int(i) => i.as_int(),
            Value::Bool(b) => Some(i64::from(*b)),
            Value::Float(f) if f.fract() == 0.0 && f.abs() < 9e15 => Some(*f as i64),
            _ => None,
        }
    };
    match op.name {
        "tensor" => literal_ints(a.get("data")),
        "zeros" | "zeros_like" | "new_zeros" => fill(0),
        "ones" | "ones_like" | "new_ones" => fill(1),
        "full" | "full_like" | "new_full" => fill(number(a.get("fill_value"))?),
        "arange" => {
            let args: Vec<i64> = ["start", "end", "step"]
                .iter()
                .map(|k| a.get(k))
                .take_while(|v| !matches!(v, Value::None))
                .map(number)
                .collect::<Option<_>>()?;
            let (start, step) = match args.len() {
                1 => (0, 1),
                2 => (args[0], 1),
                _ => (args[0], args[2]),
            };
            let n = numel()?;
            Some((0..n).map(|k| start + k * step).collect())
        }
        _ => None,
    }
}

/// The length of an arange with float bounds and a symbolic int bound
/// (`arange(0.5, n, 2.0)`): torch._refs.arange's `ceil((end - start) /
/// step)` on SymFloats, kept symbolic. Floats are dyadic fractions, so with
/// a common power-of-two denominator D the length is the integer
/// `ceil((E - S) / T)` of E = end*D, S = start*D, T = step*D. None when no
/// bound is symbolic, or the step is (the caller guards those to hints).
fn float_arange_length(it: &mut Interp, vals: &[&Value]) -> OpResult<Option<SymInt>> {
    let symbolic = vals
        .iter()
        .any(|v| matches!(v, Value::Int(i) if i.is_symbolic()));
    if !symbolic
        || !vals.iter().any(|v| matches!(v, Value::Float(_)))
        || vals.len() == 3 && !matches!(vals[2], Value::Float(_) | Value::Int(_))
    {
        return Ok(None);
    }
    if let Some(Value::Int(step)) = vals.get(2) {
        if step.is_symbolic() {
            return Ok(None);
        }
    }
    // Each float as (numerator, log2 of its denominator), exactly.
    fn dyadic(f: f64) -> Option<(i64, u32)> {
        (0..=20u32).find_map(|k| {
            let x = f * f64::from(1u32 << k);
            (x.fract() == 0.0 && x.abs() < 1e12).then_some((x as i64, k))
        })
    }
    let mut k = 0;
    for v in vals {
        if let Value::Float(f) = v {
            match dyadic(*f) {
                Some((_, kf)) => k = k.max(kf),
                None => return Ok(None),
            }
        }
    }
    let scale = 1i64 << k;
    let mut scaled = Vec::with_capacity(3);
    for v in vals {
        scaled.push(match v {
            Value::Float(f) => SymInt::int((*f * scale as f64) as i64),
            Value::Int(i) => it.m.sizes.mul(i, &SymInt::int(scale))?,
            Value::Bool(b) => SymInt::int(i64::from(*b) * scale),
            _ => return Ok(None),
        });
    }
    let (start, end, step) = match scaled.len() {
        1 => (SymInt::int(0), scaled[0].clone(), scale),
        2 => (scaled[0].clone(), scaled[1].clone(), scale),
        _ => (
            scaled[0].clone(),
            scaled[1].clone(),
            scaled[2].as_int().unwrap_or(0),
        ),
    };
    arange_length(it, &start, &end, step).map(Some)
}

/// `ceil((end - start) / step)` for integer bounds (possibly symbolic) and
/// a known step, with arange's checks.
fn arange_length(it: &mut Interp, start: &SymInt, end: &SymInt, step: i64) -> OpResult<SymInt> {
    if step == 0 {
        return Err(oe("other", "step must be nonzero"));
    }
    let s = &mut it.m.sizes;
    let span_len = if step > 0 {
        s.sub(end, start)?
    } else {
        s.sub(start, end)?
    };
    if s.lt_int(&span_len, 0) {
        return Err(oe(
            "other",
            "upper bound and larger bound inconsistent with step sign",
        ));
    }
    let n = s.add(&span_len, &SymInt::int(step.abs() - 1))?;
    s.floordiv(&n, &SymInt::int(step.abs()))
}

/// Shape and dtype of a `torch.tensor(...)` literal.
/// torch.tensor's data reads each symbolic size as a Python int
/// (`SymInt.__index__`), which guards it to its hint.
fn guard_data_sizes(it: &mut Interp, v: &Value) -> OpResult<()> {
    match v {
        Value::Int(i) if i.is_symbolic() => it.m.sizes.concrete(i, "torch.tensor").map(|_| ()),
        Value::Tuple(_) | Value::List(_) => {
            for item in v.sequence().unwrap_or_default() {
                guard_data_sizes(it, &item)?;
            }
            Ok(())
        }
        _ => Ok(()),
    }
}

fn literal_shape(it: &Interp, v: &Value) -> OpResult<(Dims, DType)> {
    match v {
        Value::Bool(_) => Ok((smallvec![], DType::Bool)),
        Value::Int(_) => Ok((smallvec![], DType::I64)),
        Value::Float(_) => Ok((smallvec![], DType::F32)),
        Value::Tensor(t) => {
            let t = it.m.t(*t);
            Ok((t.sizes().clone(), t.dtype))
        }
        Value::Tuple(_) | Value::List(_) => {
            let items = v.sequence().unwrap_or_default();
            let mut inner: Option<Dims> = None;
            let mut dtype: Option<DType> = None;
            for i in &items {
                let (s, d) = literal_shape(it, i)?;
                if inner.as_ref().is_some_and(|x| *x != s) {
                    return Err(oe(
                        "other",
                        "torch.tensor: expected a sequence of equal-length sequences",
                    ));
                }
                inner = Some(s);
                dtype = Some(match dtype {
                    None => d,
                    Some(p) => {
                        if p.category() >= d.category() {
                            p
                        } else {
                            d
                        }
                    }
                });
            }
            let mut sizes = smallvec![SymInt::int(items.len() as i64)];
            sizes.extend(inner.unwrap_or_default());
            Ok((sizes, dtype.unwrap_or(DType::F32)))
        }
        other => Err(oe(
            "other",
            format!(
                "torch.tensor: cannot make a tensor from a `{}`",
                other.type_name()
            ),
        )),
    }
}

// ---------------------------------------------------------------- functional ops

/// The metadata of an op's fresh results, or a value that replaces them
/// (a view, the input itself, a redirected op).
type FnOut = (Vec<Meta>, Option<Value>);

/// CPU autocast's `promote` ops (cat, stack, index_copy): `prioritize`
/// walks the floating operands from the autocast dtype, widening to float32
/// when one is float32 and skipping float64; any other mix (a float16
/// operand under bfloat16 autocast before any float32 one) fails.
/// Returns the dtype it casts the floating operands (other than float64)
/// to, when autocast is on and there are some.
fn autocast_promote(it: &Interp, tensors: &[TensorId]) -> OpResult<Option<DType>> {
    let Some(lower) = cpu_autocast_dtype(it) else {
        return Ok(None);
    };
    promote_dtypes(lower, tensors.iter().map(|&t| it.m.t(t).dtype))
}

/// `autocast_promote` for operands of these dtypes under CPU autocast to
/// `lower`.
pub(crate) fn promote_dtypes(
    lower: DType,
    dtypes: impl IntoIterator<Item = DType>,
) -> OpResult<Option<DType>> {
    let mut current = lower;
    let mut seen = false;
    for next in dtypes {
        if !next.is_floating() || next == DType::F64 {
            continue;
        }
        seen = true;
        if current == DType::F32 || next == DType::F32 {
            current = DType::F32;
        } else if !(current == lower && next == lower) {
            return Err(oe(
                "other",
                "Unexpected floating ScalarType in at::autocast::prioritize",
            )
            .help(
                "cast the operands to one dtype (or float32) before concatenating under autocast",
            ));
        }
    }
    Ok(seen.then_some(current))
}

/// A `promote` op's operand dtype after autocast's cast (`promoted`:
/// `autocast_promote`'s answer).
fn promoted_operand(promoted: Option<DType>, dtype: DType) -> DType {
    match promoted {
        Some(p) if dtype.is_floating() && dtype != DType::F64 => p,
        _ => dtype,
    }
}

fn autocast_dtype(it: &Interp, op: &str) -> Option<DType> {
    // CPU autocast's lower-precision ops (autocast_mode.cpp); mv and dot
    // are not among them, nor einsum: only the bmm it contracts with is
    // (a contraction by mul stays in the operands' dtype;
    // tests/oracle/autocast_einsum.tp).
    const LOWER: &[&str] = &[
        "matmul", "mm", "bmm", "addmm", "baddbmm", "linear", "conv2d",
    ];
    if !LOWER.contains(&op) {
        return None;
    }
    cpu_autocast_dtype(it)
}

/// Tensors passed where every overload takes a `Scalar` (`full`'s fill
/// value, `leaky_relu`'s slope, `addcmul`'s value, ...). Python's argument
/// parser takes only a 0-dim tensor that does not require grad, and reads it
/// with `.item()`: the analysis's `_local_scalar_dense` fails on a fake
/// tensor unless it is a constant (a `torch.tensor` literal).
fn tensor_scalars(it: &Interp, a: &Args) -> OpResult<()> {
    for (k, (p, v)) in a.op.params.iter().zip(a.v.iter()).enumerate() {
        let Value::Tensor(t) = v else { continue };
        if !a.op.scalar_param(p) {
            continue;
        }
        let tt = it.m.t(*t);
        if !tt.sizes().is_empty() || it.m.requires_grad(*t) {
            return Err(oe(
                "other",
                format!(
                    "{}(): argument '{}' (position {}) must be Number, not Tensor",
                    a.op.name,
                    p.name,
                    k + 1
                ),
            ));
        }
        // (FakeTensor propagates a constant through in-place ops with
        // numbers, `val.add_(2)`.)
        let constant = tt.origin_op.as_str() == "tensor";
        if it.m.mode == Mode::Analysis && !constant {
            return Err(oe(
                "data-dependent",
                format!("{}(): a tensor passed as the number `{}` is read with .item() (aten._local_scalar_dense), which the analysis cannot do on a fake tensor", a.op.name, p.name),
            )
            .help("pass a Python number, or a `torch.tensor(...)` literal"));
        }
    }
    Ok(())
}

/// `narrow.Tensor`'s start: a 0-dim integral tensor whose value `item()`
/// reads (in the analysis, a FakeTensor constant's).
fn narrow_tensor_start(it: &Interp, s: TensorId) -> OpResult<SymInt> {
    let st = it.m.t(s);
    if !st.sizes().is_empty() || !st.dtype.is_integral() || st.dtype == DType::Bool {
        return Err(oe("other", "start must be an 0-dim integral Tensor."));
    }
    match it.m.constant_value(s) {
        Some(v) => Ok(SymInt::int(v)),
        None => Err(oe(
            "data-dependent",
            "narrow()'s start tensor holds data tpi does not know",
        )),
    }
}

/// CPU autocast runs a lower-precision op on copies of its floating
/// operands (other than float64) in its dtype (`cached_cast`): each is a
/// `_to_copy` that autograd records, so the op saves and views the copies,
/// and a later in-place write to an operand does not touch what it saved.
fn autocast_casts(it: &mut Interp, a: &mut Args, span: Span) -> R<()> {
    let Some(lower) = autocast_dtype(it, a.op.rule) else {
        return Ok(());
    };
    for k in 0..a.v.len() {
        let v = std::mem::replace(&mut a.v[k], Value::None);
        a.v[k] = autocast_cast(it, v, lower, span)?;
    }
    Ok(())
}

/// `autocast_casts` for one argument (a tensor, or a list of them).
fn autocast_cast(it: &mut Interp, v: Value, lower: DType, span: Span) -> R<Value> {
    match v {
        Value::Tensor(t) => {
            let dtype = it.m.t(t).dtype;
            if dtype.is_floating() && dtype != DType::F64 && dtype != lower {
                it.call_op(
                    "to",
                    smallvec![Value::Tensor(t), Value::Dtype(lower)],
                    Vec::new(),
                    span,
                )
            } else {
                Ok(Value::Tensor(t))
            }
        }
        Value::Tuple(items) => {
            let cast: R<Vec<Value>> = items
                .iter()
                .map(|v| autocast_cast(it, v.clone(), lower, span))
                .collect();
            Ok(Value::Tuple(Rc::new(cast?)))
        }
        Value::List(items) => {
            let items = items.borrow().clone();
            let cast: R<Vec<Value>> = items
                .into_iter()
                .map(|v| autocast_cast(it, v, lower, span))
                .collect();
            Ok(Value::List(Rc::new(std::cell::RefCell::new(cast?))))
        }
        other => Ok(other),
    }
}

/// The dtype of CPU autocast, when it is on.
fn cpu_autocast_dtype(it: &Interp) -> Option<DType> {
    it.m.cpu_autocast_dtype()
}

/// Reductions over a dim of a tensor of more than 64 dims fail: eager's
/// `dim_list_to_bitset`, and the analysis's `_reduction` reference for any
/// dims (`applies`: whether this op and mode check).
fn reduction_rank_limit(it: &Interp, op: &OpDef, t: &Tensor, applies: bool) -> OpResult<()> {
    let nd = t.sizes().len();
    if !applies || nd <= 64 {
        return Ok(());
    }
    Err(match it.m.mode {
        Mode::Analysis => oe(
            "other",
            format!("Received a tensor with {nd} dimensions, but only tensors with up to 64 dims are supported!"),
        ),
        Mode::Eager => oe("other", "only tensors with up to 64 dims are supported"),
    }
    .help(format!("`{}` reduces tensors of at most 64 dims: reshape it first", op.name)))
}

/// amax, amin, argmax, argmin, max and min have no identity: reducing a
/// zero-size dim fails, and so does reducing every dim of an empty tensor
/// without naming them (`zero_numel_check_dims`; the analysis's
/// `_reduction` reference and argmax meta). `in_analysis`: whether the
/// analysis checks too (max/min's meta does not).
fn no_identity_check(
    it: &mut Interp,
    op: &OpDef,
    t: &Tensor,
    dims: Option<&[i64]>,
    in_analysis: bool,
) -> OpResult<()> {
    if it.m.mode == Mode::Analysis && !in_analysis {
        return Ok(());
    }
    let nd = t.sizes().len();
    let zero = |d: usize| t.sizes()[d].as_int() == Some(0);
    let name = op.name;
    match dims.filter(|d| !d.is_empty()) {
        Some(ds) => {
            for &d in ds {
                let w = shape::wrap_dim(d, nd)?;
                if nd > 0 && zero(w) {
                    let msg = match (it.m.mode, name) {
                        (Mode::Analysis, "amax" | "amin") => {
                            "reducing over zero-size dimension for reduction operation without identity".to_string()
                        }
                        (Mode::Analysis, _) => format!("argmax: Expected reduction dim {w} to have non-zero size."),
                        (Mode::Eager, _) => format!("{name}(): Expected reduction dim {w} to have non-zero size."),
                    };
                    return Err(oe("other", msg).help(format!(
                        "`{name}` has no value for an empty slice: check the size of dim {w} first"
                    )));
                }
            }
        }
        None => {
            if (0..nd).any(zero) {
                let msg = match (it.m.mode, name) {
                    (Mode::Analysis, "amax" | "amin") => {
                        "reducing over zero-size dimension for reduction operation without identity".to_string()
                    }
                    (Mode::Analysis, _) => "argmax: Expected reduction dim to be specified for input.numel() == 0.".to_string(),
                    (Mode::Eager, "argmax" | "argmin") => {
                        format!("{name}(): Expected reduction dim to be specified for input.numel() == 0.")
                    }
                    (Mode::Eager, _) => format!(
                        "{name}(): Expected reduction dim to be specified for input.numel() == 0. Specify the reduction dim with the 'dim' argument."
                    ),
                };
                return Err(
                    oe("other", msg).help(format!("`{name}` has no value for an empty tensor"))
                );
            }
        }
    }
    Ok(())
}

/// lerp does not promote: `end`, and a `weight` tensor of one or more
/// dims, must have `self`'s dtype (the lerp meta, in both runs; only the
/// messages differ).
fn lerp_dtypes(it: &Interp, a: &Args) -> OpResult<()> {
    let Value::Tensor(me) = a.get("self") else {
        return Ok(());
    };
    let dtype = it.m.t(*me).dtype;
    for name in ["end", "weight"] {
        let Value::Tensor(o) = a.get(name) else {
            continue;
        };
        let o = it.m.t(*o);
        if o.dtype == dtype || (name == "weight" && o.sizes().is_empty()) {
            continue;
        }
        let msg = match it.m.mode {
            Mode::Analysis => format!(
                "expected dtype torch.{} for `{name}`, but got dtype torch.{}",
                dtype.name(),
                o.dtype.name()
            ),
            Mode::Eager => format!(
                "expected dtype {} for `{name}` but got dtype {}",
                cpp_type_name(dtype),
                cpp_type_name(o.dtype)
            ),
        };
        return Err(
            oe("other", msg).help(format!("convert `{name}` first: `{name}.to(self.dtype)`"))
        );
    }
    Ok(())
}

/// add/sub's `alpha` against the result dtype. Eager's `alpha_check`
/// (BinaryOps.h): a bool alpha only for a bool result, a floating alpha
/// not for an integral (bool included) one. The analysis's reference
/// refuses a floating alpha for an integral non-bool result, except
/// `sub`'s alpha of 1.0, which never reaches it.
fn alpha_check(it: &Interp, op: &str, alpha: &Value, dtype: DType) -> OpResult<()> {
    let help = "pass an alpha of the result's kind (an int for integer tensors)";
    match (it.m.mode, alpha) {
        (Mode::Eager, Value::Bool(_)) if dtype != DType::Bool => {
            Err(oe("other", "Boolean alpha only supported for Boolean results.").help(help))
        }
        (Mode::Eager, Value::Float(_)) if dtype.is_integral() => Err(oe(
            "other",
            "For integral input tensors, argument alpha must not be a floating point number.",
        )
        .help(help)),
        (Mode::Analysis, Value::Float(f))
            if dtype.is_integral()
                && dtype != DType::Bool
                && !(*f == 1.0 && op.trim_end_matches('_') != "add" && op != "rsub") =>
        {
            Err(oe(
                "other",
                "alpha argument of type <class 'float'> cannot be safely cast to type <class 'int'>!",
            )
            .help(help))
        }
        _ => Ok(()),
    }
}

/// torch._refs' reductions keep their dims with `broadcast_in_dim` of the
/// reduced result, whose meta asks whether each kept size is 1: a symbolic
/// one whose hint is 1 is specialised to it (guard_size_oblivious).
fn keepdim_broadcast_guards(it: &mut Interp, input: &[SymInt], output: &[SymInt]) {
    for (i, o) in input.iter().zip(output) {
        if i == o && i.as_int().is_none() && it.m.sizes.env.hint(i) == Some(1) {
            it.m.sizes.eq_int(i, 1);
        }
    }
}

fn reduce_dims(
    _it: &mut Interp,
    t: &Tensor,
    dims: Option<Vec<i64>>,
    keepdim: bool,
) -> OpResult<Dims> {
    let nd = t.sizes().len();
    let dims: Vec<usize> = match dims {
        None => (0..nd).collect(),
        Some(ds) if ds.is_empty() => (0..nd).collect(),
        Some(ds) => {
            let mut out = Vec::new();
            for d in ds {
                let w = shape::wrap_dim(d, nd)?;
                if out.contains(&w) {
                    return Err(oe(
                        "other",
                        format!("dim {w} appears multiple times in the list of dims"),
                    ));
                }
                out.push(w);
            }
            out
        }
    };
    let mut sizes = Dims::new();
    for d in 0..nd {
        if dims.contains(&d) {
            if keepdim {
                sizes.push(SymInt::int(1));
            }
        } else {
            sizes.push(t.sizes()[d].clone());
        }
    }
    Ok(sizes)
}

fn functional(it: &mut Interp, op: &'static OpDef, a: &Args, span: Span) -> OpResult<FnOut> {
    let rule = op.rule;
    let contiguous =
        |it: &mut Interp, sizes: Dims, dtype: DType| it.m.contiguous_meta(sizes, dtype);
    // Pointwise families.
    let pw_rule: Option<(&str, &[&str])> = match rule {
        "binary" => Some(("", &["self", "other"])),
        "binary_float" => Some(("float", &["self", "other"])),
        "div" => Some((
            if matches!(a.get("rounding_mode"), Value::Str(_)) {
                ""
            } else {
                "float"
            },
            &["self", "other"],
        )),
        "binary_int" => Some(("int", &["self", "other"])),
        "compare" => Some(("bool", &["self", "other"])),
        "unary" => Some(("", &["self"])),
        // The analysis's meta kernels of silu (`empty_like(self)`), gelu,
        // softplus, mish and hardswish (refs without type promotion) keep
        // an integer or bool input's dtype; eager's kernels refuse it.
        "unary_float"
            if it.m.mode == Mode::Analysis
                && matches!(
                    op.name.trim_end_matches('_'),
                    "silu" | "gelu" | "softplus" | "mish" | "hardswish"
                ) =>
        {
            Some(("", &["self"]))
        }
        "unary_float" => Some(("float", &["self"])),
        "unary_bool" => Some(("bool", &["self"])),
        "unary_int" => Some(("int", &["self"])),
        "clamp" => Some(("", &["self", "min", "max"])),
        "lerp" => Some(("", &["self", "end", "weight"])),
        "where" => Some(("", &["self", "other"])),
        "addc" => Some(("", &["self", "tensor1", "tensor2"])),
        _ => None,
    };
    if let Some((dt, names)) = pw_rule {
        let names: &[&str] = if op.name.starts_with("pow") {
            &["self", "exponent"]
        } else if rule == "lerp" && !matches!(a.get("weight"), Value::Tensor(_)) {
            // lerp.Scalar's result type comes from start and end only.
            &["self", "end"]
        } else {
            names
        };
        if rule == "clamp"
            && matches!(a.get("min"), Value::None)
            && matches!(a.get("max"), Value::None)
            && op.name.starts_with("clamp")
            && !op.name.starts_with("clamp_m")
        {
            return Err(oe(
                "other",
                "torch.clamp: At least one of 'min' or 'max' must not be None",
            ));
        }
        // clamp has a Tensor? overload and a Scalar? one: a tensor bound and
        // a number bound match neither.
        if rule == "clamp" && !op.name.starts_with("clamp_m") {
            let kind = |v: &Value| match v {
                Value::Tensor(_) => Some("Tensor"),
                Value::Int(_) => Some("int"),
                Value::Float(_) => Some("float"),
                _ => None,
            };
            // Number bounds are converted to self's dtype (eager).
            if let Value::Tensor(me) = a.get("self") {
                let dtype = it.m.t(*me).dtype;
                eager_scalar_fits(it, dtype, a.get("min"))?;
                eager_scalar_fits(it, dtype, a.get("max"))?;
            }
            if let (Some(lo), Some(hi)) = (kind(a.get("min")), kind(a.get("max"))) {
                if (lo == "Tensor") != (hi == "Tensor") {
                    return Err(oe(
                        "other",
                        format!("{}() received an invalid combination of arguments - got (Tensor, {lo}, {hi})", op.name),
                    )
                    .help("give both bounds as tensors or both as numbers"));
                }
            }
        }
        let cond;
        let mut vals: smallvec::SmallVec<[&Value; 4]> = names.iter().map(|n| a.get(n)).collect();
        // Python's argument parser: a `Tensor other` takes no number
        // (maximum, minimum, atan2 have no Scalar overload).
        for (name, v) in names.iter().zip(&vals) {
            let given = match v {
                Value::Int(_) => "int",
                Value::Float(_) => "float",
                Value::Bool(_) => "bool",
                _ => continue,
            };
            let param = op.params.iter().enumerate().find(|(_, p)| p.name == *name);
            if let Some((k, p)) = param.filter(|(_, p)| p.ty == crate::ops::ParamType::Tensor) {
                return Err(oe(
                    "other",
                    format!(
                        "{}(): argument '{}' (position {}) must be Tensor, not {given}",
                        op.name,
                        p.name,
                        k + 1
                    ),
                ));
            }
        }
        if rule == "where" {
            cond = a.get("condition").clone();
            match &cond {
                Value::Tensor(c) if it.m.t(*c).dtype == DType::Bool => {}
                // Eager takes a uint8 condition (deprecated, with a warning).
                Value::Tensor(c) if it.m.t(*c).dtype == DType::U8 && it.m.mode == Mode::Eager => {}
                Value::Tensor(c) => {
                    let dtype = it.m.t(*c).dtype;
                    return Err(oe(
                        "other",
                        match it.m.mode {
                            Mode::Analysis => format!("expected predicate to be bool, got torch.{}", dtype.name()),
                            Mode::Eager => format!("where expected condition to be a boolean tensor, but got a tensor with dtype {}", torch_type_name(dtype)),
                        },
                    ));
                }
                _ => return Err(oe("arguments", "where(): condition must be a tensor")),
            }
            vals.insert(0, &cond);
        }
        // Promotion ignores the boolean condition of `where`.
        let mut p = pointwise(it, &vals, dt)?;
        // FakeTensor's fast path makes its own layout (`fake_fast_binary`).
        let mut fast_layout = None;
        // FakeTensor's fast path for add/sub/mul/div.Tensor folds the
        // operands' shapes with its own `infer_size`, which takes the other
        // operand's size wherever the running one is 1 at its hint: a
        // size like `n//4` (hint 1, a guard that solves nothing) against a
        // scalar or a missing dim becomes the literal 1.
        if it.m.mode == Mode::Analysis
            && it.m.sizes.env.num_symbols() > 0
            // (An in-place op's functional form is the op.)
            && (matches!(
                op.name.trim_end_matches('_'),
                "add" | "sub" | "subtract" | "mul" | "multiply" | "true_divide"
            ) || (matches!(op.name.trim_end_matches('_'), "div" | "divide")
                && matches!(a.get("rounding_mode"), Value::None)))
            && fake_fast_binary(it, &p).is_some()
        {
            p.sizes = fast_binary_shape(it, &vals);
            fast_layout = fake_fast_binary(it, &p);
        }
        if p.dtype == DType::F32
            && it.m.mode == Mode::Analysis
            && p.tensors.iter().all(|&t| it.m.t(t).dtype.is_integral())
            && dt == "float"
            && matches!(
                op.name.trim_end_matches('_'),
                "div" | "divide" | "true_divide"
            )
            && fake_fast_binary(it, &p).is_some()
        {
            // FakeTensor's fast path for div.Tensor promotes as add does
            // (2.7.1 registers it without INT_TO_FLOAT): integer operands
            // keep their dtype (tests/oracle/symbolic_int_division.tp).
            let common = pointwise(it, &vals, "")?.dtype;
            if !common.is_floating() && !common.is_complex() {
                p.dtype = common;
            }
        }
        if rule == "where" {
            let v2: Vec<&Value> = vals[1..].to_vec();
            p.dtype = pointwise(it, &v2, dt)?.dtype;
        }
        if matches!(op.name, "abs" | "absolute") {
            p.dtype = p.dtype.to_real();
        }
        if matches!(op.name, "abs_" | "absolute_") && p.dtype.is_complex() {
            // Eager's abs_ refuses; the analysis writes abs's real result
            // back into the complex tensor, which its out check refuses.
            return Err(oe(
                "other",
                match it.m.mode {
                    Mode::Eager => "In-place abs is not supported for complex tensors.".to_string(),
                    Mode::Analysis => format!(
                        "Expected out tensor to have dtype torch.{} but got torch.{}",
                        p.dtype.to_real().name(),
                        p.dtype.name()
                    ),
                },
            )
            .help("use the out-of-place `abs()`"));
        }
        // square is pow(self, 2): a bool tensor with an int gives int64.
        if matches!(op.name, "square") && p.dtype == DType::Bool {
            p.dtype = DType::I64;
        }
        if rule == "unary_float" && matches!(op.name, "relu" | "hardtanh") {
            p.dtype = it.m.t(a.tensor("self")?).dtype;
        }
        if matches!(op.name, "sub" | "subtract" | "rsub" | "sub_" | "subtract_") {
            // sub_check (BinaryOps.h); the analysis's decomposition refuses
            // two bool tensors only, and with symbolic sizes FakeTensor
            // runs torch._refs' sub, which refuses neither
            // (tests/oracle/bool_sub_symbolic.tp).
            let is_bool =
                |v: &Value| matches!(v, Value::Tensor(t) if it.m.t(*t).dtype == DType::Bool);
            let (x, y) = (is_bool(a.get("self")), is_bool(a.get("other")));
            let operands = ["self", "other"].map(|k| match a.get(k) {
                Value::Tensor(t) => Some(*t),
                _ => None,
            });
            let symbolic = it.m.mode == Mode::Analysis
                && it.m.any_symbolic_sizes(operands.into_iter().flatten());
            if x && y && !symbolic {
                return Err(oe("other", SUBTRACT_TWO_BOOLS));
            }
            if (x || y) && it.m.mode == Mode::Eager {
                return Err(oe("other", "Subtraction, the `-` operator, with a bool tensor is not supported. If you are trying to invert a mask, use the `~` or `logical_not()` operator instead."));
            }
        }
        if rule == "lerp" {
            lerp_dtypes(it, a)?;
        }
        if rule == "addc" && op.name.starts_with("addcdiv") {
            // (torch._refs' is_integer_dtype leaves bool out; eager's
            // isIntegralType(includeBool=true) does not.)
            let eager = it.m.mode == Mode::Eager;
            let integral = |n: &str| {
                matches!(a.get(n), Value::Tensor(t)
                    if it.m.t(*t).dtype.is_integral() && (eager || it.m.t(*t).dtype != DType::Bool))
            };
            if integral("tensor1") && integral("tensor2") {
                return Err(oe("other", "Integer division with addcdiv is no longer supported, and in a future release addcdiv will perform a true division of tensor1 and tensor2. The historic addcdiv behavior can be implemented as (input + value * torch.trunc(tensor1 / tensor2)).to(input.dtype) for integer inputs and as (input + value * tensor1 / tensor2) for float inputs. The future addcdiv behavior is just the latter implementation: (input + value * tensor1 / tensor2), for all dtypes.")
                    .help("divide floating tensors: `t.addcdiv_(t1.float(), t2.float())`"));
            }
        }
        if rule == "binary"
            && matches!(
                op.name.trim_end_matches('_'),
                "add" | "sub" | "subtract" | "rsub"
            )
        {
            alpha_check(it, op.name, a.get("alpha"), p.dtype)?;
        }
        // Floating-point operands pass every kernel but the bitwise ones.
        let all_floating = p.tensors.iter().all(|&t| it.m.t(t).dtype.is_floating());
        if !(all_floating && p.dtype.is_floating() && dt != "int") {
            if let Some(e) = kernel_dtype_error(it, op.name, a, p.dtype) {
                return Err(e);
            }
        }
        if it.m.mode == Mode::Analysis && it.m.sizes.env.num_symbols() > 0 {
            for &t in &p.tensors {
                it.m.specialise_unit_sizes(t);
            }
        }
        if matches!(op.name, "neg" | "neg_" | "negative" | "negative_")
            && it.m.t(a.tensor("self")?).dtype == DType::Bool
        {
            return Err(oe("other", NEGATE_BOOL));
        }
        if p.tensors.is_empty()
            && matches!(
                op.name,
                "add"
                    | "sub"
                    | "subtract"
                    | "mul"
                    | "multiply"
                    | "div"
                    | "divide"
                    | "true_divide"
                    | "floor_divide"
            )
        {
            // should_allow_numbers_as_tensors (python_arg_parser.cpp): these
            // ops take Python numbers as wrapped-number 0-dim tensors.
            let meta = contiguous(it, Dims::new(), p.dtype)?;
            return Ok((vec![meta], None));
        }
        if p.tensors.is_empty() {
            return Err(oe(
                "arguments",
                format!("{}() needs at least one tensor argument", op.name),
            ));
        }
        if it.m.mode == Mode::Analysis
            && fast_layout.is_none()
            && p.tensors.len() == 2
            // (An in-place op's functional form is the op.)
            && matches!(
                op.name,
                "add" | "sub" | "subtract" | "add_" | "sub_" | "subtract_"
            )
            && matches!(a.get("other"), Value::Tensor(_))
        {
            // (An alpha of 1 is the default, which __torch_dispatch__ does
            // not pass on.)
            let alpha = match a.get("alpha") {
                Value::Int(i) => i.as_int().map(|i| i as f64),
                Value::Float(f) => Some(*f),
                Value::Bool(b) => Some(f64::from(u8::from(*b))),
                _ => None,
            };
            if alpha.is_some_and(|x| x != 1.0) {
                p.scaled = Some(p.tensors[1]);
            }
        }
        // The analysis's floor division, laid out op by op when its
        // operands need no conversion (`refs_floor_divide_strides`).
        let floor = it.m.mode == Mode::Analysis
            && fast_layout.is_none()
            && match op.name.trim_end_matches('_') {
                "floor_divide" => true,
                "div" | "divide" => {
                    matches!(a.get("rounding_mode"), Value::Str(m) if m.as_ref() == "floor")
                }
                _ => false,
            }
            && p.dtype == p.common
            && p.tensors.iter().all(|&t| it.m.t(t).dtype == p.common);
        let common = p.common;
        if it.m.mode == Mode::Analysis
            && fast_layout.is_none()
            && matches!(rule, "unary_float" | "unary_bool" | "compare")
        {
            p.decomposed = Decomposed::of(op.name, a, common);
        }
        let mut meta = pointwise_meta(it, op.name, p)?;
        if let Some(format) = fast_layout {
            meta.strides = shape::format_strides(&meta.sizes, format, &mut it.m.sizes)?;
        } else if floor {
            let operand = |v: &Value| match v {
                Value::Tensor(t) => Some(*t),
                _ => None,
            };
            let (x, y) = (operand(a.get("self")), operand(a.get("other")));
            if let Some(strides) = refs_floor_divide_strides(&mut it.m, x, y, common)? {
                meta.strides = strides;
            }
        } else if it.m.mode == Mode::Eager
            && op.name == "pow"
            && !matches!(a.get("self"), Value::Tensor(_))
        {
            // Eager's pow.Scalar (a number to a tensor power, `2 ** x`)
            // declares its output with no strides: contiguous, whatever
            // the exponent's layout.
            meta.strides = shape::contiguous_strides(&meta.sizes, &mut it.m.sizes)?;
        }
        return Ok((vec![meta], None));
    }
    let me = match a.get("self") {
        Value::Tensor(t) => Some(*t),
        _ => None,
    };
    let t = me.map(|m| it.m.t(m).clone());
    fn need<'t>(t: &'t Option<Tensor>, op: &OpDef) -> OpResult<&'t Tensor> {
        t.as_ref()
            .ok_or_else(|| oe("arguments", format!("{}(): expected a tensor", op.name)))
    }
    match rule {
        "masked_fill" => {
            let t = need(&t, op)?;
            let mask = a.tensor("mask")?;
            // (Eager's out-of-place op expands self and mask first,
            // expand_outplace, then runs masked_fill_.)
            let sizes = masked_fill_checks(it, t.dtype, t.sizes(), mask, a.get("value"), true, |_| {
                "masked_fill only supports boolean masks".to_string()
            })?;
            // Eager clones the expanded self with MemoryFormat::Contiguous;
            // the analysis runs torch._refs.masked_fill,
            // `where(mask, value, self).contiguous()`, which keeps where's
            // strides when they count as contiguous (size-1 dims).
            let mut meta = contiguous(it, sizes, t.dtype)?;
            if it.m.mode == Mode::Analysis {
                // where(mask, value, self): a 0-d tensor value is an operand
                // (expanded), a number is not.
                let me = me.unwrap_or(mask);
                let strides = match a.get("value") {
                    Value::Tensor(v) => iter_strides(it, &meta.sizes, &[mask, *v, me])?,
                    _ => iter_strides(it, &meta.sizes, &[mask, me])?,
                };
                if shape::is_contiguous(&meta.sizes, &strides, &mut it.m.sizes) {
                    meta.strides = strides;
                }
            }
            Ok((vec![meta], None))
        }
        "sum" | "mean" | "amax" | "all" | "norm" => {
            let t = need(&t, op)?;
            let dims = if op.params.iter().any(|p| p.name == "dim") { a.opt_dims(it, "dim")? } else { None };
            let keepdim = a.bool("keepdim")?;
            let some_dims = dims.as_ref().is_some_and(|d| !d.is_empty());
            reduction_rank_limit(it, op, t, it.m.mode == Mode::Analysis || some_dims)?;
            if rule == "amax" {
                no_identity_check(it, op, t, dims.as_deref(), true)?;
            }
            if matches!(op.name, "std" | "var") && it.m.mode == Mode::Analysis {
                // torch._prims_common.set_correction (eager accepts it).
                if let Value::Int(c) = a.get("correction") {
                    if c.as_int().is_some_and(|c| c < 0) {
                        return Err(oe("other", "correction argument should be non-negative"));
                    }
                }
            }
            // all/any with an empty dim list reduce nothing (make_dim_mask's
            // allow_empty_dims); the other reductions reduce every dim.
            let sizes = if rule == "all" && dims.as_ref().is_some_and(|d| d.is_empty()) {
                t.sizes().clone()
            } else {
                reduce_dims(it, t, dims, keepdim)?
            };
            if keepdim
                && it.m.mode == Mode::Analysis
                && matches!(op.name, "sum" | "mean" | "amax" | "amin" | "prod")
            {
                keepdim_broadcast_guards(it, t.sizes(), &sizes);
            }
            let dtype_arg = if op.params.iter().any(|p| p.name == "dtype") { a.dtype("dtype")? } else { None };
            let dtype = match (rule, dtype_arg) {
                // mean's output dtype must be floating or complex, whether
                // inferred or asked for (torch._refs.mean, ReduceOps.cpp).
                (_, Some(d)) if op.name == "mean" && d.is_integral() => {
                    return Err(oe("other", format!("mean(): could not infer output dtype. Optional dtype must be either a floating point or complex dtype. Got: {}", torch_type_name(d))));
                }
                (_, Some(d)) => d,
                ("sum", None) => {
                    if t.dtype.is_integral() {
                        DType::I64
                    } else if op.name == "prod" && matches!(t.dtype, DType::F16 | DType::BF16) && cpu_autocast_dtype(it).is_some() {
                        // CPU autocast runs prod in float32 (its fp32 list).
                        DType::F32
                    } else {
                        t.dtype
                    }
                }
                ("mean", None) => {
                    if t.dtype.is_integral() {
                        if matches!(op.name, "logsumexp") {
                            DType::F32
                        } else if matches!(op.name, "std" | "var") {
                            // The analysis's ref (var_mean's output dtype
                            // is the input's) keeps the integer or bool
                            // dtype; eager's kernel refuses (std_var_out).
                            if it.m.mode == Mode::Eager {
                                return Err(oe("other", "std and var only support floating point and complex dtypes"));
                            }
                            t.dtype
                        } else {
                            return Err(oe("other", format!("{}(): could not infer output dtype. Input dtype must be either a floating point or complex dtype. Got: {}", op.name, torch_type_name(t.dtype))));
                        }
                    } else if matches!(op.name, "std" | "var") {
                        t.dtype.to_real()
                    } else {
                        t.dtype
                    }
                }
                ("norm", None) => {
                    if t.dtype.is_integral() {
                        return Err(oe("other", format!("linalg.vector_norm: Expected a floating point or complex tensor as input. Got {}", torch_type_name(t.dtype))));
                    }
                    t.dtype.to_real()
                }
                ("all", None) => {
                    if t.dtype == DType::U8 {
                        DType::U8
                    } else {
                        DType::Bool
                    }
                }
                _ => t.dtype,
            };
            // Eager's nansum kernel is not built for complex results.
            if it.m.mode == Mode::Eager && op.name == "nansum" && dtype.is_complex() {
                return Err(not_implemented_for("nansum_cpu", dtype));
            }
            let meta = contiguous(it, sizes, dtype)?;
            Ok((vec![meta], None))
        }
        "max" => {
            let t = need(&t, op)?;
            match a.get("dim") {
                Value::None => {
                    no_identity_check(it, op, t, None, false)?;
                    let meta = contiguous(it, smallvec![], t.dtype)?;
                    Ok((vec![meta], None))
                }
                Value::Tensor(o) => {
                    let name = if op.name == "max" { "maximum" } else { "minimum" };
                    let r = it.call_op(name, smallvec::smallvec![Value::Tensor(me.unwrap_or(0)), Value::Tensor(*o)], Vec::new(), span).map_err(|d| OpError::new(d.code, d.message))?;
                    Ok((vec![], Some(r)))
                }
                _ => {
                    let d = a.int(it, "dim")?;
                    let keepdim = a.bool("keepdim")?;
                    reduction_rank_limit(it, op, t, it.m.mode == Mode::Eager)?;
                    no_identity_check(it, op, t, Some(&[d]), false)?;
                    let sizes = reduce_dims(it, t, Some(vec![d]), keepdim)?;
                    let values = contiguous(it, sizes.clone(), t.dtype)?;
                    let indices = contiguous(it, sizes, DType::I64)?;
                    Ok((vec![values, indices], None))
                }
            }
        }
        "argmax" => {
            let t = need(&t, op)?;
            if t.dtype == DType::Bool && it.m.mode == Mode::Eager && argmax_runs_kernel(it, t, a) {
                return Err(not_implemented_for(&format!("{}_cpu", op.name), DType::Bool));
            }
            let dims = a.opt_int(it, "dim")?.map(|d| vec![d]);
            reduction_rank_limit(it, op, t, dims.is_some() && it.m.mode == Mode::Eager)?;
            no_identity_check(it, op, t, dims.as_deref(), true)?;
            let keepdim = a.bool("keepdim")?;
            let sizes = if dims.is_none() && !keepdim { smallvec![] } else { reduce_dims(it, t, dims, keepdim)? };
            let meta = contiguous(it, sizes, DType::I64)?;
            Ok((vec![meta], None))
        }
        "cumsum" => {
            let t = need(&t, op)?;
            shape::wrap_dim(a.int(it, "dim")?, t.sizes().len())?;
            let dtype = a.dtype("dtype")?.unwrap_or(if t.dtype.is_integral() { DType::I64 } else { t.dtype });
            if dtype == DType::Bool && it.m.mode == Mode::Eager {
                // Eager's scan kernels are not built for bool (a bool
                // input is summed as int64 unless asked otherwise).
                return Err(not_implemented_for(&format!("{}_out_cpu", op.name), dtype));
            }
            let meta = contiguous(it, t.sizes().clone(), dtype)?;
            Ok((vec![meta], None))
        }
        "softmax" => {
            let t = need(&t, op)?;
            let d = match a.opt_int(it, "dim")? {
                Some(d) => d,
                None => {
                    let nd = t.sizes().len() as i64;
                    if nd == 0 || nd == 1 || nd == 3 {
                        0
                    } else {
                        1
                    }
                }
            };
            // The analysis's softmax decomposition does not check the dim;
            // log_softmax's does, and eager always does.
            if it.m.mode == Mode::Eager || op.name != "softmax" {
                shape::wrap_dim(d, t.sizes().len())?;
            }
            let dtype = a.dtype("dtype")?.unwrap_or(t.dtype);
            if dtype.is_integral() {
                // Eager's kernels refuse integers; the analysis's
                // decompositions run, log_softmax's subtracting two bools.
                if it.m.mode == Mode::Eager {
                    return Err(not_implemented_for(&format!("{}_lastdim_kernel_impl", op.name), dtype));
                }
                if op.name == "log_softmax" && dtype == DType::Bool {
                    return Err(oe("other", SUBTRACT_TWO_BOOLS));
                }
            }
            // Both decompositions (_softmax, _log_softmax) start with
            // x.contiguous(): a channels_last input gives a contiguous result
            // (tests/oracle/softmax_layouts.tp).
            // (softmax's result is contiguous even then.)
            let strides = if op.name == "log_softmax" && it.m.mode == Mode::Analysis {
                let dim = shape::wrap_dim(d, t.sizes().len())?;
                match me {
                    Some(x) if !t.sizes().is_empty() => normalized_layout(it, x, &[dim], &[], false)?,
                    _ => shape::contiguous_strides(t.sizes(), &mut it.m.sizes)?,
                }
            } else if op.name == "log_softmax" {
                after_contiguous_strides(it, me, t.sizes())?
            } else {
                shape::contiguous_strides(t.sizes(), &mut it.m.sizes)?
            };
            Ok((vec![Meta { sizes: t.sizes().clone(), strides, offset: SymInt::int(0), dtype }], None))
        }
        "sort" | "argsort" => {
            let t = need(&t, op)?;
            // sort's meta does not check the dim: only eager rejects a bad one.
            let d = a.int(it, "dim")?;
            if it.m.mode == Mode::Eager {
                shape::wrap_dim(d, t.sizes().len())?;
            }
            // empty_like(self): a dense input's strides, else dense ones in
            // its stride order (meta_sort; TORCH_META_FUNC2(sort, stable)).
            let strides = shape::like_strides(t.sizes(), t.strides(), MemoryFormat::Preserve, &mut it.m.sizes)?;
            let like = |dtype| Meta { sizes: t.sizes().clone(), strides: strides.clone(), offset: SymInt::int(0), dtype };
            let (values, indices) = (like(t.dtype), like(DType::I64));
            if rule == "argsort" {
                return Ok((vec![indices], None));
            }
            Ok((vec![values, indices], None))
        }
        "topk" => {
            let t = need(&t, op)?;
            if t.dtype == DType::Bool && it.m.mode == Mode::Eager {
                return Err(not_implemented_for("topk_cpu", DType::Bool));
            }
            let nd = t.sizes().len();
            let d = shape::wrap_dim(a.int(it, "dim")?, nd)?;
            let k = a.sym("k")?;
            let size = if nd == 0 { SymInt::int(1) } else { t.sizes()[d].clone() };
            if it.m.sizes.lt_int(&k, 0) || it.m.sizes.lt(&size, &k) {
                return Err(oe("index-out-of-range", "selected index k out of range"));
            }
            let mut sizes = t.sizes().clone();
            if nd > 0 {
                sizes[d] = k;
            }
            let values = contiguous(it, sizes.clone(), t.dtype)?;
            let indices = contiguous(it, sizes, DType::I64)?;
            Ok((vec![values, indices], None))
        }
        "matmul" | "mm" | "bmm" | "mv" | "dot" | "outer" => {
            // (Taken here, so that no later matmul sees them.)
            let unsynced = std::mem::take(&mut it.m.unsynced_operands);
            if rule == "matmul" && it.m.mode == Mode::Analysis && !it.m.python_geom.is_empty() {
                let (x, y) = (a.tensor("self")?, a.tensor("other")?);
                if it.m.stale_python_sizes(x).is_some() || it.m.stale_python_sizes(y).is_some() {
                    return stale_matmul(it, x, y, span).map(|v| (vec![], Some(Value::Tensor(v))));
                }
            }
            let t = need(&t, op)?;
            let other_name = match rule {
                "matmul" => "other",
                "mm" | "bmm" => "mat2",
                "mv" => "vec",
                "dot" => "tensor",
                _ => "vec2",
            };
            let o = a.tensor(other_name)?;
            let ot = it.m.t(o).clone();
            let (dt1, dt2) = (t.dtype, ot.dtype);
            // outer is `self.reshape(-1, 1) * vec2`: it promotes.
            if dt1 != dt2 && it.m.mode == Mode::Eager && rule != "outer" {
                return Err(oe("other", format!("expected m1 and m2 to have the same dtype, but got: {} != {}", cpp_type_name(dt1), cpp_type_name(dt2))));
            }
            if dt1 == DType::Bool && it.m.mode == Mode::Eager && (rule == "mm" || (rule == "matmul" && t.sizes().len() == 2 && ot.sizes().len() == 2)) {
                return Err(not_implemented_for("addmm_impl_cpu_", DType::Bool));
            }
            // Two vectors: torch._refs.dot's own dtype check (matmul of two
            // 1-d tensors is dot), before eager's kernel.
            if dt1 != dt2
                && it.m.mode == Mode::Analysis
                && (rule == "dot" || (rule == "matmul" && t.sizes().len() == 1 && ot.sizes().len() == 1))
            {
                return Err(oe("other", format!("dot : expected both vectors to have same dtype, but found {} and {}", torch_type_name(dt1), torch_type_name(dt2))));
            }
            let stale_outer = rule == "outer"
                && it.m.mode == Mode::Analysis
                && !it.m.python_geom.is_empty()
                && (me.is_some_and(|x| it.m.stale_python_sizes(x).is_some())
                    || it.m.stale_python_sizes(o).is_some());
            // torch._decomp's matmul views its operands (unsqueeze,
            // expand, fold) before mm or bmm compare inner sizes: the
            // analysis's refusals of those views come first, unless the
            // operands are refused before any op (`matmul_checks_first`).
            // (Only asked when a view may be refused: matmul is common.)
            let check_views = it.m.inference_mode || !it.m.grown_outer.is_empty();
            let views_first = check_views && rule == "matmul" && !matmul_checks_first(it, a);
            if views_first {
                matmul_composite_views(it, rule, t, &ot, me.unwrap_or(o), o, op.name)?;
            }
            let sizes = if stale_outer {
                // After set_(): the composite checks the wrappers' ranks
                // and reshapes self's value to [self.size(0), 1] with the
                // wrapper's size (stale_dims_check), then multiplies it by
                // vec2's value.
                let x = me.unwrap_or(o);
                let (xs, ys) = (
                    it.m.python_geometry(x).sizes().clone(),
                    it.m.python_geometry(o).sizes().clone(),
                );
                matmul_shape(it, rule, &xs, &ys)?;
                let column = [xs[0].clone(), SymInt::int(1)];
                shape::broadcast_shapes(&column, ot.sizes(), &mut it.m.sizes)?
            } else {
                matmul_shape(it, rule, t.sizes(), ot.sizes())?
            };
            if check_views && !views_first {
                matmul_composite_views(it, rule, t, &ot, me.unwrap_or(o), o, op.name)?;
            }
            let (d1, d2) = (t.sizes().len(), ot.sizes().len());
            // The analysis's decompositions promote mixed dtypes, but mm's
            // meta makes its result with m1's dtype (`new_empty`): mm, and
            // matmul's 2-d and folded paths that end in mm.
            let x = me.unwrap_or(o);
            let analysis_mixed = dt1 != dt2 && it.m.mode == Mode::Analysis;
            let ends_in_mm = analysis_mixed
                && (rule == "mm"
                    || (rule == "matmul" && d2 == 2 && (d1 == 2 || (d1 >= 3 && matmul_folds(it, t, &ot, x, o)))));
            // bmm's meta (common_meta_baddbmm_bmm) makes its result with
            // batch2's dtype.
            let dtype = if ends_in_mm {
                dt1
            } else if analysis_mixed && rule == "bmm" {
                dt2
            } else {
                DType::promote(dt1, dt2)
            };
            if !dtype.can_require_grad() && dt2.can_require_grad() && it.m.records_grad(&[x, o], dt2) {
                // Autograd then gives a differentiable op an integer output.
                return Err(oe("other", "isDifferentiableType(variable.scalar_type()) INTERNAL ASSERT FAILED at \"/pytorch/torch/csrc/autograd/functions/utils.h\":74, please report a bug to PyTorch.")
                    .help("cast the integer operand to the other's floating dtype first"));
            }
            let meta = contiguous(it, sizes, dtype)?;
            if rule == "matmul" && it.m.mode == Mode::Analysis && d1 == 3 && d2 == 3 {
                // torch._decomp's matmul: 3-d operands whose batch sizes
                // differ, one of batch 1 that requires grad, go through the
                // fold path as `matmul(x.squeeze(0), y)` (or y's).
                let x = me.unwrap_or(o);
                // (Plain comparisons in 2.7.1: guards on symbolic batches.)
                let (s1, s2) = (t.sizes()[0].clone(), ot.sizes()[0].clone());
                if !it.m.sizes.eq(&s1, &s2) {
                    let b1 = it.m.sizes.eq_int(&s1, 1).then_some(1);
                    let b2 = it.m.sizes.eq_int(&s2, 1).then_some(1);
                    let squeeze = |it: &mut Interp, id: TensorId| {
                        it.call_op("squeeze", smallvec![Value::Tensor(id), Value::Int(SymInt::int(0))], Vec::new(), span)
                            .map_err(|d| OpError::new(d.code, d.message))
                    };
                    let pair = if b1 == Some(1) && it.m.requires_grad(x) {
                        Some((squeeze(it, x)?, Value::Tensor(o)))
                    } else if b2 == Some(1) && it.m.requires_grad(o) {
                        Some((Value::Tensor(x), squeeze(it, o)?))
                    } else {
                        None
                    };
                    if let Some((l, r)) = pair {
                        let v = it.call_op("matmul", smallvec![l, r], Vec::new(), span).map_err(|d| OpError::new(d.code, d.message))?;
                        return Ok((vec![], Some(v)));
                    }
                }
            }
            if rule == "matmul" && it.m.mode == Mode::Analysis {
                if let Some(v) = analysis_matmul_view(it, a, t, &ot, me.unwrap_or(o), o, &meta, span)? {
                    return Ok((vec![], Some(v)));
                }
            }
            if rule == "matmul" && it.m.mode == Mode::Analysis && (d1 >= 3 || d2 >= 3) && !matmul_folds(it, t, &ot, me.unwrap_or(o), o) {
                // torch._decomp's matmul, batched path:
                // `tensor1_expanded.bmm(tensor2_expanded).view(output_shape)`, a view of
                // an intermediate (eager's C++ uses _unsafe_view instead).
                let n = if d1 >= 2 { t.sizes()[d1 - 2].clone() } else { SymInt::int(1) };
                let p = if d2 >= 2 { ot.sizes()[d2 - 1].clone() } else { SymInt::int(1) };
                let batch_dims = meta.sizes.len() - usize::from(d1 >= 2) - usize::from(d2 >= 2);
                let batch = it.m.sizes.prod(&meta.sizes[..batch_dims])?;
                // Each operand is expanded to the batch and reshaped to
                // [batch, rows, cols] as its wrapper is, unsynced (matmul
                // is a composite: nothing syncs it first); where a write
                // through a view re-laid its value, that view is replayed on
                // the value when bmm syncs it, and may be refused
                // (tests/oracle/matmul_batched_relaid_operand.tp).
                for id in [me.unwrap_or(o), o] {
                    let Some(wrapper) = unsynced.iter().find(|(t, _)| *t == id).map(|(_, g)| g.clone()) else {
                        continue;
                    };
                    let real = it.m.tensors[id].geometry().clone();
                    let rank = real.sizes().len();
                    // (An operand with all the batch dims, not expanded.)
                    if real == wrapper || rank < 3 || rank != batch_dims + 2 {
                        continue;
                    }
                    let target: Dims = smallvec![
                        batch.clone(),
                        real.sizes()[rank - 2].clone(),
                        real.sizes()[rank - 1].clone()
                    ];
                    let s = &mut it.m.sizes;
                    if shape::compute_stride(wrapper.sizes(), wrapper.strides(), &target, s)?.is_some()
                        && shape::ref_view_geometry(real.sizes(), real.strides(), &target, s)?.is_none()
                    {
                        return Err(view_stride_error(real.sizes(), real.strides(), &target));
                    }
                }
                let bmm_meta = contiguous(it, smallvec![batch, n, p], dtype)?;
                let tmp = it.m.fresh(bmm_meta, span, "bmm");
                record_composite(it, a, &named_inputs(a), "matmul", false, &[tmp], span)?;
                let v = it.m.view_of(tmp, meta, "view", false, true, span)?;
                return Ok((vec![], Some(Value::Tensor(v))));
            }
            if rule == "matmul" && it.m.mode == Mode::Analysis && d1 >= 3 && d2 <= 2 {
                // The fold: `_unsafe_view(t1_folded.mm(t2), output_shape)` (or
                // mv), whose product has the leading dims folded into one.
                // t1's fold is `t1.reshape(-1, sizes[-1])`, whose view
                // helper asks `is_contiguous()` (guards on size-1 dims) even
                // when should_fold returned early for a t2 that requires grad.
                let folded = [it.m.sizes.prod(&t.sizes()[..d1 - 1])?, t.sizes()[d1 - 1].clone()];
                let x = me.unwrap_or(o);
                let t1 = decomposition_geometry(&it.m, x);
                let s = &mut it.m.sizes;
                let viewed = shape::compute_stride(t1.sizes(), t1.strides(), &folded, s)?;
                // Where the wrapper's strides are not the value's, the view
                // it chose runs on the value (tests/oracle/stale_reshape.tp).
                let real = it.m.tensors[x].geometry().clone();
                if real != t1 && viewed.is_some() {
                    let (sizes, strides) = (real.sizes(), real.strides());
                    if shape::ref_view_geometry(sizes, strides, &folded, &mut it.m.sizes)?.is_none() {
                        return Err(view_stride_error(sizes, strides, &folded));
                    }
                }
                let out = it.m.fresh(meta.clone(), span, "matmul");
                record_composite(it, a, &named_inputs(a), "matmul", false, &[out], span)?;
                let lead = if d2 == 2 { meta.sizes.len() - 1 } else { meta.sizes.len() };
                let mut source: Dims = smallvec![it.m.sizes.prod(&meta.sizes[..lead])?];
                source.extend(meta.sizes[lead..].iter().cloned());
                it.m.unsafe_view_sources.insert(out, source);
                return Ok((vec![], Some(Value::Tensor(out))));
            }
            Ok((vec![meta], None))
        }
        "addmm" | "baddbmm" => {
            let t = need(&t, op)?;
            let (m1, m2) = if rule == "addmm" { (a.tensor("mat1")?, a.tensor("mat2")?) } else { (a.tensor("batch1")?, a.tensor("batch2")?) };
            let (s1, s2) = (it.m.t(m1).sizes().clone(), it.m.t(m2).sizes().clone());
            if rule == "baddbmm" && !s1.is_empty() && !s2.is_empty() {
                // meta_baddbmm (eager's C++ one and the analysis's Python
                // one) first expands self to [batch1.size(0),
                // batch1.size(1), batch2.size(2)], before any rank check.
                let size = |s: &Dims, d: i64| -> OpResult<SymInt> {
                    Ok(s[shape::wrap_dim(d, s.len())?].clone())
                };
                let to = [size(&s1, 0)?, size(&s1, 1)?, size(&s2, 2)?];
                if !it.m.sizes.eq_dims(t.sizes(), &to) {
                    expand_geometry(it, t, &to)?;
                }
            }
            let prod = matmul_shape(it, if rule == "addmm" { "mm" } else { "bmm" }, &s1, &s2)?;
            if rule == "baddbmm" {
                // meta_baddbmm.
                let (d1, d2) = (it.m.t(m1).dtype, it.m.t(m2).dtype);
                if t.dtype != d1 || d1 != d2 {
                    return Err(oe("other", format!("Input dtypes must be the same, got: input: torch.{}, batch1: torch.{}, batch2: torch.{}", t.dtype.name(), d1.name(), d2.name())));
                }
            }
            // ADDMM_META's checks, in eager only (the analysis decomposes
            // and promotes).
            // (Autocast cast addmm's operands before it ran; the in-place
            // addmm_ is not cast.)
            let [ds, dm1, dm2] = [t.dtype, it.m.t(m1).dtype, it.m.t(m2).dtype];
            if it.m.mode == Mode::Eager {
                if ds != dm2 {
                    return Err(oe("other", format!("self and mat2 must have the same dtype, but got {} and {}", torch_type_name(ds), torch_type_name(dm2))));
                }
                if dm1 != dm2 {
                    return Err(oe("other", format!("mat1 and mat2 must have the same dtype, but got {} and {}", torch_type_name(dm1), torch_type_name(dm2))));
                }
                // ADDMM_META then sets the output: an in-place addmm_
                // refuses a `self` of other sizes (check_inplace); only
                // then does addmm_out_cpu expand `self` to the product.
                if rule == "addmm" {
                    if a.op.name.ends_with('_') && !it.m.sizes.eq_dims(t.sizes(), &prod) {
                        return Err(bad_inplace_call(t.sizes(), &prod));
                    }
                    expand_geometry(it, t, &prod)?;
                }
            }
            let sizes = shape::broadcast_shapes(t.sizes(), &prod, &mut it.m.sizes)?;
            if !it.m.sizes.eq_dims(&sizes, &prod) {
                return Err(oe("broadcast", format!("The expanded size of self {} must match the product shape {}", show(t.sizes()), show(&prod))));
            }
            // The analysis runs torch._decomp's addmm, whose
            // pw_cast_for_opmath gives the operands' promoted dtype
            // (tests/oracle/addmm_promotion.tp).
            let dtype = if it.m.mode == Mode::Analysis && rule == "addmm" {
                let vals = [a.get("self"), a.get("mat1"), a.get("mat2")];
                let ops: smallvec::SmallVec<[Operand; 4]> =
                    vals.iter().filter_map(|v| operand(v)).collect();
                result_type(it, &ops)
            } else {
                ds
            };
            let meta = contiguous(it, prod, dtype)?;
            Ok((vec![meta], None))
        }
        "linear" => {
            let x = a.tensor("input")?;
            let w = a.tensor("weight")?;
            // at::linear reads the sizes Python sees (stale after set_()).
            let xs = it.m.python_geometry(x).sizes().clone();
            let ws = it.m.t(w).sizes().clone();
            // (Its dim check reads the weight's Python sizes too.)
            let w_rank = it.m.python_geometry(w).sizes().len();
            if xs.is_empty() || w_rank == 0 {
                return Err(oe("other", format!("both arguments to linear need to be at least 1D, but they are {}D and {}D", xs.len(), w_rank)));
            }
            if it.m.mode == Mode::Analysis {
                // The ops it decomposes into check the shapes.
                let bias = a.opt_tensor("bias")?;
                return analysis_linear(it, x, w, bias, span).map(|v| (vec![], Some(v)));
            }
            // Every path takes `weight.t()` before the product.
            if ws.len() > 2 {
                return Err(shape::t_rank_error(ws.len()));
            }
            let wt: Dims = ws.iter().rev().cloned().collect();
            let mut sizes = matmul_shape(it, "matmul", &xs, &wt)?;
            let bias = a.opt_tensor("bias")?;
            // addmm(bias, input, weight.t()): a 2-d input, or
            // _flatten_nd_linear's on the flattened input (a contiguous
            // one, 3-d or with a 1-d bias).
            let xt = it.m.t(x).clone();
            let uses_addmm = bias.is_some_and(|b| {
                let bd = it.m.t(b).sizes().len();
                xs.len() == 2
                    || (shape::is_contiguous(xt.sizes(), xt.strides(), &mut it.m.sizes)
                        && (xs.len() == 3 || bd == 1))
            });
            if let Some(b) = bias {
                let bt = it.m.t(b).clone();
                if uses_addmm {
                    // addmm expands the bias to the 2-d product first.
                    let flat = it.m.sizes.prod(&xs[..xs.len() - 1])?;
                    let out = ws.first().cloned().unwrap_or(SymInt::int(1));
                    expand_geometry(it, &bt, &[flat, out])?;
                }
                sizes = shape::broadcast_shapes(&sizes, bt.sizes(), &mut it.m.sizes)?;
            }
            let dx = it.m.t(x).dtype;
            let dw = it.m.t(w).dtype;
            let db = bias.map(|b| it.m.t(b).dtype);
            // addmm checks self first; matmul's mm has its own words.
            match db {
                Some(db) if db != dw && uses_addmm => {
                    return Err(oe("other", format!("self and mat2 must have the same dtype, but got {} and {}", torch_type_name(db), torch_type_name(dw))));
                }
                Some(_) if dx != dw => {
                    return Err(oe("other", format!("mat1 and mat2 must have the same dtype, but got {} and {}", torch_type_name(dx), torch_type_name(dw))));
                }
                None if dx != dw => {
                    return Err(oe("other", format!("expected m1 and m2 to have the same dtype, but got: {} != {}", cpp_type_name(dx), cpp_type_name(dw))));
                }
                _ => {}
            }
            let dtype = DType::promote(DType::promote(dx, dw), db.unwrap_or(dx));
            let meta = contiguous(it, sizes, dtype)?;
            // aten::linear is CompositeImplicitAutograd: a 2-d input with a bias is
            // addmm(bias, input, weight.t()); without a bias, matmul(input, weight.t()).
            // Both take a view of the weight, which the analysis refuses under
            // inference_mode (see view_of).
            // (Under autocast `w` is already the weight's cast copy.)
            if it.m.inference_mode {
                let wm = it.m.meta_of(w);
                it.m.view_of(w, wm, "t", false, true, span)?;
            }
            if uses_addmm && xs.len() != 2 {
                // _flatten_nd_linear (a contiguous input, 3-d or with a 1-d
                // bias; a 2-d one is plain addmm): addmm on the flattened
                // input, then `result.view(*batch, out)`: a view of an
                // intermediate.
                let tmp = it.m.fresh(meta.clone(), span, "linear");
                if let Some(node) = record_composite(it, a, &named_inputs(a), "linear", true, &[tmp], span)? {
                    linear_saved_views(it, a, node, true);
                }
                let v = it.m.view_of(tmp, meta, "view", false, true, span)?;
                return Ok((vec![], Some(Value::Tensor(v))));
            }
            Ok((vec![meta], None))
        }
        "einsum" => einsum(it, a, span),
        "clone" => {
            let t = need(&t, op)?;
            let f = a.memory_format("memory_format")?.unwrap_or(MemoryFormat::Preserve);
            let strides = like_strides_for(it, t, f)?;
            Ok((vec![Meta { sizes: t.sizes().clone(), strides, offset: SymInt::int(0), dtype: t.dtype }], None))
        }
        "same_shape" => {
            let t = need(&t, op)?;
            let strides = if op.name == "flip" {
                shape::like_strides(t.sizes(), t.strides(), MemoryFormat::Preserve, &mut it.m.sizes)?
            } else {
                shape::contiguous_strides(t.sizes(), &mut it.m.sizes)?
            };
            if op.name == "roll" {
                // roll_common (TensorTransformations.h): shifts and dims
                // pair up (one shift and no dims rolls the flattened
                // tensor), and each dim is wrapped.
                let shifts = a.syms("shifts")?.len();
                let dims = a.opt_dims(it, "dims")?.unwrap_or_default();
                if shifts == 0 {
                    return Err(oe("other", "`shifts` required"));
                }
                if it.m.mode == Mode::Analysis && !t.sizes().is_empty() {
                    // torch._refs.roll canonicalizes the dims first.
                    for &d in &dims {
                        shape::wrap_dim(d, t.sizes().len())?;
                    }
                }
                if shifts != dims.len() && !(dims.is_empty() && shifts == 1) {
                    let space = if it.m.mode == Mode::Analysis { " " } else { "" };
                    return Err(oe(
                        "other",
                        format!(
                            "shifts and dimensions must align. shifts: {shifts}, dims:{space}{}",
                            dims.len()
                        ),
                    ));
                }
                for &d in &dims {
                    if t.sizes().is_empty() {
                        return Err(no_dims_error(d));
                    }
                    shape::wrap_dim(d, t.sizes().len())?;
                }
                // Eager's CPU roll concatenates two narrowed slices of self
                // (at::cat, autocast's `promote` op, under autocast still)
                // unless self is empty.
                if it.m.mode == Mode::Eager && !it.m.sizes.any_zero(t.sizes()) {
                    autocast_promote(it, &[a.tensor("self")?]).map_err(|e| {
                        e.help("roll a float32 tensor (or one of autocast's dtype) under CPU autocast: CPU roll concatenates two slices of it")
                    })?;
                }
            }
            if op.name == "flip" {
                let mut seen = Vec::new();
                for d in a.ints(it, "dims")? {
                    let w = shape::wrap_dim(d, t.sizes().len())?;
                    if seen.contains(&w) {
                        // The analysis runs torch._refs.flip.
                        return Err(oe("other", if it.m.mode == Mode::Analysis {
                            "duplicate value in the list of dims".to_string()
                        } else {
                            format!("dim {w} appears multiple times in the list of dims")
                        }));
                    }
                    seen.push(w);
                }
            }
            Ok((vec![Meta { sizes: t.sizes().clone(), strides, offset: SymInt::int(0), dtype: t.dtype }], None))
        }
        "cat" | "stack" => {
            let ts = a.tensors("tensors")?;
            if ts.is_empty() {
                return Err(match (rule, it.m.mode) {
                    ("stack", _) => oe("other", "stack expects a non-empty TensorList"),
                    (_, Mode::Analysis) => oe("other", "cat expects at least one tensor, but received zero!"),
                    (_, Mode::Eager) => oe("cat-shape", format!("torch.{}(): expected a non-empty list of Tensors", op.name)),
                });
            }
            autocast_promote(it, &ts)?;
            let metas: Vec<Tensor> = ts.iter().map(|&x| it.m.t(x).clone()).collect();
            let ops: Vec<Operand> = ts.iter().map(|&x| Operand::Tensor(x)).collect();
            let mut dtype = metas[0].dtype;
            for m in &metas[1..] {
                dtype = DType::promote(dtype, m.dtype);
            }
            let _ = ops;
            let mut stack_dim = None;
            let sizes = if rule == "stack" {
                for (i, m) in metas.iter().enumerate().skip(1) {
                    if m.sizes() != metas[0].sizes() {
                        let same = it.m.sizes.eq_dims(m.sizes(), metas[0].sizes());
                        if !same {
                            return Err(oe("cat-shape", format!("stack expects each tensor to be equal size, but got {} at entry 0 and {} at entry {i}", show(metas[0].sizes()), show(m.sizes()))));
                        }
                    }
                }
                let d = shape::wrap_dim(a.int(it, "dim")?, metas[0].sizes().len() + 1)?;
                stack_dim = Some(d);
                let mut s = metas[0].sizes().clone();
                s.insert(d, SymInt::int(ts.len() as i64));
                s
            } else {
                // Legacy: 1-d empty tensors are skipped.
                let live: Vec<&Tensor> = metas.iter().filter(|m| !(m.sizes().len() == 1 && m.sizes()[0].as_int() == Some(0))).collect();
                if live.is_empty() {
                    metas[0].sizes().clone()
                } else {
                    let nd = live[0].sizes().len();
                    if nd == 0 {
                        // torch._refs.cat indexes the 0-dim tensor's empty size
                        // list; FakeTensor runs the real kernel when every
                        // input is a constant (a `torch.tensor` literal).
                        let constants = ts.iter().all(|&x| it.m.known_values(x).is_some());
                        return Err(match it.m.mode {
                            Mode::Analysis if !constants => list_index_error(),
                            _ => oe("other", "zero-dimensional tensor (at position 0) cannot be concatenated"),
                        }
                        .help("stack 0-dim tensors with torch.stack, or unsqueeze them first"));
                    }
                    let d = shape::wrap_dim(a.int(it, "dim")?, nd)?;
                    let mut s = live[0].sizes().clone();
                    for (i, m) in live.iter().enumerate().skip(1) {
                        if m.sizes().len() != nd {
                            let code = if it.m.mode == Mode::Analysis { "other" } else { "cat-shape" };
                            return Err(oe(code, format!("Tensors must have same number of dimensions: got {} and {}", nd, m.sizes().len())));
                        }
                        for (k, want) in s.iter().enumerate() {
                            if k == d {
                                continue;
                            }
                            if !it.m.sizes.eq(&m.sizes()[k], want) {
                                return Err(oe(
                                    "cat-shape",
                                    format!("Sizes of tensors must match except in dimension {d}. Expected size {want} but got size {} for tensor number {i} in the list.", m.sizes()[k]),
                                ));
                            }
                        }
                        s[d] = it.m.sizes.add(&s[d], &m.sizes()[d])?;
                    }
                    s
                }
            };
            // cat keeps a memory format all inputs share. stack (the
            // decomposition its meta runs, torch._refs.stack) is, for a dim
            // inside the inputs' rank, the cat of the inputs along it viewed
            // with the new dim split off; for the last dim, the cat of its
            // inputs unsqueezed there (inferUnsqueezeGeometry's strides).
            let inside = stack_dim.filter(|&d| d < metas[0].sizes().len());
            if stack_dim.is_some() && inside.is_none() && it.m.mode == Mode::Analysis {
                // torch._refs.unsqueeze is a broadcast_in_dim, which asks
                // whether each dim is 1 (tests/oracle/stack_specialisation.tp).
                for size in metas[0].sizes() {
                    it.m.sizes.eq_int(size, 1);
                }
            }
            let mut fs = Vec::with_capacity(metas.len());
            for m in &metas {
                let f = match stack_dim {
                    Some(d) if inside.is_none() => {
                        let (mut sizes, mut strides) = (m.sizes().clone(), m.strides().clone());
                        shape::unsqueeze_geometry(&mut sizes, &mut strides, d, &mut it.m.sizes)?;
                        suggested(it, &sizes, &strides)
                    }
                    _ => suggested(it, m.sizes(), m.strides()),
                };
                fs.push(f);
            }
            let fmt = if fs.iter().all(|f| *f == fs[0]) { fs[0] } else { MemoryFormat::Contiguous };
            let empty = sizes.iter().any(|s| s.as_int() == Some(0));
            let strides = match inside {
                // The view of an empty cat is as_strided to contiguous
                // strides (_reshape_view_helper; eager's stack agrees).
                Some(_) if empty => shape::format_strides(&sizes, MemoryFormat::Contiguous, &mut it.m.sizes)?,
                Some(d) => {
                    // The view's _reshape_view_helper asks whether the cat's
                    // dim (n * size) is the new dim's n, a guard that
                    // specialises a symbolic size of 1 at its hint
                    // (tests/oracle/stack_specialisation.tp).
                    if it.m.mode == Mode::Analysis {
                        it.m.sizes.eq_int(&metas[0].sizes()[d], 1);
                    }
                    let mut cat_sizes = metas[0].sizes().clone();
                    cat_sizes[d] = it.m.sizes.mul(&cat_sizes[d], &SymInt::int(ts.len() as i64))?;
                    let mut strides = shape::format_strides(&cat_sizes, fmt, &mut it.m.sizes)?;
                    // torch._refs' view (_reshape_view_helper): it splits
                    // the dim (prims.split_dim), keeping every other stride,
                    // a size-1 dim's too; inputs of size 1 there leave the
                    // cat's dim as the new one, and the size 1 is split off
                    // the next dim, or added at the end with the last stride
                    // (tests/oracle/stack_size_one_layout.tp). Eager agrees.
                    let one = metas[0].sizes()[d].as_int() == Some(1);
                    match one
                        .then(|| shape::ref_view_geometry(&cat_sizes, &strides, &sizes, &mut it.m.sizes))
                        .transpose()?
                        .flatten()
                    {
                        Some((_, viewed)) => viewed,
                        None => {
                            let inner = strides[d].clone();
                            strides[d] = it.m.sizes.mul(&inner, &metas[0].sizes()[d])?;
                            strides.insert(d + 1, inner);
                            strides
                        }
                    }
                }
                None => shape::format_strides(&sizes, fmt, &mut it.m.sizes)?,
            };
            Ok((vec![Meta { sizes, strides, offset: SymInt::int(0), dtype }], None))
        }
        "repeat" | "tile" => {
            let t = need(&t, op)?;
            let reps = a.syms(if rule == "repeat" { "repeats" } else { "dims" })?;
            let nd = t.sizes().len();
            if rule == "repeat" && reps.len() < nd {
                return Err(oe("other", "Number of dimensions of repeat dims can not be smaller than number of dimensions of tensor"));
            }
            let n = reps.len().max(nd);
            let mut reps_full: Dims = smallvec![SymInt::int(1); n - reps.len()];
            reps_full.extend(reps);
            let mut sizes_full: Dims = smallvec![SymInt::int(1); n - nd];
            sizes_full.extend(t.sizes().iter().cloned());
            let mut sizes = Dims::new();
            for (s, r) in sizes_full.iter().zip(&reps_full) {
                if it.m.sizes.lt_int(r, 0) {
                    return Err(oe("other", "Trying to create tensor with negative dimension"));
                }
                sizes.push(it.m.sizes.mul(s, r)?);
            }
            let meta = contiguous(it, sizes, t.dtype)?;
            Ok((vec![meta], None))
        }
        "repeat_interleave" => {
            let t = need(&t, op)?;
            if let (Value::None, Some(me)) = (a.get("repeats"), me) {
                // repeat_interleave(repeats): arange(len(repeats)) repeated
                // by the values, an int64 vector of their sum.
                if t.sizes().len() != 1 {
                    return Err(oe("other", "repeat_interleave only accept 1D vector as repeat"));
                }
                if !matches!(t.dtype, DType::I32 | DType::I64) {
                    return Err(not_implemented_for("repeat_interleave_cpu", t.dtype));
                }
                let n = match a.get("output_size") {
                    Value::Int(o) => o.clone(),
                    _ => tensor_repeats_size(it, me, None, a)?,
                };
                let meta = contiguous(it, smallvec![n], DType::I64)?;
                return Ok((vec![meta], None));
            }
            let r = match a.get("repeats") {
                Value::Int(r) => r.clone(),
                Value::Tensor(rt) => {
                    check_repeats_length(it, t, *rt, me, a)?;
                    match a.get("output_size") {
                        Value::Int(o) => o.clone(),
                        _ => tensor_repeats_size(it, *rt, me, a)?,
                    }
                }
                _ => return Err(oe("arguments", "repeat_interleave(): repeats must be an int or a tensor")),
            };
            let int_repeats = !matches!(a.get("repeats"), Value::Tensor(_));
            if int_repeats && it.m.sizes.lt_int(&r, 0) {
                return Err(oe("other", "Repeats must be non-negative"));
            }
            if let (true, Some(me)) = (int_repeats, me) {
                // at::repeat_interleave_symint unsqueezes (and flattens)
                // self: a view of it, unless the flatten (a reshape of 2+
                // dims) cannot view it and copies
                // (tests/oracle/inference_repeat_interleave_copy.tp).
                let copies = a.opt_int(it, "dim")?.is_none() && t.sizes().len() >= 2 && {
                    let numel = it.m.numel(me)?;
                    shape::compute_stride(t.sizes(), t.strides(), &[numel], &mut it.m.sizes)?
                        .is_none()
                };
                if !copies {
                    it.m.check_composite_view(me, op.name)?;
                }
            }
            // An int repeats: the (flattened, without a dim) input with the
            // repeats as a new dim after `dim`, expanded, cloned, and the two
            // dims flattened (at::repeat_interleave_symint).
            // (A wrapper that set_() left 1-d flattens to itself: the value
            // keeps its real sizes.)
            let stale_1d = it.m.mode == Mode::Analysis
                && me.and_then(|m| it.m.stale_python_sizes(m)).is_some_and(|s| s.len() == 1);
            let (input, d): (Dims, usize) = match a.opt_int(it, "dim")? {
                None if stale_1d => (t.sizes().clone(), 0),
                None => {
                    // self.flatten(): a view (torch._refs' in the analysis).
                    let flat: Dims = smallvec![it.m.numel(me.unwrap_or(0))?];
                    let strides = shape::contiguous_strides(&flat, &mut it.m.sizes)?;
                    let (flat, _) = view_geometry(it, t.sizes(), t.strides(), flat, strides)?;
                    (flat, 0)
                }
                // The composite wraps the dim on the rank Python sees (stale
                // after set_()), then unsqueezes the value after it.
                Some(d) if int_repeats => {
                    let rank = match me {
                        Some(me) => it.m.python_geometry(me).sizes().len(),
                        None => t.sizes().len(),
                    };
                    (t.sizes().clone(), shape::wrap_dim(d, rank)?)
                }
                Some(d) => (t.sizes().clone(), shape::wrap_dim(d, t.sizes().len())?),
            };
            if input.is_empty() || d >= input.len() {
                // `unsqueeze(dim + 1)` of a tensor of fewer dims (0-d).
                shape::wrap_dim(d as i64 + 1, input.len() + 1)?;
            }
            let mut sizes = input.clone();
            let mut expanded = input;
            if int_repeats {
                sizes[d] = it.m.sizes.mul(&sizes[d], &r)?;
                expanded.insert(d + 1, r);
            } else {
                // A tensor of repeats: index_select, a new tensor.
                sizes[d] = r;
                let meta = contiguous(it, sizes, t.dtype)?;
                return Ok((vec![meta], None));
            }
            let mut meta = contiguous(it, sizes, t.dtype)?;
            let tmp_meta = contiguous(it, expanded, t.dtype)?;
            // The flatten of the clone is a view: the analysis's sizes are
            // torch._refs' (`view_geometry`).
            (meta.sizes, meta.strides) = view_geometry(
                it,
                &tmp_meta.sizes,
                &tmp_meta.strides,
                meta.sizes.clone(),
                meta.strides.clone(),
            )?;
            let named = named_inputs(a);
            let tmp = it.m.fresh(tmp_meta, span, "repeat_interleave");
            it.m.record_history("repeat_interleave", false, &named, &[tmp], span)?;
            let v = it.m.view_of(tmp, meta, "view", false, true, span)?;
            Ok((vec![], Some(Value::Tensor(v))))
        }
        "index_select" => {
            let t = need(&t, op)?;
            let nd = t.sizes().len();
            // meta_index_select indexes a Python list with the unwrapped
            // dim (an IndexError), and not at all for a 0-d self.
            let d = match shape::wrap_dim(a.int(it, "dim")?, nd) {
                Err(_) if it.m.mode == Mode::Analysis && nd == 0 => 0,
                Err(_) if it.m.mode == Mode::Analysis => {
                    return Err(list_index_error());
                }
                d => d?,
            };
            let ix = a.tensor("index")?;
            let is = it.m.t(ix).sizes().clone();
            // (meta_index_select takes any index rank; eager's kernel does not.)
            if is.len() > 1 && it.m.mode == Mode::Eager {
                return Err(oe("other", "index_select(): Index is supposed to be a vector"));
            }
            let n = it.m.sizes.prod(&is)?;
            // Eager's kernel checks the index dtype; the meta does not.
            if it.m.mode == Mode::Eager && !matches!(it.m.t(ix).dtype, DType::I64 | DType::I32) {
                return Err(oe("other", "index_select(): Expected dtype int32 or int64 for index"));
            }
            let size = if t.sizes().is_empty() {
                Some(1)
            } else {
                t.sizes().get(d).and_then(|s| it.m.sizes.env.hint(s))
            };
            let values = match size {
                Some(size) => it.m.index_values(ix, |v| v < 0 || v >= size),
                None => it.m.literal_values(ix),
            };
            if let Some(values) = values {
                literal_index_select_check(it, t, d, &values)?;
            }
            let mut sizes = t.sizes().clone();
            if !sizes.is_empty() {
                sizes[d] = n;
            }
            let meta = contiguous(it, sizes, t.dtype)?;
            Ok((vec![meta], None))
        }
        "gather" | "take" => {
            let t = need(&t, op)?;
            let ix = a.tensor("index")?;
            if rule == "gather" {
                let d = shape::wrap_dim(a.int(it, "dim")?, t.sizes().len())?;
                scatter_gather_checks(it, "gather", me.unwrap_or(ix), d, ix, None)?;
                literal_index_bounds(it, me.unwrap_or(ix), d, ix)?;
            }
            let is = it.m.t(ix).sizes().clone();
            let index_dtype = it.m.t(ix).dtype;
            if rule == "take" && index_dtype != DType::I64 {
                let got = if it.m.mode == Mode::Analysis { format!("torch.{}", index_dtype.name()) } else { cpp_type_name(index_dtype).to_string() };
                return Err(oe("other", format!("take(): Expected a long tensor for index, but got {got}")));
            }
            if !index_dtype.is_integral() || index_dtype == DType::Bool {
                return Err(oe("other", format!("{}(): Expected dtype int64 for index", op.name)));
            }
            // Eager's take reads its indices: one tpi knows outside the
            // flattened tensor fails.
            if rule == "take" && it.m.mode == Mode::Eager {
                let numel = it.m.sizes.prod(t.sizes())?.as_int();
                if let Some((values, n)) = numel.and_then(|n| Some((it.m.index_values(ix, |v| v < -n || v >= n)?, n))) {
                    if let Some(v) = values.iter().find(|&&v| v < -n || v >= n) {
                        return Err(oe("index-out-of-range", format!("out of range: tried to access index {v} on a tensor of {n} elements.")));
                    }
                }
            }
            let meta = contiguous(it, is, t.dtype)?;
            Ok((vec![meta], None))
        }
        "scatter" | "index_add" | "index_fill" | "index_put" => {
            let t = need(&t, op)?;
            if rule == "scatter" {
                scatter_checks(it, a)?;
            }
            if matches!(rule, "index_add" | "index_fill") {
                index_func_checks(it, a)?;
            }
            if let (Some(me), "index_put") = (me, rule) {
                eager_index_put_checks(it, me, a)?;
            }
            // index_copy is one of CPU autocast's promote ops.
            let dtype = match (op.name, a.get("source")) {
                ("index_copy", Value::Tensor(s)) => promoted_operand(autocast_promote(it, &[me.unwrap_or(*s), *s])?, t.dtype),
                _ => t.dtype,
            };
            // index_fill and index_put clone self (MemoryFormat::Preserve);
            // scatter, scatter_add, index_add and index_copy are structured
            // kernels (and metas: `self.new_empty(self.shape)`) whose
            // output gets no strides, so it is contiguous.
            let strides = if matches!(rule, "index_fill" | "index_put") {
                shape::like_strides(t.sizes(), t.strides(), MemoryFormat::Preserve, &mut it.m.sizes)?
            } else if rule == "index_add" && it.m.mode == Mode::Analysis {
                cloned_contiguous_strides(it, t)?
            } else if rule == "index_add" && op.name == "index_add" {
                after_contiguous_strides(it, me, t.sizes())?
            } else {
                shape::contiguous_strides(t.sizes(), &mut it.m.sizes)?
            };
            Ok((vec![Meta { sizes: t.sizes().clone(), strides, offset: SymInt::int(0), dtype }], None))
        }
        "data_dependent" if it.m.has_shape_env() => {
            // FakeTensor's nonzero and masked_select with a ShapeEnv: an
            // unbacked size, and no checks of the mask.
            let t = need(&t, op)?;
            let me = me.unwrap_or(0);
            let (sizes, strides, dtype) = if op.name == "nonzero" {
                let u = nonzero_size(it, me)?;
                let rank = SymInt::int(t.sizes().len() as i64);
                (smallvec![u.clone(), rank], smallvec![SymInt::int(1), u], DType::I64)
            } else {
                let u = it.m.unbacked_size();
                (smallvec![u], smallvec![SymInt::int(1)], t.dtype)
            };
            Ok((vec![Meta { sizes, strides, offset: SymInt::int(0), dtype }], None))
        }
        "data_dependent" if it.m.mode == Mode::Eager => {
            // Eager knows the data; tpi does not: an unknown (unbacked) size.
            let t = need(&t, op)?;
            if op.name == "masked_select" {
                // masked_select_out_impl_cpu: the mask's dtype, then
                // expand_outplace(mask, self).
                let mask = it.m.t(a.tensor("mask")?).clone();
                if mask.dtype != DType::Bool {
                    return Err(oe("other", "masked_select: expected BoolTensor for mask"));
                }
                shape::broadcast_shapes(mask.sizes(), t.sizes(), &mut it.m.sizes)?;
            }
            let u = it.m.unbacked_size();
            let sizes = if op.name == "nonzero" { smallvec![u, SymInt::int(t.sizes().len() as i64)] } else { smallvec![u] };
            let dtype = if op.name == "nonzero" { DType::I64 } else { t.dtype };
            let meta = contiguous(it, sizes, dtype)?;
            Ok((vec![meta], None))
        }
        "data_dependent" => Err(oe(
            "other",
            format!("{}() has a data-dependent output size, which the analysis cannot trace without unbacked symbols", op.name),
        )
        .help("use torch.where(mask, x, other) to keep the shape static")),
        "tril" => {
            let t = need(&t, op)?;
            if t.sizes().len() < 2 {
                return Err(oe("other", format!("{}: input tensor must have at least 2 dimensions", op.name)));
            }
            // `int diagonal`: a size passed there is read as a Python int.
            if let Value::Int(d) = a.get("diagonal") {
                it.m.sizes.concrete(d, "diagonal")?;
            }
            let strides = match (me, it.m.mode) {
                (Some(x), Mode::Analysis) => masked_layout(it, x)?,
                _ => shape::contiguous_strides(t.sizes(), &mut it.m.sizes)?,
            };
            let meta = Meta { sizes: t.sizes().clone(), strides, offset: SymInt::int(0), dtype: t.dtype };
            Ok((vec![meta], None))
        }
        "pad" => {
            let x = a.tensor("input")?;
            let t = it.m.t(x).clone();
            let pad = a.syms("pad")?;
            eager_scalar_fits(it, t.dtype, a.get("value"))?;
            if pad.len() % 2 != 0 {
                return Err(oe("other", "Padding length must be divisible by 2"));
            }
            // at::pad reads the rank Python sees (stale after set_()).
            let python_rank = it.m.python_geometry(x).sizes().len();
            if it.m.mode == Mode::Analysis && pad.len() / 2 > python_rank {
                return Err(oe("other", format!("Padding length should be less than or equal to two times the input dimension but got padding length {} and input of dimension {python_rank}", pad.len())));
            }
            if pad.len() / 2 > t.sizes().len() {
                return Err(oe("other", "Padding length should be less than or equal to two times the input dimension"));
            }
            pad_mode_checks(it, a, &pad, python_rank, t.sizes())?;
            let constant = constant_pad_mode(a);
            let narrowed_clone = constant
                && constant_pad_checks(it.m.mode, t.sizes(), &pad, &mut it.m.sizes)?;
            let mut sizes = t.sizes().clone();
            let nd = sizes.len();
            for i in 0..pad.len() / 2 {
                let d = nd - 1 - i;
                let s = it.m.sizes.add(&sizes[d], &pad[2 * i])?;
                sizes[d] = it.m.sizes.add(&s, &pad[2 * i + 1])?;
                if it.m.sizes.lt_int(&sizes[d], 0) {
                    return Err(oe("other", "The input size after padding is negative"));
                }
            }
            if narrowed_clone {
                // `c_input.clone()`: the narrowed input (the sizes above)
                // with its strides, in the format it preserves.
                let strides = like_strides_of(it, &sizes, t.strides(), MemoryFormat::Preserve)?;
                return Ok((vec![Meta { sizes, strides, offset: SymInt::int(0), dtype: t.dtype }], None));
            }
            // constant_pad_nd keeps the input's suggested format; the
            // analysis's metas of the other modes (`_pad2d_common` and
            // kin) return `input.new_empty(...)`: contiguous.
            let f = if constant || it.m.mode == Mode::Eager {
                suggested(it, t.sizes(), t.strides())
            } else {
                MemoryFormat::Contiguous
            };
            let strides = shape::format_strides(&sizes, f, &mut it.m.sizes)?;
            Ok((vec![Meta { sizes, strides, offset: SymInt::int(0), dtype: t.dtype }], None))
        }
        "dropout" => {
            let x = a.tensor("input")?;
            let p = match a.get("p") {
                Value::Float(f) => *f,
                Value::Int(i) => i.as_int().unwrap_or(0) as f64,
                _ => 0.5,
            };
            if !(0.0..=1.0).contains(&p) {
                return Err(oe("other", format!("dropout probability has to be between 0 and 1, but got {p}")));
            }
            let training = a.bool("training")?;
            let empty = it.m.t(x).sizes().iter().any(|s| s.as_int() == Some(0));
            if !training || p == 0.0 || (it.m.mode == Mode::Eager && empty) {
                if it.m.mode == Mode::Eager {
                    // aten::dropout (_dropout_impl) returns its input
                    // itself, an empty one too.
                    return Ok((vec![], Some(Value::Tensor(x))));
                }
                // The analysis runs torch/_decomp's dropout: `input.clone()`.
                return Ok((vec![], Some(copy_of(it, x, it.m.t(x).dtype, MemoryFormat::Preserve, "clone", span)?)));
            }
            let t = it.m.t(x).clone();
            // Dropping out scales by 1 / (1 - p): a float result that an
            // integer tensor cannot hold. The analysis's native_dropout
            // decomposition refuses every non-floating input (with a fixed
            // message); eager's _dropout_impl divides its noise in place,
            // after returning an empty input as it is.
            // (Its bernoulli_ has no complex kernel.)
            let eager_noise = it.m.mode == Mode::Eager
                && p != 1.0
                && !it.m.sizes.any_zero(t.sizes());
            if eager_noise && t.dtype.is_complex() {
                return Err(not_implemented_for("bernoulli_scalar_cpu_", t.dtype));
            }
            // In place, the analysis runs _dropout_impl too, whose
            // `noise.div_(1 - p)` functionalization lets through (its meta
            // check passes; the float result is copied back into the
            // noise): any dtype passes (tests/oracle/dropout_inplace_dtypes.tp).
            let inplace = matches!(a.get("inplace"), Value::Bool(true));
            let refused = match it.m.mode {
                Mode::Analysis => p != 1.0 && !t.dtype.is_floating() && !inplace,
                Mode::Eager => eager_noise && t.dtype.is_integral(),
            };
            if refused {
                let name = if it.m.mode == Mode::Analysis { "Long" } else { torch_type_name(t.dtype) };
                return Err(oe("dtype-cast", format!("result type Float can't be cast to the desired output type {name}")));
            }
            let strides = if it.m.mode == Mode::Analysis {
                // native_dropout's decomposition: `(rand_like(input) > p) *
                // input * scale`, the mask the first operand.
                let noise = like_strides_for(it, &t, MemoryFormat::Preserve)?;
                let m = &mut it.m;
                let noise = [shape::IterOperand { sizes: t.sizes(), strides: &noise }];
                let mask = shape::iterator_output_strides(t.sizes(), &noise, true, &mut m.sizes)?;
                let operands = [
                    shape::IterOperand { sizes: t.sizes(), strides: &mask },
                    shape::IterOperand { sizes: t.sizes(), strides: t.strides() },
                ];
                shape::iterator_output_strides(t.sizes(), &operands, true, &mut m.sizes)?
            } else {
                iter_strides(it, t.sizes(), &[x])?
            };
            Ok((vec![Meta { sizes: t.sizes().clone(), strides, offset: SymInt::int(0), dtype: t.dtype }], None))
        }
        "layer_norm" => {
            let x = a.tensor("input")?;
            let t = it.m.t(x).clone();
            let ns = a.syms("normalized_shape")?;
            let nd = t.sizes().len();
            if ns.is_empty() {
                return Err(oe("other", "Expected normalized_shape to be at least 1-dimensional, i.e., containing at least one element, but got normalized_shape = []"));
            }
            for name in ["weight", "bias"] {
                if let Some(p) = a.opt_tensor(name)? {
                    let ps = it.m.t(p).sizes().clone();
                    if !it.m.sizes.eq_dims(&ps, &ns) {
                        return Err(oe("other", format!("Expected {name} to be of same shape as normalized_shape, but got {name} of shape {} and normalized_shape = {}", show(&ps), show(&ns))));
                    }
                }
            }
            let ok = ns.len() <= nd && ns.iter().zip(&t.sizes()[nd - ns.len()..]).all(|(p, q)| it.m.sizes.eq(p, q));
            if !ok {
                return Err(oe("other", format!("Given normalized_shape={}, expected input with shape [*, {}], but got input of size{}", show(&ns), show(&ns).trim_matches(|c| c == '[' || c == ']'), show(t.sizes()))));
            }
            let eager = it.m.mode == Mode::Eager;
            // The analysis's decomposition takes var_mean of the input,
            // whose dtype must be floating; eager's kernel has no integer
            // (nor complex) instance.
            if !t.dtype.is_floating() && (eager || !t.dtype.is_complex()) {
                return Err(if eager {
                    not_implemented_for("LayerNormKernelImpl", t.dtype)
                } else {
                    oe("other", format!("mean(): could not infer output dtype. Input dtype must be either a floating point or complex dtype. Got: torch.{}", t.dtype.name()))
                });
            }
            // Eager's CPU kernel takes parameters of another dtype only as
            // float32 beside a bfloat16 or float16 input (is_mixed_type,
            // check_mixed_data_type); the decomposition promotes anything.
            if eager {
                let mut params = smallvec::SmallVec::<[DType; 2]>::new();
                for name in ["weight", "bias"] {
                    if let Some(p) = a.opt_tensor(name)? {
                        params.push(it.m.t(p).dtype);
                    }
                }
                if params.iter().any(|&d| d != t.dtype) {
                    let reduced = matches!(t.dtype, DType::BF16 | DType::F16);
                    if params.iter().any(|&d| d != DType::F32) {
                        return Err(oe("other", "mixed dtype (CPU): expect parameter to have scalar type of Float"));
                    }
                    if !reduced {
                        return Err(oe("other", "mixed dtype (CPU): all inputs must share same datatype."));
                    }
                }
            }
            let strides = if eager {
                shape::contiguous_strides(t.sizes(), &mut it.m.sizes)?
            } else {
                let dims: smallvec::SmallVec<[usize; 4]> = (nd - ns.len()..nd).collect();
                let mut params = smallvec::SmallVec::<[TensorId; 2]>::new();
                for name in ["weight", "bias"] {
                    if let Some(p) = a.opt_tensor(name)? {
                        params.push(p);
                    }
                }
                normalized_layout(it, x, &dims, &params, true)?
            };
            let meta = Meta { sizes: t.sizes().clone(), strides, offset: SymInt::int(0), dtype: t.dtype };
            Ok((vec![meta], None))
        }
        "embedding" => {
            let x = a.tensor("input")?;
            let w = a.tensor("weight")?;
            let (xt, wt) = (it.m.t(x).clone(), it.m.t(w).clone());
            // Python code and autograd read the wrapper's sizes, which
            // set_() may have left 0-d (analysis only): `weight.size(0)` is
            // then an IndexError.
            let stale_0d = it.m.mode == Mode::Analysis
                && it.m.stale_python_sizes(w).is_some_and(|s| s.is_empty());
            // torch.nn.functional.embedding's own asserts on padding_idx.
            if stale_0d && matches!(a.get("padding_idx"), Value::Int(p) if p.as_int() != Some(0)) {
                return Err(no_dims_error(0));
            }
            if let (Value::Int(p), Some(rows)) = (a.get("padding_idx"), wt.sizes().first().and_then(SymInt::as_int)) {
                if let Some(p) = p.as_int() {
                    if p >= rows || p < -rows {
                        return Err(oe("other", "Padding_idx must be within num_embeddings").help(format!("padding_idx must be in [-{rows}, {rows})")));
                    }
                }
            }
            if !matches!(a.get("max_norm"), Value::None) {
                // F.embedding renormalises the rows it reads first:
                // torch.embedding_renorm_(weight.detach(), input, ...), a data
                // write through a detached alias (same storage and version
                // counter, no history).
                let d = tensor_op(it, "detach", smallvec![Value::Tensor(w)], span)?;
                it.m.mutate_data(d, "embedding_renorm_", &[("indices", Some(x))], span)?;
            }
            // The autograd kernel saves `weight.sym_size(0)` for the
            // backward before the op runs.
            if stale_0d && it.m.records_grad(&[w], wt.dtype) {
                return Err(no_dims_error(0));
            }
            // embedding_symint's checkScalarTypes, in eager only (the
            // analysis's decomposition indexes with any dtype).
            if it.m.mode == Mode::Eager && !matches!(xt.dtype, DType::I64 | DType::I32) {
                return Err(oe("other", format!("Expected tensor for argument #1 'indices' to have one of the following scalar types: Long, Int; but got torch.{}Tensor instead (while checking arguments for embedding)", torch_type_name(xt.dtype))));
            }
            if wt.sizes().len() != 2 {
                return Err(oe("other", "'weight' must be 2-D"));
            }
            // Eager's index_select of the rows checks the indices.
            if let Some((values, rows)) = wt.sizes()[0].as_int().and_then(|rows| Some((it.m.index_values(x, |v| v < 0 || v >= rows)?, rows))) {
                if values.iter().any(|&v| v < 0 || v >= rows) {
                    return Err(oe("index-out-of-range", "index out of range in self"));
                }
            }
            let mut sizes = xt.sizes().clone();
            sizes.push(wt.sizes()[1].clone());
            let meta = contiguous(it, sizes, wt.dtype)?;
            Ok((vec![meta], None))
        }
        "conv2d" => conv2d(it, a, span),
        other => Err(oe("other", format!("internal: no rule `{other}` for {}", op.name))),
    }
}

fn matmul_shape(it: &mut Interp, rule: &str, a: &[SymInt], b: &[SymInt]) -> OpResult<Dims> {
    let s = &mut it.m.sizes;
    let mismatch = |a: &[SymInt], b: &[SymInt]| {
        oe(
            "matmul-shape",
            format!(
                "mat1 and mat2 shapes cannot be multiplied ({} and {})",
                a.iter()
                    .map(|x| x.to_string())
                    .collect::<Vec<_>>()
                    .join("x"),
                b.iter()
                    .map(|x| x.to_string())
                    .collect::<Vec<_>>()
                    .join("x")
            ),
        )
    };
    match rule {
        "mm" => {
            if a.len() != 2 || b.len() != 2 {
                let which = if a.len() != 2 { "self" } else { "mat2" };
                if it.m.mode == Mode::Analysis {
                    return Err(oe(
                        "other",
                        format!("{} must be 2D", if a.len() != 2 { "a" } else { "b" }),
                    ));
                }
                return Err(oe("matmul-shape", format!("{which} must be a matrix")));
            }
            if !s.eq(&a[1], &b[0]) {
                return Err(mismatch(a, b));
            }
            Ok(smallvec![a[0].clone(), b[1].clone()])
        }
        "bmm" => {
            if a.len() != 3 || b.len() != 3 {
                let which = if a.len() != 3 { "batch1" } else { "batch2" };
                return Err(oe("other", format!("{which} must be a 3D tensor")));
            }
            if !s.eq(&a[0], &b[0]) || !s.eq(&a[2], &b[1]) {
                return Err(oe("matmul-shape", format!("Expected size for first two dimensions of batch2 tensor to be: [{}, {}] but got: [{}, {}].", a[0], a[2], b[0], b[1])));
            }
            Ok(smallvec![a[0].clone(), a[1].clone(), b[2].clone()])
        }
        "mv" => {
            if a.len() != 2 || b.len() != 1 {
                let message = if it.m.mode == Mode::Analysis {
                    format!("matrix @ vector expected, got {}, {}", a.len(), b.len())
                } else {
                    format!(
                        "vector + matrix @ vector expected, got 1, {}, {}",
                        a.len(),
                        b.len()
                    )
                };
                return Err(oe("other", message));
            }
            if !s.eq(&a[1], &b[0]) {
                return Err(oe(
                    "matmul-shape",
                    format!(
                        "size mismatch, got input ({}), mat ({}x{}), vec ({})",
                        a[0], a[0], a[1], b[0]
                    ),
                ));
            }
            Ok(smallvec![a[0].clone()])
        }
        "dot" => {
            if a.len() != 1 || b.len() != 1 {
                return Err(oe(
                    "other",
                    format!(
                        "1D tensors expected, but got {}D and {}D tensors",
                        a.len(),
                        b.len()
                    ),
                ));
            }
            if !s.eq(&a[0], &b[0]) {
                return Err(oe("other", format!("inconsistent tensor size, expected tensor [{}] and src [{}] to have the same number of elements, but got {} and {} elements respectively", a[0], b[0], a[0], b[0])));
            }
            Ok(smallvec![])
        }
        "outer" => {
            // check_1d (LinearAlgebra.cpp).
            for (name, x) in [("self", a), ("vec2", b)] {
                if x.len() != 1 {
                    return Err(oe(
                        "other",
                        format!("outer: Expected 1-D argument {name}, but got {}-D", x.len()),
                    ));
                }
            }
            Ok(smallvec![a[0].clone(), b[0].clone()])
        }
        _ => {
            if (a.is_empty() || b.is_empty()) && it.m.mode == Mode::Analysis {
                return Err(oe(
                    "other",
                    "AssertionError: both arguments to matmul need to be at least 1D",
                ));
            }
            if a.is_empty() || b.is_empty() {
                return Err(oe(
                    "matmul-shape",
                    format!(
                        "both arguments to matmul need to be at least 1D, but they are {}D and {}D",
                        a.len(),
                        b.len()
                    ),
                ));
            }
            match (a.len(), b.len()) {
                (1, 1) => matmul_shape(it, "dot", a, b),
                (2, 1) => matmul_shape(it, "mv", a, b),
                (1, 2) => {
                    if !s.eq(&a[0], &b[0]) {
                        return Err(mismatch(&[SymInt::int(1), a[0].clone()], b));
                    }
                    Ok(smallvec![b[1].clone()])
                }
                (2, 2) => matmul_shape(it, "mm", a, b),
                _ => {
                    let (ar, ac) = if a.len() >= 2 {
                        (Some(a[a.len() - 2].clone()), a[a.len() - 1].clone())
                    } else {
                        (None, a[0].clone())
                    };
                    let (br, bc) = if b.len() >= 2 {
                        (b[b.len() - 2].clone(), Some(b[b.len() - 1].clone()))
                    } else {
                        (b[0].clone(), None)
                    };
                    let ab = &a[..a.len().saturating_sub(2)];
                    let bb = &b[..b.len().saturating_sub(2)];
                    // The analysis's matmul broadcasts the batch dims with
                    // torch.broadcast_shapes, whose words differ; both
                    // broadcast them before bmm compares the inner sizes.
                    let analysis = it.m.mode == Mode::Analysis;
                    let mut out = shape::broadcast_shapes(ab, bb, s).map_err(|e| {
                        if analysis && e.code == "broadcast" {
                            oe("other", "Shape mismatch: objects cannot be broadcast to a single shape.  Mismatch possible at dimension 0")
                        } else {
                            e
                        }
                    })?;
                    if !s.eq(&ac, &br) {
                        let lhs: Dims = a.into();
                        return Err(oe(
                            "matmul-shape",
                            format!("Expected size for first two dimensions of batch2 tensor to be: [{}] but got: [{}]; shapes {} and {} cannot be multiplied", ac, br, show(&lhs), show(b)),
                        ));
                    }
                    if let Some(r) = ar {
                        out.push(r);
                    }
                    if let Some(c) = bc {
                        out.push(c);
                    }
                    Ok(out)
                }
            }
        }
    }
}

/// `at::native::einsum` (Linear.cpp), a CompositeImplicit op, as the ops
/// it calls: each operand's repeated labels become diagonals, missing
/// labels unsqueezed dims, and a permute aligns the dims (output labels
/// first, then the contracted ones); the operands are then contracted left
/// to right (no `opt_einsum` in the oracle's environment) by
/// `sumproduct_pair`: a `mul`, or permute + reshape + `bmm` + `view` +
/// permute, so the result may be a view of the `bmm` (the autograd graph,
/// saved tensors, views and strides are those ops').
/// einsum's sublist format, `einsum(op1, [0, 1], op2, [1, 2], [0, 2])`, as
/// its equation string (labels 0-25 are `a`-`z`, 26-51 `A`-`Z`, `...` an
/// ellipsis) and the operands.
fn einsum_sublists(a: &Args) -> OpResult<(String, Value)> {
    let mut items: Vec<Value> = vec![a.get("equation").clone()];
    match a.get("operands") {
        // einsum(op, sublist): the binding's operands are the sublist.
        v @ Value::List(_)
            if !v
                .sequence()
                .unwrap_or_default()
                .iter()
                .any(|x| matches!(x, Value::Tensor(_))) =>
        {
            items.push(v.clone())
        }
        v => items.extend(v.sequence().unwrap_or_else(|| vec![v.clone()])),
    }
    let labels = |v: &Value| -> OpResult<String> {
        let mut out = String::new();
        for x in v
            .sequence()
            .ok_or_else(|| oe("other", "einsum(): expected a list of subscripts"))?
        {
            match x {
                Value::Ellipsis => out.push_str("..."),
                Value::Int(i) => match i.as_int() {
                    Some(i @ 0..=25) => out.push((b'a' + i as u8) as char),
                    Some(i @ 26..=51) => out.push((b'A' + (i - 26) as u8) as char),
                    _ => return Err(oe("other", "einsum(): subscript in subscript list is not within the valid range [0, 52)")),
                },
                _ => return Err(oe("other", "einsum(): expected subscript to be an int or an ellipsis")),
            }
        }
        Ok(out)
    };
    let mut inputs = Vec::new();
    let mut operands = Vec::new();
    let mut rest = items.as_slice();
    while let [op @ Value::Tensor(_), sub, tail @ ..] = rest {
        operands.push(op.clone());
        inputs.push(labels(sub)?);
        rest = tail;
    }
    let mut eq = inputs.join(",");
    match rest {
        [] => {}
        [out] => {
            eq.push_str("->");
            eq.push_str(&labels(out)?);
        }
        _ => {
            return Err(oe(
                "other",
                "einsum(): expected pairs of an operand and its subscripts",
            ))
        }
    }
    Ok((eq, Value::tuple(operands)))
}

fn einsum(it: &mut Interp, a: &Args, span: Span) -> OpResult<FnOut> {
    const ELLIPSIS: u8 = 52;
    let (eq, operands_value) = match a.get("equation") {
        Value::Str(s) => (s.to_string(), a.get("operands").clone()),
        Value::Tensor(_) => einsum_sublists(a)?,
        _ => {
            return Err(oe(
                "arguments",
                "einsum(): the first argument must be an equation string",
            ))
        }
    };
    let operands: Vec<TensorId> = match &operands_value {
        Value::Tensor(t) => vec![*t],
        v => v
            .sequence()
            .unwrap_or_default()
            .iter()
            .map(|x| {
                if let Value::Tensor(t) = x {
                    Ok(*t)
                } else {
                    Err(oe("arguments", "einsum(): operands must be tensors"))
                }
            })
            .collect::<OpResult<_>>()?,
    };
    if operands.is_empty() {
        return Err(oe("other", "einsum(): must provide at least one operand"));
    }
    let num_ops = operands.len();
    let subscript = |c: u8| -> u8 {
        if c.is_ascii_uppercase() {
            c - b'A'
        } else {
            c - b'a' + 26
        }
    };
    let label_char = |s: u8| -> char {
        if s < 26 {
            (b'A' + s) as char
        } else {
            (b'a' + s - 26) as char
        }
    };
    let bytes = eq.as_bytes();
    let arrow = eq.find("->");
    let lhs = &bytes[..arrow.unwrap_or(bytes.len())];
    // The labels of each operand, ELLIPSIS for `...`.
    let mut op_labels: Vec<Vec<u8>> = vec![Vec::new(); num_ops];
    let mut ell_in_input = false;
    let mut curr = 0usize;
    let mut i = 0usize;
    while i < lhs.len() {
        match lhs[i] {
            b' ' => {}
            b'.' => {
                if ell_in_input {
                    return Err(oe("other", format!("einsum(): found '.' for operand {curr} for which an ellipsis was already found")));
                }
                if !(i + 2 < lhs.len() && lhs[i + 1] == b'.' && lhs[i + 2] == b'.') {
                    return Err(oe("other", format!("einsum(): found '.' for operand {curr} that is not part of any ellipsis")));
                }
                i += 2;
                op_labels[curr].push(ELLIPSIS);
                ell_in_input = true;
            }
            b',' => {
                curr += 1;
                if curr >= num_ops {
                    return Err(oe("other", "einsum(): fewer operands were provided than specified in the equation"));
                }
                ell_in_input = false;
            }
            c if c.is_ascii_alphabetic() => op_labels[curr].push(subscript(c)),
            _ => return Err(oe("other", format!("einsum(): invalid subscript given at index {i} in the equation string, subscripts must be in [a-zA-Z]"))),
        }
        i += 1;
    }
    if curr != num_ops - 1 {
        return Err(oe(
            "other",
            "einsum(): more operands were provided than specified in the equation",
        ));
    }
    let mut label_count = [0usize; 52];
    let mut ell_num_dim = 0usize;
    for (k, (labels, &t)) in op_labels.iter().zip(&operands).enumerate() {
        // at::einsum reads the operands' sizes as Python sees them
        // (stale after set_()); the ops it calls run on the real ones.
        let ndims = it.m.python_geometry(t).sizes().len();
        let has_ellipsis = labels.contains(&ELLIPSIS);
        let nlabels = labels.len() - usize::from(has_ellipsis);
        for &l in labels {
            if l != ELLIPSIS {
                label_count[usize::from(l)] += 1;
            }
        }
        if has_ellipsis && nlabels <= ndims {
            ell_num_dim = ell_num_dim.max(ndims - nlabels);
        }
        let ok = if has_ellipsis {
            nlabels <= ndims
        } else {
            nlabels == ndims
        };
        if !ok {
            return Err(oe(
                "other",
                format!(
                    "einsum(): the number of subscripts in the equation ({nlabels}) {} the number of dimensions ({ndims}) for operand {k}{}",
                    if has_ellipsis { "is more than" } else { "does not match" },
                    if has_ellipsis { "" } else { " and no ellipsis was given" }
                ),
            ));
        }
    }
    // Where each label goes in the aligned shape: the output's dims first.
    let mut label_perm: [Option<usize>; 52] = [None; 52];
    let mut perm_index = 0usize;
    let mut ell_index = 0usize;
    let mut ell_in_output = false;
    match arrow {
        None => {
            perm_index = ell_num_dim;
            ell_in_output = true;
            for l in 0..52 {
                if label_count[l] == 1 {
                    label_perm[l] = Some(perm_index);
                    perm_index += 1;
                }
            }
        }
        Some(at) => {
            let rhs = &bytes[at + 2..];
            let mut i = 0usize;
            while i < rhs.len() {
                match rhs[i] {
                    b' ' => {}
                    b'.' => {
                        if ell_in_output {
                            return Err(oe("other", "einsum(): found '.' for output but an ellipsis (...) was already found"));
                        }
                        if !(i + 2 < rhs.len() && rhs[i + 1] == b'.' && rhs[i + 2] == b'.') {
                            return Err(oe("other", "einsum(): found '.' for output that is not part of any ellipsis (...)"));
                        }
                        i += 2;
                        ell_index = perm_index;
                        perm_index += ell_num_dim;
                        ell_in_output = true;
                    }
                    c if c.is_ascii_alphabetic() => {
                        let l = usize::from(subscript(c));
                        if label_count[l] == 0 || label_perm[l].is_some() {
                            let why = if label_perm[l].is_some() {
                                "appears more than once in the output"
                            } else {
                                "does not appear in the equation for any input operand"
                            };
                            return Err(oe("other", format!("einsum(): output subscript {} {why}", c as char)));
                        }
                        label_perm[l] = Some(perm_index);
                        perm_index += 1;
                    }
                    _ => return Err(oe("other", format!("einsum(): invalid subscript given at index {} in the equation string, subscripts must be in [a-zA-Z]", lhs.len() + 2 + i))),
                }
                i += 1;
            }
        }
    }
    let out_num_dim = perm_index;
    if !ell_in_output {
        ell_index = perm_index;
        perm_index += ell_num_dim;
    }
    for l in 0..52 {
        if label_count[l] > 0 && label_perm[l].is_none() {
            label_perm[l] = Some(perm_index);
            perm_index += 1;
        }
    }
    let call = |it: &mut Interp, name: &str, args: Values| tensor_op(it, name, args, span);
    let int = |v: usize| Value::int(v as i64);
    let ints = |v: &[usize]| Value::tuple(v.iter().map(|&d| Value::int(d as i64)).collect());
    // Align every operand to the permuted shape.
    let mut label_size: Vec<SymInt> = vec![SymInt::int(1); 52];
    let mut ell_sizes: Vec<SymInt> = vec![SymInt::int(1); ell_num_dim];
    let mut dim_counts = vec![0usize; perm_index];
    let mut ops: std::collections::VecDeque<TensorId> = std::collections::VecDeque::new();
    for (k, (labels, &operand)) in op_labels.iter().zip(&operands).enumerate() {
        let mut op = operand;
        let mut permutation: Vec<Option<usize>> = vec![None; perm_index];
        let mut dim = 0usize;
        for &l in labels {
            if l == ELLIPSIS {
                let ndim = it.m.python_geometry(operand).sizes().len() + 1 - labels.len();
                for j in ell_num_dim - ndim..ell_num_dim {
                    let size =
                        it.m.python_geometry(op)
                            .sizes()
                            .get(dim)
                            .cloned()
                            .unwrap_or(SymInt::int(1));
                    if !it.m.sizes.eq_int(&size, 1) {
                        let prev = ell_sizes[j].clone();
                        if !(it.m.sizes.eq_int(&prev, 1) || it.m.sizes.eq(&prev, &size)) {
                            return Err(oe("other", format!("einsum(): dimension {dim} covered by ellipsis in operand {k}has size {size} which does not broadcast with previously seen ellipsis with size {prev} for the respective dimension")));
                        }
                        ell_sizes[j] = size;
                        dim_counts[ell_index + j] += 1;
                    }
                    permutation[ell_index + j] = Some(dim);
                    dim += 1;
                }
                continue;
            }
            let at = label_perm[usize::from(l)].unwrap_or(0);
            match permutation[at] {
                None => {
                    let size =
                        it.m.python_geometry(op)
                            .sizes()
                            .get(dim)
                            .cloned()
                            .unwrap_or(SymInt::int(1));
                    if !it.m.sizes.eq_int(&size, 1) {
                        let prev = label_size[usize::from(l)].clone();
                        if !(it.m.sizes.eq_int(&prev, 1) || it.m.sizes.eq(&prev, &size)) {
                            return Err(oe("other", format!("einsum(): subscript {} has size {size} for operand {k} which does not broadcast with previously seen size {prev}", label_char(l))));
                        }
                        label_size[usize::from(l)] = size;
                        dim_counts[at] += 1;
                    }
                    permutation[at] = Some(dim);
                    dim += 1;
                }
                Some(prev_dim) => {
                    // A repeated label: the diagonal, moved to the first one's place.
                    let sizes = it.m.python_geometry(op).sizes().clone();
                    let (Some(here), Some(first)) = (sizes.get(dim), sizes.get(prev_dim)) else {
                        // The wrapper's rank allowed the label; the diagonal's
                        // input (a real tensor) is smaller.
                        return Err(oe("dim-out-of-range", format!("Dimension out of range (expected to be in range of [-{0}, {1}], but got {dim})", sizes.len(), sizes.len().saturating_sub(1))));
                    };
                    if !it.m.sizes.eq(here, first) {
                        return Err(oe("other", format!("einsum(): subscript {} is repeated for operand {k} but the sizes don't match, {here} != {first}", label_char(l))));
                    }
                    let d = call(
                        it,
                        "diagonal",
                        smallvec::smallvec![Value::Tensor(op), int(0), int(prev_dim), int(dim)],
                    )?;
                    op = call(
                        it,
                        "movedim",
                        smallvec::smallvec![Value::Tensor(d), Value::int(-1), int(prev_dim)],
                    )?;
                }
            }
        }
        let mut perm = Vec::with_capacity(perm_index);
        for p in permutation {
            match p {
                Some(d) => perm.push(d),
                None => {
                    op = call(
                        it,
                        "unsqueeze",
                        smallvec::smallvec![Value::Tensor(op), int(dim)],
                    )?;
                    perm.push(dim);
                    dim += 1;
                }
            }
        }
        ops.push_back(call(
            it,
            "permute",
            smallvec::smallvec![Value::Tensor(op), ints(&perm)],
        )?);
    }
    // Contract left to right.
    while ops.len() > 1 {
        let (Some(mut x), Some(mut y)) = (ops.pop_front(), ops.pop_front()) else {
            break;
        };
        let mut sum_dims = Vec::new();
        let (mut x_sum, mut y_sum) = (Vec::new(), Vec::new());
        for (dim, count) in dim_counts
            .iter_mut()
            .enumerate()
            .take(perm_index)
            .skip(out_num_dim)
        {
            let xs = it.m.t(x).sizes()[dim].clone();
            let ys = it.m.t(y).sizes()[dim].clone();
            let (x1, y1) = (it.m.sizes.eq_int(&xs, 1), it.m.sizes.eq_int(&ys, 1));
            if !x1 && !y1 {
                *count = count.saturating_sub(1);
                if *count == 1 {
                    sum_dims.push(dim);
                    *count = 0;
                }
            } else if *count == 1 {
                if !x1 {
                    x_sum.push(dim);
                    *count = 0;
                } else if !y1 {
                    y_sum.push(dim);
                    *count = 0;
                }
            }
        }
        if !x_sum.is_empty() {
            x = keepdim_sum(it, x, &x_sum, span)?;
        }
        if !y_sum.is_empty() {
            y = keepdim_sum(it, y, &y_sum, span)?;
        }
        ops.push_front(sumproduct_pair(it, x, y, &sum_dims, span)?);
    }
    let mut result = ops.pop_front().unwrap_or(operands[0]);
    if perm_index > out_num_dim {
        if num_ops > 1 {
            let sizes: Vec<Value> = it.m.t(result).sizes()[..out_num_dim]
                .iter()
                .map(|s| Value::Int(s.clone()))
                .collect();
            result = call(
                it,
                "view",
                smallvec::smallvec![Value::Tensor(result), Value::tuple(sizes)],
            )?;
        } else {
            let dims: Vec<usize> = (out_num_dim..perm_index).collect();
            result = call(
                it,
                "sum",
                smallvec::smallvec![Value::Tensor(result), ints(&dims)],
            )?;
        }
    }
    Ok((vec![], Some(Value::Tensor(result))))
}

/// torch._decomp's matmul (what the analysis runs) when an operand's
/// Python sizes are stale after `set_()`: the Python code reads the
/// wrapper's sizes, strides and rank (`python_geometry`), and the ops it
/// calls run on the real ones, so a shape built from stale sizes can fail
/// there (`stale_matmul.tp`). The rare 3-d @ 3-d squeeze shortcut of
/// mismatched batches is not taken.
fn stale_matmul(it: &mut Interp, x: TensorId, y: TensorId, span: Span) -> OpResult<TensorId> {
    let py = |it: &Interp, t: TensorId| it.m.python_geometry(t).sizes().clone();
    let op = |it: &mut Interp, name: &str, args: Values| tensor_op(it, name, args, span);
    let int = |v: i64| Value::int(v);
    let dims = |d: &[SymInt]| Value::tuple(d.iter().map(|s| Value::Int(s.clone())).collect());
    let (px, pyy) = (py(it, x), py(it, y));
    let (d1, d2) = (px.len(), pyy.len());
    if d1 == 0 || d2 == 0 {
        return Err(oe(
            "other",
            "both arguments to matmul need to be at least 1D",
        ));
    }
    match (d1, d2) {
        (1, 1) => return op(it, "dot", smallvec![Value::Tensor(x), Value::Tensor(y)]),
        (2, 1) => return op(it, "mv", smallvec![Value::Tensor(x), Value::Tensor(y)]),
        (1, 2) => {
            let u = op(it, "unsqueeze", smallvec![Value::Tensor(x), int(0)])?;
            let m = op(it, "mm", smallvec![Value::Tensor(u), Value::Tensor(y)])?;
            return op(it, "squeeze", smallvec![Value::Tensor(m), int(0)]);
        }
        (2, 2) => return op(it, "mm", smallvec![Value::Tensor(x), Value::Tensor(y)]),
        _ => {}
    }
    // should_fold reads the wrappers' sizes and strides.
    let mut gx = it.m.t(x).clone();
    gx.set_geometry(it.m.python_geometry(x).clone());
    let mut gy = it.m.t(y).clone();
    gy.set_geometry(it.m.python_geometry(y).clone());
    if matmul_folds(it, &gx, &gy, x, y) {
        let transpose = d2 > d1;
        let t1 = if transpose {
            op(
                it,
                "transpose",
                smallvec![Value::Tensor(y), int(-2), int(-1)],
            )?
        } else {
            x
        };
        let t2 = match (transpose, d1) {
            (false, _) => y,
            (true, 2) => op(it, "t", smallvec![Value::Tensor(x)])?,
            (true, _) => x,
        };
        let sizes_1 = py(it, t1);
        let Some((last, batch)) = sizes_1.split_last() else {
            return Err(oe(
                "other",
                "both arguments to matmul need to be at least 1D",
            ));
        };
        let last = last.clone();
        let mut output_shape: Dims = batch.into();
        let folded = it.m.sizes.prod(&output_shape)?;
        let p2 = py(it, t2);
        let matrix = p2.len() == 2;
        if matrix {
            output_shape.push(p2[1].clone());
        }
        let folded_t1 = stale_reshape(it, t1, smallvec![folded, last], span)?;
        let product = op(
            it,
            if matrix { "mm" } else { "mv" },
            smallvec![Value::Tensor(folded_t1), Value::Tensor(t2)],
        )?;
        let out = unsafe_view(it, product, output_shape, span)?;
        if transpose && matrix {
            let mt = op(
                it,
                "transpose",
                smallvec![Value::Tensor(out), int(-2), int(-1)],
            )?;
            return op(it, "contiguous", smallvec![Value::Tensor(mt)]);
        }
        return Ok(out);
    }
    // The batched path: expand both to the broadcast batch, bmm, view.
    let n = if d1 > 1 {
        px[d1 - 2].clone()
    } else {
        SymInt::int(1)
    };
    let m1 = px[d1 - 1].clone();
    let m2 = if d2 > 1 {
        pyy[d2 - 2].clone()
    } else {
        pyy[d2 - 1].clone()
    };
    let p = if d2 > 1 {
        pyy[d2 - 1].clone()
    } else {
        SymInt::int(1)
    };
    let batch1 = &px[..d1.saturating_sub(2)];
    let batch2 = &pyy[..d2.saturating_sub(2)];
    let batch = shape::broadcast_shapes(batch1, batch2, &mut it.m.sizes).map_err(|_| {
        oe(
            "other",
            "Shape mismatch: objects cannot be broadcast to a single shape",
        )
    })?;
    let product = it.m.sizes.prod(&batch)?;
    let mut e1: Dims = batch.clone();
    e1.extend([n.clone(), m1.clone()]);
    let x1 = op(it, "expand", smallvec![Value::Tensor(x), dims(&e1)])?;
    let x1 = op(
        it,
        "reshape",
        smallvec![Value::Tensor(x1), dims(&[product.clone(), n.clone(), m1])],
    )?;
    let vector = d2 == 1;
    let mut e2: Dims = batch.clone();
    e2.push(m2.clone());
    if !vector {
        e2.push(p.clone());
    }
    let y1 = op(it, "expand", smallvec![Value::Tensor(y), dims(&e2)])?;
    let y1 = if vector {
        let r = op(
            it,
            "reshape",
            smallvec![Value::Tensor(y1), dims(&[product, m2])],
        )?;
        op(it, "unsqueeze", smallvec![Value::Tensor(r), int(2)])?
    } else {
        op(
            it,
            "reshape",
            smallvec![Value::Tensor(y1), dims(&[product, m2, p.clone()])],
        )?
    };
    let mut output_shape = batch;
    if d1 > 1 {
        output_shape.push(n);
    }
    if d2 > 1 {
        output_shape.push(p);
    }
    let mut out = op(it, "bmm", smallvec![Value::Tensor(x1), Value::Tensor(y1)])?;
    if vector {
        out = op(it, "squeeze", smallvec![Value::Tensor(out), int(-1)])?;
    }
    op(
        it,
        "view",
        smallvec![Value::Tensor(out), dims(&output_shape)],
    )
}

/// C++ `reshape_symint` (TensorShape.cpp) on a tensor whose Python sizes
/// `set_()` left stale (`Machine::python_geom`): it runs on the wrapper. A
/// contiguous wrapper takes the fast path, `view(proposed)`, which runs on
/// the value (its element count, its strides, which may refuse). Otherwise
/// the shape is inferred from the wrapper's element count and
/// `computeStride` decides on the wrapper's strides: a `view` of the value
/// again, or a copy of the value `_unsafe_view`ed to the shape
/// (tests/oracle/stale_reshape.tp).
fn stale_reshape(it: &mut Interp, t: TensorId, proposed: Dims, span: Span) -> OpResult<TensorId> {
    let view = |it: &mut Interp, shape: &Dims| {
        let dims = Value::tuple(shape.iter().map(|s| Value::Int(s.clone())).collect());
        tensor_op(it, "view", smallvec![Value::Tensor(t), dims], span)
    };
    let geom = it.m.python_geometry(t).clone();
    let (sizes, strides) = (geom.sizes(), geom.strides());
    let s = &mut it.m.sizes;
    if shape::is_contiguous_as(sizes, strides, MemoryFormat::Contiguous, s) {
        return view(it, &proposed);
    }
    let numel = s.prod(sizes)?;
    let shape = shape::infer_size(&proposed, &numel, s)?;
    if shape::compute_stride(sizes, strides, &shape, s)?.is_some() {
        return view(it, &shape);
    }
    let copy = tensor_op(it, "clone", smallvec![Value::Tensor(t)], span)?;
    unsafe_view(it, copy, shape, span)
}

/// `_unsafe_view`: `view`'s size check, then a fresh tensor (not a view).
fn unsafe_view(it: &mut Interp, t: TensorId, shape: Dims, span: Span) -> OpResult<TensorId> {
    let numel = it.m.numel(t)?;
    let sizes = shape::infer_size(&shape, &numel, &mut it.m.sizes)?;
    let dtype = it.m.t(t).dtype;
    let meta = it.m.contiguous_meta(sizes, dtype)?;
    let out =
        it.m.op_result(meta, "_unsafe_view", &[("self", Some(t))], span)?;
    if it.m.mode == Mode::Analysis {
        let source = it.m.t(t).sizes().clone();
        it.m.unsafe_view_sources.insert(out, source);
    }
    Ok(out)
}

/// `t.sum(dims, keepdim=True)`, as einsum's C++ calls it.
fn keepdim_sum(it: &mut Interp, t: TensorId, dims: &[usize], span: Span) -> OpResult<TensorId> {
    let dims = Value::tuple(dims.iter().map(|&d| Value::int(d as i64)).collect());
    tensor_op(
        it,
        "sum",
        smallvec::smallvec![Value::Tensor(t), dims, Value::Bool(true)],
        span,
    )
}

/// Calls op `name` as a composite op's C++ code does, for its one tensor.
fn tensor_op(it: &mut Interp, name: &str, args: Values, span: Span) -> OpResult<TensorId> {
    match it.call_op(name, args, Vec::new(), span) {
        Ok(Value::Tensor(t)) => Ok(t),
        Ok(_) => Err(oe("other", format!("internal: {name} made no tensor"))),
        Err(d) => Err(OpError::new(d.code, d.message)),
    }
}

/// `sumproduct_pair(left, right, sum_dims, keepdim=true)` of Linear.cpp:
/// `mul` when nothing is summed, else the operands permuted to
/// (both, left only, summed) x (both, summed, right only), reshaped, `bmm`,
/// and the product viewed back and permuted to the operands' dim order.
fn sumproduct_pair(
    it: &mut Interp,
    left: TensorId,
    right: TensorId,
    sum_dims: &[usize],
    span: Span,
) -> OpResult<TensorId> {
    let call = |it: &mut Interp, name: &str, args: Values| tensor_op(it, name, args, span);
    let ints = |v: &[usize]| Value::tuple(v.iter().map(|&d| Value::int(d as i64)).collect());
    if sum_dims.is_empty() {
        return call(
            it,
            "mul",
            smallvec::smallvec![Value::Tensor(left), Value::Tensor(right)],
        );
    }
    let (mut left, mut right) = (left, right);
    let dim = it.m.t(left).sizes().len();
    if dim != it.m.t(right).sizes().len() {
        return Err(oe("other", "number of dimensions must match"));
    }
    let (mut lro, mut lo, mut ro) = (Vec::new(), Vec::new(), Vec::new());
    let (mut lro_size, mut lo_size, mut ro_size, mut sum_size) = (
        SymInt::int(1),
        SymInt::int(1),
        SymInt::int(1),
        SymInt::int(1),
    );
    for i in 0..dim {
        let ls = it.m.t(left).sizes()[i].clone();
        let rs = it.m.t(right).sizes()[i].clone();
        let sl = !it.m.sizes.eq_int(&ls, 1);
        let sr = !it.m.sizes.eq_int(&rs, 1);
        if sum_dims.contains(&i) {
            if sl && sr {
                if !it.m.sizes.eq(&ls, &rs) {
                    return Err(oe("other", "non-broadcast dimensions must match"));
                }
                sum_size = it.m.sizes.mul(&sum_size, &ls)?;
            } else if sl {
                left = keepdim_sum(it, left, &[i], span)?;
            } else if sr {
                right = keepdim_sum(it, right, &[i], span)?;
            }
        } else if sl && sr {
            if !it.m.sizes.eq(&ls, &rs) {
                return Err(oe("other", "non-broadcast dimensions must match"));
            }
            lro.push(i);
            lro_size = it.m.sizes.mul(&lro_size, &ls)?;
        } else if sl {
            lo.push(i);
            lo_size = it.m.sizes.mul(&lo_size, &ls)?;
        } else {
            ro.push(i);
            ro_size = it.m.sizes.mul(&ro_size, &rs)?;
        }
    }
    let mut out_size: Vec<Value> = Vec::new();
    for &d in lro.iter().chain(&lo) {
        out_size.push(Value::Int(it.m.t(left).sizes()[d].clone()));
    }
    out_size.extend(sum_dims.iter().map(|_| Value::int(1)));
    for &d in &ro {
        out_size.push(Value::Int(it.m.t(right).sizes()[d].clone()));
    }
    let lperm: Vec<usize> = lro
        .iter()
        .chain(&lo)
        .chain(sum_dims)
        .chain(&ro)
        .copied()
        .collect();
    let rperm: Vec<usize> = lro
        .iter()
        .chain(sum_dims)
        .chain(&ro)
        .chain(&lo)
        .copied()
        .collect();
    let mut operm = vec![0usize; lperm.len()];
    for (i, &d) in lro.iter().chain(&lo).chain(sum_dims).chain(&ro).enumerate() {
        operm[d] = i;
    }
    // Each operand permuted, then its three groups of dims flattened.
    let grouped = |it: &mut Interp, t: TensorId, perm: &[usize], sizes: [SymInt; 3]| {
        let p = tensor_op(
            it,
            "permute",
            smallvec::smallvec![Value::Tensor(t), ints(perm)],
            span,
        )?;
        let shape = Value::tuple(sizes.into_iter().map(Value::Int).collect());
        tensor_op(
            it,
            "reshape",
            smallvec::smallvec![Value::Tensor(p), shape],
            span,
        )
    };
    let l = grouped(
        it,
        left,
        &lperm,
        [lro_size.clone(), lo_size, sum_size.clone()],
    )?;
    let r = grouped(it, right, &rperm, [lro_size, sum_size, ro_size])?;
    let product = call(
        it,
        "bmm",
        smallvec::smallvec![Value::Tensor(l), Value::Tensor(r)],
    )?;
    let viewed = call(
        it,
        "view",
        smallvec::smallvec![Value::Tensor(product), Value::tuple(out_size)],
    )?;
    call(
        it,
        "permute",
        smallvec::smallvec![Value::Tensor(viewed), ints(&operm)],
    )
}

/// Under the analysis these ops' range checks come from Python meta
/// functions whose messages the oracle's table files under `other`.
fn analysis_wording(it: &Interp, op: &OpDef, e: OpError) -> OpError {
    let reworded = it.m.mode == Mode::Analysis
        && matches!(op.rule, "argmax" | "topk" | "gather" | "scatter")
        && matches!(e.code, "dim-out-of-range" | "index-out-of-range")
        // A Python IndexError keeps its own wording.
        && !e.message.ends_with("index out of range");
    if reworded {
        OpError { code: "other", ..e }
    } else {
        e
    }
}

/// `at::linear` (CompositeImplicit) as the analysis runs it, by its ops: a
/// 2-d input with a bias is `addmm(bias, input, weight.t())`; a contiguous
/// input with a bias, 3-d or with a 1-d bias, is `_flatten_nd_linear`
/// (`addmm` on the flattened input, then a `view` of the product); else
/// `matmul(input, weight.t())`, plus an out-of-place `add` of the bias (a
/// FunctionalTensor bias is "tensor-subclass-like", so no `add_`).
fn analysis_linear(
    it: &mut Interp,
    x: TensorId,
    w: TensorId,
    bias: Option<TensorId>,
    span: Span,
) -> OpResult<Value> {
    let call = |it: &mut Interp, name: &str, args: Values| {
        tensor_op(it, name, args, span).map(Value::Tensor)
    };
    let wt = call(it, "t", smallvec![Value::Tensor(w)])?;
    // C++ reads the sizes Python sees (stale after set_()): the flattening
    // reshape's shape comes from them, and fails on the real ones.
    let xg = it.m.python_geometry(x).clone();
    let xs = xg.sizes();
    let Some(b) = bias else {
        return call(it, "matmul", smallvec![Value::Tensor(x), wt]);
    };
    if xs.len() == 2 {
        return call(
            it,
            "addmm",
            smallvec![Value::Tensor(b), Value::Tensor(x), wt],
        );
    }
    let contiguous = shape::is_contiguous(xs, xg.strides(), &mut it.m.sizes);
    if let (true, Some((last, batch))) = (contiguous, xs.split_last()) {
        if xs.len() == 3 || it.m.t(b).sizes().len() == 1 {
            let flat = it.m.sizes.prod(batch)?;
            let shape = Value::tuple(vec![Value::Int(flat), Value::Int(last.clone())]);
            let input = call(it, "reshape", smallvec![Value::Tensor(x), shape])?;
            let p = tensor_op(it, "addmm", smallvec![Value::Tensor(b), input, wt], span)?;
            let mut sizes: Vec<Value> = batch.iter().map(|s| Value::Int(s.clone())).collect();
            sizes.push(Value::Int(it.m.t(p).sizes()[1].clone()));
            return call(it, "view", smallvec![Value::Tensor(p), Value::tuple(sizes)]);
        }
    }
    let output = call(it, "matmul", smallvec![Value::Tensor(x), wt])?;
    call(it, "add", smallvec![output, Value::Tensor(b)])
}

/// The cases of torch._decomp's matmul (what the analysis runs) whose
/// result is a view of the product, not the product: a 1-d times a 2-d
/// operand is `squeeze(mm(unsqueeze(t1, 0), t2), 0)`, and a fold with the
/// larger operand second ends in `output.mT.contiguous()`, the view itself
/// when the transpose is already contiguous. `None`: the other paths.
#[allow(clippy::too_many_arguments)]
fn analysis_matmul_view(
    it: &mut Interp,
    a: &Args,
    t: &Tensor,
    ot: &Tensor,
    t_id: TensorId,
    o_id: TensorId,
    meta: &Meta,
    span: Span,
) -> OpResult<Option<Value>> {
    let (d1, d2) = (t.sizes().len(), ot.sizes().len());
    let mut view = meta.clone();
    let (product, op) = if d1 == 1 && d2 == 2 {
        let mut sizes = meta.sizes.clone();
        sizes.insert(0, SymInt::int(1));
        (it.m.contiguous_meta(sizes, meta.dtype)?, "squeeze")
    } else if d2 > d1 && d2 >= 3 && d1 == 2 && matmul_folds(it, t, ot, t_id, o_id) {
        // output = (batch..., p, n) contiguous, then output.mT.
        let n = meta.sizes.len();
        let mut sizes = meta.sizes.clone();
        sizes.swap(n - 1, n - 2);
        let product = it.m.contiguous_meta(sizes, meta.dtype)?;
        view.strides = product.strides.clone();
        view.strides.swap(n - 1, n - 2);
        if !shape::is_contiguous(&view.sizes, &view.strides, &mut it.m.sizes) {
            return Ok(None);
        }
        (product, "transpose")
    } else {
        return Ok(None);
    };
    let tmp = it.m.fresh(product, span, "mm");
    record_composite(it, a, &named_inputs(a), "matmul", false, &[tmp], span)?;
    let v = it.m.view_of(tmp, view, op, false, true, span)?;
    if op == "squeeze" {
        record_squeeze_dim0(it, v);
    }
    Ok(Some(Value::Tensor(v)))
}

/// A structured in-place kernel's refusal (eager) of a `self` whose sizes
/// are not the output's (`check_inplace` when the meta sets the output).
fn bad_inplace_call(input: &[SymInt], output: &[SymInt]) -> OpError {
    oe(
        "other",
        format!(
            "Bad in-place call: input tensor size {} and output tensor size {} should match",
            show(input),
            show(output)
        ),
    )
}

/// The `ViewArg` of select view `v` of `base`, given `dim` and `index` as
/// they were given: the dim where the geometries cannot tell it (negative,
/// the next dim alike, or a symbolic stride or offset that hides the
/// index), else a negative index.
fn record_select_args(
    it: &mut Interp,
    base: TensorId,
    v: TensorId,
    dim: Option<i64>,
    index: Option<i64>,
) {
    // (A symbolic stride or offset: the index cannot be read back from
    // the offsets either.)
    let opaque = |d: i64| {
        let t = it.m.t(base);
        t.offset.as_int().is_none()
            || usize::try_from(d)
                .ok()
                .and_then(|d| t.strides().get(d))
                .is_some_and(|s| s.as_int().is_none())
    };
    let given = dim
        .filter(|&d| d < 0 || select_dim_ambiguous(it, base, d) || opaque(d))
        .and_then(|d| i8::try_from(d).ok());
    match (given, index) {
        (Some(d), Some(index)) => {
            it.m.view_args.insert(v, ViewArg::GivenSelect(d, index));
        }
        (_, Some(index)) if index < 0 => {
            it.m.view_args.insert(v, ViewArg::NegativeSelect(index));
        }
        _ => {}
    }
}

/// Whether the geometries cannot tell which dim a select of `base` took:
/// the next dim has the same size and stride (`x.unsqueeze(0)[0]` of a
/// 1-element `x`), and the replay would take that one.
fn select_dim_ambiguous(it: &Interp, base: TensorId, dim: i64) -> bool {
    let t = it.m.t(base);
    let Ok(d) = usize::try_from(dim) else {
        return false;
    };
    d + 1 < t.sizes().len()
        && t.sizes()[d] == t.sizes()[d + 1]
        && t.strides()[d] == t.strides()[d + 1]
}

/// A composite's own `squeeze(0)` of its intermediate (conv2d's
/// unbatched result, matmul's vector-matrix product): the dim it was given,
/// which the geometries do not tell when other dims have size 1.
fn record_squeeze_dim0(it: &mut Interp, v: TensorId) {
    if it.m.mode == Mode::Analysis {
        it.m.view_args.insert(
            v,
            ViewArg::SqueezeDims {
                dims: [0; 8],
                len: 1,
            },
        );
    }
}

/// `record_history` of an op's node (`named`: its inputs), with, in the
/// analysis, the operands a composite (matmul, linear) saves as views it
/// made (`composite_saved_views`).
#[inline]
fn record_composite(
    it: &mut Interp,
    a: &Args,
    named: &[(&'static str, Option<TensorId>)],
    saves: &'static str,
    flattened: bool,
    outs: &[TensorId],
    span: Span,
) -> OpResult<Option<NodeId>> {
    if it.m.mode == Mode::Eager || !matches!(a.op.name, "matmul" | "linear" | "outer") {
        return it.m.record_history(saves, false, named, outs, span);
    }
    let views = composite_saved_views(it, a.op.name, a, flattened);
    record_saving_views(it, views, named, saves, outs, span)
}

/// `record_history` with `Machine::saved_as_views` set to `views` while
/// the node saves its inputs.
fn record_saving_views(
    it: &mut Interp,
    views: smallvec::SmallVec<[TensorId; 2]>,
    named: &[(&'static str, Option<TensorId>)],
    saves: &'static str,
    outs: &[TensorId],
    span: Span,
) -> OpResult<Option<NodeId>> {
    it.m.saved_as_views = views;
    let recorded = it.m.record_history(saves, false, named, outs, span);
    it.m.saved_as_views.clear();
    recorded
}

/// Which operands of `x @ o` (tensors `t` and `ot`) torch._decomp's matmul,
/// the analysis's, takes views of: 1-d @ 2-d unsqueezes `x`; a fold
/// reshapes the batched operand (and transposes a matrix `x` folded
/// against a batched `o`); the batched path expands both.
fn analysis_matmul_viewed(
    it: &mut Interp,
    t: &Tensor,
    ot: &Tensor,
    x: TensorId,
    o: TensorId,
) -> [bool; 2] {
    let (d1, d2) = (t.sizes().len(), ot.sizes().len());
    match (d1, d2) {
        (1, 2) => [true, false],
        (_, 1 | 2) if d1 >= 3 && matmul_folds(it, t, ot, x, o) => [true, false],
        (1 | 2, _) if d2 >= 3 && matmul_folds(it, t, ot, x, o) => [d1 == 2, true],
        _ => [d1 >= 3 || d2 >= 3; 2],
    }
}

/// The analysis: the operands of a composite op (matmul, linear, outer)
/// that its node saves as views the composite made
/// (`Machine::saved_as_views`). Linear saves `weight.t()`, and its input as
/// itself only when 2-d and not flattened (`_flatten_nd_linear`); a 1-d one
/// goes through matmul's unsqueeze; outer saves its `self` reshaped.
/// tests/oracle/inference_composite_saved_views.tp.
fn composite_saved_views(
    it: &mut Interp,
    op: &str,
    a: &Args,
    flattened: bool,
) -> smallvec::SmallVec<[TensorId; 2]> {
    let mut views = smallvec::SmallVec::new();
    let (x, y, x_itself, y_itself) = match op {
        "matmul" => {
            let (Ok(x), Ok(y)) = (a.tensor("self"), a.tensor("other")) else {
                return views;
            };
            let (t, ot) = (it.m.t(x).clone(), it.m.t(y).clone());
            let [xv, yv] = analysis_matmul_viewed(it, &t, &ot, x, y);
            (x, y, !xv, !yv)
        }
        "linear" => {
            let (Ok(x), Ok(w)) = (a.tensor("input"), a.tensor("weight")) else {
                return views;
            };
            (x, w, !flattened && it.m.t(x).sizes().len() == 2, false)
        }
        // `self.reshape({self.size(0), 1}) * vec2`: mul saves the reshape.
        "outer" => {
            let (Ok(x), Ok(v)) = (a.tensor("self"), a.tensor("vec2")) else {
                return views;
            };
            (x, v, false, true)
        }
        _ => return views,
    };
    // (An operand given twice is saved as itself if either is.)
    if x == y && (x_itself || y_itself) {
        return views;
    }
    if !x_itself {
        views.push(x);
    }
    if !y_itself && x != y {
        views.push(y);
    }
    views
}

/// matmul saves its operands as they are only on the dot, mv and mm paths
/// (and the unfolded operand of a folded mm or mv); otherwise what bmm or mm
/// saves is a view of the operand (unsqueeze, reshape, expand), whose node
/// is regenerated on unpack, so an operand detached in place since fails the
/// version check instead (tests/oracle/matmul_saved_views.tp).
fn matmul_saved_views(it: &mut Interp, x: TensorId, y: TensorId, node: NodeId) {
    let (dx, dy) = (it.m.t(x).sizes().len(), it.m.t(y).sizes().len());
    // (1-d @ batched: the batched operand is folded transposed, and the
    // vector goes to mv as it is.)
    let x_itself = matches!((dx, dy), (1, 1) | (2, 1) | (2, 2)) || (dx == 1 && dy >= 3);
    // (A batched operand against a matrix or vector is folded; the other
    // goes to mm or mv as it is.)
    let y_itself = dy <= 2;
    if x_itself && y_itself {
        return;
    }
    for k in 0..it.m.nodes[node].saved.len() {
        let t = it.m.nodes[node].saved[k].tensor;
        // (`x @ x` saves one tensor twice: as itself only if both are.)
        let kept = match (t == x, t == y) {
            (true, true) => x_itself && y_itself,
            (true, false) => x_itself,
            (false, true) => y_itself,
            (false, false) => true,
        };
        if !kept {
            it.m.nodes[node].saved[k].detachable = false;
        }
    }
}

/// Eager's linear saves views of its operands, which keep their own nodes
/// when the operand is detached in place: the weight as `weight.t()`, and
/// the input as its 2-d reshape (`_flatten_nd_linear`, `flattened`) or as
/// matmul's fold of an input of 3 or more dims; only a 1-d or 2-d input
/// is saved as itself.
fn linear_saved_views(it: &mut Interp, a: &Args, node: NodeId, flattened: bool) {
    let (Ok(x), Ok(w)) = (a.tensor("input"), a.tensor("weight")) else {
        return;
    };
    let x_itself = !flattened && it.m.t(x).sizes().len() <= 2 && x != w;
    for s in it.m.nodes[node].saved.iter_mut() {
        if s.tensor == w || (s.tensor == x && !x_itself) {
            s.detachable = false;
        }
    }
}

/// torch._decomp's `should_fold` (the analysis runs that Python matmul):
/// an operand of 3 or more dims times one of at most 2 is folded into one
/// mm/mv when the smaller operand requires grad, or when the larger one
/// (as it is, not transposed) is contiguous, size-1 dims skipped.
fn matmul_folds(it: &mut Interp, a: &Tensor, b: &Tensor, a_id: TensorId, b_id: TensorId) -> bool {
    let (t1, t1_id, t2, t2_id) = if a.sizes().len() >= b.sizes().len() {
        (a, a_id, b, b_id)
    } else {
        (b, b_id, a, a_id)
    };
    if !(t1.sizes().len() >= 3 && t2.sizes().len() <= 2) {
        return false;
    }
    if it.m.requires_grad(t2_id) {
        return true;
    }
    if a.sizes().len() == 2 {
        return false;
    }
    let Ok(numel) = it.m.sizes.prod(t1.sizes()) else {
        return false;
    };
    if it.m.sizes.eq_int(&numel, 0) {
        return true;
    }
    // torch/_decomp's should_fold reads `t1.stride()`: the Python
    // wrapper's strides, which an in-place data write does not update
    // (`Machine::replace_value`).
    let strides = it.m.python_geometry(t1_id).strides().clone();
    if strides.len() != t1.sizes().len() {
        return false;
    }
    let mut expected = SymInt::int(1);
    for d in (0..t1.sizes().len()).rev() {
        let size = t1.sizes()[d].clone();
        if !it.m.sizes.eq_int(&size, 1) && !it.m.sizes.eq(&strides[d], &expected) {
            return false;
        }
        match expected.mul(&size) {
            Ok(e) => expected = e,
            Err(_) => return false,
        }
    }
    true
}

fn conv2d(it: &mut Interp, a: &Args, span: Span) -> OpResult<FnOut> {
    let x = a.tensor("input")?;
    let w = a.tensor("weight")?;
    let (xt, wt) = (it.m.t(x).clone(), it.m.t(w).clone());
    // at::conv2d (CompositeImplicit) reads the input's dims as Python sees
    // them (stale after set_()).
    let rank_error = |sizes: &[SymInt]| {
        oe("other", format!("Expected 3D (unbatched) or 4D (batched) input to conv2d, but got input of size: {}", show(sizes)))
    };
    let seen = it.m.python_geometry(x).sizes().clone();
    if !(seen.len() == 3 || seen.len() == 4) {
        return Err(rank_error(&seen));
    }
    // The input's sizes as the convolution gets them: as they are when
    // batched, else unsqueezed at 0 (batchify).
    let with_batch = |batched: bool| -> Dims {
        if batched {
            xt.sizes().clone()
        } else {
            std::iter::once(SymInt::int(1))
                .chain(xt.sizes().iter().cloned())
                .collect()
        }
    };
    let wdim = wt.sizes().len();
    if seen.len() != xt.sizes().len() && wdim == 4 {
        // It batches (unsqueeze(0)) the real input by the rank Python
        // sees; _convolution then checks the real rank against the weight's.
        let given = with_batch(seen.len() == 4);
        if given.len() != 4 {
            return Err(oe("other", format!("Expected 4-dimensional input for 4-dimensional weight {}, but got {}-dimensional input of size {} instead", show(wt.sizes()), given.len(), show(&given))));
        }
    }
    let batched = xt.sizes().len() == 4;
    if !(xt.sizes().len() == 3 || batched) {
        return Err(rank_error(xt.sizes()));
    }
    if wdim != 4 && matches!(a.get("padding"), Value::Str(p) if &**p == "same") {
        // _convolution_mode checks the ranks before anything else.
        let batched_sizes = with_batch(batched);
        let message = if wdim <= 2 {
            "weight should have at least three dimensions".to_string()
        } else {
            format!("Expected {wdim}-dimensional input for {wdim}-dimensional weight{}, but got 4-dimensional input of size {} instead", show(wt.sizes()), show(&batched_sizes))
        };
        return Err(oe("other", message));
    }
    if wdim != 4 {
        // With fewer weight dims, the analysis's conv meta indexes past the
        // weight's sizes (an IndexError); for a 3-d weight fake_impls skips
        // the backend checks and meta_conv first compares the channels.
        // Eager checks the stride's length against weight.dim() - 2.
        let nd = wdim.saturating_sub(2);
        let channels_differ = it.m.mode == Mode::Analysis && wdim == 3 && {
            let cin = &xt.sizes()[usize::from(batched)];
            let groups = a.int(it, "groups").unwrap_or(1);
            it.m.sizes
                .mul(&wt.sizes()[1], &SymInt::int(groups))
                .is_ok_and(|e| !it.m.sizes.eq(cin, &e))
        };
        return Err(match it.m.mode {
            Mode::Analysis if channels_differ => oe("other", "Invalid channel dimensions"),
            Mode::Analysis if wdim < 4 => oe("index-out-of-range", "tuple index out of range"),
            _ => oe("other", format!("expected stride to be a single integer value or a list of {nd} values to match the convolution dimensions")),
        }
        .help("conv2d's weight is (out_channels, in_channels / groups, kH, kW)"));
    }
    // An int or a pair of them (aten's `SymInt[2]`).
    let sym_pair = |name: &str| -> OpResult<[SymInt; 2]> {
        match a.get(name) {
            Value::Int(i) => Ok([i.clone(), i.clone()]),
            v => {
                let s = to_syms(v).ok_or_else(|| {
                    oe(
                        "arguments",
                        format!("conv2d: `{name}` must be an int or a pair"),
                    )
                })?;
                match s.as_slice() {
                    [p] => Ok([p.clone(), p.clone()]),
                    [p, q] => Ok([p.clone(), q.clone()]),
                    _ => Err(oe("other", format!("conv2d: expected `{name}` to be a single integer value or a list of 2 values"))),
                }
            }
        }
    };
    // Stride and dilation are read as ints (guarded to their hints);
    // padding stays symbolic.
    let mut pair = |name: &str| -> OpResult<[i64; 2]> {
        let [p, q] = sym_pair(name)?;
        Ok([
            it.m.sizes.concrete(&p, name)?,
            it.m.sizes.concrete(&q, name)?,
        ])
    };
    let (stride, dilation) = (pair("stride")?, pair("dilation")?);

    // _convolution_mode (Convolution.cpp): 'valid' is no padding; 'same'
    // pads dilation * (kernel - 1) in all, for stride 1 only (below). The
    // convolution's padding, and what constant_pad_nd adds to the input
    // first (`input_extra`).
    let (padding, input_extra) = match a.get("padding") {
        Value::Str(mode) => match &**mode {
            "valid" => (
                [SymInt::int(0), SymInt::int(0)],
                [SymInt::int(0), SymInt::int(0)],
            ),
            "same" => {
                if stride.iter().any(|&s| s != 1) {
                    return Err(oe(
                        "other",
                        "padding='same' is not supported for strided convolutions",
                    ));
                }
                // _convolution_mode, on SymInts: left = total / 2, right
                // the rest. All symmetric: padding left. Otherwise each dim
                // pads the input by right - left (constant_pad_nd; trimming
                // when it is not positive, and then padding right), and the
                // convolution pads by left (or right). The comparisons are
                // guards; the sizes stay symbolic.
                let mut lr = Vec::with_capacity(2);
                let mut symmetric = true;
                for (k, &d) in wt.sizes()[2..].iter().zip(&dilation) {
                    let s = &mut it.m.sizes;
                    let total = s.mul(&SymInt::int(d), &s.sub(k, &SymInt::int(1))?)?;
                    let left = s.floordiv(&total, &SymInt::int(2))?;
                    let right = s.sub(&total, &left)?;
                    symmetric &= s.eq(&left, &right);
                    lr.push((left, right));
                }
                let mut p = [SymInt::int(0), SymInt::int(0)];
                let mut extra = [SymInt::int(0), SymInt::int(0)];
                for (i, (left, right)) in lr.into_iter().enumerate() {
                    if symmetric {
                        p[i] = left;
                        continue;
                    }
                    let s = &mut it.m.sizes;
                    let delta = s.sub(&right, &left)?;
                    p[i] = if s.lt_int(&delta, 1) { right } else { left };
                    extra[i] = delta;
                }
                (p, extra)
            }
            other => return Err(oe("other", format!("Invalid padding string: '{other}'"))),
        },
        _ => (sym_pair("padding")?, [SymInt::int(0), SymInt::int(0)]),
    };
    // The input's dtype against the bias's comes first, in both runs.
    let (dx, dw) = (xt.dtype, wt.dtype);
    let bias = a.opt_tensor("bias")?;
    if let Some(b) = bias {
        let db = it.m.t(b).dtype;
        if db != dx {
            return Err(oe(
                "other",
                format!(
                    "Input type ({}) and bias type ({}) should be the same",
                    cpp_type_name(dx),
                    cpp_type_name(db)
                ),
            ));
        }
    }
    // check_shape_forward (Convolution.cpp), in both runs (the analysis's
    // fake convolution asks `_select_conv_backend`, which runs it): the
    // ConvParams, the groups, the channels, the bias, the kernel against
    // the padded input.
    if padding.iter().any(|p| it.m.sizes.lt_int(p, 0)) {
        return Err(oe("other", "negative padding is not supported"));
    }
    if stride.iter().any(|&s| s <= 0) {
        return Err(oe("other", "non-positive stride is not supported"));
    }
    // Eager's kernels also refuse a zero dilation, later.
    if dilation.iter().any(|&d| d < 0) {
        return Err(oe("other", "dilation should be greater than zero"));
    }
    let groups = a.int(it, "groups")?;
    let cout = wt.sizes()[0].clone();
    if groups > 0 && it.m.sizes.lt_int(&cout, groups) {
        return Err(oe("other", format!("Given groups={groups}, expected weight to be at least {groups} at dimension 0, but got weight of size {} instead", show(wt.sizes()))));
    }
    if let Some(c) = cout.as_int() {
        if groups > 0 && c % groups != 0 {
            // (sic: PyTorch's message brackets the sizes twice)
            return Err(oe("other", format!("Given groups={groups}, expected weight to be divisible by {groups} at dimension 0, but got weight of size [{}] instead", show(wt.sizes()))));
        }
    }
    let off = if batched { 1 } else { 0 };
    // The sizes as the convolution sees them: batched, and padded first
    // for an asymmetric 'same'.
    let mut conv_sizes = with_batch(batched);
    for (i, extra) in input_extra.iter().enumerate() {
        conv_sizes[2 + i] = it.m.sizes.add(&conv_sizes[2 + i], extra)?;
    }
    let cin = xt.sizes()[off].clone();
    let expect = it.m.sizes.mul(&wt.sizes()[1], &SymInt::int(groups))?;
    if !it.m.sizes.eq(&cin, &expect) {
        return Err(oe(
            "other",
            format!("Given groups={groups}, weight of size {}, expected input{} to have {} channels, but got {} channels instead", show(wt.sizes()), show(&conv_sizes), expect, cin),
        ));
    }
    if let Some(b) = bias {
        let bs = it.m.t(b).sizes().clone();
        if bs.len() != 1 || !it.m.sizes.eq(&bs[0], &cout) {
            return Err(oe("other", format!("Given weight of size {}, expected bias to be 1-dimensional with {cout} elements, but got bias of size {} instead", show(wt.sizes()), show(&bs))));
        }
    }
    let mut padded_input = Vec::with_capacity(2);
    let mut kernel = Vec::with_capacity(2);
    let mut kernel_fits = true;
    for i in 0..2 {
        let s = &mut it.m.sizes;
        let h = s.add(&conv_sizes[2 + i], &s.mul(&padding[i], &SymInt::int(2))?)?;
        let k = s.add(
            &s.mul(
                &SymInt::int(dilation[i]),
                &s.sub(&wt.sizes()[2 + i], &SymInt::int(1))?,
            )?,
            &SymInt::int(1),
        )?;
        kernel_fits &= !s.lt(&h, &k);
        padded_input.push(h.to_string());
        kernel.push(k.to_string());
    }
    if !kernel_fits {
        return Err(oe(
            "other",
            format!(
                "Calculated padded input size per channel: ({}). Kernel size: ({}). Kernel size can't be greater than actual input size",
                padded_input.join(" x "),
                kernel.join(" x ")
            ),
        ));
    }
    // _select_conv_backend: an empty batch or no channels is the Empty
    // backend; any other input with no elements is refused.
    let empty_backend =
        it.m.sizes.eq_int(&conv_sizes[0], 0) || it.m.sizes.eq_int(&conv_sizes[1], 0);
    if !empty_backend && it.m.sizes.any_zero(&conv_sizes) {
        return Err(oe(
            "other",
            format!(
                "Only zero batch or zero channel inputs are supported, but got input shape: {}",
                show(&conv_sizes)
            ),
        ));
    }
    if it.m.mode == Mode::Eager && dilation.iter().any(|&d| d <= 0) {
        return Err(oe(
            "other",
            format!(
                "dilation should be greater than zero, but got [{}, {}]",
                dilation[0], dilation[1]
            ),
        ));
    }
    // The weight's dtype: eager's kernels.
    if it.m.mode == Mode::Eager && dx != dw {
        return Err(oe("other", format!("Input type (torch.{}Tensor) and weight type (torch.{}Tensor) should be the same or input should be a MKLDNN tensor and weight is a dense tensor", torch_type_name(dx), torch_type_name(dw))));
    }
    let mut sizes = Dims::new();
    if batched {
        sizes.push(xt.sizes()[0].clone());
    }
    // calc_output_size (and meta_conv): an input of no channels gives an
    // output of none.
    if cin.as_int() == Some(0) {
        sizes.push(SymInt::int(0));
    } else {
        sizes.push(wt.sizes()[0].clone());
    }
    for i in 0..2 {
        // meta_conv's `_formula`, on symbolic sizes too:
        // (h + 2 * padding - dilation * (k - 1) - 1) // stride + 1.
        let h = &xt.sizes()[off + 1 + i];
        let k = &wt.sizes()[2 + i];
        let s = &mut it.m.sizes;
        let span_k = s.mul(&SymInt::int(dilation[i]), &s.sub(k, &SymInt::int(1))?)?;
        let padded = s.add(
            &s.add(h, &s.mul(&padding[i], &SymInt::int(2))?)?,
            &s.sub(&input_extra[i], &SymInt::int(1))?,
        )?;
        let o = s.add(
            &s.floordiv(&s.sub(&padded, &span_k)?, &SymInt::int(stride[i].max(1)))?,
            &SymInt::int(1),
        )?;
        if s.lt_int(&o, 1) {
            return Err(oe("other", "Calculated output size is too small"));
        }
        sizes.push(o);
    }
    let fmt = if batched {
        let fx = shape::suggest_memory_format(xt.sizes(), xt.strides(), &mut it.m.sizes);
        let fw = shape::suggest_memory_format(wt.sizes(), wt.strides(), &mut it.m.sizes);
        if fx == MemoryFormat::ChannelsLast || fw == MemoryFormat::ChannelsLast {
            MemoryFormat::ChannelsLast
        } else {
            MemoryFormat::Contiguous
        }
    } else {
        MemoryFormat::Contiguous
    };
    let strides = shape::format_strides(&sizes, fmt, &mut it.m.sizes)?;
    let dtype = autocast_dtype(it, "conv2d").unwrap_or(xt.dtype);
    // 'same' padding that pads the input first (constant_pad_nd): the
    // convolution saves that copy, not the input.
    let saves = if input_extra.iter().any(|e| !e.is_zero()) {
        "conv2d.padded"
    } else {
        "convolution"
    };
    if !batched {
        it.m.check_composite_view(x, "conv2d")?;
        // batchify: the unbatched input is unsqueezed, and the result is
        // `output.squeeze(0)`: a view of an intermediate.
        let mut full = smallvec![SymInt::int(1)];
        full.extend(sizes.iter().cloned());
        let full_meta = it.m.contiguous_meta(full, dtype)?;
        let named = named_inputs(a);
        let tmp = it.m.fresh(full_meta.clone(), span, "convolution");
        // (The convolution saves the unsqueezed input.)
        record_saving_views(it, smallvec![x], &named, saves, &[tmp], span)?;
        let view = Meta {
            sizes: full_meta.sizes[1..].into(),
            strides: full_meta.strides[1..].into(),
            offset: SymInt::int(0),
            dtype,
        };
        let v = it.m.view_of(tmp, view, "squeeze", false, true, span)?;
        record_squeeze_dim0(it, v);
        return Ok((vec![], Some(Value::Tensor(v))));
    }
    let meta = Meta {
        sizes,
        strides,
        offset: SymInt::int(0),
        dtype,
    };
    if saves == "conv2d.padded" {
        let out = it.m.fresh(meta, span, "conv2d");
        it.m.record_history(saves, false, &named_inputs(a), &[out], span)?;
        return Ok((vec![], Some(Value::Tensor(out))));
    }
    Ok((vec![meta], None))
}

/// The memory format a kernel suggests for a tensor: C++'s
/// `suggest_memory_format` in eager, torch._prims_common's in the analysis
/// (its decompositions).
fn suggested(it: &mut Interp, sizes: &[SymInt], strides: &[SymInt]) -> MemoryFormat {
    match it.m.mode {
        Mode::Eager => shape::suggest_memory_format_cpp(sizes, strides, &mut it.m.sizes),
        Mode::Analysis => shape::suggest_memory_format(sizes, strides, &mut it.m.sizes),
    }
}
