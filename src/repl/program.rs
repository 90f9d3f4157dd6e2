//! The session as a program: the REPL's accepted inputs put together as the
//! source of one `.tp` module, and the way back from a span of that module
//! to the input it came from.
//!
//! The session is a live function body. Its source is rebuilt from the
//! pieces of input text that made it (each piece remembers its source,
//! `<repl:N>` or a loaded file, and its span there):
//!
//! ```text
//! def helper(a):            <- each defined function, verbatim
//!     return a * 2
//! def __session__(x: Tensor(4, 4)):   <- the declared inputs, verbatim
//!     v = x.view(16)        <- each accepted statement, indented
//!     _ = v.sum()           <- an expression statement binds its value to `_`
//!     pass
//! ```
//!
//! A table of segments (one per copied line) maps every byte of the module
//! that came from an input back to that input, so that diagnostics render
//! against `<repl:N>` and descriptions say where a value was made. Nothing
//! here runs the analysis or prints.

use crate::syntax::{SourceFile, Span};
use std::ops::Range;
use std::rc::Rc;

/// The name of the synthetic function that holds the session (users cannot
/// define a function with this name).
pub const SESSION_FUNCTION: &str = "__session__";

/// The name the reports give the session.
pub const SESSION_DISPLAY_NAME: &str = "session";

/// The name of the session's module source (for spans that come from no
/// input, such as the synthetic header).
pub const SESSION_SOURCE_NAME: &str = "<session>";

/// A piece of some input's text: its source and the span inside it.
#[derive(Clone, Debug)]
pub struct Piece {
    pub source: Rc<SourceFile>,
    pub span: Span,
}

impl Piece {
    pub fn new(source: &Rc<SourceFile>, span: Span) -> Piece {
        Piece {
            source: Rc::clone(source),
            span,
        }
    }

    /// The text of the piece.
    pub fn text(&self) -> &str {
        self.source.snippet(self.span)
    }

    /// The first line of the piece, for labels (`v.mul_(2)`).
    pub fn first_line(&self) -> &str {
        self.text().lines().next().unwrap_or("").trim_end()
    }
}

/// A line of the module copied from a source.
#[derive(Clone, Debug)]
struct Segment {
    /// Byte range in the module.
    start: usize,
    end: usize,
    source: Rc<SourceFile>,
    /// Byte offset in the source of the segment's first byte.
    local: usize,
}

/// The session's module source, with the map back to the inputs.
#[derive(Clone, Debug)]
pub struct Program {
    /// The whole module, named `<session>`.
    pub file: SourceFile,
    segments: Vec<Segment>,
    /// Where the newest input's statements lie in the module.
    pub fresh: Range<usize>,
    /// Where spans that come from no input are shown (the newest input).
    fallback: Option<Piece>,
}

/// One statement of the session body.
#[derive(Clone, Debug)]
pub struct BodyStatement {
    pub piece: Piece,
    /// An expression statement: `_ = EXPR`, so that its value can be shown.
    pub binds_value: bool,
}

/// Puts a program together, piece by piece.
#[derive(Default)]
pub struct Builder {
    text: String,
    segments: Vec<Segment>,
}

impl Builder {
    /// Text of tpi's own (the header, indentation).
    pub fn synthetic(&mut self, text: &str) {
        self.text.push_str(text);
    }

    /// A piece of input, copied; every line after the first is prefixed
    /// with `indent` (the first line's indentation is the caller's).
    pub fn piece(&mut self, piece: &Piece, indent: &str) {
        let mut local = piece.span.start as usize;
        for (i, line) in piece.text().split_inclusive('\n').enumerate() {
            if i > 0 {
                self.text.push_str(indent);
            }
            let start = self.text.len();
            self.text.push_str(line);
            self.segments.push(Segment {
                start,
                end: self.text.len(),
                source: Rc::clone(&piece.source),
                local,
            });
            local += line.len();
        }
    }

