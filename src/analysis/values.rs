//! What the eager run knows of the values of small integer tensors, for
//! the index checks of eager kernels (embedding, index_select, gather…).
//!
//! The oracle runs eager PyTorch on real inputs: an integer input holds
//! values drawn from `randint(1, 5)`, one per element. tpi keeps, per
//! storage element, the set of values it may hold (`ValueSet`): {1, 2, 3,
//! 4} for an input's, one value for a literal's, and the sets that the
//! in-place ops tpi models (`add_`, `neg_`, `clamp_`, `fill_`, `copy_`,
//! `index_put_` with known indices…) make of them. Storage elements, not
//! tensor elements: a write through a view changes what the base and
//! every other view read. Any other write forgets the storage's values.
//!
//! An index check then asks how likely the values are to fail it, each
//! element's value being one of its set, all equally likely and independent
//! (`index_values`): eager's error is predicted when failing is at least as
//! likely as not. Values that are known exactly decide with certainty.

use super::domain::{DType, StorageId, TensorId};
use super::state::{Machine, Mode};
use super::value::Value;
use smallvec::SmallVec;
use std::rc::Rc;

/// The values one storage element may hold: sorted, distinct.
pub type ValueSet = SmallVec<[i64; 4]>;

/// The values of a storage's elements, as of its `mutations`-th write.
#[derive(Clone, Debug)]
pub struct StorageValues {
    mutations: u32,
    elements: Rc<[ValueSet]>,
}

/// A storage's values after a write, computed before it (`written_values`).
pub struct PendingValues {
    storage: StorageId,
    elements: Rc<[ValueSet]>,
}

/// At most this many elements per storage are followed.
const MAX_ELEMENTS: usize = 4096;
/// A set larger than this is forgotten (the storage's values with it).
const MAX_SET: usize = 16;

/// The values `randint(1, 5)` gives the oracle's integer inputs.
const INPUT_VALUES: [i64; 4] = [1, 2, 3, 4];

/// What an int64 or int32 element of newly allocated, unwritten memory
/// holds (eager's resize_bytes leaves it uninitialized): heap leftovers,
/// which in practice are far out of any index check's range.
const GARBAGE: i64 = 1 << 40;

fn set_of(values: impl IntoIterator<Item = i64>) -> Option<ValueSet> {
    let mut set: ValueSet = values.into_iter().collect();
    set.sort_unstable();
    set.dedup();
    (set.len() <= MAX_SET).then_some(set)
}

impl Machine {
    /// Whether the eager run follows `id`'s values: an integer or boolean
    /// tensor (a boolean's values 0 and 1, for masks and their sums).
    fn follows_values(&self, id: TensorId) -> bool {
        let dtype = self.tensors[id].dtype;
        self.mode == Mode::Eager && dtype.is_integral()
    }

    /// The storage offsets of `id`'s elements in row-major order: None
    /// unless its geometry is concrete and it is small.
    fn element_positions(&self, id: TensorId) -> Option<Vec<usize>> {
        let t = &self.tensors[id];
        let sizes = concrete_sizes(self, id)?;
        let strides: SmallVec<[i64; 6]> = t
            .strides()
            .iter()
            .map(|s| s.as_int())
            .collect::<Option<_>>()?;
        let numel = sizes
            .iter()
            .try_fold(1usize, |n, &s| n.checked_mul(usize::try_from(s).ok()?))?;
        if numel > MAX_ELEMENTS {
            return None;
        }
        let offset = t.offset.as_int()?;
        coordinates(&sizes)
            .map(|c| {
                let at = offset + c.iter().zip(&strides).map(|(i, s)| i * s).sum::<i64>();
                usize::try_from(at).ok()
            })
            .collect()
    }

    /// How many elements `storage` has, when known and small.
    fn storage_elements(&self, storage: StorageId, dtype: DType) -> Option<usize> {
        let bytes = self.storages[storage].nbytes.as_ref()?.as_int()?;
        let n = usize::try_from(bytes.checked_div(dtype.itemsize())?).ok()?;
        (n <= MAX_ELEMENTS).then_some(n)
    }

    /// The current values of `storage`'s elements (none once an unmodelled
    /// write went there).
    fn storage_values(&self, storage: StorageId) -> Option<&Rc<[ValueSet]>> {
        let v = self.int_values.get(&storage)?;
        (v.mutations == self.storages[storage].mutations).then_some(&v.elements)
    }

    /// The value sets of `id`'s elements in row-major order: a literal's
    /// exact values, else what its storage's elements may hold.
    pub fn value_sets(&self, id: TensorId) -> Option<Vec<ValueSet>> {
        if self.mode != Mode::Eager || !self.tensors[id].dtype.is_integral() {
            return None;
        }
        if let Some(values) = self.known_values(id) {
            return Some(values.iter().map(|&v| smallvec::smallvec![v]).collect());
        }
        self.stored_sets(id).map(|(sets, _)| sets)
    }

    /// What `id`'s storage elements may hold, in `id`'s row-major order,
    /// with each element's storage position.
    fn stored_sets(&self, id: TensorId) -> Option<(Vec<ValueSet>, Vec<usize>)> {
        let elements = self.storage_values(self.tensors[id].storage)?;
        let positions = self.element_positions(id)?;
        let sets = positions
            .iter()
            .map(|&p| elements.get(p).cloned())
            .collect::<Option<_>>()?;
        Some((sets, positions))
    }

    /// The values `id`'s storage holds once `id`'s elements (row-major)
    /// hold `sets`, its other elements keeping theirs: for `commit_values`
    /// after the write. None when a storage whose values are not known is
    /// not all written.
    pub fn written_values(&self, id: TensorId, sets: Vec<ValueSet>) -> Option<PendingValues> {
        let t = &self.tensors[id];
        let (storage, dtype) = (t.storage, t.dtype);
        let positions = self.element_positions(id)?;
        let n = self.storage_elements(storage, dtype)?;
        let mut elements: Vec<Option<ValueSet>> = match self.storage_values(storage) {
            Some(old) => old.iter().cloned().map(Some).collect(),
            None => vec![None; n],
        };
        if elements.len() != n || sets.len() != positions.len() {
            return None;
        }
        for (p, set) in positions.into_iter().zip(sets) {
            *elements.get_mut(p)? = Some(set);
        }
        let elements = elements.into_iter().collect::<Option<Rc<[ValueSet]>>>()?;
        Some(PendingValues { storage, elements })
    }

