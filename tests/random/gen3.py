#!/usr/bin/env python3
"""Third random `.tp` generator: scenario-shaped programs, independent of gen.py/gen2.py.

    gen3.py --seed S --files N --per-file K --out DIR

Same CLI and layout as gen.py/gen2.py (DIR/gen_NNN.tp, entries g_NNN_KK; a helper def
`h_NNN_KK_J` is placed right before the entry that calls it). It shares no code with them.

Where gen.py/gen2.py draw one statement at a time from a large op table, gen3 composes each
entry from 2-5 *scenarios* in the style of the conformance programs, each a few coherent
statements about one aliasing story, glued by a shared state (shapes, strides, dtypes, grad
flags, view roots, grad mode):

- view chains of views (2-4 deep: view/reshape/transpose/permute/slices/select/unsqueeze/
  diagonal/narrow/unflatten/movedim/as_strided), an in-place write through the deepest view
  (method, augmented assignment, setitem, copy_), then reads of siblings and of the base;
- `for i in range(k)` loops doing in-place updates of slices, loops over `unbind`/zip/
  enumerate, list comprehensions feeding stack/cat;
- helper functions (non-entry defs) that view, mutate or compute, called once or twice;
- `if` on `dim()`, shapes, `requires_grad`, `is_contiguous()` and python parameters;
- grad-mode nesting: no_grad / enable_grad / inference_mode / set_grad_enabled blocks around
  views and in-place ops, `requires_grad_()`, `detach()`/`detach_()`, `custom_view`;
- metadata mutations (t_, transpose_, unsqueeze_, squeeze_, swapdims_, as_strided_, resize_,
  set_) followed by data mutations and views;
- returns: the same tensor twice, inputs, views of inputs and of intermediates, nested
  tuples/lists, numbers and None;
- inputs: symbolic "n" sizes, float16/bfloat16/float64/int64, stride= and channels_last,
  non-leaf inputs, int/bool parameters; bool tensors made inside;
- about 1 statement in 35 is a deliberate error (shape, dim, dtype, leaf in-place, ...).

Plain Python 3, no third-party packages.
"""
import argparse
import os
import random

HINT = {"n": 5}
FLOATS = ("float32", "float64", "float16", "bfloat16")


def hv(d):
    return HINT[d] if isinstance(d, str) else d


def cstrides(shape):
    st, acc = [], 1
    for d in reversed(shape):
        st.append(acc)
        acc *= max(hv(d), 1)
    return list(reversed(st))


def numel(shape):
    n = 1
    for d in shape:
        n *= hv(d)
    return n


def promote(a, b):
    if a == b:
        return a
    fa, fb = a in FLOATS, b in FLOATS
    if fa and not fb:
        return a
    if fb and not fa:
        return b
    if not fa and not fb:
        if "bool" in (a, b):
            return b if a == "bool" else a
        return "int64"
    if {a, b} == {"float16", "bfloat16"}:
        return "float32"
    order = ["float16", "bfloat16", "float32", "float64"]
    return max(a, b, key=order.index)


class V:
    def __init__(self, name, shape, strides, dtype, rg, **kw):
        self.name = name
        self.shape = list(shape)
        self.strides = list(strides)
        self.dtype = dtype
        self.rg = rg
        self.leafrg = kw.get("leafrg", False)     # a leaf that requires grad
        self.vleaf = kw.get("vleaf", False)       # a view of such a leaf
        self.root = kw.get("root", name)          # the storage it shares
        self.multi = kw.get("multi", False)       # output of unbind/split/chunk
        self.expanded = kw.get("expanded", False)
        self.ngview = kw.get("ngview", False)     # view made under no_grad of a grad tensor
        self.inf = kw.get("inf", False)           # made under inference_mode
        self.is_input = kw.get("is_input", False)

    def contiguous(self):
        return all(hv(d) == 1 or s == c for d, s, c in zip(self.shape, self.strides, cstrides(self.shape)))

    def has_sym(self):
        return any(isinstance(d, str) for d in self.shape)


