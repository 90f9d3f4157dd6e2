//! The parser: lalrpop glue, the checks the grammar cannot express, and the
//! one place where syntax errors become [`Diagnostic`]s.
//!
//! `grammar/tp.lalrpop` builds the AST with the helpers below; the layout
//! lexer (`lexer.rs`) feeds it. Every syntax error, from the lexer, from a
//! grammar action or from lalrpop itself, is worded here (`describe`), with
//! terminal names as people say them ("an indented block", "`)`", "a name")
//! and never lalrpop's internal names or byte offsets. The code is `syntax`,
//! or `unsupported` for Python constructs the language leaves out (`while`,
//! `lambda`, …).
//!
//! After the first error the parser restarts at the next top-level `def` or
//! `import` line, so one run reports an error per broken function.

use super::ast::{
    BinOp, Call, CmpOp, Expr, ExprKind, FunctionDef, Ident, Item, Keyword, ListComp, Module, Name,
    Param, Stmt, StmtKind, UnaryOp,
};
use super::lexer::{indent_width, Layout, Region, Spanned, SyntaxError, SyntaxErrorKind, Tok};
use super::lexer::{MAX_BRACKET_DEPTH, MAX_ELIF_BRANCHES, MAX_INDENT_DEPTH, MAX_LINE_OPERATORS};
use super::source::{SourceFile, Span};
use crate::report::Diagnostic;
use lalrpop_util::ParseError;

lalrpop_util::lalrpop_mod!(
    #[allow(
        clippy::all,
        clippy::pedantic,
        unused,
        unused_qualifications,
        missing_docs
    )]
    tp,
    "/tp.rs"
);

/// How deep an expression tree may be. Later stages walk trees
/// recursively; real programs stay far below this.
pub const MAX_EXPR_DEPTH: usize = 300;

/// How many syntax errors one file reports at most.
const MAX_ERRORS: usize = 20;

/// One entry of REPL input: an `import`/`def`, or a statement.
#[derive(Clone, Debug, PartialEq)]
pub enum Entry {
    Item(Item),
    Stmt(Stmt),
}

/// Parses a whole `.tp` file: `import` lines and function definitions,
/// each function's names numbered (`resolve`).
pub fn parse_module(text: &str) -> Result<Module, Vec<Diagnostic>> {
    parse_module_on(text, 1)
}

/// `parse_module` on up to `threads` threads: a big file is cut into
/// parts parsed at once (`parse_split`), with the same result.
pub fn parse_module_on(text: &str, threads: usize) -> Result<Module, Vec<Diagnostic>> {
    let mut module = parse_syntax_on(text, threads)?;
    super::resolve::items(&mut module.items);
    Ok(module)
}

/// The syntax tree alone, its names not yet numbered (`Slot::NONE`): the
/// parse stage of `parse_module_on`, for timing the stages apart. A tree
/// used unnumbered still runs right (its names live in `Env`'s list of
/// unnumbered names), only slower.
pub fn parse_syntax_on(text: &str, threads: usize) -> Result<Module, Vec<Diagnostic>> {
    let mut diagnostics = Vec::new();
    let (lines, may_be_deep) = parse_lines(text, threads, &mut diagnostics);
    let mut items = Vec::new();
    for line in lines.unwrap_or_default() {
        match line {
            Line::Item(item) => items.push(*item),
            Line::Stmts(stmts) => {
                for stmt in stmts {
                    diagnostics.push(top_level_statement(&stmt));
                    dismantle_stmt(stmt);
                }
            }
        }
    }
    if diagnostics.is_empty() && may_be_deep {
        if let Some(span) = too_deep(items.iter().flat_map(item_exprs)) {
            diagnostics.push(describe(
                SyntaxError {
                    kind: SyntaxErrorKind::ExpressionTooDeep,
                    span,
                },
                text,
            ));
        }
    }
    if diagnostics.is_empty() {
        Ok(Module { items })
    } else {
        items.into_iter().for_each(dismantle_item);
        Err(diagnostics)
    }
}

/// Parses REPL input: any mix of `import` lines, function definitions and
/// statements (including `x: Tensor(4)` declarations), in order.
pub fn parse_interactive(text: &str) -> Result<Vec<Entry>, Vec<Diagnostic>> {
    let mut diagnostics = Vec::new();
    let (lines, may_be_deep) = parse_lines(text, 1, &mut diagnostics);
    let mut entries = Vec::new();
    for line in lines.unwrap_or_default() {
        match line {
            Line::Item(item) => entries.push(Entry::Item(*item)),
            Line::Stmts(stmts) => entries.extend(stmts.into_iter().map(Entry::Stmt)),
        }
    }
    if diagnostics.is_empty() && may_be_deep {
        let exprs = entries.iter().flat_map(|entry| match entry {
            Entry::Item(item) => item_exprs(item),
            Entry::Stmt(stmt) => stmt_exprs(stmt),
        });
        if let Some(span) = too_deep(exprs) {
            diagnostics.push(describe(
                SyntaxError {
                    kind: SyntaxErrorKind::ExpressionTooDeep,
                    span,
                },
                text,
            ));
        }
    }
    if diagnostics.is_empty() {
        for entry in &mut entries {
            if let Entry::Item(Item::Def(def)) = entry {
                super::resolve::function(def);
            }
        }
        Ok(entries)
    } else {
        for entry in entries {
            match entry {
                Entry::Item(item) => dismantle_item(item),
                Entry::Stmt(stmt) => dismantle_stmt(stmt),
            }
        }
        Err(diagnostics)
    }
}

/// True when `text` is an unfinished REPL input: it ends inside a bracket,
/// a triple-quoted string, right after a block header, or in the middle of
/// an expression. The REPL keeps reading lines while this holds (and may
/// also wait for an empty line after a block, as Python's does).
pub fn needs_more_input(text: &str) -> bool {
    let mut layout = Layout::new(text);
    match tp::LinesParser::new().parse(&mut layout) {
        Ok(lines) => {
            lines.into_iter().for_each(dismantle_line);
            false
        }
        Err(ParseError::UnrecognizedEof { .. }) => true,
        Err(ParseError::User { error }) => matches!(
            error.kind,
            SyntaxErrorKind::Unclosed { .. } | SyntaxErrorKind::UnterminatedTripleString
        ),
        Err(_) => false,
    }
}

/// One token of `tpi dump tokens`.
#[derive(Clone, Debug, PartialEq)]
pub struct Token {
    pub span: Span,
    /// `name`, `int`, `keyword`, `punct`, `newline`, `indent`, `dedent`, …
    pub kind: &'static str,
    /// The source text of the token (a string's value for strings).
    pub text: String,
}

/// The tokens of `text` as the grammar sees them, up to the first error
/// (returned with them).
pub fn tokens(text: &str) -> (Vec<Token>, Option<Diagnostic>) {
    let mut out = Vec::new();
    for item in Layout::new(text) {
        match item {
            Ok((start, tok, end)) => {
                let span = Span::new(start, end);
                let text = match &tok {
                    Tok::Str(value) => format!("{value:?}"),
                    Tok::Newline | Tok::Indent | Tok::Dedent => String::new(),
                    _ => text.get(start..end).unwrap_or("").to_string(),
                };
                out.push(Token {
                    span,
                    kind: tok.kind_name(),
                    text,
                });
            }
            Err(error) => return (out, Some(describe(error, text))),
        }
    }
    (out, None)
}

/// Reads source bytes. Valid UTF-8 gives the file and no diagnostic;
/// anything else gives a lossy copy (for rendering: every byte before the
/// first bad one keeps its offset) and a diagnostic at the first bad byte.
pub fn decode_source(name: &str, bytes: Vec<u8>) -> (SourceFile, Option<Diagnostic>) {
    match String::from_utf8(bytes) {
        Ok(text) => (SourceFile::new(name, text), None),
        Err(error) => {
            let at = error.utf8_error().valid_up_to();
            let bytes = error.into_bytes();
            let bad = bytes.get(at).copied().unwrap_or(0);
            let text = String::from_utf8_lossy(&bytes).into_owned();
            // The replacement character takes three bytes in the lossy copy.
            let end = (at + 3).min(text.len());
            let diagnostic = Diagnostic::error(
                "encoding",
                "the file is not valid UTF-8",
                Span::new(at, end),
            )
            .with_label(format!(
                "byte 0x{bad:02X} cannot start or continue a UTF-8 character"
            ))
            .with_help("save the file as UTF-8");
            (SourceFile::new(name, text), Some(diagnostic))
        }
    }
}

// ------------------------------------------------------------------ driving

/// Parses `text` into lines; on errors, records them and re-parses from the
/// next top-level line to find more. Returns the lines of a clean parse,
/// and whether some expression may be deeper than `MAX_EXPR_DEPTH` (see
/// `Layout::max_line_operators`): only then is the tree walked to check.
fn parse_lines(
    text: &str,
    threads: usize,
    diagnostics: &mut Vec<Diagnostic>,
) -> (Option<Vec<Line>>, bool) {
    begin_names(text.len());
    let result = parse_lines_with_names(text, threads, diagnostics);
    end_names();
    result
}

fn parse_lines_with_names(
    text: &str,
    threads: usize,
    diagnostics: &mut Vec<Diagnostic>,
) -> (Option<Vec<Line>>, bool) {
    if let Some((lines, may_be_deep)) = parse_split(text, threads) {
        return (Some(lines), may_be_deep);
    }
    let parser = tp::LinesParser::new();
    let mut start = 0;
    loop {
        let mut layout = Layout::starting_at(text, start);
        match parser.parse(&mut layout) {
            Ok(lines) => {
                if diagnostics.is_empty() {
                    let may_be_deep = layout.max_line_operators() + 2 > MAX_EXPR_DEPTH;
                    return (Some(lines), may_be_deep);
                }
                lines.into_iter().for_each(dismantle_line);
                return (None, false);
            }
            Err(error) => {
                let (diagnostic, at) = convert_parse_error(error, text, &layout);
                diagnostics.push(diagnostic);
                if diagnostics.len() >= MAX_ERRORS {
                    return (None, false);
                }
                match next_top_level_line(text, at) {
                    Some(next) => start = next,
                    None => return (None, false),
                }
            }
        }
    }
}

