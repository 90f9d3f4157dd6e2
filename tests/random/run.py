#!/usr/bin/env python3
"""Differential run: random programs -> oracle (torch 2.7.1) vs tpi, per function.

    run.py [--seeds S1,S2] [--files N] [--per-file K] [--jobs J] [--no-gen] [--no-oracle] [--gen gen2.py]
    run.py reduce FILE.tp FUNC 'CLASS' ['CLASS'...] [-o OUT.tp]
    run.py regress

The default command:
1. gen.py writes gen/seed_S/gen_NNN.tp for each seed (skipped with --no-gen);
2. the oracle writes gen/seed_S/gen_NNN.json beside each file (one process per file, J at
   a time; a file whose .json is newer than its .tp is not rerun; --no-oracle skips this
   step entirely);
3. tpi (target/release/tpi, built beforehand, or $TPI_BIN) checks each file; when it fails on a file as a
   whole (a crash), each function is checked alone;
4. each function is compared with tp_compare.diff; gen/results.json keeps every function's
   diff lines (and, for mismatches, the source, both sides' errors and a heuristic root
   cause), and the summary (exact / metadata-only / eager-only rates, mismatches by root
   cause and by normalised diff line) is printed and written to gen/summary.txt.

`reduce` shrinks one mismatching function while it keeps the given mismatch classes (it
imports the oracle, so it re-executes itself under .venv-torch/bin/python). `regress` checks
tpi on every regress_*.tp of this folder against its recorded .json.

Paths are relative to this file; the oracle needs .venv-torch/bin/python, the rest is plain
Python 3.
"""
import argparse
import ast
import collections
import concurrent.futures as cf
import contextlib
import copy
import io
import json
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
GEN = os.path.join(HERE, "gen")
ORACLE = os.path.abspath(os.path.join(ROOT, "..", "shared", "oracle", "tp_oracle.py"))
if not os.path.exists(ORACLE):
    ORACLE = "/work/shared/oracle/tp_oracle.py"
TORCH_PY = os.path.join(ROOT, ".venv-torch", "bin", "python")
TPI = os.environ.get("TPI_BIN") or os.path.join(ROOT, "target", "release", "tpi")

sys.path.insert(0, os.path.dirname(ORACLE))
from tp_compare import diff  # noqa: E402


def run_oracle(path):
    js = path[:-3] + ".json"
    if os.path.exists(js) and os.path.getmtime(js) >= os.path.getmtime(path):
        return path, None
    p = subprocess.run([TORCH_PY, ORACLE, path, "--write-json"], capture_output=True, text=True, timeout=900)
    return path, (p.stderr[-2000:] if p.returncode else None)


def is_entry_def(text):
    """A def whose every parameter is annotated with Tensor(...) or has a default (LANGUAGE.md)."""
    try:
        fn = ast.parse(text).body[0]
    except (SyntaxError, IndexError):
        return True
    if not isinstance(fn, ast.FunctionDef):
        return True
    args = fn.args.args
    first_default = len(args) - len(fn.args.defaults)
    return all(i >= first_default or (isinstance(a.annotation, ast.Call) and isinstance(a.annotation.func, ast.Name)
                                      and a.annotation.func.id == "Tensor") for i, a in enumerate(args))


def split_functions(source):
    """(header, [(name, text)]) of a generated file: each def up to the next top-level line.

    A helper def (not an entry) is kept with the entry that follows it (gen2.py places each
    helper right before the entry that calls it), so that each entry's text runs on its own."""
    blocks, header, cur = [], [], None
    for line in source.splitlines(keepends=True):
        if line.startswith("def "):
            cur = [line]
            blocks.append((re.match(r"def (\w+)", line).group(1), cur))
        elif cur is not None and (line.startswith(" ") or not line.strip()):
            cur.append(line)
        else:
            header.append(line)
            cur = None
    out, pending = [], ""
    for n, b in blocks:
        text = "".join(b)
        if not is_entry_def(text):
            pending += text
            continue
        out.append((n, pending + text))
        pending = ""
    return "".join(header), out


def run_tpi_source(source, timeout=60):
    p = subprocess.run([TPI, "check", "--format", "json", "-"], input=source, capture_output=True, text=True,
                       timeout=timeout)
    try:
        return json.loads(p.stdout), None
    except Exception:
        return None, f"exit {p.returncode}: {p.stderr[-1500:]}"


