#!/usr/bin/env python3
"""Random `.tp` program generator for differential testing of tpi against the oracle.

    gen.py --seed S --files N --per-file K --out DIR

writes DIR/gen_NNN.tp, each holding K entry functions (f_NNN_KK). Every
program has 1-3 tensor inputs (random shapes, sometimes symbolic "n"/"m",
float32/float16/int64 (a little float64/bfloat16), requires_grad, leaf=False,
stride=, memory_format=), 2-8 statements mixing views, multi-output views,
functional ops, in-place data and metadata ops, set_, requires_grad_ and
grad-mode blocks, then returns a random mix of inputs, intermediates, views
and numbers. Shapes, dtypes and requires_grad are tracked (approximately) so
that most programs are valid; a few statements are deliberately wrong (about
1 in 25) so that the error paths are exercised too.

Plain Python 3, no third-party packages (symbolic sizes are kept as small
polynomials over the symbol names).
"""
import argparse
import os
import random

FLOATS = ("float32", "float16", "float64", "bfloat16")
HINT = {"n": 5, "m": 7}


# ------------------------------------------------------------ symbolic sizes
# A size is an int or a Sym: a product  coef * n^a * m^b  (enough for views).
class Sym:
    def __init__(self, coef, pows):
        self.coef = coef
        self.pows = tuple(sorted((k, v) for k, v in pows.items() if v))

    def __eq__(self, o):
        return isinstance(o, Sym) and self.coef == o.coef and self.pows == o.pows

    def __hash__(self):
        return hash((self.coef, self.pows))

    def hint(self):
        v = self.coef
        for k, p in self.pows:
            v *= HINT[k] ** p
        return v


def sym(name):
    return Sym(1, {name: 1})


def simplify(s):
    if isinstance(s, Sym) and not s.pows:
        return s.coef
    return s


def mul(a, b):
    if isinstance(a, int) and isinstance(b, int):
        return a * b
    if isinstance(a, int):
        a, b = b, a
    if isinstance(b, int):
        return simplify(Sym(a.coef * b, dict(a.pows)))
    pows = dict(a.pows)
    for k, v in b.pows:
        pows[k] = pows.get(k, 0) + v
    return simplify(Sym(a.coef * b.coef, pows))


def is_static(d):
    return isinstance(d, int)


def hint(d):
    return d if isinstance(d, int) else d.hint()


def numel(shape):
    r = 1
    for d in shape:
        r = mul(r, d)
    return r


def broadcast(a, b):
    """Broadcast shape, or None when the shapes do not broadcast (statically)."""
    out = []
    for i in range(max(len(a), len(b))):
        da = a[len(a) - 1 - i] if i < len(a) else 1
        db = b[len(b) - 1 - i] if i < len(b) else 1
        if da == db:
            out.append(da)
        elif da == 1:
            out.append(db)
        elif db == 1:
            out.append(da)
        else:
            return None
    return list(reversed(out))


def promote(a, b):
    """torch.result_type of two tensors of the same dim-category (approximate)."""
    if a == b:
        return a
    if a == "bool":
        return b
    if b == "bool":
        return a
    fa, fb = a in FLOATS, b in FLOATS
    if fa and not fb:
        return a
    if fb and not fa:
        return b
    if fa and fb:
        if {a, b} == {"float16", "bfloat16"}:
            return "float32"
        order = ["float16", "bfloat16", "float32", "float64"]
        return max(a, b, key=order.index)
    return "int64"


# ------------------------------------------------------------ values
class T:
    """A tensor value bound to a name."""

    def __init__(self, name, shape, dtype, rg, kind, root, contig=True, leaf=None,
                 expanded=False, inference=False, grad_fn=False):
        self.name = name
        self.shape = list(shape)
        self.dtype = dtype
        self.rg = rg
        self.kind = kind          # input | view | fresh | piece
        self.root = root          # name of the storage owner
        self.contig = contig
        self.leaf = (not rg) if leaf is None else leaf
        self.expanded = expanded
        self.inference = inference

    @property
    def rank(self):
        return len(self.shape)

    def isfloat(self):
        return self.dtype in FLOATS


