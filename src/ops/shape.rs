//! Shape and stride rules shared by the op families, written after PyTorch's
//! meta functions (c10 `computeStride`, `infer_size`, TensorIterator's output
//! layout, `compute_contiguous`, `suggest_memory_format`). Every size
//! computation is checked (overflow is an error) and every comparison goes
//! through `Sizes`, which knows the symbols and records the guards PyTorch
//! would install when a fact about symbolic sizes is decided by their hints.

use crate::analysis::domain::MemoryFormat;
use crate::sym::{Dims, Rel, ShapeEnv, SymError, SymInt, Truth};
use smallvec::smallvec;

/// An error of an op's rule: an OUTPUT.md code and PyTorch's wording.
#[derive(Clone, Debug, PartialEq)]
pub struct OpError {
    pub code: &'static str,
    pub message: String,
    pub help: Option<String>,
    /// Where the operands involved came from (secondary labels).
    pub labels: Vec<(crate::syntax::Span, String)>,
}

impl OpError {
    pub fn new(code: &'static str, message: impl Into<String>) -> OpError {
        OpError {
            code,
            message: message.into(),
            help: None,
            labels: Vec::new(),
        }
    }

    pub fn label(mut self, span: crate::syntax::Span, text: impl Into<String>) -> OpError {
        self.labels.push((span, text.into()));
        self
    }

    pub fn help(mut self, help: impl Into<String>) -> OpError {
        self.help = Some(help.into());
        self
    }
}

pub type OpResult<T> = Result<T, OpError>;

impl From<SymError> for OpError {
    fn from(e: SymError) -> OpError {
        match e {
            SymError::Overflow => OpError::new(
                "size-overflow",
                "a size computation overflows 64-bit integers",
            )
            .help("tensor sizes this large cannot exist; check the shapes"),
            SymError::DivisionByZero => {
                OpError::new("other", "integer division by zero in a size computation")
            }
        }
    }
}

/// The symbols of one function and the guards decided so far.
#[derive(Clone, Debug, Default)]
pub struct Sizes {
    pub env: ShapeEnv,
    /// Facts decided by the symbols' hints, as PyTorch's guards would be.
    pub assumptions: Vec<String>,
}

impl Sizes {
    /// Decides `a rel b` as PyTorch's guards would, recording facts that only
    /// the symbols' hints decided.
    #[inline]
    fn decide(&mut self, a: &SymInt, rel: Rel, b: &SymInt) -> bool {
        if let (Some(x), Some(y)) = (a.as_int(), b.as_int()) {
            return rel.holds(x, y);
        }
        self.decide_symbolic(a, rel, b)
    }

    /// `decide` when a side is symbolic (kept out of line: the common
    /// concrete case above is a comparison).
    #[inline(never)]
    fn decide_symbolic(&mut self, a: &SymInt, rel: Rel, b: &SymInt) -> bool {
        let t = self.env.compare(a, rel, b);
        if let Truth::Assumed(v) = t {
            // Worded before the guard: it may specialise a symbol away.
            let r = if v { rel } else { rel.negate() };
            let text = format!(
                "{} {} {}",
                self.env.display(a),
                r.as_str(),
                self.env.display(b)
            );
            self.env.guard(a, rel, b);
            if !self.assumptions.contains(&text) {
                self.assumptions.push(text);
            }
        }
        t.value()
    }

    #[inline]
    pub fn eq(&mut self, a: &SymInt, b: &SymInt) -> bool {
        self.decide(a, Rel::Eq, b)
    }

    /// Equal lists of sizes (or strides): the same length, and each pair
    /// equal (`eq`, deciding from the left and stopping at the first pair
    /// that differs).
    pub fn eq_dims(&mut self, a: &[SymInt], b: &[SymInt]) -> bool {
        a.len() == b.len() && a.iter().zip(b).all(|(x, y)| self.eq(x, y))
    }

    /// Python's `==` on two tuples of sizes (`torch.Size`, `stride()`):
    /// pairs compared from the left up to the first that differs, and only
    /// then the lengths. Unlike C++'s `IntArrayRef ==` (`eq_dims`), tuples of
    /// different lengths still compare their common prefix, so a symbol
    /// against a number there is guarded (and may specialise).
    pub fn eq_tuple(&mut self, a: &[SymInt], b: &[SymInt]) -> bool {
        a.iter().zip(b).all(|(x, y)| self.eq(x, y)) && a.len() == b.len()
    }

    #[inline]
    pub fn eq_int(&mut self, a: &SymInt, b: i64) -> bool {
        match a.as_int() {
            Some(x) => x == b,
            None => self.decide(a, Rel::Eq, &SymInt::int(b)),
        }
    }

    /// Is any of `dims` 0 (a tensor of these sizes has no elements)?
    /// Decided (with its guards) dim by dim, stopping at the first 0.
    #[inline]
    pub fn any_zero(&mut self, dims: &[SymInt]) -> bool {
        dims.iter().any(|d| self.eq_int(d, 0))
    }

    #[inline]
    pub fn lt(&mut self, a: &SymInt, b: &SymInt) -> bool {
        self.decide(a, Rel::Lt, b)
    }

    #[inline]
    pub fn le(&mut self, a: &SymInt, b: &SymInt) -> bool {
        self.decide(a, Rel::Le, b)
    }

    #[inline]
    pub fn lt_int(&mut self, a: &SymInt, b: i64) -> bool {
        self.lt(a, &SymInt::int(b))
    }

    pub fn add(&self, a: &SymInt, b: &SymInt) -> OpResult<SymInt> {
        Ok(a.add(b)?)
    }

    pub fn sub(&self, a: &SymInt, b: &SymInt) -> OpResult<SymInt> {
        Ok(a.sub(b)?)
    }

    pub fn mul(&self, a: &SymInt, b: &SymInt) -> OpResult<SymInt> {
        Ok(a.mul(b)?)
    }

    pub fn floordiv(&self, a: &SymInt, b: &SymInt) -> OpResult<SymInt> {
        Ok(a.floordiv(b)?)
    }

    pub fn prod(&self, items: &[SymInt]) -> OpResult<SymInt> {
        let mut acc = SymInt::int(1);
        for i in items {
            acc = acc.mul(i)?;
        }
        Ok(acc)
    }

    pub fn max1(&mut self, s: &SymInt) -> SymInt {
        if self.lt_int(s, 1) {
            SymInt::int(1)
        } else {
            s.clone()
        }
    }

    /// An int the rule cannot do without (a dim index, a split count, …).
    pub fn concrete(&mut self, s: &SymInt, what: &str) -> OpResult<i64> {
        if let Some(v) = s.as_int() {
            return Ok(v);
        }
        match self.env.hint(s) {
            Some(v) => {
                // PyTorch specialises the size to its hint.
                self.decide(s, Rel::Eq, &SymInt::int(v));
                Ok(v)
            }
            None => Err(OpError::new(
                "other",
                format!("{what} needs a concrete value, got the symbolic `{s}`"),
            )),
        }
    }
}

/// Formats a shape like PyTorch: `[3, 4]`.
pub fn show(sizes: &[SymInt]) -> String {
    let parts: Vec<String> = sizes.iter().map(|s| s.to_string()).collect();
    format!("[{}]", parts.join(", "))
}

/// view_as_complex's strides (ComplexHelper.h): the last dim's stride must
/// be 1 and the others even; the view has the others halved.
pub fn view_as_complex_strides(strides: &[SymInt], s: &mut Sizes) -> OpResult<Dims> {
    let Some((last, rest)) = strides.split_last() else {
        return Err(OpError::new(
            "other",
            "Input tensor must have one or more dimensions",
        ));
    };
    if !s.eq_int(last, 1) {
        return Err(OpError::new(
            "other",
            "Tensor must have a last dimension with stride 1",
        ));
    }
    if rest.iter().any(|v| v.as_int().is_some_and(|v| v % 2 != 0)) {
        return Err(OpError::new(
            "other",
            "Tensor must have a stride divisible by 2 for all but last dimension",
        ));
    }
    rest.iter()
        .map(|v| s.floordiv(v, &SymInt::int(2)))
        .collect()
}

/// select's refusal of an index outside dim `d` of `sizes`.
/// (The analysis's meta prints the sizes as `torch.Size([..])`, eager's
/// kernel as `[..]`.)
pub fn select_index_error(
    index: impl std::fmt::Display,
    sizes: &[SymInt],
    d: usize,
    analysis: bool,
) -> OpError {
    let shown = if analysis {
        format!("torch.Size({})", show(sizes))
    } else {
        show(sizes)
    };
    OpError::new(
        "index-out-of-range",
        format!("select(): index {index} out of range for tensor of size {shown} at dimension {d}"),
    )
}

/// `maybe_wrap_dim`: a dim in `[-ndim, ndim)` (a 0-d tensor accepts -1 and 0).
pub fn wrap_dim(dim: i64, ndim: usize) -> OpResult<usize> {
    let n = ndim.max(1) as i64;
    if dim < -n || dim >= n {
        return Err(OpError::new(
            "dim-out-of-range",
            format!(
                "Dimension out of range (expected to be in range of [{}, {}], but got {})",
                -n,
                n - 1,
                dim
            ),
        ));
    }
    Ok(if dim < 0 {
        (dim + n) as usize
    } else {
        dim as usize
    })
}

/// c10's `inferUnsqueezeGeometry`: inserts a size-1 dim at `dim`, whose
/// stride is the extent of the dim it goes before (1 at the end).
pub fn unsqueeze_geometry(
    sizes: &mut Dims,
    strides: &mut Dims,
    dim: usize,
    s: &mut Sizes,
) -> OpResult<()> {
    let stride = if dim >= sizes.len() {
        SymInt::int(1)
    } else {
        s.mul(&sizes[dim], &strides[dim])?
    };
    sizes.insert(dim, SymInt::int(1));
    strides.insert(dim, stride);
    Ok(())
}

