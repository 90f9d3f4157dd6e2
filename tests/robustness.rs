//! The front end never panics and never overflows the stack, whatever the
//! input: random bytes, every truncation of the conformance programs,
//! thousands of nested brackets, very long operator chains, invalid UTF-8.
//! Each input must give `Ok` or diagnostics, and every diagnostic must
//! render. These tests run on the default 2 MiB test-thread stack on
//! purpose: the parser must not rely on the CLI's big stack.

mod common;

use std::path::Path;
use std::time::{Duration, Instant};
use tpi::report::render::render;
use tpi::syntax::{dump, parser};
use tpi::SourceFile;

/// A deterministic xorshift generator (no dependency needed).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

/// Renders a diagnostic; on huge inputs only the one-line form (ariadne
/// draws whole source lines, which is slow unoptimised on megabyte lines;
/// the CLI's release build is measured separately).
fn show(diagnostic: &tpi::Diagnostic, file: &SourceFile, color: bool) {
    if file.text.len() < 50_000 {
        let _ = render(diagnostic, file, color);
    }
    let _ = tpi::report::render::one_line(diagnostic, file);
}

/// Runs every front-end entry point on `bytes` and renders what comes out.
/// Returns whether `parse_module` succeeded.
fn exercise(bytes: Vec<u8>) -> bool {
    let (file, encoding_error) = parser::decode_source("input.tp", bytes);
    if let Some(diagnostic) = encoding_error {
        show(&diagnostic, &file, false);
        return false;
    }
    let (tokens, lex_error) = parser::tokens(&file.text);
    let _ = dump::dump_tokens(&file, &tokens);
    if let Some(diagnostic) = lex_error {
        show(&diagnostic, &file, true);
    }
    let _ = parser::needs_more_input(&file.text);
    if let Err(diagnostics) = parser::parse_interactive(&file.text) {
        for diagnostic in &diagnostics {
            show(diagnostic, &file, false);
        }
    }
    let whole = parser::parse_module(&file.text);
    if file.text.len() >= 256 << 10 {
        // A big file is parsed in parts on several threads: same answer.
        let in_parts = parser::parse_module_on(&file.text, 3);
        assert_eq!(format!("{in_parts:?}"), format!("{whole:?}"));
    }
    match whole {
        Ok(module) => {
            let _ = dump::dump_module(&file, &module);
            true
        }
        Err(diagnostics) => {
            assert!(!diagnostics.is_empty());
            for diagnostic in &diagnostics {
                show(diagnostic, &file, false);
            }
            false
        }
    }
}

/// Fails when one input takes unreasonably long (a quadratic blow-up or
/// worse); generous, since tests run unoptimised on a shared machine.
fn timed(what: &str, f: impl FnOnce() -> bool) -> bool {
    let started = Instant::now();
    let result = f();
    let elapsed = started.elapsed();
    assert!(elapsed < Duration::from_secs(5), "{what} took {elapsed:?}");
    result
}

fn conformance_texts() -> Vec<String> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/conformance");
    common::tp_files(&dir)
        .iter()
        .map(|path| std::fs::read_to_string(path).unwrap_or_default())
        .collect()
}

#[test]
fn random_bytes() {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    // Bytes that make interesting token soup, plus any byte at all.
    let alphabet = b"abxyz_019 \n\n\t\r()[]{}:,.;=+-*/%@&|^~<>!'\"#\\\x0c";
    for _ in 0..3_000 {
        let len = rng.below(300);
        let bytes: Vec<u8> = (0..len)
            .map(|_| {
                if rng.below(10) == 0 {
                    rng.next() as u8
                } else {
                    alphabet[rng.below(alphabet.len())]
                }
            })
            .collect();
        exercise(bytes);
    }
}

#[test]
fn random_keyword_soup() {
    let mut rng = Rng(0xDEAD_BEEF_CAFE_F00D);
    let words = [
        "def ",
        "return ",
        "if ",
        "elif ",
        "else",
        "for ",
        "in ",
        "with ",
        "as ",
        "pass",
        "assert ",
        "import ",
        "from ",
        "and ",
        "or ",
        "not ",
        "is ",
        "True",
        "None",
        "lambda",
        "while",
        "x",
        "f",
        "(",
        ")",
        "[",
        "]",
        ":",
        ",",
        "=",
        "+",
        "**",
        "*",
        "\n",
        "\n    ",
        "\n        ",
        "1",
        "2.5",
        "'s'",
        ".",
        "...",
        "->",
        ";",
        "-",
        "+=",
        "@",
    ];
    for _ in 0..3_000 {
        let len = rng.below(60);
        let text: String = (0..len).map(|_| words[rng.below(words.len())]).collect();
        exercise(text.into_bytes());
    }
}

