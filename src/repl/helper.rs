//! The rustyline helper: it only validates (an unfinished input keeps
//! reading lines), completes (commands, names in scope, op and method
//! names, file names after `:load`), hints the rest of a command, and
//! highlights matching brackets. It knows nothing of the analysis: the
//! REPL hands it the names in scope after every input.

use super::commands::COMMANDS;
use super::input_is_complete;
use crate::ops::OpTable;
use rustyline::completion::{Completer, FilenameCompleter, Pair};
use rustyline::highlight::{CmdKind, Highlighter, MatchingBracketHighlighter};
use rustyline::hint::Hinter;
use rustyline::validate::{ValidationContext, ValidationResult, Validator};
use rustyline::{Context, Helper};
use std::borrow::Cow;

/// What Tab inserts at the start of a line (an indentation level).
const INDENT: &str = "    ";

/// Tensor attributes and query methods that are not ops.
const TENSOR_ATTRIBUTES: &[&str] = &[
    "shape",
    "size",
    "dim",
    "ndim",
    "numel",
    "stride",
    "storage_offset",
    "dtype",
    "is_contiguous",
    "requires_grad",
    "is_leaf",
    "T",
    "mT",
    "H",
    "untyped_storage",
];

/// `torch.` names that are not ops.
const TORCH_ATTRIBUTES: &[&str] = &[
    "no_grad",
    "enable_grad",
    "inference_mode",
    "set_grad_enabled",
    "is_grad_enabled",
    "is_inference_mode_enabled",
    "autocast",
    "set_autocast_enabled",
    "float32",
    "float64",
    "float16",
    "bfloat16",
    "int64",
    "int32",
    "int16",
    "int8",
    "uint8",
    "bool",
    "complex64",
    "float",
    "double",
    "half",
    "long",
    "int",
    "short",
    "cfloat",
    "contiguous_format",
    "channels_last",
    "channels_last_3d",
    "preserve_format",
    "nn",
    "ops",
    "Tensor",
];

/// Names always in scope besides the builtins (`crate::analysis::interp::BUILTINS`):
/// the prelude modules and Python's keywords.
const PRELUDE: &[&str] = &[
    "torch", "F", "nn", "True", "False", "None", "def", "return", "with", "for", "in", "if",
    "elif", "else", "assert", "pass", "import", "from", "and", "or", "not", "is",
];

/// The REPL's line-editor helper.
pub struct ReplHelper {
    /// Names in scope (inputs, locals, functions), set after each input.
    names: Vec<String>,
    color: bool,
    brackets: MatchingBracketHighlighter,
    files: FilenameCompleter,
}

impl ReplHelper {
    pub fn new(color: bool) -> ReplHelper {
        ReplHelper {
            names: Vec::new(),
            color,
            brackets: MatchingBracketHighlighter::new(),
            files: FilenameCompleter::new(),
        }
    }

    pub fn set_names(&mut self, names: Vec<String>) {
        self.names = names;
    }
}

/// The completions of the word before `pos` in `line` (a multi-line
/// buffer): where the word starts, and the candidates. File names after
/// `:load` are not handled here.
pub fn complete(line: &str, pos: usize, names: &[String]) -> (usize, Vec<String>) {
    let pos = pos.min(line.len());
    let Some(before) = line.get(..pos) else {
        return (pos, Vec::new());
    };
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let current = &before[line_start..];
    if current.trim().is_empty() {
        // Tab at the start of a line indents, as in Python's REPL.
        return (pos, vec![INDENT.to_string()]);
    }
    let word_start = current
        .char_indices()
        .rev()
        .find(|(_, c)| !(c.is_alphanumeric() || *c == '_'))
        .map_or(0, |(i, c)| i + c.len_utf8());
    let word = &current[word_start..];
    let start = line_start + word_start;
    let head = current[..word_start].trim_start();
    if current.trim_start().starts_with(':') {
        return complete_command(current, line_start, pos, names);
    }
    let mut candidates: Vec<String> = Vec::new();
    let table = OpTable::get();
    if let Some(receiver) = head.strip_suffix('.') {
        let receiver = receiver
            .rsplit(|c: char| !(c.is_alphanumeric() || c == '_' || c == '.'))
            .next()
            .unwrap_or("");
        match receiver {
            "torch" => {
                candidates.extend(table.names(|o| o.torch_fn).map(str::to_string));
                candidates.extend(TORCH_ATTRIBUTES.iter().map(|s| s.to_string()));
            }
            "F" | "torch.nn.functional" => {
                candidates.extend(table.names(|o| o.functional_fn).map(str::to_string))
            }
            "torch.nn" | "nn" => candidates.push("functional".to_string()),
            "torch.ops" => candidates.extend(["aten", "inductor"].map(str::to_string)),
            "torch.ops.aten" => candidates.extend(
                table
                    .ops
                    .iter()
                    .filter(|o| !o.inductor)
                    .map(|o| o.name.to_string()),
            ),
            "torch.ops.inductor" => candidates.extend(
                table
                    .ops
                    .iter()
                    .filter(|o| o.inductor)
                    .map(|o| o.name.to_string()),
            ),
            _ => {
                candidates.extend(table.names(|o| o.method).map(str::to_string));
                candidates.extend(TENSOR_ATTRIBUTES.iter().map(|s| s.to_string()));
            }
        }
    } else {
        candidates.extend(names.iter().cloned());
        candidates.extend(PRELUDE.iter().map(|s| s.to_string()));
        candidates.extend(
            crate::analysis::interp::BUILTINS
                .iter()
                .map(|s| s.to_string()),
        );
    }
    candidates.retain(|c| c.starts_with(word) && !c.is_empty());
    candidates.sort();
    candidates.dedup();
    (start, candidates)
}