/// squeeze's geometry: drops each of `dims` (ascending, distinct) that has
/// size 1.
pub fn squeeze_geometry(sizes: &mut Dims, strides: &mut Dims, dims: &[usize], s: &mut Sizes) {
    for &d in dims.iter().rev() {
        if sizes.get(d).is_some_and(|n| s.eq_int(n, 1)) {
            sizes.remove(d);
            strides.remove(d);
        }
    }
}

/// unfold's refusal of a window larger than its dim. (The analysis's meta
/// capitalizes it, eager's kernel does not.)
pub fn unfold_size_error(
    d: usize,
    dim_size: impl std::fmt::Display,
    size: impl std::fmt::Display,
    analysis: bool,
) -> OpError {
    let m = if analysis { 'M' } else { 'm' };
    OpError::new(
        "other",
        format!("{m}aximum size for tensor at dimension {d} is {dim_size} but size is {size}"),
    )
}

/// Contiguous strides (size-0 dims count as 1, as c10 does).
pub fn contiguous_strides(sizes: &[SymInt], s: &mut Sizes) -> OpResult<Dims> {
    if let Some(strides) = concrete::ints(sizes).and_then(|n| concrete::dense_strides(&n, None)) {
        return Ok(concrete::dims(&strides));
    }
    let mut strides = smallvec![SymInt::int(1); sizes.len()];
    let mut acc = SymInt::int(1);
    for d in (0..sizes.len()).rev() {
        strides[d] = acc.clone();
        if d == 0 {
            // The leading size makes no stride: it is not compared with 1
            // (no guard; a leading size whose hint is 0 stays symbolic).
            break;
        }
        let m = s.max1(&sizes[d]);
        acc = s.mul(&acc, &m)?;
    }
    Ok(strides)
}

/// Strides of a dense layout in the given memory format.
pub fn format_strides(sizes: &[SymInt], format: MemoryFormat, s: &mut Sizes) -> OpResult<Dims> {
    let order: &[usize] = match (format, sizes.len()) {
        (MemoryFormat::ChannelsLast, 4) => &[1, 3, 2, 0],
        (MemoryFormat::ChannelsLast3d, 5) => &[1, 4, 3, 2, 0],
        (MemoryFormat::ChannelsLast, n) => {
            return Err(OpError::new(
                "other",
                format!("required rank 4 tensor to use channels_last format, got rank {n}"),
            ))
        }
        (MemoryFormat::ChannelsLast3d, n) => {
            return Err(OpError::new(
                "other",
                format!("required rank 5 tensor to use channels_last_3d format, got rank {n}"),
            ))
        }
        _ => return contiguous_strides(sizes, s),
    };
    // c10's get_channels_last_strides_2d/3d (and torch._prims_common's
    // make_channels_last_strides_for, "consistent with eager") multiply the
    // raw sizes: a size-0 dim zeroes the strides outside it.
    let mut strides = smallvec![SymInt::int(1); sizes.len()];
    let mut acc = SymInt::int(1);
    for &d in order {
        strides[d] = acc.clone();
        acc = s.mul(&acc, &sizes[d])?;
    }
    Ok(strides)
}

/// Strides laid out densely following `perm` (perm[0] is the innermost dim).
pub fn strides_from_perm(sizes: &[SymInt], perm: &[usize], s: &mut Sizes) -> OpResult<Dims> {
    let mut strides = smallvec![SymInt::int(1); sizes.len()];
    let mut acc = SymInt::int(1);
    for &d in perm {
        strides[d] = acc.clone();
        let m = s.max1(&sizes[d]);
        acc = s.mul(&acc, &m)?;
    }
    Ok(strides)
}

/// c10's `is_expandable_to`: `sizes` broadcast to `target` (each trailing
/// dim equal, or 1), as autograd's engine accepts a gradient of `target`'s
/// sizes for an input of `sizes` (validate_outputs).
pub fn is_expandable_to(sizes: &[SymInt], target: &[SymInt]) -> bool {
    sizes.len() <= target.len()
        && sizes
            .iter()
            .rev()
            .zip(target.iter().rev())
            .all(|(e, g)| e == g || e.as_int() == Some(1))
}

/// The element count of concrete sizes (None for a symbolic one, or on
/// overflow).
pub fn known_numel(sizes: &[SymInt]) -> Option<i64> {
    sizes
        .iter()
        .try_fold(1i64, |n, d| n.checked_mul(d.as_int()?))
}

/// c10's `compute_contiguous` (size-1 dims may have any stride).
pub fn is_contiguous(sizes: &[SymInt], strides: &[SymInt], s: &mut Sizes) -> bool {
    if sizes.iter().any(|d| d.as_int() == Some(0)) {
        return true;
    }
    dense_in_order(sizes, strides, (0..sizes.len()).rev(), s)
}

/// The stride walk of the contiguity checks (c10's and
/// torch._prims_common's alike): dims in `order`, fastest first, size-1
/// dims skipped, each stride the product of the sizes before.
fn dense_in_order(
    sizes: &[SymInt],
    strides: &[SymInt],
    order: impl Iterator<Item = usize>,
    s: &mut Sizes,
) -> bool {
    let mut expected = SymInt::int(1);
    for d in order {
        if s.eq_int(&sizes[d], 1) {
            continue;
        }
        if !s.eq(&strides[d], &expected) {
            return false;
        }
        expected = match expected.mul(&sizes[d]) {
            Ok(v) => v,
            Err(_) => return false,
        };
    }
    true
}

/// The layout FakeTensor's fast path for add/sub/mul/div.Tensor
/// (fake_impls' `make_fast_binary_impl`) gives its result, once it takes
/// the op: the first of contiguous and channels-last that every operand is
/// contiguous in; None when they share neither (it then runs the ref).
pub fn fast_binary_format(operands: &[IterOperand], s: &mut Sizes) -> Option<MemoryFormat> {
    [MemoryFormat::Contiguous, MemoryFormat::ChannelsLast]
        .into_iter()
        .find(|&format| {
            operands
                .iter()
                .all(|o| is_contiguous_as(o.sizes, o.strides, format, s))
        })
}

/// c10's `is_channels_last_contiguous` / `_3d` for the given format.
pub fn is_contiguous_as(
    sizes: &[SymInt],
    strides: &[SymInt],
    format: MemoryFormat,
    s: &mut Sizes,
) -> bool {
    let order: &[usize] = match (format, sizes.len()) {
        (MemoryFormat::ChannelsLast, 4) => &[1, 3, 2, 0],
        (MemoryFormat::ChannelsLast3d, 5) => &[1, 4, 3, 2, 0],
        (MemoryFormat::ChannelsLast, _) | (MemoryFormat::ChannelsLast3d, _) => return false,
        _ => return is_contiguous(sizes, strides, s),
    };
    // (No shortcut for a tensor without elements, unlike the contiguous
    // format's: c10's compute_channels_last_contiguous_2d/3d has none.)
    dense_in_order(sizes, strides, order.iter().copied(), s)
}

/// c10's `compute_non_overlapping_and_dense`.
pub fn is_non_overlapping_and_dense(sizes: &[SymInt], strides: &[SymInt], s: &mut Sizes) -> bool {
    let n = sizes.len();
    if n == 0 {
        return true;
    }
    if n == 1 {
        // A stride known to be 1 decides it without a guard on the size.
        return strides[0].as_int() == Some(1)
            || s.lt_int(&sizes[0], 2)
            || s.eq_int(&strides[0], 1);
    }
    let mut perm: smallvec::SmallVec<[usize; 6]> = (0..n).collect();
    // Insertion sort with PyTorch's comparator (size < 2 dims go last).
    for i in 1..n {
        let mut j = i;
        while j > 0 {
            let (a, b) = (perm[j], perm[j - 1]);
            let a_small = s.lt_int(&sizes[a], 2);
            let b_small = s.lt_int(&sizes[b], 2);
            let less = if a_small {
                false
            } else if b_small {
                true
            } else {
                s.lt(&strides[a], &strides[b])
            };
            if less {
                perm.swap(j, j - 1);
                j -= 1;
            } else {
                break;
            }
        }
    }
    let mut require = SymInt::int(1);
    for &d in &perm {
        if s.lt_int(&sizes[d], 2) {
            return true;
        }
        if !s.eq(&strides[d], &require) {
            return false;
        }
        require = match require.mul(&sizes[d]) {
            Ok(v) => v,
            Err(_) => return false,
        };
    }
    true
}

/// `torch._prims_common.is_non_overlapping_and_dense`, which Python
/// decompositions run (`convert_element_type`'s meta, for `_to_copy`): the
/// same answer as c10's, with its own guards. `is_contiguous` first (an
/// element count below 2 is contiguous), then channels-last contiguity, a
/// rank-1 stride, and the dims sorted by stride with `sorted` (CPython's
/// run detection and binary insertion for short lists).
pub fn py_is_non_overlapping_and_dense(
    sizes: &[SymInt],
    strides: &[SymInt],
    s: &mut Sizes,
) -> OpResult<bool> {
    let numel = s.prod(sizes)?;
    if s.lt_int(&numel, 2) || dense_in_order(sizes, strides, (0..sizes.len()).rev(), s) {
        return Ok(true);
    }
    let channels_last: &[usize] = match sizes.len() {
        4 => &[1, 3, 2, 0],
        5 => &[1, 4, 3, 2, 0],
        _ => &[],
    };
    if !channels_last.is_empty() && dense_in_order(sizes, strides, channels_last.iter().copied(), s)
    {
        return Ok(true);
    }
    if sizes.len() == 1 {
        return Ok(s.eq_int(&strides[0], 1));
    }
    let mut order: smallvec::SmallVec<[usize; 6]> = (0..sizes.len()).collect();
    python_sort(&mut order, |a, b| s.lt(&strides[a], &strides[b]));
    Ok(dense_in_order(sizes, strides, order.into_iter(), s))
}

