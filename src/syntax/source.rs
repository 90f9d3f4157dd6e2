//! Source text and byte spans. Owns nothing but positions: every token, AST node,
//! IR op and diagnostic points into the source with a `Span` of byte offsets.

use std::fmt;

/// A half-open byte range `start..end` into one source text.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default, PartialOrd, Ord)]
pub struct Span {
    pub start: u32,
    pub end: u32,
}

impl Span {
    pub fn new(start: usize, end: usize) -> Span {
        Span {
            start: start.min(u32::MAX as usize) as u32,
            end: end.min(u32::MAX as usize) as u32,
        }
    }

    /// The smallest span covering both.
    pub fn to(self, other: Span) -> Span {
        Span {
            start: self.start.min(other.start),
            end: self.end.max(other.end),
        }
    }

    pub fn range(self) -> std::ops::Range<usize> {
        self.start as usize..self.end as usize
    }

    pub fn len(self) -> usize {
        (self.end - self.start) as usize
    }

    pub fn is_empty(self) -> bool {
        self.end <= self.start
    }
}

impl fmt::Debug for Span {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}..{}", self.start, self.end)
    }
}

/// One named source text (a file, `<stdin>`, or `<repl:N>`).
#[derive(Clone, Debug)]
pub struct SourceFile {
    pub name: String,
    pub text: String,
    /// Byte offsets of line starts, computed on first use.
    line_starts: std::sync::OnceLock<Vec<u32>>,
}

impl SourceFile {
    pub fn new(name: impl Into<String>, text: impl Into<String>) -> SourceFile {
        SourceFile {
            name: name.into(),
            text: text.into(),
            line_starts: std::sync::OnceLock::new(),
        }
    }

    fn line_starts(&self) -> &[u32] {
        self.line_starts.get_or_init(|| {
            // Lines end at `\n`, `\r\n` and a lone `\r`, as Python's (and
            // the lexer's) do.
            let bytes = self.text.as_bytes();
            std::iter::once(0)
                .chain(
                    memchr::memchr2_iter(b'\n', b'\r', bytes)
                        .filter(|&i| !(bytes[i] == b'\r' && bytes.get(i + 1) == Some(&b'\n')))
                        .map(|i| (i + 1).min(u32::MAX as usize) as u32),
                )
                .collect()
        })
    }

    /// 1-based line and column (in characters) of a byte offset.
    pub fn line_col(&self, offset: u32) -> (usize, usize) {
        let offset = (offset as usize).min(self.text.len());
        let (line, line_start) = self.line_start(offset);
        let col = String::from_utf8_lossy(&self.text.as_bytes()[line_start..offset])
            .chars()
            .count()
            + 1;
        (line + 1, col)
    }

    /// The line holding byte `offset` (lines end at `\n`, `\r\n` or `\r`): how many lines
    /// come before it, and the offset where it starts.
    pub fn line_start(&self, offset: usize) -> (usize, usize) {
        let offset = offset.min(self.text.len());
        let starts = self.line_starts();
        let line = starts.partition_point(|&s| s as usize <= offset).max(1);
        (line - 1, starts[line - 1] as usize)
    }

    /// The source text of a span (empty when the span is out of range).
    pub fn snippet(&self, span: Span) -> &str {
        self.text.get(span.range()).unwrap_or("")
    }
}
