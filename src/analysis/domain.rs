//! The abstract domain: what tpi knows about every tensor, storage and autograd
//! node while it interprets a function. Tensors are objects with identity
//! (`TensorId`), as in Python: in-place ops change the object, `y = x` shares it.
//!
//! Three layers are modelled side by side, as PyTorch stacks them:
//! - the tensor's own metadata (sizes, strides, storage offset, dtype);
//! - functionalization: one `FunctionalStorage` per storage with the mutation
//!   counters `run_functionalized_fw_and_collect_metadata` reads;
//! - autograd: requires_grad, grad_fn nodes, differentiable-view bases with their
//!   CreationMeta, version counters and the tensors each node saved.

use crate::sym::{Dims, SymInt};
use crate::syntax::Span;

pub type TensorId = u32;
pub type StorageId = u32;
pub type NodeId = u32;
pub type VersionId = u32;

/// An op's or a node's name: a `&'static str` in one word (a tensor and a
/// node each hold one, and a big program makes millions of both). The
/// name's `&'static str` is kept once per thread and text (`of`).
#[derive(Clone, Copy)]
pub struct OpName(&'static &'static str);

impl OpName {
    pub fn of(name: &'static str) -> OpName {
        thread_local! {
            /// The names last given, one place per address: a run makes
            /// few distinct op names, each many times.
            static RECENT: [std::cell::Cell<Option<OpName>>; 256] =
                const { [const { std::cell::Cell::new(None) }; 256] };
        }
        let key = (name.as_ptr() as usize, name.len());
        let place = (key.0 >> 3 ^ key.1) % 256;
        let recent = RECENT.with(|recent| recent[place].get());
        if let Some(recent) = recent.filter(|r| (r.0.as_ptr() as usize, r.0.len()) == key) {
            return recent;
        }
        let found = Self::interned(name, key);
        RECENT.with(|recent| recent[place].set(Some(found)));
        found
    }

    /// `of`, from the thread's table of every name given so far.
    fn interned(name: &'static str, key: (usize, usize)) -> OpName {
        thread_local! {
            static NAMES: std::cell::RefCell<
                rustc_hash::FxHashMap<(usize, usize), &'static &'static str>,
            > = Default::default();
        }
        NAMES.with(|names| {
            let mut names = names.borrow_mut();
            // Leaked once per thread and distinct static text: a bounded set.
            OpName(
                names
                    .entry(key)
                    .or_insert_with(|| Box::leak(Box::new(name))),
            )
        })
    }

    pub fn as_str(self) -> &'static str {
        self.0
    }
}

impl std::ops::Deref for OpName {
    type Target = str;
    fn deref(&self) -> &str {
        self.0
    }
}

impl PartialEq for OpName {
    fn eq(&self, other: &OpName) -> bool {
        self.0 == other.0
    }
}

impl Eq for OpName {}

impl PartialEq<&str> for OpName {
    fn eq(&self, other: &&str) -> bool {
        *self.0 == *other
    }
}

impl std::fmt::Display for OpName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.0)
    }
}

impl std::fmt::Debug for OpName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(self.0, f)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum DType {
    Bool,
    U8,
    I8,
    I16,
    I32,
    I64,
    F16,
    BF16,
    F32,
    F64,
    C64,
    C128,
}

