//! Rendering diagnostics for people: the only user of ariadne, so that an
//! upgrade touches this file alone.
//!
//! `render` draws one [`Diagnostic`] as an ariadne report (header
//! `error[code]: message`, the source snippet with the primary label and
//! the secondary ones, notes, a help line); `one_line` gives the compact
//! `file:line:col: error[code]: message` form. Nothing here prints: the CLI
//! and the REPL decide where the text goes, and whether it has colour
//! (`use_color`).

use crate::report::{Diagnostic, Severity};
use crate::syntax::{SourceFile, Span};
use ariadne::{Color, Config, IndexType, Label, Report, ReportKind, Source};
use std::ops::Range;

/// Whether to colour output going to a stream: only on a terminal, and
/// never when `NO_COLOR` is set to a non-empty value (no-color.org).
pub fn use_color(stream_is_terminal: bool) -> bool {
    stream_is_terminal && std::env::var_os("NO_COLOR").is_none_or(|value| value.is_empty())
}

/// The ariadne report of one diagnostic, ending with a newline.
pub fn render(diag: &Diagnostic, file: &SourceFile, color: bool) -> String {
    let header = format!("{}[{}]", diag.severity.as_str(), diag.code);
    render_with_header(&header, diag, file, color)
}

/// Texts at least this long are not given to ariadne whole: a report
/// shows a few lines of them (`View`).
const SHARED_SOURCE_BYTES: usize = 1 << 16;

/// How many reports of one big text see only their own lines; later ones
/// share a table of all its lines (`shared_source`).
const WINDOWED_REPORTS: u32 = 8;

/// The characters ariadne ends lines at besides `\r` and `\n`
/// (`Source::from`). Python does not (nor do tpi's `file:line`s); a text
/// goes to ariadne with each of them as spaces of the same byte length, so
/// that both number lines alike and byte offsets stay.
const OTHER_SEPARATORS: [char; 5] = ['\x0B', '\x0C', '\u{0085}', '\u{2028}', '\u{2029}'];

/// `text` as ariadne should read it (`OTHER_SEPARATORS` made spaces).
fn for_ariadne(text: &str) -> std::borrow::Cow<'_, str> {
    let bytes = text.as_bytes();
    let [vt, ff, wide @ ..] = OTHER_SEPARATORS;
    let any = memchr::memchr2(vt as u8, ff as u8, bytes).is_some()
        || wide
            .iter()
            .any(|c| memchr::memmem::find(bytes, c.encode_utf8(&mut [0; 4]).as_bytes()).is_some());
    if !any {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if OTHER_SEPARATORS.contains(&c) {
            out.extend(std::iter::repeat_n(' ', c.len_utf8()));
        } else {
            out.push(c);
        }
    }
    std::borrow::Cow::Owned(out)
}

thread_local! {
    /// ariadne's view of the last big text rendered on this thread.
    static LAST_SOURCE: std::cell::RefCell<Option<std::rc::Rc<Source<String>>>> =
        const { std::cell::RefCell::new(None) };
    /// The big text (address and length) last rendered on this thread, and
    /// how many of its reports have been windowed.
    static WINDOWED: std::cell::Cell<(usize, usize, u32)> = const { std::cell::Cell::new((0, 0, 0)) };
}

/// ariadne's view of `text`: the text and its table of lines, which
/// `Source::from` builds by scanning the whole text. Once a big text has
/// had `WINDOWED_REPORTS` reports, the table is kept (with its own copy of
/// the text, compared in full before reuse) instead of being built again
/// per diagnostic: 50 diagnostics in a 100k-line file took 0.3 s of
/// scanning.
fn shared_source(text: &str) -> std::rc::Rc<Source<String>> {
    LAST_SOURCE.with(|last| {
        let mut last = last.borrow_mut();
        match &*last {
            Some(source) if source.text() == text => source.clone(),
            _ => {
                let source = std::rc::Rc::new(Source::from(for_ariadne(text).into_owned()));
                *last = Some(source.clone());
                source
            }
        }
    })
}

