//! Our one diagnostic type. Every stage reports failures as `Diagnostic` values;
//! rendering (ariadne) happens once, at the edge, in `render.rs`.

use crate::syntax::Span;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Severity {
    Error,
    Warning,
    Note,
}

impl Severity {
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Error => "error",
            Severity::Warning => "warning",
            Severity::Note => "note",
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct Label {
    pub span: Span,
    pub message: String,
}

/// A located message: severity, a stable code, the primary span with its label,
/// secondary labels (where operands came from, the unclosed bracket, …), notes,
/// and a help line saying what to do.
#[derive(Clone, Debug, PartialEq)]
pub struct Diagnostic {
    pub severity: Severity,
    /// The human-facing code (`syntax`, `unknown-name`, `view-stride`, …).
    /// Codes of OUTPUT.md are kept as they are in the JSON; tpi's own language
    /// codes become `other` there (see `json_code`).
    pub code: &'static str,
    pub message: String,
    pub primary: Label,
    pub secondary: Vec<Label>,
    pub notes: Vec<String>,
    pub help: Option<String>,
}

/// The error codes of OUTPUT.md: these appear verbatim in the JSON.
pub const OUTPUT_CODES: &[&str] = &[
    "inplace-leaf",
    "inplace-view-of-leaf",
    "inplace-multi-output-view",
    "inplace-custom-function-view",
    "inplace-view-other",
    "inference-tensor",
    "inplace-overlapping",
    "saved-tensor-modified",
    "view-stride",
    "invalid-shape",
    "inplace-broadcast",
    "broadcast",
    "expand",
    "dim-out-of-range",
    "index-out-of-range",
    "matmul-shape",
    "cat-shape",
    "dtype-cast",
    "permute",
    "split",
    "requires-grad-dtype",
    "autocast-mutation",
    "frozen-storage",
    "storage-mutation-out-of-graph",
    "no-grad-fn",
    "backward-twice",
    "other",
];

impl Diagnostic {
    pub fn error(code: &'static str, message: impl Into<String>, span: Span) -> Diagnostic {
        Diagnostic {
            severity: Severity::Error,
            code,
            message: message.into(),
            primary: Label {
                span,
                message: String::new(),
            },
            secondary: Vec::new(),
            notes: Vec::new(),
            help: None,
        }
    }

    pub fn warning(code: &'static str, message: impl Into<String>, span: Span) -> Diagnostic {
        Diagnostic {
            severity: Severity::Warning,
            ..Diagnostic::error(code, message, span)
        }
    }

    /// Sets the label text on the primary span.
    pub fn with_label(mut self, message: impl Into<String>) -> Diagnostic {
        self.primary.message = message.into();
        self
    }

    pub fn with_secondary(mut self, span: Span, message: impl Into<String>) -> Diagnostic {
        self.secondary.push(Label {
            span,
            message: message.into(),
        });
        self
    }

    pub fn with_note(mut self, note: impl Into<String>) -> Diagnostic {
        self.notes.push(note.into());
        self
    }

    pub fn with_help(mut self, help: impl Into<String>) -> Diagnostic {
        self.help = Some(help.into());
        self
    }

    pub fn is_error(&self) -> bool {
        self.severity == Severity::Error
    }

    /// The code as the canonical JSON writes it: one of OUTPUT.md's codes, or
    /// `other` for tpi's own language errors.
    pub fn json_code(&self) -> &'static str {
        if OUTPUT_CODES.contains(&self.code) {
            self.code
        } else {
            "other"
        }
    }
}