impl DType {
    /// PyTorch's name without `torch.` (`float32`, `int64`, …).
    pub fn name(self) -> &'static str {
        match self {
            DType::Bool => "bool",
            DType::U8 => "uint8",
            DType::I8 => "int8",
            DType::I16 => "int16",
            DType::I32 => "int32",
            DType::I64 => "int64",
            DType::F16 => "float16",
            DType::BF16 => "bfloat16",
            DType::F32 => "float32",
            DType::F64 => "float64",
            DType::C64 => "complex64",
            DType::C128 => "complex128",
        }
    }

    /// A CPU tensor's type as `Tensor::toString` spells it in autograd's
    /// messages: the legacy Python type where there is one
    /// (`torch.FloatTensor`), the dispatch key's otherwise (`CPUBoolType`).
    pub fn legacy_type_name(self) -> &'static str {
        match self {
            DType::Bool => "CPUBoolType",
            DType::U8 => "torch.ByteTensor",
            DType::I8 => "torch.CharTensor",
            DType::I16 => "torch.ShortTensor",
            DType::I32 => "torch.IntTensor",
            DType::I64 => "torch.LongTensor",
            DType::F16 => "torch.HalfTensor",
            DType::BF16 => "CPUBFloat16Type",
            DType::F32 => "torch.FloatTensor",
            DType::F64 => "torch.DoubleTensor",
            DType::C64 => "CPUComplexFloatType",
            DType::C128 => "CPUComplexDoubleType",
        }
    }

    /// `torch.<attr>` spellings, including PyTorch's aliases.
    pub fn from_attr(attr: &str) -> Option<DType> {
        Some(match attr {
            "bool" => DType::Bool,
            "uint8" => DType::U8,
            "int8" => DType::I8,
            "int16" | "short" => DType::I16,
            "int32" | "int" => DType::I32,
            "int64" | "long" => DType::I64,
            "float16" | "half" => DType::F16,
            "bfloat16" => DType::BF16,
            "float32" | "float" => DType::F32,
            "float64" | "double" => DType::F64,
            "complex64" | "cfloat" => DType::C64,
            "complex128" | "cdouble" => DType::C128,
            _ => return None,
        })
    }

    pub fn itemsize(self) -> i64 {
        match self {
            DType::Bool | DType::U8 | DType::I8 => 1,
            DType::I16 | DType::F16 | DType::BF16 => 2,
            DType::I32 | DType::F32 => 4,
            DType::I64 | DType::F64 | DType::C64 => 8,
            DType::C128 => 16,
        }
    }

    pub fn is_floating(self) -> bool {
        matches!(self, DType::F16 | DType::BF16 | DType::F32 | DType::F64)
    }

    pub fn is_complex(self) -> bool {
        matches!(self, DType::C64 | DType::C128)
    }

    /// Integral, bool included (PyTorch's `isIntegralType(t, includeBool=true)`).
    pub fn is_integral(self) -> bool {
        !self.is_floating() && !self.is_complex()
    }

    /// Can this dtype require gradients (floating point or complex)?
    pub fn can_require_grad(self) -> bool {
        self.is_floating() || self.is_complex()
    }

    /// 0 bool, 1 integral, 2 floating, 3 complex.
    pub fn category(self) -> u8 {
        if self == DType::Bool {
            0
        } else if self.is_complex() {
            3
        } else if self.is_floating() {
            2
        } else {
            1
        }
    }

    /// The complex dtype with this real dtype's precision.
    pub fn to_complex(self) -> DType {
        match self {
            DType::F64 => DType::C128,
            DType::C128 => DType::C128,
            _ => DType::C64,
        }
    }

    /// The real dtype of a complex one.
    pub fn to_real(self) -> DType {
        match self {
            DType::C64 => DType::F32,
            DType::C128 => DType::F64,
            other => other,
        }
    }

    /// PyTorch's `c10::promoteTypes`.
    pub fn promote(a: DType, b: DType) -> DType {
        use DType::*;
        if a == b {
            return a;
        }
        if a.is_complex() || b.is_complex() {
            let wide = matches!(a, C128 | F64) || matches!(b, C128 | F64);
            return if wide { C128 } else { C64 };
        }
        if a.is_floating() || b.is_floating() {
            return match (a.is_floating(), b.is_floating()) {
                (true, false) => a,
                (false, true) => b,
                _ => {
                    if (a == F16 && b == BF16) || (a == BF16 && b == F16) {
                        F32
                    } else {
                        a.max(b)
                    }
                }
            };
        }
        if a == Bool {
            return b;
        }
        if b == Bool {
            return a;
        }
        // Integral: uint8 with a signed type needs the next signed width.
        if a == U8 || b == U8 {
            let other = if a == U8 { b } else { a };
            return if other == I8 { I16 } else { other };
        }
        a.max(b)
    }

    /// `canCast(from, to)`: no float -> integral, no complex -> non-complex,
    /// no non-bool -> bool.
    pub fn can_cast(from: DType, to: DType) -> bool {
        if from.is_complex() && !to.is_complex() {
            return false;
        }
        if from.is_floating() && to.is_integral() {
            return false;
        }
        if from != DType::Bool && to == DType::Bool {
            return false;
        }
        true
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MemoryFormat {
    Contiguous,
    ChannelsLast,
    ChannelsLast3d,
    Preserve,
}

impl MemoryFormat {
    pub fn name(self) -> &'static str {
        match self {
            MemoryFormat::Contiguous => "contiguous_format",
            MemoryFormat::ChannelsLast => "channels_last",
            MemoryFormat::ChannelsLast3d => "channels_last_3d",
            MemoryFormat::Preserve => "preserve_format",
        }
    }
}

