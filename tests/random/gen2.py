#!/usr/bin/env python3
"""Second random `.tp` generator: the whole of LANGUAGE.md, not just gen.py's subset.

    gen2.py --seed S --files N --per-file K --out DIR

Same CLI and file layout as gen.py (DIR/gen_NNN.tp, K entries f_NNN_KK per file). It reuses
gen.py's Gen (imported, gen.py itself is unchanged) and adds:

- inputs: int32/int8/uint8 and complex64 inputs, channels_last / channels_last_3d / stride=
  layouts, inputs shaped for matmul/conv/embedding, int/float/bool parameters;
- ops: einsum, F.conv2d, F.layer_norm, F.embedding, F.pad, baddbmm, addmm, outer, mv, gather,
  scatter, scatter_add, take, repeat_interleave, tile, roll, masked_fill, unfold, custom_view,
  view_as_real/view_as_complex, real/imag, linspace/eye/arange/full/new_full/new_*/tensor(literal)
  /_like(memory_format=), index_put_/index_fill_/index_add_/index_copy_/scatter_/scatter_add_,
  normal_/exponential_/random_/uniform_/bernoulli_, clamp_ with tensor bounds, masked_fill_,
  addcdiv_, addmm_, F.dropout, resize_/resize_as_, torch.ops.inductor.resize_storage_bytes_,
  torch.ops.aten._print, torch.ops.aten.NAME.OVERLOAD spellings, keyword arguments;
- structure: helper functions (a non-entry `def h_NNN_KK_J(...)` placed right before its entry;
  its parameters have the caller's variable names, so the tracked values are shared), `for`
  loops over range/tensors/zip/enumerate, if/elif/else on static conditions (the branch not
  taken is generated on a copy of the state), list comprehensions, star-unpacking, int
  unpacking of shapes, asserts, torch.autocast / set_grad_enabled / inference_mode(False)
  blocks, `torch.set_grad_enabled(False)` as a statement, returns mixing numbers, None,
  nested lists and tuples;
- longer bodies (8-24 top-level statements) and a lower rate of deliberately wrong
  statements (about 1 in 80), so most programs stay valid.

Plain Python 3, no third-party packages.
"""
import copy
import os
import random
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen as G  # noqa: E402
from gen import FLOATS, T, Sym, sym, mul, is_static, hint, numel, broadcast  # noqa: E402

INTS = ("uint8", "int8", "int16", "int32", "int64")


def promote2(a, b):
    """torch.result_type of two tensors of the same dim-category (ints, floats, bool)."""
    if a == b:
        return a
    if a == "bool":
        return b
    if b == "bool":
        return a
    if "complex64" in (a, b):
        return "complex64"
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
    if {a, b} == {"uint8", "int8"}:
        return "int16"
    order = ["uint8", "int8", "int16", "int32", "int64"]
    return max(a, b, key=order.index)


# gen.Gen's inherited methods look promote up in gen's module namespace: patch it there (in
# this process only; gen.py run on its own is untouched).
G.promote = promote2

ITEMSIZE = {"float32": 4, "float16": 2, "bfloat16": 2, "float64": 8, "int64": 8, "int32": 4, "int16": 2,
            "int8": 1, "uint8": 1, "bool": 1, "complex64": 8}

ATEN_ONLY_FLOAT = ("normal_", "exponential_", "uniform_", "bernoulli_")


def contiguous_strides(shape):
    st, acc = [], 1
    for d in reversed(shape):
        st.append(acc)
        acc *= max(d, 1)
    return list(reversed(st))


def is_contig_layout(shape, strides):
    exp = 1
    for d, s in zip(reversed(shape), reversed(strides)):
        if d == 1:
            continue
        if s != exp:
            return False
        exp *= d
    return True


