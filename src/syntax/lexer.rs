//! The lexer: logos produces raw tokens, and a small layout layer on top of
//! it turns line structure into the `Indent`, `Dedent` and `Newline` tokens
//! the grammar sees, the way Python's tokenizer does (LANGUAGE.md, "Lexical
//! structure").
//!
//! The layout layer owns the indentation stack, the stack of open brackets
//! (inside brackets newlines and indentation are ignored) and a queue of
//! pending tokens. Blank and comment-only lines emit nothing; at the end of
//! the input it emits a `Newline` if the last line was unfinished, then one
//! `Dedent` per open block. It also enforces the nesting limits that keep
//! every later stage (which may recurse over the tree) safe.
//!
//! This module never panics on any `&str` and never decides wording: errors
//! are [`SyntaxError`] values that `parser.rs` turns into diagnostics.

use super::source::Span;
use logos::Logos;
use std::collections::VecDeque;

/// How many brackets may be open at once (CPython's tokenizer allows 200).
pub const MAX_BRACKET_DEPTH: usize = 200;
/// How many indented blocks may be open at once (CPython allows 100).
pub const MAX_INDENT_DEPTH: usize = 100;
/// How many operator and punctuation tokens may lead from a logical line's
/// start to any one point of it, not counting the elements before a comma
/// at each bracket level (siblings, which nest nothing in each other). Every
/// expression node takes at least one such token, so this bounds how deep a
/// tree the parser can build (even one it drops after a later error) and
/// keeps dropping and walking trees from overflowing the stack, while a
/// long list literal (`torch.tensor([[0, 1], [2, 3], ...])`) stays legal.
pub const MAX_LINE_OPERATORS: usize = 2_000;
/// How many `elif` branches one `if` may have (each nests one level).
pub const MAX_ELIF_BRANCHES: usize = 200;

/// A token as the grammar sees it.
#[derive(Clone, Debug, PartialEq)]
pub enum Tok<'a> {
    /// The end of a logical line.
    Newline,
    /// A line indented more than the block it is in: opens a block.
    Indent,
    /// A line indented less: closes one block (several in a row for several).
    Dedent,
    Name(&'a str),
    Int(i64),
    Float(f64),
    /// A string literal, escapes already processed.
    Str(String),
    // Keywords.
    Def,
    Return,
    If,
    Elif,
    Else,
    For,
    In,
    With,
    As,
    Pass,
    Assert,
    Import,
    From,
    And,
    Or,
    Not,
    Is,
    True,
    False,
    None,
    // Operators and punctuation.
    Plus,
    Minus,
    Star,
    Slash,
    DoubleSlash,
    Percent,
    DoubleStar,
    At,
    Amp,
    Pipe,
    Caret,
    Tilde,
    LShift,
    RShift,
    Lt,
    Gt,
    Le,
    Ge,
    EqEq,
    NotEq,
    Assign,
    PlusAssign,
    MinusAssign,
    StarAssign,
    SlashAssign,
    DoubleSlashAssign,
    PercentAssign,
    DoubleStarAssign,
    AtAssign,
    AmpAssign,
    PipeAssign,
    CaretAssign,
    LShiftAssign,
    RShiftAssign,
    LParen,
    RParen,
    LBracket,
    RBracket,
    LBrace,
    RBrace,
    Comma,
    Colon,
    Dot,
    Semicolon,
    Arrow,
    Ellipsis,
    /// Statements parsed on another thread (`parser.rs`, parallel
    /// parsing): the lines of the region with this index, spliced in as
    /// they stand. Never produced by an ordinary `Layout`.
    Chunk(usize),
}

impl Tok<'_> {
    /// A short name for the token kind, used by `tpi dump tokens`.
    pub fn kind_name(&self) -> &'static str {
        match self {
            Tok::Newline => "newline",
            Tok::Indent => "indent",
            Tok::Dedent => "dedent",
            Tok::Name(_) => "name",
            Tok::Int(_) => "int",
            Tok::Float(_) => "float",
            Tok::Str(_) => "string",
            Tok::Def
            | Tok::Return
            | Tok::If
            | Tok::Elif
            | Tok::Else
            | Tok::For
            | Tok::In
            | Tok::With
            | Tok::As
            | Tok::Pass
            | Tok::Assert
            | Tok::Import
            | Tok::From
            | Tok::And
            | Tok::Or
            | Tok::Not
            | Tok::Is
            | Tok::True
            | Tok::False
            | Tok::None => "keyword",
            Tok::Chunk(_) => "chunk",
            _ => "punct",
        }
    }
}

/// A token with its byte span, in the shape lalrpop's external lexers use.
pub type Spanned<'a> = (usize, Tok<'a>, usize);

