use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use tpi::testing::{self, CaseResult, Comparison, Mode, Status};

/// `path/under/tests/oracle.tp:function`, each with the reason.
const KNOWN_ORACLE_FAILURES: &[(&str, &str)] = &[
    // The op-coverage audit (tests/oracle/audit_coverage_2.tp): aten
    // overload names and schemas are not checked.
    (
        "audit_coverage_2.tp:test_aten_add_scalar_tensor_arg",
        "aten overload schemas not checked",
    ),
    (
        "audit_coverage_2.tp:test_aten_bad_overload_add",
        "aten overload names not checked",
    ),
    (
        "audit_coverage_2.tp:test_aten_bad_overload_swapaxes",
        "aten overload names not checked",
    ),
    // An unbacked size in a contiguous stride is `Max(1, u0)` in PyTorch
    // (its range starts at 0); tpi has no Max atom.
    (
        "unbacked_sizes.tp:test_mask_dim1",
        "Max(1, u0) in a contiguous stride not modelled",
    ),
    // Symbolic sizes (tests/oracle/audit_symbolic_{1,2}.tp): a hint-0 size
    // stays symbolic through pointwise ops and specialises in clone.
    (
        "audit_symbolic_2.tp:test_h0_empty",
        "a hint-0 size stays symbolic through pointwise ops",
    ),
    // Result dtypes and invalid-argument checks the audits found that tpi
    // does not model yet (tests/oracle/audit_dtype_1.tp, audit_errors_1.tp).
    (
        "audit_dtype_1.tp:test_add_f16_0dc64",
        "complex32 (ComplexHalf) not modelled",
    ),
    (
        "audit_dtype_1.tp:test_c32_abs",
        "complex32 (ComplexHalf) not modelled",
    ),
    (
        "audit_dtype_1.tp:test_c32_cat_c64",
        "complex32 (ComplexHalf) not modelled",
    ),
    (
        "audit_dtype_1.tp:test_c32_real",
        "complex32 (ComplexHalf) not modelled",
    ),
    (
        "audit_dtype_1.tp:test_c32_sum",
        "complex32 (ComplexHalf) not modelled",
    ),
    (
        "audit_dtype_1.tp:test_c32_view_as_real",
        "complex32 (ComplexHalf) not modelled",
    ),
    (
        "audit_dtype_1.tp:test_lerp_f32_c64weight",
        "complex autograd errors (throw_error_for_complex_autograd) not modelled",
    ),
    (
        "audit_dtype_1.tp:test_linear_f16_f32",
        "the matmul family's meta dtypes and refs dot check not modelled",
    ),
    (
        "audit_dtype_1.tp:test_masked_fill_f16_complex",
        "dtype rule of the analysis's decomposition or eager kernel not modelled",
    ),
    (
        "audit_dtype_1.tp:test_mul_f16_0dc64",
        "complex32 (ComplexHalf) not modelled",
    ),
    (
        "audit_dtype_1.tp:test_pow_f16_complex",
        "complex32 (ComplexHalf) not modelled",
    ),
    (
        "audit_dtype_1.tp:test_view_as_complex_f16",
        "complex32 (ComplexHalf) not modelled",
    ),
    (
        "audit_dtype_1.tp:test_where_c64_f16",
        "complex autograd errors (throw_error_for_complex_autograd) not modelled",
    ),
    // Eager value checks the audit found that tpi does not model yet
    // (tests/oracle/audit_eager_2.tp): a number that overflows through
    // where's wrapped scalar;
    // bernoulli_'s literal tensor p.
    (
        "audit_eager_2.tp:test_value_int8_where_300",
        "where's scalar overflow not modelled",
    ),
    (
        "audit_eager_2.tp:test_value_bernoulli_p_tensor",
        "literal tensor p not checked",
    ),
    // abs() of a symbolic size is sympy's Abs(...) without a guard; tpi has no
    // Abs atom: it guards the sign by the hint and gives `m - 2` (the same value
    // under that guard), which is not PyTorch's expression.
    (
        "pytorch/dynamic_shapes_6.tp:test_abs_neg__dynamic",
        "Abs of a symbolic size not modelled (tpi guards its sign)",
    ),
    (
        "pytorch/dynamic_shapes_6.tp:test_abs_neg_clone__dynamic",
        "Abs of a symbolic size not modelled (tpi guards its sign)",
    ),
    // x[: m % -3]: PyTorch 2.7.1's slice decomposition leaves the end
    // PythonMod(m, -3) (negative at the hint) unwrapped, a size of -2; eager
    // and tpi wrap it (n - 2 rows).
    (
        "pytorch/dynamic_shapes_9.tp:test_unpack1_negmod__dynamic",
        "PyTorch's analysis keeps a negative PythonMod slice end unwrapped",
    ),
    // PyTorch's answer is `((l//2)) - (((-(Mod(l, 2)))//2))`, equal to tpi's
    // `-((l % 2)//2) + (l//2) + (l % 2)`, but tp_compare cannot evaluate
    // sympy's Mod(a, b) spelling.
    (
        "pytorch/dynamic_shapes_7.tp:test_conv1d_symint_padding_mut__dynamic",
        "the comparison cannot evaluate Mod(...) in PyTorch's expression",
    ),
    // FakeTensor constants: tpi knows the values of int literals only, so
    // `.item()` of a float constant, and a 0-dim constant used as a size
    // (`__index__`), are refused.
    (
        "pytorch/fake_tensor_1.tp:test_const_simple",
        "item() of a float FakeTensor constant not modelled",
    ),
    (
        "pytorch/fake_tensor_1.tp:test_const_inplace_add_item",
        "item() of a float FakeTensor constant not modelled",
    ),
    (
        "pytorch/fake_tensor_1.tp:test_const_zero_dim_size",
        "0-dim tensor as a size (__index__) not modelled",
    ),
    (
        "pytorch/fake_tensor_1.tp:test_const_fake_tensor_in_intlist_repro",
        "0-dim tensors as sizes (__index__) in eager not modelled",
    ),
    // CPU autocast's fp32 list casts view_as_complex's input to float32
    // first (a complex copy, not a view); only prod's cast is modelled.
    (
        "pytorch/autocast_cpu_2.tp:test_autocast_view_as_complex_bf16",
        "autocast fp32 cast of view_as_complex not modelled",
    ),
    // A 0-dim complex64 times float16 is complex32, a dtype outside the language.
    (
        "pytorch/type_promotion_1.tp:test_complex_promotion_cfloat_0dim_half",
        "complex32 not modelled",
    ),
    // PyTorch's test_indexing.py (pytorch/indexing_*.tp). FakeTensor
    // constants propagate through ops (`one.int()`); tpi keeps only the
    // literals' own.
    (
        "pytorch/indexing_2.tp:test_getitem_scalars",
        "fake-tensor constants not modelled",
    ),
    // 2.7.1 eager quirk: index_put_ with None placeholders around a mask.
    (
        "pytorch/indexing_2.tp:test_multi_dimensional_bool_mask_index_put",
        "eager quirk not modelled",
    ),
    // index_put_ with an empty index list on a 0-dim tensor.
    (
        "pytorch/indexing_2.tp:test_index_put_accumulate_empty",
        "empty index list not modelled",
    ),
    // The number of elements a mask selects is data: the value's size is not checked against it.
    (
        "pytorch/indexing_3.tp:test_boolean_assignment_value_mismatch_empty",
        "mask counts are data",
    ),
    (
        "pytorch/indexing_3.tp:test_boolean_assignment_value_mismatch_slice",
        "mask counts are data",
    ),
    // Minimised random programs (tests/random/REPORT.md) that tpi still gets wrong.
    // PyTorch's inference_mode KeyError: a view of an inference base is not modelled
    (
        "random/regress_inference_mode_keyerror.tp:view_of_inference_base_ok",
        "unmodelled, see the comment",
    ),
    // With symbolic sizes, a tensor made by empty(memory_format=channels_last)
    // (clone(memory_format=channels_last) of a contiguous tensor) whose
    // layout is also contiguous reports is_contiguous(channels_last) False
    // (measured; not for empty_like or a clone of a transposed tensor), so
    // the refs' elementwise layout short-circuits to contiguous.
    (
        "symbolic_inplace_fast_path.tp:relu_on_channels_last_clone",
        "FakeTensor's channels-last flag of an ambiguous symbolic layout not modelled",
    ),
];

