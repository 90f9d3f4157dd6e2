//! The REPL session: pure logic, no terminal. `Session::eval` takes one
//! complete input (a statement, a `def`, a declaration or a `:command`) and
//! returns the text to show.
//!
//! The session is a live function body, kept as persistent data (`im`):
//! the declared inputs (`x: Tensor(4, 4)` lines), the accepted statements
//! and the defined functions, each as the piece of input text it came from.
//! To run a new statement, the session's program is rebuilt with it
//! (`program.rs`) and the whole body is run again by the analysis; the
//! difference between what the run before knew and what this one knows is
//! what the statement did (new values, mutations of inputs, eager
//! hazards). A statement that fails leaves the state as it was, and every
//! accepted input pushes the previous state on a history that `:undo` pops
//! (a pointer swap: the structures are shared).

use super::describe::{self, Scope};
use super::program::{
    BodyStatement, Builder, Piece, Program, SESSION_DISPLAY_NAME, SESSION_FUNCTION,
};
use crate::analysis::domain::{StorageId, TensorId};
use crate::analysis::interp::op_error;
use crate::analysis::is_tensor_annotation;
use crate::analysis::meta::{self, MutationType, Param};
use crate::analysis::state::Mode;
use crate::analysis::value::Value;
use crate::analysis::{self, eager, run_function, FunctionResult, Run};
use crate::report::{render, Diagnostic, Severity};
use crate::syntax::ast::{ExprKind, FunctionDef, Item, Module, Name, Stmt, StmtKind};
use crate::syntax::parser::{self, Entry};
use crate::syntax::{SourceFile, Span};
use crate::{Options, Outcome};
use std::collections::BTreeMap;
use std::fmt::Write;
use std::rc::Rc;

/// How many earlier states `:undo` can go back to.
const MAX_UNDO: usize = 10_000;

/// A declared input: `x: Tensor(4, 4, requires_grad=True)`.
#[derive(Clone, Debug)]
pub struct Input {
    pub name: String,
    /// The declaration, which is also the parameter's text.
    pub piece: Piece,
}

/// A defined function (typed in, or brought in by `:load`).
#[derive(Clone, Debug)]
pub struct Def {
    pub piece: Piece,
    /// Every parameter is a `Tensor(...)` or has a default: `:check` analyses it.
    pub entry: bool,
}

/// What a run of the session knew about one local name.
#[derive(Clone, Debug, PartialEq)]
struct Named {
    /// The tensors the value holds (to notice a rebinding to an equal-looking value).
    tensors: Vec<TensorId>,
    /// `v = Tensor[16] float32, …` (or `x: input 0, …`).
    line: String,
    /// The value alone.
    value: String,
    /// Worth showing when an expression statement made it (not `None`,
    /// not a context manager).
    shown: bool,
}

/// What a run of the session knew about one input.
#[derive(Clone, Debug, PartialEq)]
struct InputFacts {
    name: String,
    /// Data writes into its storage so far.
    writes: u32,
    /// `data`, `metadata`, … mutated so far.
    kinds: Vec<&'static str>,
    mutation_type: MutationType,
    /// Why it has that type, in `tpi check`'s words.
    reasons: Vec<String>,
}

impl InputFacts {
    /// `MUTATED_OUT_GRAPH`, then the reasons on their own lines.
    fn verdict(&self) -> String {
        let mut text = self.mutation_type.name().to_string();
        for reason in &self.reasons {
            let _ = write!(text, "\n  {reason}");
        }
        text
    }
}

/// What a run of the session knew, kept to tell what the next input did.
#[derive(Clone, Debug)]
struct Summary {
    names: BTreeMap<String, Named>,
    inputs: Vec<InputFacts>,
    /// Data writes into each storage that no input owns, and the names on it.
    intermediate_writes: BTreeMap<StorageId, (u32, Vec<String>)>,
    grad_enabled: bool,
    /// Autocast per device: enabled, and the dtype.
    autocast: Vec<(String, bool, &'static str)>,
    inference_mode: bool,
    num_inputs: usize,
    assumptions: Vec<String>,
}

impl Default for Summary {
    fn default() -> Summary {
        Summary {
            names: BTreeMap::new(),
            inputs: Vec::new(),
            intermediate_writes: BTreeMap::new(),
            grad_enabled: true,
            autocast: Vec::new(),
            inference_mode: false,
            num_inputs: 0,
            assumptions: Vec::new(),
        }
    }
}

/// The session's state: persistent, so that keeping old ones is cheap.
#[derive(Clone, Default)]
pub struct State {
    pub inputs: im::Vector<Input>,
    pub body: im::Vector<BodyStatement>,
    pub functions: im::OrdMap<Name, Def>,
    /// The last `return` that was reported (`:check` and `:json` use it).
    pub last_return: Option<Piece>,
    summary: Rc<Summary>,
}

impl State {
    fn is_empty(&self) -> bool {
        self.inputs.is_empty() && self.body.is_empty() && self.functions.is_empty()
    }
}

/// The answer to one input.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Reply {
    /// What to show (ends with a newline when not empty).
    pub text: String,
    /// The input had an error (the state did not change).
    pub error: bool,
    /// The input asks to leave the REPL.
    pub quit: bool,
}

