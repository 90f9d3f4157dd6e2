//! `tpi test` as a user runs it: a scratch folder of programs, blessed,
//! then broken; exit statuses, the last line, the diff, and `CI`.

use std::path::{Path, PathBuf};
use std::process::Command;

/// A fresh scratch folder under the target directory.
fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("tpi-test-{name}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    dir
}

fn write(dir: &Path, name: &str, text: &str) {
    std::fs::write(dir.join(name), text).unwrap_or_else(|e| panic!("{name}: {e}"));
}

/// Runs `tpi test ARGS` in `dir`: (exit status, stdout, stderr).
fn tpi_test(dir: &Path, args: &[&str], ci: bool) -> (i32, String, String) {
    let mut command = Command::new(env!("CARGO_BIN_EXE_tpi"));
    command.arg("test").args(args).current_dir(dir);
    command.env_remove("CI").env("NO_COLOR", "1");
    if ci {
        command.env("CI", "true");
    }
    let output = command.output().unwrap_or_else(|e| panic!("tpi: {e}"));
    (
        output.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

fn last_line(text: &str) -> &str {
    text.lines().last().unwrap_or("")
}

const ADD: &str = "import torch\n\ndef f(x: Tensor(4), y: Tensor(4)):\n    return x + y\n";
const VIEW: &str = "import torch\n\ndef g(x: Tensor(2, 3)):\n    return x.t()\n";

#[test]
fn new_bless_pass_then_fail() {
    let dir = scratch("cycle");
    write(&dir, "add.tp", ADD);
    write(&dir, "view.tp", VIEW);

    let (status, out, _) = tpi_test(&dir, &[], false);
    assert_eq!(status, 0, "{out}");
    assert!(out.contains("new  add.tp"), "{out}");
    assert_eq!(last_line(&out), "0 passed, 0 failed");

    let (status, _, err) = tpi_test(&dir, &["--bless"], true);
    assert_eq!(status, 2, "bless must be refused under CI");
    assert!(err.contains("CI"), "{err}");

    let (status, out, _) = tpi_test(&dir, &["--bless"], false);
    assert_eq!(status, 0, "{out}");
    assert!(out.contains("added     add.json"), "{out}");
    let blessed = std::fs::read_to_string(dir.join("add.json")).unwrap_or_default();
    assert!(blessed.starts_with("{\n  \"file\": \"add.tp\",\n  \"functions\": ["));
    assert!(blessed.ends_with("}\n") && !blessed.contains("because"));

    let (status, out, _) = tpi_test(&dir, &["-v"], false);
    assert_eq!(status, 0, "{out}");
    assert!(
        out.contains("ok   add.tp (1 function)") && out.contains("     ok   f"),
        "{out}"
    );
    assert_eq!(last_line(&out), "2 passed, 0 failed");

    // A mutation appears: the report names the field and the line.
    write(
        &dir,
        "add.tp",
        "import torch\n\ndef f(x: Tensor(4), y: Tensor(4)):\n    x.add_(y)\n    return x + y\n",
    );
    let (status, out, _) = tpi_test(&dir, &[], false);
    assert_eq!(status, 1, "{out}");
    assert!(out.contains("FAIL add.tp"), "{out}");
    assert!(
        out.contains("inputs[0].mutates_data: expected false, got true"),
        "{out}"
    );
    assert!(out.contains("add.tp:4:5: x.add_(y)"), "{out}");
    assert_eq!(last_line(&out), "1 passed, 1 failed");

    // Blessing rewrites only what changed.
    let before = std::fs::read_to_string(dir.join("add.json")).unwrap_or_default();
    let (status, out, _) = tpi_test(&dir, &["--bless"], false);
    assert_eq!(status, 0, "{out}");
    assert!(out.contains("updated   add.json") && out.contains("unchanged view.json"));
    let after = std::fs::read_to_string(dir.join("add.json")).unwrap_or_default();
    let changed = before
        .lines()
        .zip(after.lines())
        .filter(|(a, b)| a != b)
        .count();
    assert_eq!(before.lines().count(), after.lines().count());
    assert_eq!(changed, 3, "mutates_data, hidden, mutation_type:\n{after}");
    let (status, out, _) = tpi_test(&dir, &[], false);
    assert_eq!((status, last_line(&out)), (0, "2 passed, 0 failed"));
}

#[test]
fn text_expectations_show_a_unified_diff() {
    let dir = scratch("text");
    write(&dir, "view.tp", VIEW);
    let (status, out, _) = tpi_test(&dir, &["--bless", "--format", "text"], false);
    assert_eq!(status, 0, "{out}");
    assert!(dir.join("view.out").exists() && !dir.join("view.json").exists());
    write(&dir, "view.tp", &VIEW.replace("x.t()", "x.t().clone()"));
    let (status, out, _) = tpi_test(&dir, &[], false);
    assert_eq!(status, 1, "{out}");
    assert!(
        out.contains("--- view.out (expected)") && out.contains("@@ -"),
        "{out}"
    );
    assert!(
        out.lines().any(|l| l.trim_start().starts_with('+')),
        "{out}"
    );
}

#[test]
fn usage_and_io_errors_exit_2() {
    let dir = scratch("errors");
    let (status, _, err) = tpi_test(&dir, &["missing"], false);
    assert_eq!(status, 2);
    assert!(err.contains("missing"), "{err}");
    let (status, _, err) = tpi_test(&dir, &[], false);
    assert_eq!(status, 2, "no .tp files: {err}");

    write(&dir, "v.tp", VIEW);
    write(&dir, "v.json", "{ not json");
    let (status, out, _) = tpi_test(&dir, &[], false);
    assert_eq!(status, 2, "{out}");
    assert!(out.contains("error v.tp"), "{out}");
    assert_eq!(last_line(&out), "0 passed, 1 failed");

    write(&dir, "v.json", "{}");
    write(&dir, "tpi-test.flags", "--bogus\n");
    let (status, _, err) = tpi_test(&dir, &[], false);
    assert_eq!(status, 2);
    assert!(err.contains("--bogus"), "{err}");
}

#[test]
fn a_flags_file_sets_keep_input_mutations() {
    let dir = scratch("flags");
    write(
        &dir,
        "m.tp",
        "import torch\n\ndef f(x: Tensor(4)):\n    x.mul_(2)\n    return x + 1\n",
    );
    let (status, _, _) = tpi_test(&dir, &["--bless", "--no-keep-input-mutations"], false);
    assert_eq!(status, 0);
    let (status, out, _) = tpi_test(&dir, &[], false);
    assert_eq!(status, 1, "{out}");
    assert!(
        out.contains("tpi-test.flags"),
        "the hint names the file:\n{out}"
    );
    write(
        &dir,
        "tpi-test.flags",
        "# recorded without\n--no-keep-input-mutations\n",
    );
    let (status, out, _) = tpi_test(&dir, &[], false);
    assert_eq!(status, 0, "{out}");
}

/// `tpi check` on several files checks them on worker threads: a deeply
/// nested program among them is still a diagnostic (the workers have the
/// big stack), and `-j` bounds the workers.
#[test]
fn check_several_files_on_workers() {
    let dir = scratch("check-workers");
    let deep = format!(
        "def f(x: Tensor(4)):\n    return {}x{}\n",
        "(".repeat(5_000),
        ")".repeat(5_000)
    );
    let nested_calls = format!(
        "def g(x: Tensor(4)):\n    return {}x{}\n",
        "abs(".repeat(150),
        ")".repeat(150)
    );
    write(&dir, "a.tp", ADD);
    write(&dir, "deep.tp", &deep);
    write(&dir, "calls.tp", &nested_calls);
    write(&dir, "view.tp", VIEW);
    for jobs in [None, Some("1"), Some("3")] {
        let mut command = Command::new(env!("CARGO_BIN_EXE_tpi"));
        command.arg("check").current_dir(&dir).env("NO_COLOR", "1");
        if let Some(j) = jobs {
            command.args(["-j", j]);
        }
        command.args(["a.tp", "deep.tp", "calls.tp", "view.tp"]);
        let output = command.output().unwrap_or_else(|e| panic!("tpi: {e}"));
        let stdout = String::from_utf8_lossy(&output.stdout);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(1), "{stdout}\n{stderr}");
        assert!(stderr.contains("deep.tp"), "{stderr}");
        // The reports come in the order of the files.
        let a = stdout.find("a.tp").expect("a.tp is reported");
        let view = stdout.find("view.tp").expect("view.tp is reported");
        assert!(a < view, "{stdout}");
    }
}