def run_tpi(path):
    """{function name: tpi's function object, or {'__crash__': text}}."""
    src = open(path).read()
    try:
        doc, err = run_tpi_source(src)
    except subprocess.TimeoutExpired:
        doc, err = None, "timeout"
    if doc is not None:
        return {f["name"]: f for f in doc.get("functions", [])}
    header, fns = split_functions(src)
    out = {}
    for name, text in fns:
        try:
            d, e = run_tpi_source(header + text)
        except subprocess.TimeoutExpired:
            d, e = None, "timeout"
        if d is None or not d.get("functions"):
            out[name] = {"__crash__": e or "no output"}
        else:
            out[name] = d["functions"][0]
    return out


def norm_line(line):
    """A diff line without function names, indices and sizes: the mismatch's kind."""
    line = re.sub(r"^\$(\[\d+\])?", "", line)
    line = re.sub(r"\[\d+\]", "[]", line)
    m = re.match(r"(.*?): expected (.*), got (.*)$", line)
    if not m:
        return line
    path, e, a = m.groups()
    keep = lambda v: v if re.fullmatch(r"'[A-Za-z_\-]+'|None|True|False|\{.*\}", v) else "<v>"
    if path.endswith((".shape[]", ".stride[]")) or "dynamic_dims" in path:
        return f"{path}: <v> vs <v>"
    if ".eager." in path or path.startswith(".eager"):
        # an eager error object: keep only its code
        def code(v):
            mm = re.search(r"'code': '([^']+)'", v)
            return f"{{{mm.group(1)}}}" if mm else keep(v)
        return f"{path}: expected {code(e)}, got {code(a)}"
    return f"{path}: expected {keep(e)}, got {keep(a)}"


def _msg(r, side, where):
    d = r[side]
    e = d["error"] if where == "error" else (d["eager"] or {}).get(where)
    return (e or {}).get("message") or ""


def _code(r, side, where):
    d = r[side]
    e = d["error"] if where == "error" else (d["eager"] or {}).get(where)
    return (e or {}).get("code")