/// CPython's `list.sort` of a short list (under 64 items): the leading
/// run (strictly descending ones reversed), then binary insertion of the
/// rest, calling `lt` as it does, so guards come in the same order.
fn python_sort(items: &mut [usize], mut lt: impl FnMut(usize, usize) -> bool) {
    let n = items.len();
    if n < 2 {
        return;
    }
    let mut run = 2;
    if lt(items[1], items[0]) {
        while run < n && lt(items[run], items[run - 1]) {
            run += 1;
        }
        items[..run].reverse();
    } else {
        while run < n && !lt(items[run], items[run - 1]) {
            run += 1;
        }
    }
    for start in run..n {
        let pivot = items[start];
        let (mut l, mut r) = (0, start);
        while l < r {
            let p = l + ((r - l) >> 1);
            if lt(pivot, items[p]) {
                r = p;
            } else {
                l = p + 1;
            }
        }
        items.copy_within(l..start, l + 1);
        items[l] = pivot;
    }
}

/// `torch._prims_common.suggest_memory_format`.
pub fn suggest_memory_format(sizes: &[SymInt], strides: &[SymInt], s: &mut Sizes) -> MemoryFormat {
    suggested_format(sizes, strides, false, s)
}

/// `Tensor::suggest_memory_format` in C++ (eager kernels): the same walk,
/// but `is_channels_last_strides_2d_s4` grows its bound by a dim's size
/// when the size, not the stride, is above 1. A (1, 1, 4, 1) tensor made
/// channels_last is channels_last to C++ and contiguous to Python
/// (tests/oracle/eager_suggest_memory_format.tp).
pub fn suggest_memory_format_cpp(
    sizes: &[SymInt],
    strides: &[SymInt],
    s: &mut Sizes,
) -> MemoryFormat {
    suggested_format(sizes, strides, true, s)
}

fn suggested_format(
    sizes: &[SymInt],
    strides: &[SymInt],
    cpp: bool,
    s: &mut Sizes,
) -> MemoryFormat {
    let order: &[usize] = match sizes.len() {
        4 => &[1, 3, 2, 0],
        5 => &[1, 4, 3, 2, 0],
        _ => return MemoryFormat::Contiguous,
    };
    if s.eq_int(&strides[1], 0) {
        return MemoryFormat::Contiguous;
    }
    let mut min = SymInt::int(0);
    for &d in order {
        if s.eq_int(&sizes[d], 0) {
            return MemoryFormat::Contiguous;
        }
        if s.lt(&strides[d], &min) {
            return MemoryFormat::Contiguous;
        }
        if d == 0 && s.eq(&min, &strides[1]) {
            return MemoryFormat::Contiguous;
        }
        min = strides[d].clone();
        let grows = if cpp { &sizes[d] } else { &strides[d] };
        if s.lt(&SymInt::int(1), grows) {
            min = match min.mul(&sizes[d]) {
                Ok(v) => v,
                Err(_) => return MemoryFormat::Contiguous,
            };
        }
    }
    if sizes.len() == 4 {
        MemoryFormat::ChannelsLast
    } else {
        MemoryFormat::ChannelsLast3d
    }
}

/// The sizes `view` gives when the tensor's sizes are symbolic. PyTorch's
/// fake tensors then run `torch._refs`' `_reshape_view_helper` rather than
/// the C++ kernel, and its result keeps the input's size expressions where
/// a requested length equals the size already there (a dim it skips), and
/// makes new ones for the dims it splits or merges: `(n + 2)//3` viewed as
/// `2` stays `(n + 2)//3`, a dynamic dim. `sizes` is the requested shape,
/// its -1 inferred; the element counts are known to agree. `old_strides`
/// `None`: the input is a contiguous copy. Static inputs give `sizes` back.
pub fn ref_view_sizes(
    old_sizes: &[SymInt],
    old_strides: Option<&[SymInt]>,
    sizes: Dims,
    s: &mut Sizes,
) -> OpResult<Dims> {
    if !old_sizes.iter().any(SymInt::is_symbolic) {
        return Ok(sizes);
    }
    let contiguous;
    let strides = match old_strides {
        Some(strides) => strides,
        None => {
            contiguous = contiguous_strides(old_sizes, s)?;
            &contiguous[..]
        }
    };
    Ok(match ref_view_geometry(old_sizes, strides, &sizes, s)? {
        Some((a, _)) => a,
        None => sizes,
    })
}

/// The sizes and strides of `view` under PyTorch's analysis, which runs
/// with the Python dispatcher on: aten.view's Meta kernel is then
/// `torch._refs.view`, `_reshape_view_helper`, which builds the shape left
/// to right from `prims.collapse_view` and `prims.split_dim`. Dims of
/// size above 1 get the strides `computeStride` gives; size-1 dims may
/// not (`split_dim` gives a new size-1 dim the stride of the dim it splits
/// times its inner length, and a kept size-1 dim keeps its stride).
/// `sizes` has its -1 inferred; the caller knows the view exists
/// (`compute_stride`). None when the helper finds no view.
pub fn ref_view_geometry(
    old_sizes: &[SymInt],
    old_strides: &[SymInt],
    sizes: &[SymInt],
    s: &mut Sizes,
) -> OpResult<Option<(Dims, Dims)>> {
    if old_sizes == sizes {
        return Ok(Some((sizes.into(), old_strides.into())));
    }
    let numel = s.prod(old_sizes)?;
    if s.eq_int(&numel, 0) {
        let strides = contiguous_strides(sizes, s)?;
        return Ok(Some((sizes.into(), strides)));
    }
    if old_sizes.is_empty() {
        return Ok(Some((sizes.into(), smallvec![SymInt::int(1); sizes.len()])));
    }
    if sizes.is_empty() {
        return Ok(Some((Dims::new(), Dims::new())));
    }
    if is_contiguous(old_sizes, old_strides, s) {
        // nd_to_1d and 1d_to_2d are `as_strided` calls.
        if sizes.len() == 1 && old_sizes.len() > 1 {
            return Ok(Some((smallvec![numel], smallvec![SymInt::int(1)])));
        }
        if sizes.len() == 2 && old_sizes.len() == 1 {
            return Ok(Some((
                sizes.into(),
                smallvec![sizes[1].clone(), SymInt::int(1)],
            )));
        }
    }
    let mut a: Dims = old_sizes.into();
    let mut st: Dims = old_strides.into();
    let mut idx = 0;
    for length in sizes {
        if idx >= a.len() {
            // A tail unsqueeze: split_dim(last, size) makes the last dim
            // (size, size // size) with strides (stride * inner, stride).
            // The inner length is 1, unless the size is a floor division,
            // which FloorDiv.eval nests unsimplified (`x // (2*(x // 2))`).
            let last = a.len() - 1;
            let inner = s.floordiv(&a[last], &a[last])?;
            let stride = st[last].clone();
            st[last] = s.mul(&stride, &inner)?;
            a.push(inner);
            st.push(stride);
            idx += 1;
            continue;
        }
        if s.eq(length, &a[idx]) {
            idx += 1;
            continue;
        }
        let mut accum = a[idx].clone();
        let mut end = idx;
        // By the hints, as in `ref_view_sizes`.
        while end + 1 < a.len() && s.env.hint(&accum.modulo(length)?).is_some_and(|r| r != 0) {
            end += 1;
            accum = s.mul(&accum, &a[end])?;
        }
        if end != idx {
            // _collapse_view_helper(a, idx, end): its length skips the
            // dims of size 1 before the last (a symbolic size a guard makes
            // 1 is left out of the product).
            let mut stride = st[end].clone();
            let mut collapsed = a[end].clone();
            for k in (idx..end).rev() {
                if s.eq_int(&a[k], 1) {
                    continue;
                }
                collapsed = s.mul(&collapsed, &a[k])?;
                if !s.lt(&stride, &st[k]) {
                    stride = st[k].clone();
                }
                let next = s.mul(&st[k + 1], &a[k + 1])?;
                if !s.eq_int(&a[k + 1], 1) && !s.eq(&st[k], &next) {
                    return Ok(None);
                }
            }
            a.drain(idx + 1..=end);
            st.drain(idx + 1..=end);
            a[idx] = collapsed;
            st[idx] = stride;
        }
        if !s.eq(&accum, length) {
            // split_dim(a, idx, length): (length, inner) with strides
            // (stride * inner, stride), inner the dim's length // length.
            let inner = s.floordiv(&a[idx], length)?;
            let stride = st[idx].clone();
            a[idx] = length.clone();
            st[idx] = s.mul(&stride, &inner)?;
            a.insert(idx + 1, inner);
            st.insert(idx + 1, stride);
        }
        idx += 1;
    }
    // The tail squeezes.
    a.truncate(idx);
    st.truncate(idx);
    if a.len() != sizes.len() {
        return Ok(None);
    }
    Ok(Some((a, st)))
}