    /// Where the next byte will go.
    pub fn position(&self) -> usize {
        self.text.len()
    }

    pub fn finish(self, fresh: Range<usize>, fallback: Option<Piece>) -> Program {
        Program {
            file: SourceFile::new(SESSION_SOURCE_NAME, self.text),
            segments: self.segments,
            fresh,
            fallback,
        }
    }
}

/// How many bytes of tpi's own text a span may start in and still be shown
/// at the input that follows (`_ = ` before an expression statement).
const SNAP: usize = 4;

impl Program {
    /// The segment holding byte `offset`, if it came from an input.
    fn segment_at(&self, offset: usize) -> Option<usize> {
        let i = self.segments.partition_point(|s| s.start <= offset);
        let candidate = i.checked_sub(1)?;
        let segment = &self.segments[candidate];
        (offset < segment.end || (offset == segment.end && offset == segment.start))
            .then_some(candidate)
    }

    /// Is `span` (of the module) part of the newest input?
    pub fn is_fresh(&self, span: Span) -> bool {
        let start = span.start as usize;
        self.fresh.start <= start && start < self.fresh.end.max(self.fresh.start + 1)
    }

    /// The source a span of the module lies in, and the span there. Spans
    /// that come from no input show at the newest input, or else in the
    /// module itself.
    pub fn locate(&self, span: Span) -> (&SourceFile, Span) {
        let start = span.start as usize;
        let end = (span.end as usize).max(start);
        let first = self.segment_at(start).or_else(|| {
            // A span starting in a short run of tpi's text (`_ = `, an
            // indentation) shows from the input text that follows.
            let next = self.segments.partition_point(|s| s.start <= start);
            let segment = self.segments.get(next)?;
            (segment.start - start <= SNAP && segment.start < end.max(start + 1)).then_some(next)
        });
        let Some(first) = first else {
            return match &self.fallback {
                Some(piece) => (&piece.source, piece.span),
                None => (&self.file, span),
            };
        };
        let segment = &self.segments[first];
        let local_start = segment.local + start.max(segment.start) - segment.start;
        // The end: the last segment that starts before it, when it comes
        // from the same source; else the end of the first segment.
        let last = self
            .segments
            .partition_point(|s| s.start < end)
            .saturating_sub(1)
            .max(first);
        let end_segment = &self.segments[last];
        let local_end = if Rc::ptr_eq(&end_segment.source, &segment.source)
            && end_segment.local >= segment.local
        {
            end_segment.local + end.min(end_segment.end).saturating_sub(end_segment.start)
        } else {
            segment.local + (segment.end - segment.start)
        };
        (
            &segment.source,
            Span::new(local_start, local_end.max(local_start)),
        )
    }

    /// Where a span is, for a person: `<repl:3>` (with `:line` when the
    /// input has several lines), or `file.tp:12`.
    pub fn place(&self, span: Span) -> String {
        let (file, span) = self.locate(span);
        let (line, _) = file.line_col(span.start);
        if file.name.starts_with("<repl:") && !file.text.trim_end().contains('\n') {
            file.name.clone()
        } else {
            format!("{}:{}", file.name, line)
        }
    }

    /// Rewrites every `<session>:LINE:COL` of a text (the places that the
    /// reports of `report::text` print for the session's program) as the
    /// place in the input it came from.
    pub fn relocate(&self, text: &str) -> String {
        let needle = format!("{SESSION_SOURCE_NAME}:");
        let mut out = String::with_capacity(text.len());
        let mut rest = text;
        while let Some(at) = rest.find(&needle) {
            out.push_str(&rest[..at]);
            let after = &rest[at + needle.len()..];
            match line_col_prefix(after)
                .and_then(|(line, col, used)| Some((self.offset_of(line, col)?, used)))
            {
                Some((offset, used)) => {
                    out.push_str(&self.place(Span::new(offset, offset)));
                    rest = &after[used..];
                }
                None => {
                    out.push_str(&needle);
                    rest = after;
                }
            }
        }
        out.push_str(rest);
        out
    }