class Gen:
    def __init__(self, rng, name):
        self.r = rng
        self.name = name
        self.vars = []          # live tensor values
        self.lines = []
        self.indent = 1
        self.grad = True
        self.inference = False
        self.counter = 0
        self.params = []
        self.symbolic = False
        self.error_rate = 0.04

    # ---------------------------------------------------------- helpers
    def fresh(self, prefix="v"):
        self.counter += 1
        return f"{prefix}{self.counter}"

    def emit(self, s):
        self.lines.append("    " * self.indent + s)

    def chance(self, p):
        return self.r.random() < p

    def pick(self, pred=lambda t: True):
        c = [t for t in self.vars if pred(t)]
        return self.r.choice(c) if c else None

    def grad_leaf_root(self, t):
        """t is (a view of) an input that is a leaf requiring grad: in-place ops on it fail in eager."""
        roots = [v for v in self.vars if v.name == t.root and v.kind == "input"]
        return bool(roots) and roots[0].rg and roots[0].leaf

    def pick_target(self, pred=lambda t: True):
        """A target for an in-place op; mostly avoids grad leaves (else eager's inplace-leaf hides the rest)."""
        if self.grad and self.chance(0.6):
            t = self.pick(lambda t: pred(t) and not self.grad_leaf_root(t))
            if t is not None:
                return t
        return self.pick(pred)

    def dimstr(self, t, i):
        """A size of t written as source: an int literal or t.size(i) / t.shape[i]."""
        d = t.shape[i]
        if is_static(d):
            return str(d)
        return self.r.choice([f"{t.name}.size({i})", f"{t.name}.shape[{i}]"])

    def shape_src(self, t, shape, allow_minus1=True):
        """Source for a list of sizes; symbolic sizes use t.size(i) when they are t's dims,
        else one of them becomes -1."""
        out = []
        used_minus = False
        for d in shape:
            if is_static(d):
                out.append(str(d))
            elif d in t.shape:
                out.append(self.dimstr(t, t.shape.index(d)))
            elif allow_minus1 and not used_minus:
                out.append("-1")
                used_minus = True
            else:
                return None
        return ", ".join(out)

    def new(self, shape, dtype, rg, kind, root=None, **kw):
        name = self.fresh()
        t = T(name, shape, dtype, rg and self.grad and not self.inference, kind,
              root or name, inference=self.inference and kind != "view", **kw)
        return t

    def bind(self, t, expr):
        self.emit(f"{t.name} = {expr}")
        self.vars.append(t)
        return t

    def rand_dim(self, t, allow_neg=True):
        if t.rank == 0:
            return 0
        d = self.r.randrange(t.rank)
        if allow_neg and self.chance(0.25):
            d -= t.rank
        return d

    def bad_dim(self, t):
        return self.r.choice([t.rank, t.rank + 1, -t.rank - 1]) if t.rank else 2

    def scalar_for(self, dtype):
        if dtype in FLOATS:
            return self.r.choice(["2", "0.5", "1.5", "-1", "3.0"])
        if dtype == "bool":
            return "True"
        return self.r.choice(["2", "1", "3", "-1"])

    # ---------------------------------------------------------- inputs
    def gen_inputs(self):
        n = self.r.choice([1, 1, 2, 2, 2, 3, 3])
        self.symbolic = self.chance(0.2)
        names = self.r.choice([["x", "y", "z"], ["a", "b", "c"], ["x", "w", "b"], ["inp", "other", "bias"]])
        base_shape = None
        for i in range(n):
            if base_shape is not None and self.chance(0.45):
                # related shape so that broadcasting / binary ops apply
                shape = list(base_shape)
                if shape and self.chance(0.5):
                    shape = shape[self.r.randrange(len(shape)):]
                elif shape and self.chance(0.3):
                    shape[self.r.randrange(len(shape))] = 1
            else:
                rank = self.r.choice([0, 1, 1, 2, 2, 2, 3, 3, 4])
                shape = [self.r.choice([1, 2, 2, 3, 3, 4, 4, 5, 6]) for _ in range(rank)]
            if self.symbolic:
                if not shape:
                    shape = [1]
                if not any(isinstance(d, Sym) for d in shape):
                    j = self.r.randrange(len(shape))
                    shape[j] = sym("n" if self.chance(0.7) else "m")
                if len(shape) >= 2 and self.chance(0.2):
                    shape[-1] = sym("m")
            if base_shape is None:
                base_shape = shape
            dtype = self.r.choices(["float32", "float16", "int64", "float64", "bfloat16"],
                                   [65, 12, 15, 5, 3])[0]
            rg = dtype in FLOATS and self.chance(0.5)
            leaf = not (rg and self.chance(0.25))
            kw = []
            if dtype != "float32" or self.chance(0.1):
                kw.append(f"dtype=torch.{dtype}")
            if rg:
                kw.append("requires_grad=True")
            if not leaf:
                kw.append("leaf=False")
            contig = True
            if len(shape) == 4 and all(is_static(d) for d in shape) and self.chance(0.25):
                kw.append("memory_format=torch.channels_last")
                contig = False
            elif len(shape) >= 2 and all(is_static(d) for d in shape) and self.chance(0.15):
                perm = list(range(len(shape)))
                while perm == sorted(perm):
                    self.r.shuffle(perm)
                # a dense layout: strides of the permuted-contiguous tensor
                strides = [0] * len(shape)
                acc = 1
                for j in reversed(perm):
                    strides[j] = acc
                    acc *= shape[j]
                kw.append(f"stride={tuple(strides)}")
                contig = False
            sizes = ", ".join(f'"{d.pows[0][0]}"' if isinstance(d, Sym) else str(d) for d in shape)
            ann = f"Tensor({sizes}{', ' if sizes and kw else ''}{', '.join(kw)})"
            name = names[i]
            self.params.append(f"{name}: {ann}")
            t = T(name, shape, dtype, rg, "input", name, contig=contig, leaf=leaf)
            self.vars.append(t)
        if self.chance(0.08):
            self.params.append(self.r.choice(["k: int = 2", "s: float = 0.5", "flag: bool = True"]))

    # ---------------------------------------------------------- statements
    def statement(self, depth=0):
        kinds = ["view", "view", "view", "func", "func", "func", "inplace", "inplace", "inplace",
                 "multi", "setitem", "augassign", "meta", "block", "rg", "set", "detach"]
        w = [10, 10, 8, 10, 10, 8, 10, 8, 6, 6, 6, 6, 4, 6 if depth == 0 else 0, 3, 2, 3]
        k = self.r.choices(kinds, w)[0]
        getattr(self, "st_" + k)(depth)

    # --- views
    def st_view(self, depth):
        t = self.pick()
        if t is None:
            return
        r = t.rank
        opts = ["view_flat", "reshape", "transpose", "t", "permute", "unsqueeze", "squeeze", "expand",
                "slice", "select", "narrow", "detach", "flatten", "diagonal", "as_strided", "view_split",
                "view_merge", "none_index", "movedim", "mT", "unflatten", "alias"]
        op = self.r.choice(opts)
        bad = self.chance(self.error_rate)
        mk = lambda shape, expr, contig=False, **kw: self.bind(
            self.new(shape, t.dtype, t.rg, "view", t.root, contig=contig, expanded=t.expanded or kw.get("expanded", False)), expr)
        if op == "view_flat":
            if bad:
                return self.bind(self.new([1], t.dtype, t.rg, "view", t.root), f"{t.name}.view({hint(numel(t.shape)) + 1})")
            meth = "view" if (t.contig or self.chance(0.15)) else "reshape"
            return mk([numel(t.shape)], f"{t.name}.{meth}(-1)", contig=True)
        if op == "reshape":
            # reshape to a split / merge of static dims, or flatten
            if r >= 2 and self.chance(0.5):
                d = self.r.randrange(r - 1)
                shape = t.shape[:d] + [mul(t.shape[d], t.shape[d + 1])] + t.shape[d + 2:]
            else:
                shape = [numel(t.shape)]
            src = self.shape_src(t, shape)
            if src is None:
                return
            if bad:
                src = src + ", 2"
            return mk(shape, f"{t.name}.reshape({src})" if self.chance(0.8) else f"torch.reshape({t.name}, ({src},))",
                      contig=True)
        if op == "view_split":
            cand = [i for i, d in enumerate(t.shape) if is_static(d) and d in (4, 6)]
            if not cand:
                return self.st_view(depth)
            i = self.r.choice(cand)
            f = 2
            shape = t.shape[:i] + [f, t.shape[i] // f] + t.shape[i + 1:]
            src = self.shape_src(t, shape)
            if src is None:
                return
            meth = "view" if (t.contig or self.chance(0.3)) else "reshape"
            return mk(shape, f"{t.name}.{meth}({src})", contig=t.contig)
        if op == "view_merge":
            if r < 2:
                return self.st_view(depth)
            d = self.r.randrange(r - 1)
            shape = t.shape[:d] + [mul(t.shape[d], t.shape[d + 1])] + t.shape[d + 2:]
            src = self.shape_src(t, shape)
            if src is None:
                return
            meth = "view" if (t.contig or self.chance(0.3)) else "reshape"
            return mk(shape, f"{t.name}.{meth}({src})", contig=t.contig)
        if op == "transpose":
            if r < 2 and not bad:
                return mk(t.shape, f"{t.name}.transpose(0, -1)" if r == 1 else f"{t.name}.t()", contig=t.contig)
            a, b = self.rand_dim(t), self.rand_dim(t)
            if bad:
                b = self.bad_dim(t)
            shape = list(t.shape)
            if not bad:
                shape[a], shape[b] = shape[b], shape[a]
            fn = self.r.choice(["transpose", "transpose", "swapaxes", "swapdims"])
            return mk(shape, f"{t.name}.{fn}({a}, {b})", contig=t.contig and shape == t.shape)
        if op == "t":
            if r > 2 and not bad:
                return self.st_view(depth)
            shape = list(reversed(t.shape))
            if self.chance(0.3) and r == 2:
                return mk(shape, f"{t.name}.T", contig=False)
            return mk(shape, f"{t.name}.t()" if self.chance(0.7) else f"torch.t({t.name})", contig=r < 2 and t.contig)
        if op == "mT":
            if r < 2:
                return self.st_view(depth)
            shape = t.shape[:-2] + [t.shape[-1], t.shape[-2]]
            return mk(shape, f"{t.name}.mT")
        if op == "permute":
            if r < 2:
                return self.st_view(depth)
            perm = list(range(r))
            self.r.shuffle(perm)
            if bad:
                perm = perm[:-1]
            shape = [t.shape[p] for p in perm]
            ps = [p - r if self.chance(0.15) else p for p in perm]
            if self.chance(0.5):
                expr = f"{t.name}.permute({', '.join(map(str, ps))})"
            else:
                expr = f"{t.name}.permute(({', '.join(map(str, ps))},))" if len(ps) == 1 else f"torch.permute({t.name}, ({', '.join(map(str, ps))}))"
            return mk(shape, expr, contig=t.contig and perm == sorted(perm))
        if op == "movedim":
            if r < 2:
                return self.st_view(depth)
            a, b = self.r.randrange(r), self.r.randrange(r)
            shape = list(t.shape)
            d = shape.pop(a)
            shape.insert(b, d)
            return mk(shape, f"{t.name}.movedim({a}, {b})" if self.chance(0.6) else f"torch.movedim({t.name}, {a}, {b})")
        if op == "unsqueeze":
            d = self.r.randrange(-r - 1, r + 1)
            if bad:
                d = r + 2
            shape = list(t.shape)
            shape.insert(d if d >= 0 else r + 1 + d, 1)
            return mk(shape, f"{t.name}.unsqueeze({d})" if self.chance(0.8) else f"torch.unsqueeze({t.name}, {d})",
                      contig=t.contig)
        if op == "none_index":
            if r == 0:
                return mk([1], f"{t.name}[None]", contig=True)
            choice = self.r.randrange(3)
            if choice == 0:
                return mk([1] + t.shape, f"{t.name}[None]", contig=t.contig)
            if choice == 1:
                return mk(t.shape + [1], f"{t.name}[..., None]", contig=t.contig)
            return mk(t.shape[:1] + [1] + t.shape[1:], f"{t.name}[:, None]", contig=t.contig)
        if op == "squeeze":
            ones = [i for i, d in enumerate(t.shape) if d == 1]
            if bad:
                return mk(t.shape, f"{t.name}.squeeze({self.bad_dim(t)})")
            if ones and self.chance(0.6):
                i = self.r.choice(ones)
                shape = t.shape[:i] + t.shape[i + 1:]
                return mk(shape, f"{t.name}.squeeze({i})", contig=t.contig)
            if r and self.chance(0.3):
                i = self.r.randrange(r)
                shape = list(t.shape)
                if shape[i] == 1:
                    shape.pop(i)
                return mk(shape, f"{t.name}.squeeze({i})", contig=t.contig)
            shape = [d for d in t.shape if d != 1]
            return mk(shape, f"{t.name}.squeeze()", contig=t.contig)
        if op == "expand":
            if r >= 4:
                return self.st_view(depth)
            ones = [i for i, d in enumerate(t.shape) if d == 1]
            lead = self.r.choice([2, 3])
            if ones and self.chance(0.6):
                shape = list(t.shape)
                for i in ones:
                    if self.chance(0.7):
                        shape[i] = self.r.choice([2, 3, 4])
                parts = [str(d) if t.shape[i] == 1 or self.chance(0.3) and is_static(d) else "-1"
                         for i, d in enumerate(shape)]
            else:
                shape = [lead] + list(t.shape)
                parts = [str(lead)] + ["-1" if not is_static(d) or self.chance(0.5) else str(d) for d in t.shape]
            if bad:
                nonone = [i for i, d in enumerate(t.shape) if is_static(d) and d > 1]
                if nonone:
                    i = nonone[0]
                    parts[len(shape) - r + i] = str(t.shape[i] + 1)
            if self.chance(0.2):
                other = self.pick(lambda o: o.shape == shape and o is not t)
                if other is not None:
                    return mk(shape, f"{t.name}.expand_as({other.name})", expanded=True)
            return mk(shape, f"{t.name}.expand({', '.join(parts)})", expanded=True)
        if op == "slice":
            if r == 0:
                return mk([], f"{t.name}[...]", contig=t.contig)
            i = self.r.randrange(r)
            d = t.shape[i]
            h = hint(d)
            form = self.r.randrange(5)
            if form == 0:
                sl, nd = "1:", (d - 1 if is_static(d) else None)
            elif form == 1:
                k = self.r.randint(1, max(1, h))
                sl, nd = f":{k}", min(k, h) if is_static(d) else k
            elif form == 2:
                sl, nd = "::2", ((h + 1) // 2 if is_static(d) else None)
            elif form == 3:
                sl, nd = "-2:", min(2, h) if is_static(d) else 2
            else:
                a = self.r.randrange(0, max(1, h))
                b = self.r.randrange(a, h + 1)
                sl, nd = f"{a}:{b}", (b - a if is_static(d) else b - a)
            if nd is None:
                if not is_static(d):
                    return  # symbolic arithmetic: skip, it is tested elsewhere
                nd = d
            shape = list(t.shape)
            shape[i] = nd
            if i == r - 1 and r > 1 and self.chance(0.5):
                idx = f"..., {sl}"
            else:
                idx = ", ".join([":"] * i + [sl])
            return mk(shape, f"{t.name}[{idx}]", contig=t.contig and i == 0 and sl != "::2")
        if op == "select":
            if r == 0:
                return self.st_view(depth)
            i = self.r.randrange(r)
            d = t.shape[i]
            h = hint(d)
            j = self.r.randrange(h) if is_static(d) else 0
            if self.chance(0.2):
                j = j - h if is_static(d) else -1
            if bad:
                j = h if is_static(d) else 100
            shape = t.shape[:i] + t.shape[i + 1:]
            if i == 0 and self.chance(0.6):
                return mk(shape, f"{t.name}[{j}]", contig=t.contig)
            return mk(shape, f"{t.name}.select({i}, {j})", contig=False)
        if op == "narrow":
            if r == 0:
                return self.st_view(depth)
            i = self.r.randrange(r)
            d = t.shape[i]
            if is_static(d):
                start = self.r.randrange(d)
                ln = self.r.randint(0 if self.chance(0.1) else 1, d - start) if d - start >= 1 else 0
            else:
                start, ln = 0, 1
            if bad:
                ln = hint(d) + 1
            shape = list(t.shape)
            shape[i] = ln
            return mk(shape, f"{t.name}.narrow({i}, {start}, {ln})", contig=t.contig and i == 0)
        if op == "detach":
            v = self.new(t.shape, t.dtype, False, "view", t.root, contig=t.contig, expanded=t.expanded)
            v.leaf = True
            return self.bind(v, f"{t.name}.detach()")
        if op == "alias":
            return mk(t.shape, f"torch.ops.aten.alias({t.name})" if self.chance(0.5) else f"{t.name}.view_as({t.name})",
                      contig=t.contig)
        if op == "flatten":
            if r >= 2 and self.chance(0.5):
                a = self.r.randrange(r - 1)
                b = self.r.randrange(a + 1, r)
                shape = t.shape[:a] + [numel(t.shape[a:b + 1])] + t.shape[b + 1:]
                return mk(shape, f"{t.name}.flatten({a}, {b})", contig=t.contig)
            return mk([numel(t.shape)] if r else [1], f"{t.name}.flatten()" if self.chance(0.7) else f"torch.flatten({t.name})",
                      contig=True)
        if op == "unflatten":
            cand = [i for i, d in enumerate(t.shape) if is_static(d) and d in (4, 6)]
            if not cand:
                return self.st_view(depth)
            i = self.r.choice(cand)
            shape = t.shape[:i] + [2, t.shape[i] // 2] + t.shape[i + 1:]
            return mk(shape, f"{t.name}.unflatten({i}, (2, {t.shape[i] // 2}))", contig=t.contig)
        if op == "diagonal":
            if r < 2:
                return self.st_view(depth)
            a, b = t.shape[0], t.shape[1]
            if is_static(a) and is_static(b):
                m = min(a, b)
            elif a == b:
                m = a
            else:
                return self.st_view(depth)
            off = ""
            if is_static(m) and m > 1 and self.chance(0.3):
                off = ", 1" if is_static(b) and b > 1 else ""
                if off:
                    m = min(a, b - 1)
            shape = t.shape[2:] + [m]
            return mk(shape, f"{t.name}.diagonal({off[2:]})" if off else f"{t.name}.diagonal()")
        if op == "as_strided":
            if not all(is_static(d) for d in t.shape) or t.kind == "view" or not t.contig:
                return self.st_view(depth)
            nel = numel(t.shape)
            if nel < 2:
                return self.st_view(depth)
            form = self.r.randrange(3)
            if form == 0 and nel >= 4:
                size, stride = (2, 2), (1, 2)
            elif form == 1:
                size, stride = (nel // 2,), (2,) if nel >= 2 else (1,)
                if (size[0] - 1) * 2 >= nel:
                    size, stride = (nel,), (1,)
            else:
                size, stride = (2, nel - 1), (1, 1)
            off = ""
            if bad:
                size = (nel, 2)
                stride = (2, 1)
            expr = f"{t.name}.as_strided({size}, {stride}{off})" if self.chance(0.7) else f"torch.as_strided({t.name}, {size}, {stride})"
            overlap = form == 2 or form == 0 and False
            return mk(list(size), expr, expanded=t.expanded or form == 2)
        return None

    # --- multi-output views
    def st_multi(self, depth):
        t = self.pick(lambda t: t.rank >= 1)
        if t is None:
            return self.st_func(depth)
        i = self.rand_dim(t, allow_neg=False)
        d = t.shape[i]
        h = hint(d)
        form = self.r.choice(["unbind", "split", "split_sizes", "chunk", "tensor_split", "unpack"])
        mkp = lambda shape: self.new(shape, t.dtype, t.rg, "piece", t.root, expanded=t.expanded, contig=False)
        bad = self.chance(self.error_rate)
        if form in ("unbind", "unpack"):
            if not is_static(d) or d > 4 or d < 1:
                return
            n = d + (1 if bad else 0)
            shape = t.shape[:i] + t.shape[i + 1:]
            pieces = [mkp(shape) for _ in range(d)]
            names = [p.name for p in pieces]
            if bad:
                names.append(self.fresh())
            if form == "unpack" and i == 0:
                self.emit(f"{', '.join(names)}{',' if len(names) == 1 else ''} = {t.name}")
            elif self.chance(0.3) and d >= 2:
                self.emit(f"{names[0]}, *rest{self.counter} = {t.name}.unbind({i})")
                pieces = pieces[:1]
            else:
                self.emit(f"{', '.join(names)}{',' if len(names) == 1 else ''} = {t.name}.unbind({i})"
                          if self.chance(0.8) else f"{', '.join(names)}{',' if len(names) == 1 else ''} = torch.unbind({t.name}, {i})")
            self.vars += pieces
            return
        if form in ("split", "chunk", "tensor_split"):
            k = self.r.choice([1, 2, 3])
            if form == "split":
                if is_static(d):
                    sizes = [min(k, d - s) for s in range(0, d, k)] or [0]
                else:
                    sizes = [k] * (-(-h // k))
                    sizes[-1] = h - k * (len(sizes) - 1)
                expr = f"{t.name}.split({k}, {i})" if self.chance(0.7) else f"torch.split({t.name}, {k}, dim={i})"
            elif form == "chunk":
                cs = -(-h // k)
                sizes = [min(cs, h - s) for s in range(0, h, cs)] if h else [0]
                expr = f"{t.name}.chunk({k}, {i})" if self.chance(0.7) else f"torch.chunk({t.name}, {k}, dim={i})"
            else:
                q, rem = divmod(h, k)
                sizes = [q + 1 if j < rem else q for j in range(k)]
                expr = f"{t.name}.tensor_split({k}, {i})"
            if bad and form == "split":
                expr = f"{t.name}.split(0, {i})"
            shapes = []
            for s in sizes:
                sh = list(t.shape)
                sh[i] = s if is_static(d) or form != "split" else s
                if not is_static(d) and form != "split":
                    sh[i] = s
                shapes.append(sh)
            if not is_static(d):
                # pieces of a symbolic dim: the last keeps a symbolic-ish size; skip it
                shapes = shapes[:-1] if len(shapes) > 1 else shapes
            if len(sizes) <= 4 and self.chance(0.6) and is_static(d):
                pieces = [mkp(sh) for sh in shapes]
                names = [p.name for p in pieces]
                self.emit(f"{', '.join(names)}{',' if len(names) == 1 else ''} = {expr}")
                self.vars += pieces
            else:
                j = self.r.randrange(len(shapes))
                p = mkp(shapes[j])
                self.emit(f"{p.name} = {expr}[{j}]")
                self.vars.append(p)
            return
        if form == "split_sizes":
            if not is_static(d) or d < 2:
                return
            a = self.r.randint(1, d - 1)
            sizes = [a, d - a]
            if bad:
                sizes = [a, d - a + 1]
            pieces = [mkp(t.shape[:i] + [s] + t.shape[i + 1:]) for s in sizes]
            self.emit(f"{pieces[0].name}, {pieces[1].name} = {t.name}.split({sizes}, {i})"
                      if self.chance(0.6) else f"{pieces[0].name}, {pieces[1].name} = torch.split_with_sizes({t.name}, {sizes}, {i})")
            self.vars += pieces

    # --- functional ops
    def partner(self, t, exact=False):
        """Another tensor broadcastable with t (result shape == t.shape when exact)."""
        def ok(o):
            b = broadcast(t.shape, o.shape)
            return b is not None and (not exact or b == t.shape)
        return self.pick(ok)

    def st_func(self, depth):
        t = self.pick()
        if t is None:
            return
        op = self.r.choices(["binary", "unary", "reduce", "matmul", "cat", "copy", "to", "create", "where",
                             "softmax", "maxdim", "compare", "index"],
                            [14, 10, 10, 6, 5, 5, 4, 3, 2, 3, 2, 2, 2])[0]
        bad = self.chance(self.error_rate)
        rg_of = lambda *ts: any(x.rg for x in ts)
        fresh = lambda shape, dtype, rg, **kw: self.new(shape, dtype, rg, "fresh", **kw)
        if op == "binary":
            if bad:
                o = self.pick(lambda o: broadcast(t.shape, o.shape) is None)
                if o is not None:
                    return self.bind(fresh(t.shape, t.dtype, False), f"{t.name} + {o.name}")
            o = self.partner(t) if self.chance(0.6) else None
            if t.dtype == "bool" and (o is None or o.dtype == "bool"):
                o = None
            if o is None:
                s = self.scalar_for(t.dtype if t.dtype != "bool" else "int64")
                sym_op = self.r.choice(["+", "-", "*", "/", "**"] if t.dtype != "bool" else ["+", "*"])
                if sym_op == "**":
                    s = "2"
                if sym_op == "/":
                    dt = t.dtype if t.isfloat() else "float32"
                elif "." in s and not t.isfloat():
                    dt = "float32"
                else:
                    dt = t.dtype if t.dtype != "bool" else "int64"
                form = self.r.randrange(3)
                if form == 0:
                    expr = f"{t.name} {sym_op} {s}"
                elif form == 1:
                    expr = f"{s} {sym_op} {t.name}"
                else:
                    fn = {"+": "add", "-": "sub", "*": "mul", "/": "div", "**": "pow"}[sym_op]
                    expr = f"{t.name}.{fn}({s})" if self.chance(0.5) else f"torch.{fn}({t.name}, {s})"
                return self.bind(fresh(t.shape, dt, t.rg), expr)
            shape = broadcast(t.shape, o.shape)
            dt = promote(t.dtype, o.dtype)
            sym_op = self.r.choice(["+", "-", "*", "/", "max", "min", "add_alpha"])
            if sym_op == "/" and dt not in FLOATS:
                dt = "float32"
            if dt == "bool" and sym_op in ("-", "/"):
                sym_op = "*"
            if sym_op == "max":
                expr = f"torch.maximum({t.name}, {o.name})"
            elif sym_op == "min":
                expr = f"torch.minimum({t.name}, {o.name})"
            elif sym_op == "add_alpha":
                expr = f"torch.add({t.name}, {o.name}, alpha=2)" if dt != "bool" else f"{t.name} + {o.name}"
            else:
                expr = f"{t.name} {sym_op} {o.name}"
            return self.bind(fresh(shape, dt, rg_of(t, o)), expr)
        if op == "unary":
            fs = ["neg", "abs", "exp", "log", "sqrt", "sin", "cos", "tanh", "sigmoid", "relu", "F.gelu",
                  "F.silu", "F.softplus", "clamp", "square", "reciprocal", "floor", "round", "sign", "rsqrt"]
            f = self.r.choice(fs)
            if t.dtype == "bool" and f in ("neg", "abs", "relu", "sign", "floor", "round", "square", "clamp"):
                f = "exp"
            dt = t.dtype
            if f in ("exp", "log", "sqrt", "sin", "cos", "tanh", "sigmoid", "reciprocal", "rsqrt") and not t.isfloat():
                dt = "float32"
            if f in ("F.gelu", "F.silu", "F.softplus") and not t.isfloat():
                f = "relu"
            if f.startswith("F."):
                expr = f"{f}({t.name})"
            elif f == "clamp":
                expr = f"{t.name}.clamp(min=0)" if self.chance(0.5) else f"torch.clamp({t.name}, -1, 1)"
            elif f == "square" and not t.isfloat():
                expr = f"{t.name}.square()"
            else:
                expr = f"{t.name}.{f}()" if self.chance(0.6) else f"torch.{f}({t.name})"
            return self.bind(fresh(t.shape, dt, t.rg and dt in FLOATS), expr)
        if op in ("reduce", "softmax", "maxdim"):
            if op == "softmax":
                if not t.isfloat() or t.rank == 0:
                    return self.st_func(depth)
                d = self.rand_dim(t)
                if bad:
                    d = self.bad_dim(t)
                fn = self.r.choice(["softmax", "log_softmax", "cumsum"])
                expr = self.r.choice([f"{t.name}.{fn}({d})", f"torch.{fn}({t.name}, dim={d})",
                                      f"F.{fn}({t.name}, dim={d})" if fn != "cumsum" else f"{t.name}.cumsum(dim={d})"])
                return self.bind(fresh(t.shape, t.dtype, t.rg), expr)
            if op == "maxdim":
                if t.rank == 0 or t.dtype == "bool":
                    return self.st_func(depth)
                d = self.rand_dim(t)
                keep = self.chance(0.4)
                fn = self.r.choice(["max", "min", "sort", "topk"])
                shape = list(t.shape)
                if fn in ("max", "min"):
                    if keep:
                        shape[d] = 1
                    else:
                        shape.pop(d)
                    expr = f"{t.name}.{fn}({d}{', keepdim=True' if keep else ''})"
                elif fn == "sort":
                    expr = f"{t.name}.sort({d})" if self.chance(0.5) else f"torch.sort({t.name}, dim={d}, descending=True)"
                else:
                    dd = t.shape[d]
                    k = 1 if not is_static(dd) else self.r.randint(1, max(1, dd))
                    if bad:
                        k = hint(dd) + 1
                    shape[d] = k
                    expr = f"{t.name}.topk({k}, dim={d})"
                vals = fresh(shape, t.dtype, t.rg)
                idx = fresh(shape, "int64", False)
                if self.chance(0.5):
                    self.emit(f"{vals.name}, {idx.name} = {expr}")
                    self.vars += [vals, idx]
                else:
                    self.emit(f"{vals.name} = {expr}[0]" if self.chance(0.8) else f"{vals.name} = {expr}.values")
                    self.vars.append(vals)
                return
            fn = self.r.choice(["sum", "sum", "mean", "amax", "prod", "std", "var", "norm", "logsumexp", "all",
                                "any", "argmax", "max", "mean_all", "sum_all"])
            fl = t.isfloat()
            if fn in ("mean", "std", "var", "norm", "logsumexp", "mean_all") and not fl:
                fn = "sum"
            if fn == "all" or fn == "any":
                return self.bind(fresh([], "bool", False), f"{t.name}.{fn}()")
            if fn in ("mean_all", "sum_all", "max") or t.rank == 0:
                f2 = {"mean_all": "mean", "sum_all": "sum", "max": "max"}.get(fn, "sum")
                dt = "int64" if f2 == "sum" and not fl else t.dtype
                return self.bind(fresh([], dt, t.rg), f"{t.name}.{f2}()" if self.chance(0.6) else f"torch.{f2}({t.name})")
            d = self.rand_dim(t)
            if bad:
                d = self.bad_dim(t)
            keep = self.chance(0.3)
            shape = list(t.shape)
            if not bad:
                if keep:
                    shape[d] = 1
                else:
                    shape.pop(d)
            if fn == "argmax":
                return self.bind(fresh(shape, "int64", False), f"{t.name}.argmax({d}{', keepdim=True' if keep else ''})")
            dt = "int64" if fn in ("sum", "prod") and not fl else t.dtype
            kw = ", keepdim=True" if keep else ""
            if fn == "norm":
                expr = f"{t.name}.norm(dim={d}{kw})"
            elif fn == "sum" and self.chance(0.2) and fl:
                expr = f"{t.name}.sum({d}, dtype=torch.float64{kw})"
                dt = "float64"
            else:
                expr = f"{t.name}.{fn}({d}{kw})" if self.chance(0.6) else f"torch.{fn}({t.name}, dim={d}{kw})"
            return self.bind(fresh(shape, dt, t.rg and dt in FLOATS), expr)
        if op == "matmul":
            if t.rank == 0 or t.dtype == "bool":
                return self.st_func(depth)
            if t.rank == 1:
                o = self.pick(lambda o: o.rank == 1 and o.shape == t.shape and o.dtype == t.dtype)
                if o is not None and not bad:
                    return self.bind(fresh([], t.dtype, rg_of(t, o)), self.r.choice([f"{t.name} @ {o.name}", f"torch.dot({t.name}, {o.name})"]))
                o2 = self.pick(lambda o: o.rank == 2 and o.shape[0] == t.shape[0] and o.dtype == t.dtype)
                if o2 is not None and not bad:
                    return self.bind(fresh([o2.shape[1]], t.dtype, rg_of(t, o2)), f"{t.name} @ {o2.name}")
                if bad:
                    return self.bind(fresh([], t.dtype, t.rg), f"torch.mm({t.name}, {t.name})")
                return self.bind(fresh([], t.dtype, t.rg), f"{t.name} @ {t.name}")
            # rank >= 2: with another tensor whose second-to-last dim matches
            k = t.shape[-1]
            cands = [o for o in self.vars if o.rank == 2 and o.shape[0] == k and o.dtype == t.dtype]
            if cands and self.chance(0.6) and not bad:
                o = self.r.choice(cands)
                shape = t.shape[:-1] + [o.shape[1]]
                expr = self.r.choice([f"{t.name} @ {o.name}", f"torch.matmul({t.name}, {o.name})",
                                      f"{t.name}.mm({o.name})" if t.rank == 2 else f"{t.name} @ {o.name}"])
                return self.bind(fresh(shape, t.dtype, rg_of(t, o)), expr)
            cands = [o for o in self.vars if o.rank == 2 and o.shape[1] == k and o.dtype == t.dtype]
            if cands and self.chance(0.5) and not bad:
                o = self.r.choice(cands)
                shape = t.shape[:-1] + [o.shape[0]]
                return self.bind(fresh(shape, t.dtype, rg_of(t, o)), f"F.linear({t.name}, {o.name})" if t.isfloat() else f"{t.name} @ {o.name}.t()")
            shape = t.shape[:-1] + [t.shape[-2]]
            if bad:
                if t.shape[-1] != t.shape[-2]:
                    return self.bind(fresh(shape, t.dtype, t.rg), f"{t.name} @ {t.name}")
            if t.rank == 3 and self.chance(0.3):
                return self.bind(fresh(shape, t.dtype, t.rg), f"torch.bmm({t.name}, {t.name}.transpose(1, 2))")
            return self.bind(fresh(shape, t.dtype, t.rg), self.r.choice([f"{t.name} @ {t.name}.transpose(-1, -2)",
                                                                         f"{t.name}.matmul({t.name}.mT)",
                                                                         f"{t.name} @ {t.name}.transpose(-2, -1)"]))
        if op == "cat":
            if t.rank == 0:
                o = self.pick(lambda o: o.rank == 0)
                return self.bind(fresh([2], promote(t.dtype, o.dtype), rg_of(t, o)), f"torch.stack([{t.name}, {o.name}])")
            if self.chance(0.5):
                d = self.rand_dim(t)
                o = self.pick(lambda o: o.rank == t.rank and all(o.shape[j] == t.shape[j] for j in range(t.rank) if j != d % t.rank))
                if bad:
                    o = self.pick(lambda o: o.rank == t.rank and o.shape != t.shape) or o
                shape = list(t.shape)
                shape[d] = t.shape[d] if o is t else (mul(t.shape[d], 2) if o.shape[d] == t.shape[d] else None)
                if shape[d] is None:
                    if is_static(t.shape[d]) and is_static(o.shape[d]):
                        shape[d] = t.shape[d] + o.shape[d]
                    else:
                        return
                if o is t:
                    shape[d] = mul(t.shape[d], 2)
                    expr = f"torch.cat([{t.name}, {t.name} * 2], dim={d})" if t.dtype != "bool" else f"torch.cat([{t.name}, {t.name}], {d})"
                    return self.bind(fresh(shape, t.dtype, t.rg), expr)
                expr = f"torch.cat([{t.name}, {o.name}], {d})" if self.chance(0.5) else f"torch.cat(({t.name}, {o.name}), dim={d})"
                return self.bind(fresh(shape, promote(t.dtype, o.dtype), rg_of(t, o)), expr)
            o = self.pick(lambda o: o.shape == t.shape)
            d = self.r.randrange(t.rank + 1)
            shape = list(t.shape)
            shape.insert(d, 2)
            return self.bind(fresh(shape, promote(t.dtype, o.dtype), rg_of(t, o)), f"torch.stack([{t.name}, {o.name}], dim={d})")
        if op == "copy":
            f = self.r.choice(["clone", "clone", "contiguous", "clone_cf", "repeat", "flip", "tril"])
            if f == "clone":
                return self.bind(fresh(t.shape, t.dtype, t.rg), f"{t.name}.clone()" if self.chance(0.7) else f"torch.clone({t.name})")
            if f == "clone_cf":
                return self.bind(fresh(t.shape, t.dtype, t.rg), f"{t.name}.clone(memory_format=torch.contiguous_format)")
            if f == "contiguous":
                v = fresh(t.shape, t.dtype, t.rg)
                if t.contig and self.chance(0.0):
                    pass
                return self.bind(v, f"{t.name}.contiguous()")
            if f == "repeat":
                reps = [self.r.choice([1, 2]) for _ in range(t.rank)]
                shape = [mul(d, k) for d, k in zip(t.shape, reps)]
                return self.bind(fresh(shape, t.dtype, t.rg), f"{t.name}.repeat({', '.join(map(str, reps))})" if reps else f"{t.name}.clone()")
            if f == "flip":
                if t.rank == 0:
                    return self.bind(fresh(t.shape, t.dtype, t.rg), f"{t.name}.clone()")
                return self.bind(fresh(t.shape, t.dtype, t.rg), f"{t.name}.flip({self.rand_dim(t)})")
            if t.rank < 2:
                return self.bind(fresh(t.shape, t.dtype, t.rg), f"{t.name}.clone()")
            return self.bind(fresh(t.shape, t.dtype, t.rg), f"{t.name}.{self.r.choice(['tril', 'triu'])}()")
        if op == "to":
            dt = self.r.choice(["float32", "float16", "int64", "float64"])
            form = self.r.randrange(3)
            if form == 0:
                expr = f"{t.name}.to(torch.{dt})"
            elif form == 1:
                meth = {"float32": "float", "float16": "half", "int64": "long", "float64": "double"}[dt]
                expr = f"{t.name}.{meth}()"
            else:
                expr = f"{t.name}.to(dtype=torch.{dt})"
            same = dt == t.dtype
            v = self.new(t.shape, dt, t.rg and dt in FLOATS, "view" if same else "fresh", t.root if same else None,
                         contig=t.contig)
            return self.bind(v, expr)
        if op == "create":
            f = self.r.choice(["zeros_like", "ones_like", "randn_like", "empty_like", "zeros", "ones", "full", "new_zeros",
                               "arange"])
            if f.endswith("_like"):
                dt = t.dtype if f != "randn_like" or t.isfloat() else "float32"
                extra = ", dtype=torch.float32" if dt != t.dtype else ""
                if self.chance(0.2) and dt in FLOATS:
                    v = fresh(t.shape, dt, True)
                    v.rg = True
                    v.leaf = True
                    return self.bind(v, f"torch.{f}({t.name}{extra}, requires_grad=True)")
                return self.bind(fresh(t.shape, dt, False), f"torch.{f}({t.name}{extra})")
            if f == "arange":
                k = self.r.randint(2, 6)
                return self.bind(fresh([k], "int64", False), f"torch.arange({k})")
            if f == "new_zeros":
                return self.bind(fresh(t.shape, t.dtype, False), f"{t.name}.new_zeros({self.shape_src(t, t.shape, False) or '1'})"
                                 if t.rank else f"{t.name}.new_zeros(())")
            shape = [self.r.choice([2, 3, 4]) for _ in range(self.r.randint(1, 2))]
            rg = self.chance(0.3)
            kw = ", requires_grad=True" if rg else ""
            if f == "full":
                v = fresh(shape, "float32", rg)
                v.rg = rg
                return self.bind(v, f"torch.full(({', '.join(map(str, shape))},), 1.5{kw})")
            v = fresh(shape, "float32", rg)
            v.rg = rg
            return self.bind(v, f"torch.{f}({', '.join(map(str, shape))}{kw})")
        if op == "where":
            o = self.partner(t)
            if o is None:
                return self.st_func(depth)
            shape = broadcast(t.shape, o.shape)
            return self.bind(fresh(shape, promote(t.dtype, o.dtype), rg_of(t, o)),
                             f"torch.where({t.name} > 0, {t.name}, {o.name})")
        if op == "compare":
            o = self.partner(t)
            c = self.r.choice([">", "<", "==", ">=", "!="])
            if o is not None and self.chance(0.5):
                return self.bind(fresh(broadcast(t.shape, o.shape), "bool", False), f"{t.name} {c} {o.name}")
            return self.bind(fresh(t.shape, "bool", False), f"{t.name} {c} {self.scalar_for('int64')}")
        if op == "index":
            if t.rank == 0:
                return self.st_func(depth)
            d0 = t.shape[0]
            if not is_static(d0) or d0 < 2:
                return self.st_func(depth)
            idx = [self.r.randrange(d0) for _ in range(self.r.randint(1, 3))]
            if bad:
                idx = [d0]
            shape = [len(idx)] + t.shape[1:]
            if self.chance(0.5):
                return self.bind(fresh(shape, t.dtype, t.rg), f"{t.name}[{idx}]")
            return self.bind(fresh(shape, t.dtype, t.rg), f"{t.name}.index_select(0, torch.tensor({idx}))")

    # --- in-place data
    def inplace_operand(self, t):
        """A tensor or scalar operand whose broadcast result keeps t's shape and dtype castable."""
        def castable(o):
            if t.dtype in FLOATS:
                return True
            if t.dtype == "bool":
                return o.dtype == "bool"
            return o.dtype not in FLOATS
        o = self.pick(lambda o: broadcast(t.shape, o.shape) == t.shape and castable(o))
        if o is not None and self.chance(0.55):
            return o.name, o
        return self.scalar_for(t.dtype), None

    def st_inplace(self, depth):
        t = self.pick_target()
        if t is None:
            return
        bad = self.chance(self.error_rate)
        fl = t.isfloat()
        ops = ["add_", "mul_", "sub_", "zero_", "fill_", "copy_", "clamp_", "relu_", "neg_"]
        if fl:
            ops += ["div_", "exp_", "sigmoid_", "tanh_", "sqrt_", "abs_", "F.relu_inplace", "lerp_", "addcmul_"]
        if t.dtype == "bool":
            ops = ["zero_", "fill_", "copy_"]
        op = self.r.choice(ops)
        src = None
        if op in ("add_", "mul_", "sub_", "div_"):
            s, src = self.inplace_operand(t)
            if bad:
                big = self.pick(lambda o: broadcast(t.shape, o.shape) not in (None, t.shape))
                if big is not None:
                    s, src = big.name, big
                elif not fl:
                    s = "1.5"
            if op == "add_" and src is not None and self.chance(0.3):
                self.emit(f"{t.name}.add_({s}, alpha=0.5)" if fl else f"{t.name}.add_({s}, alpha=2)")
            else:
                self.emit(f"{t.name}.{op}({s})")
        elif op == "zero_":
            self.emit(f"{t.name}.zero_()")
        elif op == "fill_":
            self.emit(f"{t.name}.fill_({self.scalar_for(t.dtype)})")
        elif op == "copy_":
            src = self.pick(lambda o: broadcast(t.shape, o.shape) == t.shape and o is not t)
            if bad:
                src = self.pick(lambda o: broadcast(t.shape, o.shape) != t.shape) or src
            if src is None:
                self.emit(f"{t.name}.fill_({self.scalar_for(t.dtype)})")
            else:
                self.emit(f"{t.name}.copy_({src.name})")
        elif op == "clamp_":
            self.emit(f"{t.name}.clamp_(min=0)" if self.chance(0.5) else f"{t.name}.clamp_(-1, 1)")
        elif op == "F.relu_inplace":
            self.emit(f"F.relu({t.name}, inplace=True)")
        elif op == "lerp_":
            o = self.pick(lambda o: broadcast(t.shape, o.shape) == t.shape and o.dtype == t.dtype)
            if o is None:
                self.emit(f"{t.name}.relu_()")
            else:
                self.emit(f"{t.name}.lerp_({o.name}, 0.5)")
                src = o
        elif op == "addcmul_":
            o = self.pick(lambda o: broadcast(t.shape, o.shape) == t.shape and o.isfloat())
            if o is None:
                self.emit(f"{t.name}.exp_()")
            else:
                self.emit(f"{t.name}.addcmul_({o.name}, {o.name}, value=0.5)")
                src = o
        else:
            self.emit(f"{t.name}.{op}()")
        self.after_mutation(t, src)

    def after_mutation(self, t, src):
        if src is not None and src.rg and self.grad and not self.inference and t.isfloat():
            for v in self.vars:
                if v.root == t.root and v.isfloat():
                    v.rg = True

    def st_setitem(self, depth):
        t = self.pick_target(lambda t: t.rank >= 1)
        if t is None:
            return self.st_inplace(depth)
        bad = self.chance(self.error_rate)
        i = self.r.randrange(t.rank)
        d = t.shape[i]
        form = self.r.randrange(4)
        if form == 0:
            j = self.r.randrange(hint(d)) if is_static(d) else 0
            if bad:
                j = hint(d)
            idx = ", ".join([":"] * i + [str(j)])
            shape = t.shape[:i] + t.shape[i + 1:]
        elif form == 1:
            idx = "..."
            shape = list(t.shape)
        elif form == 2:
            idx = ", ".join([":"] * i + ["1:"]) if is_static(d) and d >= 2 else ":"
            shape = list(t.shape)
            if is_static(d) and d >= 2:
                shape[i] = d - 1
        else:
            idx = ", ".join([":"] * i + [":2"]) if is_static(d) else "0"
            shape = list(t.shape)
            if is_static(d):
                shape[i] = min(2, d)
            else:
                shape = t.shape[1:]
        o = self.pick(lambda o: broadcast(shape, o.shape) == shape and (t.isfloat() or not o.isfloat()))
        if bad:
            o = self.pick(lambda o: broadcast(shape, o.shape) != shape) or o
        if o is not None and self.chance(0.5):
            self.emit(f"{t.name}[{idx}] = {o.name}")
        else:
            self.emit(f"{t.name}[{idx}] = {self.scalar_for(t.dtype)}")
            o = None
        self.after_mutation(t, o)

    def st_augassign(self, depth):
        t = self.pick_target(lambda t: t.dtype != "bool")
        if t is None:
            return self.st_inplace(depth)
        bad = self.chance(self.error_rate)
        op = self.r.choice(["+=", "-=", "*=", "/=" if t.isfloat() else "*="])
        s, src = self.inplace_operand(t)
        if bad and not t.isfloat():
            s = "0.5"
        if t.rank >= 1 and self.chance(0.3):
            d0 = t.shape[0]
            j = 0 if not is_static(d0) else self.r.randrange(d0)
            if src is not None and broadcast(t.shape[1:], src.shape) != t.shape[1:]:
                s, src = self.scalar_for(t.dtype), None
            self.emit(f"{t.name}[{j}] {op} {s}")
        else:
            self.emit(f"{t.name} {op} {s}")
        self.after_mutation(t, src)

    def st_meta(self, depth):
        t = self.pick_target()
        if t is None:
            return
        r = t.rank
        ops = ["unsqueeze_", "t_", "transpose_", "squeeze_", "swapdims_", "as_strided_"]
        op = self.r.choice(ops)
        if op == "t_":
            if r > 2:
                op = "transpose_"
            else:
                self.emit(f"{t.name}.t_()")
                t.shape = list(reversed(t.shape))
                t.contig = r < 2 and t.contig
                return
        if op in ("transpose_", "swapdims_"):
            if r < 2:
                op = "unsqueeze_"
            else:
                a, b = self.r.randrange(r), self.r.randrange(r)
                self.emit(f"{t.name}.{op}({a}, {b})")
                t.shape[a], t.shape[b] = t.shape[b], t.shape[a]
                t.contig = t.contig and a == b
                return
        if op == "squeeze_":
            ones = [i for i, d in enumerate(t.shape) if d == 1]
            if not ones:
                op = "unsqueeze_"
            else:
                i = self.r.choice(ones)
                if self.chance(0.6):
                    self.emit(f"{t.name}.squeeze_({i})")
                    t.shape = t.shape[:i] + t.shape[i + 1:]
                else:
                    self.emit(f"{t.name}.squeeze_()")
                    t.shape = [d for d in t.shape if d != 1]
                return
        if op == "as_strided_":
            if not all(is_static(d) for d in t.shape) or t.kind == "view" or numel(t.shape) < 2 or not t.contig:
                op = "unsqueeze_"
            else:
                nel = numel(t.shape)
                self.emit(f"{t.name}.as_strided_(({nel},), (1,))")
                t.shape = [nel]
                return
        d = self.r.randrange(-r - 1, r + 1)
        self.emit(f"{t.name}.unsqueeze_({d})")
        t.shape.insert(d if d >= 0 else r + 1 + d, 1)

    def st_set(self, depth):
        t = self.pick()
        if t is None:
            return
        src = self.pick(lambda o: o.dtype == t.dtype and o.root != t.root)
        if src is None:
            return self.st_inplace(depth)
        self.emit(f"{t.name}.set_({src.name})")
        t.shape = list(src.shape)
        t.root = src.root
        t.contig = src.contig

    def st_rg(self, depth):
        t = self.pick(lambda t: t.isfloat() and not t.rg)
        if t is None or self.chance(self.error_rate):
            t = self.pick(lambda t: not t.isfloat()) or t
            if t is None:
                return
        if self.chance(0.15):
            self.emit(f"{t.name} = {t.name}.requires_grad_()")
        else:
            self.emit(f"{t.name}.requires_grad_()" if self.chance(0.7) else f"{t.name}.requires_grad_(True)")
        if self.grad:
            t.rg = True

    def st_detach(self, depth):
        t = self.pick()
        if t is None:
            return
        if self.chance(0.25):
            self.emit(f"{t.name}.detach_()")
            t.rg = False
            return
        v = self.new(t.shape, t.dtype, False, "view", t.root, contig=t.contig, expanded=t.expanded)
        self.bind(v, f"{t.name}.detach()")
        if self.chance(0.5):
            self.st_inplace_on(v)

    def st_inplace_on(self, v):
        saved = self.vars
        self.vars = [v] + [o for o in saved if o is not v]
        pick = self.pick
        self.pick = lambda pred=lambda t: True: v if pred(v) else pick(pred)
        try:
            self.st_inplace(1)
        finally:
            self.pick = pick
            self.vars = saved

    def st_block(self, depth):
        ctx = self.r.choices(["torch.no_grad()", "torch.inference_mode()", "torch.enable_grad()",
                              "torch.set_grad_enabled(False)", "no_grad_enable"], [12, 3, 2, 2, 2])[0]
        saved = (self.grad, self.inference)
        if ctx == "no_grad_enable":
            self.emit("with torch.no_grad():")
            self.indent += 1
            self.grad = False
            self.statement(depth + 1)
            self.emit("with torch.enable_grad():")
            self.indent += 1
            self.grad = True
            self.statement(depth + 1)
            self.indent -= 2
            self.grad, self.inference = saved
            return
        self.emit(f"with {ctx}:")
        self.indent += 1
        if ctx == "torch.inference_mode()":
            self.inference = True
            self.grad = False
        elif ctx == "torch.enable_grad()":
            self.grad = True
        else:
            self.grad = False
        n0 = len(self.lines)
        for _ in range(self.r.randint(1, 3)):
            k = self.r.choices(["inplace", "view", "func", "setitem", "augassign", "meta"], [8, 3, 3, 2, 2, 1])[0]
            getattr(self, "st_" + k)(depth + 1)
        if len(self.lines) == n0:
            self.emit("pass")
        self.indent -= 1
        self.grad, self.inference = saved

    # ---------------------------------------------------------- return
    def gen_return(self):
        tensors = list(self.vars)
        k = self.r.choice([1, 1, 2, 2, 2, 3, 3, 4])
        items = []
        # favour recent values and inputs
        for _ in range(k):
            if not tensors:
                break
            if self.chance(0.5):
                t = tensors[-1 - min(len(tensors) - 1, int(self.r.expovariate(0.7)))]
            else:
                t = self.r.choice(tensors)
            items.append(t.name)
        if self.chance(0.15) and tensors:
            t = self.r.choice(tensors)
            if t.rank:
                items.append(self.r.choice([f"{t.name}.shape[0]", f"{t.name}.size(-1)", f"{t.name}.dim()",
                                            f"{t.name}.numel()"]))
            else:
                items.append("1")
        if self.chance(0.03):
            items.append("None")
        if not items:
            self.emit("return")
            return
        if len(items) >= 3 and self.chance(0.2):
            j = self.r.randrange(1, len(items))
            items = items[:j] + [f"[{', '.join(items[j:])}]"]
        self.emit_return(items)

    def emit_return(self, items):
        """`return` of the output expressions: one (bare or in a 1-tuple), a list, or a tuple."""
        if len(items) == 1:
            self.emit(f"return {items[0]}" if self.chance(0.9) else f"return ({items[0]},)")
        elif self.chance(0.15):
            self.emit(f"return [{', '.join(items)}]")
        else:
            self.emit(f"return {', '.join(items)}")

    def program(self):
        self.gen_inputs()
        body = self.r.randint(2, 8)
        for _ in range(body):
            self.statement()
        self.gen_return()
        return f"def {self.name}({', '.join(self.params)}):\n" + "\n".join(self.lines) + "\n"


# The draws a generator may fail on (a corner it does not handle, e.g. a
# size-0 dim): the function is drawn again.
RETRY_ON = (ValueError, IndexError, ZeroDivisionError, TypeError, AttributeError)


def generate(seed, files, per_file, out, make=None, header="import torch\n", attempts=20,
             prefix="", retry_on=RETRY_ON):
    """Writes OUT/gen_NNN.tp files of PER_FILE functions each, made by `make(rng, name)`
    (this file's Gen by default) from an rng seeded by the seed, file and function."""
    make = make or Gen
    os.makedirs(out, exist_ok=True)
    paths = []
    for f in range(files):
        chunks = [header]
        for k in range(per_file):
            for attempt in range(attempts):
                rng = random.Random(f"{prefix}{seed}-{f}-{k}" + (f"-{attempt}" if attempt else ""))
                g = make(rng, f"f_{f:03d}_{k:02d}")
                try:
                    chunks.append(g.program())
                    break
                except retry_on:
                    continue
        path = os.path.join(out, f"gen_{f:03d}.tp")
        with open(path, "w") as fh:
            fh.write("\n".join(chunks))
        paths.append(path)
    return paths


def main(generate=generate, description=__doc__.splitlines()[0]):
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("--seed", default="0")
    ap.add_argument("--files", type=int, default=20)
    ap.add_argument("--per-file", type=int, default=20)
    ap.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "gen"))
    args = ap.parse_args()
    for p in generate(args.seed, args.files, args.per_file, args.out):
        print(p)


if __name__ == "__main__":
    main()