# Root causes of mismatches (see REPORT.md), checked in this order. Each is a heuristic over the
# oracle's and tpi's messages, the diff lines and the program text; "unclassified" needs a look.
def root_cause(r):
    src = r["source"]
    diff = "\n".join(r["diff"])
    tm = " ".join(_msg(r, "actual", w) for w in ("error", "forward_error", "backward_error"))
    om = " ".join(_msg(r, "expected", w) for w in ("error", "forward_error", "backward_error"))
    if r["actual"].get("crash"):
        return "tpi-crash"
    if "refer to a single memory location" in tm and not (
            "refer to a single memory location" in _msg(r, "expected", "forward_error")
            and _code(r, "expected", "error") == _code(r, "actual", "error")):
        return "partial-overlap-overapplied"
    if "KeyError in functionalization" in _msg(r, "actual", "error") and \
            _code(r, "expected", "error") != "other":
        return "inference-mode-keyerror-overapplied"
    if "has no attribute `values`" in tm or "has no attribute `indices`" in tm:
        return "namedtuple-values"
    if re.search(r"\.(max|min)\(\)|torch\.(max|min)\(\w+\)", src) and \
            ("`tuple`" in tm or (_code(r, "actual", "error") == "other" and _code(r, "expected", "error") is None)):
        return "max-min-full-reduction-tuple"
    if _msg(r, "expected", "error").startswith("<weakref at") and _code(r, "actual", "error") != "other":
        return "inference-mode-keyerror"
    if "where view" in om and "as_strided() call" in om:
        return "as-strided-inside-mutated-view-chain"
    if ".detach_()" in src and _code(r, "expected", "error") == "inplace-view-of-leaf" and \
            _code(r, "actual", "error") is None:
        return "detach_-then-mutate-older-view"
    if ".set_(" in src and (_code(r, "expected", "error") != _code(r, "actual", "error")
                            or "dynamic_dims" in diff):
        return "set-stale-sizes"
    if "t() expects a tensor with <= 2 dimensions" in om:
        return "t-on-3d-code"
    if re.search(r"dim -?\d+ out of bounds|k not in range", _msg(r, "expected", "error")):
        return "argmax-topk-analysis-code"
    if _code(r, "expected", "error") == "other" and _msg(r, "expected", "error") in ("AssertionError", "") \
            and re.search(r"split\(0", src):
        return "split-zero-analysis-assert"
    if "A view was created in no_grad mode" in om and "multiple views" in om and \
            "inplace-multi-output-view" in (_code(r, "actual", "error"), _code(r, "actual", "forward_error")):
        return "multi-output-view-of-nograd-base-code"
    if _code(r, "expected", "error") is None and _code(r, "actual", "error") == "inplace-overlapping":
        return "expanded-inplace-overlap-overapplied"
    if _code(r, "expected", "error") == "inplace-overlapping" and _code(r, "actual", "error") != "inplace-overlapping":
        return "expanded-unary-inplace-overlap"
    if ".set_(" in src and (_code(r, "expected", "error") != _code(r, "actual", "error")
                            or "dynamic_dims" in diff):
        return "set-stale-sizes"
    if re.search(r"\.(unsqueeze_|squeeze_|t_|transpose_|swapdims_|as_strided_)\(", src) and \
            _code(r, "expected", "error") in ("dim-out-of-range", "other", "inplace-view-of-leaf") and \
            _code(r, "actual", "error") is None:
        return "view-replay-after-metadata-mutation"
    if "refer to a single memory location" in _msg(r, "expected", "forward_error") and \
            _code(r, "actual", "forward_error") != "other":
        return "eager-partial-overlap"
    if _code(r, "actual", "forward_error") == "inference-tensor" and \
            _code(r, "expected", "forward_error") != "inference-tensor":
        return "eager-inference-mode-view-is-normal"
    if "out of bounds for storage" in om or ("as_strided" in src and "storage" in om):
        return "as-strided-out-of-bounds"
    if re.search(r"output_type: expected '(unsafe_view_alias|alias_of_intermediate\w*)', got 'non_alias'", diff) \
            and ("@" in src or "matmul" in src):
        return "batched-matmul-is-view"
    if re.search(r"dynamic_dims|traced_tangents\[\d+\]\.(shape|stride)\[\d+\]: expected ('|\d+, got ')", diff) \
            and re.search(r"Tensor\([^)]*[\"'][nm][\"']", src):
        return "symbolic-multi-output-or-slice-specialisation"
    strides = [re.match(r"\$\.traced_tangents\[(\d+)\]\.stride\[(\d+)\]", l) for l in r["diff"]]
    if strides and all(strides):
        shapes = r["expected"].get("tangent_shapes", [])
        if all(int(m.group(1)) < len(shapes) and shapes[int(m.group(1))][int(m.group(2))] == 1 for m in strides):
            return "size-1-dim-strides"
        if "softmax" in src:
            return "softmax-contiguous"
        if ".zero_()" in src:
            return "zero_-contiguous"
        return "tangent-strides"
    if "inplace-view-of-leaf" == _code(r, "expected", "forward_error") and \
            _code(r, "actual", "forward_error") == "inplace-leaf":
        return "setitem-on-grad-leaf-is-view-of-leaf"
    if "with a bool tensor is not supported" in om:
        return "eager-bool-sub"
    if _code(r, "expected", "error") == "dtype-cast" and _code(r, "actual", "error") == "inplace-broadcast":
        return "dtype-cast-before-broadcast"
    if "index out of range in self" in om:
        return "eager-literal-index-out-of-range"
    if re.search(r"Backward0 returned an invalid gradient", om):
        return "eager-backward-after-no-grad-metadata-mutation"
    if _code(r, "expected", "forward_error") is None and _code(r, "actual", "forward_error") == "inplace-overlapping":
        return "eager-copy-same-data-shortcut"
    return "unclassified"


def compare(exp, act):
    if "__crash__" in act:
        return ["CRASH " + act["__crash__"].splitlines()[-1] if act["__crash__"] else "CRASH"], ["CRASH"], ["CRASH"]
    full = diff(exp, act)
    meta = diff({k: v for k, v in exp.items() if k != "eager"}, act)
    eager = diff(exp.get("eager"), act.get("eager"), "$.eager")
    return full, meta, eager