/// A lexical or syntactic error, before it is worded (`parser.rs` does that).
#[derive(Clone, Debug, PartialEq)]
pub struct SyntaxError {
    pub kind: SyntaxErrorKind,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub enum SyntaxErrorKind {
    /// A character that starts no token.
    UnknownChar(char),
    /// A `\` that is not the last character of its line.
    StrayBackslash,
    /// A quote with no closing quote on the same line.
    UnterminatedString,
    /// A `"""` with no closing `"""`.
    UnterminatedTripleString,
    /// A `\x`, `\u`, `\U` or `\N` escape that is malformed.
    BadEscape,
    /// An integer literal that does not fit in 64 bits.
    IntOverflow,
    /// `007`: Python rejects leading zeros in decimal literals.
    LeadingZeros,
    /// A float literal Rust cannot read (should not happen).
    BadFloat,
    /// A tab in the indentation of a line.
    TabIndent,
    /// A line indented less than its block but matching no open block.
    InconsistentDedent { width: usize, open: Box<[usize]> },
    /// More than `MAX_INDENT_DEPTH` nested blocks.
    TooManyIndents,
    /// More than `MAX_BRACKET_DEPTH` open brackets.
    NestingTooDeep,
    /// More than `MAX_LINE_OPERATORS` operators in one logical line.
    LineTooComplex,
    /// More than `MAX_ELIF_BRANCHES` `elif`s in one `if`.
    TooManyElifs,
    /// An expression whose tree is deeper than the parser's limit.
    ExpressionTooDeep,
    /// The input ends with a bracket still open (at `open`).
    Unclosed { open: char, open_span: Span },
    /// A closing bracket with no open one.
    UnmatchedClose(char),
    /// A closing bracket of the wrong kind.
    MismatchedClose {
        open: char,
        open_span: Span,
        close: char,
    },
    /// `while` or `lambda` (reserved: not supported).
    Unsupported(&'static str),
    /// `:=`.
    Walrus,
    /// Parallel parsing only (`Layout::with_regions`, `Layout::region`): a
    /// region is not whole lines of one block. The file is then parsed in
    /// one piece, so this error is never shown.
    OutsideRegion,
    /// Something the grammar accepts but the language does not: a bad
    /// assignment target, a keyword argument repeated, … The strings are
    /// the message, the label and an optional help.
    Invalid(Box<InvalidSyntax>),
}

/// The wording of an `Invalid` error (boxed: errors are rare, and a small
/// error type keeps every token the lexer returns small).
#[derive(Clone, Debug, PartialEq)]
pub struct InvalidSyntax {
    pub message: String,
    pub label: String,
    pub help: Option<String>,
}

impl SyntaxError {
    pub fn new(kind: SyntaxErrorKind, start: usize, end: usize) -> SyntaxError {
        SyntaxError {
            kind,
            span: Span::new(start, end),
        }
    }

    pub fn invalid(
        span: Span,
        message: impl Into<String>,
        label: impl Into<String>,
        help: Option<&str>,
    ) -> SyntaxError {
        SyntaxError {
            kind: SyntaxErrorKind::Invalid(Box::new(InvalidSyntax {
                message: message.into(),
                label: label.into(),
                help: help.map(str::to_string),
            })),
            span,
        }
    }
}

/// What logos reports when it cannot make a raw token.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum RawError {
    #[default]
    Unknown,
    UnterminatedString,
    UnterminatedTripleString,
}

/// Raw tokens: everything but layout. Payloads are read from the slice by
/// the layout layer, which keeps the logos automaton small and fast.
#[derive(Logos, Clone, Copy, Debug, PartialEq, Eq)]
#[logos(error = RawError)]
#[logos(skip r"[ \t\f]+")]
#[logos(skip r"#[^\r\n]*")]
#[logos(skip r"\\(\r\n|\n|\r)")]
enum Raw {
    #[regex(r"\r\n|\n|\r")]
    LineBreak,
    #[token("\u{FEFF}")]
    Bom,
    #[token("\\")]
    Backslash,
    #[regex("[A-Za-z_][A-Za-z0-9_]*")]
    Name,
    #[regex(r"[0-9](_?[0-9])*")]
    Decimal,
    #[regex(r"0[xX](_?[0-9a-fA-F])+")]
    Hex,
    #[regex(r"0[oO](_?[0-7])+")]
    Octal,
    #[regex(r"0[bB](_?[01])+")]
    Binary,
    #[regex(r"[0-9](_?[0-9])*\.([0-9](_?[0-9])*)?([eE][+-]?[0-9](_?[0-9])*)?")]
    #[regex(r"\.[0-9](_?[0-9])*([eE][+-]?[0-9](_?[0-9])*)?")]
    #[regex(r"[0-9](_?[0-9])*[eE][+-]?[0-9](_?[0-9])*")]
    Float,
    #[token("\"", |lex| lex_string(lex, b'"'))]
    #[token("'", |lex| lex_string(lex, b'\''))]
    Str,

    #[token("def")]
    Def,
    #[token("return")]
    Return,
    #[token("if")]
    If,
    #[token("elif")]
    Elif,
    #[token("else")]
    Else,
    #[token("for")]
    For,
    #[token("in")]
    In,
    #[token("while")]
    While,
    #[token("with")]
    With,
    #[token("as")]
    As,
    #[token("pass")]
    Pass,
    #[token("assert")]
    Assert,
    #[token("import")]
    Import,
    #[token("from")]
    From,
    #[token("and")]
    And,
    #[token("or")]
    Or,
    #[token("not")]
    Not,
    #[token("is")]
    Is,
    #[token("True")]
    True,
    #[token("False")]
    False,
    #[token("None")]
    None,
    #[token("lambda")]
    Lambda,