fn corpus(folder: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests")
        .join(folder)
}

fn run(folder: &Path) -> Vec<CaseResult> {
    let mut cases = testing::discover(&[folder.to_path_buf()], &tpi::Options::default())
        .unwrap_or_else(|e| panic!("{e}"));
    // Show paths as `tests/oracle/x.tp`, wherever the checkout is.
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    for case in &mut cases {
        if let Ok(relative) = case.path.strip_prefix(manifest) {
            case.display = relative.display().to_string();
        }
    }
    assert!(!cases.is_empty(), "no .tp files in {}", folder.display());
    testing::run_all(
        &cases,
        &Mode::default(),
        testing::default_jobs(),
        |_, _, _| {},
    )
}

/// level difference, an unreadable file), paths relative to `root`.
fn failures(results: &[CaseResult], root: &Path) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for result in results {
        let file = result
            .case
            .path
            .strip_prefix(root)
            .unwrap_or(&result.case.path)
            .to_string_lossy()
            .replace('\\', "/");
        if matches!(result.status, Status::New | Status::Error) || result.error.is_some() {
            out.insert(file.clone());
        }
        for check in &result.checks {
            match &check.comparison {
                Some(Comparison::Json {
                    file: file_level,
                    functions,
                    ..
                }) => {
                    if !file_level.is_empty() {
                        out.insert(file.clone());
                    }
                    for f in functions.iter().filter(|f| !f.problems.is_empty()) {
                        out.insert(format!("{file}:{}", f.name));
                    }
                }
                Some(text @ Comparison::Text { .. }) if !text.passed() => {
                    out.insert(file.clone());
                }
                _ => {}
            }
        }
    }
    out
}