// ------------------------------------------------------- parallel parsing

/// Files at least this big are parsed on several threads (`parse_split`).
const SPLIT_MIN_BYTES: usize = 256 << 10;

/// At most this many threads parse one file.
const SPLIT_MAX_PARTS: usize = 16;

thread_local! {
    /// While `parse_split`'s own parse runs: the lines of the regions other
    /// threads parsed, each taken by the `Tok::Chunk` that stands for it.
    static CHUNKS: std::cell::RefCell<Vec<Option<Vec<Line>>>> = Default::default();
}

type GrammarError<'a> = ParseError<usize, Tok<'a>, SyntaxError>;

fn outside_region<'a>() -> GrammarError<'a> {
    ParseError::User {
        error: SyntaxError::new(SyntaxErrorKind::OutsideRegion, 0, 0),
    }
}

/// Adds a line to the lines so far (grammar action): statements go on
/// the statements of the line before when it has some, so that a run of
/// statement lines (a region inside a block) is one vector.
pub(crate) fn push_line(lines: &mut Vec<Line>, line: Line) {
    match (lines.last_mut(), line) {
        (Some(Line::Stmts(before)), Line::Stmts(stmts)) => before.extend(stmts),
        (_, line) => lines.push(line),
    }
}

/// The lines of region `index` (grammar action for `Chunk`).
pub(crate) fn take_chunk<'a>(index: usize) -> Result<Vec<Line>, GrammarError<'a>> {
    CHUNKS
        .with(|chunks| chunks.borrow_mut().get_mut(index).and_then(Option::take))
        .ok_or_else(outside_region)
}

/// Adds the statements of region `index` to a block (grammar action). A
/// `def` or `import` there is not valid in a block: the file is then parsed
/// in one piece, which words the error.
pub(crate) fn chunk_block<'a>(
    mut block: Vec<Stmt>,
    index: usize,
) -> Result<Vec<Stmt>, GrammarError<'a>> {
    let mut lines = take_chunk(index)?.into_iter();
    while let Some(line) = lines.next() {
        match line {
            Line::Stmts(stmts) => block.extend(stmts),
            Line::Item(item) => {
                dismantle_item(*item);
                lines.for_each(dismantle_line);
                block.into_iter().for_each(dismantle_stmt);
                return Err(outside_region());
            }
        }
    }
    Ok(block)
}

/// What a thread returns for its region: its lines, where the region
/// ended, and its `max_line_operators`.
type RegionParse = Option<(Vec<Line>, usize, usize)>;

/// Parses a big file on `threads` threads, or returns `None` (a small file,
/// one core, or anything unexpected, including any syntax error: the file
/// is then parsed in one piece, which finds and words the errors).
///
/// The file is cut at a few lines (`split_regions`). Each other thread
/// parses one region, from its line to where that line's block ends or
/// the next region starts; this thread parses the rest, where each region
/// is one `Tok::Chunk` that its thread's lines replace. The layout checks
/// that every region starts a logical line outside brackets and strings,
/// so the tokens, and so the tree, are those of the whole-file parse.
fn parse_split(text: &str, threads: usize) -> Option<(Vec<Line>, bool)> {
    let parts = threads.min(SPLIT_MAX_PARTS);
    if text.len() < SPLIT_MIN_BYTES || parts < 2 {
        return None;
    }
    let regions = split_regions(text, parts);
    if regions.is_empty() {
        return None;
    }
    parse_regions(text, regions)
}

/// `parse_split` with the regions given.
fn parse_regions(text: &str, regions: Vec<Region>) -> Option<(Vec<Line>, bool)> {
    let result = std::thread::scope(|scope| {
        let mut workers = Vec::with_capacity(regions.len());
        for &region in &regions {
            let worker = std::thread::Builder::new()
                .name("tpi-parse".to_string())
                .stack_size(crate::WORKER_STACK_BYTES)
                .spawn_scoped(scope, move || parse_region(text, region))
                .ok()?;
            workers.push(Some(worker));
        }
        CHUNKS.with(|chunks| *chunks.borrow_mut() = regions.iter().map(|_| None).collect());
        let mut layout = Layout::with_regions(text, regions);
        let mut joining = Joining {
            layout: &mut layout,
            workers,
            max_line_operators: 0,
        };
        let result = tp::LinesParser::new().parse(&mut joining);
        let operators = joining.max_line_operators;
        // Regions never reached (after an error) are joined by the scope.
        drop(joining);
        let operators = operators.max(layout.max_line_operators());
        match result {
            Ok(lines) => Some((lines, operators + 2 > MAX_EXPR_DEPTH)),
            Err(_) => None,
        }
    });
    let unused = CHUNKS.with(|chunks| std::mem::take(&mut *chunks.borrow_mut()));
    unused
        .into_iter()
        .flatten()
        .flatten()
        .for_each(dismantle_line);
    result
}

/// Lexes and parses one region (on its own thread).
fn parse_region(text: &str, region: Region) -> RegionParse {
    let mut layout = Layout::region(text, region);
    begin_names(text.len());
    let result = tp::LinesParser::new().parse(&mut layout);
    end_names();
    let lines = result.ok()?;
    Some((lines, layout.region_end(), layout.max_line_operators()))
}

/// The main parse's tokens: on each `Chunk`, waits for its region's thread,
/// hands its lines to the grammar (`CHUNKS`) and goes on after the region.
struct Joining<'l, 'a, 's> {
    layout: &'l mut Layout<'a>,
    workers: Vec<Option<std::thread::ScopedJoinHandle<'s, RegionParse>>>,
    max_line_operators: usize,
}

impl<'a> Iterator for Joining<'_, 'a, '_> {
    type Item = Result<Spanned<'a>, SyntaxError>;

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        let item = self.layout.next();
        if let Some(Ok((start, Tok::Chunk(index), _))) = item {
            let worker = self.workers.get_mut(index).and_then(Option::take);
            let parsed = worker.and_then(|worker| {
                // A panic while parsing is a bug: pass it on as one.
                worker
                    .join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
            });
            let Some((lines, end, operators)) = parsed else {
                return Some(Err(SyntaxError::new(
                    SyntaxErrorKind::OutsideRegion,
                    start,
                    start,
                )));
            };
            self.max_line_operators = self.max_line_operators.max(operators);
            CHUNKS.with(|chunks| chunks.borrow_mut()[index] = Some(lines));
            if let Err(error) = self.layout.resume_at(end) {
                return Some(Err(error));
            }
            return Some(Ok((start, Tok::Chunk(index), end)));
        }
        item
    }
}

/// Where to cut `text` for `parts` threads: one region starting near each
/// of the offsets `len * k / parts` (k ≥ 1), at the least indented line
/// close after it that can start a region (`region_line`). A region ends
/// where its block does or where the next one starts; this is guessed from
/// indentation alone, and the layouts check it.
fn split_regions(text: &str, parts: usize) -> Vec<Region> {
    let bytes = text.as_bytes();
    let window = (bytes.len() / (parts * 8)).max(1);
    let mut regions: Vec<Region> = Vec::new();
    for part in 1..parts {
        let target = bytes.len() * part / parts;
        let Some((start, width)) = region_line(bytes, target, window) else {
            continue;
        };
        if let Some(last) = regions.last_mut() {
            if start <= last.start {
                continue;
            }
            last.stop = start;
        }
        regions.push(Region {
            start,
            width,
            stop: usize::MAX,
        });
    }
    regions
}

/// The start and indentation of the least indented line that can start a
/// region among the lines that start in `from..from + window` (the first
/// such line if several): a line with a statement, not a blank or comment
/// line, nor `else`/`elif` (which continue the statement before).
fn region_line(bytes: &[u8], from: usize, window: usize) -> Option<(usize, usize)> {
    let mut at = from;
    // The start of the first line at or after `from`, past the first line.
    while at < bytes.len() && (at == 0 || bytes[at - 1] != b'\n') {
        at += 1;
    }
    let limit = from.saturating_add(window);
    let mut best: Option<(usize, usize)> = None;
    while at < bytes.len() && at < limit {
        // (A tab in the indentation: not a line to start at.)
        let (width, first) = indent_width(bytes, at, bytes.len()).unwrap_or((0, at));
        let rest = &bytes[first..];
        let keyword = |word: &[u8]| {
            rest.starts_with(word)
                && rest
                    .get(word.len())
                    .is_none_or(|&b| !(b.is_ascii_alphanumeric() || b == b'_'))
        };
        let statement = rest
            .first()
            .is_some_and(|&b| b.is_ascii_alphabetic() || b == b'_')
            && !keyword(b"else")
            && !keyword(b"elif");
        if statement && best.is_none_or(|(_, w)| width < w) {
            best = Some((at, width));
            if width == 0 {
                break;
            }
        }
        match rest.iter().position(|&b| b == b'\n') {
            Some(offset) => at = first + offset + 1,
            None => break,
        }
    }
    best
}

/// The start of the first line after `after` that begins, at column 0,
/// with `def`, `import` or `from`: a place where parsing can start afresh.
fn next_top_level_line(text: &str, after: usize) -> Option<usize> {
    let bytes = text.as_bytes();
    let mut at = after.min(bytes.len());
    while at < bytes.len() {
        let line_end = match memchr_newline(&bytes[at..]) {
            Some(offset) => at + offset,
            None => return None,
        };
        let next = line_end + 1;
        let line = &bytes[next..];
        if [&b"def "[..], b"import ", b"from "]
            .iter()
            .any(|keyword| line.starts_with(keyword))
        {
            return Some(next);
        }
        at = next;
    }
    None
}