class Gen:
    def __init__(self, rng, name):
        self.r = rng
        self.name = name
        self.lines = []
        self.helpers = []
        self.ind = 1
        self.vars = []
        self.count = 0
        self.grad = True
        self.inference = False
        self.params = []
        self.sym = False
        self.errors = 0
        self.nhelp = 0
        self.intparams = {}

    # ------------------------------------------------------------- basics
    def emit(self, s):
        self.lines.append("    " * self.ind + s)

    def fresh(self, p="t"):
        self.count += 1
        return f"{p}{self.count}"

    def chance(self, p):
        return self.r.random() < p

    def pick(self, pred=lambda v: True):
        c = [v for v in self.vars if pred(v)]
        return self.r.choice(c) if c else None

    def add(self, v):
        self.vars.append(v)
        return v

    def dimexpr(self, v, shape):
        """Sizes for view/reshape: sym dims as -1 (at most one), else ints."""
        out = []
        for d in shape:
            out.append("-1" if isinstance(d, str) else str(d))
        return ", ".join(out)

    def scalar(self, dtype):
        if dtype in FLOATS:
            return self.r.choice(["2", "0.5", "1.5", "-1", "3"])
        if dtype == "bool":
            return "True"
        return self.r.choice(["2", "1", "3"])

    def fresh_result(self, name, shape, dtype, rg):
        rg = rg and self.grad and not self.inference and dtype in FLOATS
        return self.add(V(name, shape, cstrides(shape), dtype, rg, inf=self.inference))

    def view_of(self, src, name, shape, strides, **kw):
        rg = src.rg
        v = V(name, shape, strides, src.dtype, rg, root=src.root, vleaf=src.leafrg or src.vleaf,
              ngview=src.ngview or ((not self.grad or self.inference) and src.rg),
              inf=src.inf or (self.inference and False), is_input=src.is_input, **kw)
        if self.inference and not src.inf:
            v.ngview = True
        return self.add(v)

    def can_inplace(self, v):
        if v.expanded or (v.inf and not self.inference):
            return False
        if self.grad and not self.inference:
            if v.leafrg or v.vleaf:
                return False
            if v.multi and v.rg:
                return False
            if v.ngview and v.rg:
                return False
        if any(isinstance(d, str) for d in v.shape) and self.chance(0.3):
            return True
        return True

    def mark_written(self, v, other_rg=False):
        if other_rg and self.grad and not self.inference and v.dtype in FLOATS:
            for w in self.vars:
                if w.root == v.root:
                    w.rg = True

    # ------------------------------------------------------------- inputs
    def make_inputs(self):
        n = self.r.choice([1, 1, 2, 2, 2, 3])
        self.sym = self.chance(0.15)
        base = None
        for i in range(n):
            name = "xyzw"[i]
            if base is not None and self.chance(0.5):
                shape = list(base[self.r.randint(0, len(base) - 1):]) if self.chance(0.5) else list(base)
            else:
                rank = self.r.choice([1, 2, 2, 3, 3, 3, 4, 4])
                shape = [self.r.choice([2, 3, 4, 4, 6]) for _ in range(rank)]
                if self.sym:
                    shape[0] = "n"
            if base is None:
                base = shape
            dtype = self.r.choices(["float32", "float64", "float16", "bfloat16", "int64"], [70, 8, 7, 5, 10])[0]
            rg = dtype in FLOATS and self.chance(0.45)
            leaf = not (rg and self.chance(0.5))
            strides = cstrides(shape)
            kws = []
            if dtype != "float32":
                kws.append(f"dtype=torch.{dtype}")
            if rg:
                kws.append("requires_grad=True")
                if not leaf:
                    kws.append("leaf=False")
            if len(shape) == 4 and self.chance(0.15):
                kws.append("memory_format=torch.channels_last")
                N, C, H, W = [hv(d) for d in shape]
                strides = [H * W * C, 1, W * C, C]
            elif len(shape) >= 2 and not any(isinstance(d, str) for d in shape) and self.chance(0.12):
                perm = list(range(len(shape)))
                self.r.shuffle(perm)
                # a dense layout whose physical order is perm
                strides = [0] * len(shape)
                acc = 1
                for p in reversed(perm):
                    strides[p] = acc
                    acc *= shape[p]
                kws.append(f"stride=({', '.join(map(str, strides))}{',' if len(strides) == 1 else ''})")
            sizes = ", ".join(f'"{d}"' if isinstance(d, str) else str(d) for d in shape)
            self.params.append(f"{name}: Tensor({sizes}{', ' if kws and sizes else ''}{', '.join(kws)})")
            self.add(V(name, shape, strides, dtype, rg, leafrg=rg and leaf, is_input=True))
        if self.chance(0.3):
            self.params.append("k: int = %d" % self.r.choice([1, 2, 3]))
            self.intparams["k"] = int(self.params[-1].split("=")[1])
        if self.chance(0.2):
            self.params.append("flag: bool = %s" % self.r.choice(["True", "False"]))
            self.intparams["flag"] = self.params[-1].endswith("True")

    # ------------------------------------------------------------- view steps
    def view_step(self, src, name=None):
        """One view of src: (code, V) or None."""
        name = name or self.fresh("v")
        s, st = src.shape, src.strides
        rank = len(s)
        opts = []
        if rank >= 2:
            opts += ["transpose", "permute", "slice", "select", "mT", "movedim", "narrow"]
        if rank == 2:
            opts += ["t", "t", "diagonal"]
        if rank >= 1:
            opts += ["slice", "unsqueeze", "view", "flatten", "detach", "alias", "step"]
            if self.chance(0.25):
                opts.append("as_strided")
        if rank >= 1 and any(hv(d) == 1 for d in s):
            opts.append("squeeze")
        if rank >= 1 and any(not isinstance(d, str) and d % 2 == 0 and d > 2 for d in s):
            opts.append("unflatten")
        if rank == 0:
            opts = ["unsqueeze", "view0", "detach"]
        op = self.r.choice(opts)
        if op == "transpose":
            a, b = self.r.sample(range(rank), 2)
            a2 = a - rank if self.chance(0.3) else a
            ns, nst = list(s), list(st)
            ns[a], ns[b] = ns[b], ns[a]
            nst[a], nst[b] = nst[b], nst[a]
            f = self.r.choice(["transpose", "swapaxes", "swapdims"])
            return f"{src.name}.{f}({a2}, {b})", self.view_of(src, name, ns, nst)
        if op == "t":
            return f"{src.name}.t()", self.view_of(src, name, s[::-1], st[::-1])
        if op == "mT":
            ns, nst = list(s), list(st)
            ns[-1], ns[-2] = ns[-2], ns[-1]
            nst[-1], nst[-2] = nst[-2], nst[-1]
            return f"{src.name}.mT", self.view_of(src, name, ns, nst)
        if op == "permute":
            p = list(range(rank))
            self.r.shuffle(p)
            return (f"{src.name}.permute({', '.join(map(str, p))})",
                    self.view_of(src, name, [s[i] for i in p], [st[i] for i in p]))
        if op == "movedim":
            a, b = self.r.randrange(rank), self.r.randrange(rank)
            order = list(range(rank))
            order.remove(a)
            order.insert(b, a)
            return (f"{src.name}.movedim({a}, {b})",
                    self.view_of(src, name, [s[i] for i in order], [st[i] for i in order]))
        if op in ("slice", "step", "narrow"):
            cand = [i for i in range(rank) if not isinstance(s[i], str) and s[i] >= 2]
            if not cand:
                return f"{src.name}[...]", self.view_of(src, name, s, st)
            d = self.r.choice(cand)
            n = s[d]
            if op == "narrow":
                ln = self.r.randint(1, n - 1)
                st0 = self.r.randint(0, n - ln)
                v = self.view_of(src, name, s[:d] + [ln] + s[d + 1:], st)
                return f"{src.name}.narrow({d}, {st0}, {ln})", v
            if op == "step":
                a, step = self.r.choice([(0, 2), (1, 2), (0, 3)])
                ln = max(0, (n - a + step - 1) // step)
                if ln == 0:
                    a, step, ln = 0, 2, (n + 1) // 2
                idx = [":"] * d + [f"{a}::{step}" if a else f"::{step}"]
                nst = list(st)
                nst[d] *= step
                return f"{src.name}[{', '.join(idx)}]", self.view_of(src, name, s[:d] + [ln] + s[d + 1:], nst)
            a = self.r.randint(0, n - 1)
            b = self.r.randint(a + 1, n)
            if self.chance(0.2):
                b = n + 3  # out-of-range bound clamps
            ln = min(b, n) - a
            sl = f"{a if a else ''}:{b if b < n or b > n else ''}"
            if self.chance(0.2) and a > 0:
                sl = f"{a - n}:"
                ln = n - a
            idx = [":"] * d + [sl]
            if d > 0 and self.chance(0.3):
                idx = ["..."] + [":"] * (rank - d - 1)
                idx = [":"] * d + [sl] if True else idx
            return f"{src.name}[{', '.join(idx)}]", self.view_of(src, name, s[:d] + [ln] + s[d + 1:], st)
        if op == "select":
            d = self.r.randrange(rank)
            n = hv(s[d])
            i = self.r.randint(0, min(n, 2) - 1) if not isinstance(s[d], str) else 0
            if self.chance(0.2):
                i = -1
            if d == 0 and self.chance(0.6):
                code = f"{src.name}[{i}]"
            elif self.chance(0.5):
                code = f"{src.name}.select({d}, {i})"
            else:
                code = f"{src.name}[{', '.join([':'] * d + [str(i)])}]"
            return code, self.view_of(src, name, s[:d] + s[d + 1:], st[:d] + st[d + 1:])
        if op == "unsqueeze":
            d = self.r.randint(0, rank)
            if self.chance(0.3) and rank > 0:
                return f"{src.name}[None]", self.view_of(src, name, [1] + s, [hv(s[0]) * st[0]] + st)
            nst = list(st)
            ins = (st[d] * hv(s[d])) if d < rank else 1
            return (f"{src.name}.unsqueeze({d})",
                    self.view_of(src, name, s[:d] + [1] + s[d:], st[:d] + [ins] + st[d:]))
        if op == "squeeze":
            ds = [i for i in range(rank) if hv(s[i]) == 1]
            d = self.r.choice(ds)
            code = f"{src.name}.squeeze({d})" if self.chance(0.6) else f"{src.name}.squeeze()"
            if code.endswith("squeeze()"):
                keep = [i for i in range(rank) if hv(s[i]) != 1]
            else:
                keep = [i for i in range(rank) if i != d]
            return code, self.view_of(src, name, [s[i] for i in keep], [st[i] for i in keep])
        if op == "diagonal":
            m = min(hv(s[0]), hv(s[1]))
            return (f"{src.name}.diagonal()", self.view_of(src, name, [m], [st[0] + st[1]]))
        if op in ("view", "flatten", "view0"):
            if op == "view0":
                return f"{src.name}.view(1)", self.view_of(src, name, [1], [1])
            if not src.contiguous():
                if op == "flatten" or self.chance(0.5):
                    # reshape of a non-contiguous tensor: a copy
                    ns = self.merge_shape(s)
                    v = self.fresh_result(name, ns, src.dtype, src.rg)
                    fn = "reshape" if op == "view" else "flatten"
                    return (f"{src.name}.reshape({self.dimexpr(src, ns)})" if fn == "reshape"
                            else f"{src.name}.flatten()"), (v if fn == "reshape" else
                                                             self.replace(v, [numel(s)] if not src.has_sym() else None))
                return None
            ns = self.merge_shape(s)
            fn = self.r.choice(["view", "view", "reshape"])
            if op == "flatten":
                ns = [numel(s)] if not src.has_sym() else (["n"] if len(s) == 1 else None)
                if ns is None:
                    return None
                return f"{src.name}.flatten()", self.view_of(src, name, ns, [1])
            return f"{src.name}.{fn}({self.dimexpr(src, ns)})", self.view_of(src, name, ns, cstrides(ns))
        if op == "unflatten":
            d = self.r.choice([i for i in range(rank) if not isinstance(s[i], str) and s[i] % 2 == 0 and s[i] > 2])
            a, b = 2, s[d] // 2
            nst = st[:d] + [st[d] * b, st[d]] + st[d + 1:]
            return f"{src.name}.unflatten({d}, (2, {b}))", self.view_of(src, name, s[:d] + [a, b] + s[d + 1:], nst)
        if op == "as_strided":
            if src.has_sym() or not src.contiguous() or rank == 0:
                return None
            n = numel(s)
            if n < 4:
                return f"{src.name}.as_strided(({n},), (1,))", self.view_of(src, name, [n], [1])
            rows = 2
            cols = n // 2 - self.r.choice([0, 1])
            off = self.r.choice([0, 1]) if n // 2 > cols else 0
            return (f"{src.name}.as_strided(({rows}, {cols}), ({cols}, 1){', ' + str(off) if off else ''})",
                    self.view_of(src, name, [rows, cols], [cols, 1]))
        if op == "detach":
            v = self.view_of(src, name, s, st)
            v.rg = False
            v.vleaf = False
            v.ngview = False
            return f"{src.name}.detach()", v
        if op == "alias":
            if self.chance(0.5):
                return f"{src.name}.view_as({src.name})", self.view_of(src, name, s, st)
            return f"torch.ops.aten.alias({src.name})", self.view_of(src, name, s, st)
        return None

    def replace(self, v, shape):
        if shape is None:
            return v
        v.shape = shape
        v.strides = cstrides(shape)
        return v

    def merge_shape(self, s):
        """A shape of the same numel: merges/splits static dims; keeps the sym dim alone."""
        if any(isinstance(d, str) for d in s):
            out = [d for d in s if isinstance(d, str)]
            rest = numel([d for d in s if not isinstance(d, str)])
            if rest > 1 and self.chance(0.5):
                return out + [rest]
            return out + ([rest] if rest > 1 else []) if self.chance(0.5) else [rest] + out
        n = numel(s)
        facs = [f for f in range(1, n + 1) if n % f == 0]
        r = self.r.random()
        if r < 0.3 or n == 1:
            return [n]
        if r < 0.8:
            a = self.r.choice(facs)
            return [a, n // a]
        a = self.r.choice(facs)
        b = self.r.choice([f for f in range(1, n // a + 1) if (n // a) % f == 0])
        return [a, b, n // a // b]

    # ------------------------------------------------------------- operands
    def operand(self, v, inplace=False):
        """(expr, dtype, rg) broadcastable to v (exactly v's shape when inplace)."""
        r = self.r.random()
        if r < 0.35 or v.dtype == "bool":
            return self.scalar(v.dtype), v.dtype, False
        same = [w for w in self.vars if w.shape == v.shape and w is not v and not (w.inf and not self.inference)
                and (w.dtype in FLOATS) == (v.dtype in FLOATS) and w.dtype != "bool"]
        if same and r < 0.7:
            w = self.r.choice(same)
            return w.name, w.dtype, w.rg
        if v.shape and not isinstance(v.shape[-1], str) and r < 0.85:
            dt = v.dtype if self.chance(0.7) else ("float32" if v.dtype in FLOATS else "int64")
            f = self.r.choice(["ones", "rand", "full"]) if dt in FLOATS else "ones"
            if f == "full":
                return f"torch.full(({v.shape[-1]},), 0.5{self.dtkw(dt)})", dt, False
            return f"torch.{f}({v.shape[-1]}{self.dtkw(dt)})", dt, False
        return f"{v.name}.clone()" if not inplace else v.name, v.dtype, v.rg

    def dtkw(self, dt):
        return "" if dt == "float32" else f", dtype=torch.{dt}"

    # ------------------------------------------------------------- statements
    def inplace(self, v, allow_err=True):
        """One in-place data write on v (or a deliberate error)."""
        if allow_err and self.chance(0.03):
            return self.error_stmt(v)
        isf = v.dtype in FLOATS
        ops = ["add_", "mul_", "sub_", "zero_", "fill_", "iadd", "imul", "setitem", "copy_", "clamp_"]
        if isf:
            ops += ["sigmoid_", "exp_", "neg_", "relu_", "addcmul_", "lerp_", "div_", "F.relu"]
        else:
            ops += ["neg_", "abs_", "imod"]
        op = self.r.choice(ops)
        nm = v.name
        if op in ("add_", "mul_", "sub_", "div_"):
            e, dt, rg = self.operand(v, True)
            if op == "div_" and not isf:
                op = "mul_"
            extra = ", alpha=2" if op in ("add_", "sub_") and self.chance(0.2) and isf else ""
            self.emit(f"{nm}.{op}({e}{extra})")
            self.mark_written(v, rg)
        elif op in ("iadd", "imul"):
            e, dt, rg = self.operand(v, True)
            self.emit(f"{nm} {'+=' if op == 'iadd' else '*='} {e}")
            self.mark_written(v, rg)
        elif op == "imod":
            self.emit(f"{nm} %= 3")
        elif op == "zero_":
            self.emit(f"{nm}.zero_()")
        elif op == "fill_":
            self.emit(f"{nm}.fill_({self.scalar(v.dtype)})")
        elif op == "clamp_":
            self.emit(f"{nm}.clamp_(min=0)" if self.chance(0.5) else f"{nm}.clamp_(0, 2)")
        elif op == "copy_":
            e, dt, rg = self.operand(v, True)
            if e[0].isdigit() or e[0] == "-":
                e = f"torch.full_like({nm}, {e})"
            self.emit(f"{nm}.copy_({e})")
            self.mark_written(v, rg)
        elif op == "setitem":
            if not v.shape:
                self.emit(f"{nm}[...] = {self.scalar(v.dtype)}")
            else:
                n = hv(v.shape[0])
                idx = self.r.choice(["0", "-1", ":", "1:", "..."]) if n >= 2 else self.r.choice(["0", ":", "..."])
                if self.chance(0.7):
                    self.emit(f"{nm}[{idx}] = {self.scalar(v.dtype)}")
                else:
                    sub = v.shape[1:] if idx in ("0", "-1") else v.shape
                    if sub and not isinstance(sub[-1], str):
                        self.emit(f"{nm}[{idx}] = torch.ones({sub[-1]}{self.dtkw(v.dtype)})")
                    else:
                        self.emit(f"{nm}[{idx}] = {self.scalar(v.dtype)}")
        elif op == "F.relu":
            self.emit(f"F.relu({nm}, inplace=True)")
        elif op == "addcmul_":
            self.emit(f"{nm}.addcmul_({nm}, {nm}, value=0.5)")
        elif op == "lerp_":
            self.emit(f"{nm}.lerp_(torch.zeros_like({nm}), 0.5)")
        else:
            self.emit(f"{nm}.{op}()")

    def error_stmt(self, v):
        self.errors += 1
        nm = v.name
        opts = ["view", "bcast", "dim", "leaf", "dtype", "t3"]
        op = self.r.choice(opts)
        if op == "view":
            self.emit(f"{self.fresh('e')} = {nm}.view({numel(v.shape) + 1})")
        elif op == "bcast":
            self.emit(f"{nm}.add_(torch.ones({hv(v.shape[-1]) + 1 if v.shape else 2}, 3))")
        elif op == "dim":
            self.emit(f"{self.fresh('e')} = {nm}.transpose(0, {len(v.shape) + 1})")
        elif op == "leaf":
            leaf = self.pick(lambda w: w.leafrg) or v
            self.emit(f"{leaf.name}.mul_(2)")
        elif op == "dtype":
            if v.dtype in FLOATS:
                self.emit(f"{nm}.add_(torch.ones({self.dimexpr(v, v.shape) or ''}, dtype=torch.int64) > 0)"
                          if not v.has_sym() and v.shape else f"{nm}.bitwise_and_(1)")
            else:
                self.emit(f"{nm}.add_(0.5)")
        else:
            self.emit(f"{self.fresh('e')} = {nm}.unsqueeze(0).unsqueeze(0).t()")

    def func_result(self, v):
        """A fresh (non-view) result computed from v: (code, V)."""
        name = self.fresh("r")
        isf = v.dtype in FLOATS
        r = self.r.random()
        if r < 0.25:
            e, dt, rg = self.operand(v)
            opn = self.r.choice(["+", "*", "-"])
            return f"{v.name} {opn} {e}", self.fresh_result(name, v.shape, promote(v.dtype, dt), v.rg or rg)
        if r < 0.4:
            return f"{v.name}.clone()", self.fresh_result(name, v.shape, v.dtype, v.rg)
        if r < 0.5 and isf:
            f = self.r.choice(["sin", "exp", "tanh", "sigmoid", "relu", "abs"])
            return f"torch.{f}({v.name})", self.fresh_result(name, v.shape, v.dtype, v.rg)
        if r < 0.6 and v.shape:
            d = self.r.randrange(len(v.shape))
            kd = self.chance(0.4)
            ns = v.shape[:d] + ([1] if kd else []) + v.shape[d + 1:]
            f = "sum" if not isf or self.chance(0.5) else self.r.choice(["mean", "amax", "sum"])
            return (f"{v.name}.{f}({d}{', keepdim=True' if kd else ''})",
                    self.fresh_result(name, ns, v.dtype, v.rg))
        if r < 0.7 and v.shape:
            return f"{v.name}.contiguous()", (self.fresh_result(name, v.shape, v.dtype, v.rg) if not v.contiguous()
                                              else self.view_of(v, name, v.shape, v.strides))
        if r < 0.78:
            return f"{v.name} > 0", self.fresh_result(name, v.shape, "bool", False)
        if r < 0.82 and len(v.shape) == 2 and self.chance(0.5):
            return f"{v.name}.T", self.view_of(v, name, v.shape[::-1], v.strides[::-1])
        if r < 0.86 and v.dtype != "float64":
            return f"{v.name}.to(torch.float64)", self.fresh_result(name, v.shape, "float64", v.rg)
        if r < 0.93 and len(v.shape) >= 1:
            return (f"torch.cat([{v.name}, {v.name}], dim=0)",
                    self.fresh_result(name, [v.shape[0] if isinstance(v.shape[0], int) and False else None] and
                                      self.catshape(v), v.dtype, v.rg))
        return f"{v.name} * 1", self.fresh_result(name, v.shape, v.dtype, v.rg)

    def catshape(self, v):
        d0 = v.shape[0]
        if isinstance(d0, str):
            return ["2n"] + v.shape[1:]  # not tracked numerically; marked unusual
        return [2 * d0] + v.shape[1:]

    def usable(self, v):
        return not any(isinstance(d, str) and d != "n" for d in v.shape) and not (v.inf and not self.inference)

    # ------------------------------------------------------------- scenarios
    def sc_view_chain(self, depth=None):
        src = self.pick(lambda v: self.usable(v) and v.dtype != "bool")
        if src is None:
            return
        chain = [src]
        for _ in range(depth or self.r.randint(2, 4)):
            res = None
            for _try in range(4):
                name = self.fresh("v")
                res = self.view_step(chain[-1], name)
                if res:
                    break
            if not res:
                break
            code, v = res
            self.emit(f"{v.name} = {code}")
            chain.append(v)
        deep = chain[-1]
        if self.can_inplace(deep) or self.chance(0.05):
            self.inplace(deep)
        # read a sibling or the base
        if self.chance(0.6):
            sib = self.view_step(src)
            if sib:
                self.emit(f"{sib[1].name} = {sib[0]}")
        if self.chance(0.5):
            code, v = self.func_result(self.r.choice(chain))
            self.emit(f"{v.name} = {code}")

    def sc_loop(self):
        v = self.pick(lambda v: v.shape and isinstance(v.shape[0], int) and v.shape[0] >= 2 and self.can_inplace(v)
                      and self.usable(v) and v.dtype != "bool")
        if v is None:
            return self.sc_view_chain()
        n = v.shape[0]
        kind = self.r.random()
        if kind < 0.45:
            lim = "k" if "k" in self.intparams and self.intparams["k"] <= n else str(self.r.randint(1, n))
            self.emit(f"for i in range({lim}):")
            self.ind += 1
            body = self.r.choice(["x[i].add_(i)", "x[i] *= 2", "x[i] = x[i - 1] if False else 0",
                                  "x[i:i + 1].mul_(0.5)", "x.select(0, i).fill_(i)",
                                  "x[i, ...] += x[0]" if len(v.shape) >= 1 else "x[i].add_(1)"])
            if v.dtype not in FLOATS:
                body = body.replace("0.5", "2")
            if "if False" in body:
                body = "x[i] = i"
            self.emit(body.replace("x", v.name))
            self.ind -= 1
        elif kind < 0.7:
            it = self.fresh("row")
            self.emit(f"for {it} in {v.name}:" if self.chance(0.5) else f"for {it} in {v.name}.unbind(0):")
            self.ind += 1
            if v.rg and self.grad:
                self.emit(f"{it}.mul_(2)" if self.chance(0.2) else f"{it} = {it} * 2")
            else:
                self.emit(f"{it}.{self.r.choice(['mul_(2)', 'add_(1)', 'zero_()', 'abs_()'])}")
            self.ind -= 1
        else:
            lst = self.fresh("ps")
            j = self.fresh("j")
            self.emit(f"for {j}, p in enumerate({v.name}.split(1)):" if self.chance(0.5)
                      else f"for {j}, p in enumerate({v.name}.chunk({n})):")
            self.ind += 1
            if not v.rg or not self.grad:
                self.emit(f"p.add_({j})")
            else:
                self.emit(f"p = p + {j}")
            self.ind -= 1

    def sc_comprehension(self):
        v = self.pick(lambda v: v.shape and isinstance(v.shape[0], int) and len(v.shape) >= 1 and self.usable(v)
                      and v.dtype != "bool")
        if v is None:
            return
        name = self.fresh("rows")
        r = self.r.random()
        if r < 0.4:
            self.emit(f"{name} = [r * {self.scalar(v.dtype)} for r in {v.name}]")
        elif r < 0.7:
            self.emit(f"{name} = [r for i, r in enumerate({v.name}.unbind(0)) if i % 2 == 0]")
        else:
            self.emit(f"{name} = [{v.name}[i] for i in range({v.shape[0]})]")
        out = self.fresh("s")
        n = v.shape[0] if r >= 0.7 or r < 0.4 else (v.shape[0] + 1) // 2
        if self.chance(0.5):
            self.emit(f"{out} = torch.stack({name})")
            self.fresh_result(out, [n] + v.shape[1:], v.dtype, v.rg)
        elif r >= 0.7 and self.chance(0.5):
            # a list of views: mutate one, return the list
            if self.can_inplace(v) and not (v.rg and self.grad):
                self.emit(f"{name}[0].add_(1)")
            self.returns_extra.append(name)
        else:
            self.emit(f"{out} = torch.cat({name}, dim=0)" if len(v.shape) >= 2 else f"{out} = torch.stack({name}).sum()")
            if len(v.shape) >= 2:
                self.fresh_result(out, [n * v.shape[1]] + v.shape[2:], v.dtype, v.rg)
            else:
                self.fresh_result(out, [], v.dtype, v.rg)

    def sc_if(self):
        v = self.pick(lambda v: self.usable(v))
        if v is None:
            return
        c = self.r.choice([f"{v.name}.dim() == {len(v.shape)}", f"{v.name}.dim() > 2",
                           f"{v.name}.requires_grad", f"{v.name}.is_contiguous()", f"{v.name}.is_leaf",
                           f"{v.name}.numel() > 8",
                           f"{v.name}.shape[0] > 3" if v.shape else f"{v.name}.dim() == 0",
                           "flag" if "flag" in self.intparams else "torch.is_grad_enabled()",
                           "k > 1" if "k" in self.intparams else "True"])
        self.emit(f"if {c}:")
        saved = list(self.vars), self.count
        self.ind += 1
        nlines = len(self.lines)
        self.r.choice([self.sc_view_chain, self.sc_mutate_simple])()
        if len(self.lines) == nlines:
            self.emit("pass")
        then_vars = self.vars
        self.ind -= 1
        self.emit("else:")
        self.ind += 1
        self.vars = list(saved[0])
        nlines = len(self.lines)
        code, w = self.func_result(v)
        self.emit(f"{w.name} = {code}")
        self.ind -= 1
        # after the if, only the variables bound on both paths are safe: keep the old ones
        self.vars = [x for x in saved[0]]
        for x in then_vars:
            if x not in self.vars:
                pass

    def sc_mutate_simple(self):
        v = self.pick(lambda v: self.can_inplace(v) and self.usable(v) and v.dtype != "bool")
        if v is None:
            return
        self.inplace(v)

    def sc_helper(self):
        v = self.pick(lambda v: self.usable(v) and v.dtype in FLOATS)
        if v is None:
            return
        self.nhelp += 1
        hname = f"h_{self.name[2:]}_{self.nhelp}"
        kind = self.r.choice(["view_mut", "compute", "view_ret", "scale"])
        lines = []
        call_mut = False
        if kind == "view_mut" and self.can_inplace(v):
            sub = "t[0]" if v.shape else "t"
            lines = [f"def {hname}(t, s):", f"    u = {sub}", "    u.mul_(s)", "    return u"]
            call_mut = True
            out = self.view_of(v, self.fresh("hv"), v.shape[1:], v.strides[1:])
        elif kind == "view_ret" and len(v.shape) >= 2:
            lines = [f"def {hname}(t, s):", "    return t.transpose(0, 1), t * s"]
            a = self.fresh("ha")
            b = self.fresh("hb")
            ns = [v.shape[1], v.shape[0]] + v.shape[2:]
            nst = [v.strides[1], v.strides[0]] + v.strides[2:]
            self.helpers.append("\n".join(lines))
            self.emit(f"{a}, {b} = {hname}({v.name}, {self.scalar(v.dtype)})")
            self.view_of(v, a, ns, nst)
            self.fresh_result(b, v.shape, v.dtype, v.rg)
            return
        elif kind == "scale":
            lines = [f"def {hname}(t, s):", "    if t.dim() > 1:", "        return t.sum(0) * s",
                     "    return t * s"]
            out = self.fresh_result(self.fresh("hs"), v.shape[1:] if len(v.shape) > 1 else v.shape, v.dtype, v.rg)
        else:
            lines = [f"def {hname}(t, s):", "    a = t.clone()", "    a.add_(s)", "    return a, a.sum()"]
            a = self.fresh("hc")
            b = self.fresh("hd")
            self.helpers.append("\n".join(lines))
            self.emit(f"{a}, {b} = {hname}({v.name}, {self.scalar(v.dtype)})")
            self.fresh_result(a, v.shape, v.dtype, v.rg)
            self.fresh_result(b, [], v.dtype, v.rg)
            return
        self.helpers.append("\n".join(lines))
        self.emit(f"{out.name} = {hname}({v.name}, {self.scalar(v.dtype)})")
        if self.chance(0.4):
            self.emit(f"{self.fresh('h2')} = {hname}({out.name if out.shape else v.name}, 2)")

    def sc_grad_mode(self):
        v = self.pick(lambda v: self.usable(v) and v.dtype in FLOATS)
        if v is None:
            return
        ctx = self.r.choice(["torch.no_grad()", "torch.no_grad()", "torch.no_grad()", "torch.enable_grad()",
                             "torch.set_grad_enabled(False)", "torch.enable_grad()"])
        if self.chance(0.08):
            ctx = "torch.inference_mode()"
        old = (self.grad, self.inference)
        self.emit(f"with {ctx}:")
        self.ind += 1
        nlines = len(self.lines)
        if ctx == "torch.inference_mode()":
            self.inference = True
            self.grad = False
        elif ctx == "torch.enable_grad()":
            self.grad = True if not self.inference else self.grad
        else:
            self.grad = False
        res = self.view_step(v)
        if res:
            code, w = res
            self.emit(f"{w.name} = {code}")
        else:
            w = v
        if self.can_inplace(w) or self.chance(0.1):
            self.inplace(w)
        if self.inference and self.chance(0.3):
            self.emit("with torch.inference_mode(False):")
            self.ind += 1
            code, x = self.func_result(v)
            self.emit(f"{x.name} = {code}")
            self.ind -= 1
        if self.grad is False and self.chance(0.4) and not self.inference:
            self.emit("with torch.enable_grad():")
            self.ind += 1
            self.grad = True
            code, x = self.func_result(v)
            self.emit(f"{x.name} = {code}")
            self.ind -= 1
            self.grad = False
        if self.chance(0.4):
            code, x = self.func_result(w)
            self.emit(f"{x.name} = {code}")
        if len(self.lines) == nlines:
            self.emit("pass")
        self.ind -= 1
        self.grad, self.inference = old
        # after the block: maybe mutate the view made inside it
        if self.chance(0.12) and res:
            self.inplace(w, allow_err=False)

    def sc_autograd(self):
        v = self.pick(lambda v: self.usable(v) and v.dtype in FLOATS)
        if v is None:
            return
        r = self.r.random()
        if r < 0.3:
            d = self.fresh("d")
            self.emit(f"{d} = {v.name}.detach()")
            w = self.view_of(v, d, v.shape, v.strides)
            w.rg = w.vleaf = w.ngview = False
            self.inplace(w, allow_err=False)
        elif r < 0.5:
            c = self.fresh("c")
            self.emit(f"{c} = custom_view({v.name})")
            w = self.view_of(v, c, v.shape, v.strides)
            if self.chance(0.5) and self.can_inplace(w):
                self.inplace(w)
        elif r < 0.55 and v.rg and v.leafrg:
            self.emit(f"{v.name}.requires_grad_(False)")
            v.rg = v.leafrg = False
        elif r < 0.75:
            src = self.pick(lambda w: not w.rg and w.dtype in FLOATS and self.usable(w) and w.root == w.name) or v
            if not src.rg:
                self.emit(f"{src.name}.requires_grad_()")
                src.rg = True
                src.leafrg = not src.is_input or True
                if src.is_input or True:
                    src.leafrg = True
        else:
            src = self.pick(lambda w: self.usable(w) and (w.root == w.name or self.chance(0.1)) and w.dtype in FLOATS) or v
            self.emit(f"{src.name}.detach_()")
            src.rg = False
            src.leafrg = src.vleaf = src.ngview = False

    def sc_meta(self):
        v = self.pick(lambda v: self.usable(v) and not v.expanded and v.dtype != "bool")
        if v is None:
            return
        rank = len(v.shape)
        ops = ["unsqueeze_"]
        if rank == 2:
            ops += ["t_", "t_"]
        if rank >= 2:
            ops += ["transpose_", "swapdims_"]
        if any(hv(d) == 1 for d in v.shape):
            ops += ["squeeze_"]
        if not v.has_sym() and v.contiguous() and rank >= 1:
            ops += ["as_strided_", "set_"]
            if not v.rg or self.chance(0.1):
                ops.append("resize_")
        op = self.r.choice(ops)
        nm = v.name
        if op == "unsqueeze_":
            d = self.r.randint(0, rank)
            self.emit(f"{nm}.unsqueeze_({d})")
            ins = (v.strides[d] * hv(v.shape[d])) if d < rank else 1
            v.shape.insert(d, 1)
            v.strides.insert(d, ins)
        elif op == "t_":
            self.emit(f"{nm}.t_()")
            v.shape.reverse()
            v.strides.reverse()
        elif op in ("transpose_", "swapdims_"):
            a, b = self.r.sample(range(rank), 2)
            self.emit(f"{nm}.{op}({a}, {b})")
            v.shape[a], v.shape[b] = v.shape[b], v.shape[a]
            v.strides[a], v.strides[b] = v.strides[b], v.strides[a]
        elif op == "squeeze_":
            d = [i for i in range(rank) if hv(v.shape[i]) == 1][0]
            self.emit(f"{nm}.squeeze_({d})")
            del v.shape[d]
            del v.strides[d]
        elif op == "as_strided_":
            n = numel(v.shape)
            self.emit(f"{nm}.as_strided_(({n},), (1,))")
            v.shape, v.strides = [n], [1]
        elif op == "resize_":
            n = numel(v.shape)
            m = self.r.choice([n, max(1, n // 2)])
            self.emit(f"{nm}.resize_({m})")
            v.shape, v.strides = [m], [1]
        else:
            src = self.pick(lambda w: w.dtype == v.dtype and w is not v and self.usable(w) and not w.rg)
            if src is None:
                self.emit(f"{nm}.set_(torch.zeros({numel(v.shape)}{self.dtkw(v.dtype)}))")
                v.shape, v.strides = [numel(v.shape)], [1]
            else:
                self.emit(f"{nm}.set_({src.name})")
                v.shape, v.strides = list(src.shape), list(src.strides)
                v.root = src.root
        # then a data mutation or a view
        if self.chance(0.6) and self.can_inplace(v):
            self.inplace(v)
        elif self.chance(0.5):
            res = self.view_step(v)
            if res:
                self.emit(f"{res[1].name} = {res[0]}")

    def sc_intermediate(self):
        v = self.pick(lambda v: self.usable(v) and v.dtype != "bool")
        if v is None:
            return
        code, w = self.func_result(v)
        self.emit(f"{w.name} = {code}")
        if self.chance(0.5) and w.shape and not any(isinstance(d, str) and d != "n" for d in w.shape):
            res = self.view_step(w)
            if res:
                self.emit(f"{res[1].name} = {res[0]}")
                if self.can_inplace(res[1]) and self.chance(0.6):
                    self.inplace(res[1])

    def sc_multi(self):
        v = self.pick(lambda v: self.usable(v) and v.shape and isinstance(v.shape[0], int) and v.shape[0] >= 2
                      and v.dtype != "bool")
        if v is None:
            return
        n = v.shape[0]
        if self.chance(0.5):
            names = [self.fresh("u") for _ in range(n)]
            self.emit(f"{', '.join(names)}{',' if n == 1 else ''} = {v.name}" if self.chance(0.4)
                      else f"{', '.join(names)} = {v.name}.unbind(0)")
            parts = [self.view_of(v, nm_, v.shape[1:], v.strides[1:], multi=True) for nm_ in names]
        else:
            a = self.fresh("u")
            b = self.fresh("u")
            self.emit(f"{a}, *{b} = {v.name}.split(1)")
            parts = [self.view_of(v, a, [1] + v.shape[1:], v.strides, multi=True)]
        p = parts[0]
        if self.chance(0.5):
            if self.can_inplace(p) or self.chance(0.15):
                self.inplace(p)
        else:
            code, w = self.func_result(p)
            self.emit(f"{w.name} = {code}")

    def sc_dtype_layout(self):
        v = self.pick(lambda v: self.usable(v) and v.dtype != "bool")
        if v is None:
            return
        r = self.r.random()
        nm = v.name
        if r < 0.3 and v.dtype in ("float32", "float16", "bfloat16", "int64", "float64") and v.shape \
                and v.strides and v.strides[-1] == 1:
            other = {"float32": "int32", "float16": "bfloat16", "bfloat16": "float16", "int64": "float64",
                     "float64": "int64"}[v.dtype]
            w = self.fresh("dv")
            self.emit(f"{w} = {nm}.view(torch.{other})")
            x = self.view_of(v, w, v.shape, v.strides)
            x.dtype = other if other in FLOATS + ("int64",) else "int32"
            if x.dtype not in FLOATS:
                x.rg = False
            if self.can_inplace(x) and not v.rg:
                self.inplace(x, allow_err=False)
        elif r < 0.5:
            m = self.fresh("m")
            self.emit(f"{m} = {nm} > {self.scalar(v.dtype)}")
            self.fresh_result(m, v.shape, "bool", False)
            if self.can_inplace(v) and self.chance(0.6):
                self.emit(f"{nm}.masked_fill_({m}, 0)")
            else:
                w = self.fresh("wh")
                self.emit(f"{w} = torch.where({m}, {nm}, torch.zeros_like({nm}))")
                self.fresh_result(w, v.shape, v.dtype, v.rg)
        elif r < 0.7 and len(v.shape) == 4:
            w = self.fresh("cl")
            f = self.r.choice(["contiguous", "clone"])
            self.emit(f"{w} = {nm}.{f}(memory_format=torch.channels_last)")
            N, C, H, W = [hv(d) for d in v.shape]
            st = [H * W * C, 1, W * C, C]
            if v.strides == st or (f == "contiguous" and all(
                    hv(d) == 1 or a == b for d, a, b in zip(v.shape, v.strides, st))):
                x = self.view_of(v, w, v.shape, v.strides) if f == "contiguous" else \
                    self.fresh_result(w, v.shape, v.dtype, v.rg)
            else:
                x = self.fresh_result(w, v.shape, v.dtype, v.rg)
                x.strides = st
            if self.chance(0.5) and self.can_inplace(x):
                self.inplace(x)
        elif r < 0.85 and v.shape:
            w = self.fresh("ex")
            self.emit(f"{w} = {nm}.unsqueeze(0).expand(3, {', '.join(['-1'] * len(v.shape))})")
            self.view_of(v, w, [3] + v.shape, [0] + v.strides, expanded=True)
            if self.chance(0.4):
                y = self.fresh("ey")
                self.emit(f"{y} = {w}.sum(0)")
                self.fresh_result(y, v.shape, v.dtype, v.rg)
        else:
            dt = self.r.choice(["float16", "float64", "bfloat16", "float32", "int64"])
            w = self.fresh("cv")
            self.emit(f"{w} = {nm}.to(torch.{dt})")
            if dt == v.dtype:
                self.view_of(v, w, v.shape, v.strides)
            else:
                self.fresh_result(w, v.shape, dt, v.rg)

    def sc_gradstmt(self):
        if self.ind != 1 or not self.grad:
            return self.sc_view_chain()
        self.emit("torch.set_grad_enabled(False)")
        self.grad = False
        self.sc_view_chain()
        if self.chance(0.6):
            self.emit("torch.set_grad_enabled(True)")
            self.grad = True

    # ------------------------------------------------------------- assemble
    def returns(self):
        cands = [v for v in self.vars if not any(isinstance(d, str) and d != "n" for d in v.shape)]
        k = self.r.randint(1, 4)
        items = []
        for _ in range(k):
            r = self.r.random()
            if r < 0.1:
                items.append(self.r.choice(["None", "1", f"{self.vars[0].name}.shape[0]" if self.vars[0].shape
                                            else "2", f"{self.vars[0].name}.dim()", f"{self.vars[0].name}.shape",
                                            f"{self.vars[0].name}.stride()", "torch.is_grad_enabled()"]))
            else:
                items.append(self.r.choice(cands).name)
        if self.chance(0.15):
            items.append(items[0])  # the same thing twice
        items += self.returns_extra
        if self.chance(0.2) and len(items) >= 2:
            return f"return {items[0]}, [{', '.join(items[1:])}]"
        if self.chance(0.1) and len(items) >= 3:
            return f"return ({items[0]}, ({items[1]}, {items[2]})), {', '.join(items[3:]) or 'None'}"
        return "return " + ", ".join(items)

    def build(self):
        self.returns_extra = []
        self.make_inputs()
        scen = [(self.sc_view_chain, 30), (self.sc_loop, 10), (self.sc_comprehension, 6), (self.sc_if, 8),
                (self.sc_helper, 8), (self.sc_grad_mode, 12), (self.sc_autograd, 8), (self.sc_meta, 10),
                (self.sc_intermediate, 10), (self.sc_multi, 8),
                (self.sc_dtype_layout, 10), (self.sc_gradstmt, 3)]
        k = self.r.randint(2, 5)
        for _ in range(k):
            f = self.r.choices([s for s, _ in scen], [w for _, w in scen])[0]
            f()
            if len(self.lines) > 20:
                break
        if not self.lines:
            self.sc_view_chain()
        self.emit(self.returns())
        doc = "\n\n".join(self.helpers)
        head = f"def {self.name}({', '.join(self.params)}):"
        return (doc + "\n\n" if doc else "") + head + "\n" + "\n".join(self.lines) + "\n"


def generate(seed, files, per_file, out):
    os.makedirs(out, exist_ok=True)
    rng = random.Random(f"gen3-{seed}")
    for f in range(files):
        parts = [f"# gen3 random programs (seed {seed}, file {f}); not a port of a PyTorch test.",
                 "import torch", "import torch.nn.functional as F", ""]
        for k in range(per_file):
            while True:
                g = Gen(rng, f"g_{f:03d}_{k:02d}")
                try:
                    text = g.build()
                except (ValueError, IndexError, KeyError, TypeError, ZeroDivisionError):
                    continue
                if "2n" in text or "None]" in text:
                    continue
                break
            parts.append(text)
        with open(os.path.join(out, f"gen_{f:03d}.tp"), "w") as fh:
            fh.write("\n".join(parts))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seed", default="0")
    ap.add_argument("--files", type=int, default=20)
    ap.add_argument("--per-file", type=int, default=20)
    ap.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "gen", "gen3"))
    a = ap.parse_args()
    generate(a.seed, a.files, a.per_file, a.out)


if __name__ == "__main__":
    main()