/// What ariadne reads for one report.
enum View<'t> {
    /// A small text, whole.
    Text(Source<std::borrow::Cow<'t, str>>),
    /// A big text's shared table (`shared_source`).
    Shared(std::rc::Rc<Source<String>>),
    /// The lines of a big text from the report's first label to its last,
    /// after `blank` empty lines that stand for the `start` bytes before
    /// them, so that ariadne numbers every line as in the whole text.
    /// Building ariadne's table of a 32 MB file's lines took longer than
    /// the rest of its report.
    Window {
        source: Source<String>,
        start: usize,
        blank: usize,
    },
}

impl<'t> View<'t> {
    /// The view of `file`'s text for a report whose labels lie within
    /// `lo..hi`.
    fn of(file: &'t SourceFile, lo: usize, hi: usize) -> View<'t> {
        let text = file.text.as_str();
        if text.len() < SHARED_SOURCE_BYTES {
            return View::Text(Source::from(for_ariadne(text)));
        }
        let key = (text.as_ptr() as usize, text.len());
        let windowed = WINDOWED.with(|cell| {
            let (ptr, len, count) = cell.get();
            let count = if (ptr, len) == key { count + 1 } else { 1 };
            cell.set((key.0, key.1, count));
            count
        });
        if windowed > WINDOWED_REPORTS {
            return View::Shared(shared_source(text));
        }
        let (lines_before, start) = file.line_start(lo);
        let hi = hi.clamp(start, text.len());
        let end = memchr::memchr(b'\n', &text.as_bytes()[hi..]).map_or(text.len(), |i| hi + i + 1);
        let blank = lines_before;
        let mut shown = String::with_capacity(blank + end - start);
        shown.extend(std::iter::repeat_n('\n', blank));
        shown.push_str(&for_ariadne(&text[start..end]));
        View::Window {
            source: Source::from(shown),
            start,
            blank,
        }
    }

    /// Where a byte range of the text lies in what ariadne reads.
    fn range(&self, range: Range<usize>) -> Range<usize> {
        match self {
            View::Window { start, blank, .. } => {
                range.start - start + blank..range.end - start + blank
            }
            _ => range,
        }
    }
}

/// The same report under another header than `error[code]` (the numbered
/// steps of `tpi explain`: `step 2`).
pub fn render_with_header(
    header: &str,
    diag: &Diagnostic,
    file: &SourceFile,
    color: bool,
) -> String {
    let text = file.text.as_str();
    let name = file.name.as_str();
    let severity_color = match diag.severity {
        Severity::Error => Color::Red,
        Severity::Warning => Color::Yellow,
        Severity::Note => Color::Cyan,
    };
    // Labels go in source order: ariadne starts a new snippet whenever a
    // label lies on an earlier line than the one before it.
    let mut labels: Vec<(Range<usize>, &str, Color)> = vec![(
        visible(diag.primary.span, text),
        primary_message(diag),
        severity_color,
    )];
    for secondary in &diag.secondary {
        labels.push((
            visible(secondary.span, text),
            secondary.message.as_str(),
            Color::Blue,
        ));
    }
    let lo = labels.iter().map(|(r, _, _)| r.start).min().unwrap_or(0);
    let hi = labels.iter().map(|(r, _, _)| r.end).max().unwrap_or(0);
    let view = View::of(file, lo, hi);
    let primary = view.range(labels[0].0.clone());
    labels.sort_by_key(|(range, _, _)| range.start);
    let config = Config::default()
        .with_index_type(IndexType::Byte)
        .with_color(color);
    let mut builder = Report::build(ReportKind::Custom(header, severity_color), (name, primary))
        .with_config(config)
        .with_message(&diag.message);
    for (range, message, label_color) in labels {
        let mut label = Label::new((name, view.range(range))).with_color(label_color);
        if !message.is_empty() {
            label = label.with_message(message);
        }
        builder = builder.with_label(label);
    }
    builder = with_notes_and_help(builder, diag);
    let report = builder.finish();
    let mut out = Vec::new();
    let written = match &view {
        View::Text(source) => report.write((name, source), &mut out),
        View::Shared(source) => report.write((name, &**source), &mut out),
        View::Window { source, .. } => report.write((name, source), &mut out),
    };
    match written {
        // ariadne colours a custom header even when colour is off.
        Ok(()) if !color => strip_ansi(&String::from_utf8_lossy(&out)),
        Ok(()) => String::from_utf8_lossy(&out).into_owned(),
        // Writing to a Vec cannot fail; should ariadne still refuse, the
        // one-line form says the essentials.
        Err(_) => one_line(diag, file) + "\n",
    }
}

/// The ariadne report of a diagnostic whose spans lie in several sources:
/// the REPL runs a program put together from many inputs (`<repl:3>`,
/// `<repl:5>`, a loaded file), and `locate` tells, for a span of that
/// program, which source it lies in and where. Each source with a label
/// gets its own snippet.
pub fn render_located<'s>(
    diag: &Diagnostic,
    locate: &dyn Fn(Span) -> (&'s SourceFile, Span),
    color: bool,
) -> String {
    let header = format!("{}[{}]", diag.severity.as_str(), diag.code);
    let severity_color = match diag.severity {
        Severity::Error => Color::Red,
        Severity::Warning => Color::Yellow,
        Severity::Note => Color::Cyan,
    };
    let (primary_file, primary_span) = locate(diag.primary.span);
    let primary = visible(primary_span, &primary_file.text);
    let config = Config::default()
        .with_index_type(IndexType::Byte)
        .with_color(color);
    let mut builder = Report::build(
        ReportKind::Custom(&header, severity_color),
        (primary_file.name.clone(), primary.clone()),
    )
    .with_config(config)
    .with_message(&diag.message);
    let mut files: Vec<&SourceFile> = vec![primary_file];
    let mut labels: Vec<(usize, Range<usize>, &str, Color)> =
        vec![(0, primary, primary_message(diag), severity_color)];
    for secondary in &diag.secondary {
        let (file, span) = locate(secondary.span);
        let index = match files.iter().position(|f| f.name == file.name) {
            Some(index) => index,
            None => {
                files.push(file);
                files.len() - 1
            }
        };
        labels.push((
            index,
            visible(span, &file.text),
            secondary.message.as_str(),
            Color::Blue,
        ));
    }
    // Source order within each source (see `render`).
    labels.sort_by_key(|(index, range, _, _)| (*index, range.start));
    for (index, range, message, label_color) in labels {
        let mut label = Label::new((files[index].name.clone(), range)).with_color(label_color);
        if !message.is_empty() {
            label = label.with_message(message);
        }
        builder = builder.with_label(label);
    }
    builder = with_notes_and_help(builder, diag);
    let cache = ariadne::sources(
        files
            .iter()
            .map(|f| (f.name.clone(), for_ariadne(&f.text).into_owned())),
    );
    let mut out = Vec::new();
    match builder.finish().write(cache, &mut out) {
        Ok(()) if !color => strip_ansi(&String::from_utf8_lossy(&out)),
        Ok(()) => String::from_utf8_lossy(&out).into_owned(),
        Err(_) => {
            one_line(
                &Diagnostic {
                    primary: crate::report::Label {
                        span: primary_span,
                        message: String::new(),
                    },
                    ..diag.clone()
                },
                primary_file,
            ) + "\n"
        }
    }
}

/// `file:line:col: error[code]: message` (no trailing newline).
pub fn one_line(diag: &Diagnostic, file: &SourceFile) -> String {
    let (line, col) = file.line_col(diag.primary.span.start);
    format!(
        "{}:{}:{}: {}[{}]: {}",
        file.name,
        line,
        col,
        diag.severity.as_str(),
        diag.code,
        diag.message
    )
}

/// `text` without ANSI escape sequences (`ESC [ … letter`).
fn strip_ansi(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            // Skip up to and including the final letter of the sequence.
            for c in chars.by_ref() {
                if c.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// The text under the primary span: the diagnostic's own, or else a short
/// one for its code, so that ariadne underlines the failing call (it draws
/// no underline for a label without a message).
fn primary_message(diag: &Diagnostic) -> &str {
    if !diag.primary.message.is_empty() {
        return &diag.primary.message;
    }
    match diag.code {
        "inplace-leaf" => "in-place op on a leaf that requires grad",
        "inplace-view-of-leaf" => "in-place op on a view of a leaf that requires grad",
        "inplace-multi-output-view" => "in-place op on one of several views returned together",
        "inplace-custom-function-view" => "in-place op on a view made by a custom Function",
        "inplace-view-other" => "this in-place op on a view is forbidden",
        "inference-tensor" => "an inference tensor is used here",
        "inplace-overlapping" => "writes a tensor whose elements share memory",
        "saved-tensor-modified" => "modifies a tensor saved for backward",
        "view-stride" => "no view has this shape with these strides",
        "invalid-shape" => "invalid shape",
        "inplace-broadcast" => "the result does not fit into the tensor written",
        "broadcast" => "these shapes do not broadcast",
        "expand" => "cannot expand to this size",
        "dim-out-of-range" => "dimension out of range",
        "index-out-of-range" => "index out of range",
        "matmul-shape" => "these shapes cannot be multiplied",
        "cat-shape" => "the sizes do not match",
        "dtype-cast" => "the result cannot be cast to this tensor's dtype",
        "permute" => "not a permutation of the dims",
        "split" => "the split sizes do not add up",
        "requires-grad-dtype" => "this dtype cannot require grad",
        "autocast-mutation" => "leaves the autocast state changed",
        "frozen-storage" => "writes a storage that set_() swapped away",
        "storage-mutation-out-of-graph" => "an input of this function",
        "no-grad-fn" => "does not require grad",
        "backward-twice" => "second backward",
        _ => "here",
    }
}

/// A byte range ariadne can draw: inside the text, on character
/// boundaries, and not empty where the text allows (an empty span, such as
/// "the end of the block" or "the end of the file", points at the
/// character there, or at the last one).
fn visible(span: Span, text: &str) -> Range<usize> {
    let len = text.len();
    let mut start = (span.start as usize).min(len);
    let mut end = (span.end as usize).clamp(start, len);
    while !text.is_char_boundary(start) {
        start -= 1;
    }
    while !text.is_char_boundary(end) {
        end += 1;
    }
    if start == end {
        if let Some(c) = text[start..].chars().next() {
            end = start + c.len_utf8();
        } else if let Some(c) = text[..start].chars().next_back() {
            start -= c.len_utf8();
        }
    }
    start..end
}

/// The diagnostic's notes and help line, after its labels.
fn with_notes_and_help<'a, S: ariadne::Span>(
    mut builder: ariadne::ReportBuilder<'a, S>,
    diag: &Diagnostic,
) -> ariadne::ReportBuilder<'a, S> {
    for note in &diag.notes {
        builder = builder.with_note(note);
    }
    if let Some(help) = &diag.help {
        builder = builder.with_help(help);
    }
    builder
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_header_labels_and_help() {
        let file = SourceFile::new("t.tp", "def f():\n    x = (1 + 2\n");
        let diag = Diagnostic::error("syntax", "unclosed `(`", Span::new(24, 24))
            .with_label("the file ends before `)`")
            .with_secondary(Span::new(17, 18), "unclosed `(` opened here")
            .with_help("add the missing `)`");
        let out = render(&diag, &file, false);
        assert!(out.starts_with("error[syntax]: unclosed `(`"), "{out}");
        assert!(out.contains("t.tp:"), "{out}");
        assert!(out.contains("unclosed `(` opened here"), "{out}");
        assert!(out.contains("Help: add the missing `)`"), "{out}");
        assert!(!out.contains('\u{1b}'), "{out}");
        assert!(render(&diag, &file, true).contains('\u{1b}'));
    }

    #[test]
    fn spans_are_made_visible() {
        assert_eq!(visible(Span::new(3, 3), "abcdef"), 3..4);
        assert_eq!(visible(Span::new(6, 6), "abcdef"), 5..6);
        assert_eq!(visible(Span::new(0, 0), ""), 0..0);
        assert_eq!(visible(Span::new(1, 2), "é"), 0..2);
        assert_eq!(visible(Span::new(9, 12), "abc"), 2..3);
    }

    /// Big texts share ariadne's line table between reports: each report
    /// still shows its own file's text, also after another file of the
    /// same length, and the same as a file rendered for the first time.
    #[test]
    fn big_files_share_line_tables_but_not_text() {
        let filler = "pass\n".repeat(SHARED_SOURCE_BYTES / 5 + 1);
        let a = SourceFile::new("a.tp", format!("{filler}x = alpha\n"));
        let b = SourceFile::new("b.tp", format!("{filler}x = gamma\n"));
        assert_eq!(a.text.len(), b.text.len());
        let at = filler.len() + 4;
        let diag = Diagnostic::error("unknown-name", "boom", Span::new(at, at + 5));
        let first_a = render(&diag, &a, false);
        let first_b = render(&diag, &b, false);
        assert!(first_a.contains("x = alpha"), "{first_a}");
        assert!(first_b.contains("x = gamma"), "{first_b}");
        let line = filler.len() / 5 + 1;
        assert!(first_b.contains(&format!("b.tp:{line}:5")), "{first_b}");
        assert_eq!(render(&diag, &a, false), first_a);
        assert_eq!(render(&diag, &a, false), first_a);
        assert_eq!(render(&diag, &b, false), first_b);
    }

    /// A big text's first reports are drawn from a window of its lines,
    /// later ones from the whole text: they read the same, also when the
    /// lines before hold `\r\n`, or characters only ariadne would end a
    /// line at (form feeds, U+2028, U+0085).
    #[test]
    fn windowed_reports_read_as_whole_text_reports() {
        for filler in ["pass\n", "pass\r\n", "# a\x0c b\n", "# \u{2028} \u{85} é\n"] {
            let filler = filler.repeat(SHARED_SOURCE_BYTES / filler.len() + 1);
            let file = SourceFile::new("a.tp", format!("{filler}x = alpha\ny = beta\n"));
            let at = filler.len();
            let diag = Diagnostic::error("unknown-name", "boom", Span::new(at + 4, at + 9))
                .with_secondary(Span::new(at + 14, at + 18), "and here");
            WINDOWED.with(|cell| cell.set((0, 0, 0)));
            let renders: Vec<String> = (0..=WINDOWED_REPORTS)
                .map(|_| render(&diag, &file, false))
                .collect();
            assert!(renders[0].contains("x = alpha"), "{}", renders[0]);
            assert!(renders[0].contains("y = beta"), "{}", renders[0]);
            for later in &renders[1..] {
                assert_eq!(later, &renders[0]);
            }
        }
    }

    /// The snippet's header names the line and column tpi's `file:line`
    /// does (Python's lines: `\n`, `\r\n`, a lone `\r`), whatever else
    /// ariadne would end a line at, in small and big texts.
    #[test]
    fn header_line_is_tpis_line() {
        for before in [
            "# a\x0c b\x0b c\n",
            "# \u{2028} \u{2029} \u{85}\n",
            "pass\r",
            "pass\r\n",
        ] {
            for copies in [3, SHARED_SOURCE_BYTES / before.len() + 1] {
                let filler = before.repeat(copies);
                let file = SourceFile::new("a.tp", format!("{filler}x = alpha\n"));
                let at = (filler.len() + 4) as u32;
                let diag = Diagnostic::error(
                    "unknown-name",
                    "boom",
                    Span::new(at as usize, at as usize + 5),
                );
                let (line, col) = file.line_col(at);
                assert_eq!(line, copies + 1, "{before:?}");
                let shown = render(&diag, &file, false);
                assert!(
                    shown.contains(&format!("a.tp:{line}:{col} ]")),
                    "{before:?}: {shown}"
                );
                assert!(
                    shown.contains(&format!("{line} │ x = alpha")),
                    "{before:?}: {shown}"
                );
            }
        }
    }

    #[test]
    fn one_line_form() {
        let file = SourceFile::new("t.tp", "a\nbc\n");
        let diag = Diagnostic::error("syntax", "boom", Span::new(3, 4));
        assert_eq!(one_line(&diag, &file), "t.tp:2:2: error[syntax]: boom");
    }
}
