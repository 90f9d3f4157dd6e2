//! The op table: every op of the `.tp` core set with its PyTorch signature
//! (names, defaults, keyword-only markers), where it can be spelled (method,
//! `torch.`, `F.`), its alias class from the aten schema, and the name of its
//! shape rule. The table itself is data (`table.rs`); the rules live in
//! `analysis/apply.rs`.

pub mod saved;
pub mod shape;
pub mod table;

use std::sync::OnceLock;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ParamType {
    Tensor,
    OptTensor,
    TensorOrNumber,
    OptTensorOrNumber,
    Number,
    OptNumber,
    Int,
    OptInt,
    IntList,
    OptIntList,
    Dims,
    OptDims,
    Bool,
    OptFloat,
    OptDtype,
    OptMemoryFormat,
    TensorList,
    OptStr,
    Any,
}

#[derive(Clone, Debug, PartialEq)]
pub enum DefaultValue {
    None,
    Int(i64),
    Float(f64),
    Bool(bool),
    /// A word: a string value or a memory format (`contiguous_format`).
    Word(String),
}

#[derive(Clone, Debug)]
pub struct Param {
    pub name: &'static str,
    pub ty: ParamType,
    pub default: Option<DefaultValue>,
    pub keyword_only: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OpClass {
    View,
    MultiView,
    ViewOrCopy,
    InplaceData,
    InplaceMeta,
    Storage,
    Autograd,
    Creation,
    Functional,
}

#[derive(Clone, Debug)]
pub struct OpDef {
    /// The aten name (the first spelling).
    pub name: &'static str,
    pub spellings: Vec<&'static str>,
    pub method: bool,
    pub torch_fn: bool,
    pub functional_fn: bool,
    /// `torch.ops.inductor.*` only.
    pub inductor: bool,
    pub params: Vec<Param>,
    pub rule: &'static str,
    pub class: OpClass,
    /// A derived in-place variant `NAME_` exists.
    pub has_inplace: bool,
    /// This entry is the derived in-place variant of a functional op.
    pub derived_inplace: bool,
    /// PyTorch has overloads this one signature stands for, which refuse
    /// some of the calls it binds (`interp::overload_check`).
    pub overloaded: bool,
    /// A parameter is a `Scalar` in every overload (`N` in the table, or
    /// full's fill value): a tensor there is read with `.item()`
    /// (`analysis::apply::tensor_scalars`).
    pub scalar_params: bool,
    /// The op checks arguments that are not tensors before it runs
    /// (`analysis::apply::argument_checks`; index_put's list in the
    /// binding, `analysis::interp::binding_index_list`).
    pub checks_arguments: bool,
    /// PyTorch's autograd names this op's node otherwise than its own name
    /// and `Backward0` (`RENAMED_NODES`).
    pub renames_node: bool,
}

/// The ops (aten names, without a trailing `_`) whose autograd node PyTorch
/// names otherwise than `NameBackward0` for some arguments:
/// `analysis::apply::overload_node_name` has an arm for each.
pub const RENAMED_NODES: &[&str] = &[
    "sub",
    "rsub",
    "div",
    "true_divide",
    "remainder",
    "fmod",
    "pow",
    "square",
    "sum",
    "mean",
    "prod",
    "max",
    "min",
    "clamp",
    "clamp_min",
    "clamp_max",
    "lerp",
    "masked_fill",
    "index_fill",
    "scatter",
    "round",
    "sort",
    "norm",
    "selu",
    "elu",
    "leaky_relu",
    "relu6",
    "tile",
    "outer",
    "matmul",
    "linear",
    "pad",
    "fill",
    "copy",
    "t",
    "transpose",
    "swapaxes",
    "unsqueeze",
    "squeeze",
    "as_strided",
    "random",
    "bernoulli",
];

impl OpDef {
    /// Is `p` a `Scalar` in every overload of the op?
    pub fn scalar_param(&self, p: &Param) -> bool {
        matches!(p.ty, ParamType::Number | ParamType::OptNumber)
            || (p.name == "fill_value" && matches!(self.name, "full" | "full_like" | "new_full"))
    }
}

pub struct OpTable {
    pub ops: Vec<OpDef>,
    by_name: rustc_hash::FxHashMap<&'static str, usize>,
}

fn parse_type(t: &str) -> ParamType {
    match t {
        "T" => ParamType::Tensor,
        "T?" => ParamType::OptTensor,
        "TS" => ParamType::TensorOrNumber,
        "TS?" => ParamType::OptTensorOrNumber,
        "N" => ParamType::Number,
        "N?" => ParamType::OptNumber,
        "I" => ParamType::Int,
        "I?" => ParamType::OptInt,
        "L" => ParamType::IntList,
        "L?" => ParamType::OptIntList,
        "DI" => ParamType::Dims,
        "DI?" => ParamType::OptDims,
        "B" => ParamType::Bool,
        "F?" => ParamType::OptFloat,
        "D?" => ParamType::OptDtype,
        "M?" => ParamType::OptMemoryFormat,
        "TL" => ParamType::TensorList,
        "S?" => ParamType::OptStr,
        _ => ParamType::Any,
    }
}

fn parse_default(text: &str) -> DefaultValue {
    match text {
        "None" => DefaultValue::None,
        "True" => DefaultValue::Bool(true),
        "False" => DefaultValue::Bool(false),
        _ => {
            if let Ok(i) = text.parse::<i64>() {
                DefaultValue::Int(i)
            } else if let Ok(f) = text.parse::<f64>() {
                DefaultValue::Float(f)
            } else {
                DefaultValue::Word(text.to_string())
            }
        }
    }
}

fn parse_params(text: &'static str) -> Vec<Param> {
    let mut params = Vec::new();
    let mut keyword_only = false;
    for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        if part == "*" {
            keyword_only = true;
            continue;
        }
        let mut words = part.split_whitespace();
        let ty = parse_type(words.next().unwrap_or("A"));
        let rest = words.next().unwrap_or("");
        let (name, default) = match rest.split_once('=') {
            Some((n, d)) => (n, Some(parse_default(d))),
            None => (rest, None),
        };
        params.push(Param {
            name,
            ty,
            default,
            keyword_only,
        });
    }
    params
}