    /// The values `storage`'s elements hold now, when known: for
    /// `restamp_values` across a change the machine counts as a write but
    /// that leaves every element as it was.
    pub fn current_values(&self, storage: StorageId) -> Option<Rc<[ValueSet]>> {
        self.storage_values(storage).cloned()
    }

    /// `storage`'s elements still hold `elements` (`current_values`, taken
    /// before the change) after a change that wrote none of them.
    pub fn restamp_values(&mut self, storage: StorageId, elements: Rc<[ValueSet]>) {
        self.commit_values(PendingValues { storage, elements });
    }

    /// The values of `storage` (holding `dtype` elements) after eager
    /// reallocated it to its size now (resize_storage_bytes_, a resize_
    /// that grew it) from `old_nbytes` bytes whose values were `before`:
    /// resize_bytes copies the first min(old, new) bytes, and the rest is
    /// uninitialized (`GARBAGE` for int64 and int32). None when they are
    /// not followed (other dtypes, a copied part whose values are unknown).
    fn reallocated_values(
        &self,
        storage: StorageId,
        dtype: DType,
        before: Option<&[ValueSet]>,
        old_nbytes: i64,
    ) -> Option<Rc<[ValueSet]>> {
        if self.mode != Mode::Eager || !matches!(dtype, DType::I64 | DType::I32) {
            return None;
        }
        let n = self.storage_elements(storage, dtype)?;
        let copied = usize::try_from(old_nbytes / dtype.itemsize()).ok()?.min(n);
        let garbage: ValueSet = smallvec::smallvec![GARBAGE];
        let mut out = Vec::with_capacity(n);
        if copied > 0 {
            out.extend(before?.get(..copied)?.iter().cloned());
        }
        out.resize(n, garbage);
        Some(out.into())
    }

    /// Records `storage`'s values after eager reallocated it
    /// (`reallocated_values` from `before`, its values then, and
    /// `old_nbytes`, its size then), or forgets them when they are not
    /// followed; returns what it recorded.
    pub fn reallocate_values(
        &mut self,
        storage: StorageId,
        dtype: DType,
        before: Option<Rc<[ValueSet]>>,
        old_nbytes: Option<i64>,
    ) -> Option<Rc<[ValueSet]>> {
        let values = old_nbytes
            .and_then(|old| self.reallocated_values(storage, dtype, before.as_deref(), old));
        match &values {
            Some(v) => self.restamp_values(storage, v.clone()),
            None => {
                self.int_values.remove(&storage);
            }
        }
        values
    }

    /// Records that `id`'s elements (row-major) hold `sets` now, a tensor
    /// just made (`written_values` then `commit_values`, nothing written in
    /// between); records nothing when they cannot be followed.
    pub fn record_values(&mut self, id: TensorId, sets: Vec<ValueSet>) {
        if let Some(written) = self.written_values(id, sets) {
            self.commit_values(written);
        }
    }

    /// Records the values a write left (`written_values`, taken before it).
    pub fn commit_values(&mut self, values: PendingValues) {
        let mutations = self.storages[values.storage].mutations;
        self.int_values.insert(
            values.storage,
            StorageValues {
                mutations,
                elements: values.elements,
            },
        );
    }

    /// An integer input of the eager run: each element one of `randint(1,
    /// 5)`'s values.
    pub fn seed_input_values(&mut self, id: TensorId) {
        // (A boolean input's values are not followed.)
        if !self.follows_values(id) || self.tensors[id].dtype == DType::Bool {
            return;
        }
        let t = &self.tensors[id];
        let Some(n) = self.storage_elements(t.storage, t.dtype) else {
            return;
        };
        let set: ValueSet = INPUT_VALUES.iter().copied().collect();
        let mutations = self.storages[t.storage].mutations;
        self.int_values.insert(
            t.storage,
            StorageValues {
                mutations,
                elements: vec![set; n].into(),
            },
        );
    }

    /// The values an eager index check of `id` reads, `bad` telling the
    /// ones it refuses: a literal's own values, or values its elements'
    /// sets make likely. When a refused value is at least as likely as not
    /// (each element's value one of its set, equally likely and
    /// independent; one storage element read twice counts once), the
    /// values returned hold one, at the first element that may have it;
    /// otherwise none of them is refused.
    pub fn index_values(&self, id: TensorId, bad: impl Fn(i64) -> bool) -> Option<Rc<[i64]>> {
        if let Some(values) = self.literal_values(id) {
            return Some(values);
        }
        if !self.follows_values(id) {
            return None;
        }
        let (sets, positions) = self.stored_sets(id)?;
        let mut seen = rustc_hash::FxHashSet::default();
        let mut all_good = 1.0f64;
        for (set, p) in sets.iter().zip(&positions) {
            if seen.insert(*p) {
                let good = set.iter().filter(|&&v| !bad(v)).count();
                all_good *= good as f64 / set.len().max(1) as f64;
            }
        }
        let fails = all_good <= 0.5;
        let mut failed = false;
        let values: Option<Vec<i64>> = sets
            .iter()
            .map(|set| {
                let pick = if fails && !failed {
                    match set.iter().find(|&&v| bad(v)) {
                        Some(&v) => {
                            failed = true;
                            Some(v)
                        }
                        None => set.first().copied(),
                    }
                } else {
                    set.iter().find(|&&v| !bad(v)).or(set.first()).copied()
                };
                pick
            })
            .collect();
        let values = values?;
        // Every element may be refused only when failing is certain; a
        // value not refused must then not be claimed for one that is.
        if !fails && values.iter().any(|&v| bad(v)) {
            return None;
        }
        Some(values.into())
    }
}

/// The value sets an eager in-place op on integer tensor `me` leaves in
/// its elements (row-major), for the ops tpi models; None for any other
/// (its storage's values are then forgotten).
pub fn after_inplace(
    m: &Machine,
    op: &str,
    get: &dyn Fn(&str) -> Value,
    me: TensorId,
) -> Option<Vec<ValueSet>> {
    if !m.follows_values(me) {
        return None;
    }
    let sets = modelled(m, op, get, me, me, &|| m.value_sets(me))?;
    Some(as_dtype(m, me, sets))
}