/// c10's `computeStride`: the strides of a view of (`old_sizes`, `old_strides`)
/// with `new_sizes`, or None when no view can express it.
pub fn compute_stride(
    old_sizes: &[SymInt],
    old_strides: &[SymInt],
    new_sizes: &[SymInt],
    s: &mut Sizes,
) -> OpResult<Option<Dims>> {
    if old_sizes.is_empty() {
        return Ok(Some(smallvec![SymInt::int(1); new_sizes.len()]));
    }
    let numel = s.prod(old_sizes)?;
    if s.eq_int(&numel, 0) && old_sizes == new_sizes {
        return Ok(Some(old_strides.into()));
    }
    let mut new_strides = smallvec![SymInt::int(0); new_sizes.len()];
    if s.eq_int(&numel, 0) {
        for d in (0..new_sizes.len()).rev() {
            if d + 1 == new_sizes.len() {
                new_strides[d] = SymInt::int(1);
            } else {
                let m = s.max1(&new_sizes[d + 1]);
                new_strides[d] = s.mul(&m, &new_strides[d + 1])?;
            }
        }
        return Ok(Some(new_strides));
    }
    let mut view_d = new_sizes.len() as i64 - 1;
    let mut chunk_base_stride = old_strides[old_strides.len() - 1].clone();
    let mut tensor_numel = SymInt::int(1);
    let mut view_numel = SymInt::int(1);
    for tensor_d in (0..old_sizes.len()).rev() {
        tensor_numel = s.mul(&tensor_numel, &old_sizes[tensor_d])?;
        let end_of_chunk = tensor_d == 0 || {
            let prev_size = &old_sizes[tensor_d - 1];
            let expect = s.mul(&tensor_numel, &chunk_base_stride)?;
            !s.eq_int(prev_size, 1) && !s.eq(&old_strides[tensor_d - 1], &expect)
        };
        if end_of_chunk {
            while view_d >= 0 {
                let vd = view_d as usize;
                let go = s.lt(&view_numel, &tensor_numel) || s.eq_int(&new_sizes[vd], 1);
                if !go {
                    break;
                }
                new_strides[vd] = s.mul(&view_numel, &chunk_base_stride)?;
                view_numel = s.mul(&view_numel, &new_sizes[vd])?;
                view_d -= 1;
            }
            if !s.eq(&view_numel, &tensor_numel) {
                return Ok(None);
            }
            if tensor_d > 0 {
                chunk_base_stride = old_strides[tensor_d - 1].clone();
                tensor_numel = SymInt::int(1);
                view_numel = SymInt::int(1);
            }
        }
    }
    if view_d != -1 {
        return Ok(None);
    }
    Ok(Some(new_strides))
}

/// `infer_size`: resolves one `-1` against `numel` and checks the product.
/// One view op as its result was made: the op, its base's sizes and
/// strides, and its own.
pub struct ViewStep<'a> {
    pub op: &'a str,
    pub base_sizes: &'a [SymInt],
    pub base_strides: &'a [SymInt],
    pub sizes: &'a [SymInt],
    pub strides: &'a [SymInt],
    /// A permuting view's permutation (view dim `i` is base dim
    /// `perm[i]`), where the geometries do not tell it: dims alike in size
    /// and stride, which the inverse and replay of new strides tell apart.
    pub perm: Option<Perm>,
}

/// A permutation of up to 8 dims (`ViewStep::perm`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Perm {
    dims: [u8; 8],
    len: u8,
}

impl Perm {
    /// The permutation `dims` (wrapped, distinct), if it has at most 8.
    pub fn new(dims: &[usize]) -> Option<Perm> {
        if dims.len() > 8 {
            return None;
        }
        let mut out = [0u8; 8];
        for (o, &d) in out.iter_mut().zip(dims) {
            *o = u8::try_from(d).ok()?;
        }
        Some(Perm {
            dims: out,
            len: dims.len() as u8,
        })
    }

    pub fn dims(&self) -> impl Iterator<Item = usize> + '_ {
        self.dims[..usize::from(self.len)]
            .iter()
            .map(|&d| usize::from(d))
    }
}

/// How a view's dims come from its base's, for the view ops
/// functionalization can run backwards and forwards without a scatter.
enum DimMap {
    /// View dim `i` is base dim `p[i]`.
    Permute(Vec<usize>),
    /// A size-1 dim inserted at this place.
    Unsqueeze(usize),
    /// These size-1 base dims dropped.
    Squeeze(Vec<usize>),
    /// `view` to other sizes.
    Reshape,
    /// `expand`.
    Expand,
    /// The same sizes and strides (`alias`, `detach`).
    Alias,
    /// `unfold`: its inverse is `unfold_backward`, a fresh contiguous
    /// tensor of the base's sizes.
    Unfold,
    /// `diagonal` of base dims `(d1, d2)`: the other dims in order, then
    /// the diagonal, whose stride is the sum of theirs. Its inverse is a
    /// scatter (`diagonal_scatter`).
    Diagonal(usize, usize),
}

impl ViewStep<'_> {
    /// The step's `DimMap`, read from the op and the two geometries: None
    /// for slicing and dtype views, or when the geometries no longer fit
    /// the op (a view whose metadata changed in place since).
    /// A `view` to other sizes (the reshape family's view).
    pub fn is_reshape(&self) -> bool {
        matches!(self.dim_map(), Some(DimMap::Reshape))
    }

    /// Whether the two geometries tell the step's dims (they are a base
    /// and the view its op made of it).
    pub fn is_told(&self) -> bool {
        self.dim_map().is_some()
    }

    fn dim_map(&self) -> Option<DimMap> {
        let (bs, bt) = (self.base_sizes, self.base_strides);
        match self.op {
            "alias" | "detach" => (bs == self.sizes && bt == self.strides).then_some(DimMap::Alias),
            "t" | "transpose" | "swapaxes" | "swapdims" | "permute" | "movedim" | "moveaxis"
            | "adjoint" => {
                // Each view dim is the first unused base dim with its size
                // and stride (dims that tie are alike), unless the
                // permutation was given.
                if bs.len() != self.sizes.len() {
                    return None;
                }
                if let Some(p) = self.perm {
                    let perm: Vec<usize> = p.dims().collect();
                    let fits = perm.len() == bs.len()
                        && perm.iter().enumerate().all(|(i, &j)| {
                            bs.get(j) == Some(&self.sizes[i]) && bt.get(j) == Some(&self.strides[i])
                        });
                    if fits {
                        return Some(DimMap::Permute(perm));
                    }
                }
                let mut used = vec![false; bs.len()];
                let mut perm = Vec::with_capacity(bs.len());
                for (size, stride) in self.sizes.iter().zip(self.strides) {
                    let j =
                        (0..bs.len()).find(|&j| !used[j] && bs[j] == *size && bt[j] == *stride)?;
                    used[j] = true;
                    perm.push(j);
                }
                Some(DimMap::Permute(perm))
            }
            "unsqueeze" => {
                if self.sizes.len() != bs.len() + 1 {
                    return None;
                }
                (0..self.sizes.len())
                    .find(|&k| {
                        self.sizes[k].as_int() == Some(1)
                            && without(self.sizes, k).eq(bs.iter())
                            && without(self.strides, k).eq(bt.iter())
                    })
                    .map(DimMap::Unsqueeze)
            }
            "squeeze" => {
                let mut dropped = Vec::new();
                let mut next = 0;
                for (j, (size, stride)) in bs.iter().zip(bt).enumerate() {
                    if next < self.sizes.len()
                        && self.sizes[next] == *size
                        && self.strides[next] == *stride
                    {
                        next += 1;
                    } else if size.as_int() == Some(1) {
                        dropped.push(j);
                    } else {
                        return None;
                    }
                }
                (next == self.sizes.len()).then_some(DimMap::Squeeze(dropped))
            }
            "view" | "view_as" | "reshape" | "reshape_as" | "flatten" | "unflatten" => {
                Some(DimMap::Reshape)
            }
            "expand" | "expand_as" | "broadcast_to" => {
                (self.sizes.len() >= bs.len()).then_some(DimMap::Expand)
            }
            "unfold" => (self.sizes.len() == bs.len() + 1).then_some(DimMap::Unfold),
            "diagonal" => {
                // The first pair of base dims whose removal leaves the
                // view's other dims and whose strides sum to the diagonal's.
                let n = bs.len();
                if self.sizes.len() + 1 != n || n < 2 {
                    return None;
                }
                let diag = &self.strides[n - 2];
                (0..n)
                    .flat_map(|d1| (d1 + 1..n).map(move |d2| (d1, d2)))
                    .find(|&(d1, d2)| {
                        let rest = (0..n).filter(|&j| j != d1 && j != d2);
                        rest.clone().map(|j| &bs[j]).eq(self.sizes[..n - 2].iter())
                            && rest.map(|j| &bt[j]).eq(self.strides[..n - 2].iter())
                            && bt[d1].add(&bt[d2]).is_ok_and(|sum| sum == *diag)
                    })
                    .map(|(d1, d2)| DimMap::Diagonal(d1, d2))
            }
            _ => None,
        }
    }
}