impl Reply {
    pub fn ok(text: impl Into<String>) -> Reply {
        Reply {
            text: text.into(),
            ..Reply::default()
        }
    }

    pub fn error(text: impl Into<String>) -> Reply {
        Reply {
            text: text.into(),
            error: true,
            quit: false,
        }
    }
}

/// A REPL session.
pub struct Session {
    state: State,
    /// Earlier states, with what changed them (for `:undo`).
    history: im::Vector<(State, String)>,
    /// Inputs read so far (`<repl:N>` names the N-th).
    inputs_read: usize,
    options: Options,
    color: bool,
}

/// The session's program, parsed and analysed: what the commands read.
struct Analysed {
    program: Program,
    module: Module,
    results: Vec<FunctionResult>,
}

impl Session {
    /// A new, empty session; `color` colours the rendered diagnostics.
    pub fn new(options: Options, color: bool) -> Session {
        Session {
            state: State::default(),
            history: im::Vector::new(),
            inputs_read: 0,
            options,
            color,
        }
    }

    /// Evaluates one complete input. Never panics: should the analysis
    /// fail on a bug of tpi's, the input is refused and the state kept.
    pub fn eval(&mut self, input: &str) -> Reply {
        if input.trim().is_empty() {
            return Reply::default();
        }
        self.inputs_read += 1;
        let outcome =
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| self.eval_input(input)));
        outcome.unwrap_or_else(|_| {
            Reply::error("tpi: internal error while evaluating this input (a bug in tpi: please report it); the session is unchanged\n")
        })
    }

    /// Every name in scope (inputs, locals, functions), for completion.
    pub fn names(&self) -> Vec<String> {
        let mut names: Vec<String> = self.state.inputs.iter().map(|i| i.name.clone()).collect();
        names.extend(self.state.summary.names.keys().cloned());
        names.extend(self.state.functions.keys().map(Name::to_string));
        names.sort();
        names.dedup();
        names
    }

    fn eval_input(&mut self, input: &str) -> Reply {
        let trimmed = input.trim();
        if trimmed.starts_with(':') {
            return super::commands::run(self, trimmed);
        }
        let name = format!("<repl:{}>", self.inputs_read);
        let source = Rc::new(SourceFile::new(name, input.trim_end()));
        match parser::parse_interactive(&source.text) {
            Err(diagnostics) => Reply::error(self.render_in(&source, &diagnostics)),
            Ok(entries) => self.eval_entries(&source, entries),
        }
    }

    fn render_in(&self, file: &SourceFile, diagnostics: &[Diagnostic]) -> String {
        diagnostics
            .iter()
            .map(|d| render::render(d, file, self.color))
            .collect()
    }

    fn eval_entries(&mut self, source: &Rc<SourceFile>, entries: Vec<Entry>) -> Reply {
        let mut candidate = self.state.clone();
        let fresh_from = candidate.body.len();
        let mut returned: Option<Piece> = None;
        let mut new_defs: Vec<(String, String)> = Vec::new();
        let mut changed = false;
        let mut shows_value = false;
        let whole = Piece::new(source, Span::new(0, source.text.len()));
        for entry in &entries {
            let span = match entry {
                Entry::Item(Item::Def(d)) => d.span,
                Entry::Item(Item::Import(i)) => i.span,
                Entry::Stmt(s) => s.span,
            };
            if returned.is_some() {
                let d = Diagnostic::error(
                    "syntax",
                    "nothing may follow `return` in the same input",
                    span,
                )
                .with_label("after the `return`")
                .with_help(
                    "`return` reports the session so far; type the next statement on its own",
                );
                return Reply::error(self.render_in(source, &[d]));
            }
            let piece = Piece::new(source, span);
            shows_value = false;
            match entry {
                Entry::Item(Item::Import(_)) => {}
                Entry::Item(Item::Def(def)) => {
                    if def.name.name == SESSION_FUNCTION {
                        let d = Diagnostic::error(
                            "syntax",
                            format!(
                                "`{SESSION_FUNCTION}` is the name tpi gives the session itself"
                            ),
                            def.name.span,
                        )
                        .with_label("reserved")
                        .with_help("choose another name");
                        return Reply::error(self.render_in(source, &[d]));
                    }
                    new_defs.push((def.name.name.to_string(), signature(def)));
                    candidate.functions.insert(
                        def.name.name.clone(),
                        Def {
                            piece,
                            entry: analysis::is_entry(def),
                        },
                    );
                    changed = true;
                }
                Entry::Stmt(stmt) => match &stmt.kind {
                    StmtKind::AnnAssign {
                        target,
                        annotation,
                        value: None,
                    } => {
                        let ExprKind::Name(name, _) = &target.kind else {
                            let d = Diagnostic::error(
                                "syntax",
                                "only a name can be declared as an input",
                                target.span,
                            )
                            .with_label("not a name")
                            .with_help("declare inputs as `x: Tensor(4, 4)`");
                            return Reply::error(self.render_in(source, &[d]));
                        };
                        if !is_tensor_annotation(annotation) {
                            let d = Diagnostic::error("syntax", "a bare annotation declares an input, which must be a `Tensor(...)`", annotation.span)
                                .with_label("not `Tensor(...)`")
                                .with_help(format!("declare a tensor input as `{name}: Tensor(4, 4)`, or give a value: `{name}: int = 3`"));
                            return Reply::error(self.render_in(source, &[d]));
                        }
                        let input = Input {
                            name: name.to_string(),
                            piece,
                        };
                        match candidate
                            .inputs
                            .iter()
                            .position(|i| i.name == name.as_str())
                        {
                            Some(at) => {
                                candidate.inputs.set(at, input);
                            }
                            None => candidate.inputs.push_back(input),
                        }
                        changed = true;
                    }
                    StmtKind::Return(_) => returned = Some(piece),
                    _ if contains_return(std::slice::from_ref(stmt)) => {
                        let at = return_span(std::slice::from_ref(stmt)).unwrap_or(stmt.span);
                        let d = Diagnostic::error("syntax", "a `return` inside a block would end the session there", at)
                            .with_label("inside a block")
                            .with_help("type `return a, b` on its own line to see the report for those outputs");
                        return Reply::error(self.render_in(source, &[d]));
                    }
                    kind => {
                        let binds_value = matches!(kind, StmtKind::Expr(_));
                        shows_value = binds_value;
                        candidate
                            .body
                            .push_back(BodyStatement { piece, binds_value });
                        changed = true;
                    }
                },
            }
        }
        let mut out = String::new();
        let mut error = false;
        for (name, signature) in &new_defs {
            let kind = if candidate
                .functions
                .get(name.as_str())
                .is_some_and(|d| d.entry)
            {
                "entry"
            } else {
                "helper"
            };
            let _ = writeln!(out, "defined {kind} `{signature}`");
        }
        if changed {
            match self.attempt(&candidate, fresh_from, &whole, shows_value) {
                Err(text) => return Reply::error(text),
                Ok((summary, text)) => {
                    out.push_str(&text);
                    candidate.summary = Rc::new(summary);
                    let label = format!("{}: {}", source.name, whole.first_line());
                    self.commit(candidate, label);
                }
            }
        }
        for (name, _) in &new_defs {
            if !self
                .state
                .functions
                .get(name.as_str())
                .is_some_and(|d| d.entry)
            {
                continue;
            }
            match self.analyse(None) {
                Err(text) => {
                    out.push_str(&text);
                    error = true;
                }
                Ok(analysed) => {
                    if let Some(result) = analysed.results.iter().find(|r| r.name == *name) {
                        error |= result.error().is_some();
                        out.push_str(&describe::function_report(
                            &analysed.program,
                            &analysed.module,
                            result,
                            self.color,
                        ));
                    }
                }
            }
        }
        if let Some(piece) = returned {
            let reply = self.report_return(piece);
            out.push_str(&reply.text);
            error |= reply.error;
        }
        Reply {
            text: out,
            error,
            quit: false,
        }
    }

    fn commit(&mut self, state: State, label: String) {
        let previous = std::mem::replace(&mut self.state, state);
        self.history.push_back((previous, label));
        if self.history.len() > MAX_UNDO {
            self.history.pop_front();
        }
    }

    /// The session's program for `state`: the functions, then the session
    /// function with the body (statements from `fresh_from` on are the
    /// newest input's) and an optional `return`.
    fn program(
        state: &State,
        fresh_from: usize,
        returned: Option<&Piece>,
        fallback: Option<&Piece>,
    ) -> Program {
        let mut b = Builder::default();
        for def in state.functions.values() {
            b.piece(&def.piece, "");
            b.synthetic("\n");
        }
        b.synthetic(&format!("def {SESSION_FUNCTION}("));
        for (i, input) in state.inputs.iter().enumerate() {
            if i > 0 {
                b.synthetic(", ");
            }
            b.piece(&input.piece, "");
        }
        b.synthetic("):\n");
        let mut fresh = b.position()..b.position();
        for (i, statement) in state.body.iter().enumerate() {
            if i == fresh_from {
                fresh.start = b.position();
            }
            b.synthetic("    ");
            if statement.binds_value {
                b.synthetic("_ = ");
            }
            b.piece(&statement.piece, "    ");
            b.synthetic("\n");
        }
        if fresh_from >= state.body.len() {
            fresh.start = b.position();
        }
        if let Some(piece) = returned {
            b.synthetic("    ");
            b.piece(piece, "    ");
            b.synthetic("\n");
        }
        fresh.end = b.position();
        b.synthetic("    pass\n");
        b.finish(fresh, fallback.cloned())
    }

    fn render(&self, program: &Program, diagnostic: &Diagnostic) -> String {
        render::render_located(diagnostic, &|span| program.locate(span), self.color)
    }

    /// Runs the session as `candidate` has it. When the analysis accepts it,
    /// gives what it knows and the words for what the newest input did.
    fn attempt(
        &self,
        candidate: &State,
        fresh_from: usize,
        input: &Piece,
        shows_value: bool,
    ) -> Result<(Summary, String), String> {
        let program = Session::program(candidate, fresh_from, None, Some(input));
        self.run_program(&program, |module, functions, def, run| {
            self.describe_run(&program, module, functions, def, run, shows_value)
        })
    }

    /// Parses `program`, runs its session function under the analysis and,
    /// when the run succeeded, hands everything to `f`.
    fn run_program<T>(
        &self,
        program: &Program,
        f: impl FnOnce(
            &Module,
            &crate::analysis::Functions,
            &FunctionDef,
            &mut Run,
        ) -> Result<T, String>,
    ) -> Result<T, String> {
        let module = parse_program(&program.file.text).map_err(|diagnostics| {
            diagnostics
                .iter()
                .map(|d| self.render(program, d))
                .collect::<String>()
        })?;
        let functions = analysis::function_table(&module);
        let Some(def) = functions.get(SESSION_FUNCTION).copied() else {
            return Err("tpi: internal error: the session function is missing\n".to_string());
        };
        let mut run = run_function(&functions, def, Mode::Analysis);
        if let Err(d) = &run.outputs {
            return Err(self.render(program, d));
        }
        f(&module, &functions, def, &mut run)
    }

    /// What the newest input did, from the run of the session including it.
    fn describe_run(
        &self,
        program: &Program,
        module: &Module,
        functions: &crate::analysis::Functions,
        def: &FunctionDef,
        run: &mut Run,
        shows_value: bool,
    ) -> Result<(Summary, String), String> {
        let fresh_span = Span::new(program.fresh.start, program.fresh.end);
        let meta = meta::collect(
            &mut run.interp.m,
            &run.params,
            &[],
            self.options.keep_input_mutations,
            None,
        )
        .map_err(|e| self.render(program, &op_error(e.into_inner(), fresh_span)))?;
        let summary = summarise(program, module, run, &meta);
        let mut text = String::new();
        if shows_value {
            if let Some(named) = summary.names.get("_") {
                if named.shown {
                    let _ = writeln!(text, "{}", named.value);
                }
            }
        }
        text.push_str(&changes(&self.state.summary, &summary));
        let prediction = eager::predict(functions, def, None);
        if let Some(d) = prediction
            .forward_error
            .filter(|d| program.is_fresh(d.primary.span))
        {
            let mut warning = d;
            warning.severity = Severity::Warning;
            text.push_str(&self.render(program, &warning));
        }
        Ok((summary, text))
    }

    /// Analyses the session (with `returned`, or its last `return`) and
    /// every entry function.
    fn analyse(&self, returned: Option<&Piece>) -> Result<Analysed, String> {
        let returned = returned.or(self.state.last_return.as_ref());
        // An empty session has nothing to report.
        let with_session =
            returned.is_some() || !self.state.inputs.is_empty() || !self.state.body.is_empty();
        // Places of the session's own header show at the return, else at
        // the last statement or declaration.
        let fallback = returned
            .or(self.state.body.last().map(|s| &s.piece))
            .or(self.state.inputs.last().map(|i| &i.piece));
        let program = Session::program(&self.state, self.state.body.len(), returned, fallback);
        let module = parse_program(&program.file.text).map_err(|diagnostics| {
            diagnostics
                .iter()
                .map(|d| self.render(&program, d))
                .collect::<String>()
        })?;
        let functions = analysis::function_table(&module);
        let mut results = Vec::new();
        for item in &module.items {
            let Item::Def(def) = item else { continue };
            let session = def.name.name == SESSION_FUNCTION;
            if (session && with_session)
                || self
                    .state
                    .functions
                    .get(&def.name.name)
                    .is_some_and(|d| d.entry)
            {
                let mut result = analysis::analyse_function(&functions, def, &self.options);
                if session {
                    result.name = SESSION_DISPLAY_NAME.to_string();
                    // The session comes first.
                    results.insert(0, result);
                } else {
                    results.push(result);
                }
            }
        }
        Ok(Analysed {
            program,
            module,
            results,
        })
    }

    /// `return a, b`: the report of the session with those outputs.
    fn report_return(&mut self, piece: Piece) -> Reply {
        let analysed = match self.analyse(Some(&piece)) {
            Ok(analysed) => analysed,
            Err(text) => return Reply::error(text),
        };
        let Some(result) = analysed.results.first() else {
            return Reply::error("tpi: internal error: the session was not analysed\n");
        };
        let text =
            describe::function_report(&analysed.program, &analysed.module, result, self.color);
        let error = result.error().is_some();
        if !error {
            self.state.last_return = Some(piece);
        }
        Reply {
            text,
            error,
            quit: false,
        }
    }

    // ------------------------------------------------------------ commands

    /// Runs the session as it stands and hands the run to `f`.
    fn with_run<T>(&self, f: impl FnOnce(&Program, &mut Run) -> T) -> Result<T, String> {
        let program = Session::program(&self.state, self.state.body.len(), None, None);
        self.run_program(&program, |_, _, _, run| Ok(f(&program, run)))
    }

    /// `:info NAME` (or every local name without one).
    pub fn info(&self, name: Option<&str>) -> Reply {
        if let Some(name) = name {
            if let Some(def) = self.state.functions.get(name) {
                if !self.state.summary.names.contains_key(name) {
                    let kind = if def.entry {
                        "an entry (`:check` analyses it)"
                    } else {
                        "a helper"
                    };
                    let source = &def.piece.source;
                    let place = if source.name.starts_with("<repl:") {
                        source.name.clone()
                    } else {
                        format!(
                            "{}:{}",
                            source.name,
                            source.line_col(def.piece.span.start).0
                        )
                    };
                    return Reply::ok(format!(
                        "{name}: function, {kind}, defined at {place}\n  {}\n",
                        def.piece.first_line()
                    ));
                }
            }
        }
        let result = self.with_run(|program, run| {
            let env = run.env.clone();
            let scope = Scope::new(program, &run.params, &env);
            let m = &mut run.interp.m;
            match name {
                None => {
                    let mut text = String::new();
                    let sorted: BTreeMap<&Name, &Value> = env.iter().collect();
                    for (n, value) in sorted {
                        let _ = writeln!(text, "{}", name_line(&scope, m, n, value));
                    }
                    if text.is_empty() {
                        text.push_str("no names yet: declare an input with `x: Tensor(4, 4)`\n");
                    }
                    Ok(text)
                }
                Some(name) => match env.lookup_name(name) {
                    Some(Value::Tensor(id)) => Ok(scope.tensor_info(m, *id, name)),
                    Some(value) => Ok(format!("{}\n", name_line(&scope, m, name, value))),
                    None => {
                        let mut candidates: Vec<&str> = env.keys().map(Name::as_str).collect();
                        candidates.extend(self.state.functions.keys().map(Name::as_str));
                        let mut text = format!("unknown name `{name}`");
                        if let Some(s) = crate::ops::did_you_mean(name, candidates.into_iter()) {
                            let _ = write!(text, ": did you mean `{s}`?");
                        }
                        Err(text + "\n")
                    }
                },
            }
        });
        match result {
            Ok(Ok(text)) => Reply::ok(text),
            Ok(Err(text)) | Err(text) => Reply::error(text),
        }
    }

    /// `:inputs`: the declared inputs and what happened to them so far.
    pub fn inputs(&self) -> Reply {
        if self.state.inputs.is_empty() {
            return Reply::ok(
                "no inputs: declare one with `x: Tensor(4, 4, requires_grad=True)`\n",
            );
        }
        let mut text = String::new();
        for (i, input) in self.state.inputs.iter().enumerate() {
            let _ = write!(
                text,
                "input {i} {} ({})",
                input.piece.text(),
                input.piece.source.name
            );
            match self
                .state
                .summary
                .inputs
                .iter()
                .find(|f| f.name == input.name)
            {
                Some(facts) if !facts.kinds.is_empty() => {
                    let _ = writeln!(
                        text,
                        ": {} mutated, {}",
                        facts.kinds.join(", "),
                        facts.verdict()
                    );
                }
                _ => text.push_str(": not mutated\n"),
            }
        }
        Reply::ok(text)
    }

    /// `:check`: the report of the session and of every entry.
    pub fn check(&self) -> Reply {
        match self.analyse(None) {
            Err(text) => Reply::error(text),
            Ok(analysed) => {
                let mut text = String::new();
                if analysed.results.is_empty() {
                    text.push_str(
                        "nothing to check: declare inputs and type statements, or `:load` a file\n",
                    );
                }
                let mut error = false;
                for result in &analysed.results {
                    error |= result.error().is_some();
                    text.push_str(&describe::function_report(
                        &analysed.program,
                        &analysed.module,
                        result,
                        self.color,
                    ));
                }
                Reply {
                    text,
                    error,
                    quit: false,
                }
            }
        }
    }

    /// `:json`: the canonical JSON of the session and of every entry (its
    /// places are lines of `:source`).
    pub fn json(&self) -> Reply {
        match self.analyse(None) {
            Err(text) => Reply::error(text),
            Ok(analysed) => {
                let error = analysed.results.iter().any(|r| r.error().is_some());
                let outcome = Outcome {
                    module: None,
                    functions: analysed.results,
                    diagnostics: Vec::new(),
                };
                let document = crate::report::json::file_document(&analysed.program.file, &outcome);
                match serde_json::to_string_pretty(&document) {
                    Ok(text) => Reply {
                        text: text + "\n",
                        error,
                        quit: false,
                    },
                    Err(e) => Reply::error(format!("tpi: cannot write the JSON: {e}\n")),
                }
            }
        }
    }

    /// `:source`: the session as a `.tp` program.
    pub fn source(&self) -> Reply {
        let returned = self.state.last_return.as_ref();
        let program = Session::program(&self.state, self.state.body.len(), returned, None);
        let text = program.file.text.replacen(
            &format!("def {SESSION_FUNCTION}("),
            &format!("def {SESSION_DISPLAY_NAME}("),
            1,
        );
        let mut out = String::new();
        for (i, line) in text.lines().enumerate() {
            let _ = writeln!(out, "{:>4} | {line}", i + 1);
        }
        Reply::ok(out)
    }

    /// `:undo`: back to the state before the last accepted input.
    pub fn undo(&mut self) -> Reply {
        match self.history.pop_back() {
            None => Reply::error("nothing to undo\n"),
            Some((state, label)) => {
                self.state = state;
                Reply::ok(format!("undone: {label}\n"))
            }
        }
    }

    /// `:reset`: an empty session (`:undo` brings the old one back).
    pub fn reset(&mut self) -> Reply {
        if self.state.is_empty() {
            return Reply::ok("the session is already empty\n");
        }
        self.commit(State::default(), ":reset".to_string());
        Reply::ok("the session is empty (`:undo` brings it back)\n")
    }

    /// `:load FILE`: brings the file's functions into the session.
    pub fn load(&mut self, path: &str) -> Reply {
        let bytes = match std::fs::read(path) {
            Ok(bytes) => bytes,
            Err(e) => return Reply::error(format!("cannot read {path}: {}\n", io_reason(&e))),
        };
        let (file, bad) = parser::decode_source(path, bytes);
        if let Some(d) = bad {
            return Reply::error(self.render_in(&file, &[d]));
        }
        let module = match parser::parse_module(&file.text) {
            Ok(module) => module,
            Err(diagnostics) => return Reply::error(self.render_in(&file, &diagnostics)),
        };
        let file = Rc::new(file);
        let mut candidate = self.state.clone();
        let mut loaded = Vec::new();
        for item in &module.items {
            let Item::Def(def) = item else { continue };
            if def.name.name == SESSION_FUNCTION {
                let d = Diagnostic::error(
                    "syntax",
                    format!("`{SESSION_FUNCTION}` is the name tpi gives the session itself"),
                    def.name.span,
                );
                return Reply::error(self.render_in(&file, &[d]));
            }
            let entry = analysis::is_entry(def);
            loaded.push(if entry {
                format!("{} (entry)", def.name.name)
            } else {
                def.name.name.to_string()
            });
            candidate.functions.insert(
                def.name.name.clone(),
                Def {
                    piece: Piece::new(&file, def.span),
                    entry,
                },
            );
        }
        if loaded.is_empty() {
            return Reply::ok(format!("{path} defines no function\n"));
        }
        let whole = Piece::new(&file, Span::new(0, file.text.len()));
        let fresh_from = candidate.body.len();
        match self.attempt(&candidate, fresh_from, &whole, false) {
            Err(text) => Reply::error(text),
            Ok((summary, text)) => {
                candidate.summary = Rc::new(summary);
                self.commit(candidate, format!(":load {path}"));
                Reply::ok(format!(
                    "{text}loaded {} from {path}; `:check` analyses the entries\n",
                    loaded.join(", ")
                ))
            }
        }
    }
}