/// The reports of the failing cases, as `tpi test` prints them.
fn reports(results: &[CaseResult]) -> String {
    results
        .iter()
        .filter(|r| r.status != Status::Pass)
        .map(|r| testing::render_case(r, false, false))
        .collect()
}

#[test]
fn conformance_corpus_passes() {
    let root = corpus("conformance");
    let results = run(&root);
    let totals = testing::Totals::of(&results);
    println!(
        "tests/conformance: {} ({} functions)",
        totals.summary(),
        totals.functions
    );
    assert!(
        totals.passed == results.len(),
        "tests/conformance must pass entirely; {}:\n{}",
        totals.summary(),
        reports(&results)
    );
}

/// the comments cannot drift from the truth unnoticed.
#[test]
fn examples_match_pytorch() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples");
    let results = run(&root);
    let totals = testing::Totals::of(&results);
    assert!(
        totals.passed == results.len(),
        "examples/ must match their expected files; {}:\n{}",
        totals.summary(),
        reports(&results)
    );
}

#[test]
fn oracle_corpus_has_no_regressions() {
    let root = corpus("oracle");
    let results = run(&root);
    let failing = failures(&results, &root);
    let known: BTreeSet<String> = KNOWN_ORACLE_FAILURES
        .iter()
        .map(|(unit, _)| unit.to_string())
        .collect();
    let functions: usize = results.iter().map(|r| r.functions.len()).sum();
    let failed_functions = failing.iter().filter(|u| u.contains(':')).count();
    println!(
        "tests/oracle: {}/{functions} functions pass ({} known failure(s))",
        functions - failed_functions,
        known.len()
    );
    let unexpected: Vec<&String> = failing.difference(&known).collect();
    let fixed: Vec<&String> = known.difference(&failing).collect();
    let mut message = String::new();
    if !unexpected.is_empty() {
        message += &format!(
            "new failures in tests/oracle (fix them, or list them with a reason in \
             KNOWN_ORACLE_FAILURES):\n  {}\n\n",
            unexpected
                .iter()
                .map(|s| s.as_str())
                .collect::<Vec<_>>()
                .join("\n  ")
        );
    }
    if !fixed.is_empty() {
        message += &format!(
            "known failures that pass now (remove them from KNOWN_ORACLE_FAILURES):\n  {}\n\n",
            fixed
                .iter()
                .map(|s| s.as_str())
                .collect::<Vec<_>>()
                .join("\n  ")
        );
    }
    if !message.is_empty() {
        panic!(
            "{message}tpi test tests/oracle says:\n{}",
            reports(&results)
        );
    }
}