fn memchr_newline(bytes: &[u8]) -> Option<usize> {
    bytes.iter().position(|&b| b == b'\n')
}

// ------------------------------------------------------------------ wording

/// Converts a lalrpop error into a diagnostic, with the offset where the
/// error is (to resume after it).
fn convert_parse_error(
    error: ParseError<usize, Tok<'_>, SyntaxError>,
    text: &str,
    layout: &Layout<'_>,
) -> (Diagnostic, usize) {
    match error {
        ParseError::User { error } => {
            let at = error.span.end as usize;
            (describe(error, text), at)
        }
        ParseError::InvalidToken { location } => (
            Diagnostic::error("syntax", "invalid token", Span::new(location, location))
                .with_label("here"),
            location,
        ),
        ParseError::UnrecognizedEof { location, expected } => {
            let span = Span::new(location, location);
            (
                unexpected(text, layout, span, Found::EndOfFile, &expected),
                location,
            )
        }
        ParseError::UnrecognizedToken {
            token: (start, tok, end),
            expected,
        } => {
            let span = Span::new(start, end);
            (
                unexpected(text, layout, span, Found::Token(&tok), &expected),
                end,
            )
        }
        ParseError::ExtraToken {
            token: (start, tok, end),
        } => {
            let span = Span::new(start, end);
            let found = found_name(text, span, Found::Token(&tok));
            (
                Diagnostic::error("syntax", format!("unexpected {found}"), span)
                    .with_label("unexpected here"),
                end,
            )
        }
    }
}

#[derive(Clone, Copy)]
enum Found<'t, 'a> {
    Token(&'t Tok<'a>),
    EndOfFile,
}

/// Python keywords that the language does not have: a parse error next to
/// one of them says so.
const PYTHON_ONLY_KEYWORDS: &[&str] = &[
    "class", "try", "except", "finally", "raise", "del", "global", "nonlocal", "yield", "async",
    "await", "break", "continue", "match",
];

/// Terminals that can start an expression (collapsed to "an expression").
const EXPRESSION_STARTS: &[&str] = &[
    "Name",
    "Int",
    "Float",
    "Str",
    "\"(\"",
    "\"[\"",
    "\"-\"",
    "\"+\"",
    "\"~\"",
    "\"not\"",
    "\"True\"",
    "\"False\"",
    "\"None\"",
    "\"...\"",
    "\"*\"",
    "\"**\"",
    "\"{\"",
];

/// Terminals worth naming in "expected …", in the order they are listed.
const STRUCTURAL: &[&str] = &[
    "\",\"",
    "\")\"",
    "\"]\"",
    "\"}\"",
    "\":\"",
    "\"in\"",
    "\"else\"",
    "\"import\"",
    "\"as\"",
    "\"->\"",
    "\"=\"",
];

/// A terminal as people say it.
fn terminal_name(terminal: &str) -> String {
    match terminal {
        "Name" => "a name".to_string(),
        "Int" => "an integer".to_string(),
        "Float" => "a number".to_string(),
        "Str" => "a string".to_string(),
        "Newline" => "end of line".to_string(),
        "Indent" => "an indented block".to_string(),
        "Dedent" => "the end of the block".to_string(),
        quoted => format!("`{}`", quoted.trim_matches('"')),
    }
}

/// "`x`, `y` or `z`".
fn one_of(names: &[String]) -> String {
    match names {
        [] => "something else".to_string(),
        [one] => one.clone(),
        [init @ .., last] => format!("{} or {}", init.join(", "), last),
    }
}

/// What the parser wanted, as a phrase ("an expression or `)`").
fn expected_phrase(expected: &[String]) -> String {
    let has = |t: &str| expected.iter().any(|e| e == t);
    let expression = has("Name") && has("Int") && has("\"(\"");
    if has("Newline") {
        return if expression {
            "an expression or end of line".to_string()
        } else {
            "end of line".to_string()
        };
    }
    // `in` after a complete expression is also a comparison operator: name
    // it only where it can only be the `in` of a `for`.
    let comparison = has("\"==\"");
    let closers = [",", ")", "]", "}"]
        .iter()
        .any(|c| has(&format!("\"{c}\"")));
    let mut names: Vec<String> = STRUCTURAL
        .iter()
        .filter(|t| has(t))
        .filter(|t| !(closers && (**t == "\"=\"" || **t == "\":\"")))
        .filter(|t| !(comparison && **t == "\"in\""))
        .take(3)
        .map(|t| terminal_name(t))
        .collect();
    if expression {
        names.insert(0, "an expression".to_string());
        return one_of(&names);
    }
    if has("Name") {
        names.insert(0, "a name".to_string());
        return one_of(&names);
    }
    if names.is_empty() {
        names = expected
            .iter()
            .filter(|t| !EXPRESSION_STARTS.contains(&t.as_str()) || !expression)
            .take(4)
            .map(|t| terminal_name(t))
            .collect();
    }
    one_of(&names)
}

/// What was found, as a phrase ("`foo`", "end of line").
fn found_name(text: &str, span: Span, found: Found<'_, '_>) -> String {
    match found {
        Found::EndOfFile => "end of file".to_string(),
        Found::Token(Tok::Newline) => "end of line".to_string(),
        Found::Token(Tok::Indent) => "indentation".to_string(),
        Found::Token(Tok::Dedent) => "the end of the block".to_string(),
        Found::Token(Tok::Str(_)) => "a string".to_string(),
        Found::Token(_) => {
            let snippet = text.get(span.range()).unwrap_or("");
            if snippet.chars().count() > 20 {
                let short: String = snippet.chars().take(17).collect();
                format!("`{short}...`")
            } else {
                format!("`{snippet}`")
            }
        }
    }
}

/// The line (1-based) holding byte `offset`.
fn line_of(text: &str, offset: usize) -> usize {
    let offset = offset.min(text.len());
    text.as_bytes()[..offset]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
        + 1
}

/// The span of the line holding byte `offset`, without its line break and
/// indentation.
fn line_span(text: &str, offset: usize) -> Span {
    let offset = offset.min(text.len());
    let bytes = text.as_bytes();
    let start = bytes[..offset]
        .iter()
        .rposition(|&b| b == b'\n')
        .map_or(0, |p| p + 1);
    let end = bytes[offset..]
        .iter()
        .position(|&b| b == b'\n' || b == b'\r')
        .map_or(bytes.len(), |p| offset + p);
    let indent = bytes[start..end]
        .iter()
        .take_while(|&&b| b == b' ' || b == b'\t')
        .count();
    Span::new(start + indent, end)
}

/// "expected X, found Y", with the special cases people meet most.
fn unexpected(
    text: &str,
    layout: &Layout<'_>,
    span: Span,
    found: Found<'_, '_>,
    expected: &[String],
) -> Diagnostic {
    let snippet = |s: Span| text.get(s.range()).unwrap_or("");
    let line_first = layout.line_first();
    let at_line_start = line_first == Some(span);
    // `class Foo:`, `try:`, `raise E` and friends: say that the keyword is
    // not supported rather than what the grammar expected after it.
    let candidates = [Some(span), layout.previous_token(), line_first];
    for at in candidates.into_iter().flatten() {
        let word = snippet(at);
        if PYTHON_ONLY_KEYWORDS.contains(&word) {
            return python_only_keyword(word, at);
        }
    }
    match found {
        Found::Token(Tok::At) if at_line_start => {
            return Diagnostic::error(
                "unsupported",
                "decorators are not supported in .tp programs",
                span,
            )
            .with_label("a decorator")
            .with_help(
                "remove it; for `@torch.no_grad()` put the body in `with torch.no_grad():`",
            );
        }
        Found::Token(Tok::LBrace) => {
            return Diagnostic::error(
                "unsupported",
                "dicts and sets (`{...}`) are not supported in .tp programs",
                span,
            )
            .with_label("a dict or set display")
            .with_help("use a tuple `(...)` or a list `[...]`");
        }
        Found::Token(Tok::Def) if at_line_start => {
            return Diagnostic::error(
                "unsupported",
                "nested function definitions are not supported in .tp programs",
                span,
            )
            .with_label("a `def` inside a block")
            .with_help("define the helper at the top level of the file and call it");
        }
        Found::Token(keyword @ (Tok::Else | Tok::Elif)) if at_line_start => {
            let word = if matches!(keyword, Tok::Else) {
                "else"
            } else {
                "elif"
            };
            return Diagnostic::error(
                "syntax",
                format!("`{word}` without an `if` before it"),
                span,
            )
            .with_label(format!(
                "no `if` block at this indentation ends right before this `{word}`"
            ))
            .with_help(format!(
                "indent `{word}` like its `if`, right after the `if` block's last line"
            ));
        }
        _ => {}
    }
    if expected.iter().any(|e| e == "Indent") {
        return expected_block(text, layout, span, found);
    }
    if let Found::Token(Tok::Indent) = found {
        return Diagnostic::error("syntax", "unexpected indentation", span)
            .with_label("this line is indented more than the block it is in")
            .with_help("indent it like the line before, or remove the indentation");
    }
    let what = expected_phrase(expected);
    let starts_statement = matches!(
        found,
        Found::Token(
            Tok::Return
                | Tok::If
                | Tok::For
                | Tok::With
                | Tok::Pass
                | Tok::Assert
                | Tok::Def
                | Tok::Import
                | Tok::From
        )
    );
    if let (true, Some(&(open, open_span))) = (starts_statement, layout.open_brackets().last()) {
        return Diagnostic::error("syntax", format!("`{open}` was never closed"), span)
            .with_label(format!("expected {what} before this statement"))
            .with_secondary(open_span, format!("unclosed `{open}` opened here"))
            .with_help(format!("add the missing `{}`", closing(open)));
    }
    let found_text = found_name(text, span, found);
    let mut diagnostic = Diagnostic::error(
        "syntax",
        format!("expected {what}, found {found_text}"),
        span,
    )
    .with_label(format!("expected {what}"));
    // Two expressions side by side in a list of them: a comma is missing.
    let found_starts_operand = matches!(
        found,
        Found::Token(Tok::Name(_) | Tok::Int(_) | Tok::Float(_) | Tok::Str(_))
    );
    if found_starts_operand && expected.iter().any(|e| e == "\",\"") {
        diagnostic = diagnostic.with_help("is a `,` missing before it?");
    }
    // Inside brackets opened on an earlier line, the bracket is the likely
    // culprit: point at it.
    if let Some(&(open, open_span)) = layout.open_brackets().last() {
        if line_of(text, open_span.start as usize) < line_of(text, span.start as usize) {
            diagnostic = diagnostic
                .with_secondary(open_span, format!("unclosed `{open}` opened here"))
                .with_help(format!(
                    "close the `{open}`: inside brackets a statement runs on over several lines"
                ));
        }
    }
    diagnostic
}

