//! The REPL (`tpi repl`, and `tpi` alone on a terminal): explore a tensor
//! program one statement at a time.
//!
//! - `session.rs`: the session, pure and testable (`Session::eval`).
//! - `program.rs`: the session as a `.tp` program, and spans back to inputs.
//! - `describe.rs`: values, `:info` and the metadata report in words.
//! - `commands.rs`: the `:commands`.
//! - `helper.rs`: the rustyline helper (validation, completion, hints).
//!
//! This module reads input: on a terminal with rustyline (history in a file,
//! completion, multi-line blocks, ctrl-C cancels the input, ctrl-D leaves),
//! otherwise line by line (`tpi repl < session.tp`), echoing each input as
//! `>>> ` / `... ` lines followed by its answer, so that the output is a
//! transcript (the golden tests in `tests/cases/repl/` are such
//! transcripts). Everything goes to stdout, in order.

pub mod commands;
pub mod describe;
pub mod helper;
pub mod program;
pub mod session;

pub use session::{Reply, Session};

use crate::report::render;
use crate::syntax::parser;
use crate::Options;
use std::io::{BufRead, IsTerminal, Write};
use std::path::PathBuf;

/// The prompt, and the prefix of continuation lines in transcripts.
pub const PROMPT: &str = ">>> ";
pub const CONTINUATION: &str = "... ";

/// How many lines the history file keeps.
const HISTORY_SIZE: usize = 1000;

/// Is `text` a whole input? A `:command` is one line. Statements are
/// complete when the parser needs nothing more (no open bracket, no header
/// waiting for its block) and, for a block (`def`, `with`, `for`, `if`),
/// when an empty line ended it.
pub fn input_is_complete(text: &str) -> bool {
    if text.trim_start().starts_with(':') {
        return true;
    }
    if parser::needs_more_input(text) {
        return false;
    }
    !opens_block(text) || ends_with_empty_line(text)
}

/// Does the input hold an indented block (and does not start indented,
/// which is an error to show at once)?
fn opens_block(text: &str) -> bool {
    let (tokens, _) = parser::tokens(text);
    tokens.first().is_some_and(|t| t.kind != "indent") && tokens.iter().any(|t| t.kind == "indent")
}

fn ends_with_empty_line(text: &str) -> bool {
    text.contains('\n')
        && text
            .rsplit('\n')
            .next()
            .is_some_and(|last| last.trim().is_empty())
}

/// Does this line start a new statement at the top level (so that a
/// finished block before it is complete, without an empty line)?
fn starts_statement(line: &str) -> bool {
    let first_word = line
        .split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .next()
        .unwrap_or("");
    !line.starts_with(char::is_whitespace)
        && !line.starts_with('#')
        && !matches!(first_word, "elif" | "else")
}

/// Reads a script line by line, as `tpi repl < session.tp` does, and writes
/// the transcript: every input echoed after `>>> ` (`... ` for its other
/// lines), then its answer.
pub struct Script {
    session: Session,
    pending: Vec<String>,
    /// Some input had an error.
    pub had_error: bool,
    /// `:quit` was read: the rest is ignored.
    pub quit: bool,
}

impl Script {
    pub fn new(session: Session) -> Script {
        Script {
            session,
            pending: Vec::new(),
            had_error: false,
            quit: false,
        }
    }

    /// Reads one line; gives the transcript of the inputs it completes.
    pub fn feed(&mut self, line: &str) -> String {
        let mut out = String::new();
        if self.quit {
            return out;
        }
        let blank = line.trim().is_empty();
        if self.pending.is_empty() {
            if blank {
                return out;
            }
        } else {
            // A block ends at the next line that starts a statement (empty
            // lines may sit inside a block in a file: they end nothing).
            let text = self.pending.join("\n");
            if !blank
                && starts_statement(line)
                && !parser::needs_more_input(&text)
                && opens_block(&text)
            {
                out.push_str(&self.flush());
                if self.quit {
                    return out;
                }
            }
        }
        self.pending.push(line.to_string());
        let text = self.pending.join("\n");
        let complete = text.trim_start().starts_with(':')
            || (!parser::needs_more_input(&text) && !opens_block(&text));
        if !blank && complete {
            out.push_str(&self.flush());
        }
        out
    }

    /// The end of the script: runs what is left.
    pub fn finish(&mut self) -> String {
        if self.pending.is_empty() || self.quit {
            return String::new();
        }
        self.flush()
    }

