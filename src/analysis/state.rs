//! The interpreter's state and the bookkeeping every op shares: making fresh
//! tensors and views with their autograd facts, and recording data and
//! metadata mutations in functionalization's per-storage counters and in
//! autograd's version counters. The checks autograd runs before an in-place op
//! (`check_inplace`, `handle_view_on_rebase`) live here too, because the
//! analysis itself runs under autograd and raises some of them.

use super::arena::Chunked;
use super::domain::*;
use crate::ops::saved::{
    backward_not_implemented, linear_saved, lookup, matmul_saved, Exactness, Geom, OpSaves, Saved,
};
use crate::ops::shape::{self, OpError, OpResult, Sizes};
use crate::sym::{Dims, SymInt};
use crate::syntax::Span;

/// Which run this is: PyTorch's metadata analysis (FunctionalTensorMode over
/// fake tensors, inputs wrapped) or plain eager PyTorch on real tensors.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    Analysis,
    Eager,
}

/// An autocast state per device.
#[derive(Clone, Debug, PartialEq)]
pub struct Autocast {
    pub device: String,
    pub enabled: bool,
    pub dtype: DType,
}

#[derive(Clone, Debug)]
pub struct Machine {
    pub mode: Mode,
    pub tensors: Chunked<Tensor, TensorId>,
    pub storages: Chunked<FunctionalStorage, StorageId>,
    /// autograd version counters.
    pub versions: Chunked<u32, VersionId>,
    /// Where each version counter was last bumped.
    pub version_spans: Chunked<Option<Span>, VersionId>,
    pub nodes: Chunked<Node, NodeId>,
    pub sizes: Sizes,
    /// Each geometry tensors have, once (`Tensor::geometry`).
    pub geoms: GeometryTable,
    pub grad_enabled: bool,
    pub inference_mode: bool,
    /// The op being applied got a Python number for a Tensor parameter
    /// (`c * 2`, `c.add_(1)`): PyTorch wraps it in a tensor made in the
    /// current mode, which has autograd's dispatch keys outside
    /// inference_mode even when every tensor operand is an inference
    /// tensor (`apply` sets it for the op's extent).
    pub wrapped_number: bool,
    pub autocast: Vec<Autocast>,
    /// Effect tokens discovered (`torch.ops.aten._print`).
    pub tokens: u32,
    /// What the run did: for the report, and for the one answer that depends
    /// on history, the strides of a tensor after its last write (which view
    /// chain the write went through).
    pub provenance: super::meta::Provenance,
    /// The values of integer tensors made by `torch.tensor([...])` from
    /// literal ints, with their version counter's value then: eager kernels
    /// that check index values (`index_select`) read them while the tensor
    /// is unwritten.
    pub literals: rustc_hash::FxHashMap<TensorId, (u32, std::rc::Rc<[i64]>)>,
    /// Eager: boolean masks made by comparing an integer tensor with a
    /// number (`x > 2`): the tensor, the comparison, the number, and the
    /// tensor's and the mask's versions then. A masked_fill_ of that tensor
    /// by its own mask, both unwritten since, fills exactly the values the
    /// comparison holds for (`values`).
    pub compare_masks: rustc_hash::FxHashMap<TensorId, (TensorId, &'static str, i64, [u32; 2])>,
    /// Eager: the values small integer storages may hold (`values`).
    pub int_values: rustc_hash::FxHashMap<StorageId, super::values::StorageValues>,
    /// The next view is the output of a view op the program called itself
    /// whose autograd kernel (ADInplaceOrView) shares the base's version
    /// counter with it (`Interp::dispatched_view`; set under the analysis in
    /// inference_mode only).
    pub view_entry: bool,
    /// The analysis's Python-visible sizes and strides, where they differ
    /// from the kernels': FunctionalTensorMode updates its wrapper after
    /// in-place view ops but not after `set_()` or a write that replaced the
    /// value's strides (`replace_value`). So `x.shape`, `x.dim()` and the
    /// outputs' `dynamic_dims` keep the sizes from before a `set_`, while the
    /// kernels see the new ones (tests/random/REPORT.md, class 3), and
    /// `reshape`/`contiguous()` decide between a view and a copy on the
    /// strides from before the write.
    pub python_geom: rustc_hash::FxHashMap<TensorId, SharedGeometry>,
    /// The analysis's tensors whose Python wrapper's storage is not their
    /// value's: `set_()` swaps the FunctionalTensorWrapper's storage but not
    /// the wrapper subclass's, which keeps the one it was made with (what
    /// the in-place `as_strided_` on the wrapper is checked against), and
    /// its storage offset.
    pub python_storage: rustc_hash::FxHashMap<TensorId, (StorageId, SymInt)>,
    /// The analysis's tensors `set_()` gave another's value and view metas
    /// (FunctionalTensorWrapper::set__impl): the source, and how many
    /// tensors existed then (views made before keep the old metas).
    pub set_sources: rustc_hash::FxHashMap<TensorId, (TensorId, usize)>,
    /// The analysis's tensors `set_()` onto a tensor that is a view to
    /// functionalization (`functional_view_like`): set__impl gave them its
    /// view metas, so they are views too.
    pub set_onto_views: rustc_hash::FxHashSet<TensorId>,
    /// Whether inference_mode was ever entered (so inference tensors may
    /// exist): the checks only they need are skipped until then.
    pub made_inference: bool,
    /// The analysis's tensors whose value is still a view of an input's
    /// own value (FunctionalTensorWrapper's `value_`, neither replaced by a
    /// write nor regenerated by a sync since): that input's storage, and
    /// the storage's mutation count the value is current with. A set_()
    /// onto such a value keeps the input's storage for has_metadata_mutation
    /// (tests/oracle/set_to_unsynced_view.tp).
    pub fresh_values: rustc_hash::FxHashMap<TensorId, (StorageId, u32)>,
    /// Tensors whose in-place metadata op came before a set_(): set__impl
    /// leaves FunctionalTensorWrapper's has_metadata_mutation_ flag, so
    /// has_metadata_mutation still compares their sizes, strides and offset
    /// with the input's (tests/oracle/set_keeps_metadata_flag.tp).
    pub metadata_flag_kept: rustc_hash::FxHashSet<TensorId>,
    /// The analysis's tensors whose value a write left out of date
    /// (FunctionalTensorWrapper's generation behind its storage's): the
    /// value `sync` gives them, regenerated from the storage's new base by
    /// replaying their view ops, or the error that replay raises. A write
    /// syncs only the tensor written; a view op uses its input's value as
    /// it is (and its result is out of date too); any other op, and the
    /// outputs at the end, sync their tensors first (`Machine::sync`).
    /// Empty unless a write changed a layout.
    pub pending_values: rustc_hash::FxHashMap<TensorId, Result<SharedGeometry, OpError>>,
    /// `replace_value`'s views regenerated with their own in-place metadata
    /// ops replayed: the sizes and strides before each op, then the value.
    /// A view made before those ops is replayed from the value of then,
    /// which undoing them cannot give (a `squeeze_` drops its size-1 dims'
    /// strides). Valid while the tensor's value is the last one.
    replayed_steps: rustc_hash::FxHashMap<TensorId, Vec<(Dims, Dims)>>,
    /// Eager: the sizes a tensor's grad_fn expects for its gradient (its
    /// input metadata), where an in-place metadata op that recorded no
    /// history (under no_grad or inference_mode) changed the tensor's own.
    pub grad_sizes: rustc_hash::FxHashMap<TensorId, Dims>,
    /// The analysis: the operands the op being recorded saves as views its
    /// composite made of them (matmul's unsqueeze or fold, linear's
    /// `weight.t()`, an unbatched conv2d's unsqueeze). Each view is a new
    /// functional wrapper, a normal tensor outside inference_mode, which
    /// may be saved where its inference operand may not.
    pub saved_as_views: smallvec::SmallVec<[TensorId; 2]>,
    /// The analysis: the operands of the matmul being run that had a
    /// pending value (`pending_values`) when it began, with the geometry
    /// their wrapper had before the op synced them: the composite's views
    /// are taken of that (`apply::functional`'s batched matmul).
    pub unsynced_operands: smallvec::SmallVec<[(TensorId, SharedGeometry); 2]>,
    /// Eager: the nodes whose backward concatenates gradients of a
    /// lower-precision floating dtype (split's `cat`, unbind's `stack`, roll's):
    /// CPU autocast left enabled by the function runs that under its
    /// `promote` policy, which may refuse the dtype.
    pub concat_backward: Vec<(NodeId, DType)>,
    /// Eager: nodes whose backward returns a gradient the next node refuses
    /// (the engine's `validate_outputs`): the input's index, the gradient's
    /// sizes (the input's when the op ran) and the sizes expected.
    pub bad_grads: rustc_hash::FxHashMap<NodeId, (usize, Dims, Dims)>,
    /// Eager: CopySlices nodes whose view reaches past the storage that
    /// backward makes for their base's gradient (a view resize_()d larger
    /// before it was written): its `as_strided` refuses (setStorage).
    pub copy_slices_overruns: rustc_hash::FxHashMap<NodeId, OpError>,
    /// Eager: nodes whose own backward computation refuses the gradient
    /// it gets (ConstantPadNdBackward0's negated pads). Few.
    pub backward_errors: rustc_hash::FxHashMap<NodeId, OpError>,
    /// Eager: the leaves that require grad whose AccumulateGrad node exists
    /// (a recorded op took one as input); it keeps the leaf's sizes of then.
    pub accumulators: rustc_hash::FxHashSet<TensorId>,
    /// Eager: the nodes with an edge to a leaf's AccumulateGrad, by node
    /// (a node keeps it alive; `accumulator_alive`), and the leaves of the
    /// node about to be made (`note_accumulator`, taken by `add_node`).
    pub accumulator_edges: rustc_hash::FxHashMap<NodeId, smallvec::SmallVec<[TensorId; 1]>>,
    pending_accumulator_edges: smallvec::SmallVec<[TensorId; 2]>,
    /// Eager: leaves that `set_()` under no_grad gave other sizes. set_
    /// resets the leaf's cached accumulator, but the nodes made before keep
    /// the old one, which accumulates into the leaf as it is at backward:
    /// per reset, the first node made after it and the sizes before it.
    pub reset_accumulators:
        rustc_hash::FxHashMap<TensorId, smallvec::SmallVec<[(NodeId, Dims); 1]>>,
    /// Views made of a base whose metadata had changed in place: their view
    /// chain includes that change (functionalization copies the base's view
    /// metas when it makes a view). Few: such bases are rare.
    pub made_after_metadata_change: rustc_hash::FxHashSet<TensorId>,
    /// How many symbols guards had specialised when a tensor's value was
    /// last made (a new tensor or view, an in-place metadata change), and
    /// when a storage was last written (every alias of it is remade at its
    /// next sync): sizes a specialisation made integers before then are
    /// plain ints in PyTorch, no longer symbolic (`has_static_sizes`).
    /// Kept only once a guard has specialised a symbol.
    pub made_at_replacements: rustc_hash::FxHashMap<TensorId, u32>,
    pub written_at_replacements: rustc_hash::FxHashMap<StorageId, u32>,
    /// The analysis's in-place metadata changes, by tensor, in order: its
    /// geometry before, how many tensors existed then (the ones made
    /// before it were made on the old geometry), and the op's view rule.
    /// Read when a view's node is regenerated (`replay_on_changed_base`)
    /// and when a write goes back through the view (`replace_value`). Few:
    /// such changes are rare.
    pub metadata_changes: rustc_hash::FxHashMap<TensorId, Vec<MetadataChange>>,
    /// The analysis's tensors whose value a write re-laid out (new strides,
    /// `replace_value` and `sync`), by tensor, in order: how many tensors
    /// existed then and the geometry before. Functionalization identifies a
    /// view's step by the geometries its view op made (`layout_when_made`),
    /// not by the strides a later write gave. Few: most writes keep the
    /// layout.
    pub relaid: rustc_hash::FxHashMap<TensorId, smallvec::SmallVec<[(usize, SharedGeometry); 1]>>,
    /// The arguments of views that autograd's view replay needs and their
    /// geometries do not tell (`replay_on_changed_base`): a view has one
    /// op, so at most one. Analysis only.
    pub view_args: rustc_hash::FxHashMap<TensorId, ViewArg>,
    /// Pieces of a `split` or `split_with_sizes` of a symbolic size, with
    /// the dim and the piece's end as the view meta computes it
    /// (`split_size * (idx + 1)`, or the sum of the sizes up to the piece):
    /// each write through the piece runs the inverse, which decides
    /// `end > dim_size` on the base (`split_Tensor_inverse`). Analysis only.
    pub split_ends: rustc_hash::FxHashMap<TensorId, (u8, SymInt)>,
    /// Eager: the strides c10's `SizesAndStrides` keeps in its inline slots
    /// past a tensor's rank (up to 5) after an in-place metadata change
    /// lowered it: shrinking keeps them, growing zeroes the new slots first.
    /// AccumulateGrad's `obeys_layout_contract` reads them for a gradient of
    /// more dims (`stride_slot`). Few.
    pub stale_stride_slots: rustc_hash::FxHashMap<TensorId, [SymInt; INLINE_DIMS]>,
    /// Tensors whose resize grew their functional storage in the analysis
    /// (`FunctionalTensorWrapper::maybe_replace_storage` for resize_): such
    /// a wrapper is a base again for inference_mode's lookups
    /// (`check_inference_mutation`). Few.
    pub grown_by_resize: rustc_hash::FxHashSet<TensorId>,
    /// The Python wrappers' storages (`Tensor::alias_key`) that a resize
    /// grew in the analysis: FunctionalTensorMode reruns resize_ and
    /// resize_as_ (inplace_view ops) on the wrapper subclass, whose grown
    /// storage is on the meta device, so a view of any tensor whose wrapper
    /// shares it fails (`check_grown_view`). Few.
    pub grown_outer: rustc_hash::FxHashSet<StorageId>,
    /// The byte sizes of those wrapper storages where they differ from
    /// their functional storage's (`FunctionalStorage::nbytes`): a resize
    /// of a tensor `set_()` moved grows the functional storage it joined
    /// and the wrapper storage it kept. Few.
    pub outer_nbytes: rustc_hash::FxHashMap<StorageId, i64>,
    /// The byte sizes FunctionalStorageImpl records, where they differ from
    /// the fake storage's: a resize_as_ that grew the storage (a data
    /// mutation to functionalization) left it, and a later resize_ compares
    /// with it. Few.
    pub functional_nbytes: rustc_hash::FxHashMap<StorageId, i64>,
    /// Tensors an in-place view op (`t_`, `unsqueeze_`, `as_strided_`…)
    /// changed in the analysis: functionalization records it as a view
    /// meta (`mutate_view_meta`), so the wrapper counts as a view, which a
    /// growing `resize_()` refuses. A `resize_()` that fits the storage is
    /// such a view op too. Few.
    pub viewed_in_place: rustc_hash::FxHashSet<TensorId>,
    /// Tensors whose last view meta is a `resize_()` that fit the storage
    /// (`as_strided(size, contiguous_strides(size))`), with its sizes: its
    /// inverse, `as_strided_scatter`, takes only a value of those sizes.
    pub resize_views: rustc_hash::FxHashMap<TensorId, Dims>,
    /// Bases whose value a `resize_as_` replaced (a data mutation with a
    /// value of the template's sizes): how many tensors existed then and
    /// the value's elements. A later resize_ that fits the wrapper's
    /// storage is a view meta whose inverse scatters into that smaller
    /// value (`check_resize_view_bound`). Analysis only; few.
    pub resized_as_values: rustc_hash::FxHashMap<TensorId, (usize, i64)>,
    /// While `__setitem__` runs its index_put_ (which it has checked).
    pub setitem_index_put: bool,
    /// How many unbacked sizes the analysis made (`unbacked_size`).
    pub unbacked: u32,
    /// The window size and step of each `unfold` view (analysis only; few).
    pub unfold_windows: rustc_hash::FxHashMap<TensorId, (i64, i64)>,
    /// The tensor each `_unsafe_view` result was made from (analysis only):
    /// functionalization keeps them aliased (`_unsafe_view_functionalize`),
    /// so a `resize_as_` of the result goes back through a view inverse.
    pub unsafe_view_sources: rustc_hash::FxHashMap<TensorId, Dims>,
    /// Complex tensors with the lazy conjugate bit (`.H`, `.mH`) and their
    /// views: view_as_real refuses them.
    pub conj: rustc_hash::FxHashSet<TensorId>,
    /// Inference tensors that have a version counter all the same: eager's
    /// `detach()` of one outside inference_mode (shallow_copy_and_detach
    /// with a fresh counter) can be written in place, though it is still
    /// an inference tensor (not saveable, its views not writable;
    /// tests/oracle/inference_detach.tp).
    pub versioned_inference: rustc_hash::FxHashSet<TensorId>,
    /// Nodes of in-place ops that made an integer tensor require grad:
    /// the gradient backward hands that tensor trips the engine's
    /// isDifferentiableType assert.
    pub integer_grad_nodes: rustc_hash::FxHashSet<NodeId>,
    /// Eager: nodes of a reduction to a complex dtype of a real input
    /// (`x.sum(dtype=torch.complex64)`): the complex gradient they hand the
    /// real input fails the engine's validate_outputs.
    pub complex_grad_nodes: rustc_hash::FxHashSet<NodeId>,
    /// The tensors the running function's variables hold, taken just
    /// before a `resize_()` call: another view of the storage among them
    /// keeps the functional storage shared, and a growing resize fails.
    pub bound_tensors: Vec<TensorId>,
    /// Set by an in-place op around `mutate_data`: inference_mode's failing
    /// lookup (`check_inference_mutation`) is kept in `deferred_lookup`
    /// and raised after the write's own sync, whose view inverses fail
    /// first (the lookup fails when FunctionalTensorMode wraps the result).
    pub defer_lookup: bool,
    pub deferred_lookup: Option<OpError>,
}

/// A view op's argument its geometry does not tell (`Machine::view_args`).
#[derive(Clone, Copy, Debug)]
pub enum ViewArg {
    /// The dim of `x[..., :, ...]`'s open slice, or of a slice or narrow,
    /// that keeps the whole dim (`slice(d, 0, sys.maxsize)`).
    FullSliceDim(u8),
    /// A negative `select` index (or `x[i]`): replayed as given, it wraps
    /// on the new size.
    NegativeSelect(i64),
    /// A `select` given a negative dim: the dim and index as given, both
    /// wrapped again on the new base.
    GivenSelect(i8, i64),
    /// The dim a `view` was given -1 for: inferred again from the new numel.
    InferredViewDim(u8),
    /// The dims, as given, of a transpose of two alike dims (same size and
    /// stride), of a dim with itself, or given a negative dim.
    TransposeDims(i8, i8),
    /// The dim, as given, of an `unsqueeze` that is negative
    /// or next to an alike size-1 dim: replayed, it wraps on the new rank.
    GivenDim(i8),
    /// A `squeeze()` without dims: its replay takes no dim to check.
    SqueezeAll,
    /// The dims, as given, of a `squeeze(d)` or `squeeze((d, …))` (up to
    /// 8): replayed, each wraps on the new rank, a dim the squeeze kept
    /// (not of size 1) too.
    SqueezeDims { dims: [i8; 8], len: u8 },
    /// A `permute` of a base with dims alike (same size and stride): the
    /// permutation, wrapped.
    Permutation(shape::Perm),
    /// A `permute` given a negative dim (up to 8 dims): the dims as given,
    /// which its replay wraps on the new rank before it compares the
    /// permutation's length with it (torch._refs.permute).
    GivenPermutation { dims: [i8; 8], len: u8 },
    /// The dims (bits, from the left) an `expand` was given as -1: replayed,
    /// they keep the new base's size.
    ExpandKeep(u64),
    /// A slice that does not keep its whole dim, as SliceViewFunc keeps it:
    /// the dim, start and end as given (an open end is `i64::MAX`), step.
    Slice {
        dim: u8,
        start: i64,
        end: i64,
        step: i64,
    },
}

/// An in-place metadata change of one tensor (`Machine::metadata_changes`).
#[derive(Clone, Debug)]
pub struct MetadataChange {
    /// The tensor's geometry and storage offset before the change.
    pub before: SharedGeometry,
    pub offset: SymInt,
    /// How many tensors existed then: the ones made before it were made on
    /// the old geometry.
    pub made: usize,
    /// How many times a write had re-laid the tensor's value then
    /// (`relaid`): orders the two kinds of change between the same tensors.
    pub relays: usize,
    /// The op's view rule.
    pub rule: &'static str,
    /// The geometry the change gave (`mutate_metadata`): a later write
    /// gives the tensor new strides, which no longer tell the op's dims.
    pub after: Option<SharedGeometry>,
    /// The dims an in-place transpose was given, which its geometries do
    /// not tell when they are alike (`transpose_(1, 1)`); unsqueeze_'s dim
    /// (twice), as given: its inverse wraps it on another rank.
    pub dims: Option<(i64, i64)>,
    /// A `resize_()` that fit its storage: functionalization's view meta
    /// `as_strided(sizes, contiguous strides)` (`resize__ViewMeta`), whose
    /// replay ignores the strides it is replayed on.
    pub fitted_resize: bool,
}

/// What `mutate_data` reads of the tensor it writes.
struct MutatedTensor {
    storage: StorageId,
    version: VersionId,
    view: Option<ViewInfo>,
}

/// Metadata of a tensor to be made.
#[derive(Clone, Debug)]
pub struct Meta {
    pub sizes: Dims,
    pub strides: Dims,
    pub offset: SymInt,
    pub dtype: DType,
}

impl Machine {
    pub fn new(mode: Mode) -> Machine {
        Machine {
            mode,
            tensors: Chunked::new(),
            storages: Chunked::new(),
            versions: Chunked::new(),
            version_spans: Chunked::new(),
            nodes: Chunked::new(),
            sizes: Sizes::default(),
            geoms: GeometryTable::default(),
            grad_enabled: true,
            inference_mode: false,
            wrapped_number: false,
            autocast: vec![
                Autocast {
                    device: "cpu".into(),
                    enabled: false,
                    dtype: DType::BF16,
                },
                Autocast {
                    device: "cuda".into(),
                    enabled: false,
                    dtype: DType::F16,
                },
            ],
            tokens: 0,
            provenance: Default::default(),
            literals: Default::default(),
            compare_masks: Default::default(),
            int_values: Default::default(),
            view_entry: false,
            python_geom: Default::default(),
            python_storage: Default::default(),
            set_sources: Default::default(),
            set_onto_views: Default::default(),
            made_inference: false,
            fresh_values: Default::default(),
            metadata_flag_kept: Default::default(),
            pending_values: Default::default(),
            replayed_steps: Default::default(),
            grad_sizes: Default::default(),
            saved_as_views: Default::default(),
            unsynced_operands: Default::default(),
            concat_backward: Vec::new(),
            bad_grads: Default::default(),
            copy_slices_overruns: Default::default(),
            backward_errors: Default::default(),
            accumulators: Default::default(),
            accumulator_edges: Default::default(),
            pending_accumulator_edges: Default::default(),
            reset_accumulators: Default::default(),
            made_after_metadata_change: Default::default(),
            made_at_replacements: Default::default(),
            written_at_replacements: Default::default(),
            metadata_changes: Default::default(),
            relaid: Default::default(),
            view_args: Default::default(),
            split_ends: Default::default(),
            stale_stride_slots: Default::default(),
            grown_by_resize: Default::default(),
            grown_outer: Default::default(),
            outer_nbytes: Default::default(),
            functional_nbytes: Default::default(),
            viewed_in_place: Default::default(),
            resize_views: Default::default(),
            resized_as_values: Default::default(),
            setitem_index_put: false,
            unbacked: 0,
            unfold_windows: Default::default(),
            unsafe_view_sources: Default::default(),
            conj: Default::default(),
            versioned_inference: Default::default(),
            integer_grad_nodes: Default::default(),
            complex_grad_nodes: Default::default(),
            bound_tensors: Vec::new(),
            defer_lookup: false,
            deferred_lookup: None,
        }
    }