    #[token("+")]
    Plus,
    #[token("-")]
    Minus,
    #[token("*")]
    Star,
    #[token("/")]
    Slash,
    #[token("//")]
    DoubleSlash,
    #[token("%")]
    Percent,
    #[token("**")]
    DoubleStar,
    #[token("@")]
    At,
    #[token("&")]
    Amp,
    #[token("|")]
    Pipe,
    #[token("^")]
    Caret,
    #[token("~")]
    Tilde,
    #[token("<<")]
    LShift,
    #[token(">>")]
    RShift,
    #[token("<")]
    Lt,
    #[token(">")]
    Gt,
    #[token("<=")]
    Le,
    #[token(">=")]
    Ge,
    #[token("==")]
    EqEq,
    #[token("!=")]
    NotEq,
    #[token("=")]
    Assign,
    #[token("+=")]
    PlusAssign,
    #[token("-=")]
    MinusAssign,
    #[token("*=")]
    StarAssign,
    #[token("/=")]
    SlashAssign,
    #[token("//=")]
    DoubleSlashAssign,
    #[token("%=")]
    PercentAssign,
    #[token("**=")]
    DoubleStarAssign,
    #[token("@=")]
    AtAssign,
    #[token("&=")]
    AmpAssign,
    #[token("|=")]
    PipeAssign,
    #[token("^=")]
    CaretAssign,
    #[token("<<=")]
    LShiftAssign,
    #[token(">>=")]
    RShiftAssign,
    #[token("(")]
    LParen,
    #[token(")")]
    RParen,
    #[token("[")]
    LBracket,
    #[token("]")]
    RBracket,
    #[token("{")]
    LBrace,
    #[token("}")]
    RBrace,
    #[token(",")]
    Comma,
    #[token(":")]
    Colon,
    #[token(".")]
    Dot,
    #[token(";")]
    Semicolon,
    #[token("->")]
    Arrow,
    #[token("...")]
    Ellipsis,
    #[token(":=")]
    Walrus,
}

/// Scans a string literal after its opening quote (single or triple quoted).
/// Stops only at ASCII bytes, so every bump lands on a character boundary.
fn lex_string(lex: &mut logos::Lexer<Raw>, quote: u8) -> Result<(), RawError> {
    let rest = lex.remainder().as_bytes();
    if rest.len() >= 2 && rest[0] == quote && rest[1] == quote {
        // A triple quote: scan to the closing triple quote.
        let mut i = 2;
        while i < rest.len() {
            match rest[i] {
                b'\\' => i += 2,
                b if b == quote
                    && i + 2 < rest.len()
                    && rest[i + 1] == quote
                    && rest[i + 2] == quote =>
                {
                    lex.bump(i + 3);
                    return Ok(());
                }
                _ => i += 1,
            }
        }
        lex.bump(rest.len());
        return Err(RawError::UnterminatedTripleString);
    }
    let mut i = 0;
    while i < rest.len() {
        match rest[i] {
            b'\\' => {
                // A backslash escapes the next character; before a line
                // break it continues the string on the next line.
                if rest.get(i + 1) == Some(&b'\r') && rest.get(i + 2) == Some(&b'\n') {
                    i += 3;
                } else {
                    i += 2;
                }
            }
            b'\n' | b'\r' => {
                lex.bump(i);
                return Err(RawError::UnterminatedString);
            }
            b if b == quote => {
                lex.bump(i + 1);
                return Ok(());
            }
            _ => i += 1,
        }
    }
    lex.bump(rest.len());
    Err(RawError::UnterminatedString)
}

/// The layout layer: an iterator of `Result<Spanned, SyntaxError>` that
/// lalrpop consumes as its external lexer. After the first error it ends.
pub struct Layout<'a> {
    text: &'a str,
    raw: logos::Lexer<'a, Raw>,
    /// Indentation widths of the open blocks; the first is the top level.
    indents: Vec<usize>,
    /// Open brackets: the character and its span.
    brackets: Vec<(char, Span)>,
    pending: VecDeque<Spanned<'a>>,
    /// True once the current logical line has produced a token.
    line_has_tokens: bool,
    /// Byte offset where the current physical line starts.
    line_start: usize,
    done: bool,
    /// Operator tokens on the way to the current point of the logical line
    /// (the sum of `element_operators`).
    line_operators: usize,
    /// For the line and each open bracket, outermost first: the operator
    /// tokens of its current element (since its last comma).
    element_operators: Vec<usize>,
    /// The most operator tokens any logical line had so far.
    max_line_operators: usize,
    /// `elif` branches seen so far at each indentation level.
    elif_counts: Vec<usize>,
    /// The span of the first token of the current logical line.
    line_first: Option<Span>,
    /// The spans of the last two tokens produced, the most recent last, and
    /// of the last `Newline`: error messages look back ("expected an
    /// indented block after …").
    previous: Option<(usize, usize)>,
    current: Option<(usize, usize)>,
    last_newline: Option<Span>,
    /// Regions other threads parse (`Layout::with_regions`): each becomes a
    /// `Tok::Chunk`. `next_region` indexes the next one to reach and
    /// `region_at` is its start (`usize::MAX` when there is none), and 0
    /// from a `Chunk` until `resume_at` (no region starts at 0: one starts
    /// after a line break), so that one comparison per token covers both.
    regions: Vec<Region>,
    next_region: usize,
    region_at: usize,
    /// For the layout of one region (`Layout::region`): where it stops.
    region_stop: usize,
}

/// A region of a file that another thread lexes and parses: whole lines
/// of one block, from `start` (a line indented `width` columns) to the
/// first line indented less, or to `stop` (the start of the next region),
/// or to the end of the file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Region {
    pub start: usize,
    pub width: usize,
    pub stop: usize,
}