/// The value functionalization's view inverse (ViewInverses.cpp, views
/// reapplied) gives the base when the view's value is replaced by one with
/// `new_sizes` and `new_strides`: the inverse permutation, `squeeze` for
/// `unsqueeze` and back, `view` to the base's sizes, `sum_to` (a fresh
/// contiguous tensor) for `expand`, the value itself for an alias. None
/// when the base keeps its value's layout: slicing views scatter into it.
///
/// The sizes are the ops' own: equal in value to the base's, but a `view`
/// back to them runs the reshape algorithm on the value's sizes, whose
/// `split_dim`s and collapses give its own expressions of symbolic sizes
/// (a `[4, (s1*s2)//4]` value viewed back to `[s1, s2]` is
/// `[s1, (4//s1)*((s1*s2)//4)]`).
pub fn view_inverse_geometry(
    view: &ViewStep,
    new_sizes: &[SymInt],
    new_strides: &[SymInt],
    s: &mut Sizes,
) -> OpResult<Option<(Dims, Dims)>> {
    // Strides of another rank belong to no step of this view.
    if new_strides.len() != view.sizes.len() || new_sizes.len() != new_strides.len() {
        return Ok(None);
    }
    let Some(map) = view.dim_map() else {
        return Ok(None);
    };
    Ok(match map {
        DimMap::Alias => Some((new_sizes.into(), new_strides.into())),
        DimMap::Permute(perm) => {
            let mut sizes: Dims = view.base_sizes.into();
            let mut strides: Dims = view.base_strides.into();
            for (i, &j) in perm.iter().enumerate() {
                sizes[j] = new_sizes[i].clone();
                strides[j] = new_strides[i].clone();
            }
            Some((sizes, strides))
        }
        DimMap::Unsqueeze(k) => Some((
            without(new_sizes, k).cloned().collect(),
            without(new_strides, k).cloned().collect(),
        )),
        DimMap::Squeeze(dropped) => {
            let mut sizes: Dims = new_sizes.into();
            let mut strides: Dims = new_strides.into();
            for j in dropped {
                unsqueeze_geometry(&mut sizes, &mut strides, j, s)?;
            }
            Some((sizes, strides))
        }
        // Functionalization runs the view family on FakeTensors, whose view
        // is torch._refs.view (`ref_view_geometry`), not computeStride.
        DimMap::Reshape => ref_view_geometry(new_sizes, new_strides, view.base_sizes, s)?,
        DimMap::Expand => Some((
            view.base_sizes.into(),
            expand_inverse_strides(view, view.base_sizes, s)?,
        )),
        DimMap::Unfold => Some((
            view.base_sizes.into(),
            contiguous_strides(view.base_sizes, s)?,
        )),
        DimMap::Diagonal(..) => None,
    })
}

/// A slicing view (`select`, `slice` and the ops that split) replayed on
/// its base's new value: the base's new strides, less the selected dim or
/// with the sliced dim's stride times the slice's step, and the view's own
/// size along it. None when the geometries do not tell the dim (or the
/// step), or the base's size along it changed.
fn slicing_replay(
    view: &ViewStep,
    base_sizes: &[SymInt],
    base_strides: &[SymInt],
    s: &mut Sizes,
) -> OpResult<Option<(Dims, Dims)>> {
    let (bs, bt) = (view.base_sizes, view.base_strides);
    match view.op {
        "select" | "unbind" if view.sizes.len() + 1 == bs.len() => {
            // The dims whose removal leaves the view's geometry: dims alike
            // in size and stride must replay alike.
            let mut replayed: Option<(Dims, Dims)> = None;
            for d in 0..bs.len() {
                if !(without(bs, d).eq(view.sizes.iter()) && without(bt, d).eq(view.strides.iter()))
                {
                    continue;
                }
                let here: (Dims, Dims) = (
                    without(base_sizes, d).cloned().collect(),
                    without(base_strides, d).cloned().collect(),
                );
                match &replayed {
                    Some(other) if *other != here => return Ok(None),
                    _ => replayed = Some(here),
                }
            }
            Ok(replayed)
        }
        "slice" | "narrow" | "split" | "split_with_sizes" | "tensor_split"
            if view.sizes.len() == bs.len() =>
        {
            let differs: smallvec::SmallVec<[usize; 2]> = (0..bs.len())
                .filter(|&d| bs[d] != view.sizes[d] || bt[d] != view.strides[d])
                .collect();
            let (mut sizes, mut strides): (Dims, Dims) = (base_sizes.into(), base_strides.into());
            match differs.as_slice() {
                [] => {}
                &[d] => {
                    let step = if bt[d] == view.strides[d] {
                        1
                    } else {
                        match (bt[d].as_int(), view.strides[d].as_int()) {
                            (Some(b), Some(v)) if b != 0 && v % b == 0 && v / b > 0 => v / b,
                            _ => return Ok(None),
                        }
                    };
                    if base_sizes[d] != bs[d] {
                        return Ok(None);
                    }
                    sizes[d] = view.sizes[d].clone();
                    strides[d] = s.mul(&base_strides[d], &SymInt::int(step))?;
                }
                _ => return Ok(None),
            }
            Ok(Some((sizes, strides)))
        }
        _ => Ok(None),
    }
}

/// The strides of expand's inverse, `base + sum_to(value - base, sizes)`
/// (ViewInverses.cpp), `sizes` the base's: the sum is a fresh tensor, and
/// the addition takes the base's layout wherever the base's strides tell
/// it (a channels-last base stays channels-last).
fn expand_inverse_strides(view: &ViewStep, sizes: &[SymInt], s: &mut Sizes) -> OpResult<Dims> {
    let summed = contiguous_strides(sizes, s)?;
    if view.base_sizes != sizes {
        return Ok(summed);
    }
    let base = IterOperand {
        sizes: view.base_sizes,
        strides: view.base_strides,
    };
    let sum = IterOperand {
        sizes,
        strides: &summed,
    };
    iterator_output_strides(sizes, &[base, sum], true, s)
}

/// The value the view op gives when it is replayed on its base's new
/// value, of sizes `base_sizes` and strides `base_strides`
/// (`regenerate_from_base`). None when the step is not one
/// `view_inverse_geometry` runs backwards. The sizes follow the base's
/// (a `view` runs the reshape algorithm on them, `view_inverse_geometry`),
/// except where the op was given them (`expand`, `unfold`'s size and the
/// diagonal's length).
pub fn view_replay_geometry(
    view: &ViewStep,
    base_sizes: &[SymInt],
    base_strides: &[SymInt],
    s: &mut Sizes,
) -> OpResult<Option<(Dims, Dims)>> {
    let bs = view.base_sizes;
    if base_strides.len() != bs.len() || base_sizes.len() != bs.len() {
        return Ok(None);
    }
    if let Some(replayed) = slicing_replay(view, base_sizes, base_strides, s)? {
        return Ok(Some(replayed));
    }
    let Some(map) = view.dim_map() else {
        return Ok(None);
    };
    Ok(match map {
        DimMap::Alias => Some((base_sizes.into(), base_strides.into())),
        DimMap::Permute(perm) => Some((
            perm.iter().map(|&j| base_sizes[j].clone()).collect(),
            perm.iter().map(|&j| base_strides[j].clone()).collect(),
        )),
        DimMap::Unsqueeze(k) => {
            let mut sizes: Dims = base_sizes.into();
            let mut strides: Dims = base_strides.into();
            unsqueeze_geometry(&mut sizes, &mut strides, k, s)?;
            Some((sizes, strides))
        }
        DimMap::Squeeze(dropped) => {
            let kept = |(j, _): &(usize, &SymInt)| !dropped.contains(j);
            Some((
                base_sizes
                    .iter()
                    .enumerate()
                    .filter(kept)
                    .map(|(_, d)| d.clone())
                    .collect(),
                base_strides
                    .iter()
                    .enumerate()
                    .filter(kept)
                    .map(|(_, d)| d.clone())
                    .collect(),
            ))
        }
        DimMap::Reshape => ref_view_geometry(base_sizes, base_strides, view.sizes, s)?,
        DimMap::Unfold => unfold_replay_strides(view, base_strides, s)?
            .map(|strides| (view.sizes.into(), strides)),
        DimMap::Diagonal(d1, d2) => {
            let others = (0..bs.len()).filter(|&j| j != d1 && j != d2);
            let mut sizes: Dims = others.clone().map(|j| base_sizes[j].clone()).collect();
            let mut strides: Dims = others.map(|j| base_strides[j].clone()).collect();
            sizes.push(view.sizes[view.sizes.len() - 1].clone());
            strides.push(s.add(&base_strides[d1], &base_strides[d2])?);
            Some((sizes, strides))
        }
        DimMap::Expand => {
            // torch._refs.expand: a new size-1 dim gets `new_dim_stride`.
            let lead = view.sizes.len() - bs.len();
            let first = new_dim_stride(bs, base_strides, s)?;
            let strides = view
                .sizes
                .iter()
                .enumerate()
                .map(|(i, size)| match i.checked_sub(lead) {
                    Some(j) if !(bs[j].as_int() == Some(1) && size.as_int() != Some(1)) => {
                        base_strides[j].clone()
                    }
                    Some(_) => SymInt::int(0),
                    None if size.as_int() == Some(1) => first.clone(),
                    None => SymInt::int(0),
                })
                .collect();
            Some((view.sizes.into(), strides))
        }
    })
}

/// `infer_size`'s refusal of a shape whose numel is not the input's.
pub fn invalid_shape_error(target: &[SymInt], numel: &SymInt) -> OpError {
    OpError::new(
        "invalid-shape",
        format!(
            "shape '{}' is invalid for input of size {numel}",
            show(target)
        ),
    )
}

/// `t()`'s refusal of a tensor of more than two dims.
pub fn t_rank_error(rank: usize) -> OpError {
    OpError::new(
        "other",
        format!("t() expects a tensor with <= 2 dimensions, but self is {rank}D"),
    )
}

/// torch._refs.permute's refusal of a permutation of another length.
pub fn permute_length_error(rank: usize, len: usize) -> OpError {
    OpError::new(
        "other",
        format!("Attempting to permute a tensor of rank {rank}, but received a permutation of length {len}!"),
    )
}