    /// Prepares for a big run: the arenas start with whole chunks.
    pub fn reserve_big(&mut self) {
        self.tensors.reserve_first_chunk();
        self.storages.reserve_first_chunk();
        self.versions.reserve_first_chunk();
        self.version_spans.reserve_first_chunk();
        self.nodes.reserve_first_chunk();
    }

    pub fn t(&self, id: TensorId) -> &Tensor {
        &self.tensors[id]
    }

    /// autograd's `requires_grad()`: own flag, a grad_fn, or (for a view) the base's.
    pub fn requires_grad(&self, id: TensorId) -> bool {
        let t = &self.tensors[id];
        t.requires_grad_flag
            || t.grad_fn.is_some()
            || t.view.as_ref().is_some_and(|v| self.requires_grad(v.base))
    }

    /// Does `id` give its op a valid gradient edge (a grad_fn, or a leaf's
    /// grad accumulator)? A view made under no_grad of a base that
    /// requires grad requires grad itself but has neither until an
    /// in-place op regenerates its history.
    pub fn has_grad_edge(&self, id: TensorId) -> bool {
        let t = &self.tensors[id];
        self.requires_grad(id) && (t.grad_fn.is_some() || t.view.is_none() || t.requires_grad_flag)
    }

    /// `is_leaf`: no grad_fn (after view grad_fn regeneration).
    pub fn is_leaf(&mut self, id: TensorId) -> OpResult<bool> {
        Ok(self.grad_fn(id)?.is_none())
    }

    /// The literal values of tensor `id` (`literals`), unless it was
    /// written in place since it was made.
    pub fn literal_values(&self, id: TensorId) -> Option<std::rc::Rc<[i64]>> {
        // The analysis records only fake-tensor constants (`constant_value`):
        // its kernels' index checks do not read values.
        if self.mode == Mode::Analysis {
            return None;
        }
        self.known_values(id)
    }

    /// Records `values` as `id`'s (`literals`) as of its version now.
    pub fn record_literal(&mut self, id: TensorId, values: std::rc::Rc<[i64]>) {
        let version = self.versions[self.tensors[id].version];
        self.literals.insert(id, (version, values));
    }

    /// The values tpi knows of `id` in either run (`literals`): a mask's
    /// too, unless written since.
    pub fn known_values(&self, id: TensorId) -> Option<std::rc::Rc<[i64]>> {
        let (version, values) = self.literals.get(&id)?;
        (self.versions[self.tensors[id].version] == *version).then(|| values.clone())
    }

    /// The value of a one-element tensor whose value tpi knows: in the
    /// analysis, a FakeTensor constant (a `torch.tensor` literal), which
    /// `item()` reads; in eager, any literal.
    pub fn constant_value(&self, id: TensorId) -> Option<i64> {
        match *self.known_values(id)? {
            [v] => Some(v),
            _ => None,
        }
    }

    /// C++'s `tensor.is_leaf()` (`check_inplace`, `requires_grad_`): reads
    /// the stored grad_fn without regenerating it, so a view made while its
    /// base did not require grad, or under no_grad, counts as a leaf until
    /// something regenerates its grad_fn.
    pub fn stored_is_leaf(&self, id: TensorId) -> bool {
        let t = &self.tensors[id];
        !(self.mode == Mode::Analysis && t.analysis_input_grad) && t.grad_fn.is_none()
    }

    /// A view whose base or sibling was written since its node was made:
    /// reading its grad_fn regenerates it (and may refuse).
    #[inline]
    pub fn is_stale_view(&self, id: TensorId) -> bool {
        let t = &self.tensors[id];
        t.view.is_some() && t.attr_version != self.versions[t.version]
    }

    /// What an autograd kernel's `collect_next_edges` does to input `id`
    /// before the kernel below checks any argument: a stale view's grad_fn
    /// is regenerated, which may refuse (a multi-output view written in
    /// place).
    pub fn collect_stale_edge(&mut self, id: TensorId) -> OpResult<()> {
        if self.is_stale_view(id)
            && self.grad_enabled
            && !self.inference_mode
            && self.requires_grad(id)
        {
            self.grad_fn(id)?;
        }
        Ok(())
    }

    /// `grad_fn`, regenerating a view's node when its version moved on (as
    /// `VariableHooks::grad_fn` does). Regenerating the node of a view whose
    /// CreationMeta forbids it raises (`handle_view_on_rebase`, indirect).
    pub fn grad_fn(&mut self, id: TensorId) -> OpResult<Option<NodeId>> {
        let (view, current) = {
            let t = &self.tensors[id];
            (t.view, self.versions[t.version])
        };
        let Some(view) = view else {
            return Ok(self.tensors[id].grad_fn);
        };
        let t = &self.tensors[id];
        if t.grad_fn.is_none() && !self.requires_grad(view.base) {
            return Ok(None);
        }
        if t.attr_version != current {
            if view.creation_meta != CreationMeta::Default {
                // handle_view_on_rebase: a view without a grad_fn (made
                // where nothing required grad) is worded as one created in
                // no_grad mode, whatever its CreationMeta.
                let head = match t.grad_fn {
                    Some(n) => format!(
                        "Output {} of {} is a view and its base or another view of its base has been modified inplace.",
                        t.output_index, self.nodes[n].name
                    ),
                    None => "A view was created in no_grad mode and its base or another view of its base has been modified inplace with grad mode enabled.".to_string(),
                };
                let msg = match view.creation_meta {
                    CreationMeta::MultipleOutputs => format!("{head} This view is the output of a function that returns multiple views. Such functions do not allow the output views to be modified inplace. You should replace the inplace operation by an out-of-place one."),
                    CreationMeta::NoGradMode => "A view was created in no_grad mode and its base or another view of its base has been modified inplace with grad mode enabled. Given that this use case is ambiguous and error-prone, it is forbidden. You can clarify your code by moving both the view and the inplace either both inside the no_grad block (if you don't want the inplace to be tracked) or both outside (if you want the inplace to be tracked).".to_string(),
                    CreationMeta::InferenceMode => "A view was created in inference mode and its base or another view of its base has been modified inplace in normal mode.".to_string(),
                    _ => format!("{head} This view was created inside a custom Function (or because an input was returned as-is) and the autograd logic to handle view+inplace would override the custom backward associated with the custom Function, leading to incorrect gradients. This behavior is forbidden. You can fix this by cloning the output of the custom Function."),
                };
                return Err(OpError::new("inplace-view-other", msg)
                    .help("make the views after the in-place op, or clone them first"));
            }
            // The analysis's views (of FunctionalTensors, a Python
            // subclass) regenerate their node by replaying the view on the
            // base (`view_fn`), which may refuse the base's new shape
            // first (tests/oracle/view_replay_before_new_fn_assert.tp);
            // eager's run their view_fn when they have one.
            self.regenerate_view_node(id, view.base)?;
            if !self.requires_grad(view.base)
                && (self.mode == Mode::Analysis || self.has_view_fn(id))
            {
                // A base that no longer requires grad (detach_) gives the
                // replayed view no node, and autograd asserts one
                // (update_tensor_hooks_on_new_gradfn). Eager replays only a
                // view with a view_fn (a dtype view on its chain); others
                // get an AsStridedBackward0 node
                // (tests/oracle/eager_view_fn_detached_base.tp).
                return Err(OpError::new(
                    "other",
                    "new_fn INTERNAL ASSERT FAILED at \"/pytorch/torch/csrc/autograd/variable.cpp\":199, please report a bug to PyTorch.",
                )
                .help("this view's base stopped requiring grad (`detach_()`) and was then written: take the view after the detach_, or detach it too"));
            }
            let base_fn = self.grad_fn(view.base)?;
            let node = self.add_node("AsStridedBackward0", base_fn, Span::default());
            // Eager's node is as_strided of the base as it is now: a base
            // whose sizes changed without history (an in-place metadata op
            // under no_grad) gets a gradient its own node refuses. Only a
            // base that still requires grad is an edge the engine validates
            // (after detach_() the node has no valid next edge).
            if self.mode == Mode::Eager
                && !self.grad_sizes.is_empty()
                && self.requires_grad(view.base)
            {
                self.check_grad_sizes(node, 0, view.base);
            }
            let t = &mut self.tensors[id];
            t.grad_fn = Some(node);
            t.attr_version = current;
        }
        Ok(self.tensors[id].grad_fn)
    }

    /// What regenerating the node of view `id` of `base` runs (a stale
    /// view's `grad_fn`, and the end of rebase_history): the analysis
    /// replays the view ops on the base; eager runs the view's view_fn,
    /// when it has one (`view_fn_bounds`).
    pub fn regenerate_view_node(&mut self, id: TensorId, base: TensorId) -> OpResult<()> {
        if self.mode == Mode::Analysis
            && (!self.metadata_changes.is_empty() || !self.relaid.is_empty())
        {
            self.replay_on_changed_base(id, base)?;
        }
        self.view_fn_bounds(id, base)
    }

    /// Whether eager regenerates the node of view `id` with a view_fn (a
    /// view op that changes the dtype, view_as_real or view_as_complex, in
    /// its chain from its base) rather than `as_strided` of its geometry
    /// now: the node then expects a gradient of the sizes its view ops
    /// made, whatever in-place metadata ops did since without history.
    pub fn has_view_fn(&self, id: TensorId) -> bool {
        self.tensors[id]
            .view
            .is_some_and(|v| self.dtype_view_on_chain(id, v.base).is_some())
    }

    /// The first view op that changes the dtype (view_as_real,
    /// view_as_complex) on the chain from `base` down to view `id`, as
    /// (its result, its input): what gives `id` a view_fn.
    fn dtype_view_on_chain(&self, id: TensorId, base: TensorId) -> Option<(TensorId, TensorId)> {
        let parents = self.view_parents(id);
        let top = parents.iter().position(|&(_, p)| p == base)?;
        parents[..=top]
            .iter()
            .rev()
            .find(|&&(c, _)| {
                matches!(
                    self.tensors[c].origin_op.as_str(),
                    "view_as_real" | "view_as_complex"
                )
            })
            .copied()
    }

    /// Eager's regeneration of the node of view `id` of `base` when the view
    /// has a view_fn: one made by a view op that changes the dtype
    /// (view_as_real, view_as_complex) from a view of `base`. Its view_fn
    /// starts with `base.as_strided(...)` of that view's geometry (as it
    /// was when the dtype view was made), which setStorage checks against
    /// the base's storage as it is now: a storage `set_()` swapped for a
    /// smaller one refuses (ViewInfo::chain, VariableHooks::grad_fn). A
    /// view without a view_fn only records an AsStridedBackward0 node.
    fn view_fn_bounds(&self, id: TensorId, base: TensorId) -> OpResult<()> {
        if self.mode != Mode::Eager {
            return Ok(());
        }
        let Some((child, parent)) = self.dtype_view_on_chain(id, base) else {
            return Ok(());
        };
        if parent == base {
            // (The view_fn is the op itself, on the base.)
            return Ok(());
        }
        let (geom, offset) = self.geometry_when_made(parent, child);
        let itemsize = self.tensors[parent].dtype.itemsize();
        let need = extent(geom.sizes(), geom.strides(), &offset).map(|e| e * itemsize);
        let storage = &self.storages[self.tensors[base].storage];
        let have = storage.nbytes.as_ref().and_then(SymInt::as_int);
        match (need, have) {
            (Some(need), Some(have)) if need > have => Err(set_storage_error(
                geom.sizes(),
                geom.strides(),
                &offset,
                itemsize,
                need,
                have,
            )),
            _ => Ok(()),
        }
    }

    /// The analysis's views (of FunctionalTensors) regenerate their node by
    /// replaying their view ops (`view_fn`) on their base as it is now. When
    /// an in-place metadata op (`t_`, `unsqueeze_`, `swapdims_`…) changed
    /// the base after the view was made, the ops meant for the old geometry
    /// run on the new one and may fail: a permutation of the old rank, an
    /// expand to sizes that no longer fit, a view the new strides cannot
    /// give. The ops are read back from the geometries (tpi keeps no
    /// arguments): permute/movedim, t, expand and the view family are
    /// replayed; the chain stops, as passing, at any other op whose input
    /// changed.
    fn replay_on_changed_base(&mut self, id: TensorId, base: TensorId) -> OpResult<()> {
        let parents = self.view_parents(id);
        let Some(top) = parents.iter().position(|&(_, p)| p == base) else {
            return Ok(());
        };
        let chain = &parents[..=top];
        // Nothing in the chain changed: every view replays as it was made.
        // A tensor of the chain that a write re-laid out (`relaid`) gave
        // the views made of it since its new strides, where the replay
        // starts from the base's wrapper as it is now: synced or not, that
        // may give another layout (tests/oracle/view_fn_replay_relaid.tp).
        let changed =
            |t: &TensorId| self.metadata_changes.contains_key(t) || self.relaid.contains_key(t);
        if !changed(&base) && !chain.iter().any(|(c, _)| changed(c)) {
            return Ok(());
        }
        self.replay_view_ops(id, base, None)
    }

    /// After `resize_as_` gave the root `base` a value of another shape (a
    /// data mutation to functionalization), each of its views replays its
    /// view ops on that value when next synced: one that no longer applies
    /// (a select of a now 0-d base) fails then (`pending_values`).
    /// Analysis only.
    /// Called before `base` takes the new geometry `new`.
    pub fn pend_views_of_resized(&mut self, base: TensorId, new: &SharedGeometry) {
        let storage = self.tensors[base].storage;
        for i in base as usize + 1..self.tensors.len() {
            let id = i as TensorId;
            let t = &self.tensors[id];
            if t.storage != storage || !t.functional_view {
                continue;
            }
            if let Err(e) = self.replay_view_ops(id, base, Some(new)) {
                self.pending_values.insert(id, Err(e));
            }
        }
    }

    /// `replay_on_changed_base`'s replay of the view ops from `base` (as it
    /// is now, or with geometry `new`) down to `id`.
    fn replay_view_ops(
        &mut self,
        id: TensorId,
        base: TensorId,
        new: Option<&SharedGeometry>,
    ) -> OpResult<()> {
        let parents = self.view_parents(id);
        let Some(top) = parents.iter().position(|&(_, p)| p == base) else {
            return Ok(());
        };
        let chain = &parents[..=top];
        let new = new.unwrap_or_else(|| self.tensors[base].geometry());
        let (mut sizes, mut strides) = (new.sizes().clone(), new.strides().clone());
        for &(child, parent) in chain.iter().rev() {
            // The parent as it was when the child was made, and the child
            // as its view op made it: autograd's view_fn is the chain of
            // view ops alone, not the in-place metadata ops that came after.
            let c = &self.tensors[child];
            if c.metadata_mutated && !self.metadata_changes.contains_key(&child) {
                return Ok(());
            }
            let (old, old_offset) = self.geometry_when_made(parent, child);
            let (made, c_offset) = self.geometry_when_made(child, child);
            let (old_sizes, old_strides) = (old.sizes(), old.strides());
            let (c_sizes, c_strides) = (made.sizes().clone(), made.strides().clone());
            let op = c.origin_op.as_str();
            // The dims a dim-taking view op was given, read back from the
            // geometries: replayed on the new rank, one out of range fails
            // as maybe_wrap_dim does.
            // What the view's op was given, where its geometry does not tell.
            let arg = self.view_args.get(&child).copied();
            let dim_args = match arg {
                // The dim as given, wrapped on the new rank (one more for
                // unsqueeze), or none at all.
                Some(ViewArg::GivenDim(d)) => {
                    let rank = sizes.len() + usize::from(op == "unsqueeze");
                    let d = shape::wrap_dim(d as i64, rank).map_err(|e| e.help(REPLAY_HELP))?;
                    Some((smallvec::smallvec![d], rank))
                }
                Some(ViewArg::SqueezeAll) => None,
                Some(ViewArg::SqueezeDims { dims, len }) => {
                    let rank = sizes.len();
                    let mut wrapped = smallvec::SmallVec::new();
                    for &d in &dims[..usize::from(len)] {
                        wrapped.push(
                            shape::wrap_dim(d as i64, rank).map_err(|e| e.help(REPLAY_HELP))?,
                        );
                    }
                    Some((wrapped, rank))
                }
                Some(ViewArg::TransposeDims(d0, d1)) => {
                    let rank = sizes.len();
                    let wrap =
                        |d: i8| shape::wrap_dim(d as i64, rank).map_err(|e| e.help(REPLAY_HELP));
                    Some((smallvec::smallvec![wrap(d0)?, wrap(d1)?], rank))
                }
                Some(ViewArg::GivenSelect(d, _)) if !sizes.is_empty() => {
                    let rank = sizes.len();
                    let d = shape::wrap_dim(d as i64, rank).map_err(|e| e.help(REPLAY_HELP))?;
                    Some((smallvec::smallvec![d], rank))
                }
                // (aten::slice refuses a 0-d tensor before it wraps the
                // dim: below.)
                Some(ViewArg::Slice { .. }) if sizes.is_empty() => None,
                Some(ViewArg::Slice { dim, .. }) => {
                    let rank = sizes.len();
                    let d = shape::wrap_dim(dim as i64, rank).map_err(|e| e.help(REPLAY_HELP))?;
                    Some((smallvec::smallvec![d], rank))
                }
                _ => view_dim_args(
                    op,
                    old_sizes,
                    old_strides,
                    &c_sizes,
                    &c_strides,
                    sizes.len(),
                ),
            };
            if let Some((dims, rank)) = &dim_args {
                for &d in dims {
                    shape::wrap_dim(d as i64, *rank).map_err(|e| e.help(REPLAY_HELP))?;
                }
            }
            let full_slice = match (op, &dim_args) {
                ("slice" | "narrow", None) => match arg {
                    Some(ViewArg::FullSliceDim(d)) => Some(d),
                    _ => None,
                },
                _ => None,
            };
            if let Some(d) = full_slice.filter(|_| !sizes.is_empty()) {
                shape::wrap_dim(d as i64, sizes.len()).map_err(|e| e.help(REPLAY_HELP))?;
            }
            let replayed = match op {
                // The base lost its dims since (`set_`, `resize_`...); narrow
                // is a slice to autograd.
                "slice" | "narrow" if sizes.is_empty() => {
                    return Err(OpError::new(
                        "other",
                        "slice() cannot be applied to a 0-dim tensor.",
                    )
                    .help(REPLAY_HELP));
                }
                // slice(d, 0, sys.maxsize) keeps every dim as it is.
                "slice" | "narrow" if full_slice.is_some() => (sizes.clone(), strides.clone()),
                "slice" | "narrow" => {
                    // slice_symint's clamping of the start and end given.
                    let Some(ViewArg::Slice {
                        dim,
                        start,
                        end,
                        step,
                    }) = arg
                    else {
                        return Ok(());
                    };
                    let d = dim as usize;
                    let Some(size) = sizes.get(d).cloned() else {
                        return Ok(());
                    };
                    let (mut ps, mut pt) = (sizes.clone(), strides.clone());
                    if let Some(size) = size.as_int() {
                        let wrap = |i: i64| if i < 0 { i.saturating_add(size) } else { i };
                        let lo = wrap(start).clamp(0, size);
                        let hi = wrap(end).clamp(lo, size);
                        ps[d] = SymInt::int((hi - lo + step - 1) / step);
                    } else {
                        // A symbolic size (a transpose_ moved one there):
                        // slice_symint's clamping, decided as its guards are.
                        let s = &mut self.sizes;
                        let mut clamp = |i: i64, floor: &SymInt| -> OpResult<SymInt> {
                            let mut v = SymInt::int(i);
                            if i < 0 {
                                v = s.add(&v, &size)?;
                            }
                            if s.lt(&v, floor) {
                                v = floor.clone();
                            } else if s.lt(&size, &v) {
                                v = size.clone();
                            }
                            Ok(v)
                        };
                        let lo = clamp(start, &SymInt::int(0))?;
                        // (An open end, sys.maxsize, is the size with no
                        // guard: statically_known_true in slice_forward.)
                        let hi = if end == i64::MAX {
                            size.clone()
                        } else {
                            clamp(end, &lo)?
                        };
                        let len = s.sub(&hi, &lo)?;
                        ps[d] = if step == 1 {
                            len
                        } else {
                            s.floordiv(&s.add(&len, &SymInt::int(step - 1))?, &SymInt::int(step))?
                        };
                    }
                    pt[d] = self.sizes.mul(&strides[d], &SymInt::int(step))?;
                    (ps, pt)
                }
                // alias: the base as it is.
                "alias" => (sizes.clone(), strides.clone()),
                // unbind's view meta is `unbind(base, dim)[i]`: refused on
                // a base that lost its dims, else a select.
                "unbind" if sizes.is_empty() => {
                    return Err(super::apply::no_dims_error(0).help(REPLAY_HELP));
                }
                "select" | "unbind" => match dim_args {
                    Some((dims, _)) => {
                        let d = dims[0];
                        // The index it was given, from the offsets.
                        let given = match arg {
                            Some(ViewArg::NegativeSelect(i) | ViewArg::GivenSelect(_, i)) => {
                                Some(i)
                            }
                            _ => None,
                        };
                        let index = match (
                            given,
                            c_offset.as_int(),
                            old_offset.as_int(),
                            old_strides.get(d).and_then(SymInt::as_int),
                        ) {
                            (Some(i), ..) => i,
                            (None, Some(c), Some(o), Some(s)) if s != 0 && (c - o) % s == 0 => {
                                (c - o) / s
                            }
                            _ => return Ok(()),
                        };
                        // The base lost the dim since (`resize_`, `set_`…).
                        if sizes.is_empty() {
                            return Err(OpError::new(
                                "other",
                                "select() cannot be applied to a 0-dim tensor.",
                            )
                            .help(REPLAY_HELP));
                        }
                        shape::wrap_dim(d as i64, sizes.len()).map_err(|e| e.help(REPLAY_HELP))?;
                        if let Some(size) = sizes[d].as_int() {
                            if index >= size || index < -size {
                                return Err(shape::select_index_error(index, &sizes, d, true)
                                    .help(REPLAY_HELP));
                            }
                        }
                        let (mut ps, mut pt) = (sizes.clone(), strides.clone());
                        ps.remove(d);
                        pt.remove(d);
                        (ps, pt)
                    }
                    None => return Ok(()),
                },
                "transpose" | "swapaxes" | "swapdims" => {
                    let dims = match dim_args {
                        // (Alike or negative dims: the ones it was given.)
                        Some((dims, _)) if dims.len() == 2 => (dims[0], dims[1]),
                        _ => return Ok(()),
                    };
                    let (mut ps, mut pt) = (sizes.clone(), strides.clone());
                    // (A 0-d base takes dims 0 and -1 and comes back as it is.)
                    if dims.0 < ps.len() && dims.1 < ps.len() {
                        ps.swap(dims.0, dims.1);
                        pt.swap(dims.0, dims.1);
                    }
                    (ps, pt)
                }
                "unsqueeze" => match &dim_args {
                    Some((dims, _)) => {
                        let (mut ps, mut pt) = (sizes.clone(), strides.clone());
                        shape::unsqueeze_geometry(&mut ps, &mut pt, dims[0], &mut self.sizes)?;
                        (ps, pt)
                    }
                    None => return Ok(()),
                },
                "squeeze" => {
                    // squeeze(d) drops d when it has size 1; squeeze() every
                    // dim of size 1.
                    let dropped: smallvec::SmallVec<[usize; 2]> = match &dim_args {
                        Some((dims, _)) => dims.clone(),
                        None if matches!(arg, Some(ViewArg::SqueezeAll)) => {
                            (0..sizes.len()).collect()
                        }
                        None => return Ok(()),
                    };
                    let keep: Vec<usize> = (0..sizes.len())
                        .filter(|&d| !(dropped.contains(&d) && sizes[d].as_int() == Some(1)))
                        .collect();
                    (
                        keep.iter().map(|&d| sizes[d].clone()).collect(),
                        keep.iter().map(|&d| strides[d].clone()).collect(),
                    )
                }
                // unfold(dimension, size, step): the dim's windows, and
                // the window as a new last dim.
                "unfold" if !sizes.is_empty() => {
                    let (Some((dims, _)), Some(&(size, step))) =
                        (&dim_args, self.unfold_windows.get(&child))
                    else {
                        return Ok(());
                    };
                    let d = dims[0];
                    let Some(n) = sizes[d].as_int() else {
                        return Ok(());
                    };
                    if size > n || step <= 0 {
                        return Err(shape::unfold_size_error(d, n, size, true).help(REPLAY_HELP));
                    }
                    let (mut ps, mut pt) = (sizes.clone(), strides.clone());
                    ps[d] = SymInt::int((n - size) / step + 1);
                    pt[d] = self.sizes.mul(&strides[d], &SymInt::int(step))?;
                    ps.push(SymInt::int(size));
                    pt.push(strides[d].clone());
                    (ps, pt)
                }
                "t" => {
                    // t() swaps the two dims of a 2-d tensor and returns a
                    // 0-d or 1-d one as it is.
                    if sizes.len() > 2 {
                        return Err(shape::t_rank_error(sizes.len()).help(REPLAY_HELP));
                    }
                    let (mut ps, mut pt) = (sizes.clone(), strides.clone());
                    ps.reverse();
                    pt.reverse();
                    (ps, pt)
                }
                "permute" | "movedim" | "moveaxis" => {
                    // The dims as given when one was negative; else the
                    // permutation that made the child of the old input.
                    let given: Vec<i64> = match arg {
                        Some(ViewArg::GivenPermutation { dims, len }) if op == "permute" => dims
                            [..usize::from(len)]
                            .iter()
                            .map(|&d| i64::from(d))
                            .collect(),
                        _ => {
                            let mut used = vec![false; old_sizes.len()];
                            let mut perm = Vec::with_capacity(c_sizes.len());
                            for (size, stride) in c_sizes.iter().zip(&c_strides) {
                                let Some(j) = (0..old_sizes.len()).find(|&j| {
                                    !used[j] && old_sizes[j] == *size && old_strides[j] == *stride
                                }) else {
                                    return Ok(());
                                };
                                used[j] = true;
                                perm.push(j as i64);
                            }
                            perm
                        }
                    };
                    // torch._refs.permute: canonicalize_dims on the new
                    // rank, then prims.transpose's length check.
                    let mut perm = Vec::with_capacity(given.len());
                    for d in given {
                        perm.push(
                            shape::wrap_dim(d, sizes.len()).map_err(|e| e.help(REPLAY_HELP))?,
                        );
                    }
                    if perm.len() != sizes.len() {
                        return Err(
                            shape::permute_length_error(sizes.len(), perm.len()).help(REPLAY_HELP)
                        );
                    }
                    let ps: Dims = perm.iter().map(|&j| sizes[j].clone()).collect();
                    let pt: Dims = perm.iter().map(|&j| strides[j].clone()).collect();
                    (ps, pt)
                }
                "expand" | "expand_as" | "broadcast_to" => {
                    if sizes.len() > c_sizes.len() {
                        return Err(OpError::new(
                            "other",
                            "expand: the requested shape has too few dimensions!",
                        )
                        .help(REPLAY_HELP));
                    }
                    let lead = c_sizes.len() - sizes.len();
                    // The dims given as -1 keep the new base's size.
                    let keep = match arg {
                        Some(ViewArg::ExpandKeep(mask)) => mask,
                        _ => 0,
                    };
                    let mut out_sizes = c_sizes.clone();
                    let mut out_strides: Dims = smallvec::smallvec![SymInt::int(0); c_sizes.len()];
                    for (d, x) in sizes.iter().enumerate() {
                        let j = lead + d;
                        let want = &c_sizes[j];
                        if j < 64 && keep >> j & 1 == 1 {
                            out_sizes[j] = x.clone();
                            out_strides[j] = strides[d].clone();
                        } else if want == x || self.sizes.eq(want, x) {
                            // (torch._refs.expand compares the values: a
                            // replayed `view` may express a size anew.)
                            out_strides[j] = strides[d].clone();
                        } else if !self.sizes.eq_int(x, 1) {
                            return Err(OpError::new(
                                "expand",
                                format!("expand: attempting to expand a dimension of length {x}!"),
                            )
                            .help(REPLAY_HELP));
                        }
                    }
                    if (0..lead).any(|j| j < 64 && keep >> j & 1 == 1) {
                        // A -1 for a new leading dim stays -1, which the
                        // refs' validate_shape refuses with a bare check,
                        // after each of the base's dims is checked.
                        return Err(OpError::new(
                            "other",
                            "Expected cond to be True, but got False. (Could this error message be improved? If so, please report an enhancement request to PyTorch.)",
                        )
                        .help(REPLAY_HELP));
                    }
                    (out_sizes, out_strides)
                }
                "view" | "reshape" | "_unsafe_view" | "flatten" | "unflatten" | "view_as"
                | "reshape_as" | "_reshape_alias" => {
                    let numel = self.sizes.prod(&sizes)?;
                    // A `view(..., -1, ...)` keeps its -1: inferred again.
                    let mut c_sizes = c_sizes.clone();
                    if let Some(ViewArg::InferredViewDim(k)) = arg {
                        if let Some(d) = c_sizes.get_mut(k as usize) {
                            *d = SymInt::int(-1);
                        }
                        c_sizes = shape::infer_size(&c_sizes, &numel, &mut self.sizes)
                            .map_err(|e| e.help(REPLAY_HELP))?;
                    }
                    let target = self.sizes.prod(&c_sizes)?;
                    if !self.sizes.eq(&numel, &target) {
                        return Err(shape::invalid_shape_error(&c_sizes, &numel).help(REPLAY_HELP));
                    }
                    match shape::ref_view_geometry(&sizes, &strides, &c_sizes, &mut self.sizes)? {
                        Some(g) => g,
                        None => {
                            return Err(
                                view_stride_error(&sizes, &strides, &c_sizes).help(REPLAY_HELP)
                            )
                        }
                    }
                }
                _ if *old_sizes == sizes && *old_strides == strides => {
                    (c_sizes.clone(), c_strides.clone())
                }
                _ => return Ok(()),
            };
            // The replayed view is a FunctionalTensor too (the replay runs
            // under FunctionalTensorMode).
            self.wrap_view_sizes(&replayed.0)?;
            (sizes, strides) = replayed;
        }
        Ok(())
    }