#[test]
fn every_truncation_and_mutation_of_the_conformance_programs() {
    let mut rng = Rng(42);
    for text in conformance_texts() {
        assert!(exercise(text.clone().into_bytes()));
        let cuts: Vec<usize> = (0..=text.len())
            .filter(|&i| text.is_char_boundary(i))
            .collect();
        // A dense sample of the cuts (every one in small files).
        let step = (cuts.len() / 400).max(1);
        for &cut in cuts.iter().step_by(step) {
            exercise(text.as_bytes()[..cut].to_vec());
        }
        for _ in 0..100 {
            let mut bytes = text.clone().into_bytes();
            for _ in 0..=rng.below(3) {
                let at = rng.below(bytes.len());
                match rng.below(3) {
                    0 => {
                        bytes.remove(at);
                    }
                    1 => bytes.insert(at, b"()[]:,\n =\t\"'"[rng.below(12)]),
                    _ => bytes[at] = rng.next() as u8,
                }
            }
            exercise(bytes);
        }
    }
}

#[test]
fn deeply_nested_brackets() {
    for (open, close) in [("(", ")"), ("[", "]"), ("{", "}")] {
        let text = format!(
            "def f(x: Tensor(4)):\n    return {}x{}\n",
            open.repeat(5_000),
            close.repeat(5_000)
        );
        assert!(!timed("5,000 nested brackets", || exercise(
            text.into_bytes()
        )));
    }
    let unclosed = format!("def f(x):\n    return {}\n", "(".repeat(5_000));
    assert!(!timed("5,000 unclosed brackets", || exercise(
        unclosed.into_bytes()
    )));
    let calls = format!(
        "def f(x):\n    return {}x{}\n",
        "g(".repeat(5_000),
        ")".repeat(5_000)
    );
    assert!(!timed("5,000 nested calls", || exercise(
        calls.into_bytes()
    )));
}

#[test]
fn long_operator_chains() {
    let cases = [
        (
            "sum",
            format!("def f(a):\n    return a{}\n", " + a".repeat(50_000)),
        ),
        (
            "power",
            format!("def f(a):\n    return a{}\n", " ** a".repeat(50_000)),
        ),
        (
            "unary",
            format!("def f(a):\n    return {}a\n", "-".repeat(50_000)),
        ),
        (
            "not",
            format!("def f(a):\n    return {}a\n", "not ".repeat(50_000)),
        ),
        (
            "attribute",
            format!("def f(a):\n    return a{}\n", ".b".repeat(50_000)),
        ),
        (
            "call",
            format!("def f(a):\n    return a{}\n", "()".repeat(50_000)),
        ),
        (
            "subscript",
            format!("def f(a):\n    return a{}\n", "[0]".repeat(50_000)),
        ),
        (
            "compare",
            format!("def f(a):\n    return a{}\n", " < a".repeat(50_000)),
        ),
        (
            "and",
            format!("def f(a):\n    return a{}\n", " and a".repeat(50_000)),
        ),
        (
            "conditional",
            format!("def f(a):\n    return {}a\n", "a if a else ".repeat(50_000)),
        ),
        (
            "joined lines",
            format!("def f(a):\n    return (a{})\n", "\n + a".repeat(50_000)),
        ),
        (
            "chain then error",
            format!("def f(a):\n    return a{} +\n", " + a".repeat(1_900)),
        ),
        (
            "tuple",
            format!("def f(a):\n    return a{}\n", ", a".repeat(50_000)),
        ),
    ];
    for (name, text) in cases {
        timed(name, || exercise(text.into_bytes()));
    }
    // Just under the per-statement limit: parses or is rejected for depth,
    // and either way nothing overflows.
    let deep = format!("def f(a):\n    return a{}\n", " + a".repeat(1_999));
    assert!(!timed("1,999 terms", || exercise(deep.into_bytes())));
    let wide = format!("def f(a):\n    return a{}\n", " + a".repeat(250));
    assert!(timed("250 terms", || exercise(wide.into_bytes())));
    // A long list literal is wide, not deep: its elements' operators are
    // siblings', so it parses however many it has (a 5-d index tensor
    // written out, gen2 held-out round 338)...
    let rows = "[-1, 2, [3, -4 * 2]], ".repeat(20_000);
    let literal = format!("def f(a):\n    return torch.tensor([{rows}])\n");
    assert!(timed("a list of 20,000 lists", || exercise(
        literal.into_bytes()
    )));
    // ...while a chain inside one element still counts as deep.
    let deep_element = format!("def f(a):\n    return [0, [1, a{}]]\n", "[0]".repeat(2_500));
    assert!(!timed("a subscript chain in a list", || exercise(
        deep_element.into_bytes()
    )));
}