/// `f(x, y)` for a definition.
/// Parses a session's program. Its session function stands for the
/// REPL's top level, where Python's names are globals: binding `torch`
/// in a later input does not make an earlier read of it an unbound local,
/// as it would inside a function (`FunctionDef::bound`).
fn parse_program(text: &str) -> Result<Module, Vec<crate::report::Diagnostic>> {
    let mut module = parser::parse_module(text)?;
    for item in &mut module.items {
        if let Item::Def(def) = item {
            if def.name.name == SESSION_FUNCTION {
                def.bound.iter_mut().for_each(|b| *b = false);
            }
        }
    }
    Ok(module)
}

fn signature(def: &FunctionDef) -> String {
    let params: Vec<&str> = def.params.iter().map(|p| p.name.name.as_str()).collect();
    format!("{}({})", def.name.name, params.join(", "))
}

fn contains_return(stmts: &[Stmt]) -> bool {
    return_span(stmts).is_some()
}

/// The span of the first `return` in these statements or their blocks.
fn return_span(stmts: &[Stmt]) -> Option<Span> {
    stmts.iter().find_map(|s| match &s.kind {
        StmtKind::Return(_) => Some(s.span),
        StmtKind::With { body, .. } | StmtKind::For { body, .. } => return_span(body),
        StmtKind::If { body, orelse, .. } => return_span(body).or_else(|| return_span(orelse)),
        _ => None,
    })
}