/// autograd's CreationMeta of a differentiable view: why an in-place op on it
/// may be forbidden.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CreationMeta {
    Default,
    InCustomFunction,
    MultipleOutputs,
    NoGradMode,
    InferenceMode,
}

/// autograd's view metadata (`DifferentiableViewMeta`): the root base and
/// why the view was made. (The op that made the view, and where, are the
/// view tensor's `origin_op` and `origin`.)
#[derive(Clone, Copy, Debug)]
pub struct ViewInfo {
    pub base: TensorId,
    pub creation_meta: CreationMeta,
}

/// A tensor's sizes and strides, immutable once made.
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct Geometry {
    pub sizes: Dims,
    pub strides: Dims,
}

/// A shared `Geometry`. Almost all tensors of a program have one of a
/// handful of geometries, and a program of a million statements makes
/// millions of tensors: each holds one pointer instead of two shape vectors
/// (80 bytes). An `Arc`, as results cross threads (the eager run runs on one
/// of its own). Equal geometries share one allocation when made through
/// `GeometryTable`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SharedGeometry(std::sync::Arc<Geometry>);

impl SharedGeometry {
    /// A geometry of its own (not interned): for a tensor that is not kept.
    pub fn new(sizes: Dims, strides: Dims) -> SharedGeometry {
        SharedGeometry(std::sync::Arc::new(Geometry { sizes, strides }))
    }

    pub fn sizes(&self) -> &Dims {
        &self.0.sizes
    }

    pub fn strides(&self) -> &Dims {
        &self.0.strides
    }
}

/// The geometries a machine has made, each once: making a tensor looks its
/// geometry up here, so equal geometries share one allocation.
#[derive(Clone, Default)]
pub struct GeometryTable {
    table: hashbrown::HashTable<SharedGeometry>,
    /// The geometry returned last: consecutive tensors often share one, and
    /// a comparison is cheaper than a hash and a probe.
    last: Option<SharedGeometry>,
}

impl std::fmt::Debug for GeometryTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "GeometryTable({} geometries)", self.table.len())
    }
}

/// A few multiply-adds: one word per size or stride (`SymInt::hash_word`).
fn geometry_hash(sizes: &[SymInt], strides: &[SymInt]) -> u64 {
    use std::hash::Hasher;
    let mut h = rustc_hash::FxHasher::default();
    h.write_usize(sizes.len() << 32 | strides.len());
    for s in sizes.iter().chain(strides) {
        h.write_u64(s.hash_word());
    }
    h.finish()
}

/// Slice equality, inlined (most sizes are small integers equal bit for bit).
#[inline]
fn same(a: &[SymInt], b: &[SymInt]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x == y)
}