/// The value sets of `out`, an eager copy of `src` converted to `out`'s
/// dtype (`_to_copy`, `clone`): a boolean's are 0 or 1; a value a narrower
/// integer dtype cannot hold forgets them.
pub fn after_copy(m: &Machine, src: TensorId, out: TensorId) -> Option<Vec<ValueSet>> {
    if !m.follows_values(out) || !m.tensors[src].dtype.is_integral() {
        return None;
    }
    let sets = m.value_sets(src)?;
    let dtype = m.tensors[out].dtype;
    // (A boolean takes any value: it is 0 or 1 after.)
    if let Some((lo, hi)) = super::apply::value_range(dtype).filter(|_| dtype != DType::Bool) {
        if sets
            .iter()
            .flatten()
            .any(|&v| (v as f64) < lo || (v as f64) > hi)
        {
            return None;
        }
    }
    Some(as_dtype(m, out, sets))
}

/// `v` as an element of `dtype` holds it: the low bits, two's complement
/// (uint8's 0..=255), as C++ stores an integer of a wider type.
fn wrapped(dtype: DType, v: i64) -> i64 {
    match dtype {
        DType::U8 => i64::from(v as u8),
        DType::I8 => i64::from(v as i8),
        DType::I16 => i64::from(v as i16),
        DType::I32 => i64::from(v as i32),
        _ => v,
    }
}

/// Whether two tensors read the same storage elements in the same order.
fn same_elements(m: &Machine, a: TensorId, b: TensorId) -> bool {
    let (x, y) = (&m.tensors[a], &m.tensors[b]);
    a == b || (x.storage == y.storage && x.geometry() == y.geometry() && x.offset == y.offset)
}

/// Values written into a boolean tensor are 0 or 1.
fn as_dtype(m: &Machine, target: TensorId, sets: Vec<ValueSet>) -> Vec<ValueSet> {
    if m.tensors[target].dtype != DType::Bool {
        return sets;
    }
    sets.into_iter()
        .map(|set| {
            let mut out: ValueSet = set.iter().map(|&v| i64::from(v != 0)).collect();
            out.sort_unstable();
            out.dedup();
            out
        })
        .collect()
}

/// Whether `op` is an elementwise comparison (its result a boolean mask).
fn is_comparison(op: &str) -> bool {
    matches!(
        op,
        "gt" | "lt"
            | "ge"
            | "le"
            | "eq"
            | "ne"
            | "greater"
            | "less"
            | "greater_equal"
            | "less_equal"
            | "not_equal"
    )
}

/// Whether comparison `op` holds for `a` against `b`.
fn compare_holds(op: &str, a: i64, b: i64) -> bool {
    match op {
        "gt" | "greater" => a > b,
        "lt" | "less" => a < b,
        "ge" | "greater_equal" => a >= b,
        "le" | "less_equal" => a <= b,
        "eq" => a == b,
        _ => a != b,
    }
}

/// Records `out`, the mask of a comparison of an integer tensor with a
/// number (`Machine::compare_masks`).
pub fn note_compare_mask(
    m: &mut Machine,
    op: &'static str,
    get: &dyn Fn(&str) -> Value,
    out: TensorId,
) {
    if !is_comparison(op) {
        return;
    }
    let (Value::Tensor(me), Value::Int(c)) = (get("self"), get("other")) else {
        return;
    };
    let Some(c) = c.as_int() else { return };
    if m.tensors[me].dtype.is_integral() && m.tensors[me].sizes() == m.tensors[out].sizes() {
        let versions = [
            m.versions[m.tensors[me].version],
            m.versions[m.tensors[out].version],
        ];
        m.compare_masks.insert(out, (me, op, c, versions));
    }
}

/// The value sets of a comparison of `me` (integer) with `other` (an
/// integer or a tensor of known values), broadcast to `out`: 1 where it
/// holds, 0 where not, both where the element's values disagree.
fn compare_sets(
    m: &Machine,
    op: &str,
    me: TensorId,
    other: &Value,
    out: TensorId,
) -> Option<Vec<ValueSet>> {
    let holds = |a: i64, b: i64| compare_holds(op, a, b);
    let mine = broadcast_sets(m, me, out)?;
    let theirs: Vec<ValueSet> = match other {
        Value::Int(i) => vec![smallvec::smallvec![i.as_int()?]; mine.len()],
        Value::Bool(b) => vec![smallvec::smallvec![i64::from(*b)]; mine.len()],
        Value::Tensor(o) if m.tensors[*o].dtype.is_integral() => broadcast_sets(m, *o, out)?,
        _ => return None,
    };
    if theirs.len() != mine.len() {
        return None;
    }
    mine.iter()
        .zip(&theirs)
        .map(|(a, b)| pairwise(a, b, |x, y| Some(i64::from(holds(x, y)))))
        .collect()
}

/// The value sets of the integer result `out` of an eager functional op,
/// for the elementwise ones tpi models (as their in-place forms on `self`
/// broadcast to the result), and copies.
pub fn after_functional(
    m: &Machine,
    op: &str,
    get: &dyn Fn(&str) -> Value,
    out: TensorId,
) -> Option<Vec<ValueSet>> {
    if !m.follows_values(out) {
        return None;
    }
    if matches!(op, "cat" | "concat" | "concatenate" | "stack") {
        return joined_sets(m, get, out);
    }
    let Value::Tensor(me) = get("self") else {
        return None;
    };
    if matches!(op, "argsort" | "argmax" | "argmin") {
        return positions_along(m, me, &get("dim"), out);
    }
    if !m.tensors[me].dtype.is_integral() {
        return None;
    }
    let base = || broadcast_sets(m, me, out);
    if is_comparison(op) {
        return compare_sets(m, op, me, &get("other"), out);
    }
    if matches!(op, "dot" | "inner") {
        // The sum of the elementwise products (1-d operands): a tensor
        // with itself multiplies each element by itself.
        let o = match (get("tensor"), get("other")) {
            (Value::Tensor(o), _) | (_, Value::Tensor(o)) => o,
            _ => return None,
        };
        if m.tensors[me].sizes().len() != 1 || m.tensors[o].sizes().len() != 1 {
            return None;
        }
        let mine = m.value_sets(me)?;
        let products: Vec<ValueSet> = if same_elements(m, me, o) {
            mine.iter()
                .map(|a| {
                    set_of(
                        a.iter()
                            .map(|&x| x.checked_mul(x))
                            .collect::<Option<Vec<_>>>()?,
                    )
                })
                .collect::<Option<_>>()?
        } else {
            let theirs = m.value_sets(o)?;
            if theirs.len() != mine.len() {
                return None;
            }
            mine.iter()
                .zip(&theirs)
                .map(|(a, b)| pairwise(a, b, i64::checked_mul))
                .collect::<Option<_>>()?
        };
        return Some(vec![sum_set(&products)?]);
    }
    if matches!(op, "index_select" | "gather") {
        return picked_sets(m, op, get, me, out);
    }
    if op == "sum" {
        // The sum of all elements, or over the given dims (no dtype but an
        // integer one).
        if !matches!(get("dtype"), Value::None) {
            return None;
        }
        return match get("dim") {
            Value::None => Some(vec![sum_set(&m.value_sets(me)?)?]),
            dims => sum_over_dims(m, me, &dims),
        };
    }
    let inplace = match op {
        "neg" | "negative" => "neg_",
        "sign" | "sgn" => "sign_",
        "abs" | "absolute" => "abs_",
        "relu" => "relu_",
        "clamp" | "clip" => "clamp_",
        "clamp_min" => "clamp_min_",
        "clamp_max" => "clamp_max_",
        "add" => "add_",
        "masked_fill" => "masked_fill_",
        "sub" | "subtract" => "sub_",
        "mul" | "multiply" => "mul_",
        "pow" => "pow_",
        "minimum" => "minimum",
        "maximum" => "maximum",
        "clone" | "contiguous" | "to" | "long" | "int" | "short" | "flatten" | "reshape"
        | "positive" => return base(),
        _ => return None,
    };
    let sets = modelled(m, inplace, get, out, me, &base)?;
    Some(as_dtype(m, out, sets))
}