fn python_only_keyword(word: &str, span: Span) -> Diagnostic {
    Diagnostic::error(
        "unsupported",
        format!("`{word}` is not supported in .tp programs"),
        span,
    )
    .with_label("Python syntax that .tp programs leave out")
    .with_help(
        "a .tp file holds imports and functions made of assignments, `if`, `for`, `with`, \
         `return`, `assert` and `pass`",
    )
}

/// "expected an indented block after the `if` statement on line 3".
fn expected_block(text: &str, layout: &Layout<'_>, span: Span, found: Found<'_, '_>) -> Diagnostic {
    let newline = layout.last_newline();
    let mut message = "expected an indented block".to_string();
    let mut header = None;
    if let Some(newline) = newline {
        let header_span = line_span(text, newline.start as usize);
        let header_text = text.get(header_span.range()).unwrap_or("");
        let keyword = header_text
            .split(|c: char| !c.is_ascii_alphanumeric() && c != '_')
            .next()
            .unwrap_or("");
        let what = match keyword {
            "def" => "the function definition".to_string(),
            "if" | "elif" | "else" | "for" | "with" => format!("the `{keyword}` statement"),
            _ => "the line".to_string(),
        };
        message = format!(
            "{message} after {what} on line {}",
            line_of(text, header_span.start as usize)
        );
        header = Some(header_span);
    }
    let label = match found {
        Found::EndOfFile => "the file ends before the block's body".to_string(),
        _ => "this line should be indented".to_string(),
    };
    let mut diagnostic = Diagnostic::error("syntax", message, span)
        .with_label(label)
        .with_help(
            "indent the statements of the block (4 spaces is usual), or write `pass` \
             for an empty block",
        );
    if let Some(header) = header {
        diagnostic = diagnostic.with_secondary(header, "the block starts here");
    }
    diagnostic
}

/// The wording of every lexer and grammar-action error.
pub fn describe(error: SyntaxError, text: &str) -> Diagnostic {
    let span = error.span;
    let syntax = |message: String| Diagnostic::error("syntax", message, span);
    match error.kind {
        SyntaxErrorKind::UnknownChar(c) => {
            let shown = if c.is_control() || c.is_whitespace() || c == '\u{FEFF}' {
                format!("U+{:04X}", c as u32)
            } else {
                format!("`{c}`")
            };
            let diagnostic =
                syntax(format!("unknown character {shown}")).with_label("not part of any token");
            match c {
                '!' => diagnostic.with_help("`!` appears only in `!=`; for a negation use `not`"),
                '$' | '?' | '`' => diagnostic,
                '\u{201C}' | '\u{201D}' | '\u{2018}' | '\u{2019}' => {
                    diagnostic.with_help("use straight quotes `\"` or `'` for strings")
                }
                c if !c.is_ascii() && c.is_alphabetic() => {
                    diagnostic.with_help("names are made of ASCII letters, digits and `_`")
                }
                _ => diagnostic,
            }
        }
        SyntaxErrorKind::StrayBackslash => syntax("unexpected `\\`".to_string())
            .with_label("a `\\` must be the last character of its line")
            .with_help("remove what follows the `\\`, or the `\\` itself"),
        SyntaxErrorKind::UnterminatedString => syntax("unterminated string".to_string())
            .with_label("this string has no closing quote on its line")
            .with_help("close the string with the quote that opened it"),
        SyntaxErrorKind::UnterminatedTripleString => {
            let open = Span::new(span.start as usize, span.start as usize + 3);
            Diagnostic::error("syntax", "unterminated triple-quoted string", open)
                .with_label("this string is never closed")
        }
        SyntaxErrorKind::BadEscape => syntax("invalid escape sequence in a string".to_string())
            .with_label("malformed escape")
            .with_help(
                "`\\x` takes 2 hex digits, `\\u` 4 and `\\U` 8; write `\\\\` for a backslash",
            ),
        SyntaxErrorKind::IntOverflow => syntax("integer literal too large".to_string())
            .with_label("does not fit in a 64-bit signed integer"),
        SyntaxErrorKind::LeadingZeros => {
            syntax("leading zeros in a decimal integer are not allowed".to_string())
                .with_label("starts with `0`")
                .with_help("remove the zeros, or write `0o…` for an octal number")
        }
        SyntaxErrorKind::BadFloat => {
            syntax("invalid number".to_string()).with_label("not a valid float literal")
        }
        SyntaxErrorKind::TabIndent => syntax("tab in indentation".to_string())
            .with_label("indentation must use spaces")
            .with_help("replace the tab with spaces (4 per level is usual)"),
        SyntaxErrorKind::InconsistentDedent { width, open } => {
            let levels: Vec<String> = open.iter().map(|w| w.to_string()).collect();
            syntax("unindent does not match any outer indentation level".to_string())
                .with_label(format!(
                    "this line is indented {width} space{}",
                    if width == 1 { "" } else { "s" }
                ))
                .with_note(format!(
                    "the open blocks are indented {} spaces",
                    one_of(&levels).replace(" or ", " and ")
                ))
                .with_help("indent the line like one of the blocks it closes")
        }
        SyntaxErrorKind::TooManyIndents => syntax("too many nested blocks".to_string())
            .with_label(format!("more than {MAX_INDENT_DEPTH} blocks are open here"))
            .with_help("move the inner blocks into a helper function"),
        SyntaxErrorKind::NestingTooDeep => syntax("brackets nested too deeply".to_string())
            .with_label(format!(
                "more than {MAX_BRACKET_DEPTH} brackets are open here"
            ))
            .with_help("split the expression with intermediate names"),
        SyntaxErrorKind::LineTooComplex => syntax("statement too complex".to_string())
            .with_label(format!(
                "more than {MAX_LINE_OPERATORS} operators in one statement"
            ))
            .with_help("split it into several statements with intermediate names"),
        SyntaxErrorKind::TooManyElifs => syntax("too many `elif` branches".to_string())
            .with_label(format!("more than {MAX_ELIF_BRANCHES} `elif`s in one `if`"))
            .with_help("split the chain, e.g. with a helper function"),
        // Never shown: the file is then parsed in one piece (`parse_split`).
        SyntaxErrorKind::OutsideRegion => {
            syntax("a region parsed apart is not whole lines of one block".to_string())
        }
        SyntaxErrorKind::ExpressionTooDeep => syntax("expression nested too deeply".to_string())
            .with_label(format!("more than {MAX_EXPR_DEPTH} levels deep"))
            .with_help("split it into several statements with intermediate names"),
        SyntaxErrorKind::Unclosed { open, open_span } => {
            let close = closing(open);
            syntax(format!("unclosed `{open}`"))
                .with_label(format!("the file ends before `{close}`"))
                .with_secondary(open_span, format!("unclosed `{open}` opened here"))
                .with_help(format!("add the missing `{close}`"))
        }
        SyntaxErrorKind::UnmatchedClose(close) => syntax(format!("unexpected `{close}`"))
            .with_label(format!("there is no open `{}` to close", opening(close))),
        SyntaxErrorKind::MismatchedClose {
            open,
            open_span,
            close,
        } => syntax(format!("`{close}` does not match `{open}`"))
            .with_label(format!("expected `{}` here", closing(open)))
            .with_secondary(open_span, format!("`{open}` opened here")),
        SyntaxErrorKind::Unsupported(keyword) if PYTHON_ONLY_KEYWORDS.contains(&keyword) => {
            python_only_keyword(keyword, span)
        }
        SyntaxErrorKind::Unsupported(keyword) => {
            let (message, help) = match keyword {
                "while" => (
                    "`while` loops are not supported in .tp programs",
                    "the analysis unrolls loops statically: use `for i in range(n):`",
                ),
                _ => (
                    "`lambda` is not supported in .tp programs",
                    "define a helper function with `def` and call it",
                ),
            };
            Diagnostic::error("unsupported", message, span)
                .with_label("not supported")
                .with_help(help)
        }
        SyntaxErrorKind::Walrus => Diagnostic::error(
            "unsupported",
            "assignment expressions (`:=`) are not supported in .tp programs",
            span,
        )
        .with_label("not supported")
        .with_help("assign the value in a statement of its own"),
        SyntaxErrorKind::Invalid(invalid) => {
            let super::lexer::InvalidSyntax {
                message,
                label,
                help,
            } = *invalid;
            let mut diagnostic = syntax(message).with_label(label);
            if let Some(help) = help {
                diagnostic = diagnostic.with_help(help);
            }
            let _ = text;
            diagnostic
        }
    }
}