/// A view step run on a value of other sizes (a `resize_as_` wrote it):
/// backwards, as functionalization's inverse (FunctionalInverses.cpp, views
/// reapplied) takes it to the base, or forwards, as `regenerate_from_base`
/// replays the op on the base's new value. `sizes` and `strides` are the
/// value's, changed in place. Err is the op's refusal on that rank; Ok(false)
/// when tpi does not follow the step (slicing and the other scatters, a
/// forward `expand`, dims the geometries do not tell): the caller stops.
/// A transpose's or unsqueeze's dims are read back from the geometries as
/// non-negative (the call's own may have been negative, which wraps against
/// the new rank otherwise).
pub fn view_step_on(
    view: &ViewStep,
    inverse: bool,
    sizes: &mut Dims,
    strides: &mut Dims,
    s: &mut Sizes,
) -> OpResult<bool> {
    if view.op == "as_strided" {
        // as_strided_scatter wants a value of the view's sizes; the base
        // keeps its own.
        if inverse && !s.eq_dims(sizes, view.sizes) {
            return Err(OpError::new(
                "other",
                format!(
                    "expected src to have a size equal to the slice of self. src size = torch.Size({}), slice size = {}",
                    show(sizes),
                    show(view.sizes)
                ),
            ));
        }
        return Ok(false);
    }
    let Some(map) = view.dim_map() else {
        return Ok(false);
    };
    let rank = sizes.len();
    match map {
        DimMap::Alias => {}
        DimMap::Permute(perm) => match view.op {
            "t" => {
                if rank > 2 {
                    return Err(t_rank_error(rank));
                }
                sizes.reverse();
                strides.reverse();
            }
            "transpose" | "swapaxes" | "swapdims" | "adjoint" => {
                let swapped: smallvec::SmallVec<[usize; 2]> =
                    (0..perm.len()).filter(|&i| perm[i] != i).collect();
                let (d0, d1) = match (view.op, swapped.as_slice()) {
                    ("adjoint", _) => (-2, -1),
                    (_, &[a, b]) => (a as i64, b as i64),
                    // transpose(d, d): the dim is not told.
                    _ => return Ok(false),
                };
                let (a, b) = (wrap_dim(d0, rank)?, wrap_dim(d1, rank)?);
                if rank > 0 {
                    sizes.swap(a, b);
                    strides.swap(a, b);
                }
            }
            _ => {
                // permute wraps its dims first, then compares the rank.
                for &d in perm.iter() {
                    wrap_dim(d as i64, rank)?;
                }
                if rank != perm.len() {
                    return Err(permute_length_error(rank, perm.len()));
                }
                let (old_sizes, old_strides) = (sizes.clone(), strides.clone());
                for (i, &j) in perm.iter().enumerate() {
                    // Forwards view dim i is base dim perm[i]; backwards
                    // base dim perm[i] is view dim i.
                    let (to, from) = if inverse { (j, i) } else { (i, j) };
                    sizes[to] = old_sizes[from].clone();
                    strides[to] = old_strides[from].clone();
                }
            }
        },
        DimMap::Unsqueeze(k) if inverse => {
            let d = wrap_dim(k as i64, rank)?;
            squeeze_geometry(sizes, strides, &[d], s);
        }
        DimMap::Unsqueeze(k) => {
            let d = wrap_dim(k as i64, rank + 1)?;
            unsqueeze_geometry(sizes, strides, d, s)?;
        }
        DimMap::Squeeze(dropped) if inverse => {
            for j in dropped {
                let d = wrap_dim(j as i64, sizes.len() + 1)?;
                unsqueeze_geometry(sizes, strides, d, s)?;
            }
        }
        DimMap::Squeeze(dropped) => {
            if dropped.iter().any(|&j| j >= rank) {
                return Ok(false);
            }
            squeeze_geometry(sizes, strides, &dropped, s);
        }
        DimMap::Reshape => {
            let target = if inverse { view.base_sizes } else { view.sizes };
            let numel = s.prod(sizes)?;
            let want = s.prod(target)?;
            if !s.eq(&numel, &want) {
                return Err(invalid_shape_error(target, &numel));
            }
            let Some((_, st)) = ref_view_geometry(sizes, strides, target, s)? else {
                return Ok(false);
            };
            *sizes = target.into();
            *strides = st;
        }
        DimMap::Expand if inverse => {
            // sum_to(value, base sizes) after a check that they broadcast.
            let base = view.base_sizes;
            let lead = rank.checked_sub(base.len());
            for i in 0..rank.max(base.len()) {
                let (v, b) = (
                    (i < rank).then(|| &sizes[rank - 1 - i]),
                    (i < base.len()).then(|| &base[base.len() - 1 - i]),
                );
                if let (Some(v), Some(b)) = (v, b) {
                    if !s.eq(v, b) && !s.eq_int(v, 1) && !s.eq_int(b, 1) {
                        return Err(OpError::new(
                            "broadcast",
                            format!(
                                "Attempting to broadcast a dimension of length {b} at -{}! Mismatching argument at index 1 had torch.Size({}); but expected shape should be broadcastable to {}",
                                i + 1,
                                show(base),
                                show(sizes)
                            ),
                        ));
                    }
                }
            }
            let Some(lead) = lead else {
                return Ok(false);
            };
            let summed: Dims = base
                .iter()
                .zip(&sizes[lead..])
                .map(|(b, v)| {
                    if s.eq_int(b, 1) {
                        SymInt::int(1)
                    } else {
                        v.clone()
                    }
                })
                .collect();
            *strides = expand_inverse_strides(view, &summed, s)?;
            *sizes = summed;
        }
        DimMap::Expand | DimMap::Unfold | DimMap::Diagonal(..) => return Ok(false),
    }
    Ok(true)
}

/// `unfold(d, size, step)` replayed on a base whose strides are now
/// `new_base`: the base's strides, dim `d`'s times `step`, and `d`'s for the
/// new last dim. `d` and `step` are read back from the view as it was made:
/// the dim whose stride the last dim has, whose window count and stride
/// fit. None when they do not tell (symbolic sizes, a 0 stride, two dims
/// that would replay differently).
fn unfold_replay_strides(
    view: &ViewStep,
    new_base: &[SymInt],
    s: &mut Sizes,
) -> OpResult<Option<Dims>> {
    let n = view.base_sizes.len();
    // Sizes a guard has specialised (writing through an unfold does) count
    // as their values.
    let int = |v: &SymInt| s.env.resolved_int(v);
    let (Some(size), Some(last)) = (int(&view.sizes[n]), int(&view.strides[n])) else {
        return Ok(None);
    };
    let mut found: Option<Dims> = None;
    for d in 0..n {
        let others_kept = (0..n).all(|i| {
            i == d
                || (view.sizes[i] == view.base_sizes[i] && view.strides[i] == view.base_strides[i])
        });
        let (Some(base_stride), Some(stride), Some(base_size), Some(count)) = (
            int(&view.base_strides[d]),
            int(&view.strides[d]),
            int(&view.base_sizes[d]),
            int(&view.sizes[d]),
        ) else {
            return Ok(None);
        };
        if !others_kept || base_stride != last || base_stride == 0 || stride % base_stride != 0 {
            continue;
        }
        let step = stride / base_stride;
        if step <= 0 || base_size < size || (base_size - size) / step + 1 != count {
            continue;
        }
        let mut strides: Dims = new_base.into();
        strides[d] = s.mul(&new_base[d], &SymInt::int(step))?;
        strides.push(new_base[d].clone());
        match &found {
            Some(f) if *f != strides => return Ok(None),
            _ => found = Some(strides),
        }
    }
    Ok(found)
}

/// The items of `dims` but the one at `k`.
fn without(dims: &[SymInt], k: usize) -> impl Iterator<Item = &SymInt> {
    dims.iter()
        .enumerate()
        .filter(move |&(i, _)| i != k)
        .map(|(_, d)| d)
}

pub fn infer_size(shape: &[SymInt], numel: &SymInt, s: &mut Sizes) -> OpResult<Dims> {
    let mut infer: Option<usize> = None;
    let mut known = SymInt::int(1);
    for (i, d) in shape.iter().enumerate() {
        if d.as_int() == Some(-1) {
            if infer.is_some() {
                return Err(OpError::new(
                    "invalid-shape",
                    "only one dimension can be inferred",
                ));
            }
            infer = Some(i);
        } else if let Some(v) = d.as_int().filter(|v| *v < 0) {
            return Err(OpError::new(
                "invalid-shape",
                format!("invalid shape dimension {v}"),
            ));
        } else {
            known = s.mul(&known, d)?;
        }
    }
    let bad = || invalid_shape_error(shape, numel);
    let mut out = Dims::from(shape);
    match infer {
        Some(i) => {
            if s.eq_int(&known, 0) {
                // infer_size_impl: the ambiguity is only reached when
                // numel is 0 too; otherwise the shape is invalid.
                if !s.eq_int(numel, 0) {
                    return Err(bad());
                }
                return Err(OpError::new(
                    "other",
                    format!("cannot reshape tensor of {} elements into shape {} because the unspecified dimension size -1 can be any value and is ambiguous", numel, show(shape)),
                ));
            }
            let q = s.floordiv(numel, &known)?;
            let back = s.mul(&q, &known)?;
            if !s.eq(&back, numel) {
                return Err(bad());
            }
            out[i] = q;
        }
        None => {
            if !s.eq(&known, numel) {
                return Err(bad());
            }
        }
    }
    Ok(out)
}

/// Broadcasts two shapes (`infer_size` of ATen); the error names PyTorch's
/// tensors a and b.
pub fn broadcast_shapes(a: &[SymInt], b: &[SymInt], s: &mut Sizes) -> OpResult<Dims> {
    let n = a.len().max(b.len());
    let mut out = Dims::with_capacity(n);
    for i in 0..n {
        let da = (i + a.len()).checked_sub(n).map(|j| &a[j]);
        let db = (i + b.len()).checked_sub(n).map(|j| &b[j]);
        let v = match (da, db) {
            (Some(x), None) => x.clone(),
            (None, Some(y)) => y.clone(),
            (Some(x), Some(y)) => {
                if s.eq_int(x, 1) {
                    y.clone()
                } else if s.eq_int(y, 1) || s.eq(x, y) {
                    x.clone()
                } else {
                    return Err(OpError::new(
                        "broadcast",
                        format!(
                            "The size of tensor a ({x}) must match the size of tensor b ({y}) at non-singleton dimension {i}"
                        ),
                    ));
                }
            }
            (None, None) => SymInt::int(1),
        };
        out.push(v);
    }
    Ok(out)
}