/// The value sets of the indices `out` that `sort`, `topk`, or `max` or
/// `min` over a dim return with their values: positions along the dim.
pub fn indices_along(
    m: &Machine,
    op: &str,
    get: &dyn Fn(&str) -> Value,
    out: TensorId,
) -> Option<Vec<ValueSet>> {
    if !m.follows_values(out) || !matches!(op, "sort" | "topk" | "max" | "min") {
        return None;
    }
    let Value::Tensor(me) = get("self") else {
        return None;
    };
    let dim = get("dim");
    if matches!(op, "max" | "min") && !matches!(dim, Value::Int(_)) {
        return None;
    }
    positions_along(m, me, &dim, out)
}

/// The value sets of `argsort`'s, `argmax`'s or `argmin`'s result `out`
/// (of any dtype's `me`): each element a position along `dim`, or in the
/// flattened tensor when there is none, so any of 0..n (a sample of them
/// when there are many, as for randint).
fn positions_along(m: &Machine, me: TensorId, dim: &Value, out: TensorId) -> Option<Vec<ValueSet>> {
    let shape = concrete_sizes(m, me)?;
    let n = match dim {
        Value::None => shape.iter().product::<i64>(),
        Value::Int(d) if shape.is_empty() => {
            d.as_int()?;
            1
        }
        Value::Int(d) => {
            let d = d.as_int()?.rem_euclid(shape.len() as i64);
            *shape.get(usize::try_from(d).ok()?)?
        }
        _ => return None,
    };
    let numel = usize::try_from(concrete_sizes(m, out)?.iter().product::<i64>()).ok()?;
    let set = spread_set(0, i128::from(n))?;
    Some(vec![set; numel])
}

/// The value sets of `index_select`'s or `gather`'s result `out`: each
/// element is the one of `me` its index picks along `dim` (the index's
/// entry at the element's place along `dim` for index_select, at the
/// element's own place for gather); an index that may hold several values
/// picks any of theirs. None when an index may be out of range (the op
/// refuses it).
fn picked_sets(
    m: &Machine,
    op: &str,
    get: &dyn Fn(&str) -> Value,
    me: TensorId,
    out: TensorId,
) -> Option<Vec<ValueSet>> {
    let (Value::Int(dim), Value::Tensor(index)) = (get("dim"), get("index")) else {
        return None;
    };
    let shape = concrete_sizes(m, me)?;
    let out_shape = concrete_sizes(m, out)?;
    let d = usize::try_from(dim.as_int()?.rem_euclid(shape.len().max(1) as i64)).ok()?;
    let n = *shape.get(d)?;
    let picks = m.value_sets(index)?;
    let index_shape = concrete_sizes(m, index)?;
    let mine = m.value_sets(me)?;
    let flat = |c: &[i64], at: i64| -> Option<usize> {
        let at = if at < 0 { at + n } else { at };
        if !(0..n).contains(&at) {
            return None;
        }
        let k = c
            .iter()
            .zip(&shape)
            .enumerate()
            .try_fold(0i64, |flat, (j, (&i, &size))| {
                let i = if j == d { at } else { i };
                (i < size).then_some(flat * size + i)
            })?;
        usize::try_from(k).ok()
    };
    coordinates(&out_shape)
        .map(|c| {
            let pick = if op == "gather" {
                let k = c
                    .iter()
                    .zip(&index_shape)
                    .try_fold(0i64, |flat, (&i, &size)| {
                        (i < size).then_some(flat * size + i)
                    })?;
                picks.get(usize::try_from(k).ok()?)?
            } else {
                picks.get(usize::try_from(*c.get(d)?).ok()?)?
            };
            let mut any: Vec<i64> = Vec::new();
            for &at in pick {
                any.extend_from_slice(mine.get(flat(&c, at)?)?);
            }
            set_of(any)
        })
        .collect()
}

/// The value sets of `cat`'s or `stack`'s result `out`: in row-major
/// order, each of the result's leading blocks (the dims before `dim`) takes
/// one block of each input in turn. Empty inputs give nothing (cat skips
/// the legacy empty 1-d ones).
fn joined_sets(m: &Machine, get: &dyn Fn(&str) -> Value, out: TensorId) -> Option<Vec<ValueSet>> {
    let sizes = concrete_sizes(m, out)?;
    let dim = match get("dim") {
        Value::Int(d) => d.as_int()?,
        Value::None => 0,
        _ => return None,
    };
    let rank = i64::try_from(sizes.len()).ok()?;
    let d = usize::try_from(if dim < 0 { dim + rank } else { dim }).ok()?;
    let outer = usize::try_from(sizes.get(..d)?.iter().product::<i64>()).ok()?;
    let numel = usize::try_from(sizes.iter().product::<i64>()).ok()?;
    if outer == 0 || numel == 0 {
        return Some(Vec::new());
    }
    let mut inputs = Vec::new();
    for v in get("tensors").sequence()? {
        let Value::Tensor(t) = v else { return None };
        if !m.tensors[t].dtype.is_integral() {
            return None;
        }
        let sets = m.value_sets(t)?;
        if sets.is_empty() {
            continue;
        }
        if sets.len() % outer != 0 {
            return None;
        }
        inputs.push(sets);
    }
    let mut joined = Vec::with_capacity(numel);
    for o in 0..outer {
        for sets in &inputs {
            let chunk = sets.len() / outer;
            joined.extend_from_slice(&sets[o * chunk..(o + 1) * chunk]);
        }
    }
    (joined.len() == numel).then(|| as_dtype(m, out, joined))
}