    /// A non-view op reads `id`: functionalization syncs it, which
    /// regenerates a value a write to its storage left out of date
    /// (`fresh_values`). Analysis only.
    pub fn read_value(&mut self, id: TensorId) {
        if let Some(&(_, current)) = self.fresh_values.get(&id) {
            if self.storages[self.tensors[id].storage].mutations > current {
                self.fresh_values.remove(&id);
            }
        }
    }

    /// functionalization's `sync` of `id` before a non-view op reads it:
    /// an out-of-date value is regenerated (`pending_values`), or the
    /// replay's error is raised. Analysis only; free when no write changed
    /// a layout.
    pub fn sync(&mut self, id: TensorId) -> OpResult<()> {
        if self.pending_values.is_empty() {
            return Ok(());
        }
        match self.pending_values.remove(&id) {
            None => Ok(()),
            Some(Err(e)) => Err(e),
            Some(Ok(new)) => {
                let old = self.tensors[id].geom.clone();
                if old != new {
                    self.relay(id, new);
                }
                Ok(())
            }
        }
    }

    /// A view `id` made by `op` of `base`, whose value is out of date: the
    /// view's value is out of date too, and syncing it replays `op` on the
    /// base's regenerated value.
    fn pend_view(&mut self, base: TensorId, id: TensorId, op: &'static str) {
        let Some(pending) = self.pending_values.get(&base).cloned() else {
            return;
        };
        let replayed = match pending {
            Err(e) => Some(Err(e)),
            Ok(new_base) => {
                let old_base = self.tensors[base].geom.clone();
                let made = self.tensors[id].geom.clone();
                self.replay_view(op, &old_base, &made, &new_base)
                    .transpose()
            }
        };
        if let Some(r) = replayed {
            self.pending_values.insert(id, r);
        }
    }

    /// View op `op`, which made `made` of a base laid out as `old_base`,
    /// replayed on the base's new value `new_base`: the view's new value,
    /// None when tpi does not replay the step (the view keeps its value),
    /// or the error of a view the new strides cannot give.
    fn replay_view(
        &mut self,
        op: &str,
        old_base: &SharedGeometry,
        made: &SharedGeometry,
        new_base: &SharedGeometry,
    ) -> OpResult<Option<SharedGeometry>> {
        if op == "view_as_complex" {
            // view_as_complex's checks on the new strides.
            let strides = shape::view_as_complex_strides(new_base.strides(), &mut self.sizes)
                .map_err(|e| e.help("a write through another view gave the base new strides, and functionalization replays view_as_complex on them when this view is next used: clone() the view, or make it after the write"))?;
            return Ok(Some(self.geoms.intern(made.sizes().clone(), strides)));
        }
        if let Some((sizes, strides)) = replay_slicing(op, old_base, made, new_base) {
            return Ok(Some(self.geoms.intern(sizes, strides)));
        }
        let step = view_step(op, old_base, made);
        let reshape = step.is_reshape();
        match shape::view_replay_geometry(
            &step,
            new_base.sizes(),
            new_base.strides(),
            &mut self.sizes,
        )? {
            Some((sizes, strides)) => Ok(Some(self.geoms.intern(sizes, strides))),
            None if reshape && new_base.sizes() == old_base.sizes() => Err(view_stride_error(new_base.sizes(), new_base.strides(), made.sizes())
            .help("a write through another view gave the base new strides, and functionalization replays this view on them when the view is next used: clone() the view, or make it after the write")),
            None => Ok(None),
        }
    }

    /// Gives `id` the re-laid value `new` (new strides, or sizes of the
    /// same values that a replayed `view` expressed anew): its Python
    /// wrapper keeps the geometry it had (`python_geom`), and the views
    /// already made of it keep the geometry they were made on (`relaid`).
    fn relay(&mut self, id: TensorId, new: SharedGeometry) {
        let old = std::mem::replace(&mut self.tensors[id].geom, new);
        self.relaid
            .entry(id)
            .or_default()
            .push((self.tensors.len(), old.clone()));
        self.python_geom.entry(id).or_insert(old);
    }

    /// Whether a value of `sizes` and `strides` differs from `id`'s value
    /// now: the value an earlier write left pending (a failed replay always
    /// differs), else its geometry `old`.
    fn value_differs(
        &self,
        id: TensorId,
        old: &SharedGeometry,
        sizes: &[SymInt],
        strides: &[SymInt],
    ) -> bool {
        let now = match self.pending_values.get(&id) {
            Some(Ok(pending)) => pending,
            Some(Err(_)) => return true,
            None => old,
        };
        now.strides()[..] != *strides || now.sizes()[..] != *sizes
    }

    /// `id`'s value is now `new`, for its next sync: nothing pending when
    /// that is its geometry `old`.
    fn set_pending(&mut self, id: TensorId, old: &SharedGeometry, new: SharedGeometry) {
        if *old == new {
            self.pending_values.remove(&id);
        } else {
            self.pending_values.insert(id, Ok(new));
        }
    }

    /// `t`'s geometry when tensor `made` was made, as far as writes that
    /// re-laid its value tell (`relaid`). In-place metadata changes are
    /// `geometry_when_made`'s.
    fn layout_when_made(&self, t: TensorId, made: TensorId) -> SharedGeometry {
        self.relaid
            .get(&t)
            .and_then(|changes| changes.iter().find(|(at, _)| *at > made as usize))
            .map_or_else(|| self.tensors[t].geom.clone(), |(_, g)| g.clone())
    }

    /// `t`'s geometry and storage offset when tensor `made` was made:
    /// before the first in-place metadata change of `t` that came after, or
    /// before the first write that re-laid its value (`relaid`), whichever
    /// came first.
    fn geometry_when_made(&self, t: TensorId, made: TensorId) -> (SharedGeometry, SymInt) {
        let change = self
            .metadata_changes
            .get(&t)
            .and_then(|changes| changes.iter().find(|c| c.made > made as usize));
        let relay = self.relaid.get(&t).and_then(|changes| {
            changes
                .iter()
                .enumerate()
                .find(|(_, (at, _))| *at > made as usize)
        });
        match (change, relay) {
            (Some(c), Some((k, (_, g)))) if k < c.relays => (g.clone(), c.offset.clone()),
            (Some(c), _) => (c.before.clone(), c.offset.clone()),
            (None, Some((_, (_, g)))) => (g.clone(), self.tensors[t].offset.clone()),
            (None, None) => (self.tensors[t].geom.clone(), self.tensors[t].offset.clone()),
        }
    }

    pub fn add_node(
        &mut self,
        name: &'static str,
        next: impl IntoIterator<Item = NodeId>,
        span: Span,
    ) -> NodeId {
        let id = self.nodes.push(Node {
            name: OpName::of(name),
            next: next.into_iter().collect(),
            saved: thin_vec::ThinVec::new(),
            custom: false,
            span,
            saves_inference: false,
            not_implemented: None,
            overlapping_view: false,
            overlapping_base: false,
        });
        if !self.pending_accumulator_edges.is_empty() {
            let leaves = std::mem::take(&mut self.pending_accumulator_edges);
            self.accumulator_edges
                .insert(id, leaves.into_iter().collect());
        }
        id
    }

    pub fn new_storage(&mut self, nbytes: Option<SymInt>) -> StorageId {
        self.storages.push(FunctionalStorage {
            nbytes,
            ..FunctionalStorage::default()
        })
    }

    fn new_version(&mut self) -> VersionId {
        self.version_spans.push(None);
        self.versions.push(0)
    }

    /// A fresh tensor with its own storage and no autograd history.
    pub fn fresh(&mut self, meta: Meta, span: Span, op: &'static str) -> TensorId {
        let nbytes = extent(&meta.sizes, &meta.strides, &SymInt::int(0))
            .or_else(|| self.specialised_extent(&meta.sizes, &meta.strides))
            .map(|e| e * meta.dtype.itemsize());
        let storage = self.new_storage(nbytes.map(SymInt::int));
        let version = self.new_version();
        let geom = self.geoms.intern(meta.sizes, meta.strides);
        let id = self.tensors.push(Tensor {
            geom,
            offset: meta.offset,
            dtype: meta.dtype,
            storage,
            alias_key: storage,
            version,
            requires_grad_flag: false,
            grad_fn: None,
            attr_version: 0,
            view: None,
            multi_output_view: false,
            functional_view: false,
            input_number: None,
            analysis_input_grad: false,
            storage_changed: false,
            metadata_mutated: false,
            is_inference: self.inference_mode,
            origin: span,
            origin_op: OpName::of(op),
            output_index: 0,
        });
        self.note_made(id);
        id
    }

    /// The extent of sizes and strides that the guards so far made integers:
    /// a tensor made after a specialisation gets them as plain ints, so its
    /// storage's size in bytes is a number too (`has_static_sizes`; resize_
    /// of a clone made then, tests/oracle/resize_after_specialisation.tp).
    fn specialised_extent(&self, sizes: &[SymInt], strides: &[SymInt]) -> Option<i64> {
        if self.mode != Mode::Analysis || self.sizes.env.num_replacements() == 0 {
            return None;
        }
        let env = &self.sizes.env;
        let ints = |v: &[SymInt]| -> Option<Vec<SymInt>> {
            v.iter()
                .map(|d| env.resolved_int(d).map(SymInt::int))
                .collect()
        };
        extent(&ints(sizes)?, &ints(strides)?, &SymInt::int(0))
    }

    /// Notes that `t`'s value is made now (`made_at_replacements`).
    fn note_made(&mut self, t: TensorId) {
        let k = self.sizes.env.num_replacements();
        if k > 0 && self.mode == Mode::Analysis {
            self.made_at_replacements.insert(t, k as u32);
        }
    }

    /// Notes that `storage` is written now (`written_at_replacements`).
    fn note_written(&mut self, storage: StorageId) {
        let k = self.sizes.env.num_replacements();
        if k > 0 && self.mode == Mode::Analysis {
            self.written_at_replacements.insert(storage, k as u32);
        }
    }

    /// Are `t`'s sizes and strides plain ints to PyTorch (a FakeTensor's
    /// `_has_symbolic_sizes_strides` false)? A symbolic size stays a SymInt
    /// after a guard specialises its symbols; only a value made after that
    /// (a new tensor, a view, one remade because its storage was written)
    /// gets it as an int (tests/oracle/specialised_static_sizes.tp).
    pub fn has_static_sizes(&self, t: TensorId) -> bool {
        self.static_since_specialising(t, true)
    }

    /// Has any of `tensors` symbolic sizes or strides to PyTorch (not
    /// `has_static_sizes`)? FakeTensor then takes its symbolic paths.
    pub fn any_symbolic_sizes(&self, tensors: impl IntoIterator<Item = TensorId>) -> bool {
        tensors.into_iter().any(|t| !self.has_static_sizes(t))
    }

    /// Are the sizes and strides of `t`'s functional wrapper plain ints?
    /// As `has_static_sizes`, but a write to its storage does not remake the
    /// wrapper's: only a tensor made after the specialisation has them
    /// (resize_'s `storage_offset()`; tests/oracle/resize_after_specialisation.tp).
    pub fn has_static_wrapper_sizes(&self, t: TensorId) -> bool {
        self.static_since_specialising(t, false)
    }

    fn static_since_specialising(&self, t: TensorId, remade_by_writes: bool) -> bool {
        let tensor = &self.tensors[t];
        let mut dims = tensor.sizes().iter().chain(tensor.strides().iter());
        if !dims.clone().any(SymInt::is_symbolic) {
            return true;
        }
        let made = self.made_at_replacements.get(&t).copied().unwrap_or(0);
        let written = if remade_by_writes {
            (self.written_at_replacements)
                .get(&tensor.storage)
                .copied()
                .unwrap_or(0)
        } else {
            0
        };
        let k = made.max(written) as usize;
        k > 0 && dims.all(|d| self.sizes.env.concrete_within(d, k))
    }

    /// Does an op on `inputs` record autograd history (grad mode on, some input
    /// requires grad, and the result's dtype is differentiable)?
    pub fn records_grad(&self, inputs: &[TensorId], dtype: DType) -> bool {
        self.grad_enabled
            && !self.inference_mode
            && dtype.can_require_grad()
            && self.reaches_autograd(inputs)
            && inputs.iter().any(|&i| self.requires_grad(i))
    }

    /// Does an op on `inputs` dispatch to autograd at all? Inference
    /// tensors are made without autograd's dispatch keys, so an op whose
    /// operands are all inference tensors (and no wrapped number made
    /// outside inference_mode) skips it: no history, no checks, and a
    /// result that does not require grad even when an operand does.
    pub fn reaches_autograd(&self, inputs: &[TensorId]) -> bool {
        (self.wrapped_number && !self.inference_mode)
            || inputs.iter().any(|&i| !self.tensors[i].is_inference)
            || inputs.is_empty()
    }

    /// The result of an out-of-place op: a fresh tensor whose autograd node
    /// (when history is recorded) points at the inputs' nodes and saves what
    /// derivatives.yaml says the op saves.
    pub fn op_result(
        &mut self,
        meta: Meta,
        op: &'static str,
        inputs: &[(&str, Option<TensorId>)],
        span: Span,
    ) -> OpResult<TensorId> {
        let out = self.fresh(meta, span, op);
        self.record_history(op, false, inputs, &[out], span)?;
        Ok(out)
    }

    /// Connects `outputs` to a new node for `op` when history is recorded, and
    /// saves tensors for backward as derivatives.yaml says (`ops/saved.rs`):
    /// `inputs` are the op's tensor arguments by aten argument name.
    pub fn record_history(
        &mut self,
        op: &'static str,
        inplace: bool,
        inputs: &[(&str, Option<TensorId>)],
        outputs: &[TensorId],
        span: Span,
    ) -> OpResult<Option<NodeId>> {
        match self.next_edges(inputs, outputs)? {
            Some(next) => self.record_node(op, inplace, inputs, outputs, span, next),
            None => Ok(None),
        }
    }

    /// The nodes of `inputs`' histories, when the op records one
    /// (`collect_next_edges`). An in-place kernel reads them before it bumps
    /// the version counter: afterwards the history of a view of the written
    /// tensor is stale, and regenerating it may raise (a multi-output view).
    pub fn next_edges(
        &mut self,
        inputs: &[(&str, Option<TensorId>)],
        outputs: &[TensorId],
    ) -> OpResult<Option<smallvec::SmallVec<[NodeId; 2]>>> {
        let dtype = outputs
            .first()
            .map(|&o| self.tensors[o].dtype)
            .unwrap_or(DType::F32);
        self.next_edges_for(inputs, dtype)
    }

    /// `next_edges` for a result of `dtype`.
    pub fn next_edges_for(
        &mut self,
        inputs: &[(&str, Option<TensorId>)],
        dtype: DType,
    ) -> OpResult<Option<smallvec::SmallVec<[NodeId; 2]>>> {
        let present: smallvec::SmallVec<[TensorId; 4]> =
            inputs.iter().filter_map(|(_, t)| *t).collect();
        if !self.records_grad(&present, dtype) {
            return Ok(None);
        }
        let mut next = smallvec::SmallVec::<[NodeId; 2]>::new();
        // Eager only (`note_accumulator`).
        let eager = self.mode == Mode::Eager;
        let mut leaves = smallvec::SmallVec::<[TensorId; 2]>::new();
        for &i in &present {
            if let Some(n) = self.grad_fn(i)? {
                next.push(n);
            } else if eager {
                leaves.push(i);
            }
        }
        if eager {
            // (After the loop: reading a later input's grad_fn may make a node.)
            self.pending_accumulator_edges.clear();
            for leaf in leaves {
                self.note_accumulator(leaf);
            }
        }
        Ok(Some(next))
    }