fn closing(open: char) -> char {
    match open {
        '(' => ')',
        '[' => ']',
        _ => '}',
    }
}

fn opening(close: char) -> char {
    match close {
        ')' => '(',
        ']' => '[',
        _ => '{',
    }
}

fn top_level_statement(stmt: &Stmt) -> Diagnostic {
    Diagnostic::error(
        "syntax",
        "statements are not allowed at the top level of a .tp file",
        stmt.span,
    )
    .with_label("this statement is outside any function")
    .with_help(
        "a .tp file holds imports and function definitions: move the statement into a function",
    )
}

// ------------------------------------------------------------------ grammar helpers

/// A top-level line as the grammar returns it.
#[doc(hidden)]
#[derive(Debug)]
pub enum Line {
    Item(Box<Item>),
    Stmts(Vec<Stmt>),
}

/// A call argument as the grammar returns it.
#[doc(hidden)]
#[derive(Debug)]
pub enum Arg {
    Positional(Expr),
    Keyword(Box<Keyword>),
    DoubleStar(Span),
    Generator(Span),
}

/// A binary operator or a comparison, in an `operand (operator operand)*`
/// run of the grammar.
#[doc(hidden)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    Bin(BinOp),
    Cmp(CmpOp),
}

/// One `operator operand` of such a run; `span` is the operand's, with its
/// parentheses.
#[doc(hidden)]
#[derive(Debug)]
pub struct Operation {
    pub op: Op,
    pub span: Span,
    pub operand: Expr,
}

/// Python's binding strength of the binary operators (all left-assoc).
fn precedence(op: BinOp) -> u8 {
    match op {
        BinOp::BitOr => 1,
        BinOp::BitXor => 2,
        BinOp::BitAnd => 3,
        BinOp::LShift | BinOp::RShift => 4,
        BinOp::Add | BinOp::Sub => 5,
        BinOp::Mul | BinOp::Div | BinOp::FloorDiv | BinOp::Mod | BinOp::MatMul => 6,
        // `**` is not in these runs (the grammar makes it right-assoc).
        BinOp::Pow => 7,
    }
}

/// Builds the tree of `first (operator operand)*` by precedence: binary
/// operators by their strength (left-assoc), then comparisons, the
/// weakest, as one chained `Compare`. Spans run from the first operand's
/// start to the last one's end, parentheses included, as a grammar level
/// per operator would give.
pub(crate) fn climb(first: Expr, l: usize, r: usize, mut rest: Vec<Operation>) -> Expr {
    if rest.is_empty() {
        return first;
    }
    // The common shapes, without the general machinery: `a OP b`, and runs
    // of binary operators without comparisons.
    if rest.len() == 1 {
        let Some(operation) = rest.pop() else {
            return first;
        };
        let span = sp(l, r).to(operation.span);
        let kind = match operation.op {
            Op::Bin(op) => ExprKind::BinOp {
                op,
                left: Box::new(first),
                right: Box::new(operation.operand),
            },
            Op::Cmp(op) => ExprKind::Compare {
                left: Box::new(first),
                ops: Box::new([(op, operation.operand)]),
            },
        };
        return Expr { kind, span };
    }
    if rest
        .iter()
        .all(|operation| matches!(operation.op, Op::Bin(_)))
    {
        return binary_tree(sp(l, r), first, rest).1;
    }
    // Split into comparison-separated segments of binary operations.
    let mut segments: Vec<(Option<CmpOp>, Span, Expr, Vec<Operation>)> =
        vec![(None, sp(l, r), first, Vec::new())];
    for operation in rest {
        match operation.op {
            Op::Cmp(cmp) => {
                segments.push((Some(cmp), operation.span, operation.operand, Vec::new()))
            }
            Op::Bin(_) => {
                if let Some(last) = segments.last_mut() {
                    last.3.push(operation);
                }
            }
        }
    }
    let mut built: Vec<(Option<CmpOp>, Span, Expr)> = segments
        .into_iter()
        .map(|(cmp, span, first, operations)| {
            let (span, e) = binary_tree(span, first, operations);
            (cmp, span, e)
        })
        .collect();
    if built.len() == 1 {
        return match built.pop() {
            Some((_, _, e)) => e,
            None => expr(ExprKind::None, l, r),
        };
    }
    let mut built = built.into_iter();
    let Some((_, left_span, left)) = built.next() else {
        return expr(ExprKind::None, l, r);
    };
    let mut end = left_span.end;
    let ops: Vec<(CmpOp, Expr)> = built
        .map(|(cmp, span, e)| {
            end = span.end;
            (cmp.unwrap_or(CmpOp::Eq), e)
        })
        .collect();
    Expr {
        kind: ExprKind::Compare {
            left: Box::new(left),
            ops: ops.into_boxed_slice(),
        },
        span: Span {
            start: left_span.start,
            end,
        },
    }
}

/// Shunting-yard over one run of binary operators (no recursion: runs can
/// be long).
fn binary_tree(first_span: Span, first: Expr, operations: Vec<Operation>) -> (Span, Expr) {
    fn reduce(operands: &mut Vec<(Span, Expr)>, ops: &mut Vec<BinOp>) {
        let (Some(op), Some((right_span, right)), Some((left_span, left))) =
            (ops.pop(), operands.pop(), operands.pop())
        else {
            return;
        };
        let span = left_span.to(right_span);
        operands.push((
            span,
            Expr {
                kind: ExprKind::BinOp {
                    op,
                    left: Box::new(left),
                    right: Box::new(right),
                },
                span,
            },
        ));
    }
    let mut operands = Vec::with_capacity(operations.len() + 1);
    operands.push((first_span, first));
    let mut ops: Vec<BinOp> = Vec::with_capacity(operations.len());
    for operation in operations {
        let Op::Bin(op) = operation.op else {
            continue;
        };
        while ops
            .last()
            .is_some_and(|&top| precedence(top) >= precedence(op))
        {
            reduce(&mut operands, &mut ops);
        }
        ops.push(op);
        operands.push((operation.span, operation.operand));
    }
    while !ops.is_empty() {
        reduce(&mut operands, &mut ops);
    }
    match operands.pop() {
        Some(result) => result,
        None => (first_span, expr(ExprKind::None, 0, 0)),
    }
}

/// Where an expression is used as a target (or not), for `check_target`.
#[doc(hidden)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TargetUse {
    ExpressionStatement,
    Assign,
    AugAssign,
    AnnAssign,
    For,
    With,
    Comprehension,
}

type ActionResult<'a, T> = Result<T, ParseError<usize, Tok<'a>, SyntaxError>>;

fn user_error<'a, T>(error: SyntaxError) -> ActionResult<'a, T> {
    Err(ParseError::User { error })
}

pub(crate) fn sp(l: usize, r: usize) -> Span {
    Span::new(l, r.max(l))
}

pub(crate) fn expr(kind: ExprKind, l: usize, r: usize) -> Expr {
    Expr {
        kind,
        span: sp(l, r),
    }
}

pub(crate) fn stmt(kind: StmtKind, l: usize, r: usize) -> Box<Stmt> {
    Box::new(Stmt {
        kind,
        span: sp(l, r),
    })
}

/// The text of an identifier, shared with the parse's recent occurrences
/// of the same name (`NAMES`; `Name` clones are pointer copies). A place
/// keeps its name's hash, so that a different name there is told apart
/// without reading its text (at a million names, that read was a cache
/// miss at most identifiers).
pub(crate) fn name(text: &str) -> Name {
    use std::hash::BuildHasher;
    let hash = rustc_hash::FxBuildHasher.hash_one(text);
    let at = (hash >> (64 - RECENT_NAMES_BITS)) as usize;
    NAMES.with(|names| {
        let mut names = names.borrow_mut();
        if names.is_empty() {
            names.resize(1 << RECENT_NAMES_BITS, None);
        }
        let at = at & (names.len() - 1);
        match &mut names[at] {
            Some((h, n)) if *h == hash && same_text(n.as_str(), text) => n.clone(),
            place => place.insert((hash, Name::new(text))).1.clone(),
        }
    })
}

/// `a == b`, compared in place: identifiers are short, and `==` on `str`
/// calls `memcmp` (4% of a 1M-statement check's samples).
#[inline]
pub(crate) fn same_text(a: &str, b: &str) -> bool {
    a.len() == b.len() && a.bytes().zip(b.bytes()).all(|(x, y)| x == y)
}

/// log2 of the most places in `NAMES`.
const RECENT_NAMES_BITS: u32 = 12;