/// `after_inplace`'s ops with `target`'s shape: `this` is the op's self,
/// whose values broadcast to `target` are `base`.
fn modelled(
    m: &Machine,
    op: &str,
    get: &dyn Fn(&str) -> Value,
    target: TensorId,
    this: TensorId,
    base: &dyn Fn() -> Option<Vec<ValueSet>>,
) -> Option<Vec<ValueSet>> {
    let me = target;
    let int = |v: &Value| match v {
        Value::Int(i) => i.as_int(),
        Value::Bool(b) => Some(i64::from(*b)),
        Value::Tensor(t) => m.constant_value(*t),
        _ => None,
    };
    // Integer arithmetic wraps around at the dtype's width, as the
    // kernels' C++ arithmetic does (`x.mul_(3)` after `random_()`).
    let dtype = m.tensors[me].dtype;
    let unary = |f: &dyn Fn(i64) -> Option<i64>| -> Option<Vec<ValueSet>> {
        base()?
            .into_iter()
            .map(|set| {
                set_of(
                    set.into_iter()
                        .map(|v| f(v).map(|v| wrapped(dtype, v)))
                        .collect::<Option<Vec<_>>>()?,
                )
            })
            .collect()
    };
    let numel = || m.element_positions(me).map(|p| p.len());
    match op {
        "zero_" => Some(vec![smallvec::smallvec![0]; numel()?]),
        "fill_" => match get("value") {
            // A 0-d tensor's values, whatever they are (`y[0] = v.sum()`).
            Value::Tensor(t) if m.tensors[t].sizes().is_empty() => {
                let set = m.value_sets(t)?.into_iter().next()?;
                Some(vec![set; numel()?])
            }
            v => Some(vec![smallvec::smallvec![int(&v)?]; numel()?]),
        },
        // random_(to) draws from [0, to), random_(from, to) from [from, to).
        // random_() draws from [0, the dtype's largest value].
        "random_" => {
            let (lo, hi) = match (get("a"), get("b")) {
                (Value::None, _) => {
                    let max: i128 = match m.tensors[me].dtype {
                        DType::U8 => u8::MAX.into(),
                        DType::I8 => i8::MAX.into(),
                        DType::I16 => i16::MAX.into(),
                        DType::I32 => i32::MAX.into(),
                        DType::I64 => i64::MAX.into(),
                        _ => return None,
                    };
                    (0, max + 1)
                }
                (to, Value::None) => (0, i128::from(int(&to)?)),
                (from, to) => (i128::from(int(&from)?), i128::from(int(&to)?)),
            };
            Some(vec![spread_set(lo, hi)?; numel()?])
        }
        "neg_" => unary(&|v| Some(v.wrapping_neg())),
        "sign_" | "sgn_" => unary(&|v| Some(v.signum())),
        "abs_" => unary(&|v| Some(v.wrapping_abs())),
        "relu_" => unary(&|v| Some(v.max(0))),
        "clamp_" | "clamp_min_" | "clamp_max_" => {
            let (lo, hi) = match op {
                "clamp_min_" => (get("min"), Value::None),
                "clamp_max_" => (Value::None, get("max")),
                _ => (get("min"), get("max")),
            };
            // A bound is a number, or a tensor whose values (broadcast to
            // the target) bound each element.
            let bound = |b: Value| -> Option<Option<Vec<ValueSet>>> {
                let n = numel()?;
                Some(match b {
                    Value::None => None,
                    Value::Tensor(t) if int(&b).is_none() => Some(broadcast_sets(m, t, me)?),
                    v => Some(vec![smallvec::smallvec![int(&v)?]; n]),
                })
            };
            let (lo, hi) = (bound(lo)?, bound(hi)?);
            let mut sets = base()?;
            for (k, set) in sets.iter_mut().enumerate() {
                if let Some(lo) = &lo {
                    *set = pairwise(set, lo.get(k)?, |v, l| Some(v.max(l)))?;
                }
                if let Some(hi) = &hi {
                    *set = pairwise(set, hi.get(k)?, |v, h| Some(v.min(h)))?;
                }
            }
            Some(sets)
        }
        "add_" | "sub_" | "mul_" | "pow_" | "minimum" | "maximum" | "div_" | "floor_divide_"
        | "remainder_" | "fmod_" => {
            let alpha = match get("alpha") {
                Value::None => 1,
                v => int(&v)?,
            };
            // Integer division: `div_` rounds as asked (true division of
            // integers is no integer), floor_divide_ floors; remainder_
            // takes the divisor's sign, fmod_ the dividend's. A zero
            // divisor raises (ZeroDivisionError): not followed.
            let floor = match (op, get("rounding_mode")) {
                ("floor_divide_", _) => true,
                ("div_", Value::Str(r)) if &*r == "floor" => true,
                ("div_", Value::Str(r)) if &*r == "trunc" => false,
                ("div_", _) => return None,
                _ => false,
            };
            let apply = |a: i64, b: i64| -> Option<i64> {
                match op {
                    "add_" => Some(a.wrapping_add(b.wrapping_mul(alpha))),
                    "sub_" => Some(a.wrapping_sub(b.wrapping_mul(alpha))),
                    "minimum" => Some(a.min(b)),
                    "maximum" => Some(a.max(b)),
                    "div_" | "floor_divide_" if b == 0 => None,
                    "div_" | "floor_divide_" if floor => crate::sym::py_floordiv(a, b),
                    "div_" | "floor_divide_" => a.checked_div(b),
                    "remainder_" => (b != 0).then(|| crate::sym::py_mod(a, b)),
                    "fmod_" => a.checked_rem(b),
                    // Integer powers (a negative exponent is refused by the
                    // kernel).
                    "pow_" => Some(a.wrapping_pow(u32::try_from(b).ok()?)),
                    _ => Some(a.wrapping_mul(b)),
                }
                .map(|v| wrapped(dtype, v))
            };
            let other = get(if op == "pow_" { "exponent" } else { "other" });
            if let Some(b) = int(&other) {
                return unary(&|a| apply(a, b));
            }
            let Value::Tensor(o) = other else { return None };
            if same_elements(m, o, this) {
                return unary(&|a| apply(a, a));
            }
            let mine = base()?;
            let theirs = broadcast_sets(m, o, me)?;
            mine.iter()
                .zip(&theirs)
                .map(|(a, b)| pairwise(a, b, apply))
                .collect()
        }
        "copy_" => {
            let Value::Tensor(src) = get("src") else {
                return None;
            };
            broadcast_sets(m, src, me)
        }
        // Where the mask is known: the value where it is 1, the element's
        // own values where it is 0. Where it may be either, the element
        // may hold either (the mask's values are not tied to the
        // element's: the union, as for a random write).
        "masked_fill_" => {
            let Value::Tensor(mask) = get("mask") else {
                return None;
            };
            let value = match get("value") {
                Value::Tensor(t) if m.tensors[t].sizes().is_empty() => {
                    m.value_sets(t)?.into_iter().next()?
                }
                v => smallvec::smallvec![int(&v)?],
            };
            // The mask of a comparison of this very tensor, unwritten since:
            // each value is filled exactly where the comparison holds.
            if let (Some(&(of, cmp, c, versions)), [value]) =
                (m.compare_masks.get(&mask), value.as_slice())
            {
                let now = [
                    m.versions[m.tensors[of].version],
                    m.versions[m.tensors[mask].version],
                ];
                if same_elements(m, of, this) && now == versions {
                    return base()?
                        .iter()
                        .map(|own| {
                            set_of(own.iter().map(|&v| {
                                if compare_holds(cmp, v, c) {
                                    *value
                                } else {
                                    v
                                }
                            }))
                        })
                        .collect();
                }
            }
            let masks = broadcast_sets(m, mask, me)?;
            base()?
                .into_iter()
                .zip(masks)
                .map(|(own, mask)| match mask.as_slice() {
                    [0] => Some(own),
                    [1] => Some(value.clone()),
                    _ => set_of(own.iter().chain(&value).copied()),
                })
                .collect()
        }
        "index_fill_" => {
            let shape = concrete_sizes(m, me)?;
            let dim =
                usize::try_from(int(&get("dim"))?.rem_euclid(shape.len().max(1) as i64)).ok()?;
            let n = shape.get(dim).copied().unwrap_or(1);
            let Value::Tensor(ix) = get("index") else {
                return None;
            };
            // An index of known values fills its slices; one of value sets
            // (a random index) fills each slice it may pick or leaves it.
            let picked: Vec<ValueSet> = m
                .value_sets(ix)?
                .iter()
                .map(|set| set_of(set.iter().map(|&i| i.rem_euclid(n.max(1)))))
                .collect::<Option<_>>()?;
            let value = int(&get("value"))?;
            let mut sets = m.value_sets(me)?;
            for (k, c) in coordinates(&shape).enumerate() {
                let at = c.get(dim).copied().unwrap_or(0);
                if picked.iter().any(|p| p.as_slice() == [at]) {
                    sets[k] = smallvec::smallvec![value];
                } else if picked.iter().any(|p| p.contains(&at)) {
                    sets[k] = set_of(sets[k].iter().copied().chain([value]))?;
                }
            }
            Some(sets)
        }
        "index_put_" => {
            let shape = concrete_sizes(m, me)?;
            let indices = match get("indices") {
                Value::Tuple(items) => items.to_vec(),
                Value::List(items) => items.borrow().clone(),
                _ => return None,
            };
            // A mask of the tensor's shape (`x[x > 0] = v`) with one value:
            // where the mask holds, the value; where it may, either.
            if let [Value::Tensor(mask)] = indices.as_slice() {
                if matches!(m.tensors[*mask].dtype, DType::Bool | DType::U8) {
                    if concrete_sizes(m, *mask)? != shape {
                        return None;
                    }
                    let Value::Tensor(values) = get("values") else {
                        return None;
                    };
                    let value = match m.value_sets(values)?.as_slice() {
                        [one] => one.clone(),
                        _ => return None,
                    };
                    let masks = m.value_sets(*mask)?;
                    let accumulate = matches!(get("accumulate"), Value::Bool(true));
                    return m
                        .value_sets(me)?
                        .into_iter()
                        .zip(masks)
                        .map(|(own, hit)| {
                            let put = if accumulate {
                                sum_of(&own, &value)?
                            } else {
                                value.clone()
                            };
                            match hit.as_slice() {
                                [0] => Some(own),
                                [1] => Some(put),
                                _ => set_of(own.iter().chain(put.iter()).copied()),
                            }
                        })
                        .collect();
                }
            }
            // Index tensors of known values on the leading dims, of one
            // length (or one element each).
            let mut lists: Vec<std::rc::Rc<[i64]>> = Vec::new();
            for v in &indices {
                let Value::Tensor(ix) = v else { return None };
                if matches!(m.tensors[*ix].dtype, DType::Bool | DType::U8) {
                    return None;
                }
                lists.push(m.known_values(*ix)?);
            }
            let len = lists.iter().map(|l| l.len()).max()?;
            if lists.len() > shape.len() || lists.iter().any(|l| l.len() != len && l.len() != 1) {
                return None;
            }
            let targets: Vec<SmallVec<[i64; 6]>> = (0..len)
                .map(|j| {
                    lists
                        .iter()
                        .zip(&shape)
                        .map(|(l, &n)| l[if l.len() == 1 { 0 } else { j }].rem_euclid(n.max(1)))
                        .collect()
                })
                .collect();
            let Value::Tensor(values) = get("values") else {
                return None;
            };
            // The values broadcast to the indexed shape: the index's length,
            // then the dims not indexed.
            let rest = &shape[lists.len()..];
            let mut indexed: SmallVec<[i64; 6]> = smallvec::smallvec![len as i64];
            indexed.extend_from_slice(rest);
            let value = broadcast_sets_to(m, values, &indexed)?;
            let inner = rest.iter().product::<i64>().max(0) as usize;
            let accumulate = matches!(get("accumulate"), Value::Bool(true));
            let mut sets = m.value_sets(me)?;
            for (k, c) in coordinates(&shape).enumerate() {
                // The element of the values each hit writes: its index
                // row, then its place in the dims not indexed.
                let tail = c[lists.len()..]
                    .iter()
                    .zip(rest)
                    .fold(0usize, |flat, (&i, &n)| flat * n as usize + i as usize);
                let hits: SmallVec<[usize; 2]> = (0..targets.len())
                    .filter(|&j| c.starts_with(&targets[j]))
                    .collect();
                if hits.is_empty() {
                    continue;
                }
                sets[k] = if accumulate {
                    let mut acc = sets[k].clone();
                    for &j in &hits {
                        acc = sum_of(&acc, value.get(j * inner + tail)?)?;
                    }
                    acc
                } else {
                    // Repeated indices: one of their values, not told which.
                    let mut any: Vec<i64> = Vec::new();
                    for &j in &hits {
                        any.extend_from_slice(value.get(j * inner + tail)?);
                    }
                    set_of(any)?
                };
            }
            Some(sets)
        }
        "index_add_" | "index_copy_" => {
            // self[..., index[j], ...] += alpha * source[..., j, ...], or
            // = source[..., j, ...] (one of the writes where the index
            // repeats).
            let copy = op == "index_copy_";
            let shape = concrete_sizes(m, me)?;
            let dim =
                usize::try_from(int(&get("dim"))?.rem_euclid(shape.len().max(1) as i64)).ok()?;
            let Value::Tensor(ix) = get("index") else {
                return None;
            };
            let picked = m.known_values(ix)?;
            let Value::Tensor(src) = get("source") else {
                return None;
            };
            let src_shape = concrete_sizes(m, src)?;
            let src_sets = m.value_sets(src)?;
            let alpha = match get("alpha") {
                Value::None => 1,
                v => int(&v)?,
            };
            if shape.is_empty() || src_shape.len() != shape.len() {
                return None;
            }
            let mut sets = m.value_sets(me)?;
            let mut copied: Vec<Option<ValueSet>> = Vec::new();
            if copy {
                copied.resize(sets.len(), None);
            }
            for (c, add) in coordinates(&src_shape).zip(&src_sets) {
                let mut at = c.clone();
                at[dim] = picked
                    .get(usize::try_from(c[dim]).ok()?)?
                    .rem_euclid(shape[dim].max(1));
                let mut flat = 0i64;
                for (&i, &n) in at.iter().zip(&shape) {
                    if i >= n {
                        return None;
                    }
                    flat = flat * n + i;
                }
                let at = usize::try_from(flat).ok()?;
                if copy {
                    let w = copied.get_mut(at)?;
                    *w = Some(match w.take() {
                        None => add.clone(),
                        Some(prev) => set_of(prev.iter().chain(add).copied())?,
                    });
                    continue;
                }
                let e = sets.get_mut(at)?;
                let sums = e.iter().flat_map(|&a| {
                    add.iter()
                        .map(move |&b| a.checked_add(b.checked_mul(alpha)?))
                });
                *e = set_of(sums.collect::<Option<Vec<_>>>()?)?;
            }
            for (e, w) in sets.iter_mut().zip(copied) {
                if let Some(w) = w {
                    *e = w;
                }
            }
            Some(sets)
        }
        "scatter_" | "scatter_add_" => {
            // scatter_add_ (or reduce="add") adds each source value in.
            let add = match get("reduce") {
                Value::None => op == "scatter_add_",
                Value::Str(r) if r.as_ref() == "add" => true,
                _ => return None,
            };
            let shape = concrete_sizes(m, me)?;
            let dim =
                usize::try_from(int(&get("dim"))?.rem_euclid(shape.len().max(1) as i64)).ok()?;
            let Value::Tensor(ix) = get("index") else {
                return None;
            };
            let ix_shape = concrete_sizes(m, ix)?;
            // The index's value sets (`value_sets` gives a literal's values
            // one each; `randint(0, 1)` one too).
            let picked = m.value_sets(ix)?;
            let src = match (get("src"), get("value")) {
                (Value::Tensor(t), _) => t,
                // scatter_(dim, index, value): a number (as `src` or `value`).
                (Value::None, v) | (v, _) => {
                    let v = int(&v)?;
                    let one = |_: &[i64]| Some(smallvec::smallvec![v]);
                    return scatter_sets(m, me, &shape, dim, &ix_shape, &picked, add, &one);
                }
            };
            let src_shape = concrete_sizes(m, src)?;
            let src = m.value_sets(src)?;
            scatter_sets(
                m,
                me,
                &shape,
                dim,
                &ix_shape,
                &picked,
                add,
                &|c: &[i64]| {
                    // src is read at the index element's coordinates.
                    let mut flat = 0i64;
                    for (&i, &n) in c.iter().zip(&src_shape) {
                        if i >= n {
                            return None;
                        }
                        flat = flat * n + i;
                    }
                    src.get(usize::try_from(flat).ok()?).cloned()
                },
            )
        }
        _ => None,
    }
}