    /// `record_history` with the inputs' nodes already read (`next_edges`).
    pub fn record_node(
        &mut self,
        op: &'static str,
        inplace: bool,
        inputs: &[(&str, Option<TensorId>)],
        outputs: &[TensorId],
        span: Span,
        next: smallvec::SmallVec<[NodeId; 2]>,
    ) -> OpResult<Option<NodeId>> {
        let facts = op_facts(op, inplace);
        let node = self.add_node(facts.node, next, span);
        if !self.grad_sizes.is_empty() {
            let present = inputs.iter().filter_map(|(_, t)| *t);
            for (k, t) in present.enumerate() {
                self.check_grad_sizes(node, k, t);
            }
            for o in outputs {
                self.grad_sizes.remove(o);
            }
        }
        self.nodes[node].not_implemented = facts.not_implemented;
        // The codegen's `should_compute_output(0)` of an in-place op is
        // about `self` before the op gave it this node: `v.mul_(w)` with
        // only `w` requiring grad saves `v`'s clone, not `w`.
        let self_had_edge = inplace
            && inputs
                .first()
                .and_then(|(_, t)| *t)
                .is_some_and(|t| self.has_grad_edge(t));
        for (k, &o) in outputs.iter().enumerate() {
            self.tensors[o].grad_fn = Some(node);
            self.tensors[o].output_index = k as u32;
        }
        let Some(row) = facts.row else {
            return Ok(Some(node));
        };
        let base = facts.base;
        if row.exactness == Exactness::LayoutDependent && matches!(base, "matmul" | "linear") {
            // Whether an operand is saved as itself depends on whether matmul's
            // internal reshape is a view: decided from the concrete layouts.
            let names: [&str; 2] = if base == "matmul" {
                ["self", "other"]
            } else {
                ["input", "weight"]
            };
            let find = |n: &str| inputs.iter().find(|(k, _)| *k == n).and_then(|(_, t)| *t);
            let (Some(x), Some(w)) = (find(names[0]), find(names[1])) else {
                return Ok(Some(node));
            };
            let geom = |m: &Machine, t: TensorId| -> Option<Geom> {
                let tt = &m.tensors[t];
                let sizes: Option<crate::ops::saved::GeomDims> =
                    tt.sizes().iter().map(|s| s.as_int()).collect();
                let strides: Option<crate::ops::saved::GeomDims> =
                    tt.strides().iter().map(|s| s.as_int()).collect();
                Some(Geom {
                    sizes: sizes?,
                    strides: strides?,
                    requires_grad: m.requires_grad(t),
                })
            };
            let (dx, dw) = (self.tensors[x].sizes().len(), self.tensors[w].sizes().len());
            let saved = if (1..=2).contains(&dx) && (1..=2).contains(&dw) {
                // dot, mv, mm: each operand saved when the other has a
                // gradient edge (`should_compute_output`; a view made under
                // no_grad or inference_mode has none), whatever the sizes
                // (symbolic ones too). linear's mm takes `weight.t()` and a
                // 1-D matmul operand goes as `unsqueeze(0)`: views made
                // under grad mode, with a node whenever the operand
                // requires grad.
                let edge = |m: &Self, t: TensorId, viewed: bool| {
                    if viewed {
                        m.requires_grad(t)
                    } else {
                        m.has_grad_edge(t)
                    }
                };
                let w_viewed = base == "linear";
                let x_viewed = base == "matmul" && dx == 1 && dw == 2;
                [edge(self, w, w_viewed), edge(self, x, x_viewed)]
            } else {
                let (Some(gx), Some(gw)) = (geom(self, x), geom(self, w)) else {
                    return Ok(Some(node));
                };
                if base == "matmul" {
                    matmul_saved(&gx, &gw)
                } else {
                    linear_saved(&gx, &gw)
                }
            };
            for (t, keep, role) in [(x, saved[0], names[0]), (w, saved[1], names[1])] {
                if keep {
                    self.save(
                        node,
                        t,
                        false,
                        None,
                        if role == "self" { "self" } else { role },
                        true,
                    )?;
                }
            }
            return Ok(Some(node));
        }
        if row.exactness != Exactness::Exact {
            return Ok(Some(node));
        }
        let arg = |i: usize| row_arg(row, inputs, i);
        let self_version = inputs
            .first()
            .and_then(|(_, t)| *t)
            .map(|t| self.tensors[t].version);
        for s in row.saved {
            let (tensor, role) = match *s {
                Saved::Input(i, _) => (arg(i), row.args.get(i).copied().unwrap_or("input")),
                Saved::Output(i, _) => (outputs.get(i).copied(), "result"),
            };
            let Some(tensor) = tensor else { continue };
            // The codegen's guard is `should_compute_output(i)`: input i has
            // a gradient edge. A view made under no_grad requires grad (its
            // base does) but has neither a grad_fn nor an accumulator.
            let holds = s.when().holds(
                |i| {
                    if inplace && i == 0 {
                        self_had_edge
                    } else {
                        arg(i).is_some_and(|t| self.has_grad_edge(t))
                    }
                },
                |i| arg(i).is_some(),
            );
            if !holds {
                continue;
            }
            let before_write = inplace && matches!(s, Saved::Input(..));
            // An in-place op saves a clone of its `self` (original_self).
            let original = matches!(*s, Saved::Input(i, _) if !(inplace && i == 0));
            self.save(node, tensor, before_write, self_version, role, original)?;
        }
        Ok(Some(node))
    }

    /// An autograd kernel saves its inputs (`SavedVariable`, which refuses an
    /// inference tensor) before it redispatches to the op's kernel, whose
    /// argument checks come later: `inference_row * requires_grad_row` with
    /// sizes that do not broadcast is refused for the inference tensor.
    /// Only for ops with a kernel of their own whose saves are exact (a
    /// composite's first op may check its arguments before any save); the
    /// outputs, saved after the kernel, are `save`'s to check.
    pub fn check_early_saves(
        &self,
        op: &'static str,
        inplace: bool,
        inputs: &[(&str, Option<TensorId>)],
    ) -> OpResult<()> {
        let present: smallvec::SmallVec<[TensorId; 4]> =
            inputs.iter().filter_map(|(_, t)| *t).collect();
        if !present.iter().any(|&t| self.tensors[t].is_inference)
            || !self.records_grad(&present, DType::F32)
        {
            return Ok(());
        }
        // (`lookup`, not `op_facts`: a rare path, kept out of its cache.)
        let Some(row) = lookup(op, inplace) else {
            return Ok(());
        };
        if row.exactness != Exactness::Exact || row.composite.is_some() {
            return Ok(());
        }
        let arg = |i: usize| row_arg(row, inputs, i);
        for s in row.saved {
            let Saved::Input(i, when) = *s else { continue };
            let Some(t) = arg(i) else { continue };
            let holds = when.holds(
                |i| arg(i).is_some_and(|t| self.has_grad_edge(t)),
                |i| arg(i).is_some(),
            );
            if holds && self.tensors[t].is_inference {
                return Err(inference_saved_error());
            }
        }
        Ok(())
    }

    /// Saves `tensor` for backward in `node`, at its current version (or the
    /// version before an in-place op's own write, for its inputs).
    fn save(
        &mut self,
        node: NodeId,
        tensor: TensorId,
        before_write: bool,
        self_version: Option<VersionId>,
        role: &'static str,
        original: bool,
    ) -> OpResult<()> {
        let as_view = !self.saved_as_views.is_empty()
            && self.mode == Mode::Analysis
            && self.saved_as_views.contains(&tensor);
        // (A view an op made outside inference_mode is a normal tensor.)
        if self.tensors[tensor].is_inference && (!as_view || self.inference_mode) {
            return Err(inference_saved_error());
        }
        let version = self.tensors[tensor].version;
        let mut saved_version = self.versions[version];
        if before_write && Some(version) == self_version {
            saved_version = saved_version.saturating_sub(1);
        }
        let t = &self.tensors[tensor];
        let detachable = original && t.grad_fn.is_some() && t.view.is_none();
        let geometry = (!original).then(|| t.geometry().clone());
        self.nodes[node].saved.push(SavedTensor {
            version,
            saved_version,
            role,
            tensor,
            detachable,
            original,
            geometry,
            as_view,
        });
        Ok(())
    }

    /// A view of `base` sharing its storage (functionalization) and, unless
    /// `autograd_view` is false (`detach`), registered as autograd's
    /// differentiable view with the right CreationMeta.
    pub fn view_of(
        &mut self,
        base: TensorId,
        meta: Meta,
        op: &'static str,
        multi_output: bool,
        autograd_view: bool,
        span: Span,
    ) -> OpResult<TensorId> {
        // What the view takes from its base (not a clone of the whole tensor:
        // its shape vectors would be copied for nothing).
        struct Base {
            view: Option<ViewInfo>,
            version: VersionId,
            storage_changed: bool,
            alias_key: StorageId,
            is_inference: bool,
            storage: StorageId,
            multi_output_view: bool,
            metadata_mutated: bool,
        }
        let b = {
            let t = &self.tensors[base];
            Base {
                view: t.view,
                version: t.version,
                storage_changed: t.storage_changed,
                alias_key: t.alias_key,
                is_inference: t.is_inference,
                storage: t.storage,
                multi_output_view: t.multi_output_view,
                metadata_mutated: t.metadata_mutated,
            }
        };
        let conj = !self.conj.is_empty() && self.conj.contains(&base);
        self.check_view_allowed(base)?;
        if self.mode == Mode::Analysis
            && self.sizes.env.num_symbols() > 0
            && matches!(
                op,
                "unsqueeze" | "expand" | "expand_as" | "broadcast_to" | "alias"
            )
        {
            self.specialise_unit_sizes(base);
        }
        self.wrap_view_sizes(&meta.sizes)?;
        if std::mem::take(&mut self.view_entry)
            && self.mode == Mode::Analysis
            && self.inference_mode
            && !b.is_inference
        {
            // The storage is registered (else the KeyError above). The view
            // op's ADInplaceOrView kernel runs for the normal base, and gives
            // its output (a wrapper made under inference_mode: an inference
            // tensor) the base's version counter, which c10 refuses.
            return Err(
                OpError::new("other", "Cannot set version_counter for inference tensor")
                    .help("make the view outside the inference_mode block, or clone inside it"),
            );
        }
        let creation = if self.inference_mode {
            CreationMeta::InferenceMode
        } else if !self.grad_enabled {
            CreationMeta::NoGradMode
        } else if multi_output {
            CreationMeta::MultipleOutputs
        } else {
            CreationMeta::Default
        };
        // The analysis makes every view a new functional wrapper; made under
        // inference_mode it is an inference tensor, which carries no
        // autograd view metadata: nothing later regenerates its history or
        // checks how it was made (tests/oracle/inference_mode_views.tp).
        // An inference tensor has no ADInplaceOrView key: its views carry no
        // autograd view metadata either (no `_base`).
        let autograd_view = autograd_view
            && !(self.mode == Mode::Analysis && self.inference_mode)
            && !b.is_inference;
        let view = if autograd_view {
            Some(match &b.view {
                // A view of a view: the root base, and the stricter CreationMeta.
                Some(v) => ViewInfo {
                    base: v.base,
                    creation_meta: if v.creation_meta != CreationMeta::Default
                        && creation == CreationMeta::Default
                    {
                        v.creation_meta
                    } else if v.creation_meta == CreationMeta::InferenceMode {
                        CreationMeta::InferenceMode
                    } else {
                        creation
                    },
                },
                None => ViewInfo {
                    base,
                    creation_meta: creation,
                },
            })
        } else {
            None
        };
        let version_now = self.versions[b.version];
        // Eager: a view is an inference tensor when its base is. The
        // analysis makes every view a new functional wrapper, which is an
        // inference tensor when made inside inference_mode (of a normal base
        // that passed the KeyError check above, too) and a normal one
        // outside it.
        let is_inference = match self.mode {
            Mode::Eager => b.is_inference,
            Mode::Analysis => self.inference_mode,
        };
        let geom = self.geoms.intern(meta.sizes, meta.strides);
        let id = self.tensors.push(Tensor {
            geom,
            offset: meta.offset,
            dtype: meta.dtype,
            storage: b.storage,
            // A view's Python wrapper takes its base wrapper's storage
            // (`return_and_correct_aliasing`), which set_() never swaps: the
            // output classification counts the views of a set_() tensor with
            // everything else made of its old wrapper.
            alias_key: b.alias_key,
            version: b.version,
            requires_grad_flag: false,
            grad_fn: None,
            attr_version: version_now,
            view,
            multi_output_view: multi_output || b.multi_output_view,
            functional_view: true,
            input_number: None,
            analysis_input_grad: false,
            // FunctionalTensorWrapper's view constructor copies its base's
            // `was_storage_changed_`.
            storage_changed: b.storage_changed,
            metadata_mutated: false,
            is_inference,
            origin: span,
            origin_op: OpName::of(op),
            output_index: 0,
        });
        self.provenance.view(id, base);
        self.note_made(id);
        // Its wrapper's storage is its base wrapper's, stale after set_()
        // (`_functionalize_unsafe_set`): the in-place view ops on it are
        // checked against that.
        if !self.python_storage.is_empty() {
            if let Some(&(storage, _)) = self.python_storage.get(&base) {
                let offset = self.tensors[id].offset.clone();
                self.python_storage.insert(id, (storage, offset));
            }
        }
        if !self.pending_values.is_empty() {
            self.pend_view(base, id, op);
        }
        // A view's value is a view of its base's value as it is.
        if let Some(&fresh) = self.fresh_values.get(&base) {
            self.fresh_values.insert(id, fresh);
        }
        if b.metadata_mutated {
            self.made_after_metadata_change.insert(id);
        }
        if conj {
            self.conj.insert(id);
        }
        if b.is_inference && op == "detach" && self.mode == Mode::Eager && !self.inference_mode {
            self.versioned_inference.insert(id);
        }
        if autograd_view && self.grad_enabled && !self.inference_mode && self.requires_grad(base) {
            let base_fn = self.grad_fn(base)?;
            if base_fn.is_none() {
                self.note_accumulator(base);
            }
            let node = self.add_node(static_node_name(op), base_fn, span);
            self.tensors[id].grad_fn = Some(node);
            if !self.grad_sizes.is_empty() {
                self.check_grad_sizes(node, 0, base);
            }
        }
        Ok(id)
    }

    /// `accumulators`: a leaf that requires grad, taken by a recorded op.
    fn note_accumulator(&mut self, leaf: TensorId) {
        if self.mode == Mode::Eager && self.tensors[leaf].requires_grad_flag {
            self.accumulators.insert(leaf);
            self.pending_accumulator_edges.push(leaf);
        }
    }

    /// Eager, after the function returned: is `leaf`'s AccumulateGrad still
    /// alive, i.e. does a node of the graph behind `roots` (the outputs'
    /// nodes; the function's other locals are gone) hold an edge to it?
    /// A leaf caches its accumulator weakly: once no node holds it, the next
    /// op on the leaf makes one of its sizes now.
    pub fn accumulator_alive(&self, leaf: TensorId, roots: &[NodeId]) -> bool {
        if !self.accumulator_edges.values().any(|l| l.contains(&leaf)) {
            return false;
        }
        let mut seen = rustc_hash::FxHashSet::default();
        let mut stack: Vec<NodeId> = roots.to_vec();
        while let Some(n) = stack.pop() {
            if !seen.insert(n) {
                continue;
            }
            if self
                .accumulator_edges
                .get(&n)
                .is_some_and(|l| l.contains(&leaf))
            {
                return true;
            }
            stack.extend(self.nodes[n].next.iter().copied());
        }
        false
    }

    /// Records on `node` the engine's `validate_outputs` error for its
    /// input `k`, tensor `t`: the gradient `node` returns has `t`'s sizes
    /// now, which `t`'s grad_fn refuses when an in-place metadata op without
    /// history changed them and its own sizes do not expand to them.
    pub fn check_grad_sizes(&mut self, node: NodeId, k: usize, t: TensorId) {
        if let Some((got, expected)) = self.refused_grad(t) {
            self.bad_grads.entry(node).or_insert((k, got, expected));
        }
    }

    /// The sizes of a gradient for `t` (its own now) and those its grad_fn
    /// expects, when the engine refuses the first (`grad_sizes`; the
    /// expected sizes do not expand to the gradient's, `is_expandable_to`).
    pub fn refused_grad(&self, t: TensorId) -> Option<(Dims, Dims)> {
        let expected = self.grad_sizes.get(&t)?;
        let got = self.tensors[t].sizes();
        (!shape::is_expandable_to(expected, got)).then(|| (got.clone(), expected.clone()))
    }

    /// Is `id` an autograd leaf for the in-place checks? In the analysis the
    /// input wrappers of inputs that require grad are not leaves.
    fn leaf_for_check(&mut self, id: TensorId) -> OpResult<bool> {
        if self.mode == Mode::Analysis && self.tensors[id].analysis_input_grad {
            return Ok(false);
        }
        self.is_leaf(id)
    }

    /// The analysis's value of `target` after an in-place op: the
    /// functional op's result, with `strides`. FunctionalTensorWrapper's
    /// `replace_` takes the result's sizes and strides; `commit_update` and
    /// the `sync` that follows then regenerate the storage's base through
    /// the view inverses (`apply_update`) and `target` from the base
    /// (`regenerate_from_base`), replaying its views. The base and the
    /// other views get their new values when next synced (`pending_values`). So a write through a
    /// transposing, unsqueezing or reshaping view passes the result's
    /// strides on to the base, and the view gets them back as its op makes
    /// them (an expanded view is expanded again); a write through a slicing
    /// view scatters into the base's value and changes no strides. With
    /// symbolic sizes a `view` back to the base's sizes runs the reshape
    /// algorithm, which may express them anew (`view_inverse_geometry`): the
    /// base and the views regenerated from it take those sizes.
    ///
    /// The Python wrappers (`FunctionalTensor`) keep the strides they were
    /// made with (`python_geom`): code that decomposes in Python reads
    /// them. Analysis only: eager writes into the tensor's own memory.
    pub fn replace_value(&mut self, target: TensorId, strides: Dims) -> OpResult<()> {
        self.replayed_steps.clear();
        // The views from `target` up to its base: each with its geometry
        // and the sizes and strides the inverses give its new value.
        let geom = self.tensors[target].geom.clone();
        let sizes = geom.sizes().clone();
        let mut chain: Vec<(TensorId, SharedGeometry, Dims, Dims)> =
            vec![(target, geom, sizes, strides)];
        // The tensors whose value a scatter gave (their child's step is one).
        let mut scattered: smallvec::SmallVec<[TensorId; 2]> = smallvec::SmallVec::new();
        let parents = self.view_parents(target);
        for (i, &(child, parent)) in parents.iter().enumerate() {
            if self.tensors[parent].storage != self.tensors[child].storage {
                // A view set_() onto a base took the base's (no) view
                // metas: it is the root now.
                if self.set_sources.contains_key(&child) && !self.set_onto_views.contains(&child) {
                    break;
                }
                return Ok(());
            }
            let (_, old, sizes, strides) = &chain[chain.len() - 1];
            // The view's own in-place metadata ops (`squeeze_`, `t_`…) are
            // the last of its view metas: undone first.
            let Some((made, sizes, strides)) =
                self.undo_metadata_changes(child, old, sizes, strides)?
            else {
                return Ok(());
            };
            let op = self.tensors[child].origin_op.as_str();
            // The parent's in-place metadata ops since the view was made.
            let later: smallvec::SmallVec<[MetadataChange; 1]> = self
                .metadata_changes
                .get(&parent)
                .map(|c| {
                    c.iter()
                        .filter(|c| c.made > child as usize)
                        .cloned()
                        .collect()
                })
                .unwrap_or_default();
            let changed_since = !later.is_empty();
            if changed_since {
                // They are not among the view's metas: its `view` inverse
                // goes back to the parent's sizes of then.
                let (then, _) = self.geometry_when_made(parent, child);
                let step = self.child_step(child, op, &then, &made);
                if shape::view_inverse_geometry(&step, &sizes, &strides, &mut self.sizes)?.is_none()
                    && step.is_reshape()
                    && self.sizes.prod(made.sizes())? == self.sizes.prod(then.sizes())?
                {
                    return Err(view_inverse_error(made.sizes(), &strides, then.sizes()));
                }
            }
            let base = self.tensors[parent].geom.clone();
            let (on, made) = if changed_since {
                (self.geometry_when_made(parent, child).0, made)
            } else {
                self.step_geometries(parent, child, &base, made)
            };
            let step = self.child_step(child, op, &on, &made);
            match shape::view_inverse_geometry(&step, &sizes, &strides, &mut self.sizes)? {
                // A value on the parent's geometry of then: its later
                // metadata ops replayed on it give its value's now
                // (tests/oracle/view_after_base_metadata_op.tp).
                Some((sizes, next)) if changed_since => {
                    match self.replay_metadata_changes(&later, &base, sizes, next)? {
                        Some((sizes, now)) => chain.push((parent, base, sizes, now)),
                        None => return Ok(()),
                    }
                }
                Some((sizes, next)) => chain.push((parent, base, sizes, next)),
                // The inverse of a `view` is a `view` back to the base's
                // sizes, which the written value's strides may not allow.
                None if step.is_reshape()
                    && self.sizes.prod(made.sizes())? == self.sizes.prod(base.sizes())? =>
                {
                    if changed_since {
                        // Checked above on the sizes of then; tpi does not
                        // follow the layouts further up.
                        return Ok(());
                    }
                    return Err(view_inverse_error(made.sizes(), &strides, base.sizes()));
                }
                // Scattered into a root that nothing re-lays (no
                // pending value, no in-place metadata op, no
                // `_unsafe_view` source): its strides stay, and so do the
                // written view's (the usual `x[i].add_(1)`).
                None if i + 1 == parents.len()
                    && !self.pending_values.contains_key(&parent)
                    && !self.metadata_changes.contains_key(&parent)
                    && !self.unsafe_view_sources.contains_key(&parent) =>
                {
                    return Ok(());
                }
                // A scatter (`select_scatter`…) clones the parent's value,
                // replayed from the base, keeping its strides; the inverses
                // further up (a `view` back, an in-place metadata op's) may
                // still lay the value out anew.
                None => {
                    scattered.push(parent);
                    let value = match self.pending_values.get(&parent) {
                        Some(Ok(pending)) => pending.clone(),
                        _ => base.clone(),
                    };
                    let (sizes, strides) = (value.sizes().clone(), value.strides().clone());
                    chain.push((parent, base, sizes, strides));
                }
            }
        }
        // The base's new value, then its views replayed on it.
        let mut changed: smallvec::SmallVec<[Regenerated; 4]> = smallvec::SmallVec::new();
        let mut value = (Dims::new(), Dims::new());
        for k in (0..chain.len()).rev() {
            let (id, old, sizes, inverse) = chain[k].clone();
            if k + 1 == chain.len() {
                value = self.regenerate_root(id, &old, sizes, inverse)?;
            } else if scattered.contains(&chain[k + 1].0) {
                // Regenerated by a slicing view of the scattered value.
                value = self
                    .replay_view_metas(id, chain[k + 1].0, &old, &value)?
                    .unwrap_or_else(|| (old.sizes().clone(), old.strides().clone()));
            } else {
                value = self
                    .replay_view_metas(id, chain[k + 1].0, &old, &value)?
                    .unwrap_or((sizes, inverse));
            }
            if self.value_differs(id, &old, &value.0, &value.1) {
                changed.push((id, old.clone(), value.0.clone(), value.1.clone()));
                let new = self.geoms.intern(value.0.clone(), value.1.clone());
                if k == 0 && old != new {
                    // The written tensor is synced at once.
                    self.pending_values.remove(&id);
                    self.relay(id, new);
                } else {
                    // Its bases get their new value when next synced.
                    self.set_pending(id, &old, new);
                }
            }
        }
        if !changed.is_empty() {
            self.regenerate_other_views(changed, 0)?;
        }
        Ok(())
    }