thread_local! {
    /// The names the parse in progress made lately, one place per hash: an
    /// identifier seen again while its place still holds it shares its
    /// allocation (names are mostly used a few lines after they are bound,
    /// and `torch` or a parameter stays put). A bounded cache, not a set of
    /// every name: at a million distinct names a set was a growing,
    /// cache-missing table (issue 8). Emptied when the parse ends.
    static NAMES: std::cell::RefCell<Vec<Option<(u64, Name)>>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Makes `NAMES` ready for a parse of `bytes` of text: a place per 16
/// bytes, from 256 to `1 << RECENT_NAMES_BITS` (a small file does not pay
/// for zeroing a big cache).
fn begin_names(bytes: usize) {
    let places = (bytes / 16)
        .next_power_of_two()
        .clamp(256, 1 << RECENT_NAMES_BITS);
    NAMES.with(|names| *names.borrow_mut() = vec![None; places]);
}

/// Forgets the names of the parse that ended (the tree keeps its own).
fn end_names() {
    NAMES.with(|names| *names.borrow_mut() = Vec::new());
}

pub(crate) fn ident(text: &str, l: usize, r: usize) -> Ident {
    Ident {
        name: name(text),
        span: sp(l, r),
    }
}

pub(crate) fn bin(op: BinOp, left: Expr, right: Expr, l: usize, r: usize) -> Expr {
    expr(
        ExprKind::BinOp {
            op,
            left: Box::new(left),
            right: Box::new(right),
        },
        l,
        r,
    )
}

pub(crate) fn unary(op: UnaryOp, operand: Expr, l: usize, r: usize) -> Expr {
    expr(
        ExprKind::UnaryOp {
            op,
            operand: Box::new(operand),
        },
        l,
        r,
    )
}

pub(crate) fn concat_strings(parts: Vec<String>) -> String {
    if parts.len() == 1 {
        parts.into_iter().next().unwrap_or_default()
    } else {
        parts.concat()
    }
}

/// `( e )`: a tuple takes the span of its parentheses; a grouped expression
/// keeps its own.
pub(crate) fn tuple_or_list_span(mut e: Expr, l: usize, r: usize) -> Expr {
    if matches!(e.kind, ExprKind::Tuple(_)) {
        e.span = sp(l, r);
    }
    e
}

/// The end of a compound statement: the end of its last nested statement.
pub(crate) fn block_end(body: &[Stmt], orelse: &[Stmt], header_end: usize) -> usize {
    orelse
        .last()
        .or(body.last())
        .map_or(header_end, |s| s.span.end as usize)
}

/// The statements of one line, without a vector for the usual single one.
#[doc(hidden)]
#[derive(Debug)]
pub enum LineStmts {
    One(Box<Stmt>),
    Many(Vec<Stmt>),
}

impl LineStmts {
    // Statements travel boxed on the parser's stack (see the grammar).
    #[allow(clippy::boxed_local)]
    pub(crate) fn push(&mut self, stmt: Box<Stmt>) {
        match self {
            LineStmts::Many(stmts) => stmts.push(*stmt),
            LineStmts::One(_) => {
                let LineStmts::One(first) =
                    std::mem::replace(self, LineStmts::Many(Vec::with_capacity(2)))
                else {
                    return;
                };
                if let LineStmts::Many(stmts) = self {
                    stmts.push(*first);
                    stmts.push(*stmt);
                }
            }
        }
    }

    pub(crate) fn append_to(self, block: &mut Vec<Stmt>) {
        match self {
            LineStmts::One(stmt) => block.push(*stmt),
            LineStmts::Many(stmts) => block.extend(stmts),
        }
    }

    pub(crate) fn into_vec(self) -> Vec<Stmt> {
        match self {
            LineStmts::One(stmt) => vec![*stmt],
            LineStmts::Many(stmts) => stmts,
        }
    }
}

/// Call arguments as the grammar collects them: positional and keyword
/// ones apart, and the first misuse (checked when the call is built).
#[doc(hidden)]
#[derive(Debug, Default)]
pub struct ArgList {
    args: Vec<Expr>,
    keywords: Vec<Keyword>,
    error: Option<Box<SyntaxError>>,
}

impl ArgList {
    pub(crate) fn add(&mut self, argument: Arg) {
        if self.error.is_some() {
            return;
        }
        let error = match argument {
            Arg::Positional(e) => match self.keywords.last() {
                Some(keyword) if !matches!(e.kind, ExprKind::Starred(_)) => {
                    Some(SyntaxError::invalid(
                        e.span,
                        "positional argument follows keyword argument",
                        format!("after the keyword argument `{}`", keyword.name.name),
                        Some("put positional arguments before keyword arguments"),
                    ))
                }
                _ => {
                    self.args.push(e);
                    None
                }
            },
            Arg::Keyword(keyword) => {
                if self
                    .keywords
                    .iter()
                    .any(|k| k.name.name == keyword.name.name)
                {
                    Some(SyntaxError::invalid(
                        keyword.name.span,
                        format!("keyword argument repeated: `{}`", keyword.name.name),
                        "given a second time here",
                        None,
                    ))
                } else {
                    self.keywords.push(*keyword);
                    None
                }
            }
            Arg::DoubleStar(span) => Some(SyntaxError::invalid(
                span,
                "`**` arguments are not supported",
                "keyword arguments unpacked from a dict",
                Some("pass each keyword argument by name"),
            )),
            Arg::Generator(span) => Some(SyntaxError::invalid(
                span,
                "generator expressions are not supported",
                "a generator expression",
                Some("use a list comprehension: put the expression in `[...]`"),
            )),
        };
        self.error = error.map(Box::new);
    }
}

pub(crate) fn call<'a>(func: Expr, list: ArgList, l: usize, r: usize) -> ActionResult<'a, Expr> {
    if let Some(error) = list.error {
        return user_error(*error);
    }
    Ok(expr(
        ExprKind::Call(Box::new(Call {
            func,
            args: exact(list.args),
            keywords: exact(list.keywords),
        })),
        l,
        r,
    ))
}

/// `items` in a buffer of exactly their size. A Vec's first push reserves
/// room for four, and shrinking it in place may keep the block (mimalloc
/// keeps a block for a size at least half of it): a big file's tree holds
/// a million argument lists, so they are moved to a buffer of their size.
pub(crate) fn exact<T>(mut items: Vec<T>) -> Box<[T]> {
    if items.capacity() > items.len() {
        let mut sized = Vec::with_capacity(items.len());
        sized.append(&mut items);
        items = sized;
    }
    items.into_boxed_slice()
}

// Parameters travel boxed on the parser's stack (see the grammar).
#[allow(clippy::vec_box)]
pub(crate) fn function_def<'a>(
    name: Ident,
    params: Vec<Box<Param>>,
    returns: Option<Expr>,
    body: Vec<Stmt>,
    l: usize,
    header_end: usize,
) -> ActionResult<'a, Box<FunctionDef>> {
    let params: Vec<Param> = params.into_iter().map(|param| *param).collect();
    let mut seen_default: Option<&Param> = None;
    for (i, param) in params.iter().enumerate() {
        if let Some(earlier) = params[..i].iter().find(|p| p.name.name == param.name.name) {
            let _ = earlier;
            return user_error(SyntaxError::invalid(
                param.name.span,
                format!("duplicate parameter `{}`", param.name.name),
                "this name is already a parameter",
                Some("give each parameter its own name"),
            ));
        }
        match (&param.default, seen_default) {
            (Some(_), _) => seen_default = Some(param),
            (None, Some(with_default)) => {
                return user_error(SyntaxError::invalid(
                    param.span,
                    "parameter without a default follows parameter with a default",
                    format!("`{}` has no default, `{}` before it has one", param.name.name, with_default.name.name),
                    Some("give it a default too (a tensor input may take `= None`), or move it before the defaulted parameters"),
                ));
            }
            (None, None) => {}
        }
    }
    let end = block_end(&body, &[], header_end);
    // The body grew by doubling; a long one would keep up to half its
    // buffer unused for as long as the tree lives.
    let mut body = body;
    body.shrink_to_fit();
    Ok(Box::new(FunctionDef {
        name,
        params,
        returns,
        body,
        locals: Vec::new(),
        bound: Vec::new(),
        resizes: false,
        header_span: sp(l, header_end),
        span: sp(l, end),
    }))
}

/// What an expression is, for "cannot assign to …".
fn expression_noun(kind: &ExprKind) -> &'static str {
    match kind {
        ExprKind::Call { .. } => "a function call",
        ExprKind::Int(_) | ExprKind::Float(_) | ExprKind::Str(_) => "a literal",
        ExprKind::Bool(true) => "`True`",
        ExprKind::Bool(false) => "`False`",
        ExprKind::None => "`None`",
        ExprKind::Ellipsis => "`...`",
        ExprKind::BinOp { .. } | ExprKind::UnaryOp { .. } => "an operator expression",
        ExprKind::BoolOp { .. } => "a boolean expression",
        ExprKind::Compare { .. } => "a comparison",
        ExprKind::IfExp { .. } => "a conditional expression",
        ExprKind::ListComp { .. } => "a list comprehension",
        ExprKind::Slice { .. } => "a slice",
        ExprKind::Starred(_) => "a starred expression",
        ExprKind::Tuple(_) => "a tuple",
        ExprKind::List(_) => "a list",
        ExprKind::Name(..) => "a name",
        ExprKind::Attribute { .. } => "an attribute",
        ExprKind::Subscript { .. } => "a subscript",
    }
}

const TARGET_HELP: &str =
    "a target is a name, an attribute `x.a`, a subscript `x[i]`, or a tuple or list of targets";

/// Checks that `e` may be used as `usage` says (assignment targets above
/// all), as Python's compiler does.
pub(crate) fn check_target<'a>(e: &Expr, usage: TargetUse) -> ActionResult<'a, ()> {
    match usage {
        TargetUse::ExpressionStatement => {
            if let ExprKind::Name(name, _) = &e.kind {
                if let Some(keyword) = PYTHON_ONLY_KEYWORDS.iter().find(|k| **k == name.as_str()) {
                    return user_error(SyntaxError {
                        kind: SyntaxErrorKind::Unsupported(keyword),
                        span: e.span,
                    });
                }
            }
            if let ExprKind::Starred(_) = e.kind {
                return user_error(SyntaxError::invalid(
                    e.span,
                    "a starred expression cannot stand alone",
                    "starred expression",
                    Some("use `*` inside a tuple or list, or in a call's arguments"),
                ));
            }
            Ok(())
        }
        TargetUse::AugAssign | TargetUse::AnnAssign => match e.kind {
            ExprKind::Name(..) | ExprKind::Attribute { .. } | ExprKind::Subscript { .. } => Ok(()),
            ref other => {
                let message = if usage == TargetUse::AugAssign {
                    format!(
                        "{} cannot be the target of an augmented assignment",
                        expression_noun(other)
                    )
                } else {
                    format!("{} cannot be annotated", expression_noun(other))
                };
                user_error(SyntaxError::invalid(
                    e.span,
                    message,
                    "not a single name, attribute or subscript",
                    Some("use a single name, attribute `x.a` or subscript `x[i]`"),
                ))
            }
        },
        _ => {
            if let ExprKind::Starred(_) = e.kind {
                return user_error(SyntaxError::invalid(
                    e.span,
                    "a starred target must be in a tuple or list",
                    "starred target alone",
                    Some("add a comma: `*rest, = ...`, or unpack into names: `a, *rest = ...`"),
                ));
            }
            check_assignable(e)
        }
    }
}