/// Big programs, parsed in parts on several threads (`parse_module_on`),
/// give the one-thread parse's tree or its diagnostics, whatever breaks
/// and wherever: an unclosed bracket, a string over many lines, a dedent
/// that matches no block, a `def` inside a body, a stray `else`.
#[test]
fn big_files_parse_the_same_on_several_threads() {
    let body: String = (0..7_500)
        .map(|i| match i % 9 {
            0 => format!(
                "    if x.dim() > {i}:\n        y{i} = x.t()\n    else:\n        y{i} = x\n"
            ),
            1 => format!("    z{i} = torch.cat([x,\n        x], dim=0)  # {i}\n"),
            _ => format!("    v{i} = (x + {i}).relu() * 2\n"),
        })
        .collect();
    let program = |body: &str| {
        format!("import torch\n\ndef f(x: Tensor(4)):\n{body}    return x\n\ndef g(x: Tensor(4)):\n    return x\n")
    };
    let lines: Vec<&str> = body.split_inclusive('\n').collect();
    let breakages = [
        "    a = foo(1,\n",
        "    s = \"\"\"\ndef h():\n",
        "  b = 1\n",
        "    def h():\n        pass\n",
        "    else:\n        pass\n",
        "    \"\"\"\n",
    ];
    let mut texts = vec![program(&body)];
    for (k, broken) in breakages.iter().enumerate() {
        for at in [lines.len() / 2 - k, lines.len() * 2 / 3 + k] {
            let mut text = lines[..at].concat();
            text.push_str(broken);
            text.push_str(&lines[at..].concat());
            texts.push(program(&text));
        }
    }
    for text in texts {
        assert!(text.len() >= 256 << 10);
        let whole = format!("{:?}", parser::parse_module(&text));
        for threads in [2, 3] {
            let in_parts = format!("{:?}", parser::parse_module_on(&text, threads));
            assert!(in_parts == whole, "{threads} threads differ");
        }
    }
}

#[test]
fn many_statements_and_blocks() {
    let elifs: String = (0..10_000)
        .map(|i| format!("    elif x == {i}:\n        pass\n"))
        .collect();
    let text = format!("def f(x: int = 0):\n    if x:\n        pass\n{elifs}");
    assert!(!timed("10,000 elifs", || exercise(text.into_bytes())));
    let blocks: String = (1..5_000)
        .map(|i| format!("{}if x:\n", " ".repeat(i)))
        .collect();
    let text = format!("def f(x):\n{blocks}{}pass\n", " ".repeat(5_000));
    assert!(!timed("5,000 nested blocks", || exercise(
        text.into_bytes()
    )));
    let statements: String = (0..10_000)
        .map(|i| format!("    x{i} = x + {i}\n"))
        .collect();
    let text = format!("def f(x):\n{statements}");
    assert!(timed("10,000 statements", || exercise(text.into_bytes())));
    let defs: String = (0..2_000)
        .map(|i| format!("def f{i}(x):\n    return x +\n"))
        .collect();
    assert!(!timed("2,000 broken functions", || exercise(
        defs.into_bytes()
    )));
}

#[test]
fn invalid_utf8_is_a_diagnostic_at_the_first_bad_byte() {
    for bytes in [
        b"def f(x):\n    return x\xff\n".to_vec(),
        b"\xc3".to_vec(),
        b"def f(x):\n    # \xe2\x82\n    return x\n".to_vec(),
        vec![0xFE; 100],
    ] {
        let expected_at = std::str::from_utf8(&bytes)
            .err()
            .map(|e| e.valid_up_to())
            .unwrap_or(usize::MAX);
        let (file, diagnostic) = parser::decode_source("bad.tp", bytes);
        let diagnostic = diagnostic.unwrap_or_else(|| panic!("no diagnostic"));
        assert_eq!(diagnostic.primary.span.start as usize, expected_at);
        assert_eq!(diagnostic.code, "encoding");
        let _ = render(&diagnostic, &file, false);
    }
}

#[test]
fn odd_but_valid_inputs() {
    for text in [
        "",
        "\n\n\n",
        "# only a comment",
        "\u{FEFF}",
        "\u{FEFF}def f():\n    pass",
        "def f():\r\n    pass\r\n",
        "def f():\r    pass\r",
        "def f(): pass",
        "import torch",
        "def f():\n    return\\\n        1\n",
    ] {
        assert!(exercise(text.as_bytes().to_vec()), "{text:?} should parse");
    }
    let file = SourceFile::new("empty.tp", "");
    let diagnostic = tpi::Diagnostic::error("syntax", "at the end", tpi::Span::new(0, 0));
    assert!(render(&diagnostic, &file, false).contains("at the end"));
}