fn class_of(text: &str) -> (OpClass, bool) {
    match text {
        "view" => (OpClass::View, false),
        "multi" => (OpClass::MultiView, false),
        "view_or_copy" => (OpClass::ViewOrCopy, false),
        "inplace" => (OpClass::InplaceData, false),
        "meta" => (OpClass::InplaceMeta, false),
        "storage" => (OpClass::Storage, false),
        "autograd" => (OpClass::Autograd, false),
        "creation" => (OpClass::Creation, false),
        "functional_" => (OpClass::Functional, true),
        _ => (OpClass::Functional, false),
    }
}

/// The derived in-place ops that are also `torch.` functions
/// (`torch.relu_(x)`; `torch.add_` is not one). `F.relu_` is the only
/// `torch.nn.functional` one.
const TORCH_INPLACE_FUNCTIONS: &[&str] = &[
    "abs_",
    "clamp_",
    "clamp_min_",
    "clamp_max_",
    "relu_",
    "sigmoid_",
    "tanh_",
    "exp_",
    "log_",
    "log1p_",
    "sqrt_",
    "rsqrt_",
    "neg_",
    "sin_",
    "cos_",
    "floor_",
    "ceil_",
    "round_",
    "trunc_",
    "reciprocal_",
    "square_",
];

impl OpTable {
    fn build() -> OpTable {
        let mut ops = Vec::new();
        for line in table::TABLE
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
        {
            let fields: Vec<&'static str> = line.split(';').map(str::trim).collect();
            if fields.len() != 5 {
                continue;
            }
            let spellings: Vec<&'static str> = fields[0].split_whitespace().collect();
            let (class, has_inplace) = class_of(fields[4]);
            let def = OpDef {
                name: spellings[0],
                spellings: spellings.clone(),
                method: fields[1].contains('m'),
                torch_fn: fields[1].contains('t'),
                functional_fn: fields[1].contains('F'),
                inductor: fields[1].contains('i'),
                params: parse_params(fields[2]),
                rule: fields[3],
                class,
                has_inplace,
                derived_inplace: false,
                overloaded: matches!(
                    spellings[0],
                    "sum" | "mean" | "prod" | "logsumexp" | "std" | "var"
                ),
                scalar_params: false,
                checks_arguments: matches!(
                    spellings[0],
                    "gelu" | "div" | "divide" | "hardtanh" | "index_put" | "index_put_"
                ),
                renames_node: RENAMED_NODES.contains(&spellings[0].trim_end_matches('_')),
            };
            let scalar_params = def.params.iter().any(|p| def.scalar_param(p));
            let def = OpDef {
                scalar_params,
                ..def
            };
            if has_inplace {
                let names: Vec<&'static str> = spellings
                    .iter()
                    .filter(|s| !s.starts_with("__"))
                    .map(|s| &*Box::leak(format!("{s}_").into_boxed_str()))
                    .collect();
                if !names.is_empty() {
                    let first = names[0];
                    ops.push(OpDef {
                        name: first,
                        spellings: names,
                        method: true,
                        torch_fn: TORCH_INPLACE_FUNCTIONS.contains(&first),
                        functional_fn: first == "relu_",
                        inductor: false,
                        class: OpClass::InplaceData,
                        has_inplace: false,
                        derived_inplace: true,
                        ..def.clone()
                    });
                }
            }
            ops.push(def);
        }
        let mut by_name = rustc_hash::FxHashMap::default();
        for (i, op) in ops.iter().enumerate() {
            for s in &op.spellings {
                by_name.entry(*s).or_insert(i);
            }
        }
        OpTable { ops, by_name }
    }