fn io_reason(error: &std::io::Error) -> String {
    match error.kind() {
        std::io::ErrorKind::NotFound => "no such file".to_string(),
        std::io::ErrorKind::PermissionDenied => "permission denied".to_string(),
        std::io::ErrorKind::IsADirectory => "it is a directory".to_string(),
        _ => error.to_string(),
    }
}

/// `x: input 0, Tensor[…]…` for an input under its own name, else
/// `name = value`.
fn name_line(
    scope: &Scope,
    m: &crate::analysis::state::Machine,
    name: &str,
    value: &Value,
) -> String {
    if let Value::Tensor(id) = value {
        if let Some(i) = m.tensors.get(*id).and_then(|t| t.input()) {
            if scope.inputs.get(i).is_some_and(|n| n == name) {
                return format!("{name}: input {i}, {}", scope.tensor(m, *id, Some(name)));
            }
        }
    }
    format!("{name} = {}", scope.value(m, value, Some(name)))
}

fn tensors_of(value: &Value, out: &mut Vec<TensorId>) {
    match value {
        Value::Tensor(id) => out.push(*id),
        Value::Tuple(_) | Value::List(_) => {
            for item in value.sequence().unwrap_or_default() {
                tensors_of(&item, out);
            }
        }
        _ => {}
    }
}

