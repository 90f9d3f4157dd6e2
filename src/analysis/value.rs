//! Runtime values of the interpreter: Python's objects as far as `.tp`
//! programs can make them.

use super::domain::{DType, MemoryFormat, TensorId};
use crate::sym::SymInt;
use std::cell::RefCell;
use std::rc::Rc;

/// A grad-mode / autocast context manager, as `with` sees it.
#[derive(Clone, Debug, PartialEq)]
pub enum Context {
    NoGrad,
    EnableGrad,
    /// `torch.set_grad_enabled(b)` already switched the mode when it was
    /// called; leaving the block restores `previous`.
    SetGradEnabled {
        previous: bool,
    },
    InferenceMode(bool),
    Autocast {
        device: String,
        enabled: bool,
        /// `dtype=`: set on entering, restored on leaving.
        dtype: Option<super::domain::DType>,
    },
}

#[derive(Clone, Debug)]
pub enum Value {
    None,
    Bool(bool),
    Int(SymInt),
    Float(f64),
    Str(Rc<str>),
    Ellipsis,
    Tensor(TensorId),
    Tuple(Rc<Vec<Value>>),
    List(Rc<RefCell<Vec<Value>>>),
    /// A slice object made by `a:b:c` inside a subscript (boxed, as are the
    /// other rare big variants, so that a `Value` is 24 bytes: environments
    /// hold one per name).
    Slice(Box<[Option<SymInt>; 3]>),
    Dtype(DType),
    MemoryFormat(MemoryFormat),
    Device(Rc<str>),
    /// A namespace: `torch`, `torch.nn.functional`, `torch.ops.aten`, …
    Module(Rc<str>),
    /// A Python builtin (`len`, `range`, …) or a prelude function.
    Builtin(&'static str),
    /// A user function of the file (helper or entry).
    Function(Rc<str>),
    /// An op reached as a function (`torch.add`, `F.relu`, `torch.ops.aten.add.Tensor`).
    Op {
        name: Rc<str>,
        /// Reached as `torch.ops.aten.NAME` (`.default`/`.Tensor` follow).
        aten: bool,
    },
    /// `obj.method` not yet called.
    Method(Box<Method>),
    Context(Box<Context>),
    /// `torch.Tensor` (for isinstance).
    TensorType,
}

/// `obj.method`, not yet called.
/// The positional arguments of a call: most calls have few, and they stay
/// in place (no allocation per call).
pub type Values = smallvec::SmallVec<[Value; 4]>;

#[derive(Clone, Debug)]
pub struct Method {
    pub receiver: Value,
    pub name: Rc<str>,
}

impl Value {
    /// `receiver.name`, a method not yet called.
    pub fn method(receiver: Value, name: &str) -> Value {
        Value::Method(Box::new(Method {
            receiver,
            name: Rc::from(name),
        }))
    }

    pub fn int(v: i64) -> Value {
        Value::Int(SymInt::int(v))
    }

    pub fn tuple(items: Vec<Value>) -> Value {
        Value::Tuple(Rc::new(items))
    }

    pub fn list(items: Vec<Value>) -> Value {
        Value::List(Rc::new(RefCell::new(items)))
    }

    /// Python's type name, for messages.
    pub fn type_name(&self) -> &'static str {
        match self {
            Value::None => "None",
            Value::Bool(_) => "bool",
            Value::Int(_) => "int",
            Value::Float(_) => "float",
            Value::Str(_) => "str",
            Value::Ellipsis => "ellipsis",
            Value::Tensor(_) => "Tensor",
            Value::Tuple(_) => "tuple",
            Value::List(_) => "list",
            Value::Slice(..) => "slice",
            Value::Dtype(_) => "torch.dtype",
            Value::MemoryFormat(_) => "torch.memory_format",
            Value::Device(_) => "torch.device",
            Value::Module(_) => "module",
            Value::Builtin(_) | Value::Function(_) | Value::Op { .. } => "function",
            Value::Method(_) => "method",
            Value::Context(_) => "context manager",
            Value::TensorType => "type",
        }
    }

    /// The items of a tuple or list (None for anything else).
    pub fn sequence(&self) -> Option<Vec<Value>> {
        match self {
            Value::Tuple(items) => Some(items.as_ref().clone()),
            Value::List(items) => Some(items.borrow().clone()),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    /// Environments hold a `Value` per name: keep it small.
    #[test]
    fn value_is_24_bytes() {
        assert_eq!(std::mem::size_of::<super::Value>(), 24);
    }
}
