#!/usr/bin/env python3
"""Reduces one mismatching function to a smaller program with the same mismatch.

    .venv-torch/bin/python tests/random/reduce.py FILE.tp FUNC 'CLASS' ['CLASS'...] [-o OUT.tp]

CLASS is a normalised diff line as run.py prints it (e.g.
".error.code: expected 'other', got None"); the reduction keeps every CLASS
given. Greedy passes over the AST until nothing more can be removed: delete a
statement (at any depth), unwrap a `with` block, drop a return item, drop an
unused parameter, drop a keyword of a Tensor(...) annotation, replace a size
by 1 or 2. The oracle runs in this process (imported once); tpi is the release
binary. Prints the reduced function and its diff lines.
"""
import argparse
import ast
import copy
import io
import json
import os
import subprocess
import sys
import tempfile
import contextlib

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import run  # noqa: E402  (paths, tpi runner, diff normaliser)

sys.path.insert(0, os.path.dirname(run.ORACLE))
import tp_oracle  # noqa: E402


def oracle_fn(source):
    with tempfile.NamedTemporaryFile("w", suffix=".tp", delete=False) as fh:
        fh.write(source)
        path = fh.name
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            doc = tp_oracle.run_file(path)
    finally:
        os.unlink(path)
    return doc["functions"][0] if doc["functions"] else None


KNOWN = {"torch", "F", "Tensor", "custom_view", "range", "len", "tuple", "list", "min", "max", "abs", "int",
         "float", "bool", "isinstance", "zip", "enumerate", "None", "True", "False"}


def names_defined(tree):
    """Every name the function reads is a parameter, bound before (roughly: anywhere) or a prelude name."""
    fn = tree.body[-1]
    bound = {a.arg for a in fn.args.args} | KNOWN
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
    doc, _ = run.run_tpi_source(source)
    act = doc["functions"][0] if doc and doc.get("functions") else {"__crash__": "no output"}
    full, _, _ = run.compare(exp, act)
    return {run.norm_line(l) for l in full}, full, exp


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


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("file")
    ap.add_argument("func")
    ap.add_argument("classes", nargs="+")
    ap.add_argument("-o", "--out")
    args = ap.parse_args()
    header, fns = run.split_functions(open(args.file).read())
    src = "import torch\n\n" + dict(fns)[args.func]
    text, (classes, full, exp) = reduce(src, set(args.classes))
    print(text)
    print("\n".join(full))
    if args.out:
        open(args.out, "w").write(text)


if __name__ == "__main__":
    main()