/// What a run knew, in the words the REPL compares.
fn summarise(
    program: &Program,
    module: &Module,
    run: &Run,
    meta: &meta::ViewAndMutationMeta,
) -> Summary {
    let scope = Scope::new(program, &run.params, &run.env);
    let m = &run.interp.m;
    let mut names = BTreeMap::new();
    for (name, value) in run.env.iter() {
        let mut tensors = Vec::new();
        tensors_of(value, &mut tensors);
        names.insert(
            name.to_string(),
            Named {
                tensors,
                line: name_line(&scope, m, name, value),
                value: scope.value(m, value, None),
                shown: !matches!(value, Value::None | Value::Context(_)),
            },
        );
    }
    let mut inputs = Vec::new();
    let mut input_storages = Vec::new();
    for (index, (param, info)) in run.params.iter().zip(&meta.inputs).enumerate() {
        let Param::Tensor { storage, name, .. } = param else {
            continue;
        };
        input_storages.push(*storage);
        inputs.push(InputFacts {
            name: name.clone(),
            writes: m.storages.get(*storage).map_or(0, |s| s.mutations),
            kinds: describe::mutation_kinds(info),
            mutation_type: info.mutation_type,
            reasons: describe::mutation_reason(program, module, meta, index, info),
        });
    }
    let mut intermediate_writes = BTreeMap::new();
    for (id, storage) in m.storages.enumerate() {
        if storage.mutations == 0 || storage.input.is_some() || input_storages.contains(&id) {
            continue;
        }
        let mut on_it: Vec<String> = names
            .iter()
            .filter(|(n, named)| {
                n.as_str() != "_"
                    && named
                        .tensors
                        .iter()
                        .any(|t| m.tensors.get(*t).is_some_and(|t| t.storage == id))
            })
            .map(|(n, _)| format!("`{n}`"))
            .collect();
        on_it.dedup();
        intermediate_writes.insert(id, (storage.mutations, on_it));
    }
    let assumptions = run
        .interp
        .notes
        .iter()
        .map(|(span, text)| format!("{text} ({})", program.place(*span)))
        .collect();
    Summary {
        names,
        inputs,
        intermediate_writes,
        grad_enabled: m.grad_enabled,
        autocast: m
            .autocast
            .iter()
            .map(|a| (a.device.clone(), a.enabled, a.dtype.name()))
            .collect(),
        inference_mode: m.inference_mode,
        num_inputs: run.params.len(),
        assumptions,
    }
}