/// `scatter_`'s values: each element of the index (shape `ix_shape`, value
/// sets `picked`) writes `value(its coordinates)` at its coordinates with
/// `dim` replaced by its value, or adds it there (`add`: scatter_add_). An
/// index element that may hold several values (a random index) writes
/// each place it may reach or not: that place may then hold its own
/// values or the written ones (their union), or, when adding, the sums of
/// its own and what may be added (`sum_set`).
#[allow(clippy::too_many_arguments)]
fn scatter_sets(
    m: &Machine,
    me: TensorId,
    shape: &[i64],
    dim: usize,
    ix_shape: &[i64],
    picked: &[ValueSet],
    add: bool,
    value: &dyn Fn(&[i64]) -> Option<ValueSet>,
) -> Option<Vec<ValueSet>> {
    let mut sets = m.value_sets(me)?;
    if shape.is_empty() || ix_shape.len() != shape.len() {
        return None;
    }
    // What each element may have added to it, when an index is uncertain.
    let mut added: Vec<Vec<ValueSet>> = Vec::new();
    for (c, choices) in coordinates(ix_shape).zip(picked) {
        let v = value(&c)?;
        let certain = choices.len() == 1;
        if !certain && add && added.is_empty() {
            added = vec![Vec::new(); sets.len()];
        }
        for &i in choices {
            let mut at = c.clone();
            at[dim] = i;
            let mut flat = 0i64;
            for (&i, &n) in at.iter().zip(shape) {
                if i < 0 || i >= n {
                    return None;
                }
                flat = flat * n + i;
            }
            let k = usize::try_from(flat).ok()?;
            if certain {
                let slot = sets.get_mut(k)?;
                *slot = if add { sum_of(slot, &v)? } else { v.clone() };
            } else if !add {
                let slot = sets.get_mut(k)?;
                *slot = set_of(slot.iter().chain(&v).copied())?;
            } else {
                let mut maybe = v.clone();
                maybe.push(0);
                maybe.sort_unstable();
                maybe.dedup();
                added.get_mut(k)?.push(maybe);
            }
        }
    }
    for (set, more) in sets.iter_mut().zip(added) {
        if !more.is_empty() {
            let mut all = more;
            all.push(std::mem::take(set));
            *set = sum_set(&all)?;
        }
    }
    Some(sets)
}