impl SharedGeometry {
    #[inline]
    fn is(&self, sizes: &[SymInt], strides: &[SymInt]) -> bool {
        same(self.sizes(), sizes) && same(self.strides(), strides)
    }
}

impl GeometryTable {
    /// The shared geometry equal to `sizes` and `strides` (made from them
    /// when new).
    pub fn intern(&mut self, sizes: Dims, strides: Dims) -> SharedGeometry {
        if let Some(last) = &self.last {
            if last.is(&sizes, &strides) {
                return last.clone();
            }
        }
        let hash = geometry_hash(&sizes, &strides);
        let geom = self
            .table
            .entry(
                hash,
                |g| g.is(&sizes, &strides),
                |g| geometry_hash(g.sizes(), g.strides()),
            )
            .or_insert_with(|| SharedGeometry::new(sizes, strides))
            .get()
            .clone();
        self.last = Some(geom.clone());
        geom
    }

    /// How many distinct geometries were made.
    pub fn len(&self) -> usize {
        self.table.len()
    }

    pub fn is_empty(&self) -> bool {
        self.table.is_empty()
    }
}

/// One abstract tensor object.
#[derive(Clone, Debug)]
pub struct Tensor {
    /// Sizes and strides, shared (`sizes()`, `strides()`; `set_geometry`).
    pub(super) geom: SharedGeometry,
    pub offset: SymInt,
    pub dtype: DType,
    /// Functional storage: whose mutation counters this tensor's writes bump.
    pub storage: StorageId,
    /// The storage identity the output classification sees
    /// (`StorageWeakRef(t.untyped_storage())`): the functional storage, except
    /// that `set_()` does not move it and views made after `set_()` get a new one.
    pub alias_key: StorageId,
    /// autograd's version counter, shared by a base, its views and `detach()`es.
    pub version: VersionId,
    /// The tensor's own `requires_grad` flag (leaves; `requires_grad_()`).
    pub requires_grad_flag: bool,
    pub grad_fn: Option<NodeId>,
    /// For a view: the version of the counter when its grad_fn was last set.
    pub attr_version: u32,
    pub view: Option<ViewInfo>,
    /// functionalization's multi-output-view flag (unbind/split/chunk).
    pub multi_output_view: bool,
    /// Made by a view op (functionalization's view of another tensor; `detach` too).
    pub functional_view: bool,
    /// This object is the wrapper of input `i`.
    /// (1 + the index: one word with its `None`; `input()` gives it.)
    pub input_number: Option<std::num::NonZeroU32>,
    /// An input that required grad when the analysis wrapped it: its
    /// FunctionalTensor is not an autograd leaf for the in-place checks.
    pub analysis_input_grad: bool,
    /// Which output of its autograd node this tensor is (for messages).
    pub output_index: u32,
    /// functionalization's `was_storage_changed` (set_).
    pub storage_changed: bool,
    /// functionalization's `has_metadata_mutation_` flag.
    pub metadata_mutated: bool,
    /// Created under inference mode (an inference tensor).
    pub is_inference: bool,
    /// Where this tensor was made, and by which op (for a view: the view op).
    pub origin: Span,
    pub origin_op: OpName,
}

impl Tensor {
    pub fn sizes(&self) -> &Dims {
        self.geom.sizes()
    }

    pub fn strides(&self) -> &Dims {
        self.geom.strides()
    }

    pub fn geometry(&self) -> &SharedGeometry {
        &self.geom
    }

    /// Replaces sizes and strides at once (in-place metadata ops).
    pub fn set_geometry(&mut self, geom: SharedGeometry) {
        self.geom = geom;
    }

    /// The input this object wraps, if any.
    pub fn input(&self) -> Option<usize> {
        self.input_number.map(|n| n.get() as usize - 1)
    }
}