def run_dir(gdir, args, seed=None):
    """Generates (unless --no-gen), runs the oracle and tpi over one directory; the per-function results."""
    if seed is None:
        seed = os.path.basename(gdir).split("_", 1)[-1]
    if not args.no_gen:
        subprocess.run([sys.executable, os.path.join(HERE, getattr(args, "gen", "gen.py")), "--seed", seed, "--files",
                        str(args.files), "--per-file", str(args.per_file), "--out", gdir], check=True,
                       stdout=subprocess.DEVNULL)
    paths = sorted(os.path.join(gdir, f) for f in os.listdir(gdir) if re.fullmatch(r"gen_\d+\.tp", f))
    if not args.no_oracle:
        with cf.ThreadPoolExecutor(args.jobs) as ex:
            for path, err in ex.map(run_oracle, paths):
                if err:
                    print(f"oracle failed on {path}:\n{err}", file=sys.stderr)
    results = []
    with cf.ThreadPoolExecutor(args.jobs) as ex:
        tpis = list(ex.map(run_tpi, paths))
    for path, tp in zip(paths, tpis):
        js = path[:-3] + ".json"
        if not os.path.exists(js):
            continue
        expected = json.load(open(js))
        sources = dict(split_functions(open(path).read())[1])
        for fn in expected["functions"]:
            act = tp.get(fn["name"], {"__crash__": "function missing from tpi's output"})
            full, meta, eager = compare(fn, act)
            strip = lambda e: e and {"code": e.get("code"), "message": (e.get("message") or "")[:300]}
            r = {"file": os.path.relpath(path, GEN), "name": fn["name"], "diff": full,
                 "meta_ok": not meta, "eager_ok": not eager,
                 "oracle_error": (fn.get("error") or {}).get("code"),
                 "eager_codes": [(fn["eager"].get(k) or {}).get("code") for k in ("forward_error", "backward_error")],
                 "classes": sorted({norm_line(l) for l in full})}
            if full:
                r["source"] = sources.get(fn["name"], "")
                r["expected"] = {"error": strip(fn.get("error")),
                                 "eager": {k: strip(v) for k, v in fn["eager"].items()},
                                 "tangent_shapes": [t["shape"] for t in fn.get("traced_tangents", [])]}
                r["actual"] = {"error": strip(act.get("error")),
                               "eager": {k: strip(v) for k, v in (act.get("eager") or {}).items()},
                               "crash": act.get("__crash__")}
                r["cause"] = root_cause(r)
            results.append(r)
    json.dump(results, open(os.path.join(gdir, "results.json"), "w"), indent=1)
    return results



# ------------------------------------------------------------------ reducer (needs torch)
KNOWN_NAMES = {"torch", "F", "Tensor", "custom_view", "range", "len", "tuple", "list", "min", "max", "abs", "int",
               "float", "bool", "isinstance", "zip", "enumerate", "None", "True", "False"}


def _tp_oracle():
    sys.path.insert(0, os.path.dirname(ORACLE))
    import tp_oracle  # noqa: E402  (imports torch: only the reducer needs it)
    return tp_oracle


def oracle_fn(source):
    with tempfile.NamedTemporaryFile("w", suffix=".tp", delete=False) as fh:
        fh.write(source)
        path = fh.name
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            doc = _tp_oracle().run_file(path)
    finally:
        os.unlink(path)
    return doc["functions"][0] if doc["functions"] else None


def names_defined(tree):
    """Every name the function reads is a parameter, bound before (roughly: anywhere), a helper or a prelude name."""
    fn = tree.body[-1]
    bound = {a.arg for a in fn.args.args} | KNOWN_NAMES
    bound |= {d.name for d in tree.body if isinstance(d, ast.FunctionDef)}
    for n in ast.walk(fn):
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
            bound.add(n.id)
    return all(n.id in bound for n in ast.walk(fn) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load))