/// A tensor's sizes, when all are known.
fn concrete_sizes(m: &Machine, id: TensorId) -> Option<SmallVec<[i64; 6]>> {
    m.tensors[id].sizes().iter().map(|s| s.as_int()).collect()
}

/// The coordinates of a shape's elements in row-major order.
fn coordinates(shape: &[i64]) -> impl Iterator<Item = SmallVec<[i64; 6]>> + '_ {
    let numel = shape.iter().product::<i64>().max(0);
    let mut index: SmallVec<[i64; 6]> = smallvec::smallvec![0; shape.len()];
    (0..numel).map(move |_| {
        let here = index.clone();
        for d in (0..shape.len()).rev() {
            index[d] += 1;
            if index[d] < shape[d] {
                break;
            }
            index[d] = 0;
        }
        here
    })
}

/// The values `randint(low, high, …)` gives each element.
pub fn randint_set(low: i64, high: i64) -> Option<ValueSet> {
    spread_set(i128::from(low), i128::from(high))
}

/// The values the sum of elements holding `sets` (independent) may take:
/// each possible sum while there are at most `MAX_SET`, then `spread_set`
/// over the sums' range (the sum of `randint(1, 5)` values over a few
/// elements, which an embedding's index check refuses whatever they are).
fn sum_set(sets: &[ValueSet]) -> Option<ValueSet> {
    let (mut lo, mut hi) = (0i128, 0i128);
    let mut exact: Option<ValueSet> = Some(smallvec::smallvec![0]);
    for set in sets {
        lo += i128::from(*set.first()?);
        hi += i128::from(*set.last()?);
        exact = exact.and_then(|acc| sum_of(&acc, set));
    }
    if i64::try_from(hi).is_err() || i64::try_from(lo).is_err() {
        return None;
    }
    exact.or_else(|| spread_set(lo, hi + 1))
}