/// A functional storage with functionalization's counters.
#[derive(Clone, Debug, Default)]
pub struct FunctionalStorage {
    pub mutations: u32,
    pub mutations_no_grad: u32,
    /// `set_()` moved a tensor away from this storage: further mutations fail.
    pub frozen: Option<Span>,
    pub resized: bool,
    /// PyTorch's analysis registered this storage's base wrapper while
    /// inference_mode was on (an in-place op on the base there): views of
    /// it and writes through them no longer raise its KeyError.
    pub inference_registered: bool,
    /// Made by a factory function (`torch.zeros`, `torch.tensor`, the
    /// `_like`s; not the `new_*` methods) under inference_mode in the
    /// analysis: FunctionalTensorMode then holds a second reference to the
    /// storage (its use count is 2), so resize_ may not grow it.
    pub factory_in_inference: bool,
    /// Size in bytes when known (for resize_storage_bytes_).
    pub nbytes: Option<SymInt>,
    /// The input that owns it, if any (`input()` as an index; a `u32`,
    /// as a big program makes many storages).
    pub input: Option<u32>,
    /// Spans of the ops that mutated it (provenance).
    /// (A ThinVec: one word in place; most storages are never written.)
    pub mutated_at: thin_vec::ThinVec<Span>,
}

impl FunctionalStorage {
    /// The input that owns it, if any.
    pub fn input(&self) -> Option<usize> {
        self.input.map(|i| i as usize)
    }
}

/// A tensor saved for backward by a node, with the version it had then.
#[derive(Clone, Debug)]
pub struct SavedTensor {
    pub version: VersionId,
    pub saved_version: u32,
    /// `self`, `other`, `result`, …
    pub role: &'static str,
    pub tensor: TensorId,
    /// Saved as the tensor object itself (an input, not an in-place op's
    /// cloned `self` nor an output) while it had history: SavedVariable
    /// then reads its grad_fn when unpacked, and a `detach_()` since
    /// makes that fail.
    pub detachable: bool,
    /// Saved as the tensor object itself, not as an output of its node
    /// (SavedVariable's `saved_original_`): unpacking reads its grad_fn,
    /// which regenerates a stale view's node, and that may raise.
    pub original: bool,
    /// An output's geometry when saved (SavedVariable keeps a shallow copy,
    /// `tensor_data()`, whose sizes a later in-place metadata op leaves
    /// alone); `None` for an original.
    pub geometry: Option<SharedGeometry>,
    /// The analysis: saved as a view a composite made of the tensor
    /// (`Machine::saved_as_views`), a wrapper of its storage besides the
    /// tensor itself.
    pub as_view: bool,
}

/// A node's edges to the nodes of its inputs, in order: most nodes have
/// one or two, kept in place; more go to a `ThinVec` (16 bytes in all,
/// against a `SmallVec`'s 24).
#[derive(Clone, Debug)]
pub struct Edges {
    /// The first two; `Edges::EMPTY` where there are fewer.
    first: [NodeId; 2],
    more: thin_vec::ThinVec<NodeId>,
}

impl Edges {
    const EMPTY: NodeId = NodeId::MAX;

    pub fn iter(&self) -> impl Iterator<Item = &NodeId> + '_ {
        self.first
            .iter()
            .take_while(|&&n| n != Edges::EMPTY)
            .chain(self.more.iter())
    }

    pub fn first(&self) -> Option<&NodeId> {
        self.iter().next()
    }

    pub fn push(&mut self, node: NodeId) {
        match self.first.iter().position(|&n| n == Edges::EMPTY) {
            Some(free) if self.more.is_empty() => self.first[free] = node,
            _ => self.more.push(node),
        }
    }
}

impl FromIterator<NodeId> for Edges {
    fn from_iter<I: IntoIterator<Item = NodeId>>(nodes: I) -> Edges {
        let mut edges = Edges {
            first: [Edges::EMPTY; 2],
            more: thin_vec::ThinVec::new(),
        };
        nodes.into_iter().for_each(|n| edges.push(n));
        edges
    }
}