def check(source):
    """(classes, diff lines) of the single function in source, or None if it is not a program."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None
    if not names_defined(tree):
        return None
    try:
        exp = oracle_fn(source)
    except Exception:
        return None
    if exp is None:
        return None
    doc, _ = run_tpi_source(source)
    act = doc["functions"][0] if doc and doc.get("functions") else {"__crash__": "no output"}
    full, _, _ = compare(exp, act)
    return {norm_line(l) for l in full}, full, exp


def candidates(tree):
    """Smaller variants of the module's single function."""
    fn = tree.body[-1]
    # statement lists anywhere in the function: (owner, field)
    lists = []

    def walk(node):
        for field in ("body", "orelse"):
            seq = getattr(node, field, None)
            if isinstance(seq, list) and seq and isinstance(seq[0], ast.stmt):
                lists.append((node, field))
                for s in seq:
                    walk(s)
    walk(fn)
    for li, (owner, field) in enumerate(lists):
        seq = getattr(owner, field)
        for i in range(len(seq)):
            if owner is fn and isinstance(seq[i], ast.Return):
                continue
            # delete the statement
            t2 = copy.deepcopy(tree)
            o2, _ = find(t2, li)
            s2 = getattr(o2, field)
            del s2[i]
            if not s2:
                s2.append(ast.Pass())
            yield t2
            # unwrap a with block
            if isinstance(seq[i], ast.With):
                t2 = copy.deepcopy(tree)
                o2, _ = find(t2, li)
                s2 = getattr(o2, field)
                s2[i:i + 1] = s2[i].body
                yield t2
    # return items
    ret = fn.body[-1]
    if isinstance(ret, ast.Return) and ret.value is not None:
        for path in elements(ret.value):
            t2 = copy.deepcopy(tree)
            r2 = t2.body[-1].body[-1]
            if remove_element(r2, path):
                yield t2
    # unused parameters
    src_body = "\n".join(ast.unparse(s) for s in fn.body)
    names = {n.id for s in fn.body for n in ast.walk(s) if isinstance(n, ast.Name)}
    for i, a in enumerate(fn.args.args):
        if a.arg not in names:
            t2 = copy.deepcopy(tree)
            f2 = t2.body[-1]
            ndef = len(f2.args.defaults)
            first_def = len(f2.args.args) - ndef
            del f2.args.args[i]
            if i >= first_def:
                del f2.args.defaults[i - first_def]
            yield t2
    # annotation keywords and sizes
    for i, a in enumerate(fn.args.args):
        ann = a.annotation
        if isinstance(ann, ast.Call):
            for k in range(len(ann.keywords)):
                t2 = copy.deepcopy(tree)
                del t2.body[-1].args.args[i].annotation.keywords[k]
                yield t2
            for k, arg in enumerate(ann.args):
                if isinstance(arg, ast.Constant) and isinstance(arg.value, int) and arg.value > 2:
                    for v in (1, 2):
                        t2 = copy.deepcopy(tree)
                        t2.body[-1].args.args[i].annotation.args[k] = ast.Constant(v)
                        yield t2


def find(tree, li):
    fn = tree.body[-1]
    lists = []

    def walk(node):
        for field in ("body", "orelse"):
            seq = getattr(node, field, None)
            if isinstance(seq, list) and seq and isinstance(seq[0], ast.stmt):
                lists.append((node, field))
                for s in seq:
                    walk(s)
    walk(fn)
    return lists[li]


def elements(node, path=()):
    if isinstance(node, (ast.Tuple, ast.List)):
        for i, e in enumerate(node.elts):
            yield path + (i,)
            yield from elements(e, path + (i,))


def remove_element(ret, path):
    node = ret.value
    parent = None
    for p in path[:-1]:
        node = node.elts[p]
    if not isinstance(node, (ast.Tuple, ast.List)) or len(node.elts) <= 1 and node is ret.value:
        return False
    del node.elts[path[-1]]
    if node is ret.value and len(node.elts) == 1 and isinstance(node, ast.Tuple):
        ret.value = node.elts[0]
    return True


def reduce(source, targets, verbose=True):
    tree = ast.parse(source)
    res = check(source)
    if res is None or not targets <= res[0]:
        raise SystemExit(f"the program does not show {targets}: {res and res[0]}")
    changed = True
    while changed:
        changed = False
        for cand in candidates(tree):
            text = ast.unparse(cand) + "\n"
            r = check(text)
            if r is not None and targets <= r[0]:
                tree = cand
                changed = True
                if verbose:
                    print(f"  -> {len(text)} chars", file=sys.stderr)
                break
    text = ast.unparse(tree) + "\n"
    return text, check(text)


def reduce_main(argv):
    """run.py reduce FILE.tp FUNC 'CLASS' ['CLASS'...] [-o OUT.tp]: a smaller program with the same mismatch.

    CLASS is a normalised diff line as the summary prints it (e.g. ".error.code: expected
    'other', got None"); every CLASS given is kept. Greedy passes over the AST until nothing
    more can be removed: delete a statement (at any depth), unwrap a `with` block, drop a return
    item, drop an unused parameter, drop a keyword of a Tensor(...) annotation, replace a size
    by 1 or 2; a candidate that reads an unbound name is rejected. The oracle runs in-process.
    """
    ap = argparse.ArgumentParser(prog="run.py reduce", description=reduce_main.__doc__.splitlines()[0])
    ap.add_argument("file")
    ap.add_argument("func")
    ap.add_argument("classes", nargs="+")
    ap.add_argument("-o", "--out")
    args = ap.parse_args(argv)
    header, fns = split_functions(open(args.file).read())
    src = "import torch\n\n" + dict(fns)[args.func]
    text, (classes, full, exp) = reduce(src, set(args.classes))
    print(text)
    print("\n".join(full))
    if args.out:
        open(args.out, "w").write(text)