/// The value sets of `sum(me, dims)` (keepdim or not: the same elements in
/// row-major order): each the `sum_set` of the elements it adds up.
fn sum_over_dims(m: &Machine, me: TensorId, dims: &Value) -> Option<Vec<ValueSet>> {
    let shape = concrete_sizes(m, me)?;
    let rank = shape.len().max(1) as i64;
    let wrap = |d: &Value| -> Option<usize> {
        let d = match d {
            Value::Int(i) => i.as_int()?,
            _ => return None,
        };
        let d = if d < 0 { d + rank } else { d };
        (0..rank).contains(&d).then_some(d as usize)
    };
    let reduced: SmallVec<[usize; 4]> = match dims {
        Value::Tuple(items) => items.iter().map(wrap).collect::<Option<_>>()?,
        Value::List(items) => items.borrow().iter().map(wrap).collect::<Option<_>>()?,
        d => smallvec::smallvec![wrap(d)?],
    };
    // An empty dim list sums everything (as no dim does).
    if reduced.is_empty() || shape.is_empty() {
        return Some(vec![sum_set(&m.value_sets(me)?)?]);
    }
    let sets = m.value_sets(me)?;
    let kept: SmallVec<[i64; 6]> = (0..shape.len())
        .map(|d| if reduced.contains(&d) { 1 } else { shape[d] })
        .collect();
    let mut groups: Vec<Vec<ValueSet>> = vec![Vec::new(); kept.iter().product::<i64>() as usize];
    for (index, set) in coordinates(&shape).zip(sets) {
        let out = (0..shape.len()).fold(0usize, |flat, d| {
            flat * kept[d] as usize
                + if reduced.contains(&d) {
                    0
                } else {
                    index[d] as usize
                }
        });
        groups.get_mut(out)?.push(set);
    }
    groups.iter().map(|g| sum_set(g)).collect()
}

/// The values `a + b` may take for `a` in one set and `b` in another (None
/// on overflow or past `MAX_SET`).
fn sum_of(a: &[i64], b: &[i64]) -> Option<ValueSet> {
    pairwise(a, b, i64::checked_add)
}

/// The values `f(x, y)` may take for `x` in one set and `y` in another
/// (None when `f` gives none, or past `MAX_SET`).
fn pairwise(a: &[i64], b: &[i64], f: impl Fn(i64, i64) -> Option<i64>) -> Option<ValueSet> {
    let all = a.iter().flat_map(|&x| b.iter().map(move |&y| (x, y)));
    set_of(all.map(|(x, y)| f(x, y)).collect::<Option<Vec<i64>>>()?)
}

/// The values a uniform draw from `[low, high)` stands for: each of them
/// when there are at most `MAX_SET`, else `MAX_SET` of them spread evenly
/// (the midpoints of equal parts), so that the share of them an index check
/// refuses is about the chance it refuses the draw (`randint(0, 100)`, a
/// dtype's whole range for `random_()`).
fn spread_set(low: i128, high: i128) -> Option<ValueSet> {
    let span = high - low;
    if span <= 0 {
        return None;
    }
    let n = MAX_SET as i128;
    if span <= n {
        return set_of((0..span).map(|k| (low + k) as i64));
    }
    set_of((0..n).map(|k| (low + ((2 * k + 1) * span) / (2 * n)) as i64))
}

/// The value sets of `src`'s elements broadcast to `to`'s shape (row-major).
fn broadcast_sets(m: &Machine, src: TensorId, to: TensorId) -> Option<Vec<ValueSet>> {
    broadcast_sets_to(m, src, &concrete_sizes(m, to)?)
}

/// The value sets of `src`'s elements broadcast to `shape` (row-major).
fn broadcast_sets_to(m: &Machine, src: TensorId, shape: &[i64]) -> Option<Vec<ValueSet>> {
    if !m.tensors[src].dtype.is_integral() {
        return None;
    }
    let sets = m.value_sets(src)?;
    let from = concrete_sizes(m, src)?;
    let lead = shape.len().checked_sub(from.len())?;
    if from
        .iter()
        .zip(&shape[lead..])
        .any(|(&n, &size)| n != 1 && n != size)
    {
        return None;
    }
    coordinates(shape)
        .map(|index| {
            let flat = from
                .iter()
                .zip(&index[lead..])
                .fold(0i64, |flat, (&n, &i)| flat * n + if n == 1 { 0 } else { i });
            sets.get(usize::try_from(flat).ok()?).cloned()
        })
        .collect()
}