/// Completes a command line: the command's name, or its argument.
fn complete_command(
    current: &str,
    line_start: usize,
    pos: usize,
    names: &[String],
) -> (usize, Vec<String>) {
    let text = current.trim_start();
    let offset = line_start + (current.len() - text.len());
    match text.split_once(char::is_whitespace) {
        None => {
            let candidates = COMMANDS
                .iter()
                .map(|c| c.name)
                .filter(|n| n.starts_with(text))
                .map(str::to_string)
                .collect();
            (offset, candidates)
        }
        Some((":info", arg)) => {
            let arg = arg.trim_start();
            let mut candidates: Vec<String> = names
                .iter()
                .filter(|n| n.starts_with(arg))
                .cloned()
                .collect();
            candidates.sort();
            (pos - arg.len(), candidates)
        }
        Some(_) => (pos, Vec::new()),
    }
}

impl Completer for ReplHelper {
    type Candidate = Pair;

    fn complete(
        &self,
        line: &str,
        pos: usize,
        _ctx: &Context<'_>,
    ) -> rustyline::Result<(usize, Vec<Pair>)> {
        if line.trim_start().starts_with(":load ") {
            return self.files.complete_path(line, pos);
        }
        let (start, candidates) = complete(line, pos, &self.names);
        let pairs = candidates
            .into_iter()
            .map(|c| Pair {
                display: c.clone(),
                replacement: c,
            })
            .collect();
        Ok((start, pairs))
    }
}

impl Hinter for ReplHelper {
    type Hint = String;

    /// The rest of a command when only one fits (`:in` -> `fo`).
    fn hint(&self, line: &str, pos: usize, _ctx: &Context<'_>) -> Option<String> {
        if pos < line.len() || !line.starts_with(':') || line.contains(char::is_whitespace) {
            return None;
        }
        let mut fits = COMMANDS.iter().filter(|c| c.name.starts_with(line));
        let only = fits.next()?;
        if fits.next().is_some() || only.name.len() == line.len() {
            return None;
        }
        Some(only.name[line.len()..].to_string())
    }
}

impl Highlighter for ReplHelper {
    fn highlight<'l>(&self, line: &'l str, pos: usize) -> Cow<'l, str> {
        if self.color {
            self.brackets.highlight(line, pos)
        } else {
            Cow::Borrowed(line)
        }
    }

    fn highlight_hint<'h>(&self, hint: &'h str) -> Cow<'h, str> {
        if self.color {
            Cow::Owned(format!("\x1b[2m{hint}\x1b[0m"))
        } else {
            Cow::Borrowed(hint)
        }
    }

    fn highlight_char(&self, line: &str, pos: usize, kind: CmdKind) -> bool {
        self.color && self.brackets.highlight_char(line, pos, kind)
    }
}

impl Validator for ReplHelper {
    fn validate(&self, ctx: &mut ValidationContext) -> rustyline::Result<ValidationResult> {
        Ok(if input_is_complete(ctx.input()) {
            ValidationResult::Valid(None)
        } else {
            ValidationResult::Incomplete
        })
    }
}

impl Helper for ReplHelper {}

#[cfg(test)]
mod tests {
    use super::*;

    fn names() -> Vec<String> {
        vec![
            "x".to_string(),
            "values".to_string(),
            "view_of_x".to_string(),
        ]
    }

    #[test]
    fn completes_commands_names_and_methods() {
        assert_eq!(
            complete(":in", 3, &names()),
            (0, vec![":info".to_string(), ":inputs".to_string()])
        );
        assert_eq!(
            complete(":info v", 7, &names()),
            (6, vec!["values".to_string(), "view_of_x".to_string()])
        );
        let (start, found) = complete("y = va", 6, &names());
        assert_eq!((start, found), (4, vec!["values".to_string()]));
        let (start, found) = complete("y = x.vie", 9, &names());
        assert_eq!(start, 6);
        assert!(found.contains(&"view".to_string()), "{found:?}");
        let (_, found) = complete("y = torch.zer", 13, &names());
        assert!(found.contains(&"zeros".to_string()), "{found:?}");
        let (_, found) = complete("y = F.rel", 9, &names());
        assert!(found.contains(&"relu".to_string()), "{found:?}");
    }

    #[test]
    fn tab_at_the_start_of_a_line_indents() {
        assert_eq!(
            complete("def f(x):\n", 10, &names()),
            (10, vec![INDENT.to_string()])
        );
    }
}