    /// The strides `replace_value`'s root `id` (geometry `old`) has once
    /// regenerated from its storage's base, given the strides `inverse` the
    /// views' inverses gave its new value. Its own in-place metadata ops are
    /// view metas on that base: undone on the way there, replayed on the
    /// way back. The `_unsafe_view` result of a matmul's fold or a copying
    /// reshape is a view of its source to functionalization
    /// (`_unsafe_view_functionalize`), whose inverse is an `_unsafe_view`
    /// (torch._refs' view) back to the source's sizes: it fails when the new
    /// strides do not allow it, and the root is then viewed anew.
    fn regenerate_root(
        &mut self,
        id: TensorId,
        old: &SharedGeometry,
        sizes: Dims,
        inverse: Dims,
    ) -> OpResult<(Dims, Dims)> {
        let changes = self.metadata_changes.get(&id).cloned();
        let source = self.unsafe_view_sources.get(&id).cloned();
        if changes.is_none() && source.is_none() {
            return Ok((sizes, inverse));
        }
        // The last resize_ that fit the storage lays the root out anew,
        // whatever the value its inverses wrote
        // (tests/oracle/resize_view_regenerated.tp).
        if let Some(changes) = &changes {
            if let Some(k) = changes.iter().rposition(|c| c.fitted_resize) {
                if let Some(value) = self.replay_metadata_changes(
                    &changes[k..],
                    old,
                    sizes.clone(),
                    inverse.clone(),
                )? {
                    return Ok(value);
                }
            }
        }
        let Some((made, mut sizes, mut strides)) =
            self.undo_metadata_changes(id, old, &sizes, &inverse)?
        else {
            return Ok((sizes, inverse));
        };
        if let Some(source) = source {
            let Some((source_sizes, base)) =
                shape::ref_view_geometry(&sizes, &strides, &source, &mut self.sizes)?
            else {
                return Err(view_stride_error(made.sizes(), &strides, &source)
                    .help("functionalization writes this value back through the `_unsafe_view` a matmul or a copying reshape made, with an `_unsafe_view` that the written value's strides do not allow: clone the result before viewing and writing it"));
            };
            if let Some(again) =
                shape::ref_view_geometry(&source_sizes, &base, made.sizes(), &mut self.sizes)?
            {
                (sizes, strides) = again;
            }
        }
        if let Some(changes) = changes {
            if let Some(replayed) =
                self.replay_metadata_changes(&changes, old, sizes.clone(), strides.clone())?
            {
                (sizes, strides) = replayed;
            }
        }
        Ok((sizes, strides))
    }

    /// The geometries that tell view `child`'s step from `parent`: each as
    /// the view op saw and made it, before writes re-laid their values
    /// (`relaid`). `parent_now` and `made` are the geometries to use for a
    /// tensor whose in-place metadata ops say it (`metadata_changes`).
    fn step_geometries(
        &self,
        parent: TensorId,
        child: TensorId,
        parent_now: &SharedGeometry,
        made: SharedGeometry,
    ) -> (SharedGeometry, SharedGeometry) {
        if self.relaid.is_empty() {
            return (parent_now.clone(), made);
        }
        // (A parent with in-place metadata ops since the view was made:
        // the callers pass its geometry of then, those ops undone.)
        let on = if self.changed_since_made(parent, child) {
            parent_now.clone()
        } else {
            self.layout_when_made(parent, child)
        };
        if !self.metadata_changes.contains_key(&child) {
            return (on, self.layout_when_made(child, child));
        }
        // The geometry the view's in-place metadata ops were undone to is
        // its value's when the first of them ran, which a sync may have
        // regenerated from the parent's value since: the parent's geometry
        // of that time tells the step.
        let op = self.tensors[child].origin_op.as_str();
        if on != *parent_now && !view_step(op, &on, &made).is_told() {
            let later = self.relaid.get(&parent).into_iter().flatten();
            let candidates = later.map(|(_, g)| g).chain(std::iter::once(parent_now));
            if let Some(g) = candidates
                .filter(|g| **g != on)
                .find(|g| view_step(op, g, &made).is_told())
            {
                return (g.clone(), made);
            }
        }
        (on, made)
    }

    /// `replace_value`'s way back through `id`'s in-place metadata ops, last
    /// first: the geometry `id` was made with, and the sizes and strides
    /// the inverses give it from a value of `sizes` and `strides` on `now`.
    /// None when an op has no inverse tpi runs backwards (`as_strided_`,
    /// `resize_`…).
    fn undo_metadata_changes(
        &mut self,
        id: TensorId,
        now: &SharedGeometry,
        sizes: &Dims,
        strides: &Dims,
    ) -> OpResult<Option<(SharedGeometry, Dims, Dims)>> {
        self.undo_metadata_changes_since(id, 0, now, sizes, strides)
    }

    /// Whether `parent` had an in-place metadata op after view `child` was
    /// made (not among the view's metas).
    fn changed_since_made(&self, parent: TensorId, child: TensorId) -> bool {
        self.metadata_changes
            .get(&parent)
            .is_some_and(|c| c.iter().any(|c| c.made > child as usize))
    }

    /// The parent's new value (sizes and strides, its geometry `geom`) as
    /// view `child`'s metas see it: with the parent's in-place metadata ops
    /// since the view was made undone
    /// (tests/oracle/view_after_base_metadata_op.tp). None when an op has
    /// no inverse tpi runs.
    fn parent_value_then(
        &mut self,
        parent: TensorId,
        child: TensorId,
        geom: SharedGeometry,
        (sizes, strides): (Dims, Dims),
    ) -> OpResult<Option<(SharedGeometry, Dims, Dims)>> {
        if !self.changed_since_made(parent, child) {
            return Ok(Some((geom, sizes, strides)));
        }
        let replayed = self.replayed_steps.get(&parent).and_then(|steps| {
            let before = self.metadata_changes.get(&parent)?;
            let last = steps.last()?;
            (last.0 == sizes && last.1 == strides && steps.len() == before.len() + 1)
                .then(|| steps[before.iter().filter(|c| c.made <= child as usize).count()].clone())
        });
        let then =
            self.undo_metadata_changes_since(parent, child as usize, &geom, &sizes, &strides)?;
        Ok(match (then, replayed) {
            (Some((geom, undone, _)), Some((sizes, strides))) if undone == sizes => {
                Some((geom, sizes, strides))
            }
            (then, _) => then,
        })
    }

    /// `undo_metadata_changes` of the changes made after `since` tensors
    /// existed: back to the geometry a view made then was made on.
    fn undo_metadata_changes_since(
        &mut self,
        id: TensorId,
        since: usize,
        now: &SharedGeometry,
        sizes: &Dims,
        strides: &Dims,
    ) -> OpResult<Option<(SharedGeometry, Dims, Dims)>> {
        let Some(changes) = self.metadata_changes.get(&id) else {
            return Ok(Some((now.clone(), sizes.clone(), strides.clone())));
        };
        let changes: Vec<MetadataChange> =
            changes.iter().filter(|c| c.made > since).cloned().collect();
        self.undo_changes(&changes, now, sizes, strides)
    }

    /// `changes` (the last of a tensor's in-place metadata ops) undone
    /// from a value of `sizes` and `strides` on the geometry `now`: the
    /// geometry before the first of them and the value on it. None when an
    /// op has no inverse tpi runs.
    fn undo_changes(
        &mut self,
        changes: &[MetadataChange],
        now: &SharedGeometry,
        sizes: &Dims,
        strides: &Dims,
    ) -> OpResult<Option<(SharedGeometry, Dims, Dims)>> {
        let (mut after, mut sizes, mut strides) = (now.clone(), sizes.clone(), strides.clone());
        for MetadataChange {
            before,
            rule,
            after: made,
            ..
        } in changes.iter().rev()
        {
            let made = made.as_ref().unwrap_or(&after);
            // Sizes changed since by an op not recorded here (`resize_`):
            // no way back.
            if made.sizes() != after.sizes() {
                return Ok(None);
            }
            let step = view_step(rule, before, made);
            match shape::view_inverse_geometry(&step, &sizes, &strides, &mut self.sizes)? {
                Some(next) => (sizes, strides) = next,
                None => return Ok(None),
            }
            after = before.clone();
        }
        Ok(Some((after, sizes, strides)))
    }

    /// `id`'s view metas replayed on its parent's new value (`parent_value`,
    /// sizes and strides, of the parent `parent`): its view op, then its
    /// in-place metadata ops. None when a step is not one tpi replays.
    fn replay_view_metas(
        &mut self,
        id: TensorId,
        parent: TensorId,
        now: &SharedGeometry,
        parent_value: &(Dims, Dims),
    ) -> OpResult<Option<(Dims, Dims)>> {
        let changes = self.metadata_changes.get(&id).cloned().unwrap_or_default();
        let made = changes.first().map_or(now, |c| &c.before).clone();
        let parent_geom = self.tensors[parent].geom.clone();
        let Some((parent_geom, parent_sizes, parent_strides)) =
            self.parent_value_then(parent, id, parent_geom, parent_value.clone())?
        else {
            return Ok(None);
        };
        let (on, made) = self.step_geometries(parent, id, &parent_geom, made);
        let step = self.child_step(id, self.tensors[id].origin_op.as_str(), &on, &made);
        let Some((sizes, strides)) =
            shape::view_replay_geometry(&step, &parent_sizes, &parent_strides, &mut self.sizes)?
        else {
            return Ok(None);
        };
        if changes.is_empty() {
            return Ok(Some((sizes, strides)));
        }
        let mut steps = Vec::with_capacity(changes.len() + 1);
        let value = self.replay_metadata_changes_from(&changes, now, sizes, strides, &mut steps)?;
        if let Some(value) = &value {
            steps.push(value.clone());
            self.replayed_steps.insert(id, steps);
        }
        Ok(value)
    }

    /// `changes` (a tensor's in-place metadata ops, its last view metas)
    /// replayed from a value of `sizes` and `strides` on the geometry
    /// before the first of them, up to the geometry `now`. None when a step
    /// is not one tpi replays.
    fn replay_metadata_changes(
        &mut self,
        changes: &[MetadataChange],
        now: &SharedGeometry,
        sizes: Dims,
        strides: Dims,
    ) -> OpResult<Option<(Dims, Dims)>> {
        self.replay_metadata_changes_from(changes, now, sizes, strides, &mut Vec::new())
    }

    /// `replay_metadata_changes`, pushing onto `steps` the value before
    /// each change.
    fn replay_metadata_changes_from(
        &mut self,
        changes: &[MetadataChange],
        now: &SharedGeometry,
        mut sizes: Dims,
        mut strides: Dims,
        steps: &mut Vec<(Dims, Dims)>,
    ) -> OpResult<Option<(Dims, Dims)>> {
        for (k, change) in changes.iter().enumerate() {
            steps.push((sizes.clone(), strides.clone()));
            let next = changes.get(k + 1).map_or(now, |c| &c.before);
            let after = change.after.as_ref().unwrap_or(next);
            if after.sizes() != next.sizes() {
                return Ok(None);
            }
            if change.fitted_resize {
                strides = shape::contiguous_strides(after.sizes(), &mut self.sizes)?;
                sizes = after.sizes().clone();
                continue;
            }
            let step = view_step(change.rule, &change.before, after);
            match shape::view_replay_geometry(&step, &sizes, &strides, &mut self.sizes)? {
                Some(next) => (sizes, strides) = next,
                None => return Ok(None),
            }
        }
        Ok(Some((sizes, strides)))
    }

    /// The other views of tensors whose value `replace_value` gave new
    /// strides: functionalization regenerates each from its base's new
    /// value when it is next synced (`regenerate_from_base`), so ops see
    /// the view's ops replayed on the new layout, or the replay's error
    /// (`pending_values`), while its Python wrapper keeps the old strides
    /// (`python_geom`). Tensors are made after their
    /// bases, so one pass in id order reaches views of views. A step tpi
    /// cannot replay (slicing, which keeps the base's strides) leaves the
    /// view as it was. Rare: only writes that change a layout get here.
    fn regenerate_other_views(
        &mut self,
        mut changed: smallvec::SmallVec<[Regenerated; 4]>,
        depth: u8,
    ) -> OpResult<()> {
        let storage = self.tensors[changed[0].0].storage;
        let first = changed.iter().map(|c| c.0).min().unwrap_or(0) as usize;
        // Where each changed tensor is in `changed` (a base may have many views).
        let mut at: rustc_hash::FxHashMap<TensorId, usize> =
            changed.iter().enumerate().map(|(k, c)| (c.0, k)).collect();
        // Views whose replay failed: their views fail too (a sync replays
        // every view meta from the base).
        let mut failed: rustc_hash::FxHashMap<TensorId, OpError> = Default::default();
        for i in first + 1..self.tensors.len() {
            let id = i as TensorId;
            let t = &self.tensors[id];
            if t.storage != storage || !t.functional_view || t.metadata_mutated {
                continue;
            }
            if at.contains_key(&id) {
                continue;
            }
            let Some(parent) = self.provenance.parent(id) else {
                continue;
            };
            if let Some(e) = failed.get(&parent).cloned() {
                self.pending_values.insert(id, Err(e.clone()));
                failed.insert(id, e);
                continue;
            }
            let Some(&k) = at.get(&parent) else {
                continue;
            };
            let old = self.tensors[id].geom.clone();
            let (_, parent_old, sizes, strides) = changed[k].clone();
            let Some((parent_old, sizes, strides)) =
                self.parent_value_then(parent, id, parent_old, (sizes, strides))?
            else {
                continue;
            };
            let parent_new = self.geoms.intern(sizes, strides);
            let op = self.tensors[id].origin_op.as_str();
            let (on, made) = self.step_geometries(parent, id, &parent_old, old.clone());
            match self.replay_view(op, &on, &made, &parent_new) {
                Ok(Some(new)) => {
                    if self.value_differs(id, &old, new.sizes(), new.strides()) {
                        at.insert(id, changed.len());
                        changed.push((id, old.clone(), new.sizes().clone(), new.strides().clone()));
                        self.set_pending(id, &old, new);
                    }
                }
                Ok(None) => {}
                Err(e) => {
                    failed.insert(id, e.clone());
                    self.pending_values.insert(id, Err(e));
                }
            }
        }
        // A tensor set_() onto one of them took its view metas (set__impl):
        // it is regenerated to the same value when next synced, whatever
        // its id (tests/oracle/set_alias_regenerated.tp); and so is the
        // source of a changed tensor set_() onto it (written through the
        // alias).
        if !self.set_sources.is_empty() {
            let aliases: smallvec::SmallVec<[(TensorId, TensorId); 2]> = self
                .set_sources
                .iter()
                .filter(|(id, (src, _))| self.tensors[**id].storage == storage && id != &src)
                .flat_map(|(id, (src, _))| {
                    [(*id, *src), (*src, *id)]
                        .into_iter()
                        .filter(|(to, from)| !at.contains_key(to) && at.contains_key(from))
                })
                .collect();
            // The aliases given a new value: their own views are replayed
            // on it in turn (tests/oracle/set_alias_views_regenerated.tp).
            let mut aliased: smallvec::SmallVec<[Regenerated; 4]> = smallvec::SmallVec::new();
            for (id, from) in aliases {
                let (_, mut from_old, mut sizes, mut strides) = changed[at[&from]].clone();
                // `from` was set_() onto `id` and changed its metadata
                // since: those are view metas of its own, undone to give
                // the value `id` shares (tests/oracle/set_source_after_target_metadata_op.tp).
                if self
                    .set_sources
                    .get(&from)
                    .is_some_and(|&(src, _)| src == id)
                {
                    let after_set: Vec<MetadataChange> = self
                        .metadata_changes
                        .get(&from)
                        .and_then(|c| {
                            let k = c.iter().rposition(|c| c.rule == "set_")?;
                            Some(c[k + 1..].to_vec())
                        })
                        .unwrap_or_default();
                    if !after_set.is_empty() {
                        match self.undo_changes(&after_set, &from_old, &sizes, &strides)? {
                            Some(then) => (from_old, sizes, strides) = then,
                            None => continue,
                        }
                    }
                }
                let old = self.tensors[id].geom.clone();
                if self.tensors[id].storage != storage
                    || old.sizes() != from_old.sizes()
                    || self.pending_values.contains_key(&id)
                {
                    continue;
                }
                if self.value_differs(id, &old, &sizes, &strides) {
                    let new = self.geoms.intern(sizes.clone(), strides.clone());
                    aliased.push((id, old.clone(), sizes, strides));
                    self.set_pending(id, &old, new);
                }
            }
            if !aliased.is_empty() && depth < 8 {
                self.regenerate_other_views(aliased, depth + 1)?;
            }
        }
        Ok(())
    }

    /// Functionalization refuses a write through a view chain in which
    /// `as_strided` is not the first view (`FunctionalStorageImpl::
    /// add_update`): the written tensor's views from the storage's base, an
    /// in-place metadata change counting as one more.
    /// Analysis only (tests/oracle/random/regress_analysis_view_errors.tp).
    pub fn check_as_strided_chain(&self, target: TensorId) -> OpResult<()> {
        // The chain from `target` up to the base, `target` first.
        let mut chain: smallvec::SmallVec<[TensorId; 4]> = smallvec::smallvec![target];
        for (child, parent) in self.view_parents(target) {
            if self.tensors[parent].storage != self.tensors[child].storage {
                break;
            }
            chain.push(parent);
        }
        // A copying reshape's `_unsafe_view` of its copy is a view to
        // functionalization (`_unsafe_view_functionalize` records a view
        // meta), though tpi makes its result a tensor of its own.
        let root = chain[chain.len() - 1];
        let unsafe_view = self.unsafe_view_sources.contains_key(&root);
        if chain.len() < 2 && !unsafe_view {
            return Ok(());
        }
        // The view metas in order, from the base down: a metadata change of
        // the view's base made before the view, then the view's own; last
        // the written tensor's own metadata changes.
        let mut metas: smallvec::SmallVec<[bool; 8]> = smallvec::SmallVec::new();
        if unsafe_view {
            metas.push(false);
        }
        for &t in chain.iter().rev().skip(1) {
            if self.made_after_metadata_change.contains(&t) {
                metas.push(false);
            }
            metas.push(self.tensors[t].origin_op.as_str() == "as_strided");
        }
        if self.tensors[target].metadata_mutated {
            metas.push(false);
        }
        match metas.iter().skip(1).position(|&is_as_strided| is_as_strided) {
            Some(i) => Err(OpError::new(
                "other",
                format!(
                    "During torch.compile, encountered a mutation on a view chain of length {}, where view {} was an as_strided() call. as_strided() is non-compositional, and therefore is not possible to functionalize properly today,so this behavior is banned in compile. As a workaround, you can either remove the mutation from the model code, or you can insert a graph break right before the mutation with torch._dynamo.graph_break(). If you would like this behavior to work properly, please comment on https://github.com/pytorch/pytorch/issues/104505.",
                    metas.len(),
                    i + 1
                ),
            )
            .label(self.tensors[target].origin, "the written view")
            .help("write to the base instead, or make as_strided the first view of the base")),
            None => Ok(()),
        }
    }

    /// `resize_()` to `sizes` (contiguous, at the tensor's offset): when the
    /// storage must grow it does, and the analysis
    /// (`resize__functionalization`, `maybe_replace_storage`) refuses a
    /// view, or gives the tensor a storage of its own (`grown_by_resize`).
    /// `resize_as_` (`refuse_views` false) grows a view without complaint.
    /// Another wrapper of the storage also makes PyTorch refuse (the
    /// storage's use count): one held by a variable of the running function
    /// or of a caller (`Machine::bound_tensors`), one autograd saved for a
    /// backward they can still run (`saved_shares_storage`), or the one
    /// FunctionalTensorMode keeps of a factory's result made under
    /// inference_mode (`FunctionalStorage::factory_in_inference`). Sizes not
    /// all known: nothing. `wrapper`: the sizes the Python wrapper is
    /// resized to where they are not `sizes` (a resize_as_ whose template's
    /// wrapper is stale, `grow_outer`).
    pub fn resize_storage_for(
        &mut self,
        target: TensorId,
        sizes: &[SymInt],
        refuse_views: bool,
        wrapper: Option<&[SymInt]>,
    ) -> OpResult<bool> {
        // Taken for this call only, whatever it decides.
        let bound = std::mem::take(&mut self.bound_tensors);
        let t = &self.tensors[target];
        let (Some(offset), Some(have)) = (
            t.offset.as_int(),
            self.storages[t.storage]
                .nbytes
                .as_ref()
                .and_then(SymInt::as_int),
        ) else {
            return Ok(false);
        };
        let mut numel: i64 = 1;
        for s in sizes {
            let Some(n) = s.as_int() else {
                return Ok(false);
            };
            numel = numel.saturating_mul(n);
        }
        // computeStorageNbytesContiguous: (numel + offset) * itemsize in
        // 64 bits.
        let need = numel
            .checked_add(offset)
            .and_then(|n| n.checked_mul(t.dtype.itemsize()));
        let Some(need) = need else {
            return Err(OpError::new(
                "other",
                format!(
                    "Storage size calculation overflowed with sizes={}",
                    shape::show(sizes)
                ),
            ));
        };
        let outer_numel = match wrapper {
            Some(w) => match shape::known_numel(w) {
                Some(n) => n,
                None => return Ok(false),
            },
            None => numel,
        };
        if numel == 0 {
            if outer_numel > 0 {
                self.grow_outer(target, outer_numel);
            }
            return Ok(false);
        }
        let t = &self.tensors[target];
        let storage = t.storage;
        // resize__functionalization compares with the FunctionalStorageImpl's
        // size, which a resize_as_ that grew the storage left as it was.
        let functional_have = match self.functional_nbytes.get(&storage) {
            Some(&n) if refuse_views && self.mode == Mode::Analysis => n,
            _ => have,
        };
        if need <= functional_have {
            self.grow_outer(target, outer_numel);
            return Ok(false);
        }
        if self.mode == Mode::Analysis {
            // (`_unsafe_view`'s result is, to functionalization, a view of
            // its source: matmul's fold.)
            let is_view = self.viewed_in_place.contains(&target)
                || self.unsafe_view_sources.contains_key(&target)
                || self
                    .view_parents(target)
                    .first()
                    .is_some_and(|&(_, parent)| self.tensors[parent].storage == storage);
            // Another wrapper of the storage that Python holds: its view
            // (or base) keeps the storage's use count above one.
            let shared = bound
                .iter()
                .any(|&t| t != target && self.tensors[t].storage == storage)
                || self.storages[storage].factory_in_inference
                || self.saved_shares_storage(&bound, target, storage);
            if refuse_views && (is_view || shared) {
                return Err(OpError::new(
                    "other",
                    "Attempted to resize a view tensor to a larger size. This is not allowed in the functionalization pass",
                )
                .help("resize the base tensor, or clone the view first"));
            }
            if !refuse_views {
                // resize_as_ grows the fake storage, not the functional
                // storage's recorded size (tests/oracle/resize_as_then_resize.tp).
                self.functional_nbytes.entry(storage).or_insert(have);
            }
            if is_view && !refuse_views {
                // resize_as_ writes a value of the new sizes back through the
                // view (tests/oracle/resize_as_view_metas.tp).
                self.grown_by_resize.insert(target);
            } else if !is_view {
                self.grown_by_resize.insert(target);
                // resize_'s maybe_replace_storage gives the wrapper a fresh
                // functional storage: the writes before it are no data
                // mutation of the input any more (its generation starts
                // again). A resize_as_ is a data mutation of the storage
                // it has: its counters go on
                // (tests/oracle/resize_as_grow_keeps_mutations.tp).
                if refuse_views {
                    let st = &mut self.storages[storage];
                    st.mutations = 0;
                    st.mutations_no_grad = 0;
                    st.mutated_at.clear();
                }
            }
        }
        if self.mode == Mode::Analysis {
            // The wrappers that kept this storage keep its old size.
            self.outer_nbytes.entry(storage).or_insert(have);
        }
        // (A resize_ the functional storage's size refused, within the fake
        // storage: the value is resized from a clone, `need` at least.)
        let nbytes = if need > have {
            need
        } else {
            let clone = self.numel(target)?.as_int();
            clone
                .and_then(|n| n.checked_mul(t.dtype.itemsize()))
                .map_or(need, |c| c.max(need))
        };
        self.storages[storage].nbytes = Some(SymInt::int(nbytes));
        if refuse_views && self.mode == Mode::Analysis {
            // maybe_replace_storage: a FunctionalStorageImpl of the new
            // value, whose recorded size is its layout's (`get_nbytes`).
            if nbytes == need {
                self.functional_nbytes.remove(&storage);
            } else {
                self.functional_nbytes.insert(storage, need);
            }
        }
        self.grow_outer(target, outer_numel);
        Ok(true)
    }