/// The error messages of a function's JSON: the analysis's, then eager's.
fn messages(function: &serde_json::Value) -> Vec<(&'static str, String)> {
    let at = |v: &serde_json::Value| v["message"].as_str().map(str::to_string);
    [
        ("error", &function["error"]),
        ("forward_error", &function["eager"]["forward_error"]),
        ("backward_error", &function["eager"]["backward_error"]),
    ]
    .into_iter()
    .filter_map(|(key, v)| at(v).map(|m| (key, m)))
    .collect()
}

/// Autograd's messages name a saved tensor's type, sizes, node and versions
/// as PyTorch does (tests/oracle/autograd_messages.tp): every message there
/// is PyTorch's first line word for word, which the comparisons above (codes
/// only) do not check.
#[test]
fn autograd_messages_are_pytorchs() {
    assert_messages_are_pytorchs("autograd_messages.tp", 100);
}

/// Which node's error a backward raises first, where several nodes would
/// (CopySlices' wrapped node before its gradient's validation or its copy):
/// the codes alike, told apart by the messages only.
#[test]
fn first_backward_error_is_pytorchs() {
    for file in [
        "copyslices_wrapped_node_first.tp",
        "copyslices_not_implemented_first.tp",
        "copyslices_wrapped_no_derivative_first.tp",
    ] {
        assert_messages_are_pytorchs(file, 2);
    }
}

/// Every error message tpi gives for the functions of `name` (in
/// tests/oracle, all of which raise) is PyTorch's first line word for word.
fn assert_messages_are_pytorchs(name: &str, at_least: usize) {
    let file = corpus("oracle").join(name);
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_tpi"))
        .args(["check", "--format", "json"])
        .arg(&file)
        .output()
        .expect("tpi runs");
    let got: serde_json::Value = serde_json::from_slice(&output.stdout).expect("tpi prints JSON");
    let expected: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(file.with_extension("json")).expect("the oracle's answers"),
    )
    .expect("the oracle's JSON");
    let functions = expected["functions"].as_array().expect("functions");
    assert!(functions.len() > at_least, "{name} lost its functions");
    let mut wrong = Vec::new();
    for f in functions {
        let func = f["name"].as_str().unwrap_or_default();
        let ours = got["functions"]
            .as_array()
            .and_then(|all| all.iter().find(|g| g["name"] == f["name"]))
            .map(messages)
            .unwrap_or_default();
        let theirs = messages(f);
        assert!(
            !theirs.is_empty(),
            "{name} {func}: every function here raises"
        );
        for (key, message) in theirs {
            let mine = ours
                .iter()
                .find(|(k, _)| *k == key)
                .map(|(_, m)| m.lines().next().unwrap_or_default());
            if mine != Some(message.as_str()) {
                wrong.push(format!(
                    "{func} {key}:\n  PyTorch: {message}\n  tpi:     {}",
                    mine.unwrap_or("(none)")
                ));
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "{name}: {} message(s) differ:\n{}",
        wrong.len(),
        wrong.join("\n")
    );
}