class Gen2(G.Gen):
    def __init__(self, rng, name):
        super().__init__(rng, name)
        self.error_rate = 0.012
        self.helpers = []
        self.in_helper = False
        self.in_loop = False
        self.in_untaken = False
        self.autocast = False
        self.int_params = {}
        self.nhelper = 0
        self.top_grad_statement = False
        self.registry = {}

    # ---------------------------------------------------------- helpers
    def pick(self, pred=lambda t: True, allow_complex=False):
        c = [t for t in self.vars if pred(t) and (allow_complex or t.dtype != "complex64")]
        return self.r.choice(c) if c else None

    def scalar_for(self, dtype):
        if dtype == "uint8":
            return self.r.choice(["2", "1", "3"])
        if dtype == "complex64":
            return "2"
        return super().scalar_for(dtype)

    def new(self, shape, dtype, rg, kind, root=None, **kw):
        if "contig" not in kw and kind == "fresh":
            # pointwise results follow their inputs' layout: only trust contiguity while every
            # live multi-dim value is contiguous
            kw["contig"] = not any(v.rank >= 2 and not v.contig for v in self.vars)
        t = super().new(shape, dtype, rg, kind, root, **kw)
        t.nograd_view = kind in ("view", "piece") and (not self.grad or self.inference)
        self.registry[t.name] = t
        return t

    def risky_target(self, t):
        """An in-place op on t would fail in eager or under functionalization (not what we want, mostly)."""
        if t.expanded:
            return True
        if t.inference and not self.inference:
            return True
        same = [v for v in self.vars if v.root == t.root]
        root_rg = t.rg or any(v.rg for v in same)
        if any(getattr(v, "overlap", False) for v in same):
            return True
        if any(v.kind == "piece" for v in same) and root_rg:
            return True
        if any(getattr(v, "custom", False) for v in same):
            return True
        if not self.grad or self.inference:
            return False
        if self.grad_leaf_root(t):
            return True
        if any(getattr(v, "nograd_view", False) for v in same) and root_rg:
            return True
        return False

    def st_detach(self, depth):
        t = self.pick()
        if t is None:
            return
        if self.chance(0.25) and t.kind in ("fresh", "input"):
            self.emit(f"{t.name}.detach_()")
            t.rg = False
            t.leaf = True
            return
        v = self.new(t.shape, t.dtype, False, "view", t.root, contig=t.contig, expanded=t.expanded)
        self.bind(v, f"{t.name}.detach()")
        if self.chance(0.5):
            self.st_inplace_on(v)

    def grad_leaf_root(self, t):
        """t is (a view of) a leaf that requires grad (an input or a tensor made with requires_grad=True)."""
        root = self.registry.get(t.root)
        return root is not None and root.kind in ("input", "fresh") and root.rg and root.leaf

    def st_set(self, depth):
        if self.inference:
            return self.st_inplace(depth)
        t = self.pick_target(lambda t: t.kind != "input" or self.chance(0.3))
        if t is None:
            return
        src = self.pick(lambda o: o.dtype == t.dtype and o.root != t.root and not o.inference)
        if src is None:
            return self.st_inplace(depth)
        self.emit(f"{t.name}.set_({src.name})")
        t.shape = list(src.shape)
        t.root = src.root
        t.contig = src.contig
        t.expanded = src.expanded

    def st_rg(self, depth):
        bad = self.chance(self.error_rate)
        t = self.pick(lambda t: (t.isfloat() or bad) and not t.rg and t.kind != "view" and t.kind != "piece"
                      and not t.inference)
        if t is None:
            return
        if self.chance(0.15):
            self.emit(f"{t.name} = {t.name}.requires_grad_()")
        else:
            self.emit(f"{t.name}.requires_grad_()" if self.chance(0.7) else f"{t.name}.requires_grad_(True)")
        if self.grad or True:
            t.rg = True
            t.leaf = True

    def pick_target(self, pred=lambda t: True):
        if self.chance(0.97):
            t = self.pick(lambda t: pred(t) and not self.risky_target(t))
            if t is not None:
                return t
            if self.chance(0.7):
                return None
        return self.pick(pred)

    def dt_kw(self, dtype, lead=", "):
        return "" if dtype == "float32" else f"{lead}dtype=torch.{dtype}"

    def static(self, t):
        return all(is_static(d) for d in t.shape)

    def tup(self, xs):
        xs = list(xs)
        return f"({xs[0]},)" if len(xs) == 1 else f"({', '.join(map(str, xs))})"

    def operand(self, shape, dtype, rg_p=0.3, exact=True, avoid=None):
        """Source for a tensor of exactly shape/dtype: a live value, or a fresh randn/ones."""
        o = self.pick(lambda o: o.shape == list(shape) and o.dtype == dtype and o.root != avoid)
        if o is not None and self.chance(0.6):
            return o.name, o.rg
        if not all(is_static(d) for d in shape):
            return None, False
        rg = dtype in FLOATS and self.chance(rg_p) and self.grad and not self.inference
        sizes = ", ".join(map(str, shape)) if shape else "()"
        if dtype in FLOATS:
            fn = self.r.choice(["randn", "rand", "ones"])
        else:
            fn = "ones"
        if dtype == "bool":
            return f"torch.ones({sizes}, dtype=torch.bool)", False
        return f"torch.{fn}({sizes}{self.dt_kw(dtype)}{', requires_grad=True' if rg else ''})", rg

    def fresh_t(self, shape, dtype, rg, **kw):
        return self.new(shape, dtype, rg, "fresh", **kw)

    def view_t(self, t, shape, dtype=None, **kw):
        kw.setdefault("contig", False)
        return self.new(shape, dtype or t.dtype, t.rg, "view", t.root, expanded=t.expanded, **kw)

    def idx_src(self, shape, high):
        """An int64 index tensor of static shape with values in [0, high)."""
        high = max(1, high)
        form = self.r.randrange(4)
        sizes = ", ".join(map(str, shape)) if shape else ""
        if form == 0 or not shape:
            def lit(sh):
                if not sh:
                    return str(self.r.randrange(high))
                return "[" + ", ".join(lit(sh[1:]) for _ in range(sh[0])) + "]"
            return f"torch.tensor({lit(list(shape))})"
        if form == 1:
            return f"torch.randint(0, {high}, {self.tup(shape)})"
        if form == 2:
            return f"torch.zeros({sizes}, dtype=torch.long)"
        return f"torch.randint({high}, {self.tup(shape)})"

    # ---------------------------------------------------------- inputs
    def gen_inputs(self):
        n = self.r.choice([1, 2, 2, 2, 3, 3, 4])
        self.symbolic = self.chance(0.12)
        names = self.r.choice([["x", "y", "z", "w", "u"], ["a", "b", "c", "d", "e"],
                               ["inp", "other", "bias", "weight", "extra"], ["q", "k", "v", "mask", "s"]])
        used = []
        base_shape = None
        specs = []
        for i in range(n):
            if base_shape is not None and self.chance(0.45):
                shape = list(base_shape)
                if shape and self.chance(0.5):
                    shape = shape[self.r.randrange(len(shape)):]
                elif shape and self.chance(0.3):
                    shape[self.r.randrange(len(shape))] = 1
            elif base_shape is not None and len(base_shape) >= 1 and self.chance(0.25):
                # a matrix for matmul / linear
                shape = [base_shape[-1], self.r.choice([2, 3, 4])]
                if self.chance(0.3):
                    shape.reverse()
            elif self.chance(0.08):
                shape = [self.r.choice([1, 2]), self.r.choice([1, 3]), self.r.choice([4, 5, 6]),
                         self.r.choice([4, 5])]
            else:
                rank = self.r.choice([0, 1, 1, 2, 2, 2, 3, 3, 4, 5])
                if rank == 5 and not self.chance(0.3):
                    rank = 3
                shape = [self.r.choice([1, 2, 2, 3, 3, 4, 4, 5, 6]) for _ in range(rank)]
            if self.symbolic:
                if not shape:
                    shape = [1]
                if not any(isinstance(d, Sym) for d in shape):
                    j = self.r.randrange(len(shape))
                    shape[j] = sym("n" if self.chance(0.7) else "m")
            if base_shape is None:
                base_shape = shape
            specs.append((shape, self.r.choices(
                ["float32", "float16", "float64", "bfloat16", "int64", "int32", "int8", "uint8"],
                [55, 8, 6, 4, 12, 5, 3, 3])[0]))
        if self.chance(0.1):
            specs.append(([self.r.choice([2, 3]), self.r.choice([2, 4])], "complex64"))
        if self.chance(0.08):
            specs.append(([self.r.choice([2, 3, 4])], "int64"))
        for i, (shape, dtype) in enumerate(specs):
            rg = (dtype in FLOATS or dtype == "complex64" and self.chance(0.3)) and self.chance(0.5)
            leaf = not (rg and self.chance(0.25))
            kw = []
            if dtype != "float32" or self.chance(0.1):
                kw.append(f"dtype=torch.{self.r.choice(ALIASES.get(dtype, [dtype]))}")
            if rg:
                kw.append("requires_grad=True")
            if not leaf:
                kw.append("leaf=False")
            contig = True
            static = all(is_static(d) for d in shape)
            if len(shape) == 4 and static and self.chance(0.25):
                kw.append("memory_format=torch.channels_last")
                hs = [shape[0], shape[2], shape[3], shape[1]]
                st = contiguous_strides(hs)
                strides = [st[0], st[3], st[1], st[2]]
                contig = is_contig_layout(shape, strides)
            elif len(shape) == 5 and static and self.chance(0.4):
                kw.append("memory_format=torch.channels_last_3d")
                hs = [shape[0], shape[2], shape[3], shape[4], shape[1]]
                st = contiguous_strides(hs)
                strides = [st[0], st[4], st[1], st[2], st[3]]
                contig = is_contig_layout(shape, strides)
            elif len(shape) >= 2 and static and self.chance(0.15):
                perm = list(range(len(shape)))
                while perm == sorted(perm):
                    self.r.shuffle(perm)
                strides = [0] * len(shape)
                acc = 1
                for j in reversed(perm):
                    strides[j] = acc
                    acc *= shape[j]
                kw.append(f"stride={tuple(strides)}")
                contig = is_contig_layout(shape, strides)
            if self.chance(0.1) and not kw and static:
                sizes = "(" + ", ".join(str(d) for d in shape) + ("," if len(shape) == 1 else "") + ")"
            else:
                sizes = ", ".join(f'"{d.pows[0][0]}"' if isinstance(d, Sym) else str(d) for d in shape)
            ann = f"Tensor({sizes}{', ' if sizes and kw else ''}{', '.join(kw)})"
            name = names[i] if i < len(names) else f"t{i}"
            if dtype == "complex64":
                name = "cz"
            elif dtype == "int64" and i == len(specs) - 1 and len(shape) == 1 and i >= 1 and shape[0] in (2, 3, 4) \
                    and names[i] != "cz":
                name = "idx"
            self.params.append(f"{name}: {ann}")
            t = T(name, shape, dtype, rg, "input", name, contig=contig, leaf=leaf)
            self.registry[name] = t
            t.exact_contig = contig
            t.maxval = 4 if dtype not in FLOATS and dtype != "complex64" else None
            self.vars.append(t)
        if self.chance(0.15):
            p = self.r.choice(["nk: int = 2", "n_iter: int = 3", "s_val: float = 0.5", "flag: bool = True",
                               "flag: bool = False", "nk=1"])
            self.params.append(p)
            nm, val = p.split("=")[0].split(":")[0].strip(), p.split("=")[1].strip()
            self.int_params[nm] = eval(val)

    # ---------------------------------------------------------- statements
    KINDS = ["view", "func", "inplace", "multi", "setitem", "augassign", "meta", "block", "rg", "set",
             "detach", "nn", "idx", "create", "inplace2", "storage", "misc", "aten", "kw", "loop", "if",
             "helper", "comp", "unpack", "setitem2"]

    def statement(self, depth=0):
        w = {"view": 8, "func": 9, "inplace": 5, "multi": 3, "setitem": 3, "augassign": 3, "meta": 2,
             "block": 4 if depth < 2 else 0, "rg": 1.5, "set": 1, "detach": 1.5, "nn": 7, "idx": 7,
             "create": 4, "inplace2": 6, "storage": 1.2, "misc": 3, "aten": 3, "kw": 3,
             "loop": 3 if depth < 2 and not self.in_loop else 0, "if": 3 if depth < 2 else 0,
             "helper": 2.5 if depth == 0 and not self.in_helper and not self.in_untaken and not self.in_loop else 0,
             "comp": 2, "unpack": 2, "setitem2": 3}
        if self.in_loop:
            for k in ("meta", "set", "storage", "rg", "misc", "helper", "block", "detach"):
                w[k] = 0
        kinds = list(w)
        k = self.r.choices(kinds, [w[x] for x in kinds])[0]
        n0 = len(self.lines)
        getattr(self, "st_" + k)(depth)
        return len(self.lines) > n0

    def body(self, depth, n):
        made = False
        for _ in range(n):
            made |= bool(self.statement(depth))
        if not made:
            self.emit("pass")

    # --- blocks
    def st_block(self, depth):
        ctx = self.r.choices(["torch.no_grad()", "torch.inference_mode()", "torch.enable_grad()",
                              "torch.set_grad_enabled(False)", "torch.set_grad_enabled(True)",
                              "torch.inference_mode(False)", "autocast", "two", "no_grad_as"],
                             [10, 1, 3, 2, 1, 1, 3, 1, 1])[0]
        saved = (self.grad, self.inference, self.autocast)
        if ctx == "autocast":
            return self.st_autocast(depth)
        if ctx == "two":
            self.emit(self.r.choice(["with torch.no_grad(), torch.enable_grad():",
                                     "with torch.enable_grad(), torch.no_grad():"]))
            self.grad = "no_grad()" in self.lines[-1].split(",")[-1]
            self.grad = not self.grad
        elif ctx == "no_grad_as":
            self.emit("with torch.no_grad() as ng:")
            self.grad = False
        else:
            self.emit(f"with {ctx}:")
            if ctx == "torch.inference_mode()":
                self.inference, self.grad = True, False
            elif ctx in ("torch.enable_grad()", "torch.set_grad_enabled(True)"):
                self.grad = True
            elif ctx == "torch.inference_mode(False)":
                self.inference = False
                self.grad = saved[0]
            else:
                self.grad = False
        self.indent += 1
        n0 = len(self.lines)
        for _ in range(self.r.randint(1, 3)):
            k = self.r.choices(["inplace", "view", "func", "setitem", "augassign", "meta", "inplace2", "idx", "nn",
                                "any"], [8, 3, 3, 2, 2, 1, 4, 2, 2, 3])[0]
            if k == "any":
                self.statement(depth + 1)
            else:
                getattr(self, "st_" + k)(depth + 1)
        if len(self.lines) == n0:
            self.emit("pass")
        self.indent -= 1
        self.grad, self.inference, self.autocast = saved

    def st_autocast(self, depth):
        saved = (self.grad, self.inference, self.autocast)
        form = self.r.choice(['torch.autocast("cpu", dtype=torch.bfloat16)', 'torch.autocast("cpu")',
                              'torch.autocast(device_type="cpu", dtype=torch.bfloat16)',
                              'torch.autocast("cpu", enabled=False)'])
        self.emit(f"with {form}:")
        self.autocast = "enabled=False" not in form
        self.indent += 1
        n0 = len(self.lines)
        for _ in range(self.r.randint(1, 3)):
            k = self.r.choice(["mm", "mm", "linear", "func", "inplace"])
            if k == "func":
                self.st_func(depth + 1)
            elif k == "inplace":
                self.st_inplace(depth + 1)
            else:
                self.autocast_mm(k)
        if len(self.lines) == n0:
            self.emit("pass")
        self.indent -= 1
        self.grad, self.inference, self.autocast = saved

    def mm_dtype(self, dt):
        return "bfloat16" if self.autocast and dt in ("float32", "float16", "bfloat16") else dt

    def autocast_mm(self, k):
        t = self.pick(lambda t: t.rank >= 2 and t.isfloat() and is_static(t.shape[-1]))
        if t is None:
            return
        n = self.r.choice([2, 3])
        src, rg = self.operand([t.shape[-1], n] if k == "mm" else [n, t.shape[-1]], t.dtype)
        if src is None:
            return
        shape = t.shape[:-1] + [n]
        expr = f"{t.name} @ {src}" if k == "mm" else f"F.linear({t.name}, {src})"
        self.bind(self.fresh_t(shape, self.mm_dtype(t.dtype), t.rg or rg), expr)

    # --- control flow
    def st_loop(self, depth):
        form = self.r.choice(["range_body", "range_body", "acc", "enum_stack", "split_inplace", "zip", "range_idx"])
        t = self.pick(lambda t: t.rank >= 1 and is_static(t.shape[0]) and 1 <= t.shape[0] <= 5)
        if form == "range_body" or t is None:
            k = self.int_params.get("n_iter") if "n_iter" in self.int_params and self.chance(0.5) else None
            rng = "range(n_iter)" if k is not None else self.r.choice(["range(2)", "range(3)", "range(1, 3)",
                                                                        "range(0, 4, 2)", "range(1)"])
            self.emit(f"for i{depth} in {rng}:")
            self.indent += 1
            saved = self.in_loop
            self.in_loop = True
            self.body(depth + 1, self.r.randint(1, 3))
            self.in_loop = saved
            self.indent -= 1
            return
        d0 = t.shape[0]
        if form == "acc":
            acc = self.fresh_t(t.shape[1:], t.dtype, t.rg)
            init = self.r.choice([f"torch.zeros_like({t.name}[0])", f"{t.name}[0] * 0", f"{t.name}.new_zeros({self.tup(t.shape[1:]) if self.static(t) else '()'})"])
            if "new_zeros" in init and not self.static(t):
                init = f"torch.zeros_like({t.name}[0])"
            self.emit(f"{acc.name} = {init}")
            r = self.fresh("r")
            self.emit(f"for {r} in {t.name}:" if self.chance(0.6) else f"for {r} in {t.name}.unbind(0):")
            op = self.r.choice(["=+", "+=", "max"]) if t.dtype != "bool" else "|"
            if op == "=+":
                self.emit(f"    {acc.name} = {acc.name} + {r}")
            elif op == "+=":
                self.emit(f"    {acc.name} += {r}")
            elif op == "|":
                self.emit(f"    {acc.name} = {acc.name} | {r}")
            else:
                self.emit(f"    {acc.name} = torch.maximum({acc.name}, {r})")
            self.vars.append(acc)
            return
        if form == "enum_stack":
            if t.rank < 2:
                return
            lst = self.fresh("parts")
            r, j = self.fresh("r"), self.fresh("j")
            self.emit(f"{lst} = []")
            self.emit(f"for {j}, {r} in enumerate({t.name}.unbind(1)):")
            dt = t.dtype if t.dtype != "bool" else "int64"
            self.emit(f"    {lst}.append({r} * ({j} + 1))")
            if self.chance(0.5):
                v = self.fresh_t(t.shape, dt, t.rg)
                self.bind(v, f"torch.stack({lst}, 1)")
            else:
                v = self.fresh_t([mul(t.shape[0], t.shape[1])] + t.shape[2:], dt, t.rg)
                self.bind(v, f"torch.cat({lst})" if self.chance(0.5) else f"torch.concat({lst}, dim=0)")
            return
        if form == "split_inplace":
            tt = self.pick_target(lambda o: o.rank >= 1 and is_static(o.shape[0]) and o.dtype != "bool"
                                  and (not o.rg or not self.grad or self.chance(0.1)))
            if tt is None:
                return
            p = self.fresh("p")
            self.emit(f"for {p} in {tt.name}.split(2):" if self.chance(0.5) else f"for {p} in {tt.name}.chunk(2):")
            self.emit(f"    {p}.{self.r.choice(['mul_', 'add_', 'sub_'])}({self.scalar_for(tt.dtype) if tt.dtype in FLOATS else '2'})")
            return
        if form == "zip":
            o = self.pick(lambda o: o is not t and o.rank >= 1 and o.shape[0] == d0)
            if o is None:
                return
            lst = self.fresh("outs")
            a, b = self.fresh("a"), self.fresh("b")
            if t.dtype == "bool" or o.dtype == "bool":
                return
            self.emit(f"{lst} = []")
            self.emit(f"for {a}, {b} in zip({t.name}, {o.name}):")
            self.emit(f"    {lst}.append(({a} * {b}).sum())")
            dt = promote2(t.dtype, o.dtype)
            dt = "int64" if dt not in FLOATS else dt
            self.bind(self.fresh_t([d0], dt, t.rg or o.rg), f"torch.stack({lst})")
            return
        if form == "range_idx":
            tt = self.pick_target(lambda o: o.rank >= 1 and is_static(o.shape[0]) and 1 <= o.shape[0] <= 5
                                  and o.dtype != "bool")
            if tt is None:
                return
            i = self.fresh("i")
            self.emit(f"for {i} in range({tt.name}.shape[0]):" if self.chance(0.5) else f"for {i} in range(len({tt.name})):")
            v = "1" if tt.dtype not in FLOATS else self.r.choice(["0.5", "1.0"])
            self.emit(self.r.choice([f"    {tt.name}[{i}] += {i}", f"    {tt.name}[{i}].mul_({v})",
                                     f"    {tt.name}[{i}] = {tt.name}[{i}] * 2"]))
            self.after_mutation(tt, None)

    def conditions(self):
        """(source, truth) pairs of statically known conditions."""
        out = []
        for t in self.vars:
            if t.dtype == "complex64":
                continue
            out.append((f"{t.name}.dim() == {t.rank}", True))
            out.append((f"{t.name}.dim() == {t.rank + 1}", False))
            out.append((f"{t.name}.ndim > 1", t.rank > 1))
            if t.rank and is_static(t.shape[0]):
                out.append((f"{t.name}.shape[0] > 3", t.shape[0] > 3))
                out.append((f"{t.name}.size(0) == {t.shape[0]}", True))
                out.append((f"len({t.name}) >= 2", t.shape[0] >= 2))
            if self.static(t):
                out.append((f"{t.name}.numel() > 10", numel(t.shape) > 10))
            if t.kind == "input":
                out.append((f"{t.name}.requires_grad", t.rg))
                out.append((f"not {t.name}.requires_grad", not t.rg))
                if not t.rg:
                    out.append((f"{t.name}.is_leaf", True))
                out.append((f"{t.name}.dtype == torch.float32", t.dtype == "float32"))
                out.append((f"{t.name}.dtype in (torch.float16, torch.bfloat16)", t.dtype in ("float16", "bfloat16")))
                out.append((f"isinstance({t.name}, torch.Tensor)", True))
        out.append(("torch.is_grad_enabled()", self.grad))
        for k, v in self.int_params.items():
            if isinstance(v, bool):
                out.append((k, v))
            elif isinstance(v, int):
                out.append((f"{k} > 1", v > 1))
        return out

    def run_untaken(self, depth, n):
        saved = (self.vars, self.grad, self.inference, self.autocast, self.in_untaken, self.int_params)
        self.vars = copy.deepcopy(self.vars)
        self.in_untaken = True
        try:
            self.body(depth + 1, n)
        finally:
            self.vars, self.grad, self.inference, self.autocast, self.in_untaken, self.int_params = saved

    def st_if(self, depth):
        conds = self.conditions()
        if self.chance(0.2):
            t = self.pick(lambda t: t.rank >= 1 and t.dtype != "bool")
            if t is not None:
                # both branches valid whatever the truth: no tracking of contiguity needed
                v = self.view_t(t, [numel(t.shape)])
                self.emit(f"if {t.name}.is_contiguous():")
                self.emit(f"    {v.name} = {t.name}.view(-1)")
                self.emit("else:")
                self.emit(f"    {v.name} = {t.name}.reshape(-1)")
                v.kind = "view" if getattr(t, "exact_contig", False) else "fresh"
                self.vars.append(v)
                return
        c1, v1 = self.r.choice(conds)
        arms = [(c1, v1)]
        if self.chance(0.35):
            arms.append(self.r.choice(conds))
        has_else = self.chance(0.6)
        taken = next((i for i, (_, v) in enumerate(arms) if v), len(arms) if has_else else None)
        for i, (c, v) in enumerate(arms):
            self.emit(f"{'if' if i == 0 else 'elif'} {c}:")
            self.indent += 1
            if i == taken:
                self.body(depth + 1, self.r.randint(1, 3))
            else:
                self.run_untaken(depth, self.r.randint(1, 2))
            self.indent -= 1
        if has_else:
            self.emit("else:")
            self.indent += 1
            if taken == len(arms):
                self.body(depth + 1, self.r.randint(1, 3))
            else:
                self.run_untaken(depth, 1)
            self.indent -= 1

    def st_helper(self, depth):
        args = []
        for _ in range(self.r.choice([1, 1, 2, 2, 3])):
            t = self.pick(lambda t: t not in args)
            if t is not None:
                args.append(t)
        if not args:
            return
        self.nhelper += 1
        hname = f"h{self.name[1:]}_{self.nhelper}"
        extra = self.chance(0.25)
        params = [a.name for a in args] + (["scale=2.0"] if extra else [])
        saved = (self.lines, self.indent, self.vars, self.in_helper, self.int_params)
        self.lines, self.indent, self.in_helper, self.int_params = [], 1, True, {}
        self.vars = list(args)
        before = set(id(v) for v in self.vars)
        try:
            if extra:
                t = self.pick(lambda t: t.dtype in FLOATS)
                if t is not None:
                    self.bind(self.fresh_t(t.shape, t.dtype, t.rg), f"{t.name} * scale")
            self.body(1, self.r.randint(2, 5))
            new = [v for v in self.vars if id(v) not in before]
            rets = []
            if new:
                rets = self.r.sample(new, min(len(new), self.r.choice([1, 1, 2])))
            if rets:
                self.emit(f"return {', '.join(r.name for r in rets)}")
            hlines = self.lines
        finally:
            self.lines, self.indent, self.vars, self.in_helper, self.int_params = saved
        self.helpers.append(f"def {hname}({', '.join(params)}):\n" + "\n".join(hlines) + "\n")
        call = f"{hname}({', '.join(a.name for a in args)}{', scale=0.5' if extra and self.chance(0.5) else ''})"
        if rets:
            self.emit(f"{', '.join(r.name for r in rets)} = {call}")
            self.vars += rets
        else:
            self.emit(call)

    def st_comp(self, depth):
        t = self.pick(lambda t: t.rank >= 1 and is_static(t.shape[0]) and t.dtype != "bool")
        if t is None:
            return
        d0 = t.shape[0]
        form = self.r.choice(["split_cat", "index_stack", "sizes", "filter", "first"])
        lst = self.fresh("vs")
        if form == "split_cat":
            k = self.r.choice([1, 2])
            self.emit(f"{lst} = [p * 2 for p in {t.name}.split({k})]")
            self.bind(self.fresh_t(t.shape, t.dtype, t.rg), f"torch.cat({lst})")
        elif form == "index_stack":
            n = self.r.randint(1, d0)
            self.emit(f"{lst} = [{t.name}[i] for i in range({n})]")
            self.bind(self.fresh_t([n] + t.shape[1:], t.dtype, t.rg), f"torch.stack({lst})")
        elif form == "sizes":
            self.emit(f"{lst} = [s * 2 for s in {t.name}.shape]")
            self.bind(self.fresh_t([mul(s, 2) for s in t.shape], t.dtype, False), f"{t.name}.new_zeros({lst})")
        elif form == "filter":
            n = len([i for i in range(d0) if i % 2 == 0])
            self.emit(f"{lst} = [r for i, r in enumerate({t.name}) if i % 2 == 0]")
            self.bind(self.fresh_t([n] + t.shape[1:], t.dtype, t.rg), f"torch.stack({lst}, dim=0)")
        else:
            self.emit(f"{lst} = [{t.name}[i] for i in range({d0})]")
            self.bind(self.view_t(t, t.shape[1:]), f"{lst}[{self.r.randrange(d0)}]")

    def st_unpack(self, depth):
        form = self.r.choice(["star_split", "star_last", "shape", "pair"])
        if form in ("star_split", "star_last"):
            t = self.pick(lambda t: t.rank >= 1 and is_static(t.shape[0]) and 2 <= t.shape[0] <= 5)
            if t is None:
                return
            d0 = t.shape[0]
            rest = self.fresh("rest")
            if form == "star_split":
                a = self.new([1] + t.shape[1:], t.dtype, t.rg, "piece", t.root, expanded=t.expanded, contig=False)
                self.emit(f"{a.name}, *{rest} = {t.name}.split(1)")
                self.vars.append(a)
                if self.chance(0.5) and t.dtype != "bool":
                    self.bind(self.fresh_t([d0 - 1] + t.shape[1:], t.dtype, t.rg), f"torch.cat({rest})")
                else:
                    p = self.new([1] + t.shape[1:], t.dtype, t.rg, "piece", t.root, expanded=t.expanded, contig=False)
                    self.bind(p, f"{rest}[-1]")
            else:
                a = self.new(t.shape[1:], t.dtype, t.rg, "piece", t.root, expanded=t.expanded, contig=False)
                self.emit(f"*{rest}, {a.name} = {t.name}.unbind(0)")
                self.vars.append(a)
                self.bind(self.fresh_t([len(range(d0 - 1))] + t.shape[1:], t.dtype, t.rg), f"torch.stack({rest})" if d0 > 1 else f"{a.name}.clone()")
            return
        if form == "shape":
            t = self.pick(lambda t: t.rank == 2)
            if t is None:
                return
            n, m = self.fresh("n"), self.fresh("m")
            self.emit(f"{n}, {m} = {t.name}.shape")
            if self.chance(0.5):
                meth = "view" if t.contig else "reshape"
                self.bind(self.view_t(t, [mul(t.shape[0], t.shape[1])], contig=True), f"{t.name}.{meth}({n} * {m})")
            else:
                self.bind(self.fresh_t([t.shape[1], t.shape[0]], t.dtype, t.rg), f"{t.name}.reshape({m}, {n})")
            return
        t = self.pick(lambda t: t.dtype != "bool")
        o = self.pick(lambda o: o is not t and o.dtype != "bool")
        if t is None or o is None:
            return
        a = self.fresh_t(t.shape, t.dtype, t.rg)
        b = self.fresh_t(o.shape, o.dtype if o.isfloat() else o.dtype, o.rg)
        self.emit(f"{a.name}, {b.name} = {t.name} * 2, {o.name} + 1")
        self.vars += [a, b]

    # --- nn / linear algebra
    def st_nn(self, depth):
        op = self.r.choice(["einsum", "einsum", "conv2d", "layer_norm", "embedding", "pad", "pad", "baddbmm", "addmm",
                            "outer", "mv", "linear_bias", "dropout"])
        getattr(self, "nn_" + op)()

    def fl(self, pred=lambda t: True):
        return self.pick(lambda t: t.isfloat() and pred(t))

    def nn_einsum(self):
        t = self.pick(lambda t: t.dtype in FLOATS and 1 <= t.rank <= 3 and self.static(t))
        if t is None:
            return
        bad = self.chance(self.error_rate)
        if t.rank == 1:
            a = t.shape[0]
            if self.chance(0.5):
                o = self.pick(lambda o: o.rank == 1 and o.dtype == t.dtype)
                return self.bind(self.fresh_t([a, o.shape[0]], t.dtype, t.rg or o.rg), f'torch.einsum("i,j->ij", {t.name}, {o.name})')
            return self.bind(self.fresh_t([], t.dtype, t.rg), f'torch.einsum("i,i->", {t.name}, {t.name})')
        if t.rank == 2:
            a, b = t.shape
            form = self.r.choice(["ji", "i", "mm", "hadamard", "diag", "all", "list"])
            if form == "ji":
                return self.bind(self.view_t(t, [b, a]), f'torch.einsum("ij->ji", {t.name})')
            if form == "i":
                return self.bind(self.fresh_t([a], t.dtype, t.rg), f'torch.einsum("ij->i", {t.name})')
            if form == "mm":
                k = self.r.choice([2, 3])
                src, rg = self.operand([b + (1 if bad else 0), k], t.dtype)
                return self.bind(self.fresh_t([a, k], self.mm_dtype(t.dtype), t.rg or rg), f'torch.einsum("ij,jk->ik", {t.name}, {src})')
            if form == "hadamard":
                return self.bind(self.fresh_t([a, b], t.dtype, t.rg), f'torch.einsum("ij,ij->ij", {t.name}, {t.name})')
            if form == "diag" and a == b:
                return self.bind(self.view_t(t, [a]), f'torch.einsum("ii->i", {t.name})')
            if form == "list":
                return self.bind(self.fresh_t([a], t.dtype, t.rg), f'torch.einsum("ij,j->i", [{t.name}, {t.name}[0]])')
            return self.bind(self.fresh_t([], t.dtype, t.rg), f'torch.einsum("ij->", {t.name})')
        B, n, m = t.shape
        if self.chance(0.5):
            k = self.r.choice([2, 3])
            src, rg = self.operand([B, m, k], t.dtype)
            return self.bind(self.fresh_t([B, n, k], self.mm_dtype(t.dtype), t.rg or rg), f'torch.einsum("bij,bjk->bik", {t.name}, {src})')
        return self.bind(self.view_t(t, [B, m, n]), f'torch.einsum("...ij->...ji", {t.name})')

    def nn_conv2d(self):
        t = self.fl(lambda t: t.rank in (3, 4) and self.static(t) and t.dtype in ("float32", "float64", "bfloat16"))
        if t is None:
            t2 = self.fl(lambda t: t.rank == 2 and self.static(t) and t.dtype in ("float32", "float64"))
            if t2 is None:
                return
            t = self.bind(self.view_t(t2, [1, 1] + t2.shape), f"{t2.name}.reshape(1, 1, {t2.shape[0]}, {t2.shape[1]})"
                          if self.chance(0.5) else f"{t2.name}[None, None]")
        C, H, W = t.shape[-3:]
        k = self.r.choice([1, 1, 2, 3])
        if min(H, W) < k:
            k = 1
        stride = self.r.choice([1, 1, 2])
        pad = self.r.choice([0, 0, 1])
        groups = 1
        O = self.r.choice([1, 2, 4])
        if C % 2 == 0 and C > 0 and self.chance(0.2):
            groups = 2
            O = 2 * self.r.choice([1, 2])
        if self.chance(self.error_rate):
            C += 1
        wsrc, wrg = self.operand([O, C // groups, k, k], t.dtype, 0.5)
        args = [t.name, wsrc]
        brg = False
        if self.chance(0.4):
            bsrc, brg = self.operand([O], t.dtype, 0.5)
            args.append(bsrc if self.chance(0.5) else f"bias={bsrc}")
        kw = []
        if stride != 1:
            kw.append(f"stride={stride}" if self.chance(0.5) else f"stride=({stride}, {stride})")
        if pad:
            kw.append(f"padding={pad}")
        if groups != 1:
            kw.append(f"groups={groups}")
        Ho = (H + 2 * pad - k) // stride + 1
        Wo = (W + 2 * pad - k) // stride + 1
        shape = t.shape[:-3] + [O, Ho, Wo]
        self.bind(self.fresh_t(shape, self.mm_dtype(t.dtype), t.rg or wrg or brg), f"F.conv2d({', '.join(args + kw)})")

    def nn_layer_norm(self):
        t = self.fl(lambda t: t.rank >= 1 and is_static(t.shape[-1]))
        if t is None:
            return
        d = t.shape[-1]
        k = 1
        if t.rank >= 2 and is_static(t.shape[-2]) and self.chance(0.3):
            k = 2
        ns = t.shape[-k:]
        ns_src = self.r.choice([self.tup(ns), f"{t.name}.shape[-{k}:]", f"[{', '.join(map(str, ns))}]"])
        args = [t.name, ns_src]
        rg = t.rg
        if self.chance(0.5):
            w, wrg = self.operand(ns, t.dtype, 0.5)
            args.append(w if self.chance(0.5) else f"weight={w}")
            rg = rg or wrg
            if self.chance(0.5):
                b, brg = self.operand(ns, t.dtype, 0.5)
                args.append(f"bias={b}")
                rg = rg or brg
        if self.chance(0.3):
            args.append("eps=1e-6")
        self.bind(self.fresh_t(t.shape, t.dtype, rg), f"F.layer_norm({', '.join(args)})")

    def nn_embedding(self):
        table = self.fl(lambda t: t.rank == 2 and self.static(t) and t.shape[0] >= 2)
        if table is None or self.chance(0.3):
            V, D = self.r.choice([5, 6, 8]), self.r.choice([2, 3, 4])
            table = self.bind(self.fresh_t([V, D], "float32", self.grad and self.chance(0.5)), "")
            self.lines.pop()
            rg = table.rg and not self.inference
            table.rg = rg
            self.emit(f"{table.name} = torch.randn({V}, {D}{', requires_grad=True' if rg else ''})")
            table.leaf = True
        V, D = table.shape
        idx = self.pick(lambda o: o.dtype == "int64" and o.kind == "input" and getattr(o, "maxval", None) is not None
                        and o.maxval < V and o.rank <= 2)
        if idx is not None and self.chance(0.6):
            isrc, ishape = idx.name, idx.shape
        else:
            ishape = self.r.choice([[2], [3], [2, 2], []])
            isrc = self.idx_src(ishape, V)
            if self.chance(self.error_rate):
                isrc = f"torch.tensor([{V}])"
                ishape = [1]
        kw = ", padding_idx=0" if self.chance(0.2) else ""
        self.bind(self.fresh_t(ishape + [D], table.dtype, table.rg), f"F.embedding({isrc}, {table.name}{kw})")

    def nn_pad(self):
        t = self.pick(lambda t: t.rank >= 1 and t.dtype != "complex64")
        if t is None:
            return
        k = self.r.randint(1, min(3, t.rank))
        pads = []
        shape = list(t.shape)
        for i in range(k):
            dim = t.rank - 1 - i
            d = t.shape[dim]
            lo = self.r.choice([0, 1, 2, 0])
            hi = self.r.choice([0, 1, 1])
            if is_static(d) and d >= 3 and self.chance(0.15):
                lo = -1
            if not is_static(d):
                lo = hi = 0
            pads += [lo, hi]
            if is_static(d):
                shape[dim] = d + lo + hi
        val = ""
        if self.chance(0.4):
            val = ", value=" + ("1.5" if t.isfloat() else ("True" if t.dtype == "bool" else "2"))
        if self.chance(0.2):
            val = ', mode="constant"' + val
        src = self.tup(pads) if self.chance(0.7) else "[" + ", ".join(map(str, pads)) + "]"
        self.bind(self.fresh_t(shape, t.dtype, t.rg), f"F.pad({t.name}, {src}{val})")

    def nn_baddbmm(self):
        t = self.fl(lambda t: t.rank == 3 and self.static(t))
        if t is None:
            return self.nn_addmm()
        B, n, m = t.shape
        p = self.r.choice([2, 3])
        b2, rg2 = self.operand([B, m, p], t.dtype)
        mshape = self.r.choice([[B, n, p], [n, p], [p], [1, p]])
        M, rgm = self.operand(mshape, t.dtype)
        kw = self.r.choice(["", ", beta=0.5", ", alpha=2", ", beta=0.5, alpha=2"])
        expr = f"torch.baddbmm({M}, {t.name}, {b2}{kw})" if self.chance(0.7) else f"{M}.baddbmm({t.name}, {b2}{kw})"
        if not expr.startswith("torch") and mshape != [B, n, p]:
            expr = f"torch.baddbmm({M}, {t.name}, {b2}{kw})"
        self.bind(self.fresh_t([B, n, p], self.mm_dtype(t.dtype), t.rg or rg2 or rgm), expr)

    def nn_addmm(self):
        t = self.fl(lambda t: t.rank == 2 and self.static(t))
        if t is None:
            return
        n, m = t.shape
        p = self.r.choice([2, 3, 4])
        if self.chance(self.error_rate):
            m += 1
        w, rgw = self.operand([m, p], t.dtype)
        bshape = self.r.choice([[p], [n, p], [1, p]])
        b, rgb = self.operand(bshape, t.dtype)
        kw = self.r.choice(["", ", beta=2", ", alpha=0.5"])
        self.bind(self.fresh_t([n, p], self.mm_dtype(t.dtype), t.rg or rgw or rgb), f"torch.addmm({b}, {t.name}, {w}{kw})")

    def nn_outer(self):
        t = self.fl(lambda t: t.rank == 1)
        if t is None:
            return
        o = self.pick(lambda o: o.rank == 1 and o.dtype == t.dtype)
        expr = self.r.choice([f"torch.outer({t.name}, {o.name})", f"{t.name}.outer({o.name})", f"torch.ger({t.name}, {o.name})"])
        self.bind(self.fresh_t([t.shape[0], o.shape[0]], t.dtype, t.rg or o.rg), expr)

    def nn_mv(self):
        t = self.fl(lambda t: t.rank == 2 and is_static(t.shape[1]))
        if t is None:
            return
        v, rg = self.operand([t.shape[1]], t.dtype)
        expr = f"torch.mv({t.name}, {v})" if self.chance(0.6) else f"{t.name}.mv({v})"
        self.bind(self.fresh_t([t.shape[0]], self.mm_dtype(t.dtype), t.rg or rg), expr)

    def nn_linear_bias(self):
        t = self.fl(lambda t: t.rank >= 1 and is_static(t.shape[-1]))
        if t is None:
            return
        o = self.r.choice([2, 3])
        w, rgw = self.operand([o, t.shape[-1]], t.dtype, 0.5)
        b, rgb = self.operand([o], t.dtype, 0.5)
        self.bind(self.fresh_t(t.shape[:-1] + [o], self.mm_dtype(t.dtype), t.rg or rgw or rgb),
                  f"F.linear({t.name}, {w}, {b})" if self.chance(0.5) else f"F.linear({t.name}, {w}, bias={b})")

    def nn_dropout(self):
        t = self.fl()
        if t is None:
            return
        self.bind(self.fresh_t(t.shape, t.dtype, t.rg), self.r.choice([
            f"F.dropout({t.name}, 0.5)", f"F.dropout({t.name}, p=0.2, training=True)",
            f"F.dropout({t.name}, p=0.5, training=False)", f"torch.dropout({t.name}, 0.1, True)"]))

    # --- index-like functional ops
    def st_idx(self, depth):
        op = self.r.choice(["gather", "scatter", "scatter_add", "take", "repeat_interleave", "tile", "roll",
                            "masked_fill", "unfold", "adv_index", "index_select"])
        getattr(self, "ix_" + op)()

    def ix_gather(self):
        t = self.pick(lambda t: t.rank >= 1 and self.static(t) and numel(t.shape) > 0)
        if t is None:
            return
        d = self.rand_dim(t)
        dd = d % t.rank
        if self.chance(0.4) and t.dtype != "bool" and t.dtype != "complex64":
            isrc, ishape = f"{t.name}.argsort(dim={d})", list(t.shape)
        else:
            ishape = [self.r.randint(1, max(1, s)) if i != dd else self.r.randint(1, 3) for i, s in enumerate(t.shape)]
            isrc = self.idx_src(ishape, t.shape[dd])
        expr = self.r.choice([f"torch.gather({t.name}, {d}, {isrc})", f"{t.name}.gather({d}, {isrc})",
                              f"{t.name}.gather(dim={d}, index={isrc})"])
        self.bind(self.fresh_t(ishape, t.dtype, t.rg), expr)

    def ix_scatter(self, add=False):
        t = self.pick(lambda t: t.rank >= 1 and self.static(t) and numel(t.shape) > 0 and t.dtype != "bool")
        if t is None:
            return
        d = self.rand_dim(t)
        dd = d % t.rank
        ishape = [self.r.randint(1, max(1, s)) for s in t.shape]
        ishape[dd] = 1 if self.chance(0.5) else ishape[dd]
        isrc = self.idx_src(ishape, t.shape[dd])
        src, rg = self.operand(ishape, t.dtype, 0.3)
        fn = "scatter_add" if add else "scatter"
        if not add and self.chance(0.3):
            val = "1.5" if t.isfloat() else "3"
            self.bind(self.fresh_t(t.shape, t.dtype, t.rg), f"{t.name}.scatter({d}, {isrc}, {val})")
            return
        if not add and self.chance(0.2):
            self.bind(self.fresh_t(t.shape, t.dtype, t.rg or rg),
                      f'torch.scatter({t.name}, {d}, {isrc}, {src}, reduce="add")')
            return
        expr = f"torch.{fn}({t.name}, {d}, {isrc}, {src})" if self.chance(0.5) else f"{t.name}.{fn}({d}, {isrc}, {src})"
        self.bind(self.fresh_t(t.shape, t.dtype, t.rg or rg), expr)

    def ix_scatter_add(self):
        self.ix_scatter(add=True)

    def ix_take(self):
        t = self.pick(lambda t: self.static(t) and numel(t.shape) > 0)
        if t is None:
            return
        ishape = self.r.choice([[2], [3], [2, 2], []])
        n = numel(t.shape)
        if self.chance(self.error_rate):
            isrc = f"torch.tensor([{n}])"
            ishape = [1]
        else:
            isrc = self.idx_src(ishape, n)
        self.bind(self.fresh_t(ishape, t.dtype, t.rg), f"torch.take({t.name}, {isrc})" if self.chance(0.6) else f"{t.name}.take({isrc})")

    def ix_repeat_interleave(self):
        t = self.pick(lambda t: t.dtype != "complex64")
        if t is None:
            return
        k = self.r.choice([2, 3])
        if t.rank == 0 or self.chance(0.3):
            return self.bind(self.fresh_t([mul(numel(t.shape), k)], t.dtype, t.rg), f"torch.repeat_interleave({t.name}, {k})")
        d = self.rand_dim(t)
        shape = list(t.shape)
        dd = d % t.rank
        if is_static(shape[dd]) and 1 <= shape[dd] <= 3 and self.chance(0.25):
            reps = [self.r.randint(0, 2) for _ in range(shape[dd])]
            shape[dd] = sum(reps)
            self.bind(self.fresh_t(shape, t.dtype, t.rg),
                      f"{t.name}.repeat_interleave(torch.tensor({reps}), dim={d}, output_size={sum(reps)})")
            return
        shape[dd] = mul(shape[dd], k)
        self.bind(self.fresh_t(shape, t.dtype, t.rg), f"{t.name}.repeat_interleave({k}, dim={d})")

    def ix_tile(self):
        t = self.pick()
        if t is None:
            return
        n = self.r.randint(1, t.rank + 1)
        reps = [self.r.choice([1, 2, 3]) for _ in range(n)]
        full = [1] * (max(n, t.rank) - t.rank) + list(t.shape)
        r2 = [1] * (max(n, t.rank) - n) + reps
        shape = [mul(a, b) for a, b in zip(full, r2)]
        self.bind(self.fresh_t(shape, t.dtype, t.rg), f"torch.tile({t.name}, {self.tup(reps)})" if self.chance(0.5)
                  else f"{t.name}.tile({self.tup(reps)})")

    def ix_roll(self):
        t = self.pick(lambda t: t.rank >= 1)
        if t is None:
            return
        if t.rank >= 2 and self.chance(0.4):
            expr = f"torch.roll({t.name}, shifts=(1, -1), dims=(0, 1))"
        elif self.chance(0.3):
            expr = f"{t.name}.roll(2)"
        else:
            expr = f"{t.name}.roll({self.r.choice([1, -1, 3])}, {self.rand_dim(t)})"
        self.bind(self.fresh_t(t.shape, t.dtype, t.rg), expr)

    def ix_masked_fill(self):
        t = self.pick(lambda t: t.dtype != "complex64")
        if t is None:
            return
        m = self.pick(lambda o: o.dtype == "bool" and broadcast(t.shape, o.shape) == t.shape)
        if m is None or self.chance(0.4):
            msrc = f"{t.name} > 0" if t.dtype != "bool" else t.name
        else:
            msrc = m.name
        val = self.scalar_for(t.dtype) if t.dtype != "bool" else "False"
        if t.isfloat() and self.chance(0.25):
            val = "torch.tensor(0.5)"
        if t.isfloat() and self.chance(0.1):
            val = 'float("-inf")'
        expr = f"{t.name}.masked_fill({msrc}, {val})" if self.chance(0.6) else f"torch.masked_fill({t.name}, {msrc}, {val})"
        self.bind(self.fresh_t(t.shape, t.dtype, t.rg), expr)

    def ix_unfold(self):
        t = self.pick(lambda t: t.rank >= 1 and any(is_static(d) and d >= 1 for d in t.shape))
        if t is None:
            return
        dims = [i for i, d in enumerate(t.shape) if is_static(d) and d >= 1]
        d = self.r.choice(dims)
        s = t.shape[d]
        size = self.r.randint(1, s)
        step = self.r.choice([1, 1, 2])
        if self.chance(self.error_rate):
            size = s + 1
        shape = list(t.shape)
        shape[d] = (s - size) // step + 1
        shape.append(size)
        v = self.view_t(t, shape)
        v.expanded = v.expanded or (step < size and shape[d] > 1)
        v.overlap = step < size and shape[d] > 1
        self.bind(v, f"{t.name}.unfold({d}, {size}, {step})")

    def ix_adv_index(self):
        t = self.pick(lambda t: t.rank >= 1 and is_static(t.shape[-1]) and is_static(t.shape[0]))
        if t is None:
            return
        form = self.r.choice(["list_last", "tensor0", "two", "none_list"])
        if form == "list_last" and t.rank >= 2:
            idx = [self.r.randrange(t.shape[-1]) for _ in range(self.r.randint(1, 3))]
            self.bind(self.fresh_t(t.shape[:-1] + [len(idx)], t.dtype, t.rg), f"{t.name}[..., {idx}]")
        elif form == "two" and t.rank >= 2 and is_static(t.shape[1]):
            k = self.r.randint(1, 3)
            a = [self.r.randrange(t.shape[0]) for _ in range(k)]
            b = [self.r.randrange(t.shape[1]) for _ in range(k)]
            self.bind(self.fresh_t([k] + t.shape[2:], t.dtype, t.rg), f"{t.name}[{a}, {b}]")
        elif form == "none_list":
            idx = [self.r.randrange(t.shape[0]) for _ in range(2)]
            self.bind(self.fresh_t([1, 2] + t.shape[1:], t.dtype, t.rg), f"{t.name}[None, {idx}]")
        else:
            idx = [self.r.randrange(t.shape[0]) for _ in range(self.r.randint(1, 3))]
            self.bind(self.fresh_t([len(idx)] + t.shape[1:], t.dtype, t.rg), f"{t.name}[torch.tensor({idx})]")

    def ix_index_select(self):
        t = self.pick(lambda t: t.rank >= 1 and self.static(t) and numel(t.shape) > 0)
        if t is None:
            return
        d = self.rand_dim(t)
        k = self.r.randint(1, 3)
        idx = self.pick(lambda o: o.kind == "input" and o.dtype == "int64" and o.rank == 1 and
                        getattr(o, "maxval", 99) < t.shape[d % t.rank])
        if idx is not None:
            isrc, k = idx.name, idx.shape[0]
        else:
            isrc = self.idx_src([k], t.shape[d % t.rank])
        shape = list(t.shape)
        shape[d % t.rank] = k
        self.bind(self.fresh_t(shape, t.dtype, t.rg), f"torch.index_select({t.name}, {d}, {isrc})"
                  if self.chance(0.5) else f"{t.name}.index_select(dim={d}, index={isrc})")

    # --- creation
    def st_create(self, depth):
        form = self.r.choice(["linspace", "eye", "arange", "full", "new_full", "new_x", "tensor", "like_mf",
                              "randint", "zeros_kw", "clone_mf"])
        nograd = not self.grad or self.inference
        if form == "linspace":
            k = self.r.choice([2, 4, 5])
            dt = self.r.choice(["float32", "float32", "float64"])
            self.bind(self.fresh_t([k], dt, False), f"torch.linspace(0, 1, steps={k}{self.dt_kw(dt)})"
                      if self.chance(0.5) else f"torch.linspace(-1.0, 1.0, {k}{self.dt_kw(dt)})")
        elif form == "eye":
            n = self.r.choice([2, 3, 4])
            if self.chance(0.5):
                m = self.r.choice([2, 3])
                self.bind(self.fresh_t([n, m], "float32", False), f"torch.eye({n}, {m})")
            else:
                dt = self.r.choice(["float32", "int64", "float64"])
                self.bind(self.fresh_t([n, n], dt, False), f"torch.eye({n}{self.dt_kw(dt)})")
        elif form == "arange":
            f = self.r.randrange(4)
            if f == 0:
                a, b, s = 1, self.r.randint(3, 9), 2
                self.bind(self.fresh_t([len(range(a, b, s))], "int64", False), f"torch.arange({a}, {b}, {s})")
            elif f == 1:
                self.bind(self.fresh_t([4], "float32", False), "torch.arange(0, 1, 0.25)")
            elif f == 2:
                k = self.r.randint(2, 6)
                self.bind(self.fresh_t([k], "float32", False), f"torch.arange({k}.0)")
            else:
                k = self.r.randint(2, 6)
                self.bind(self.fresh_t([k], "float64", False), f"torch.arange({k}, dtype=torch.float64)")
        elif form == "full":
            shape = [self.r.choice([2, 3]) for _ in range(self.r.randint(1, 2))]
            val, dt = self.r.choice([("7", "int64"), ("1.5", "float32"), ("True", "bool"), ("0.0", "float32")])
            rg = dt == "float32" and self.chance(0.3) and not nograd
            self.bind(self.fresh_t(shape, dt, rg), f"torch.full({self.tup(shape)}, {val}{', requires_grad=True' if rg else ''})")
            self.vars[-1].rg = rg
            self.vars[-1].leaf = True
        elif form in ("new_full", "new_x"):
            t = self.pick(lambda t: t.dtype != "complex64")
            if t is None:
                return
            shape = [self.r.choice([1, 2, 3]) for _ in range(self.r.randint(0, 2))]
            if form == "new_full":
                val = "2.0" if t.isfloat() else ("True" if t.dtype == "bool" else "3")
                self.bind(self.fresh_t(shape, t.dtype, False), f"{t.name}.new_full({self.tup(shape) if shape else '()'}, {val})")
            else:
                fn = self.r.choice(["new_zeros", "new_ones", "new_empty"])
                sizes = ", ".join(map(str, shape)) if shape and self.chance(0.5) else (self.tup(shape) if shape else "()")
                self.bind(self.fresh_t(shape, t.dtype, False), f"{t.name}.{fn}({sizes})")
        elif form == "tensor":
            f = self.r.randrange(5)
            if f == 0:
                self.bind(self.fresh_t([], "float32", False), "torch.tensor(3.5)")
            elif f == 1:
                self.bind(self.fresh_t([3], "int64", False), "torch.tensor([1, 2, 3])")
            elif f == 2:
                rg = not nograd and self.chance(0.5)
                self.bind(self.fresh_t([2, 2], "float32", rg),
                          f"torch.tensor([[1.0, 2.0], [3.0, 4.0]]{', requires_grad=True' if rg else ''})")
                self.vars[-1].rg = rg
                self.vars[-1].leaf = True
            elif f == 3:
                self.bind(self.fresh_t([2], "bool", False), "torch.tensor([True, False])")
            else:
                self.bind(self.fresh_t([], "float64", False), "torch.tensor(2, dtype=torch.float64)")
        elif form == "like_mf":
            t = self.pick(lambda t: t.dtype != "complex64")
            if t is None:
                return
            fn = self.r.choice(["zeros_like", "ones_like", "empty_like", "rand_like", "full_like"])
            if fn == "rand_like" and not t.isfloat():
                fn = "zeros_like"
            mf = "torch.channels_last" if t.rank == 4 else self.r.choice(["torch.contiguous_format", "torch.preserve_format"])
            arg = ", 2" if fn == "full_like" else ""
            self.bind(self.fresh_t(t.shape, t.dtype, False, contig=mf == "torch.contiguous_format"),
                      f"torch.{fn}({t.name}{arg}, memory_format={mf})")
        elif form == "randint":
            shape = [self.r.choice([2, 3]) for _ in range(self.r.randint(1, 2))]
            self.bind(self.fresh_t(shape, "int64", False), f"torch.randint(0, 10, {self.tup(shape)})")
        elif form == "zeros_kw":
            shape = [self.r.choice([2, 3]) for _ in range(self.r.randint(1, 2))]
            dt = self.r.choice(["float64", "float16", "int32"])
            self.bind(self.fresh_t(shape, dt, False), f"torch.{self.r.choice(['zeros', 'ones', 'empty'])}({self.tup(shape)}, dtype=torch.{dt})")
        else:
            t = self.pick(lambda t: t.rank == 4)
            if t is None:
                return
            fn = self.r.choice(["clone", "contiguous"])
            self.bind(self.fresh_t(t.shape, t.dtype, t.rg, contig=False), f"{t.name}.{fn}(memory_format=torch.channels_last)")

    # --- more in-place ops
    def st_inplace2(self, depth):
        t = self.pick_target(lambda t: t.dtype != "complex64")
        if t is None:
            return
        ops = ["index_put_", "index_fill_", "index_add_", "index_copy_", "scatter_", "scatter_add_", "random_",
               "clamp_t", "masked_fill_", "misc_unary", "fill_t", "copy_cast", "div_mode"]
        if t.isfloat():
            ops += ["normal_", "exponential_", "uniform_", "bernoulli_", "addcdiv_", "addmm_", "dropout_", "lerp_t",
                    "normal_", "clamp_t"]
        op = self.r.choice(ops)
        src = None
        static = self.static(t)
        if op in ("index_put_", "index_fill_", "index_add_", "index_copy_", "scatter_", "scatter_add_") and \
                (t.rank == 0 or not static or numel(t.shape) == 0):
            op = "misc_unary"
        if op == "index_put_":
            k = self.r.randint(1, min(2, t.shape[0]))
            idx = self.r.sample(range(t.shape[0]), k)
            vshape = self.r.choice([[], t.shape[1:], [k] + t.shape[1:]])
            v, rg = self.operand(vshape, t.dtype, 0.3, avoid=t.root)
            acc = ", accumulate=True" if self.chance(0.3) and t.dtype != "bool" else ""
            self.emit(f"{t.name}.index_put_((torch.tensor({idx}),), {v}{acc})" if self.chance(0.7)
                      else f"torch.index_put_({t.name}, [torch.tensor({idx})], {v}{acc})")
            src = T("_", vshape, t.dtype, rg, "fresh", "_")
        elif op == "index_fill_":
            d = self.rand_dim(t)
            val = self.scalar_for(t.dtype) if t.dtype != "bool" else "True"
            self.emit(f"{t.name}.index_fill_({d}, {self.idx_src([1], t.shape[d])}, {val})")
        elif op in ("index_add_", "index_copy_"):
            d = self.rand_dim(t)
            dd = d % t.rank
            k = self.r.randint(1, t.shape[dd]) if t.shape[dd] else 1
            idx = self.r.sample(range(t.shape[dd]), k)
            sshape = list(t.shape)
            sshape[dd] = k
            s, rg = self.operand(sshape, t.dtype, 0.4, avoid=t.root)
            if op == "index_add_" and t.dtype == "bool":
                op = "index_copy_"
            alpha = ", alpha=2" if op == "index_add_" and self.chance(0.3) else ""
            self.emit(f"{t.name}.{op}({d}, torch.tensor({idx}), {s}{alpha})")
            src = T("_", sshape, t.dtype, rg, "fresh", "_")
        elif op in ("scatter_", "scatter_add_"):
            d = self.rand_dim(t)
            dd = d % t.rank
            ishape = [self.r.randint(1, max(1, s)) for s in t.shape]
            isrc = self.idx_src(ishape, t.shape[dd])
            if op == "scatter_" and self.chance(0.3):
                self.emit(f"{t.name}.scatter_({d}, {isrc}, {self.scalar_for(t.dtype) if t.dtype != 'bool' else 'True'})")
            else:
                if op == "scatter_add_" and t.dtype == "bool":
                    op = "scatter_"
                s, rg = self.operand(ishape, t.dtype, 0.3, avoid=t.root)
                red = ', reduce="add"' if op == "scatter_" and t.dtype != "bool" and self.chance(0.15) else ""
                self.emit(f"{t.name}.{op}({d}, {isrc}, {s}{red})")
                src = T("_", ishape, t.dtype, rg, "fresh", "_")
        elif op == "random_":
            if t.dtype == "bool":
                self.emit(f"{t.name}.random_()")
            else:
                self.emit(self.r.choice([f"{t.name}.random_(0, 10)", f"{t.name}.random_(5)", f"{t.name}.random_()"]))
        elif op == "normal_":
            self.emit(self.r.choice([f"{t.name}.normal_()", f"{t.name}.normal_(0, 0.1)", f"{t.name}.normal_(mean=1.0, std=2.0)"]))
        elif op == "exponential_":
            self.emit(f"{t.name}.exponential_()" if self.chance(0.5) else f"{t.name}.exponential_(2.0)")
        elif op == "uniform_":
            self.emit(f"{t.name}.uniform_(-1, 1)" if self.chance(0.5) else f"{t.name}.uniform_()")
        elif op == "bernoulli_":
            self.emit(f"{t.name}.bernoulli_(0.5)" if self.chance(0.7) else f"{t.name}.bernoulli_()")
        elif op == "clamp_t":
            if t.dtype == "bool":
                return
            lo = self.pick(lambda o: broadcast(t.shape, o.shape) == t.shape and o.dtype in (FLOATS if t.isfloat() else INTS)
                           and o.root != t.root
                           and o.dtype == promote2(t.dtype, o.dtype) == t.dtype)
            los = lo.name if lo is not None else f"torch.full_like({t.name}, {'-1.0' if t.isfloat() else '0'})"
            form = self.r.randrange(3)
            if form == 0:
                self.emit(f"{t.name}.clamp_(min={los})")
            elif form == 1:
                self.emit(f"{t.name}.clamp_({los}, {los} + 2)")
            else:
                self.emit(f"torch.clamp_({t.name}, max={los})" if self.chance(0.5) else f"{t.name}.clamp_(max={los})")
            src = lo
        elif op == "masked_fill_":
            m = self.pick(lambda o: o.dtype == "bool" and broadcast(t.shape, o.shape) == t.shape)
            msrc = m.name if m is not None and self.chance(0.6) else (f"{t.name} > 0" if t.dtype != "bool" else t.name)
            val = self.scalar_for(t.dtype) if t.dtype != "bool" else "False"
            self.emit(f"{t.name}.masked_fill_({msrc}, {val})")
        elif op == "misc_unary":
            if t.dtype == "bool":
                self.emit(f"{t.name}.logical_not_()" if False else f"{t.name}.fill_(False)")
            elif t.isfloat():
                self.emit(f"{t.name}.{self.r.choice(['pow_(2)', 'sign_()', 'reciprocal_()', 'round_()', 'trunc_()', 'floor_()', 'ceil_()', 'log_()', 'sin_()', 'cos_()', 'rsqrt_()', 'clamp_min_(0)', 'clamp_max_(1)', 'abs_()', 'relu_()', 'square_()'])}")
            else:
                self.emit(f"{t.name}.{self.r.choice(['pow_(2)', 'sign_()', 'abs_()', 'clamp_min_(0)', 'clamp_max_(3)', 'neg_()', 'relu_()'])}")
        elif op == "fill_t":
            dt = "float32" if t.isfloat() else ("bool" if t.dtype == "bool" else "int64")
            lit = {"float32": "2.0", "int64": "3", "bool": "True"}[dt]
            self.emit(f"{t.name}.fill_(torch.tensor({lit}))")
        elif op == "copy_cast":
            o = self.pick(lambda o: o.root != t.root and broadcast(t.shape, o.shape) == t.shape and o.dtype != t.dtype)
            if o is None:
                return
            self.emit(f"{t.name}.copy_({o.name})" if self.chance(0.7) else f"{t.name}.copy_({o.name}, non_blocking=False)")
            src = o if t.isfloat() else None
        elif op == "div_mode":
            if t.dtype == "bool":
                return
            self.emit(f'{t.name}.div_(2, rounding_mode="floor")' if t.dtype != "uint8" else f'{t.name}.div_(2, rounding_mode="trunc")')
        elif op == "addcdiv_":
            o = self.pick(lambda o: broadcast(t.shape, o.shape) == t.shape and o.isfloat() and o.root != t.root)
            if o is None:
                return
            self.emit(f"{t.name}.addcdiv_({o.name}, {o.name}.abs() + 1, value=0.5)")
            src = o
        elif op == "addmm_":
            if t.rank != 2 or not static:
                return
            n, p = t.shape
            m = self.r.choice([2, 3])
            a, rga = self.operand([n, m], t.dtype, avoid=t.root)
            b, rgb = self.operand([m, p], t.dtype, avoid=t.root)
            self.emit(f"{t.name}.addmm_({a}, {b})" if self.chance(0.6) else f"{t.name}.addmm_({a}, {b}, beta=0.5, alpha=2)")
            src = T("_", [n, p], t.dtype, rga or rgb, "fresh", "_")
        elif op == "dropout_":
            self.emit(f"F.dropout({t.name}, p=0.5, training=True, inplace=True)" if self.chance(0.7)
                      else f"F.dropout({t.name}, 0.1, True, True)")
        elif op == "lerp_t":
            o = self.pick(lambda o: broadcast(t.shape, o.shape) == t.shape and o.dtype == t.dtype and o.root != t.root)
            if o is None:
                return
            self.emit(f"{t.name}.lerp_({o.name}, torch.full_like({t.name}, 0.25))")
            src = o
        self.after_mutation(t, src)

    # --- storage / resize
    def st_storage(self, depth):
        if self.symbolic:
            return  # resize_as_ with symbolic sizes segfaults torch 2.7.1's fake tensors
        form = self.r.choice(["resize_", "resize_", "resize_as_", "storage_bytes"])
        if form == "storage_bytes":
            t = self.pick(lambda t: t.kind == "input" and self.static(t) and t.root == t.name)
            if t is None:
                return
            nbytes = numel(t.shape) * ITEMSIZE[t.dtype]
            if self.chance(0.6):
                self.emit(f"torch.ops.inductor.resize_storage_bytes_({t.name}, 0)")
                self.emit(f"torch.ops.inductor.resize_storage_bytes_({t.name}, {nbytes})")
            else:
                self.emit(f"torch.ops.inductor.resize_storage_bytes_({t.name}, {nbytes})")
            return
        t = self.pick(lambda t: t.kind in ("fresh", "input") and not t.rg and t.root == t.name
                      and (t.kind == "fresh" or self.chance(0.3)))
        if t is None:
            return
        if form == "resize_as_":
            o = self.pick(lambda o: o is not t and o.dtype != "complex64")
            if o is None:
                return
            self.emit(f"{t.name}.resize_as_({o.name})")
            t.shape = list(o.shape)
        else:
            n = self.r.choice([1, 2, 4, 6])
            shape = self.r.choice([[n], [2, n], [n, 1]])
            self.emit(f"{t.name}.resize_({', '.join(map(str, shape))})" if self.chance(0.6) else f"{t.name}.resize_({self.tup(shape)})")
            t.shape = shape
        t.contig = True
        # the whole tensor's data is undefined after growing it: keep it out of later reads of views
        for v in list(self.vars):
            if v.root == t.root and v is not t:
                self.vars.remove(v)

    # --- misc
    def st_misc(self, depth):
        form = self.r.choice(["custom_view", "custom_view", "print", "complex", "complex", "real_imag",
                              "set_grad", "assert", "number", "autocast_state"])
        if form == "custom_view":
            t = self.pick(lambda t: t.isfloat())
            if t is None:
                return
            v = self.view_t(t, t.shape, contig=t.contig)
            v.custom = True
            self.bind(v, f"custom_view({t.name})")
        elif form == "print":
            self.emit(self.r.choice(['torch.ops.aten._print("hello")', 'torch.ops.aten._print("step")']))
        elif form == "complex":
            c = self.pick(lambda t: t.dtype == "complex64", allow_complex=True)
            if c is not None and self.chance(0.6):
                r = self.view_t(c, c.shape + [2], "float32")
                r.rg = c.rg
                self.bind(r, f"torch.view_as_real({c.name})")
                if self.chance(0.4):
                    c2 = self.view_t(r, c.shape, "complex64")
                    self.bind(c2, f"torch.view_as_complex({r.name})")
                return
            t = self.pick(lambda t: t.dtype == "float32" and t.rank >= 1 and is_static(t.shape[-1])
                          and t.shape[-1] % 2 == 0 and t.kind in ("fresh", "input") and t.contig
                          and getattr(t, "exact_contig", t.kind == "fresh"))
            if t is None:
                return
            shape = t.shape[:-1] + [t.shape[-1] // 2, 2]
            src = self.shape_src(t, shape, allow_minus1=False)
            if src is None:
                return
            v = self.view_t(t, shape, contig=True)
            self.bind(v, f"{t.name}.view({src})")
            c = self.view_t(v, t.shape[:-1] + [t.shape[-1] // 2], "complex64")
            self.bind(c, f"torch.view_as_complex({v.name})")
        elif form == "real_imag":
            c = self.pick(lambda t: t.dtype == "complex64", allow_complex=True)
            if c is None:
                return
            f = self.r.choice(["real", "imag", "abs", "mul", "inplace"])
            if f in ("real", "imag"):
                self.bind(self.view_t(c, c.shape, "float32"), f"{c.name}.{f}" if self.chance(0.7) else f"torch.{f}({c.name})")
            elif f == "abs":
                self.bind(self.fresh_t(c.shape, "float32", c.rg), f"{c.name}.abs()")
            elif f == "mul":
                self.bind(self.fresh_t(c.shape, "complex64", c.rg), f"{c.name} * 2")
            else:
                self.emit(f"{c.name}.mul_(2)")
        elif form == "set_grad":
            if depth == 0 and not self.in_helper and not self.in_untaken and not self.in_loop and not self.top_grad_statement:
                self.top_grad_statement = True
                self.emit("torch.set_grad_enabled(False)")
                self.grad = False
        elif form == "assert":
            t = self.pick()
            if t is None:
                return
            if self.chance(self.error_rate * 2):
                self.emit(f"assert {t.name}.dim() == {t.rank + 1}, \"wrong rank\"")
            else:
                self.emit(self.r.choice([f"assert {t.name}.dim() == {t.rank}", f"assert {t.name}.ndim == {t.rank}, \"rank\"",
                                         f"assert len({t.name}.shape) == {t.rank}"]))
        elif form == "number":
            t = self.pick(lambda t: t.rank >= 1 and is_static(t.shape[0]) and t.dtype != "bool")
            if t is None:
                return
            n = self.fresh("n")
            self.emit(f"{n} = {t.name}.shape[0] * 2 + 1" if self.chance(0.5) else f"{n} = max({t.name}.size(0), 2)")
            val = t.shape[0] * 2 + 1 if "* 2" in self.lines[-1] else max(t.shape[0], 2)
            self.bind(self.fresh_t([val], "float32", False), f"torch.zeros({n})")
        else:
            if depth != 0 or self.in_helper or self.in_untaken:
                return
            self.emit('torch.set_autocast_enabled("cpu", True)')
            if not self.chance(self.error_rate * 3):
                self.autocast = True
                self.autocast_mm("mm")
                self.autocast = False
                self.emit('torch.set_autocast_enabled("cpu", False)')

    # --- aten spellings
    def st_aten(self, depth):
        t = self.pick(lambda t: t.dtype != "bool")
        if t is None:
            return
        r = t.rank
        form = self.r.choice(["add", "mul", "view", "transpose", "select", "slice", "unsqueeze", "clone", "sum",
                              "t", "expand", "permute", "relu", "add_", "mul_", "mm", "alias", "detach"])
        A = "torch.ops.aten."
        if form == "add":
            o = self.partner(t)
            if o is None or o.dtype == "bool":
                return
            self.bind(self.fresh_t(broadcast(t.shape, o.shape), promote2(t.dtype, o.dtype), t.rg or o.rg),
                      f"{A}add.Tensor({t.name}, {o.name})" if self.chance(0.7) else f"{A}add({t.name}, {o.name})")
        elif form == "mul":
            self.bind(self.fresh_t(t.shape, t.dtype, t.rg), f"{A}mul.Tensor({t.name}, 2)" if self.chance(0.5) else f"{A}mul.Scalar({t.name}, 2)")
        elif form == "view":
            if not t.contig:
                return
            self.bind(self.view_t(t, [numel(t.shape)], contig=True), f"{A}view.default({t.name}, [-1])")
        elif form == "transpose":
            if r < 2:
                return
            shape = list(t.shape)
            shape[0], shape[1] = shape[1], shape[0]
            self.bind(self.view_t(t, shape), f"{A}transpose.int({t.name}, 0, 1)")
        elif form == "select":
            if r < 1 or not is_static(t.shape[0]) or t.shape[0] < 1:
                return
            self.bind(self.view_t(t, t.shape[1:]), f"{A}select.int({t.name}, 0, {t.shape[0] - 1})")
        elif form == "slice":
            if r < 1 or not is_static(t.shape[-1]):
                return
            e = self.r.randint(0, t.shape[-1])
            self.bind(self.view_t(t, t.shape[:-1] + [e]), f"{A}slice.Tensor({t.name}, {r - 1}, 0, {e})")
        elif form == "unsqueeze":
            self.bind(self.view_t(t, [1] + t.shape, contig=t.contig), f"{A}unsqueeze.default({t.name}, 0)")
        elif form == "clone":
            self.bind(self.fresh_t(t.shape, t.dtype, t.rg), f"{A}clone.default({t.name})")
        elif form == "sum":
            if r < 1:
                return
            dt = t.dtype if t.isfloat() or t.dtype == "complex64" else "int64"
            self.bind(self.fresh_t(t.shape[1:], dt, t.rg), f"{A}sum.dim_IntList({t.name}, [0])")
        elif form == "t":
            if r > 2:
                return
            self.bind(self.view_t(t, list(reversed(t.shape))), f"{A}t.default({t.name})")
        elif form == "expand":
            if r > 3:
                return
            self.bind(self.view_t(t, [2] + t.shape, expanded=True),
                      f"{A}expand.default({t.name}, [2{''.join(', -1' for _ in t.shape)}])")
        elif form == "permute":
            if r < 2:
                return
            perm = list(range(r))[::-1]
            self.bind(self.view_t(t, [t.shape[p] for p in perm]), f"{A}permute.default({t.name}, {perm})")
        elif form == "relu":
            self.bind(self.fresh_t(t.shape, t.dtype, t.rg), f"{A}relu.default({t.name})" if self.chance(0.5) else f"{A}relu({t.name})")
        elif form in ("add_", "mul_"):
            tt = self.pick_target(lambda o: o.dtype != "bool")
            if tt is None:
                return
            self.emit(f"{A}{form}.Tensor({tt.name}, 2)" if self.chance(0.5) else f"{A}{form}.Scalar({tt.name}, 2)")
            self.after_mutation(tt, None)
        elif form == "mm":
            if r != 2 or not t.isfloat() or not is_static(t.shape[1]):
                return
            w, rg = self.operand([t.shape[1], 2], t.dtype)
            self.bind(self.fresh_t([t.shape[0], 2], self.mm_dtype(t.dtype), t.rg or rg), f"{A}mm.default({t.name}, {w})")
        elif form == "alias":
            self.bind(self.view_t(t, t.shape, contig=t.contig), f"{A}alias.default({t.name})")
        else:
            v = self.view_t(t, t.shape, contig=t.contig)
            v.rg = False
            self.bind(v, f"{A}detach.default({t.name})")

    # --- keyword-argument spellings
    def st_kw(self, depth):
        t = self.pick(lambda t: t.dtype != "bool")
        if t is None:
            return
        r = t.rank
        form = self.r.choice(["sum", "transpose", "flatten", "unsqueeze", "add", "cat", "narrow", "mean_dims",
                              "permute", "clamp", "softmax", "split"])
        if form == "sum" and r >= 1:
            d = self.rand_dim(t)
            shape = list(t.shape)
            shape[d] = 1
            dt = t.dtype if t.isfloat() else "int64"
            self.bind(self.fresh_t(shape, dt, t.rg), f"torch.sum({t.name}, dim={d}, keepdim=True)")
        elif form == "transpose" and r >= 2:
            shape = list(t.shape)
            shape[0], shape[-1] = shape[-1], shape[0]
            self.bind(self.view_t(t, shape), f"torch.transpose({t.name}, dim0=0, dim1=-1)")
        elif form == "flatten" and r >= 2:
            shape = t.shape[:1] + [numel(t.shape[1:])]
            self.bind(self.new(shape, t.dtype, t.rg, "view" if t.contig else "fresh", t.root if t.contig else None),
                      f"{t.name}.flatten(start_dim=1)")
        elif form == "unsqueeze":
            self.bind(self.view_t(t, t.shape + [1], contig=t.contig), f"{t.name}.unsqueeze(dim=-1)")
        elif form == "add":
            o = self.partner(t, exact=True)
            if o is None or o.dtype == "bool":
                return
            dt = promote2(t.dtype, o.dtype)
            self.bind(self.fresh_t(t.shape, dt, t.rg or o.rg), f"torch.add(input={t.name}, other={o.name}, alpha=2)")
        elif form == "cat" and r >= 1:
            shape = list(t.shape)
            shape[0] = mul(shape[0], 2)
            self.bind(self.fresh_t(shape, t.dtype, t.rg), f"torch.cat(tensors=[{t.name}, {t.name}], dim=0)")
        elif form == "narrow" and r >= 1 and is_static(t.shape[0]) and t.shape[0] >= 1:
            ln = self.r.randint(1, t.shape[0])
            self.bind(self.view_t(t, [ln] + t.shape[1:], contig=t.contig),
                      f"{t.name}.narrow(dim=0, start=0, length={ln})")
        elif form == "mean_dims" and r >= 2 and t.isfloat():
            self.bind(self.fresh_t(t.shape[2:], t.dtype, t.rg), f"torch.mean({t.name}, dim=(0, 1))")
        elif form == "permute" and r >= 2:
            perm = list(range(r))[::-1]
            self.bind(self.view_t(t, [t.shape[p] for p in perm]), f"{t.name}.permute(dims={self.tup(perm)})")
        elif form == "clamp" and t.dtype != "complex64":
            lo, hi = ("-1.0", "1.0") if t.isfloat() else ("0", "3")
            self.bind(self.fresh_t(t.shape, t.dtype, t.rg), f"torch.clamp({t.name}, min={lo}, max={hi})")
        elif form == "softmax" and r >= 1 and t.isfloat():
            self.bind(self.fresh_t(t.shape, t.dtype, t.rg), f"{t.name}.softmax(dim=-1)"
                      if self.chance(0.5) else f"F.softmax({t.name}, dim=-1, dtype=torch.float32)")
            if "dtype=" in self.lines[-1]:
                self.vars[-1].dtype = "float32"
        elif form == "split" and r >= 1 and is_static(t.shape[0]) and t.shape[0] >= 1:
            p = self.new([min(1, t.shape[0])] + t.shape[1:], t.dtype, t.rg, "piece", t.root, expanded=t.expanded,
                         contig=False)
            self.bind(p, f"torch.split({t.name}, split_size_or_sections=1, dim=0)[0]")

    # --- __setitem__ with richer indices
    def st_setitem2(self, depth):
        t = self.pick_target(lambda t: t.rank >= 1 and t.dtype != "complex64")
        if t is None:
            return
        form = self.r.choice(["ellipsis_slice", "none", "list", "tensor_idx", "mask", "step", "neg", "int_aug"])
        r = t.rank
        d0 = t.shape[0]
        if form == "ellipsis_slice" and is_static(t.shape[-1]):
            e = self.r.randint(1, max(1, t.shape[-1]))
            idx, shape = f"..., :{e}", t.shape[:-1] + [min(e, t.shape[-1])]
        elif form == "none":
            idx, shape = "None, ...", [1] + t.shape
        elif form in ("list", "tensor_idx") and is_static(d0) and d0 >= 1:
            ids = sorted(set(self.r.randrange(d0) for _ in range(2)))
            idx = str(ids) if form == "list" else f"torch.tensor({ids})"
            shape = [len(ids)] + t.shape[1:]
        elif form == "mask" and t.dtype != "bool":
            # boolean mask: a data-dependent index; only a scalar value keeps it static
            self.emit(f"{t.name}[{t.name} > 0] = {self.scalar_for(t.dtype)}")
            self.after_mutation(t, None)
            return
        elif form == "step" and is_static(d0):
            idx, shape = "::2", [(d0 + 1) // 2] + t.shape[1:]
        elif form == "neg" and is_static(d0) and d0 >= 1:
            idx, shape = "-1", t.shape[1:]
        elif form == "int_aug" and is_static(d0) and d0 >= 1 and t.dtype != "bool":
            j = self.r.randrange(d0)
            o = self.pick(lambda o: broadcast(t.shape[1:], o.shape) == t.shape[1:] and (t.isfloat() or not o.isfloat())
                          and o.dtype != "bool")
            if o is None or self.chance(0.4):
                s, o = self.scalar_for(t.dtype), None
            else:
                s = o.name
            op = self.r.choice(["+=", "*=", "-="])
            self.emit(f"{t.name}[{j}] {op} {s}")
            self.after_mutation(t, o)
            return
        else:
            idx, shape = ":", list(t.shape)
        o = self.pick(lambda o: broadcast(shape, o.shape) == shape and (t.isfloat() or not o.isfloat())
                      and (t.dtype != "bool" or o.dtype == "bool")
                      and (o.dtype == t.dtype or form not in ("list", "tensor_idx")) and o.root != t.root)
        if o is not None and self.chance(0.6):
            self.emit(f"{t.name}[{idx}] = {o.name}")
        else:
            self.emit(f"{t.name}[{idx}] = {self.scalar_for(t.dtype)}")
            o = None
        self.after_mutation(t, o)

    # ---------------------------------------------------------- return
    def gen_return(self):
        tensors = list(self.vars)
        k = self.r.choice([1, 1, 2, 2, 2, 3, 3, 4, 5])
        items = []
        for _ in range(k):
            if not tensors:
                break
            if self.chance(0.5):
                t = tensors[-1 - min(len(tensors) - 1, int(self.r.expovariate(0.5)))]
            else:
                t = self.r.choice(tensors)
            items.append(t.name)
        if self.chance(0.2) and tensors:
            t = self.r.choice(tensors)
            items.append(self.r.choice([f"{t.name}.dim()", "None", "2.5", "True", f"{t.name}.numel()",
                                        f"{t.name}.requires_grad"] + ([f"{t.name}.shape[0]", f"{t.name}.size(-1)"]
                                                                       if t.rank else [])))
        if self.chance(0.05):
            items.append("None")
        if not items:
            self.emit("return" if self.chance(0.5) else "return None")
            return
        if len(items) >= 3 and self.chance(0.3):
            j = self.r.randrange(1, len(items))
            nest = f"[{', '.join(items[j:])}]" if self.chance(0.5) else f"({', '.join(items[j:])},)"
            items = items[:j] + [nest]
        if len(items) >= 2 and self.chance(0.1):
            items = [f"[{items[0]}, ({items[1]}, None)]"] + items[2:]
        self.emit_return(items)

    def program(self):
        self.gen_inputs()
        n = self.r.randint(8, 24)
        for _ in range(n):
            self.statement()
        self.gen_return()
        entry = f"def {self.name}({', '.join(self.params)}):\n" + "\n".join(self.lines) + "\n"
        return "\n".join(self.helpers + [entry])


ALIASES = {"float32": ["float32", "float"], "float64": ["float64", "double"], "float16": ["float16", "half"],
           "int64": ["int64", "long"], "int32": ["int32", "int"], "complex64": ["complex64", "cfloat"]}


def generate(seed, files, per_file, out):
    return G.generate(seed, files, per_file, out, make=Gen2,
                      header="import torch\nimport torch.nn.functional as F\n", attempts=30,
                      prefix="w", retry_on=G.RETRY_ON + (KeyError,))


def main():
    G.main(generate, __doc__.splitlines()[0])


if __name__ == "__main__":
    main()