/// TensorIterator's refusal of an output (not resized) whose shape the
/// operands broadcast beyond.
pub fn output_broadcast_error(output: &[SymInt], broadcast: &[SymInt]) -> OpError {
    OpError::new(
        "inplace-broadcast",
        format!(
            "output with shape {} doesn't match the broadcast shape {}",
            show(output),
            show(broadcast)
        ),
    )
}

/// The stride torch._refs.expand (`prims.broadcast_in_dim`) gives a new
/// leading dim of size 1: the tensor's first size times stride, 1 for a
/// 0-d tensor, whatever new dims come between.
pub fn new_dim_stride(sizes: &[SymInt], strides: &[SymInt], s: &mut Sizes) -> OpResult<SymInt> {
    match (sizes.first(), strides.first()) {
        (Some(n), Some(st)) => s.mul(n, st),
        _ => Ok(SymInt::int(1)),
    }
}

/// One operand of an elementwise op: its shape and strides (the refs
/// compare element strides, so the dtype does not matter).
#[derive(Clone, Copy)]
pub struct IterOperand<'a> {
    pub sizes: &'a [SymInt],
    pub strides: &'a [SymInt],
}

/// The output strides of an elementwise op, as the analysis computes them
/// (FakeTensor runs the Python refs: `compute_elementwise_output_strides`).
/// The operands are broadcast to `shape` first (0-d tensors too, in the
/// analysis; eager's TensorIterator ignores them); if
/// every operand is contiguous (size-1 dims ignored) the output is contiguous,
/// if every one is channels_last it is channels_last; otherwise dims are
/// sorted by stride (`compute_elementwise_output_logical_to_physical_perm`).
///
/// `refs_expand`: the operands are broadcast with `expand` (the analysis's
/// refs, `_maybe_broadcast`), which FakeTensor runs as torch._refs.expand,
/// `prims.broadcast_in_dim`: its new leading dims of size 1 get the
/// operand's first size times stride, whatever new dims come between, and
/// so take part in the sort; TensorIterator (eager) gives them stride 0.
pub fn iterator_output_strides(
    shape: &[SymInt],
    inputs: &[IterOperand],
    refs_expand: bool,
    s: &mut Sizes,
) -> OpResult<Dims> {
    // The refs expand a 0-d tensor operand (`_maybe_broadcast` keeps only
    // CPU scalar tensors, and FakeTensor's are on `meta` inside a kernel):
    // its strides, 1 at size-1 dims and 0 elsewhere, keep the output from
    // the contiguous short-circuit (tests/oracle/zero_dim_operand_layout.tp).
    let zero_dim = refs_expand && inputs.iter().any(|op| op.sizes.is_empty());
    if shape.len() > 1 && !zero_dim {
        if let Some(strides) = contiguous_operands(shape, inputs) {
            return Ok(strides);
        }
    }
    if shape.len() > 1 {
        if let Some(strides) = concrete::output_strides(shape, inputs, refs_expand) {
            return Ok(strides);
        }
    }
    iterator_output_strides_general(shape, inputs, refs_expand, s)
}

/// The usual case of `iterator_output_strides`, answered without the
/// general rule: every operand with dims has the output's concrete sizes
/// and exactly its contiguous strides, so the rule's answer is those
/// strides. Four dims are left to the rule (contiguous strides can be
/// channels-last ones too, which the rule treats apart).
fn contiguous_operands(shape: &[SymInt], inputs: &[IterOperand]) -> Option<Dims> {
    if shape.len() == 4 {
        return None;
    }
    let mut strides: Option<&[SymInt]> = None;
    for op in inputs {
        if op.sizes.is_empty() {
            continue;
        }
        if op.sizes != shape || op.strides.len() != shape.len() {
            return None;
        }
        match strides {
            Some(first) if op.strides != first => return None,
            Some(_) => {}
            None => {
                // `concrete::dense_strides(shape, None)`, compared as made.
                let mut expected: i64 = 1;
                for (size, stride) in shape.iter().zip(op.strides).rev() {
                    if stride.as_int()? != expected {
                        return None;
                    }
                    expected = expected.checked_mul(size.as_int()?.max(1))?;
                }
                strides = Some(op.strides);
            }
        }
    }
    strides.map(|st| st.iter().cloned().collect())
}

/// `iterator_output_strides` for any sizes, symbolic ones included.
fn iterator_output_strides_general(
    shape: &[SymInt],
    inputs: &[IterOperand],
    refs_expand: bool,
    s: &mut Sizes,
) -> OpResult<Dims> {
    let ndim = shape.len();
    if ndim <= 1 {
        return contiguous_strides(shape, s);
    }
    // Each non-0-d operand expanded to `shape` (stride 0 where broadcast);
    // an operand of the output's own sizes is its own expansion.
    let mut strides: Vec<std::borrow::Cow<[SymInt]>> = Vec::with_capacity(inputs.len());
    for op in inputs {
        if (op.sizes.is_empty() && !refs_expand) || op.sizes.len() > ndim {
            continue;
        }
        if op.sizes == shape {
            strides.push(std::borrow::Cow::Borrowed(op.strides));
            continue;
        }
        let st = expanded_strides(op.sizes, op.strides, shape, refs_expand, s)?;
        strides.push(std::borrow::Cow::Owned(st.into_vec()));
    }
    if strides.is_empty() {
        return contiguous_strides(shape, s);
    }
    let all_contiguous = strides.iter().all(|st| is_contiguous(shape, st, s));
    let all_channels_last = strides
        .iter()
        .all(|st| is_contiguous_as(shape, st, MemoryFormat::ChannelsLast, s));
    if all_contiguous && !all_channels_last {
        return contiguous_strides(shape, s);
    }
    if all_channels_last && !all_contiguous {
        return format_strides(shape, MemoryFormat::ChannelsLast, s);
    }
    // perm[0] is the innermost dim (the refs sort back-to-front).
    let mut perm: smallvec::SmallVec<[usize; 6]> = (0..ndim).rev().collect();
    let should_swap = |d0: usize, d1: usize, s: &mut Sizes| -> i32 {
        for st in &strides {
            let (s0, s1) = (&st[d0], &st[d1]);
            if s.eq_int(s0, 0) || s.eq_int(s1, 0) {
                continue;
            }
            if s.lt(s0, s1) {
                return -1;
            }
            if s.lt(s1, s0) {
                return 1;
            }
            if s.lt(&shape[d1], &shape[d0]) {
                return 1;
            }
        }
        0
    };
    for i in 1..ndim {
        let mut dim1 = i;
        for dim0 in (0..i).rev() {
            let c = should_swap(perm[dim0], perm[dim1], s);
            if c > 0 {
                perm.swap(dim0, dim1);
                dim1 = dim0;
            } else if c < 0 {
                break;
            }
        }
    }
    strides_from_perm(shape, &perm, s)
}

/// The strides of an operand of `sizes` expanded to `shape`: 0 where
/// broadcast. `refs`: as torch._refs.expand (`prims.broadcast_in_dim`) does
/// it, which gives a 0-d tensor 1 at size-1 dims and a new leading size-1
/// dim `new_dim_stride`; otherwise (TensorIterator) those are 0 too.
fn expanded_strides(
    sizes: &[SymInt],
    strides: &[SymInt],
    shape: &[SymInt],
    refs: bool,
    s: &mut Sizes,
) -> OpResult<Dims> {
    let ndim = shape.len();
    if sizes.is_empty() && refs {
        return Ok(shape
            .iter()
            .map(|d| SymInt::int(i64::from(s.eq_int(d, 1))))
            .collect());
    }
    let offset = ndim - sizes.len();
    let mut st: Dims = smallvec![SymInt::int(0); ndim];
    for (i, (size, stride)) in sizes.iter().zip(strides).enumerate() {
        let broadcast = s.eq_int(size, 1) && !s.eq_int(&shape[offset + i], 1);
        st[offset + i] = if broadcast {
            SymInt::int(0)
        } else {
            stride.clone()
        };
    }
    if refs && offset > 0 {
        let lead = new_dim_stride(sizes, strides, s)?;
        for i in 0..offset {
            if s.eq_int(&shape[i], 1) {
                st[i] = lead.clone();
            }
        }
    }
    Ok(st)
}

/// torch._refs.expand's strides for an operand of `sizes` expanded to
/// `shape` (the same strides when it has that shape).
pub fn refs_expanded_strides(
    sizes: &[SymInt],
    strides: &[SymInt],
    shape: &[SymInt],
    s: &mut Sizes,
) -> OpResult<Dims> {
    if sizes == shape || sizes.len() > shape.len() {
        return Ok(strides.into());
    }
    expanded_strides(sizes, strides, shape, true, s)
}

/// ATen's own `empty_like(preserve_format)` (eager `clone`, the `_like`
/// factories): a non-overlapping and dense layout is kept exactly, size-1
/// dims' strides too; any other as `like_strides`.
pub fn eager_like_strides(
    sizes: &[SymInt],
    strides: &[SymInt],
    format: MemoryFormat,
    s: &mut Sizes,
) -> OpResult<Dims> {
    if format == MemoryFormat::Preserve && is_non_overlapping_and_dense(sizes, strides, s) {
        return Ok(strides.into());
    }
    like_strides(sizes, strides, format, s)
}