    /// The byte offset of a 1-based line and column (in characters).
    fn offset_of(&self, line: usize, col: usize) -> Option<usize> {
        let text = &self.file.text;
        let start = if line <= 1 {
            0
        } else {
            text.match_indices('\n').nth(line - 2)?.0 + 1
        };
        let rest = text.get(start..)?;
        let within = rest
            .char_indices()
            .nth(col.saturating_sub(1))
            .map_or(rest.len(), |(i, _)| i);
        Some(start + within)
    }

    /// The source text of a span, on one line (for messages).
    pub fn snippet(&self, span: Span) -> String {
        let (file, span) = self.locate(span);
        let text = file.snippet(span);
        let mut words = text.split_whitespace().collect::<Vec<_>>().join(" ");
        if words.chars().count() > 40 {
            words = words.chars().take(37).collect::<String>() + "...";
        }
        words
    }
}

/// `LINE:COL` (or `LINE`) at the start of a text: the numbers and how
/// many bytes they take.
fn line_col_prefix(text: &str) -> Option<(usize, usize, usize)> {
    let digits = |s: &str| s.bytes().take_while(u8::is_ascii_digit).count();
    let n = digits(text);
    let line = text.get(..n)?.parse().ok()?;
    let Some(after) = text[n..].strip_prefix(':') else {
        return Some((line, 1, n));
    };
    let m = digits(after);
    match after.get(..m).and_then(|c| c.parse().ok()) {
        Some(col) => Some((line, col, n + 1 + m)),
        None => Some((line, 1, n)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn source(name: &str, text: &str) -> Rc<SourceFile> {
        Rc::new(SourceFile::new(name, text))
    }

    #[test]
    fn spans_map_back_to_their_input() {
        let one = source("<repl:1>", "x: Tensor(4)");
        let two = source("<repl:2>", "with torch.no_grad():\n    x.add_(1)");
        let mut b = Builder::default();
        b.synthetic("def f(");
        b.piece(&Piece::new(&one, Span::new(0, 12)), "");
        b.synthetic("):\n    ");
        let at = b.position();
        b.piece(&Piece::new(&two, Span::new(0, two.text.len())), "    ");
        b.synthetic("\n    pass\n");
        let program = b.finish(at..at + 10, None);
        assert_eq!(
            program.file.text,
            "def f(x: Tensor(4)):\n    with torch.no_grad():\n        x.add_(1)\n    pass\n"
        );
        let find = |needle: &str| {
            let start = program.file.text.find(needle).unwrap();
            Span::new(start, start + needle.len())
        };
        let (file, span) = program.locate(find("x.add_(1)"));
        assert_eq!(file.name, "<repl:2>");
        assert_eq!(file.snippet(span), "x.add_(1)");
        let (file, span) = program.locate(find("Tensor(4)"));
        assert_eq!(
            (file.name.as_str(), file.snippet(span)),
            ("<repl:1>", "Tensor(4)")
        );
        // A span over a whole multi-line statement stays in its input.
        let (file, span) = program.locate(find("with torch.no_grad():\n        x.add_(1)"));
        assert_eq!(file.snippet(span), two.text);
        assert_eq!(program.place(find("x.add_(1)")), "<repl:2>:2");
        assert_eq!(program.place(find("Tensor(4)")), "<repl:1>");
        let at = program.file.text.find("x.add_").unwrap();
        let (line, col) = program.file.line_col(at as u32);
        assert_eq!(
            program.relocate(&format!(
                "written at <session>:{line}:{col} `x.add_(1)`; <session>:x"
            )),
            "written at <repl:2>:2 `x.add_(1)`; <session>:x"
        );
        // The synthetic header has no input: it shows in the module itself.
        let (file, _) = program.locate(Span::new(0, 3));
        assert_eq!(file.name, SESSION_SOURCE_NAME);
    }
}