/// What changed between two runs, in words.
fn changes(before: &Summary, after: &Summary) -> String {
    let mut out = String::new();
    // Tensor ids shift when an input is declared: compare them only when the
    // inputs are the same.
    let same_ids = before.num_inputs == after.num_inputs;
    for (device, enabled, dtype) in &after.autocast {
        let was = before
            .autocast
            .iter()
            .find(|(d, ..)| d == device)
            .is_some_and(|(_, e, _)| *e);
        if was != *enabled {
            let state = if *enabled {
                format!("on ({dtype})")
            } else {
                "off".to_string()
            };
            let _ = writeln!(out, "autocast on {device} is now {state}");
        }
    }
    if before.grad_enabled != after.grad_enabled {
        let _ = writeln!(
            out,
            "grad mode is now {}",
            if after.grad_enabled { "on" } else { "off" }
        );
    }
    if before.inference_mode != after.inference_mode {
        let _ = writeln!(
            out,
            "inference mode is now {}",
            if after.inference_mode { "on" } else { "off" }
        );
    }
    for (name, named) in &after.names {
        if name == "_" {
            continue;
        }
        let unchanged = before.names.get(name).is_some_and(|old| {
            old.line == named.line && (!same_ids || old.tensors == named.tensors)
        });
        if !unchanged {
            let _ = writeln!(out, "{}", named.line);
        }
    }
    for input in &after.inputs {
        let old = before.inputs.iter().find(|i| i.name == input.name);
        let old_writes = old.map_or(0, |o| o.writes);
        let old_kinds: &[&str] = old.map_or(&[], |o| o.kinds.as_slice());
        let mut new_kinds: Vec<&str> = input
            .kinds
            .iter()
            .copied()
            .filter(|k| !old_kinds.contains(k))
            .collect();
        if input.writes > old_writes && !new_kinds.contains(&"data") {
            new_kinds.insert(0, "data");
        }
        if !new_kinds.is_empty() {
            let _ = writeln!(
                out,
                "mutates input {}'s {}: {}",
                input.name,
                new_kinds.join(" and "),
                input.verdict()
            );
        } else if old.is_some_and(|o| o.mutation_type != input.mutation_type) {
            let _ = writeln!(out, "input {} is now {}", input.name, input.verdict());
        }
    }
    if same_ids {
        for (storage, (writes, on_it)) in &after.intermediate_writes {
            let old = before
                .intermediate_writes
                .get(storage)
                .map_or(0, |(w, _)| *w);
            if *writes > old {
                let what = if on_it.is_empty() {
                    "an unnamed intermediate".to_string()
                } else {
                    on_it.join(", ")
                };
                let _ = writeln!(
                    out,
                    "writes into {what} (an intermediate: no input changes)"
                );
            }
        }
    }
    for assumption in &after.assumptions {
        if !before.assumptions.contains(assumption) {
            let _ = writeln!(out, "assumes {assumption}");
        }
    }
    out
}