    /// The analysis's rerun of a resize of `target` (to `numel` elements,
    /// contiguous) on its Python wrapper: FunctionalTensorMode runs
    /// inplace_view ops on the wrapper subclass too, under no_dispatch. It
    /// grows the wrapper's storage (`alias_key`, shared by the wrappers of
    /// its views, and kept by `set_()`) when the wrapper's offset and the
    /// new sizes need more bytes than it has, whatever the functional
    /// storage did; the grown storage is on the meta device, and any later
    /// view of a tensor whose wrapper shares it fails
    /// (`_functionalize_unsafe_set` in `return_and_correct_aliasing`;
    /// tests/oracle/resize_wrapper_storage_after_set.tp).
    fn grow_outer(&mut self, target: TensorId, numel: i64) {
        if self.mode != Mode::Analysis {
            return;
        }
        let t = &self.tensors[target];
        let key = t.alias_key;
        let offset = self
            .python_storage
            .get(&target)
            .map_or(&t.offset, |(_, o)| o);
        let have = match self.outer_nbytes.get(&key) {
            Some(&n) => Some(n),
            None => self.storages[key].nbytes.as_ref().and_then(SymInt::as_int),
        };
        let need = offset
            .as_int()
            .and_then(|o| numel.checked_add(o))
            .and_then(|n| n.checked_mul(t.dtype.itemsize()));
        if let (Some(need), Some(have)) = (need, have) {
            if need > have {
                self.grown_outer.insert(key);
                self.outer_nbytes.insert(key, need);
            }
        }
    }

    /// `resize_as_` in the analysis is a data write of a value with the
    /// template's sizes (`sizes`, `strides`): the next sync takes it back to
    /// the storage's base through the inverse of each of `id`'s view metas,
    /// last first, then regenerates `id` by replaying them on the base's new
    /// value. Each step runs on the new rank and may refuse it (`t()` of a
    /// 3-d value, a transpose's dim out of range). The regenerated geometry
    /// (an in-place `unsqueeze_(0)` before the resize puts its size-1 dim
    /// back in front; a slice's scatter takes any value and gives the base's
    /// sizes back), or None when a step is not one tpi follows (a diagonal,
    /// `set_()`). tests/oracle/resize_as_view_metas.tp.
    pub fn resize_as_write_back(
        &mut self,
        id: TensorId,
        sizes: &[SymInt],
        strides: &[SymInt],
    ) -> OpResult<Option<(Dims, Dims)>> {
        // The view metas, last first: (op, geometry before, geometry after).
        type Step = (
            &'static str,
            SharedGeometry,
            SharedGeometry,
            Option<(i64, i64)>,
            Option<ViewArg>,
        );
        let mut steps: Vec<Step> = Vec::new();
        let (mut cur, mut when) = (id, usize::MAX);
        loop {
            if steps.len() > 256 || self.set_sources.contains_key(&cur) {
                return Ok(None);
            }
            let t = &self.tensors[cur];
            let changes: &[MetadataChange] = self
                .metadata_changes
                .get(&cur)
                .map_or(&[], |c| c.as_slice());
            // The changes made before the view being followed took its
            // metas (a change counts the tensors that existed then).
            for (k, c) in changes.iter().enumerate().rev() {
                if c.made > when {
                    continue;
                }
                let after = match (&c.after, changes.get(k + 1)) {
                    (Some(a), _) => a.clone(),
                    (None, Some(next)) => next.before.clone(),
                    (None, None) => t.geom.clone(),
                };
                steps.push((c.rule, c.before.clone(), after, c.dims, None));
            }
            let Some(parent) = self.provenance.parent(cur) else {
                break;
            };
            if !t.functional_view || self.tensors[parent].storage != t.storage {
                break;
            }
            let made = changes
                .first()
                .map_or_else(|| t.geom.clone(), |c| c.before.clone());
            let on = self
                .metadata_changes
                .get(&parent)
                .and_then(|c| c.iter().find(|c| c.made > cur as usize))
                .map_or_else(|| self.layout_when_made(parent, cur), |c| c.before.clone());
            let arg = self.view_args.get(&cur).copied();
            steps.push((t.origin_op.as_str(), on, made, None, arg));
            (cur, when) = (parent, cur as usize);
        }
        if steps.is_empty() {
            return Ok(None);
        }
        let (mut sizes, mut strides): (Dims, Dims) = (sizes.into(), strides.into());
        for inverse in [true, false] {
            let order: Box<dyn Iterator<Item = &Step>> = if inverse {
                Box::new(steps.iter())
            } else {
                Box::new(steps.iter().rev())
            };
            for (op, before, after, dims, arg) in order {
                // squeeze's dims as given: its inverse
                // (`unsqueeze_copy_to`) unsqueezes each of them that has
                // size 1 in the base, in the base's numbering; its replay
                // squeezes them on the value's rank.
                if let (&"squeeze", Some(ViewArg::SqueezeDims { dims, len })) = (op, arg) {
                    let given = &dims[..usize::from(*len)];
                    if inverse {
                        let base = before.sizes();
                        let mut mask = [false; 64];
                        for &d in given {
                            if let Some(m) =
                                mask.get_mut(shape::wrap_dim(i64::from(d), base.len())?)
                            {
                                *m = true;
                            }
                        }
                        if base.is_empty() {
                            continue;
                        }
                        for (d, n) in base.iter().enumerate() {
                            if mask.get(d) == Some(&true) && self.sizes.eq_int(n, 1) {
                                let w = shape::wrap_dim(d as i64, sizes.len() + 1)?;
                                shape::unsqueeze_geometry(
                                    &mut sizes,
                                    &mut strides,
                                    w,
                                    &mut self.sizes,
                                )?;
                            }
                        }
                    } else {
                        let r = sizes.len();
                        let mut drop = smallvec::SmallVec::<[usize; 8]>::new();
                        for &d in given {
                            drop.push(shape::wrap_dim(i64::from(d), r)?);
                        }
                        drop.sort_unstable();
                        drop.dedup();
                        shape::squeeze_geometry(&mut sizes, &mut strides, &drop, &mut self.sizes);
                    }
                    continue;
                }
                // An in-place transpose's dims, wrapped on the value's rank
                // (its geometries do not tell them when they are alike);
                // unsqueeze_'s dim as given, which its inverse (squeeze)
                // wraps on the value's rank and its replay on one more.
                if let Some((d0, d1)) = dims {
                    let r = sizes.len();
                    match (*op, inverse) {
                        ("transpose", _) => {
                            shape::wrap_dim(*d0, r)?;
                            shape::wrap_dim(*d1, r)?;
                        }
                        // squeeze(dim) drops the dim only when it has size 1.
                        ("unsqueeze", true) => {
                            let w = shape::wrap_dim(*d0, r)?;
                            shape::squeeze_geometry(
                                &mut sizes,
                                &mut strides,
                                &[w],
                                &mut self.sizes,
                            );
                            continue;
                        }
                        ("unsqueeze", false) => {
                            let w = shape::wrap_dim(*d0, r + 1)?;
                            shape::unsqueeze_geometry(
                                &mut sizes,
                                &mut strides,
                                w,
                                &mut self.sizes,
                            )?;
                            continue;
                        }
                        _ => {}
                    }
                }
                // slice_scatter and select_scatter on fake tensors take a
                // value of any sizes and give the base's; the replay then
                // gives the view's own back (tests/oracle/resize_as_slice_view.tp).
                if slices_along_dim(op) || selects_along_dim(op) {
                    let (from, to) = if inverse {
                        (after, before)
                    } else {
                        (before, after)
                    };
                    if !inverse && (sizes != *from.sizes() || strides != *from.strides()) {
                        return Ok(None);
                    }
                    (sizes, strides) = (to.sizes().clone(), to.strides().clone());
                    continue;
                }
                let step = view_step(op, before, after);
                if !shape::view_step_on(&step, inverse, &mut sizes, &mut strides, &mut self.sizes)?
                {
                    return Ok(None);
                }
            }
        }
        Ok(Some((sizes, strides)))
    }

    /// A data write to a bool tensor through an `expand` view reaches the
    /// expanded base through `expand_inverse`, `base + sum_to(mutated_view -
    /// base)`, and subtracting two bool tensors is refused; the write's own
    /// sync applies it at once. Analysis only
    /// (tests/oracle/bool_expand_write.tp). With symbolic sizes FakeTensor
    /// runs torch._refs' sub, which does not refuse
    /// (tests/oracle/bool_sub_symbolic.tp).
    pub fn check_expand_inverse_dtype(&self, target: TensorId) -> OpResult<()> {
        if self.tensors[target].dtype != DType::Bool {
            return Ok(());
        }
        for (child, parent) in self.view_parents(target) {
            if self.tensors[parent].storage != self.tensors[child].storage {
                break;
            }
            if matches!(
                self.tensors[child].origin_op.as_str(),
                "expand" | "expand_as" | "broadcast_to"
            ) && self.has_static_sizes(child)
                && self.has_static_sizes(parent)
            {
                return Err(OpError::new("other", "Subtraction, the `-` operator, with two bool tensors is not supported. Use the `^` or `logical_xor()` operator instead.")
                    .help("functionalization writes this bool value back through an `expand` by subtracting: clone() the expanded tensor before writing it"));
            }
        }
        Ok(())
    }

    /// A data write through an `unfold` view whose windows overlap (size
    /// greater than step) reaches its base through `unfold_inverse`, which
    /// refuses it (`FunctionalInverses::unfold_inverse`): whether or not
    /// the base is read again. Eager writes through such views.
    /// Analysis only (tests/oracle/unfold_writes.tp).
    pub fn check_unfold_inverse(&mut self, target: TensorId) -> OpResult<()> {
        if self.unfold_windows.is_empty() {
            return Ok(());
        }
        // The view metas from `target` up: a tensor `set_()` gave another's
        // has that one's (tests/oracle/unfold_writes.tp).
        let mut metas: smallvec::SmallVec<[(TensorId, TensorId); 4]> = smallvec::SmallVec::new();
        // `at`: when the metas being followed were taken (a view takes its
        // parent's when it is made).
        let (mut cur, mut at) = (target, usize::MAX);
        let mut jumps = 0;
        while metas.len() < 10_000 {
            if let Some(&(source, made)) = self.set_sources.get(&cur) {
                // (set_() calls with no tensor made between them tie on
                // `made`: the jumps are bounded.)
                if made <= at && jumps < 64 {
                    (cur, at) = (source, made);
                    jumps += 1;
                    continue;
                }
            }
            let Some(parent) = self.provenance.parent(cur) else {
                break;
            };
            metas.push((cur, parent));
            (cur, at) = (parent, cur as usize);
        }
        for (view, parent) in metas {
            let (v, p) = (&self.tensors[view], &self.tensors[parent]);
            if v.storage != p.storage {
                break;
            }
            let Some(&(size, step)) = self.unfold_windows.get(&view) else {
                continue;
            };
            if size <= step && p.sizes().iter().any(SymInt::is_symbolic) {
                // unfold_inverse calls unfold_backward with base.sizes()
                // (not sym_sizes): the write reads the base's sizes as ints,
                // which guards every symbolic one to its hint.
                let sizes = p.sizes().clone();
                for d in sizes.iter().filter(|d| d.is_symbolic()) {
                    self.sizes.concrete(d, "unfold_inverse")?;
                }
                // The base's new value is made after that.
                self.note_written(v.storage);
                continue;
            }
            if size > step {
                return Err(OpError::new(
                    "other",
                    "While executing unfold, functionalization encountered a tensor being mutated that has internal overlap. When using torch.compile (or running functionalization directly), this is banned as the behavior is not well defined. Consider cloning the tensor before mutating it, or removing the mutation from your model.",
                )
                .label(v.origin, "the overlapping windows")
                .help("clone the unfolded view before writing to it, or write to the base"));
            }
        }
        Ok(())
    }

    /// A data write through an `as_strided` view reaches its base through
    /// `as_strided_scatter` when the analysis syncs the write, which checks
    /// the view against the base's storage: a view eager would already
    /// have refused fails there (tests/oracle/random/regress_eager_misc.tp).
    /// Analysis only.
    pub fn check_scatter_bounds(&mut self, target: TensorId) -> OpResult<()> {
        let parents = self.view_parents(target);
        let root = parents.last().map(|&(_, p)| p);
        for (view, _) in parents {
            let t = &self.tensors[view];
            if t.origin_op.as_str() != "as_strided" {
                continue;
            }
            // as_strided_scatter writes into a clone of the base: one of
            // symbolic sizes (an input's) is checked with a guard, which
            // refines the symbols' ranges
            // (tests/oracle/as_strided_scatter_guard.tp).
            let need = extent(t.sizes(), t.strides(), &t.offset);
            let mut overrun = None;
            if let (Some(need), Some(have)) = (need, root.and_then(|r| self.symbolic_extent(r))) {
                if !self.sizes.lt(&have, &SymInt::int(need)) {
                    continue;
                }
                let itemsize = self.tensors[view].dtype.itemsize();
                let have = self.sizes.mul(&have, &SymInt::int(itemsize))?;
                overrun = Some((need * itemsize, self.sizes.env.display(&have)));
            }
            let t = &self.tensors[view];
            let overrun = overrun.or_else(|| {
                self.storage_overrun(t.storage, t.sizes(), t.strides(), &t.offset, t.dtype)
                    .map(|(need, have)| (need, have.to_string()))
            });
            if let Some((need, have)) = overrun {
                return Err(OpError::new(
                    "other",
                    format!(
                        "as_strided_scatter: sizes {}, strides {}, storage offset {}  and itemsize {} requiring a storage size of {need} are out of bounds for storage of size {have}",
                        shape::show(t.sizes()),
                        shape::show(t.strides()),
                        t.offset,
                        t.dtype.itemsize()
                    ),
                )
                .label(t.origin, "the as_strided view, past its base's storage")
                .help("eager refuses this view when it is made; keep as_strided within the tensor's storage"));
            }
        }
        Ok(())
    }

    /// The elements a tensor of symbolic sizes spans from its storage's
    /// start (`offset + sum((size - 1) * stride) + 1`, its sizes taken as
    /// nonzero); None when its geometry is all ints.
    fn symbolic_extent(&self, t: TensorId) -> Option<SymInt> {
        let t = &self.tensors[t];
        let symbolic = (t.sizes().iter().chain(t.strides()))
            .chain([&t.offset])
            .any(SymInt::is_symbolic);
        if !symbolic {
            return None;
        }
        let one = SymInt::int(1);
        let mut end = self.sizes.add(&t.offset, &one).ok()?;
        for (size, stride) in t.sizes().iter().zip(t.strides()) {
            let last = self.sizes.sub(size, &one).ok()?;
            end = self
                .sizes
                .add(&end, &self.sizes.mul(&last, stride).ok()?)
                .ok()?;
        }
        Some(end)
    }

    /// A data write to a view after a resize_ that fit its storage (a view
    /// meta `as_strided(size, contiguous strides)` on the view's value of
    /// then, or a base's after an earlier in-place metadata op): the write
    /// goes back through `as_strided_scatter` onto that value, a copy of its
    /// own size, which a resize_ past its elements overruns. Analysis only.
    pub fn check_resize_view_bounds(&mut self, target: TensorId) -> OpResult<()> {
        if self.resize_views.is_empty() {
            return Ok(());
        }
        // The written tensor, and the tensors the write goes back through.
        let storage = self.tensors[target].storage;
        let mut chain = vec![target];
        chain.extend(
            self.view_parents(target)
                .into_iter()
                .map(|(_, p)| p)
                .take_while(|&p| self.tensors[p].storage == storage),
        );
        for id in chain {
            self.check_resize_view_bound(id)?;
        }
        Ok(())
    }

    /// `check_resize_view_bounds` for one tensor of the chain.
    fn check_resize_view_bound(&mut self, target: TensorId) -> OpResult<()> {
        let Some(sizes) = self.resize_views.get(&target).cloned() else {
            return Ok(());
        };
        let t = &self.tensors[target];
        let is_view = self
            .provenance
            .parent(target)
            .is_some_and(|p| self.tensors[p].storage == t.storage);
        let Some((k, change)) = self
            .metadata_changes
            .get(&target)
            .and_then(|c| c.iter().enumerate().rev().find(|(_, c)| c.rule == "resize"))
        else {
            return Ok(());
        };
        let numel = shape::known_numel;
        // A base's first view meta runs on the base's value, its storage
        // whole (any later one on a copy): the storage's, unless a
        // resize_as_ before it replaced the value with a smaller tensor
        // (tests/oracle/resize_after_resize_as_bounds.tp).
        let have = if !is_view && k == 0 {
            match self.resized_as_values.get(&target) {
                Some(&(then, n)) if then <= change.made => Some(n),
                _ => return Ok(()),
            }
        } else {
            numel(change.before.sizes())
        };
        let (Some(have), Some(need)) = (have, numel(&sizes)) else {
            return Ok(());
        };
        if need <= have || need == 0 {
            return Ok(());
        }
        let itemsize = t.dtype.itemsize();
        let strides = shape::contiguous_strides(&sizes, &mut self.sizes)?;
        Err(OpError::new(
            "other",
            format!(
                "as_strided_scatter: sizes {}, strides {}, storage offset 0  and itemsize {itemsize} requiring a storage size of {} are out of bounds for storage of size {}",
                shape::show(&sizes),
                shape::show(&strides),
                need * itemsize,
                have * itemsize
            ),
        )
        .help("functionalization writes this view back through the resize_, onto the view's elements before it: resize the base, or clone the view first"))
    }

    /// The bytes a layout of `dtype` elements needs from `storage` and the
    /// bytes it has, when it needs more than it has (both known): what
    /// `as_strided` checks (`setStorage` in eager, `as_strided_scatter` in
    /// the analysis).
    pub fn storage_overrun(
        &self,
        storage: StorageId,
        sizes: &[SymInt],
        strides: &[SymInt],
        offset: &SymInt,
        dtype: DType,
    ) -> Option<(i64, i64)> {
        let have = self.storages[storage].nbytes.as_ref()?.as_int()?;
        let need = extent(sizes, strides, offset)?.checked_mul(dtype.itemsize())?;
        (need > have).then_some((need, have))
    }

    /// The views from `t` up through the tensors they were made from, as
    /// `(view, parent)` pairs, `t`'s first, up to a tensor no view op made.
    /// Parents are made before their views, so the walk ends; the bound
    /// only limits it.
    fn view_parents(&self, t: TensorId) -> smallvec::SmallVec<[(TensorId, TensorId); 4]> {
        let mut steps = smallvec::SmallVec::new();
        let mut cur = t;
        while steps.len() < 10_000 {
            let Some(parent) = self.provenance.parent(cur) else {
                break;
            };
            steps.push((cur, parent));
            cur = parent;
        }
        steps
    }

    /// autograd's `check_inplace` (and `handle_view_on_rebase`) for an in-place op
    /// on `target` whose other tensor inputs are `others`.
    pub fn check_inplace(&mut self, target: TensorId, others: &[TensorId]) -> OpResult<()> {
        // What the checks read of the tensor (not a clone of its shape).
        struct Target {
            view: Option<ViewInfo>,
            grad_fn: Option<NodeId>,
            output_index: u32,
            origin: Span,
            origin_op: &'static str,
        }
        let t = {
            let t = &self.tensors[target];
            Target {
                view: t.view,
                grad_fn: t.grad_fn,
                output_index: t.output_index,
                origin: t.origin,
                origin_op: t.origin_op.as_str(),
            }
        };
        if self.inference_update_refused(target) {
            // With autograd's keys (another operand, or a wrapped number),
            // autograd's leaf check runs before the version bump fails.
            let mut operands: smallvec::SmallVec<[TensorId; 4]> = others.into();
            operands.push(target);
            if self.reaches_autograd(&operands) && self.grad_enabled {
                self.check_leaf_inplace(target, t.origin)?;
            }
            return Err(OpError::new(
                "inference-tensor",
                "Inplace update to inference tensor outside InferenceMode is not allowed. You can make a clone to get a normal tensor before doing inplace update.",
            )
            .help("clone the tensor outside inference_mode before updating it"));
        }
        let any_requires =
            self.requires_grad(target) || others.iter().any(|&o| self.requires_grad(o));
        if !(any_requires && self.grad_enabled && !self.inference_mode) {
            return Ok(());
        }
        if let Some(view) = &t.view {
            let name = match t.grad_fn {
                Some(n) => self.nodes[n].name.as_str(),
                None => node_name(t.origin_op),
            };
            let index = t.output_index;
            match view.creation_meta {
                CreationMeta::Default => {}
                // handle_view_on_rebase: a multi-output or custom-Function view
                // without a grad_fn was made where nothing required grad, and
                // autograd words it as a view created in no_grad mode.
                CreationMeta::MultipleOutputs | CreationMeta::InCustomFunction
                    if t.grad_fn.is_none() =>
                {
                    let suffix = if view.creation_meta == CreationMeta::MultipleOutputs {
                        " This view is the output of a function that returns multiple views. Such functions do not allow the output views to be modified inplace. You should replace the inplace operation by an out-of-place one."
                    } else {
                        " This view was created inside a custom Function (or because an input was returned as-is) and the autograd logic to handle view+inplace would override the custom backward associated with the custom Function, leading to incorrect gradients. This behavior is forbidden. You can fix this by cloning the output of the custom Function."
                    };
                    return Err(OpError::new(
                        "inplace-view-other",
                        format!("A view was created in no_grad mode and is being modified inplace with grad mode enabled.{suffix}"),
                    )
                    .label(t.origin, format!("made here by `{}`", t.origin_op))
                    .help("use the out-of-place op, or clone the view first"));
                }
                CreationMeta::MultipleOutputs => {
                    return Err(OpError::new(
                        "inplace-multi-output-view",
                        format!("Output {index} of {name} is a view and is being modified inplace. This view is the output of a function that returns multiple views. Such functions do not allow the output views to be modified inplace. You should replace the inplace operation by an out-of-place one."),
                    )
                    .label(t.origin, format!("made here by `{}`, which returns several views", t.origin_op))
                    .help("use the out-of-place op (`y = y * 2`), or clone the piece first"));
                }
                CreationMeta::InCustomFunction => {
                    return Err(OpError::new(
                        "inplace-custom-function-view",
                        format!("Output {index} of {name} is a view and is being modified inplace. This view was created inside a custom Function (or because an input was returned as-is) and the autograd logic to handle view+inplace would override the custom backward associated with the custom Function, leading to incorrect gradients. This behavior is forbidden. You can fix this by cloning the output of the custom Function."),
                    )
                    .label(t.origin, "the custom Function made this view")
                    .help("clone the output of the custom Function before modifying it"));
                }
                CreationMeta::NoGradMode => {
                    return Err(OpError::new(
                        "inplace-view-other",
                        "A view was created in no_grad mode and is being modified inplace with grad mode enabled. Given that this use case is ambiguous and error-prone, it is forbidden. You can clarify your code by moving both the view and the inplace either both inside the no_grad block (if you don't want the inplace to be tracked) or both outside (if you want the inplace to be tracked).",
                    )
                    .label(t.origin, "the view was made here, under no_grad")
                    .help("make the view and the in-place op both inside or both outside `torch.no_grad()`"));
                }
                CreationMeta::InferenceMode => {
                    return Err(OpError::new(
                        "inplace-view-other",
                        "A view was created in inference mode and is being modified inplace in normal mode.",
                    ));
                }
            }
            if self.requires_grad(target) && self.leaf_for_check(view.base)? {
                let leaf_span = self.tensors[view.base].origin;
                return Err(OpError::new(
                    "inplace-view-of-leaf",
                    "a view of a leaf Variable that requires grad is being used in an in-place operation.",
                )
                .label(t.origin, format!("this view (`{}`) of the leaf was made here", t.origin_op))
                .label(leaf_span, "the leaf that requires grad")
                .help("do it under `torch.no_grad()`, or clone the leaf first"));
            }
        }
        self.check_leaf_inplace(target, t.origin)
    }