/// `empty_like` / `clone` strides for a memory format (`preserve_format` keeps
/// dense non-overlapping strides, else suggests a format).
pub fn like_strides(
    sizes: &[SymInt],
    strides: &[SymInt],
    format: MemoryFormat,
    s: &mut Sizes,
) -> OpResult<Dims> {
    match format {
        MemoryFormat::Preserve => {
            // torch._refs' empty_like: the layout's dim order, with fresh
            // strides for size-1 dims; a strided layout that is not dense
            // keeps its dim order too (ATen's `infer_dense_strides`).
            let me = IterOperand { sizes, strides };
            iterator_output_strides(sizes, &[me], false, s)
        }
        f => format_strides(sizes, f, s),
    }
}

/// The layout rules above for concrete layouts, on plain `i64`s: most
/// tensors have integer sizes and strides, and these take a fraction of the
/// instructions the `SymInt` versions do. They give the same results: every
/// comparison of integers is decided without a guard, so the only difference
/// could be an overflow, and on an overflow they give up (`None`) and the
/// general rule runs (and reports it).
mod concrete {
    use super::{Dims, IterOperand};
    use crate::sym::SymInt;
    use smallvec::SmallVec;

    pub type Ints = SmallVec<[i64; 6]>;

    /// The values of `dims` when all are integers.
    pub fn ints(dims: &[SymInt]) -> Option<Ints> {
        dims.iter().map(SymInt::as_int).collect()
    }

    pub fn dims(values: &[i64]) -> Dims {
        values.iter().map(|&v| SymInt::int(v)).collect()
    }

    /// `contiguous_strides` (`order` None) or `strides_from_perm` (`order`
    /// lists the dims innermost first); None on an overflow.
    pub fn dense_strides(sizes: &[i64], order: Option<&[usize]>) -> Option<Ints> {
        let mut strides: Ints = smallvec::smallvec![1; sizes.len()];
        let mut acc: i64 = 1;
        let mut step = |d: usize| -> Option<()> {
            strides[d] = acc;
            acc = acc.checked_mul(sizes[d].max(1))?;
            Some(())
        };
        match order {
            Some(order) => order.iter().try_for_each(|&d| step(d))?,
            None => (0..sizes.len()).rev().try_for_each(step)?,
        }
        Some(strides)
    }

    /// `is_contiguous` (`order` None) or `is_contiguous_as` a format whose
    /// dims innermost first are `order`.
    fn is_dense(sizes: &[i64], strides: &[i64], order: Option<&[usize]>) -> bool {
        // (A tensor without elements is contiguous, but channels-last only
        // if its strides say so: `is_contiguous_as`.)
        if order.is_none() && sizes.contains(&0) {
            return true;
        }
        let mut expected: i64 = 1;
        let mut check = |d: usize| -> bool {
            if sizes[d] == 1 {
                return true;
            }
            if strides[d] != expected {
                return false;
            }
            match expected.checked_mul(sizes[d]) {
                Some(v) => {
                    expected = v;
                    true
                }
                None => false,
            }
        };
        match order {
            Some(order) => order.iter().all(|&d| check(d)),
            None => (0..sizes.len()).rev().all(check),
        }
    }

    const CHANNELS_LAST: [usize; 4] = [1, 3, 2, 0];

    /// `iterator_output_strides` for a shape of two dims or more; None when
    /// a size or stride is symbolic, or on an overflow.
    pub fn output_strides(
        shape: &[SymInt],
        inputs: &[IterOperand],
        refs_expand: bool,
    ) -> Option<Dims> {
        let ndim = shape.len();
        let shape = ints(shape)?;
        let mut strides: SmallVec<[Ints; 4]> = SmallVec::new();
        for op in inputs {
            if op.sizes.is_empty() && refs_expand {
                strides.push(shape.iter().map(|&d| i64::from(d == 1)).collect());
                continue;
            }
            if op.sizes.is_empty() || op.sizes.len() > ndim {
                continue;
            }
            let offset = ndim - op.sizes.len();
            let mut st: Ints = smallvec::smallvec![0; ndim];
            for (i, (size, stride)) in op.sizes.iter().zip(op.strides).enumerate() {
                let (size, stride) = (size.as_int()?, stride.as_int()?);
                let broadcast = size == 1 && shape[offset + i] != 1;
                st[offset + i] = if broadcast { 0 } else { stride };
            }
            if refs_expand && offset > 0 {
                let lead = op.sizes[0].as_int()?.checked_mul(op.strides[0].as_int()?)?;
                for i in 0..offset {
                    if shape[i] == 1 {
                        st[i] = lead;
                    }
                }
            }
            strides.push(st);
        }
        if strides.is_empty() {
            return dense_strides(&shape, None).map(|st| dims(&st));
        }
        let all_contiguous = strides.iter().all(|st| is_dense(&shape, st, None));
        let all_channels_last = ndim == 4
            && strides
                .iter()
                .all(|st| is_dense(&shape, st, Some(&CHANNELS_LAST)));
        if all_contiguous && !all_channels_last {
            return dense_strides(&shape, None).map(|st| dims(&st));
        }
        if all_channels_last && !all_contiguous {
            return dense_strides(&shape, Some(&CHANNELS_LAST)).map(|st| dims(&st));
        }
        // perm[0] is the innermost dim (the refs sort back-to-front).
        let mut perm: SmallVec<[usize; 6]> = (0..ndim).rev().collect();
        let should_swap = |d0: usize, d1: usize| -> i32 {
            for st in &strides {
                let (s0, s1) = (st[d0], st[d1]);
                if s0 == 0 || s1 == 0 {
                    continue;
                }
                if s0 < s1 {
                    return -1;
                }
                if s1 < s0 {
                    return 1;
                }
                if shape[d1] < shape[d0] {
                    return 1;
                }
            }
            0
        };
        for i in 1..ndim {
            let mut dim1 = i;
            for dim0 in (0..i).rev() {
                let c = should_swap(perm[dim0], perm[dim1]);
                if c > 0 {
                    perm.swap(dim0, dim1);
                    dim1 = dim0;
                } else if c < 0 {
                    break;
                }
            }
        }
        dense_strides(&shape, Some(&perm)).map(|st| dims(&st))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn syms(v: &[i64]) -> Dims {
        v.iter().map(|&x| SymInt::int(x)).collect()
    }

    /// A small deterministic generator (xorshift), for layouts.
    struct Rng(u64);

    impl Rng {
        fn next(&mut self, n: u64) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0 % n
        }
    }

    /// The integer fast paths give what the general rules give, on random
    /// layouts (permuted, broadcast, size-0/1 dims, stride-0 dims, overflows).
    #[test]
    fn concrete_layout_rules_match_the_general_ones() {
        let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
        let mut s = Sizes::default();
        let mut contiguous_cases = 0;
        for case in 0..20_000 {
            let ndim = 2 + rng.next(4) as usize;
            let shape: Vec<i64> = (0..ndim)
                .map(|_| match rng.next(10) {
                    0 => 0,
                    1..=3 => 1,
                    9 if case % 50 == 0 => i64::MAX / 3,
                    _ => 1 + rng.next(5) as i64,
                })
                .collect();
            let n_ops = 1 + rng.next(3) as usize;
            let mut operands: Vec<(Dims, Dims)> = Vec::new();
            for _ in 0..n_ops {
                let nd = match rng.next(4) {
                    0 => rng.next(ndim as u64 + 1) as usize,
                    _ => ndim,
                };
                let sizes: Vec<i64> = shape[ndim - nd..]
                    .iter()
                    .map(|&d| if rng.next(4) == 0 { 1 } else { d })
                    .collect();
                let strides: Vec<i64> = match rng.next(4) {
                    0 => (0..nd).map(|_| rng.next(13) as i64).collect(),
                    _ => {
                        let mut perm: Vec<usize> = (0..nd).collect();
                        for i in (1..nd).rev() {
                            perm.swap(i, rng.next(i as u64 + 1) as usize);
                        }
                        let syms_sizes = syms(&sizes);
                        strides_from_perm(&syms_sizes, &perm, &mut s)
                            .map(|st| st.iter().map(|v| v.as_int().unwrap()).collect())
                            .unwrap_or_else(|_| vec![1; nd])
                    }
                };
                operands.push((syms(&sizes), syms(&strides)));
            }
            let inputs: Vec<IterOperand> = operands
                .iter()
                .map(|(sizes, strides)| IterOperand { sizes, strides })
                .collect();
            let shape = syms(&shape);
            let refs_expand = case % 2 == 0;
            let fast = concrete::output_strides(&shape, &inputs, refs_expand);
            let general = iterator_output_strides_general(&shape, &inputs, refs_expand, &mut s);
            if let Some(c) = contiguous_operands(&shape, &inputs) {
                contiguous_cases += 1;
                assert_eq!(Some(&c), general.as_ref().ok(), "case {case}: {shape:?}");
            }
            match (fast, general) {
                (Some(f), Ok(g)) => assert_eq!(f, g, "case {case}: {shape:?}"),
                (None, _) => {}
                (Some(f), Err(e)) => panic!("case {case}: fast {f:?}, general {e:?}"),
            }
            let fast = concrete::ints(&shape)
                .and_then(|n| concrete::dense_strides(&n, None))
                .map(|st| concrete::dims(&st));
            let mut general = syms(&[1; 0]);
            let mut acc = SymInt::int(1);
            let mut overflow = false;
            for d in (0..shape.len()).rev() {
                general.insert(0, acc.clone());
                match acc.mul(&s.max1(&shape[d])) {
                    Ok(v) => acc = v,
                    Err(_) => overflow = true,
                }
            }
            match fast {
                Some(f) => assert_eq!(f, general, "case {case}"),
                None => assert!(overflow, "case {case}"),
            }
        }
        assert!(s.assumptions.is_empty());
        // The contiguous shortcut met enough cases to be tested.
        assert!(
            contiguous_cases > 500,
            "{contiguous_cases} contiguous cases"
        );
    }
}