impl<'a> Layout<'a> {
    pub fn new(text: &'a str) -> Layout<'a> {
        Layout::starting_at(text, 0)
    }

    /// Lexes `text[start..]`, with spans that stay offsets into `text`.
    /// `start` must be the start of a line (used to re-parse one part of a
    /// file after an error).
    pub fn starting_at(text: &'a str, start: usize) -> Layout<'a> {
        let mut raw = Raw::lexer(text);
        let start = if text.is_char_boundary(start) && start <= text.len() {
            start
        } else {
            0
        };
        raw.bump(start);
        Layout {
            text,
            raw,
            indents: vec![0],
            brackets: Vec::new(),
            pending: VecDeque::new(),
            line_has_tokens: false,
            line_start: start,
            done: false,
            line_operators: 0,
            element_operators: vec![0],
            max_line_operators: 0,
            elif_counts: vec![0],
            line_first: None,
            previous: None,
            current: None,
            last_newline: None,
            regions: Vec::new(),
            next_region: 0,
            region_at: usize::MAX,
            region_stop: usize::MAX,
        }
    }

    /// Lexes `text`, except that each of `regions` (sorted, disjoint)
    /// becomes one `Tok::Chunk(index)`, as if it were one statement line of
    /// the block it is in; after it, the caller says where the region ended
    /// (`resume_at`). A region must start where this layout starts a
    /// logical line outside brackets; when one does not (it was inside a
    /// string or a bracket, or after a `\\`), lexing fails with an error,
    /// and the caller parses the file in one piece instead.
    pub fn with_regions(text: &'a str, regions: Vec<Region>) -> Layout<'a> {
        let mut layout = Layout::new(text);
        layout.region_at = regions.first().map_or(usize::MAX, |region| region.start);
        layout.regions = regions;
        layout
    }

    /// After a `Chunk`: goes on lexing at `end`, where its region ended
    /// (`region_end` of the region's own layout: the start of a line).
    pub fn resume_at(&mut self, end: usize) -> Result<(), SyntaxError> {
        let position = self.raw.span().end;
        if self.region_at != 0 || end < position || end > self.text.len() {
            return Err(SyntaxError::new(
                SyntaxErrorKind::OutsideRegion,
                position,
                position,
            ));
        }
        self.raw.bump(end - position);
        self.line_start = end;
        self.next_region += 1;
        self.region_at = self
            .regions
            .get(self.next_region)
            .map_or(usize::MAX, |next| next.start);
        if self.region_at == end {
            self.splice()?;
        }
        Ok(())
    }

    /// Lexes one region of `text` on its own (`with_regions`): its block's
    /// indentation is the base, and the region ends before the first line
    /// indented less, or at `region.stop`, or at the end of the text.
    pub fn region(text: &'a str, region: Region) -> Layout<'a> {
        let mut layout = Layout::starting_at(text, region.start);
        layout.indents = vec![region.width];
        layout.region_stop = region.stop;
        layout
    }

    /// Where a region's layout stopped (the start of a line, or the end of
    /// the text), once it has produced its last token.
    pub fn region_end(&self) -> usize {
        self.line_start.min(self.text.len())
    }

    /// The brackets open at this point of the input, outermost first.
    pub fn open_brackets(&self) -> &[(char, Span)] {
        &self.brackets
    }

    /// The most operator and punctuation tokens (names, literals, commas and
    /// closing brackets aside) that one logical line has had so far. Every
    /// expression node but the leaves takes one such token of its line, so
    /// no expression is deeper than this plus two.
    pub fn max_line_operators(&self) -> usize {
        self.max_line_operators
    }

    /// The first token of the current logical line (the last line begun).
    pub fn line_first(&self) -> Option<Span> {
        self.line_first
    }

    /// The token before the last one produced.
    pub fn previous_token(&self) -> Option<Span> {
        self.previous.map(|(start, end)| Span::new(start, end))
    }

    /// The last `Newline` produced.
    pub fn last_newline(&self) -> Option<Span> {
        self.last_newline
    }

    fn fail(&mut self, error: SyntaxError) -> Option<Result<Spanned<'a>, SyntaxError>> {
        self.done = true;
        self.pending.clear();
        Some(Err(error))
    }

    /// At the end of the input: close the last line and every open block.
    /// (`end` is the end of the text, or where a region's layout stops.)
    fn finish(&mut self, end: usize) -> Result<(), SyntaxError> {
        self.done = true;
        self.line_start = end;
        if let Some(&(open, open_span)) = self.brackets.last() {
            return Err(SyntaxError::new(
                SyntaxErrorKind::Unclosed { open, open_span },
                end,
                end,
            ));
        }
        if self.line_has_tokens {
            self.pending.push_back((end, Tok::Newline, end));
            self.last_newline = Some(Span::new(end, end));
            self.line_has_tokens = false;
        }
        for _ in 1..self.indents.len() {
            self.pending.push_back((end, Tok::Dedent, end));
        }
        self.indents.truncate(1);
        Ok(())
    }

    /// The first token of a logical line starts at `token_start`: compare
    /// its indentation with the open blocks and queue `Indent`/`Dedent`s.
    fn indentation(&mut self, token_start: usize) -> Result<(), SyntaxError> {
        let (width, end) = indent_width(self.text.as_bytes(), self.line_start, token_start)
            .map_err(|tab| SyntaxError::new(SyntaxErrorKind::TabIndent, tab, tab + 1))?;
        let current = self.indents.last().copied().unwrap_or(0);
        if width > current {
            if self.indents.len() > MAX_INDENT_DEPTH {
                return Err(SyntaxError::new(
                    SyntaxErrorKind::TooManyIndents,
                    self.line_start,
                    end,
                ));
            }
            self.indents.push(width);
            self.pending.push_back((self.line_start, Tok::Indent, end));
        } else if width < current {
            // The open widths increase: a dedent must land on one of them.
            if !self.indents.contains(&width) {
                let open: Box<[usize]> = self.indents.clone().into_boxed_slice();
                return Err(SyntaxError::new(
                    SyntaxErrorKind::InconsistentDedent { width, open },
                    self.line_start,
                    end.max(self.line_start),
                ));
            }
            while self.indents.last().is_some_and(|&w| w > width) {
                self.indents.pop();
                self.pending
                    .push_back((token_start, Tok::Dedent, token_start));
            }
        }
        Ok(())
    }

    fn produce(&mut self) -> Option<Result<Spanned<'a>, SyntaxError>> {
        if let Some(token) = self.pending.pop_front() {
            return Some(Ok(token));
        }
        if self.done {
            return None;
        }
        loop {
            let raw = self.raw.next();
            let range = self.raw.span();
            let (start, end) = (range.start, range.end);
            if start >= self.region_at {
                // The next region starts inside a token or a bracket, or
                // after a `\\`: it is not a line of its own here.
                return self.fail(SyntaxError::new(SyntaxErrorKind::OutsideRegion, start, end));
            }
            let raw = match raw {
                None => {
                    if let Err(error) = self.finish(self.text.len()) {
                        return self.fail(error);
                    }
                    return self.pending.pop_front().map(Ok);
                }
                Some(Err(error)) => {
                    let kind = match error {
                        RawError::UnterminatedString => SyntaxErrorKind::UnterminatedString,
                        RawError::UnterminatedTripleString => {
                            SyntaxErrorKind::UnterminatedTripleString
                        }
                        RawError::Unknown => {
                            let c = self.text[start..].chars().next().unwrap_or('\u{FFFD}');
                            let end = start + c.len_utf8();
                            return self.fail(SyntaxError::new(
                                SyntaxErrorKind::UnknownChar(c),
                                start,
                                end,
                            ));
                        }
                    };
                    return self.fail(SyntaxError::new(kind, start, end));
                }
                Some(Ok(raw)) => raw,
            };
            match raw {
                Raw::LineBreak => {
                    if !self.brackets.is_empty() {
                        continue;
                    }
                    self.line_start = end;
                    let newline = self.line_has_tokens.then(|| {
                        self.line_has_tokens = false;
                        self.line_operators = 0;
                        self.element_operators.clear();
                        self.element_operators.push(0);
                        self.last_newline = Some(Span::new(start, end));
                        (start, Tok::Newline, end)
                    });
                    if end == self.region_at {
                        if let Err(error) = self.splice() {
                            return self.fail(error);
                        }
                        if let Some(newline) = newline {
                            self.pending.push_front(newline);
                        }
                        return self.pending.pop_front().map(Ok);
                    }
                    if end == self.region_stop {
                        return self.end_region(newline);
                    }
                    match newline {
                        Some(newline) => return Some(Ok(newline)),
                        None => continue,
                    }
                }
                Raw::Bom if start == 0 => {
                    self.line_start = end;
                    continue;
                }
                _ => {}
            }
            let token = match self.convert(raw, self.raw.slice(), start, end) {
                Ok(token) => token,
                Err(error) => return self.fail(error),
            };
            if !self.line_has_tokens {
                if self.indents[0] > 0 && self.line_width(start) < self.indents[0] {
                    // A region's layout: the block it is part of ends here.
                    return self.end_region(None);
                }
                self.line_has_tokens = true;
                self.line_first = Some(Span::new(start, end));
                if let Err(error) = self.indentation(start) {
                    return self.fail(error);
                }
                if let Err(error) = self.count_elifs(&token, start, end) {
                    return self.fail(error);
                }
            }
            let counts = match token {
                Tok::Name(_) | Tok::Int(_) | Tok::Float(_) | Tok::Str(_) => false,
                // A new element: the previous one's operators are siblings'.
                Tok::Comma => {
                    if let Some(last) = self.element_operators.last_mut() {
                        self.line_operators -= std::mem::take(last);
                    }
                    false
                }
                // The bracket's elements are done: it is one operand now.
                Tok::RParen | Tok::RBracket | Tok::RBrace => {
                    if self.element_operators.len() > 1 {
                        self.line_operators -= self.element_operators.pop().unwrap_or(0);
                    }
                    false
                }
                _ => true,
            };
            if counts {
                if let Some(last) = self.element_operators.last_mut() {
                    *last += 1;
                }
                if matches!(token, Tok::LParen | Tok::LBracket | Tok::LBrace) {
                    self.element_operators.push(0);
                }
                self.line_operators += 1;
                self.max_line_operators = self.max_line_operators.max(self.line_operators);
                if self.line_operators > MAX_LINE_OPERATORS {
                    return self.fail(SyntaxError::new(
                        SyntaxErrorKind::LineTooComplex,
                        start,
                        end,
                    ));
                }
            }
            if self.pending.is_empty() {
                return Some(Ok((start, token, end)));
            }
            self.pending.push_back((start, token, end));
            return self.pending.pop_front().map(Ok);
        }
    }

    /// At the start of the next region's first line: queues the layout
    /// tokens its indentation calls for and the `Chunk` that stands for it;
    /// lexing goes on at `resume_at`.
    fn splice(&mut self) -> Result<(), SyntaxError> {
        let index = self.next_region;
        let region = self.regions[index];
        let bytes = self.text.as_bytes();
        // The region's first line must have a token (not be blank or a
        // comment), indented as its layout will take it.
        let (width, first) =
            indent_width(bytes, region.start, bytes.len()).unwrap_or((usize::MAX, region.start));
        if width != region.width || matches!(bytes.get(first), None | Some(b'\r' | b'\n' | b'#')) {
            return Err(SyntaxError::new(
                SyntaxErrorKind::OutsideRegion,
                first,
                first,
            ));
        }
        self.indentation(first)?;
        self.count_elifs(&Tok::Chunk(index), first, first)?;
        self.pending.push_back((first, Tok::Chunk(index), first));
        self.region_at = 0;
        Ok(())
    }

    /// The end of a region's layout (`Layout::region`): the last line's
    /// `Newline` if it has not had one, and the `Dedent`s back to its base.
    fn end_region(
        &mut self,
        newline: Option<Spanned<'a>>,
    ) -> Option<Result<Spanned<'a>, SyntaxError>> {
        if let Some(newline) = newline {
            self.pending.push_back(newline);
        }
        if let Err(error) = self.finish(self.line_start) {
            return self.fail(error);
        }
        self.pending.pop_front().map(Ok)
    }

    /// The indentation width of the line of the token at `token_start`
    /// (as `indentation` counts it; a tab makes it unknown: `usize::MAX`).
    fn line_width(&self, token_start: usize) -> usize {
        indent_width(self.text.as_bytes(), self.line_start, token_start)
            .map_or(usize::MAX, |(width, _)| width)
    }

    /// Called on the first token of each logical line: each `elif` nests
    /// its `if` one level deeper in the tree, so their number is bounded.
    fn count_elifs(
        &mut self,
        token: &Tok<'a>,
        start: usize,
        end: usize,
    ) -> Result<(), SyntaxError> {
        let level = self.indents.len().saturating_sub(1);
        self.elif_counts.resize(level + 1, 0);
        match token {
            Tok::Elif => {
                self.elif_counts[level] += 1;
                if self.elif_counts[level] > MAX_ELIF_BRANCHES {
                    return Err(SyntaxError::new(SyntaxErrorKind::TooManyElifs, start, end));
                }
            }
            Tok::Else => {}
            _ => self.elif_counts[level] = 0,
        }
        Ok(())
    }

    fn open(&mut self, c: char, start: usize, end: usize) -> Result<(), SyntaxError> {
        if self.brackets.len() >= MAX_BRACKET_DEPTH {
            return Err(SyntaxError::new(
                SyntaxErrorKind::NestingTooDeep,
                start,
                end,
            ));
        }
        self.brackets.push((c, Span::new(start, end)));
        Ok(())
    }

    fn close(&mut self, close: char, start: usize, end: usize) -> Result<(), SyntaxError> {
        let expected_open = match close {
            ')' => '(',
            ']' => '[',
            _ => '{',
        };
        match self.brackets.pop() {
            None => Err(SyntaxError::new(
                SyntaxErrorKind::UnmatchedClose(close),
                start,
                end,
            )),
            Some((open, open_span)) if open != expected_open => Err(SyntaxError::new(
                SyntaxErrorKind::MismatchedClose {
                    open,
                    open_span,
                    close,
                },
                start,
                end,
            )),
            Some(_) => Ok(()),
        }
    }

    /// The token for a raw token; `slice` is its text (logos's, which it
    /// takes without re-checking character boundaries).
    fn convert(
        &mut self,
        raw: Raw,
        slice: &'a str,
        start: usize,
        end: usize,
    ) -> Result<Tok<'a>, SyntaxError> {
        Ok(match raw {
            Raw::LineBreak => Tok::Newline,
            Raw::Bom => {
                return Err(SyntaxError::new(
                    SyntaxErrorKind::UnknownChar('\u{FEFF}'),
                    start,
                    end,
                ))
            }
            Raw::Backslash => {
                return Err(SyntaxError::new(
                    SyntaxErrorKind::StrayBackslash,
                    start,
                    end,
                ))
            }
            Raw::Name => Tok::Name(slice),
            Raw::Decimal => Tok::Int(decimal(slice, start, end)?),
            Raw::Hex => Tok::Int(radix(slice.get(2..).unwrap_or(""), 16, start, end)?),
            Raw::Octal => Tok::Int(radix(slice.get(2..).unwrap_or(""), 8, start, end)?),
            Raw::Binary => Tok::Int(radix(slice.get(2..).unwrap_or(""), 2, start, end)?),
            Raw::Float => {
                let value = if slice.contains('_') {
                    slice.replace('_', "").parse::<f64>()
                } else {
                    slice.parse::<f64>()
                };
                match value {
                    Ok(v) => Tok::Float(v),
                    Err(_) => return Err(SyntaxError::new(SyntaxErrorKind::BadFloat, start, end)),
                }
            }
            Raw::Str => Tok::Str(unescape(slice, start)?),
            Raw::Def => Tok::Def,
            Raw::Return => Tok::Return,
            Raw::If => Tok::If,
            Raw::Elif => Tok::Elif,
            Raw::Else => Tok::Else,
            Raw::For => Tok::For,
            Raw::In => Tok::In,
            Raw::While => {
                return Err(SyntaxError::new(
                    SyntaxErrorKind::Unsupported("while"),
                    start,
                    end,
                ))
            }
            Raw::Lambda => {
                return Err(SyntaxError::new(
                    SyntaxErrorKind::Unsupported("lambda"),
                    start,
                    end,
                ))
            }
            Raw::Walrus => {
                return Err(SyntaxError::new(SyntaxErrorKind::Walrus, start, end));
            }
            Raw::With => Tok::With,
            Raw::As => Tok::As,
            Raw::Pass => Tok::Pass,
            Raw::Assert => Tok::Assert,
            Raw::Import => Tok::Import,
            Raw::From => Tok::From,
            Raw::And => Tok::And,
            Raw::Or => Tok::Or,
            Raw::Not => Tok::Not,
            Raw::Is => Tok::Is,
            Raw::True => Tok::True,
            Raw::False => Tok::False,
            Raw::None => Tok::None,
            Raw::Plus => Tok::Plus,
            Raw::Minus => Tok::Minus,
            Raw::Star => Tok::Star,
            Raw::Slash => Tok::Slash,
            Raw::DoubleSlash => Tok::DoubleSlash,
            Raw::Percent => Tok::Percent,
            Raw::DoubleStar => Tok::DoubleStar,
            Raw::At => Tok::At,
            Raw::Amp => Tok::Amp,
            Raw::Pipe => Tok::Pipe,
            Raw::Caret => Tok::Caret,
            Raw::Tilde => Tok::Tilde,
            Raw::LShift => Tok::LShift,
            Raw::RShift => Tok::RShift,
            Raw::Lt => Tok::Lt,
            Raw::Gt => Tok::Gt,
            Raw::Le => Tok::Le,
            Raw::Ge => Tok::Ge,
            Raw::EqEq => Tok::EqEq,
            Raw::NotEq => Tok::NotEq,
            Raw::Assign => Tok::Assign,
            Raw::PlusAssign => Tok::PlusAssign,
            Raw::MinusAssign => Tok::MinusAssign,
            Raw::StarAssign => Tok::StarAssign,
            Raw::SlashAssign => Tok::SlashAssign,
            Raw::DoubleSlashAssign => Tok::DoubleSlashAssign,
            Raw::PercentAssign => Tok::PercentAssign,
            Raw::DoubleStarAssign => Tok::DoubleStarAssign,
            Raw::AtAssign => Tok::AtAssign,
            Raw::AmpAssign => Tok::AmpAssign,
            Raw::PipeAssign => Tok::PipeAssign,
            Raw::CaretAssign => Tok::CaretAssign,
            Raw::LShiftAssign => Tok::LShiftAssign,
            Raw::RShiftAssign => Tok::RShiftAssign,
            Raw::LParen => {
                self.open('(', start, end)?;
                Tok::LParen
            }
            Raw::LBracket => {
                self.open('[', start, end)?;
                Tok::LBracket
            }
            Raw::LBrace => {
                self.open('{', start, end)?;
                Tok::LBrace
            }
            Raw::RParen => {
                self.close(')', start, end)?;
                Tok::RParen
            }
            Raw::RBracket => {
                self.close(']', start, end)?;
                Tok::RBracket
            }
            Raw::RBrace => {
                self.close('}', start, end)?;
                Tok::RBrace
            }
            Raw::Comma => Tok::Comma,
            Raw::Colon => Tok::Colon,
            Raw::Dot => Tok::Dot,
            Raw::Semicolon => Tok::Semicolon,
            Raw::Arrow => Tok::Arrow,
            Raw::Ellipsis => Tok::Ellipsis,
        })
    }
}