def regress_main(argv):
    """run.py regress: checks tpi on every regress_*.tp against its .json (same/diff per function)."""
    bad = 0
    # The minimised cases live with the other oracle programs.
    regress_dir = os.path.join(HERE, "..", "oracle", "random")
    for name in sorted(os.listdir(regress_dir)):
        if not (name.startswith("regress_") and name.endswith(".tp")):
            continue
        path = os.path.join(regress_dir, name)
        expected = json.load(open(path[:-3] + ".json"))
        actual = run_tpi(path)
        for fn in expected["functions"]:
            d, _, _ = compare(fn, actual.get(fn["name"], {"__crash__": "missing"}))
            bad += bool(d)
            print(f"{name}:{fn['name']}: {'same' if not d else 'DIFF'}")
            for line in d:
                print("    " + line[:200])
    sys.exit(1 if bad else 0)


# generator -> prefix of its seed directories and summary files under gen/
GEN_PREFIX = {"gen.py": "", "gen2.py": "w_"}


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "reduce":
        try:
            import torch  # noqa: F401
        except ImportError:
            os.execv(TORCH_PY, [TORCH_PY, os.path.abspath(__file__)] + sys.argv[1:])
        return reduce_main(sys.argv[2:])
    if len(sys.argv) > 1 and sys.argv[1] == "regress":
        return regress_main(sys.argv[2:])
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", default="0", help="comma-separated; each seed S uses gen/seed_S/ (gen/PREFIXseed_S/)")
    ap.add_argument("--gen", default="gen.py",
                    help="the generator (in this folder): gen.py (default: gen/seed_S/, gen/results.json, "
                         "gen/summary.txt) or gen2.py (gen/w_seed_S/, gen/w_results.json, gen/w_summary.txt)")
    ap.add_argument("--files", type=int, default=20)
    ap.add_argument("--per-file", type=int, default=20)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--no-gen", action="store_true")
    ap.add_argument("--no-oracle", action="store_true")
    args = ap.parse_args()
    prefix = GEN_PREFIX.get(args.gen, os.path.splitext(os.path.basename(args.gen))[0] + "_")
    results = []
    for seed in args.seeds.split(","):
        results += run_dir(os.path.join(GEN, f"{prefix}seed_{seed}"), args, seed)
    json.dump(results, open(os.path.join(GEN, f"{prefix}results.json"), "w"), indent=1)
    n = len(results)
    ok = sum(1 for r in results if not r["diff"])
    meta_ok = sum(1 for r in results if r["meta_ok"])
    eager_ok = sum(1 for r in results if r["eager_ok"])
    errs = sum(1 for r in results if r["oracle_error"])
    eag = sum(1 for r in results if any(r["eager_codes"]))
    lines = []
    pct = lambda a: f"{a}/{n} = {100.0 * a / max(n, 1):.1f}%"
    lines.append(f"functions: {n} (analysis error in {errs}, eager error in {eag})")
    lines.append(f"exact match:    {pct(ok)}")
    lines.append(f"metadata match: {pct(meta_ok)}")
    lines.append(f"eager match:    {pct(eager_ok)}")
    causes = collections.Counter(r["cause"] for r in results if r["diff"])
    lines.append("")
    lines.append("mismatching functions by root cause (heuristic triage, see run.py:root_cause):")
    for c, k in causes.most_common():
        ex = next(r for r in results if r.get("cause") == c)
        lines.append(f"  {k:4d}  {c}    e.g. {ex['file']}:{ex['name']}")
    by_class = collections.defaultdict(list)
    for r in results:
        for c in r["classes"]:
            by_class[c].append(r)
    lines.append("")
    lines.append("mismatch lines (normalised), most frequent first:")
    for c, rs in sorted(by_class.items(), key=lambda kv: -len(kv[1])):
        ex = rs[0]
        lines.append(f"  {len(rs):4d}  {c}    e.g. {ex['file']}:{ex['name']}")
    text = "\n".join(lines)
    print(text)
    open(os.path.join(GEN, f"{prefix}summary.txt"), "w").write(text + "\n")


if __name__ == "__main__":
    main()