    /// check_inplace's last check: a leaf that requires grad.
    fn check_leaf_inplace(&self, target: TensorId, origin: Span) -> OpResult<()> {
        if self.requires_grad(target) && self.stored_is_leaf(target) {
            return Err(OpError::new(
                "inplace-leaf",
                "a leaf Variable that requires grad is being used in an in-place operation.",
            )
            .label(origin, "the leaf that requires grad")
            .help("use the out-of-place op (`x = x * 2`), or do it under `torch.no_grad()`"));
        }
        Ok(())
    }

    /// A data write through a piece of `unbind` makes PyTorch's analysis
    /// specialise the symbols of the tensor unbound to their hints: the
    /// written view is regenerated by replaying its view chain, and
    /// unbind's replay guards them. Pieces of split and chunk, and
    /// `select`, do not (tests/oracle/random/regress_symbolic_sizes.tp);
    /// a tensor above the unbound one keeps its symbols.
    /// A tensor `set_()` onto a view took the view's metas, so a write
    /// through it replays those (tests/oracle/set_onto_unbind_piece.tp).
    fn specialise_unbind_base(&mut self, target: TensorId) {
        let mut cur = target;
        for _ in 0..8 {
            for (view, parent) in self.view_parents(cur) {
                let t = &self.tensors[view];
                if t.multi_output_view && t.origin_op.as_str() == "unbind" {
                    self.guard_sizes_to_hints(parent, |_| true);
                }
            }
            match self.set_sources.get(&cur) {
                Some(&(src, _)) if src != cur && self.set_onto_views.contains(&cur) => cur = src,
                _ => break,
            }
        }
    }

    /// The write's sync takes the new value back to the base through each
    /// view meta's inverse, last first; a split piece's inverse clamps its
    /// end to the base's size (`if (end > dim_size) end = dim_size`), a
    /// guard when the size is symbolic: a write to `x.split(3, 1)[1]` of an
    /// (3, m) input with m = 5 guards `6 > m`
    /// (tests/oracle/split_inverse_end_guard.tp).
    #[inline(never)]
    fn guard_split_inverse_ends(&mut self, target: TensorId) {
        for (view, parent) in self.view_parents(target) {
            if let Some((d, end)) = self.split_ends.get(&view) {
                if let Some(size) = self.tensors[parent].sizes().get(usize::from(*d)) {
                    let (size, end) = (size.clone(), end.clone());
                    self.sizes.lt(&size, &end);
                }
            }
        }
    }

    /// Wrapping a view whose size is 0 at the hints in a FunctionalTensor
    /// (`_make_wrapper_subclass` with its strides and offset) guards the
    /// size to 0, which ShapeEnv solves (`o[5:]` of an (n, 10) with n = 5
    /// makes n static). A fresh tensor of that size keeps it symbolic.
    /// (A guard ShapeEnv cannot solve, `n // 7 == 0`, only narrows n's
    /// range: the size stays symbolic.) Analysis only.
    #[inline]
    fn wrap_view_sizes(&mut self, sizes: &[SymInt]) -> OpResult<()> {
        if self.mode == Mode::Analysis && self.sizes.env.num_symbols() > 0 {
            self.guard_empty_view_sizes(sizes)?;
        }
        Ok(())
    }

    #[inline(never)]
    fn guard_empty_view_sizes(&mut self, sizes: &[SymInt]) -> OpResult<()> {
        for size in sizes {
            if size.is_symbolic() && self.sizes.env.hint(size) == Some(0) {
                self.sizes.concrete(size, "a view's size")?;
            }
        }
        Ok(())
    }

    /// PyTorch specialises a symbolic size whose hint is 0 or 1 (`m - 4`
    /// with m = 5, the last piece of a split) to it when something decides
    /// `size == 1` on it: a pointwise op's decomposition (its operands'
    /// contiguity), and the views unsqueeze, expand and alias. A clone, a
    /// reduction, returning the tensor, or transposing, selecting or
    /// slicing it do not (tests/oracle/unit_size_specialisation.tp).
    /// Analysis only (its guards are the answer's).
    pub fn specialise_unit_sizes(&mut self, t: TensorId) {
        self.guard_sizes_to_hints(t, |hint| hint == 0 || hint == 1);
    }

    /// Guards each symbolic size of `t` whose hint `which` accepts to that
    /// hint, as a guard PyTorch installs specialises it.
    fn guard_sizes_to_hints(&mut self, t: TensorId, which: impl Fn(i64) -> bool) {
        if self.tensors[t].sizes().iter().all(|d| d.as_int().is_some()) {
            return;
        }
        let sizes = self.tensors[t].sizes().clone();
        for size in sizes.iter().filter(|d| d.as_int().is_none()) {
            if let Some(hint) = self.sizes.env.hint(size).filter(|&h| which(h)) {
                self.sizes.eq(size, &SymInt::int(hint));
            }
        }
    }

    /// Kernels refuse to write into a tensor where several elements share one
    /// memory location (`assert_no_internal_overlap`: certain only for a
    /// stride-0 dim of size > 1).
    ///
    /// With symbolic sizes the order of c10's `has_internal_overlap` decides
    /// which guards PyTorch installs: a non-overlapping and dense tensor has
    /// none; otherwise each dim's `size > 1` is decided before its
    /// `stride == 0`, so a slice `x[:, 3:]` of an (3, m) input written in
    /// place guards `m - 3 >= 2` (tests/oracle/overlap_check_guards.tp).
    pub fn check_no_internal_overlap(&mut self, target: TensorId) -> OpResult<()> {
        let t = &self.tensors[target];
        // An empty tensor is contiguous (compute_contiguous), hence
        // non-overlapping and dense: no overlap.
        if t.sizes().iter().any(|s| s.as_int() == Some(0)) {
            return Ok(());
        }
        let sizes = &mut self.sizes;
        let symbolic = t.sizes().iter().chain(t.strides()).any(SymInt::is_symbolic);
        if symbolic && shape::is_non_overlapping_and_dense(t.sizes(), t.strides(), sizes) {
            return Ok(());
        }
        for (size, stride) in t.sizes().iter().zip(t.strides()) {
            if sizes.lt(&SymInt::int(1), size) && sizes.eq_int(stride, 0) {
                return Err(OpError::new(
                    "inplace-overlapping",
                    "unsupported operation: more than one element of the written-to tensor refers to a single memory location. Please clone() the tensor before performing the operation.",
                )
                .label(t.origin, format!("this tensor (made by `{}`) has a stride-0 dim", t.origin_op))
                .help("clone() the expanded tensor before writing into it"));
            }
        }
        Ok(())
    }

    /// Records a data mutation of `target`'s storage: functionalization's
    /// counters (all aliases of the storage see it), autograd's version counter,
    /// and, when history is recorded, the new grad_fn (CopySlices on the base
    /// for a view). Returns the op's own node, for the facts only its
    /// arguments tell (a scatter's `reduce`, a negative slope): written
    /// through a view, the view's grad_fn is a node over the CopySlices.
    pub fn mutate_data(
        &mut self,
        target: TensorId,
        op: &'static str,
        others: &[(&str, Option<TensorId>)],
        span: Span,
    ) -> OpResult<Option<NodeId>> {
        // Raised after the frozen-storage check below, but decided before
        // this write registers the storage.
        let lookup = self.check_inference_mutation(target);
        if self.mode == Mode::Analysis {
            self.specialise_unbind_base(target);
            if !self.split_ends.is_empty() {
                self.guard_split_inverse_ends(target);
            }
        }
        // An in-place op on a base wrapper under inference_mode returns it,
        // which registers its storage (tests/random/REPORT.md, class 4).
        if !self.tensors[target].functional_view {
            self.register_inference_base(target);
        }
        let t = {
            let t = &self.tensors[target];
            MutatedTensor {
                storage: t.storage,
                version: t.version,
                view: t.view,
            }
        };
        self.note_written(t.storage);
        self.fresh_values.remove(&target);
        let st = &mut self.storages[t.storage];
        st.mutations += 1;
        if !self.grad_enabled || self.inference_mode {
            st.mutations_no_grad += 1;
        }
        st.mutated_at.push(span);
        self.version_spans[t.version] = Some(span);
        let mut inputs: smallvec::SmallVec<[(&str, Option<TensorId>); 4]> =
            smallvec::smallvec![("self", Some(target))];
        inputs.extend_from_slice(others);
        // History is recorded when there are edges to read (`next_edges`).
        // An in-place op's generated kernel rebases `self`'s history
        // whatever its dtype (no isDifferentiableType check, unlike
        // set_history's): an integer `self` written with a value that
        // requires grad then requires grad. copy_ (VariableTypeManual)
        // checks the dtype.
        let result_dtype = if op == "copy_" {
            self.tensors[target].dtype
        } else {
            DType::F32
        };
        // Autograd collects the edges (regenerating a stale view's node)
        // before functionalization sees the write.
        let next = self.next_edges_for(&inputs, result_dtype)?;
        // Functionalization's commit_update refuses a frozen storage before
        // FunctionalTensorMode wraps the result (where inference_mode's
        // lookup fails).
        self.check_not_frozen(target)?;
        match lookup {
            // The caller raises it after the write's own sync
            // (`deferred_lookup`).
            Err(e) if self.defer_lookup => self.deferred_lookup = Some(e),
            r => r?,
        }
        let records = next.is_some();
        self.provenance.data(
            target,
            t.storage,
            op,
            span,
            super::meta::GradMode::of(self.grad_enabled, self.inference_mode),
            records,
        );
        self.versions[t.version] += 1;
        if let Some(next) = next {
            let base_fn = match &t.view {
                Some(v) => Some(self.grad_fn(v.base)?),
                None => None,
            };
            // The op's node takes the target's previous history.
            let node = self.record_node(op, true, &inputs, &[target], span, next)?;
            if let (Some(node), false) = (node, self.tensors[target].dtype.can_require_grad()) {
                self.integer_grad_nodes.insert(node);
            }
            if let (Some(view), Some(node)) = (t.view, node) {
                self.regenerate_view_node(target, view.base)?;
                // That replay records the view op on the base, which now
                // requires grad: its set_history asserts an integer result
                // is differentiable (tests/oracle/addmm_promotion.tp).
                if self.mode == Mode::Analysis && !self.tensors[target].dtype.can_require_grad() {
                    return Err(OpError::new(
                        "other",
                        "isDifferentiableType(variable.scalar_type()) INTERNAL ASSERT FAILED at \"/pytorch/torch/csrc/autograd/functions/utils.h\":74, please report a bug to PyTorch.",
                    )
                    .help("an integer view cannot carry the gradient of what was written into it: write into a floating-point tensor, or detach the values first"));
                }
                self.rebase_view_history(target, view.base, node, base_fn.flatten(), span);
            }
            return Ok(node);
        }
        Ok(None)
    }

    /// A view's node was just set (`set_history`): it is current for the
    /// view's version now (`set_gradient_edge` sets its attr_version).
    pub fn mark_history_current(&mut self, id: TensorId) {
        let v = self.versions[self.tensors[id].version];
        self.tensors[id].attr_version = v;
    }

    /// `rebase_history` of an in-place op on a view: the base's new node is
    /// a CopySlices over the op's `node` and the base's previous node
    /// (`base_fn`, read before the op), and the view takes `node`.
    pub fn rebase_view_history(
        &mut self,
        target: TensorId,
        base: TensorId,
        node: NodeId,
        base_fn: Option<NodeId>,
        span: Span,
    ) {
        let next = std::iter::once(node).chain(base_fn);
        let copy_slices = self.add_node("torch::autograd::CopySlices", next, span);
        // `has_internal_overlap(view) == YES`, with the sizes the program
        // runs with.
        let env = &self.sizes.env;
        let overlaps = |t: &Tensor| {
            t.sizes().iter().zip(t.strides()).any(|(size, stride)| {
                env.hint(size).is_some_and(|n| n > 1) && env.hint(stride) == Some(0)
            })
        };
        let (view_overlaps, base_overlaps) = (
            overlaps(&self.tensors[target]),
            overlaps(&self.tensors[base]),
        );
        self.nodes[copy_slices].overlapping_view = view_overlaps;
        self.nodes[copy_slices].overlapping_base = base_overlaps;
        if self.mode == Mode::Eager {
            // CopySlices::apply lays the gradient out as the base was
            // (new_empty_strided) and takes the view of it with as_strided.
            // (A view of another dtype, view_as_real's, is taken with its
            // view_fn instead.)
            let (b, v) = (&self.tensors[base], &self.tensors[target]);
            let offset = v.offset.as_int().zip(b.offset.as_int()).map(|(v, b)| v - b);
            let offset = offset.filter(|_| v.dtype == b.dtype);
            if let Some(offset) = offset.filter(|&o| o >= 0) {
                let itemsize = v.dtype.itemsize();
                let offset = SymInt::int(offset);
                let need = extent(v.sizes(), v.strides(), &offset).map(|e| e * itemsize);
                let have = extent(b.sizes(), b.strides(), &SymInt::int(0)).map(|e| e * itemsize);
                if let (Some(need), Some(have)) = (need, have) {
                    if need > have {
                        let e = set_storage_error(
                            v.sizes(),
                            v.strides(),
                            &offset,
                            itemsize,
                            need,
                            have,
                        );
                        self.copy_slices_overruns.insert(copy_slices, e);
                    }
                }
            }
        }
        self.tensors[base].grad_fn = Some(copy_slices);
        if !self.grad_sizes.is_empty() {
            // The CopySlices takes the base's sizes now as its input
            // metadata; the gradient it returns for the base's previous
            // node has them too, which that node may refuse.
            self.check_grad_sizes(copy_slices, 0, base);
            self.grad_sizes.remove(&base);
        }
        // `self.grad_fn()` at the end of rebase_history regenerates the
        // view's node over the base's new one: backward from the view runs
        // through the CopySlices.
        let regenerated = self.add_node("AsStridedBackward0", [copy_slices], span);
        self.tensors[target].grad_fn = Some(regenerated);
        self.mark_history_current(target);
    }

    /// `assert_no_partial_overlap(self, other)`: the written tensor and an
    /// input share some, but not all, of their memory. Only certain when both
    /// are dense and non-overlapping (PyTorch's `get_overlap_status`);
    /// anything else is "too hard" and passes. An eager check: dynamic sizes
    /// have their hints' values, as they do when the program runs.
    pub fn check_no_partial_overlap(&mut self, target: TensorId, other: TensorId) -> OpResult<()> {
        self.check_overlap(target, other, false)
    }

    /// `assert_no_overlap(self, other)` (the index ops' checks): as
    /// `check_no_partial_overlap`, but the same memory fails too.
    pub fn check_no_overlap(&mut self, target: TensorId, other: TensorId) -> OpResult<()> {
        self.check_overlap(target, other, true)
    }

    fn check_overlap(&mut self, target: TensorId, other: TensorId, full: bool) -> OpResult<()> {
        if target == other && !full {
            return Ok(());
        }
        if self.tensors[target].storage != self.tensors[other].storage {
            return Ok(());
        }
        let (a, b) = (self.tensors[target].clone(), self.tensors[other].clone());
        if !shape::is_non_overlapping_and_dense(a.sizes(), a.strides(), &mut self.sizes)
            || !shape::is_non_overlapping_and_dense(b.sizes(), b.strides(), &mut self.sizes)
        {
            return Ok(());
        }
        let env = &self.sizes.env;
        let range = |t: &Tensor| -> Option<(i64, i64)> {
            let numel = t
                .sizes()
                .iter()
                .try_fold(1i64, |acc, s| acc.checked_mul(env.hint(s)?))?;
            let begin = env.hint(&t.offset)?;
            Some((begin, begin.checked_add(numel)?))
        };
        let (Some((ab, ae)), Some((bb, be))) = (range(&a), range(&b)) else {
            return Ok(());
        };
        if ab == ae || bb == be {
            return Ok(());
        }
        let partial = if ab == bb && ae == be {
            let strides = |t: &Tensor| t.strides().iter().map(|s| env.hint(s)).collect::<Vec<_>>();
            full || strides(&a) != strides(&b)
        } else {
            ab < be && bb < ae
        };
        if partial {
            return Err(OpError::new(
                "other",
                "unsupported operation: some elements of the input tensor and the written-to tensor refer to a single memory location. Please clone() the tensor before performing the operation.",
            )
            .label(b.origin, format!("this input (made by `{}`) shares memory with the written tensor", b.origin_op))
            .help("clone() the input before the in-place op"));
        }
        Ok(())
    }

    /// Would the analysis's FunctionalTensor, wrapping a view of `id` now,
    /// fail its storage-to-base lookup? Under inference_mode, for a normal
    /// (non-inference) tensor whose storage no base wrapped inside
    /// inference_mode registered (`register_inference_base`).
    fn inference_lookup_fails(&self, id: TensorId) -> bool {
        let t = &self.tensors[id];
        self.mode == Mode::Analysis
            && self.inference_mode
            && !t.is_inference
            && !self.storages[t.storage].inference_registered
    }

    /// A base wrapper returned under inference_mode registers its storage
    /// for later views' lookups (`FunctionalTensor.__new__`).
    pub fn register_inference_base(&mut self, id: TensorId) {
        if self.mode == Mode::Analysis && self.inference_mode {
            let storage = self.tensors[id].storage;
            self.storages[storage].inference_registered = true;
        }
    }

    /// PyTorch 2.7.1's analysis fails (KeyError on a storage weakref) when,
    /// under inference_mode, a view of a normal tensor is written in place or a
    /// normal tensor's metadata is changed in place: functionalization replays
    /// views there. Writing a base tensor itself is fine.
    pub fn check_inference_mutation(&self, target: TensorId) -> OpResult<()> {
        if let Some(what) = self.functional_view_like(target) {
            if !self.inference_lookup_fails(target) {
                return Ok(());
            }
            return Err(OpError::new(
                "other",
                format!("PyTorch's metadata analysis fails on an in-place write to {what} under inference_mode (KeyError in functionalization)"),
            )
            .help("do the in-place op outside the inference_mode block, or on a clone"));
        }
        Ok(())
    }

    /// What makes `id` a view to functionalization (not a base), if it is
    /// one: said as "an in-place write to {what}".
    pub fn functional_view_like(&self, id: TensorId) -> Option<&'static str> {
        let t = &self.tensors[id];
        // A tensor whose metadata an in-place op changed is, to
        // functionalization, a view of its old self (it replays the change
        // on sync), so it fails as a view does.
        // A resize_ that grew the storage replaced it and left a base: so
        // when that was the tensor's only metadata change.
        let grown_base = !self.grown_by_resize.is_empty()
            && self.grown_by_resize.contains(&id)
            && self.metadata_changes.get(&id).is_some_and(|c| c.len() == 1);
        if t.functional_view {
            Some("a view of a normal tensor")
        } else if self.set_onto_views.contains(&id) {
            Some("a normal tensor `set_()` onto a view (which took its view metas)")
        } else if t.metadata_mutated && !grown_base {
            Some("a normal tensor whose metadata an in-place op changed")
        } else if self.unsafe_view_sources.contains_key(&id) {
            // (`_unsafe_view`'s result is, to functionalization, a view of
            // its source: matmul's fold, a reshape that copies.)
            Some("the result of `_unsafe_view` (matmul's fold, a reshape that copies), a view to functionalization,")
        } else {
            None
        }
    }

    /// PyTorch 2.7.1's analysis fails (a KeyError on a storage weakref in
    /// `FunctionalTensor.__new__`) when, under inference_mode, it wraps a
    /// view of a normal tensor whose storage no base wrapped inside
    /// inference_mode registered: a view op's result, or a view that a
    /// composite op's decomposition takes of its operand (`composite`:
    /// outer's reshape, matmul's unsqueeze, expand or fold, an unbatched
    /// conv2d's unsqueeze). tests/oracle/inference_composite_views.tp.
    /// A view of a tensor whose Python wrapper's storage a resize grew in
    /// the analysis (`grow_outer`): that storage is on the meta device, so
    /// aliasing the view's wrapper to it fails.
    #[inline(always)]
    fn check_grown_view(&self, base: TensorId) -> OpResult<()> {
        if !self.grown_outer.is_empty()
            && self.mode == Mode::Analysis
            && self.grown_outer.contains(&self.tensors[base].alias_key)
        {
            return Err(OpError::new(
                "other",
                "Attempted to set the storage of a tensor on device \"cpu\" to a storage on different device \"meta\".  This is no longer allowed; the devices must match.",
            )
            .label(self.tensors[base].origin, "this tensor's Python wrapper shares a storage that `resize_()` or `resize_as_()` grew (of this tensor, or of another tensor whose wrapper shares it; `set_()` keeps a wrapper's storage)")
            .help("PyTorch's analysis cannot view a tensor after a resize grew its storage: clone it first (`y = y.clone()`), or allocate it at its final size"));
        }
        Ok(())
    }

    /// A composite op (`op`) whose decomposition views its operand `of`
    /// (repeat_interleave, outer, matmul's folds, unbatched conv2d): the
    /// view's checks, grown storage and inference_mode's KeyError.
    pub fn check_composite_view(&self, of: TensorId, op: &str) -> OpResult<()> {
        self.check_grown_view(of)?;
        if self.inference_mode {
            self.check_inference_view(of, Some(op))?;
        }
        Ok(())
    }

    /// The analysis's refusals of any view of `of`: a resize grew its
    /// wrapper's storage, or inference_mode's KeyError. (For callers whose
    /// own checks come after a view they make: setitem's copy_to.)
    #[inline(always)]
    pub fn check_view_allowed(&self, of: TensorId) -> OpResult<()> {
        self.check_grown_view(of)?;
        self.check_inference_view(of, None)
    }

    pub fn check_inference_view(&self, of: TensorId, composite: Option<&str>) -> OpResult<()> {
        if !self.inference_lookup_fails(of) {
            return Ok(());
        }
        Err(match composite {
            None => OpError::new(
                "other",
                "PyTorch's metadata analysis fails on a view of a normal tensor made under inference_mode (KeyError in functionalization)",
            )
            .help("make the view outside the inference_mode block, or clone inside it"),
            Some(op) => OpError::new(
                "other",
                format!("PyTorch's metadata analysis fails on `{op}` of a normal tensor under inference_mode: its decomposition takes a view of it (KeyError in functionalization)"),
            )
            .help(format!("call `{op}` outside the inference_mode block, or on a clone made inside it")),
        })
    }

    /// PyTorch 2.7.1's analysis fails (KeyError on a storage weakref) on an
    /// in-place metadata change (`t_`, `squeeze_`, `detach_`, a `resize_`
    /// that does not grow the storage…) of a normal tensor under
    /// inference_mode, input or intermediate alike: functionalization makes
    /// the wrapper a view of its old self, and wrapping a view there looks
    /// up its storage's base, which only a base wrapped inside
    /// inference_mode registers (`FunctionalTensor.__new__`).
    pub fn check_inference_metadata(&self, target: TensorId) -> OpResult<()> {
        if self.inference_lookup_fails(target) {
            return Err(OpError::new(
                "other",
                "PyTorch's metadata analysis fails on an in-place metadata change of a normal tensor under inference_mode (KeyError in functionalization)",
            )
            .help("change the metadata outside the inference_mode block, or on a clone made inside it"));
        }
        Ok(())
    }