impl<'a> Iterator for Layout<'a> {
    type Item = Result<Spanned<'a>, SyntaxError>;

    fn next(&mut self) -> Option<Self::Item> {
        let item = self.produce();
        if let Some(Ok((start, _, end))) = &item {
            self.previous = self.current;
            self.current = Some((*start, *end));
        }
        item
    }
}

/// The indentation width of `bytes[from..to]`'s leading blanks, as Python
/// counts it (a form feed resets the column), and where they end; or the
/// offset of a tab among them.
pub(crate) fn indent_width(bytes: &[u8], from: usize, to: usize) -> Result<(usize, usize), usize> {
    let mut width = 0;
    let mut end = from;
    while end < to {
        match bytes[end] {
            b' ' => width += 1,
            b'\t' => return Err(end),
            b'\x0c' => width = 0,
            _ => break,
        }
        end += 1;
    }
    Ok((width, end))
}

fn decimal(slice: &str, start: usize, end: usize) -> Result<i64, SyntaxError> {
    // The usual literal: a few plain digits, no leading zero (18 digits
    // cannot overflow).
    let bytes = slice.as_bytes();
    if bytes.len() <= 18
        && (bytes.len() == 1 || bytes[0] != b'0')
        && bytes.iter().all(u8::is_ascii_digit)
    {
        return Ok(bytes
            .iter()
            .fold(0i64, |n, &b| n * 10 + i64::from(b - b'0')));
    }
    let digits: std::borrow::Cow<str> = if slice.contains('_') {
        slice.replace('_', "").into()
    } else {
        slice.into()
    };
    if digits.len() > 1 && digits.starts_with('0') && digits.bytes().any(|b| b != b'0') {
        return Err(SyntaxError::new(SyntaxErrorKind::LeadingZeros, start, end));
    }
    digits
        .parse::<i64>()
        .map_err(|_| SyntaxError::new(SyntaxErrorKind::IntOverflow, start, end))
}