fn check_assignable<'a>(e: &Expr) -> ActionResult<'a, ()> {
    match &e.kind {
        ExprKind::Name(..) | ExprKind::Attribute { .. } | ExprKind::Subscript { .. } => Ok(()),
        ExprKind::Tuple(items) | ExprKind::List(items) => {
            let mut starred = None;
            for item in items {
                match &item.kind {
                    ExprKind::Starred(inner) => {
                        if starred.is_some() {
                            return user_error(SyntaxError::invalid(
                                item.span,
                                "multiple starred targets in one assignment",
                                "a second starred target",
                                Some("only one target of a tuple or list may take the rest"),
                            ));
                        }
                        starred = Some(item.span);
                        check_assignable(inner)?;
                    }
                    _ => check_assignable(item)?,
                }
            }
            Ok(())
        }
        other => {
            let noun = expression_noun(other);
            let help = match other {
                ExprKind::Call { .. } | ExprKind::Compare { .. } => {
                    "to compare values use `==`; an assignment target is a name, an attribute `x.a`, a subscript `x[i]`, or a tuple or list of them"
                }
                _ => TARGET_HELP,
            };
            user_error(SyntaxError::invalid(
                e.span,
                format!("cannot assign to {noun}"),
                format!("{noun} is not a target"),
                Some(help),
            ))
        }
    }
}

// ------------------------------------------------------------------ depth

/// The expressions directly held by an item (its statements' expressions
/// included), for the depth check.
fn item_exprs(item: &Item) -> Vec<&Expr> {
    match item {
        Item::Import(_) => Vec::new(),
        Item::Def(def) => {
            let mut out = Vec::new();
            for param in &def.params {
                out.extend(param.annotation.iter());
                out.extend(param.default.iter());
            }
            out.extend(def.returns.iter());
            for stmt in &def.body {
                out.extend(stmt_exprs(stmt));
            }
            out
        }
    }
}

/// The expressions of a statement and of the statements nested in it.
/// Statement nesting is bounded by the lexer (indentation, `elif`s).
fn stmt_exprs(stmt: &Stmt) -> Vec<&Expr> {
    let mut out = Vec::new();
    fn walk<'s>(stmt: &'s Stmt, out: &mut Vec<&'s Expr>) {
        match &stmt.kind {
            StmtKind::Assign { targets, value } => {
                out.extend(targets.iter());
                out.push(value);
            }
            StmtKind::AugAssign { target, value, .. } => {
                out.push(target);
                out.push(value);
            }
            StmtKind::AnnAssign {
                target,
                annotation,
                value,
            } => {
                out.push(target);
                out.push(annotation);
                out.extend(value.as_deref());
            }
            StmtKind::Expr(e) => out.push(e),
            StmtKind::Return(value) => out.extend(value.iter()),
            StmtKind::With { items, body } => {
                for item in items {
                    out.push(&item.context);
                    out.extend(item.target.iter());
                }
                body.iter().for_each(|s| walk(s, out));
            }
            StmtKind::If { cond, body, orelse } => {
                out.push(cond);
                body.iter().for_each(|s| walk(s, out));
                orelse.iter().for_each(|s| walk(s, out));
            }
            StmtKind::For { target, iter, body } => {
                out.push(target);
                out.push(iter);
                body.iter().for_each(|s| walk(s, out));
            }
            StmtKind::Pass => {}
            StmtKind::Assert { cond, msg } => {
                out.push(cond);
                out.extend(msg.as_deref());
            }
        }
    }
    walk(stmt, &mut out);
    out
}

/// Pushes the direct sub-expressions of `e` on `stack`, one level deeper.
fn push_children<'e>(e: &'e Expr, depth: usize, stack: &mut Vec<(&'e Expr, usize)>) {
    let mut push = |child: &'e Expr| stack.push((child, depth + 1));
    match &e.kind {
        ExprKind::Name(..)
        | ExprKind::Int(_)
        | ExprKind::Float(_)
        | ExprKind::Str(_)
        | ExprKind::Bool(_)
        | ExprKind::None
        | ExprKind::Ellipsis => {}
        ExprKind::Tuple(items) | ExprKind::List(items) => items.iter().for_each(push),
        ExprKind::Starred(inner) => push(inner),
        ExprKind::Attribute { value, .. } => push(value),
        ExprKind::Call(call) => {
            push(&call.func);
            call.args.iter().for_each(&mut push);
            call.keywords.iter().for_each(|k| push(&k.value));
        }
        ExprKind::Subscript { value, index } => {
            push(value);
            push(index);
        }
        ExprKind::Slice { lower, upper, step } => {
            [lower, upper, step]
                .into_iter()
                .flatten()
                .for_each(|b| push(b));
        }
        ExprKind::BinOp { left, right, .. } => {
            push(left);
            push(right);
        }
        ExprKind::UnaryOp { operand, .. } => push(operand),
        ExprKind::BoolOp { values, .. } => values.iter().for_each(push),
        ExprKind::Compare { left, ops } => {
            push(left);
            ops.iter().for_each(|(_, e)| push(e));
        }
        ExprKind::IfExp { cond, body, orelse } => {
            push(cond);
            push(body);
            push(orelse);
        }
        ExprKind::ListComp(comp) => {
            push(&comp.elt);
            push(&comp.target);
            push(&comp.iter);
            if let Some(cond) = &comp.cond {
                push(cond);
            }
        }
    }
}

/// The span of an expression deeper than `MAX_EXPR_DEPTH`, if any. Walks
/// with an explicit stack: it must not recurse over what it measures.
fn too_deep<'e>(roots: impl Iterator<Item = &'e Expr>) -> Option<Span> {
    let mut stack: Vec<(&Expr, usize)> = Vec::new();
    for root in roots {
        stack.push((root, 1));
        while let Some((e, depth)) = stack.pop() {
            if depth > MAX_EXPR_DEPTH {
                return Some(e.span);
            }
            push_children(e, depth, &mut stack);
        }
    }
    None
}

/// Drops an expression without recursion (a deep tree would overflow the
/// stack in the compiler-generated recursive drop).
fn dismantle_expr(e: Expr) {
    let mut stack = vec![e];
    while let Some(e) = stack.pop() {
        match e.kind {
            ExprKind::Name(..)
            | ExprKind::Int(_)
            | ExprKind::Float(_)
            | ExprKind::Str(_)
            | ExprKind::Bool(_)
            | ExprKind::None
            | ExprKind::Ellipsis => {}
            ExprKind::Tuple(items) | ExprKind::List(items) => stack.extend(items),
            ExprKind::Starred(inner) => stack.push(*inner),
            ExprKind::Attribute { value, .. } => stack.push(*value),
            ExprKind::Call(call) => {
                let Call {
                    func,
                    args,
                    keywords,
                } = *call;
                stack.push(func);
                stack.extend(args.into_vec());
                stack.extend(keywords.into_vec().into_iter().map(|k| k.value));
            }
            ExprKind::Subscript { value, index } => {
                stack.push(*value);
                stack.push(*index);
            }
            ExprKind::Slice { lower, upper, step } => {
                stack.extend([lower, upper, step].into_iter().flatten().map(|b| *b));
            }
            ExprKind::BinOp { left, right, .. } => {
                stack.push(*left);
                stack.push(*right);
            }
            ExprKind::UnaryOp { operand, .. } => stack.push(*operand),
            ExprKind::BoolOp { values, .. } => stack.extend(values.into_vec()),
            ExprKind::Compare { left, ops } => {
                stack.push(*left);
                stack.extend(ops.into_vec().into_iter().map(|(_, e)| e));
            }
            ExprKind::IfExp { cond, body, orelse } => {
                stack.push(*cond);
                stack.push(*body);
                stack.push(*orelse);
            }
            ExprKind::ListComp(comp) => {
                let ListComp {
                    elt,
                    target,
                    iter,
                    cond,
                } = *comp;
                stack.push(elt);
                stack.push(target);
                stack.push(iter);
                stack.extend(cond);
            }
        }
    }
}

fn dismantle_stmt(stmt: Stmt) {
    match stmt.kind {
        StmtKind::Assign { targets, value } => {
            targets.into_vec().into_iter().for_each(dismantle_expr);
            dismantle_expr(value);
        }
        StmtKind::AugAssign { target, value, .. } => {
            dismantle_expr(*target);
            dismantle_expr(value);
        }
        StmtKind::AnnAssign {
            target,
            annotation,
            value,
        } => {
            dismantle_expr(*target);
            dismantle_expr(*annotation);
            value.into_iter().for_each(|v| dismantle_expr(*v));
        }
        StmtKind::Expr(e) => dismantle_expr(e),
        StmtKind::Return(value) => value.into_iter().for_each(dismantle_expr),
        StmtKind::With { items, body } => {
            for item in items {
                dismantle_expr(item.context);
                item.target.into_iter().for_each(dismantle_expr);
            }
            body.into_iter().for_each(dismantle_stmt);
        }
        StmtKind::If { cond, body, orelse } => {
            dismantle_expr(*cond);
            body.into_iter().for_each(dismantle_stmt);
            orelse.into_iter().for_each(dismantle_stmt);
        }
        StmtKind::For { target, iter, body } => {
            dismantle_expr(*target);
            dismantle_expr(*iter);
            body.into_iter().for_each(dismantle_stmt);
        }
        StmtKind::Pass => {}
        StmtKind::Assert { cond, msg } => {
            dismantle_expr(cond);
            msg.into_iter().for_each(|m| dismantle_expr(*m));
        }
    }
}