    fn flush(&mut self) -> String {
        let mut lines = std::mem::take(&mut self.pending);
        while lines.last().is_some_and(|line| line.trim().is_empty()) {
            lines.pop();
        }
        let mut out = String::new();
        for (i, line) in lines.iter().enumerate() {
            let prefix = if i == 0 { PROMPT } else { CONTINUATION };
            if line.is_empty() {
                out.push_str(prefix.trim_end());
            } else {
                out.push_str(prefix);
                out.push_str(line);
            }
            out.push('\n');
        }
        let reply = self.session.eval(&lines.join("\n"));
        out.push_str(&reply.text);
        self.had_error |= reply.error;
        self.quit |= reply.quit;
        out
    }
}

/// Runs a whole script and gives its transcript (the golden tests' call).
pub fn transcript(script: &str, options: Options) -> String {
    let mut reader = Script::new(Session::new(options, false));
    let mut out = String::new();
    for line in script.lines() {
        out.push_str(&reader.feed(line));
    }
    out.push_str(&reader.finish());
    out
}

/// Where the history is kept: `TPI_HISTORY` (empty: nowhere), else
/// `~/.tpi_history`.
pub fn history_path() -> Option<PathBuf> {
    match std::env::var_os("TPI_HISTORY") {
        Some(path) if path.is_empty() => None,
        Some(path) => Some(PathBuf::from(path)),
        None => std::env::var_os("HOME")
            .filter(|h| !h.is_empty())
            .map(|home| PathBuf::from(home).join(".tpi_history")),
    }
}

/// Writes to stdout, ignoring a closed pipe.
fn out(text: &str) {
    let mut stdout = std::io::stdout().lock();
    let _ = stdout.write_all(text.as_bytes());
    let _ = stdout.flush();
}

/// `tpi repl`: the exit status (0, or 1 when a piped script had an error,
/// 2 when the terminal cannot be used).
pub fn main(options: Options) -> u8 {
    if std::io::stdin().is_terminal() {
        interactive(options)
    } else {
        piped(options)
    }
}

fn piped(options: Options) -> u8 {
    let color = render::use_color(std::io::stdout().is_terminal());
    let mut script = Script::new(Session::new(options, color));
    let mut stdin = std::io::stdin().lock();
    let mut bytes = Vec::new();
    loop {
        bytes.clear();
        match stdin.read_until(b'\n', &mut bytes) {
            Ok(0) => break,
            Ok(_) => {
                let line = String::from_utf8_lossy(&bytes);
                out(&script.feed(line.trim_end_matches(['\n', '\r'])));
                if script.quit {
                    break;
                }
            }
            Err(error) => {
                eprintln!("tpi: cannot read standard input: {error}");
                return 2;
            }
        }
    }
    out(&script.finish());
    u8::from(script.had_error)
}

fn interactive(options: Options) -> u8 {
    use rustyline::config::{CompletionType, Config};
    use rustyline::error::ReadlineError;
    use rustyline::history::DefaultHistory;
    use rustyline::Editor;

    let color = render::use_color(std::io::stdout().is_terminal());
    let config = Config::builder()
        .completion_type(CompletionType::List)
        .auto_add_history(false)
        .history_ignore_space(true);
    let config = match config.max_history_size(HISTORY_SIZE) {
        Ok(config) => config.build(),
        Err(_) => Config::default(),
    };
    let mut editor: Editor<helper::ReplHelper, DefaultHistory> = match Editor::with_config(config) {
        Ok(editor) => editor,
        Err(error) => {
            eprintln!("tpi: cannot start the line editor: {error}");
            return 2;
        }
    };
    editor.set_helper(Some(helper::ReplHelper::new(color)));
    let history = history_path();
    if let Some(path) = &history {
        // A missing history file is the first session.
        let _ = editor.load_history(path);
    }
    out(&format!(
        "tpi {} — `x: Tensor(4, 4)` declares an input, then type statements; `:help` for more, ctrl-D leaves.\n",
        env!("CARGO_PKG_VERSION")
    ));
    let mut session = Session::new(options, color);
    loop {
        match editor.readline(PROMPT) {
            Ok(line) => {
                if line.trim().is_empty() {
                    continue;
                }
                let _ = editor.add_history_entry(line.as_str());
                let reply = session.eval(&line);
                out(&reply.text);
                if reply.quit {
                    break;
                }
                if let Some(helper) = editor.helper_mut() {
                    helper.set_names(session.names());
                }
            }
            // ctrl-C: the input is dropped, the session goes on.
            Err(ReadlineError::Interrupted) => out("(input cancelled)\n"),
            Err(ReadlineError::Eof) => break,
            Err(error) => {
                eprintln!("tpi: cannot read the terminal: {error}");
                break;
            }
        }
    }
    if let Some(path) = &history {
        if let Err(error) = editor.save_history(path) {
            eprintln!(
                "tpi: cannot save the history to {}: {error}",
                path.display()
            );
        }
    }
    0
}