    pub fn get() -> &'static OpTable {
        static TABLE: OnceLock<OpTable> = OnceLock::new();
        TABLE.get_or_init(OpTable::build)
    }

    pub fn lookup(&self, name: &str) -> Option<&OpDef> {
        self.by_name.get(name).map(|&i| &self.ops[i])
    }

    /// `NAME_`, the in-place spelling of `name`, as static text: the table's
    /// own when it has the spelling, else made once per process (the names
    /// come from the table, so there are few).
    pub fn inplace_name(&self, name: &'static str) -> &'static str {
        if name.ends_with('_') {
            return name;
        }
        let wanted = format!("{name}_");
        if let Some((&spelling, _)) = self.by_name.get_key_value(wanted.as_str()) {
            return spelling;
        }
        static MADE: std::sync::Mutex<Vec<&'static str>> = std::sync::Mutex::new(Vec::new());
        let mut made = MADE.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some(&known) = made.iter().find(|m| **m == wanted) {
            return known;
        }
        let leaked: &'static str = Box::leak(wanted.into_boxed_str());
        made.push(leaked);
        leaked
    }

    /// Every spelling with its op.
    pub fn spellings(&self) -> impl Iterator<Item = (&'static str, &OpDef)> + '_ {
        self.by_name.iter().map(|(&s, &i)| (s, &self.ops[i]))
    }

    /// All spellings usable in a namespace (for "did you mean").
    pub fn names<'a>(
        &'a self,
        pred: impl Fn(&OpDef) -> bool + 'a,
    ) -> impl Iterator<Item = &'static str> + 'a {
        self.ops
            .iter()
            .filter(move |o| pred(o))
            .flat_map(|o| o.spellings.iter().copied())
    }
}

/// The closest of `candidates` to `name` (edit distance), for "did you mean".
pub fn did_you_mean<'a>(name: &str, candidates: impl Iterator<Item = &'a str>) -> Option<&'a str> {
    let mut best: Option<(usize, &str)> = None;
    for c in candidates {
        let d = edit_distance(name, c);
        let limit = (name.len().max(c.len()) / 3).max(1);
        if d <= limit && best.is_none_or(|(bd, _)| d < bd) {
            best = Some((d, c));
        }
    }
    best.map(|(_, c)| c)
}

fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for i in 1..=a.len() {
        let mut cur = vec![i; b.len() + 1];
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            cur[j] = (prev[j] + 1).min(cur[j - 1] + 1).min(prev[j - 1] + cost);
        }
        prev = cur;
    }
    prev[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renamed_nodes_are_ops_of_the_table() {
        let table = OpTable::get();
        for name in RENAMED_NODES {
            let op = table
                .lookup(name)
                .or_else(|| table.lookup(&format!("{name}_")))
                .unwrap_or_else(|| panic!("{name} is not in the op table"));
            assert!(op.renames_node, "{name}");
        }
        assert!(table.lookup("clip").is_some_and(|op| op.renames_node));
        assert!(!table.lookup("exp").is_some_and(|op| op.renames_node));
    }
}