    /// Adds `target`'s geometry now to `metadata_changes`, before an
    /// in-place op (`rule`) changes it.
    pub fn record_metadata_change(&mut self, target: TensorId, rule: &'static str) {
        let t = &self.tensors[target];
        let change = MetadataChange {
            before: t.geom.clone(),
            offset: t.offset.clone(),
            made: self.tensors.len(),
            relays: self.relaid.get(&target).map_or(0, |r| r.len()),
            rule,
            after: None,
            dims: None,
            fitted_resize: false,
        };
        self.metadata_changes
            .entry(target)
            .or_default()
            .push(change);
    }

    /// Functionalization refuses to write a storage that `set_()` swapped
    /// away (the analysis only).
    pub fn check_not_frozen(&self, target: TensorId) -> OpResult<()> {
        let storage = self.tensors[target].storage;
        if self.mode == Mode::Analysis && self.storages[storage].frozen.is_some() {
            return Err(OpError::new("frozen-storage", "cannot mutate tensors with frozen storage")
                .help("this tensor's storage was swapped away by set_(); mutate the tensor that set_() was applied to instead"));
        }
        Ok(())
    }

    /// Whether an in-place update of `id` bumps the version of an inference
    /// tensor outside inference_mode, which is refused.
    pub fn inference_update_refused(&self, id: TensorId) -> bool {
        self.tensors[id].is_inference
            && !self.inference_mode
            && !self.versioned_inference.contains(&id)
    }

    /// The dtype CPU autocast casts to, when it is enabled.
    pub fn cpu_autocast_dtype(&self) -> Option<DType> {
        self.autocast
            .iter()
            .find(|a| a.enabled && a.device == "cpu")
            .map(|a| a.dtype)
    }

    /// Whether autograd keeps a wrapper of `storage` alive for a backward
    /// that the tensors Python holds (`bound`) can still run: a tensor a
    /// node reachable from their grad_fns saved. Its SavedVariable holds
    /// a wrapper of it, which counts in the storage's use count unless it
    /// is `target`'s own: SavedVariable keeps the tensor itself when it is
    /// an input or a leaf (`saved_original_`), and a detached copy of an
    /// output with history; a composite's view of `target` is another
    /// wrapper (outer's `self.reshape(-1, 1)`, tests/oracle/resize_composite_saved_views.tp).
    fn saved_shares_storage(
        &self,
        bound: &[TensorId],
        target: TensorId,
        storage: StorageId,
    ) -> bool {
        let mut seen = rustc_hash::FxHashSet::default();
        let mut stack: Vec<NodeId> = bound
            .iter()
            .filter_map(|&t| self.tensors[t].grad_fn)
            .collect();
        while let Some(n) = stack.pop() {
            if !seen.insert(n) {
                continue;
            }
            let node = &self.nodes[n];
            let shares = node.saved.iter().any(|s| {
                let t = &self.tensors[s.tensor];
                // (A view a composite made and saved is another wrapper.)
                let own = s.tensor == target && !s.as_view && (s.original || t.grad_fn.is_none());
                !own && t.storage == storage
            });
            if shares {
                return true;
            }
            stack.extend(node.next.iter().copied());
        }
        false
    }

    /// `target` takes `geom` in place (`set_sizes_and_strides`: an in-place
    /// metadata op, resize_, resize_as_, set_). Eager: the strides of the
    /// dims it drops stay in their inline slots
    /// (`Machine::stale_stride_slots`).
    pub fn set_geometry_in_place(&mut self, target: TensorId, geom: SharedGeometry) {
        let new_rank = geom.sizes().len();
        let old = self.tensors[target].strides();
        if self.mode == Mode::Eager && new_rank < old.len() && old.len() <= INLINE_DIMS {
            let old = old.clone();
            let slots = self
                .stale_stride_slots
                .entry(target)
                .or_insert_with(|| std::array::from_fn(|_| SymInt::int(0)));
            slots[new_rank..old.len()].clone_from_slice(&old[new_rank..]);
        }
        self.tensors[target].set_geometry(geom);
    }

    /// The stride C++ reads at `variable.sym_strides()[i]`: past the rank,
    /// the inline slot's leftover (0 if no geometry ever reached it); None
    /// past the inline slots (heap memory, unknown).
    pub fn stride_slot(&self, t: TensorId, i: usize) -> Option<SymInt> {
        let strides = self.tensors[t].strides();
        if let Some(s) = strides.get(i) {
            return Some(s.clone());
        }
        if i >= INLINE_DIMS || strides.len() > INLINE_DIMS {
            return None;
        }
        Some(
            self.stale_stride_slots
                .get(&t)
                .map_or_else(|| SymInt::int(0), |slots| slots[i].clone()),
        )
    }

    /// Records an in-place metadata change (`t_`, `unsqueeze_`, `as_strided_`…).
    pub fn mutate_metadata(
        &mut self,
        target: TensorId,
        rule: &'static str,
        sizes: Dims,
        strides: Dims,
        offset: SymInt,
    ) {
        let version = self.tensors[target].version;
        self.versions[version] += 1;
        if self.mode == Mode::Analysis {
            self.record_metadata_change(target, rule);
        }
        self.note_made(target);
        let geom = self.geoms.intern(sizes, strides);
        if let Some(change) = self
            .metadata_changes
            .get_mut(&target)
            .and_then(|c| c.last_mut())
        {
            change.after = Some(geom.clone());
        }
        // A value a write left out of date: functionalization appends the
        // op to the tensor's view metas, and its next sync replays them all
        // from the base, this one too.
        if let Some(Ok(pending)) = self.pending_values.get(&target).cloned() {
            let before = self.tensors[target].geom.clone();
            match self.replay_view(rule, &before, &geom, &pending) {
                Ok(Some(new)) => {
                    self.pending_values.insert(target, Ok(new));
                }
                Ok(None) => {
                    self.pending_values.remove(&target);
                }
                Err(e) => {
                    self.pending_values.insert(target, Err(e));
                }
            }
        }
        self.set_geometry_in_place(target, geom);
        let t = &mut self.tensors[target];
        t.offset = offset;
        t.metadata_mutated = true;
    }

    /// The shared geometry of these sizes and strides.
    pub fn geometry(&mut self, sizes: Dims, strides: Dims) -> SharedGeometry {
        self.geoms.intern(sizes, strides)
    }

    pub fn meta_of(&self, id: TensorId) -> Meta {
        let t = &self.tensors[id];
        Meta {
            sizes: t.sizes().clone(),
            strides: t.strides().clone(),
            offset: t.offset.clone(),
            dtype: t.dtype,
        }
    }

    /// Whether the analysis has a ShapeEnv: the oracle makes one when an
    /// input has a symbolic size. Then FakeTensor's data-dependent ops
    /// (`nonzero`, `masked_select`, boolean-mask indexing,
    /// `repeat_interleave` with tensor repeats) give unbacked sizes instead
    /// of refusing.
    pub fn has_shape_env(&self) -> bool {
        self.mode == Mode::Analysis && self.sizes.env.num_symbols() > 0
    }

    /// A size that depends on data tpi does not know. In the analysis an
    /// unbacked size, named as ShapeEnv's `create_unbacked_symint` names
    /// them (`u0`, `u1`, … in the order the run makes them), with a hint no
    /// input size has and the range of a size (`_constrain_range_for_size`:
    /// never 0 or 1 to size-oblivious checks). In eager a count of selected
    /// elements, hint 1.
    pub fn unbacked_size(&mut self) -> SymInt {
        let (name, hint) = match self.mode {
            Mode::Analysis => {
                self.unbacked += 1;
                (format!("u{}", self.unbacked - 1), UNBACKED_HINT)
            }
            Mode::Eager => (format!("u{}", self.sizes.env.num_symbols()), 1),
        };
        self.sizes.env.declare_with_hint(&name, hint)
    }

    /// A contiguous layout of `sizes`.
    pub fn contiguous_meta(&mut self, sizes: Dims, dtype: DType) -> OpResult<Meta> {
        let strides = shape::contiguous_strides(&sizes, &mut self.sizes)?;
        Ok(Meta {
            sizes,
            strides,
            offset: SymInt::int(0),
            dtype,
        })
    }

    pub fn numel(&self, id: TensorId) -> OpResult<SymInt> {
        self.sizes.prod(self.tensors[id].sizes())
    }

    /// The sizes Python code sees on `id` when they are not the kernels'
    /// (`python_geom` after `set_()`; a write leaves them and changes only
    /// strides).
    pub fn stale_python_sizes(&self, id: TensorId) -> Option<&Dims> {
        let python = self.python_geom.get(&id)?.sizes();
        (python != self.tensors[id].sizes()).then_some(python)
    }

    /// The sizes and strides Python code sees on `id` (`python_geom`).
    pub fn python_geometry(&self, id: TensorId) -> &SharedGeometry {
        self.python_geom
            .get(&id)
            .unwrap_or_else(|| self.tensors[id].geometry())
    }
}

/// The hint of an unbacked size (`Machine::unbacked_size`): larger than the
/// oracle's input hints, with many divisors, so that views of it reshape.
const UNBACKED_HINT: i64 = 720;

/// c10's `C10_SIZES_AND_STRIDES_MAX_INLINE_SIZE`: dims kept inline.
pub const INLINE_DIMS: usize = 5;

/// A tensor whose value a write changed (`replace_value`): its geometry
/// before, then its new value's sizes and strides.
type Regenerated = (TensorId, SharedGeometry, Dims, Dims);

/// View op `op` as it made a view with geometry `view` of a base with
/// geometry `base`.
fn view_step<'a>(
    op: &'a str,
    base: &'a SharedGeometry,
    view: &'a SharedGeometry,
) -> shape::ViewStep<'a> {
    shape::ViewStep {
        op,
        base_sizes: base.sizes(),
        base_strides: base.strides(),
        sizes: view.sizes(),
        strides: view.strides(),
        perm: None,
    }
}

impl Machine {
    /// `view_step` for view `child`'s own op: with the permutation its op
    /// was given where the geometries do not tell it (`ViewArg`).
    fn child_step<'a>(
        &self,
        child: TensorId,
        op: &'a str,
        base: &'a SharedGeometry,
        view: &'a SharedGeometry,
    ) -> shape::ViewStep<'a> {
        let mut step = view_step(op, base, view);
        if self.view_args.is_empty() {
            return step;
        }
        let rank = base.sizes().len();
        step.perm = match self.view_args.get(&child) {
            Some(ViewArg::Permutation(p)) => Some(*p),
            Some(ViewArg::GivenPermutation { dims, len }) => {
                let wrapped: Option<Vec<usize>> = dims[..usize::from(*len)]
                    .iter()
                    .map(|&d| shape::wrap_dim(i64::from(d), rank).ok())
                    .collect();
                wrapped.as_deref().and_then(shape::Perm::new)
            }
            Some(&ViewArg::TransposeDims(d0, d1)) => {
                let wrap = |d: i8| shape::wrap_dim(i64::from(d), rank).ok();
                match (wrap(d0), wrap(d1)) {
                    (Some(a), Some(b)) => {
                        let mut perm: Vec<usize> = (0..rank).collect();
                        perm.swap(a, b);
                        shape::Perm::new(&perm)
                    }
                    _ => None,
                }
            }
            _ => None,
        };
        step
    }
}

/// setStorage's bounds check (`checkInBoundsForStorage`): a layout that
/// needs `need` bytes of a storage of `have`.
pub fn set_storage_error(
    sizes: &[SymInt],
    strides: &[SymInt],
    offset: &SymInt,
    itemsize: i64,
    need: i64,
    have: i64,
) -> OpError {
    OpError::new(
        "other",
        format!(
            "setStorage: sizes {}, strides {}, storage offset {offset}, and itemsize {itemsize} requiring a storage size of {need} are out of bounds for storage of size {have}",
            shape::show(sizes),
            shape::show(strides)
        ),
    )
}

/// The number of elements a layout reaches (offset + 1 + sum((size-1)*stride)),
/// when concrete; 0 for an empty tensor.
pub fn extent(sizes: &[SymInt], strides: &[SymInt], offset: &SymInt) -> Option<i64> {
    let mut end = offset.as_int()?;
    for (size, stride) in sizes.iter().zip(strides) {
        let (n, st) = (size.as_int()?, stride.as_int()?);
        if n == 0 {
            return Some(0);
        }
        end = end.checked_add((n - 1).checked_mul(st)?)?;
    }
    end.checked_add(1)
}

/// `SavedVariable`'s refusal of an inference tensor.
fn inference_saved_error() -> OpError {
    OpError::new("inference-tensor", "Inference tensors cannot be saved for backward. To work around you can make a clone to get a normal tensor and use it in autograd.")
        .help("clone the tensor outside inference_mode before using it with autograd")
}

/// The tensor given for argument `i` of `row`'s schema, among `inputs`
/// (named as the op table names them: `input` and `self` stand for each other).
fn row_arg(row: &OpSaves, inputs: &[(&str, Option<TensorId>)], i: usize) -> Option<TensorId> {
    let name = *row.args.get(i)?;
    inputs
        .iter()
        .find(|(n, _)| {
            *n == name
                || (name == "input" && *n == "self")
                || (name == "self" && *n == "input")
                || (name == "indices" && *n == "input")
        })
        .and_then(|(_, t)| *t)
}

/// What recording autograd history needs to know of an op (by its name, as
/// `record_history` gets it, and whether it is in place): the node's name,
/// whether backward through it is implemented, and what it saves.
#[derive(Clone, Copy)]
struct OpFacts {
    /// The op's name without its overload (`max` of `max.dim`).
    base: &'static str,
    node: &'static str,
    not_implemented: Option<crate::analysis::domain::NoDerivative>,
    row: Option<&'static OpSaves>,
}

/// `OpFacts` of an op, worked out once per thread and name (the names come
/// from the op table: the set is small), found by the static name's address
/// and length, which stand for its text (as in `static_node_name`).
fn op_facts(op: &'static str, inplace: bool) -> OpFacts {
    use std::cell::RefCell;
    type Facts = rustc_hash::FxHashMap<(usize, usize), OpFacts>;
    thread_local! {
        static FACTS: RefCell<[Facts; 2]> = RefCell::default();
    }
    let key = (op.as_ptr() as usize, op.len());
    FACTS.with(|facts| {
        if let Some(f) = facts.borrow()[usize::from(inplace)].get(&key) {
            return *f;
        }
        let base = op.split('.').next().unwrap_or(op);
        let f = OpFacts {
            base,
            node: node_name(base),
            not_implemented: backward_not_implemented(base),
            row: lookup(op, inplace),
        };
        facts.borrow_mut()[usize::from(inplace)].insert(key, f);
        f
    })
}

/// `node_name` of a static name, cached by the name's address: a static
/// string's address and length stand for its text.
fn static_node_name(op: &'static str) -> &'static str {
    use std::cell::RefCell;
    type Names = rustc_hash::FxHashMap<(usize, usize), &'static str>;
    thread_local! {
        static SEEN: RefCell<Names> = RefCell::default();
    }
    let key = (op.as_ptr() as usize, op.len());
    SEEN.with(|seen| {
        if let Some(n) = seen.borrow().get(&key) {
            return *n;
        }
        let name = node_name(op);
        seen.borrow_mut().insert(key, name);
        name
    })
}

/// autograd's node name for an op (`mul` -> `MulBackward0`), interned: the
/// names come from the op table, so the set is small. One process-wide set
/// (each name is made once, whatever thread asks), with a per-thread cache in
/// front so that the hot path takes no lock.
pub fn node_name(op: &str) -> &'static str {
    use std::cell::RefCell;
    use std::sync::{Mutex, OnceLock};
    type Names = rustc_hash::FxHashMap<String, &'static str>;
    static ALL: OnceLock<Mutex<Names>> = OnceLock::new();
    thread_local! {
        static SEEN: RefCell<Names> = RefCell::default();
    }
    SEEN.with(|seen| {
        if let Some(n) = seen.borrow().get(op) {
            return *n;
        }
        let mut all = ALL
            .get_or_init(Default::default)
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let name = *all.entry(op.to_string()).or_insert_with(|| {
            let mut out = String::new();
            let mut upper = true;
            // torchgen's `"".join(p.title() for p in name.split("_"))`:
            // title() capitalises a letter after any non-letter (`log1p`
            // is Log1PBackward0).
            for c in op.trim_end_matches('_').chars() {
                if c == '_' {
                    upper = true;
                } else if upper {
                    out.extend(c.to_uppercase());
                    upper = !c.is_ascii_alphabetic();
                } else {
                    out.push(c);
                    upper = !c.is_ascii_alphabetic();
                }
            }
            out.push_str("Backward0");
            Box::leak(out.into_boxed_str())
        });
        seen.borrow_mut().insert(op.to_string(), name);
        name
    })
}

/// A view op (as `origin_op` names it) that slices along a dim: its inverse
/// is a `slice_scatter` (chunk's pieces are `split`'s).
fn slices_along_dim(op: &str) -> bool {
    matches!(
        op,
        "slice" | "narrow" | "split" | "split_with_sizes" | "tensor_split"
    )
}

/// A view op that selects one index along a dim: its inverse is a
/// `select_scatter`.
fn selects_along_dim(op: &str) -> bool {
    matches!(op, "select" | "unbind")
}

/// A slicing view (`slice`, `narrow`, `select`, basic indexing, the pieces
/// of `split`/`chunk`/`unbind`) replayed
/// on its base's new value: each kept dim keeps its base dim's stride,
/// times the slice's step (read back from the strides the view was made
/// with), and a dim the view kept whole the base's new size (the same
/// value, which a replayed `view` may have expressed anew). None for other
/// ops, or when the geometries do not tell.
fn replay_slicing(
    op: &str,
    old_base: &SharedGeometry,
    made: &SharedGeometry,
    new_base: &SharedGeometry,
) -> Option<(Dims, Dims)> {
    let (bs, bt) = (old_base.sizes(), old_base.strides());
    let (vs, vt) = (made.sizes(), made.strides());
    let (ns, nt) = (new_base.sizes(), new_base.strides());
    // (Sizes of other values: a resize, which this does not replay.)
    let other_value =
        |(n, b): (&SymInt, &SymInt)| n != b && n.as_int().is_some() && b.as_int().is_some();
    if ns.len() != bs.len() || ns.iter().zip(bs).any(other_value) {
        return None;
    }
    // View dim `i` is base dim `j`: whole, it takes the base's new size;
    // cut short by a start (`[1:]`, the end clamped to the size), the new
    // size less as much.
    let size = |i: usize, j: usize| {
        if vs[i] == bs[j] {
            return ns[j].clone();
        }
        if ns[j] != bs[j] {
            let cut = vs[i].sub(&bs[j]).ok().and_then(|d| d.as_int());
            if let Some(new) = cut.and_then(|c| ns[j].add(&SymInt::int(c)).ok()) {
                return new;
            }
        }
        vs[i].clone()
    };
    match op {
        _ if slices_along_dim(op) && vs.len() == bs.len() => {
            let mut strides = nt.clone();
            for i in 0..bs.len() {
                if vt[i] == bt[i] {
                    continue;
                }
                // A step k: the view's stride is k times the base's.
                let (v, b) = (vt[i].as_int()?, bt[i].as_int()?);
                if b == 0 || v % b != 0 {
                    return None;
                }
                strides[i] = SymInt::int(nt[i].as_int()?.checked_mul(v / b)?);
            }
            Some(((0..vs.len()).map(|i| size(i, i)).collect(), strides))
        }
        _ if selects_along_dim(op) && vs.len() + 1 == bs.len() => {
            // The dropped dim: the first where the geometries part.
            let d = (0..vs.len())
                .find(|&i| vs[i] != bs[i] || vt[i] != bt[i])
                .unwrap_or(vs.len());
            let kept = (0..bs.len()).filter(|&j| j != d);
            Some((
                kept.clone().enumerate().map(|(i, j)| size(i, j)).collect(),
                kept.map(|j| nt[j].clone()).collect(),
            ))
        }
        _ => None,
    }
}

/// For a view op that takes dims (`transpose`, `diagonal`, `select`,
/// `squeeze`, `unsqueeze`, `slice`, `narrow`), the dims it was given, read
/// back from its input's geometry (`old_*`) and its own (`c_*`), and the
/// rank they wrap against when replayed on an input of rank `new_rank`.
/// None when the geometries do not tell them (a full slice, a transpose of
/// alike dims).
fn view_dim_args(
    op: &str,
    old_sizes: &[SymInt],
    old_strides: &[SymInt],
    c_sizes: &[SymInt],
    c_strides: &[SymInt],
    new_rank: usize,
) -> Option<(smallvec::SmallVec<[usize; 2]>, usize)> {
    let same = |i: usize, j: usize| {
        old_sizes.get(i) == c_sizes.get(j) && old_strides.get(i) == c_strides.get(j)
    };
    let (n, m) = (old_sizes.len(), c_sizes.len());
    let first_diff = |len: usize| (0..len).find(|&i| !same(i, i));
    match op {
        "transpose" | "swapaxes" | "swapdims" if n == m => {
            let diff: smallvec::SmallVec<[usize; 2]> = (0..n).filter(|&i| !same(i, i)).collect();
            (diff.len() == 2 && same(diff[0], diff[1]) && same(diff[1], diff[0]))
                .then_some((diff, new_rank))
        }
        "diagonal" if m + 1 == n => {
            // The kept dims come first, in order; the two taken dims are
            // the ones they skip.
            let mut taken = smallvec::SmallVec::new();
            let mut j = 0;
            for i in 0..n {
                if j + 1 < m && same(i, j) {
                    j += 1;
                } else {
                    taken.push(i);
                }
            }
            (taken.len() == 2).then_some((taken, new_rank))
        }
        "select" | "squeeze" | "unbind" if m + 1 == n => {
            let d = first_diff(m).unwrap_or(m);
            Some((smallvec::smallvec![d], new_rank))
        }
        "unsqueeze" if n + 1 == m => {
            let d = first_diff(n).unwrap_or(n);
            Some((smallvec::smallvec![d], new_rank + 1))
        }
        "slice" | "narrow" if n == m => first_diff(n).map(|d| (smallvec::smallvec![d], new_rank)),
        _ => None,
    }
}

const REPLAY_HELP: &str = "the analysis replays this view's ops on its base, whose shape an in-place op (t_, unsqueeze_, transpose_…) changed after the view was made: make the view after that op, or clone it";

/// A write's `view` inverse (`view` back to the base's sizes) that the
/// written value's strides do not allow.
fn view_inverse_error(sizes: &[SymInt], strides: &[SymInt], base: &[SymInt]) -> OpError {
    view_stride_error(sizes, strides, base)
        .help("functionalization writes this value back to the base with the view's inverse, a `view` that the written value's strides do not allow: clone the base before viewing and writing it")
}

/// torch._refs' `_reshape_view_helper` refusing a view the strides do not
/// allow (as a replayed or inverse view meets it).
pub(crate) fn view_stride_error(
    sizes: &[SymInt],
    strides: &[SymInt],
    target: &[SymInt],
) -> OpError {
    OpError::new(
        "view-stride",
        format!(
            "Cannot view a tensor with shape torch.Size({}) and strides {} as a tensor with shape {}!",
            shape::show(sizes),
            show_tuple(strides),
            show_tuple(target)
        ),
    )
}

/// `(2, 3)` / `(6,)`, as Python prints a tuple (`report::text::shape`).
pub(crate) fn show_tuple(d: &[SymInt]) -> String {
    let items: Vec<String> = d.iter().map(|s| s.to_string()).collect();
    crate::report::text::shape(&items)
}