/// An autograd node (`grad_fn`).
#[derive(Clone, Debug)]
pub struct Node {
    pub name: OpName,
    /// The nodes of the op's inputs (most ops have one or two: in place).
    pub next: Edges,
    /// (A ThinVec: one word in place; most nodes save nothing.)
    pub saved: thin_vec::ThinVec<SavedTensor>,
    /// A custom autograd.Function's node (BackwardCFunction).
    pub custom: bool,
    pub span: Span,
    /// The node reads inference tensors saved for backward.
    pub saves_inference: bool,
    /// Backward through this node raises "derivative for … is not implemented".
    pub not_implemented: Option<NoDerivative>,
    /// A CopySlices node whose view has elements that share memory (a
    /// stride 0 over a size above 1, as `expand` makes): its backward writes
    /// the gradient into that view, which `copy_` refuses.
    pub overlapping_view: bool,
    /// A CopySlices node whose base has elements that share memory: its
    /// backward first copies the gradient into an empty tensor laid out as
    /// the base, which `copy_` refuses before anything else runs.
    pub overlapping_base: bool,
}

/// The ops whose backward PyTorch does not implement (a byte in a `Node`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NoDerivative {
    FloorDivide,
    FloorDivideInplace,
    /// `scatter(..., reduce=...)`: the `scatter.reduce` overloads.
    ScatterReduce,
    ScatterReduceInplace,
    Set,
    /// `leaky_relu_`/`elu_` with a negative slope: their backward, on the
    /// saved result, refuses it (after unpacking the result).
    LeakyReluNegativeSlope,
    EluNegativeAlpha,
    /// `remainder.Scalar_Tensor` (`2 % x`): no derivatives.yaml entry.
    RemainderScalarSelf,
}

impl NoDerivative {
    /// The op as PyTorch's "derivative for NAME is not implemented" spells it.
    pub fn name(self) -> &'static str {
        match self {
            NoDerivative::FloorDivide => "aten::floor_divide",
            NoDerivative::FloorDivideInplace => "aten::floor_divide_",
            NoDerivative::ScatterReduce => "aten::scatter",
            NoDerivative::ScatterReduceInplace => "aten::scatter_",
            NoDerivative::Set => "set_",
            NoDerivative::LeakyReluNegativeSlope => "leaky_relu_",
            NoDerivative::EluNegativeAlpha => "elu_",
            NoDerivative::RemainderScalarSelf => "aten::remainder",
        }
    }

    /// Backward's error message.
    pub fn message(self) -> String {
        const CAUSE: &str = "backward calculation is triggered with a negative slope which is not supported. This is caused by calling in-place forward function with a negative slope, please call out-of-place version instead.";
        match self {
            NoDerivative::LeakyReluNegativeSlope => format!("In-place leakyReLu {CAUSE} File an issue at https://github.com/pytorch/pytorch if you do require supporting in-place leakRelu backward calculation with negative slope"),
            NoDerivative::EluNegativeAlpha => format!("In-place elu {CAUSE}"),
            other => format!("derivative for {} is not implemented", other.name()),
        }
    }

    /// Whether backward unpacks the node's saved tensors before raising.
    pub fn after_unpack(self) -> bool {
        matches!(
            self,
            NoDerivative::LeakyReluNegativeSlope | NoDerivative::EluNegativeAlpha
        )
    }
}

#[cfg(test)]
mod tests {
    /// A big program holds millions of these: their sizes are part of the
    /// memory budget of issue 8 (1M statements in 1 GiB).
    #[test]
    fn sizes() {
        assert_eq!(std::mem::size_of::<super::Tensor>(), 80);
        assert_eq!(std::mem::size_of::<super::SharedGeometry>(), 8);
        assert_eq!(std::mem::size_of::<super::Node>(), 48);
        assert_eq!(std::mem::size_of::<super::FunctionalStorage>(), 48);
    }
}
