//! The front end: source text -> tokens -> spanned AST. No stage here prints.

pub mod ast;
pub mod dump;
pub mod lexer;
pub mod parser;
pub mod resolve;
pub mod source;

pub use source::{SourceFile, Span};
