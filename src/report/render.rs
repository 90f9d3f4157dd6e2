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
    let text = file.text.as_str();
    let name = file.name.as_str();
    let header = format!("{}[{}]", diag.severity.as_str(), diag.code);
    let severity_color = match diag.severity {
        Severity::Error => Color::Red,
        Severity::Warning => Color::Yellow,
        Severity::Note => Color::Cyan,
    };
    let primary = visible(diag.primary.span, text);
    let config = Config::default()
        .with_index_type(IndexType::Byte)
        .with_color(color);
    let mut builder = Report::build(
        ReportKind::Custom(&header, severity_color),
        (name, primary.clone()),
    )
    .with_config(config)
    .with_message(&diag.message);
    // Labels go in source order: ariadne starts a new snippet whenever a
    // label lies on an earlier line than the one before it.
    let mut labels: Vec<(Range<usize>, &str, Color)> =
        vec![(primary, diag.primary.message.as_str(), severity_color)];
    for secondary in &diag.secondary {
        labels.push((
            visible(secondary.span, text),
            secondary.message.as_str(),
            Color::Blue,
        ));
    }
    labels.sort_by_key(|(range, _, _)| range.start);
    for (range, message, label_color) in labels {
        let mut label = Label::new((name, range)).with_color(label_color);
        if !message.is_empty() {
            label = label.with_message(message);
        }
        builder = builder.with_label(label);
    }
    for note in &diag.notes {
        builder = builder.with_note(note);
    }
    if let Some(help) = &diag.help {
        builder = builder.with_help(help);
    }
    let mut out = Vec::new();
    let written = builder.finish().write((name, Source::from(text)), &mut out);
    match written {
        // ariadne colours a custom header even when colour is off.
        Ok(()) if !color => strip_ansi(&String::from_utf8_lossy(&out)),
        Ok(()) => String::from_utf8_lossy(&out).into_owned(),
        // Writing to a Vec cannot fail; should ariadne still refuse, the
        // one-line form says the essentials.
        Err(_) => one_line(diag, file) + "\n",
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

    #[test]
    fn one_line_form() {
        let file = SourceFile::new("t.tp", "a\nbc\n");
        let diag = Diagnostic::error("syntax", "boom", Span::new(3, 4));
        assert_eq!(one_line(&diag, &file), "t.tp:2:2: error[syntax]: boom");
    }
}