fn radix(digits: &str, radix: u32, start: usize, end: usize) -> Result<i64, SyntaxError> {
    let digits: std::borrow::Cow<str> = if digits.contains('_') {
        digits.replace('_', "").into()
    } else {
        digits.into()
    };
    i64::from_str_radix(&digits, radix)
        .map_err(|_| SyntaxError::new(SyntaxErrorKind::IntOverflow, start, end))
}

/// The value of a string literal (`slice` includes the quotes; `offset` is
/// where it starts in the source, for error spans). Escapes as in Python;
/// an unknown escape keeps its backslash, as Python does.
fn unescape(slice: &str, offset: usize) -> Result<String, SyntaxError> {
    let quote_len = if slice.len() >= 6 && (slice.starts_with("\"\"\"") || slice.starts_with("'''"))
    {
        3
    } else {
        1
    };
    let body = slice
        .get(quote_len..slice.len().saturating_sub(quote_len))
        .unwrap_or("");
    if !body.contains('\\') {
        return Ok(body.to_string());
    }
    let body_offset = offset + quote_len;
    let mut out = String::with_capacity(body.len());
    let mut chars = body.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        let bad = |len: usize| {
            SyntaxError::new(
                SyntaxErrorKind::BadEscape,
                body_offset + i,
                body_offset + i + len,
            )
        };
        let Some((_, e)) = chars.next() else {
            out.push('\\');
            break;
        };
        match e {
            '\n' => {}
            '\r' => {
                if chars.peek().map(|&(_, c)| c) == Some('\n') {
                    chars.next();
                }
            }
            '\\' => out.push('\\'),
            '\'' => out.push('\''),
            '"' => out.push('"'),
            'n' => out.push('\n'),
            't' => out.push('\t'),
            'r' => out.push('\r'),
            'a' => out.push('\x07'),
            'b' => out.push('\x08'),
            'f' => out.push('\x0c'),
            'v' => out.push('\x0b'),
            '0'..='7' => {
                let mut value = e.to_digit(8).unwrap_or(0);
                for _ in 0..2 {
                    match chars.peek().and_then(|&(_, c)| c.to_digit(8)) {
                        Some(d) => {
                            value = value * 8 + d;
                            chars.next();
                        }
                        None => break,
                    }
                }
                out.push(char::from_u32(value).ok_or_else(|| bad(2))?);
            }
            'x' | 'u' | 'U' => {
                let len = match e {
                    'x' => 2,
                    'u' => 4,
                    _ => 8,
                };
                let mut value: u32 = 0;
                for k in 0..len {
                    let digit = chars.peek().and_then(|&(_, c)| c.to_digit(16));
                    match digit {
                        Some(d) => {
                            value = value * 16 + d;
                            chars.next();
                        }
                        None => return Err(bad(2 + k)),
                    }
                }
                out.push(char::from_u32(value).ok_or_else(|| bad(2 + len))?);
            }
            other => {
                out.push('\\');
                out.push(other);
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(text: &str) -> Vec<String> {
        Layout::new(text)
            .map(|t| match t {
                Ok((_, tok, _)) => format!("{tok:?}"),
                Err(e) => format!("error {:?}", e.kind),
            })
            .collect()
    }

    #[test]
    fn layout_basics() {
        let toks = kinds("def f():\n    x = 1\n\n    # c\n    return x\n");
        assert_eq!(
            toks.join(" "),
            "Def Name(\"f\") LParen RParen Colon Newline Indent Name(\"x\") Assign Int(1) \
             Newline Return Name(\"x\") Newline Dedent"
        );
    }

    #[test]
    fn unfinished_last_line_and_crlf() {
        let toks = kinds("\u{FEFF}if a:\r\n  b\r\n  c");
        assert_eq!(
            toks.join(" "),
            "If Name(\"a\") Colon Newline Indent Name(\"b\") Newline Name(\"c\") Newline Dedent"
        );
    }

    #[test]
    fn brackets_join_lines() {
        let toks = kinds("x = (1,\n        2)\\\n  + 3\n");
        assert!(!toks.iter().any(|t| t == "Indent"));
        assert_eq!(toks.iter().filter(|t| *t == "Newline").count(), 1);
    }

    #[test]
    fn numbers_and_strings() {
        let toks = kinds("0 42 1_000 0x1F 1.0 .5 1e-3 2. 'a\\n' \"b\" '''c''' ''");
        assert_eq!(
            toks.join(" "),
            "Int(0) Int(42) Int(1000) Int(31) Float(1.0) Float(0.5) Float(0.001) Float(2.0) \
             Str(\"a\\n\") Str(\"b\") Str(\"c\") Str(\"\") Newline"
        );
    }

    #[test]
    fn errors() {
        assert!(kinds("x = 99999999999999999999")
            .last()
            .is_some_and(|t| t.contains("IntOverflow")));
        assert!(kinds("if a:\n\tb\n")
            .last()
            .is_some_and(|t| t.contains("TabIndent")));
        assert!(kinds("if a:\n    b\n  c\n")
            .last()
            .is_some_and(|t| t.contains("InconsistentDedent")));
        assert!(kinds("x = 'abc\n")
            .last()
            .is_some_and(|t| t.contains("UnterminatedString")));
        assert!(kinds("x = (1\n")
            .last()
            .is_some_and(|t| t.contains("Unclosed")));
        assert!(kinds("x = ?")
            .last()
            .is_some_and(|t| t.contains("UnknownChar")));
        assert!(kinds("while x:")
            .last()
            .is_some_and(|t| t.contains("Unsupported")));
    }
}
