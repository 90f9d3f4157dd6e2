//! The REPL without a terminal: golden transcripts in `tests/cases/repl/`
//! (`>>> ` and `... ` lines are the input, everything else the expected
//! answer; `TPI_BLESS=1 cargo test --test repl` writes the answers, so a
//! new case is just its input lines), and the session's promises checked
//! directly: a failed input changes nothing, `:undo` goes back, blocks end
//! where they should.

mod common;

use tpi::repl::{input_is_complete, transcript, Script, Session};
use tpi::Options;

/// The input lines of a transcript, without their prompts.
fn inputs_of(transcript: &str) -> String {
    let mut inputs = String::new();
    for line in transcript.lines() {
        let input = [">>> ", "... "]
            .iter()
            .find_map(|prefix| line.strip_prefix(prefix))
            .or_else(|| matches!(line, ">>>" | "...").then_some(""));
        if let Some(input) = input {
            inputs.push_str(input);
            inputs.push('\n');
        }
    }
    inputs
}

#[test]
fn transcripts() {
    common::run_golden_files("repl", "session", "session", |_, text| {
        transcript(&inputs_of(text), Options::default())
    });
}

fn session() -> Session {
    Session::new(Options::default(), false)
}

#[test]
fn a_failed_input_leaves_the_session_unchanged() {
    let mut s = session();
    assert!(!s.eval("x: Tensor(4, requires_grad=True)").error);
    assert!(!s.eval("v = x.view(2, 2)").error);
    let before = s.eval(":source").text;
    let names = s.names();
    for bad in [
        "v = x.view(3)",
        "w = x +",
        "y = undefined_name",
        "x: Tensor(-1)",
        "def f(:",
    ] {
        let reply = s.eval(bad);
        assert!(reply.error, "{bad}: {}", reply.text);
        assert_eq!(s.eval(":source").text, before, "{bad}");
        assert_eq!(s.names(), names, "{bad}");
    }
}

#[test]
fn undo_goes_back_one_input_at_a_time() {
    let mut s = session();
    s.eval("x: Tensor(4)");
    let one = s.eval(":source").text;
    s.eval("y = x * 2");
    let two = s.eval(":source").text;
    s.eval("y.add_(1)");
    assert!(s.eval(":undo").text.contains("y.add_(1)"));
    assert_eq!(s.eval(":source").text, two);
    s.eval(":undo");
    assert_eq!(s.eval(":source").text, one);
    s.eval(":undo");
    assert!(s.eval(":undo").error, "nothing left to undo");
}

#[test]
fn diagnostics_point_into_the_input_line() {
    let mut s = session();
    s.eval("x: Tensor(2, 3)");
    let reply = s.eval("y = x.view(4)");
    assert!(reply.error);
    assert!(reply.text.contains("<repl:2>"), "{}", reply.text);
    assert!(reply.text.contains("invalid-shape"), "{}", reply.text);
}

#[test]
fn blocks_need_an_empty_line() {
    assert!(input_is_complete("x = 1"));
    assert!(input_is_complete(":info x"));
    assert!(!input_is_complete("y = f(x,"));
    assert!(!input_is_complete("def f(x):"));
    assert!(!input_is_complete("def f(x):\n    return x"));
    assert!(input_is_complete("def f(x):\n    return x\n"));
    assert!(!input_is_complete("with torch.no_grad():\n    x.add_(1)"));
    assert!(input_is_complete("if True: x = 1"));
    // An error is shown at once rather than waiting for more.
    assert!(input_is_complete("x = = 1"));
    assert!(input_is_complete("  x = 1"));
}

#[test]
fn a_script_ends_a_block_at_the_next_statement() {
    let mut script = Script::new(session());
    let mut out = String::new();
    for line in [
        "x: Tensor(3)",
        "def f(t):",
        "    return t * 2",
        "y = f(x)",
        ":quit",
        "z = 1",
    ] {
        out.push_str(&script.feed(line));
    }
    out.push_str(&script.finish());
    assert!(out.contains("defined helper `f(t)`"), "{out}");
    assert!(out.contains("y = Tensor[3]"), "{out}");
    assert!(
        !out.contains("z = 1"),
        "input after :quit is ignored: {out}"
    );
    assert!(script.quit && !script.had_error);
}

#[test]
fn odd_inputs_do_not_panic() {
    let mut s = session();
    for input in [
        ":",
        "::",
        ": info",
        ":info ",
        "\t",
        "x:",
        "x: Tensor(",
        "return",
        "return x",
        "def",
        "(",
        ")",
        "]]]",
        "'''",
        "x: Tensor(2)\ny = x",
        "é = 1",
        "\u{0}",
        "del x",
        "lambda: 1",
        "while True: pass",
        "x: Tensor('n')",
        "x.view(-1)",
        ":load /",
    ] {
        let _ = s.eval(input);
    }
}

#[test]
fn json_is_the_canonical_document() {
    let mut s = session();
    s.eval("x: Tensor(4, 4, requires_grad=True)");
    s.eval("v = x.view(16)");
    s.eval("v.mul_(2)");
    assert!(!s.eval("return v").error);
    let reply = s.eval(":json");
    assert!(!reply.error, "{}", reply.text);
    let document: serde_json::Value = serde_json::from_str(&reply.text).expect("valid JSON");
    let session = &document["functions"][0];
    assert_eq!(session["name"], "session");
    assert_eq!(session["inputs"][0]["mutation_type"], "MUTATED_OUT_GRAPH");
    assert_eq!(session["outputs"][0]["output_type"], "alias_of_input");
    assert_eq!(
        session["eager"]["forward_error"]["code"],
        "inplace-view-of-leaf"
    );
}