fn dismantle_item(item: Item) {
    if let Item::Def(def) = item {
        for param in def.params {
            param.annotation.into_iter().for_each(dismantle_expr);
            param.default.into_iter().for_each(dismantle_expr);
        }
        def.returns.into_iter().for_each(dismantle_expr);
        def.body.into_iter().for_each(dismantle_stmt);
    }
}

fn dismantle_line(line: Line) {
    match line {
        Line::Item(item) => dismantle_item(*item),
        Line::Stmts(stmts) => stmts.into_iter().for_each(dismantle_stmt),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parses(text: &str) -> Module {
        match parse_module(text) {
            Ok(module) => module,
            Err(diagnostics) => panic!("{text:?} did not parse: {diagnostics:#?}"),
        }
    }

    fn first_error(text: &str) -> Diagnostic {
        match parse_module(text) {
            Ok(_) => panic!("{text:?} parsed"),
            Err(mut diagnostics) => diagnostics.remove(0),
        }
    }

    /// Programs whose lines make every kind of place a region could start:
    /// blocks in blocks, `elif`/`else`, brackets and strings over several
    /// lines, `\\` continuations, comments, blank lines, top-level
    /// statements (as the REPL has), a last line with no newline.
    const SPLIT_PROGRAMS: &[&str] = &[
        "import torch\n\ndef f(x: Tensor(4)):\n    y = x + 1\n    if y.dim() > 0:\n        y.add_(1)\n        z = y * 2\n    elif x.dim() == 2:\n        z = x\n    else:\n        z = y\n\n    # a comment\n    for i in range(2):\n        with torch.no_grad():\n            x.mul_(2)\n    return z\n\ndef g(a: Tensor(2)):\n    return a.t()\n",
        "def f(x: Tensor(4)):\n    y = torch.cat([x,\nx,\n    x], dim=0)\n    s = \"\"\"text\ndef g():\n    y = 1\n\"\"\"\n    z = y + \\\n1\n    w = (y\n  + z)\n    return w\nx = 1\ny = [x,\n  x]\nz = y",
        "def f(x: Tensor(4)):\r\n    if x.dim() == 1:\r\n        a = 1\r\n        if a:\r\n            b = 2\r\n        else:\r\n            b = 3\r\n    c = 4; d = 5\r\n\r\n    return x\r\n",
        "def f(x: Tensor(4)):\n    a = 1\n  b = 2\n    c = 3\n",
        "def f(x: Tensor(4)):\n    a = (1\n    b = 2\n    return a\n",
        "def f(x: Tensor(4)):\n    def g():\n        pass\n    return x\ndef h():\n    return 1 +\n",
    ];

    /// The lines of a parse in one piece, as text.
    fn whole(text: &str) -> String {
        let mut diagnostics = Vec::new();
        let (lines, _) = parse_lines(text, 1, &mut diagnostics);
        format!("{lines:?}")
    }

    /// The line starts of `text` and their indentation (as `region_line`
    /// counts it).
    fn line_starts(text: &str) -> Vec<(usize, usize)> {
        let bytes = text.as_bytes();
        (1..bytes.len())
            .filter(|&at| bytes[at - 1] == b'\n')
            .map(|at| (at, bytes[at..].iter().take_while(|&&b| b == b' ').count()))
            .collect()
    }

    /// Every way of cutting a program into regions gives the tree of the
    /// parse in one piece, or no tree (the file is then parsed in one
    /// piece): one region at any line, with the right or a wrong width,
    /// and two regions at any two lines.
    #[test]
    fn any_regions_give_the_whole_parse_or_none() {
        for text in SPLIT_PROGRAMS {
            let expected = whole(text);
            let starts = line_starts(text);
            let mut split = 0;
            let mut check = |regions: Vec<Region>| {
                if let Some((lines, _)) = parse_regions(text, regions.clone()) {
                    let got = format!("{:?}", Some(lines));
                    assert_eq!(got, expected, "{text:?} cut at {regions:?}");
                    split += 1;
                }
                end_names();
            };
            for &(start, width) in &starts {
                for width in [width, width + 1, width.saturating_sub(1), width + 4] {
                    let stop = usize::MAX;
                    check(vec![Region { start, width, stop }]);
                }
            }
            for (i, &(start, width)) in starts.iter().enumerate() {
                for &(next, next_width) in &starts[i + 1..] {
                    check(vec![
                        Region {
                            start,
                            width,
                            stop: next,
                        },
                        Region {
                            start: next,
                            width: next_width,
                            stop: usize::MAX,
                        },
                    ]);
                }
            }
            if expected.starts_with("Some") {
                assert!(split > 0, "{text:?} was never parsed in parts");
            } else {
                assert_eq!(split, 0, "{text:?} has errors but parsed in parts");
            }
        }
    }

    /// A program of `functions` functions of `statements` lines each.
    fn big_program(functions: usize, statements: usize) -> String {
        let mut text = String::from("import torch\n");
        for f in 0..functions {
            text.push_str(&format!("def f{f}(x: Tensor(4)):\n"));
            for i in 0..statements {
                text.push_str(&format!("    y{i} = x.view(2, 2) * {i}\n"));
                if i % 7 == 0 {
                    text.push_str(
                        "    if x.dim() > 1:\n        x.add_(1)\n    else:\n        pass\n",
                    );
                }
            }
            text.push_str("    return x\n");
        }
        text
    }

    /// A big file is cut where `split_regions` says, at top-level lines
    /// when there are several functions, and inside the block of one, and
    /// parses as in one piece.
    #[test]
    fn big_files_parse_in_parts_as_in_one() {
        let text = big_program(40, 50);
        let expected = whole(&text);
        for parts in 2..=5 {
            let regions = split_regions(&text, parts);
            assert_eq!(regions.len(), parts - 1, "{regions:?}");
            assert!(
                regions.iter().all(|region| region.width == 0),
                "{regions:?}"
            );
            let (lines, _) = parse_regions(&text, regions).expect("parses in parts");
            assert_eq!(format!("{:?}", Some(lines)), expected);
            end_names();
        }
        let text = big_program(1, 2000);
        let expected = whole(&text);
        let regions = split_regions(&text, 3);
        assert_eq!(regions.len(), 2, "{regions:?}");
        assert!(
            regions.iter().all(|region| region.width == 4),
            "{regions:?}"
        );
        let (lines, _) = parse_regions(&text, regions).expect("parses in parts");
        assert_eq!(format!("{:?}", Some(lines)), expected);
    }

    #[test]
    fn parses_a_first_program() {
        let module = parses(
            "import torch\n\ndef f(x: Tensor(4, 8, requires_grad=True), w: Tensor(8)):\n    \
             rows = x.view(2, 16)\n    w.mul_(2)\n    with torch.no_grad():\n        x.add_(1)\n    \
             return rows, x.t(), (x * w).sum()\n",
        );
        assert_eq!(module.items.len(), 2);
    }

    #[test]
    fn precedence() {
        let module = parses("def f():\n    return -x ** 2\n");
        let Item::Def(def) = &module.items[0] else {
            panic!()
        };
        let StmtKind::Return(Some(e)) = &def.body[0].kind else {
            panic!()
        };
        assert!(matches!(
            e.kind,
            ExprKind::UnaryOp {
                op: UnaryOp::Neg,
                ..
            }
        ));
    }

    #[test]
    fn errors_are_worded() {
        assert_eq!(
            first_error("def f():\nreturn 1\n").message,
            "expected an indented block after the function definition on line 1"
        );
        assert_eq!(
            first_error("def f(:\n    pass\n").message,
            "expected a name or `)`, found `:`"
        );
        assert_eq!(
            first_error("def f():\n    x = (1 + 2\n").message,
            "unclosed `(`"
        );
        assert_eq!(
            first_error("def f():\n    x = 1)\n").message,
            "unexpected `)`"
        );
        assert_eq!(
            first_error("def f():\n    while x:\n        pass\n").code,
            "unsupported"
        );
    }

    #[test]
    fn incomplete_repl_input() {
        assert!(needs_more_input("def f(x):\n"));
        assert!(needs_more_input("x = (1,\n"));
        assert!(needs_more_input("s = \"\"\"doc\n"));
        assert!(!needs_more_input("x = 1\n"));
        assert!(!needs_more_input("x = )\n"));
        assert!(!needs_more_input("if x:\n    y = 1\n"));
    }

    #[test]
    fn interactive_input_mixes_items_and_statements() {
        let entries =
            parse_interactive("import torch\nx: Tensor(4)\ny = x + 1\ndef f(t):\n    return t\n")
                .unwrap_or_else(|d| panic!("{d:#?}"));
        assert_eq!(entries.len(), 4);
        assert!(matches!(
            entries[1],
            Entry::Stmt(Stmt {
                kind: StmtKind::AnnAssign { .. },
                ..
            })
        ));
    }

    #[test]
    fn deep_input_is_an_error_not_a_crash() {
        let parens = format!(
            "def f():\n    x = {}1{}\n",
            "(".repeat(5000),
            ")".repeat(5000)
        );
        assert!(parse_module(&parens).is_err());
        let chain = format!("def f():\n    x = a{}\n", " + a".repeat(50_000));
        assert!(parse_module(&chain).is_err());
        let chain = format!("def f():\n    x = a{}\n", " + a".repeat(500));
        assert!(parse_module(&chain).is_err());
    }
}
