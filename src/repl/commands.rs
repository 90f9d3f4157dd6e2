//! The REPL's `:commands`: their table (names, arguments, one line of help,
//! used by `:help` and by completion) and the dispatch to the session.
//! Unknown commands get a "did you mean".

use super::session::{Reply, Session};
use crate::ops::did_you_mean;
use std::fmt::Write;

/// One command.
pub struct Command {
    /// With its colon: `:info`.
    pub name: &'static str,
    pub args: &'static str,
    pub help: &'static str,
}

/// Every command, in the order `:help` lists them.
pub const COMMANDS: &[Command] = &[
    Command {
        name: ":help",
        args: "",
        help: "this list",
    },
    Command {
        name: ":info",
        args: "[NAME]",
        help: "everything tpi knows about a value (sizes, strides, offset, storage, base, version, grad facts); all names without one",
    },
    Command {
        name: ":inputs",
        args: "",
        help: "the declared inputs and what happened to them",
    },
    Command {
        name: ":check",
        args: "",
        help: "the report of the session (with its last `return`) and of every entry function",
    },
    Command {
        name: ":json",
        args: "",
        help: "the canonical JSON of `:check` (its lines are those of `:source`)",
    },
    Command {
        name: ":source",
        args: "",
        help: "the session as a .tp program",
    },
    Command {
        name: ":undo",
        args: "",
        help: "take back the last accepted input",
    },
    Command {
        name: ":reset",
        args: "",
        help: "start an empty session (`:undo` brings the old one back)",
    },
    Command {
        name: ":load",
        args: "FILE",
        help: "bring a file's functions into the session",
    },
    Command {
        name: ":quit",
        args: "",
        help: "leave (also ctrl-D)",
    },
];

/// Other spellings people type.
const ALIASES: &[(&str, &str)] = &[
    (":q", ":quit"),
    (":exit", ":quit"),
    (":h", ":help"),
    (":?", ":help"),
];

/// The `:help` text.
pub fn help() -> String {
    let mut text = String::from(
        "Declare inputs as `x: Tensor(4, 4, requires_grad=True)`, then type statements: each runs at once\n\
         and tpi says what it made, what it mutated and what eager PyTorch would raise.\n\
         `return a, b` shows what AOTAutograd records for the session with those outputs.\n\
         `def` blocks define helpers and entry functions (end a block with an empty line).\n\n",
    );
    let width = COMMANDS
        .iter()
        .map(|c| c.name.len() + c.args.len() + 1)
        .max()
        .unwrap_or(0);
    for command in COMMANDS {
        let usage = if command.args.is_empty() {
            command.name.to_string()
        } else {
            format!("{} {}", command.name, command.args)
        };
        let _ = writeln!(text, "  {usage:width$}  {}", command.help);
    }
    text.push_str("\nTab completes names, ops and commands; ctrl-C cancels the input.\n");
    text
}

/// Runs one command line (`:info v`).
pub fn run(session: &mut Session, line: &str) -> Reply {
    let line = line.trim();
    let (word, rest) = match line.split_once(char::is_whitespace) {
        Some((word, rest)) => (word, rest.trim()),
        None => (line, ""),
    };
    let name = ALIASES
        .iter()
        .find(|(alias, _)| *alias == word)
        .map_or(word, |(_, name)| name);
    let arg = (!rest.is_empty()).then_some(rest);
    let no_argument = |reply: Reply| match arg {
        Some(_) => Reply::error(format!("{name} takes no argument\n")),
        None => reply,
    };
    match name {
        ":help" => Reply::ok(help()),
        ":info" => session.info(arg),
        ":inputs" => no_argument(session.inputs()),
        ":check" => no_argument(session.check()),
        ":json" => no_argument(session.json()),
        ":source" => no_argument(session.source()),
        ":undo" => {
            if arg.is_some() {
                return Reply::error(":undo takes no argument\n");
            }
            session.undo()
        }
        ":reset" => {
            if arg.is_some() {
                return Reply::error(":reset takes no argument\n");
            }
            session.reset()
        }
        ":load" => match arg {
            Some(path) => session.load(path),
            None => Reply::error("usage: :load FILE\n"),
        },
        ":quit" => Reply {
            quit: true,
            ..Reply::default()
        },
        _ => {
            let mut text = format!("unknown command `{word}`");
            match did_you_mean(word, COMMANDS.iter().map(|c| c.name)) {
                Some(suggestion) => {
                    let _ = write!(text, ": did you mean `{suggestion}`?");
                }
                None => text.push_str(": `:help` lists the commands"),
            }
            Reply::error(text + "\n")
        }
    }
}
