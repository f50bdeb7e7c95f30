"""What tests/unit/test_one_writer.py's checker knows of a source tree (field_writes.py walks it):
its modules, their classes and fields, and the types of expressions as far as the source says them
(annotations, constructors, return annotations, fields' annotations, containers' element types)."""

from __future__ import annotations

import ast
import builtins
from collections import defaultdict
from collections.abc import Iterator

import attrs

# --- types ----------------------------------------------------------------------------------


@attrs.frozen
class T:
    """A type as the checker knows it: an slfs class (`cls` qualified, `module.Class`), an instance
    of something outside slfs (`ext`, with its type arguments), or a class object itself."""

    cls: str = ""
    ext: str = ""
    args: tuple[frozenset[T], ...] = ()
    is_class_object: bool = False


Types = frozenset[T]
NONE: Types = frozenset()
# A value of a module or class outside slfs (sys.stdout, a pyfuse3.EntryAttributes(), what they hold).
OUTSIDE = T(ext="outside")
ITER_ONE = {"list", "set", "frozenset", "Sequence", "MutableSequence", "Iterable", "Iterator", "Collection",
            "AbstractSet", "MutableSet", "deque", "KeysView", "ValuesView", "Generator", "AsyncIterator",
            "AsyncIterable", "AsyncGenerator", "Reversible"}
MAPPINGS = {"dict", "Mapping", "MutableMapping", "defaultdict", "OrderedDict", "ChainMap", "WeakValueDictionary",
            "WeakKeyDictionary"}


@attrs.define
class ClassInfo:
    qual: str
    module: str
    node: ast.ClassDef
    bases: list[str] = attrs.Factory(list)  # qualified slfs bases
    outside_base: bool = False  # a base outside slfs (textual's App): its fields are not slfs's
    protocol: bool = False  # a typing.Protocol: a write through it writes classes it cannot name
    # field -> annotation (an AST node to resolve in `module`), or None when only assigned
    fields: dict[str, ast.expr | None] = attrs.Factory(dict)
    assigned: dict[str, list[ast.expr]] = attrs.Factory(lambda: defaultdict(list))  # field -> values
    methods: dict[str, ast.FunctionDef | ast.AsyncFunctionDef] = attrs.Factory(dict)


@attrs.define
class Module:
    name: str
    tree: ast.Module
    is_package: bool
    symbols: dict[str, str] = attrs.Factory(dict)  # local name -> qualified name (slfs or not)
    functions: dict[str, ast.FunctionDef | ast.AsyncFunctionDef] = attrs.Factory(dict)
    globals: dict[str, list[ast.expr]] = attrs.Factory(lambda: defaultdict(list))
    global_annotations: dict[str, ast.expr] = attrs.Factory(dict)


class Program:
    """The modules of a source tree and what the checker knows of their classes and functions."""

    def __init__(self, sources: dict[str, tuple[str, bool]]) -> None:
        self.modules = {name: Module(name, ast.parse(text), is_package) for name, (text, is_package) in sources.items()}
        self.classes: dict[str, ClassInfo] = {}
        self._aliases: set[str] = set()  # the type aliases being resolved (a guard against a loop)
        for m in self.modules.values():
            self._collect(m)
        for m in self.modules.values():
            self._imports(m)
        for c in self.classes.values():
            for base in c.node.bases:
                for t in self.annotation(c.module, base):
                    if t.cls:
                        c.bases.append(t.cls)
                    elif t.ext == "Protocol":
                        c.protocol = True
                    elif t.ext and t.ext not in {"Generic", "object"}:
                        c.outside_base = True

    # --- collecting

    def _collect(self, m: Module) -> None:
        for stmt in m.tree.body:
            if isinstance(stmt, ast.ClassDef):
                self._class(m, stmt, m.name)
            elif isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
                m.functions[stmt.name] = stmt
                m.symbols[stmt.name] = f"{m.name}.{stmt.name}"
            elif isinstance(stmt, ast.Assign):
                for target in stmt.targets:
                    if isinstance(target, ast.Name):
                        m.globals[target.id].append(stmt.value)
            elif isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
                m.global_annotations[stmt.target.id] = stmt.annotation

    def _class(self, m: Module, node: ast.ClassDef, prefix: str) -> None:
        qual = f"{prefix}.{node.name}"
        info = self.classes[qual] = ClassInfo(qual, m.name, node)
        if prefix == m.name:
            m.symbols[node.name] = qual
        for stmt in node.body:
            if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
                info.fields[stmt.target.id] = stmt.annotation
            elif isinstance(stmt, ast.Assign):
                for target in stmt.targets:
                    if isinstance(target, ast.Name):
                        info.fields.setdefault(target.id, None)
                        info.assigned[target.id].append(stmt.value)
            elif isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
                info.methods[stmt.name] = stmt
                if any(isinstance(d, ast.Name) and d.id == "property" for d in stmt.decorator_list):
                    info.fields.setdefault(stmt.name, None)
                self._self_fields(info, stmt)
            elif isinstance(stmt, ast.ClassDef):
                self._class(m, stmt, qual)

    def _self_fields(self, info: ClassInfo, fn: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        """`self.x: T = ...` and `self.x = v` in a method declare field x (of this class unless a
        base has it: resolved at lookup)."""
        params = {a.arg: a.annotation for a in [*fn.args.posonlyargs, *fn.args.args, *fn.args.kwonlyargs]}
        for node in ast.walk(fn):
            if isinstance(node, ast.AnnAssign) and _is_self_attr(node.target):
                assert isinstance(node.target, ast.Attribute)
                info.fields[node.target.attr] = node.annotation
            elif isinstance(node, ast.Assign):
                for target in node.targets:
                    for t in flat(target):
                        if _is_self_attr(t):
                            assert isinstance(t, ast.Attribute)
                            value = node.value
                            if isinstance(value, ast.Name) and params.get(value.id) is not None \
                                    and info.fields.get(t.attr) is None:
                                info.fields[t.attr] = params[value.id]
                            else:
                                info.fields.setdefault(t.attr, None)
                                if not isinstance(target, ast.Tuple):
                                    info.assigned[t.attr].append(value)

    def _imports(self, m: Module) -> None:
        package = m.name.split(".") if m.is_package else m.name.split(".")[:-1]
        for node in ast.walk(m.tree):
            if isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    base = ".".join(package[:len(package) - node.level + 1] + ([node.module] if node.module else []))
                for alias in node.names:
                    m.symbols.setdefault(alias.asname or alias.name, f"{base}.{alias.name}")
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    m.symbols.setdefault(alias.asname or alias.name.split(".")[0],
                                         alias.name if alias.asname else alias.name.split(".")[0])

    # --- resolving names and annotations

    def ours(self, qual: str) -> bool:
        return qual.split(".")[0] in self.modules

    def lookup(self, module: str, name: str, depth: int = 0) -> str:
        """The qualified name `name` means in `module` (following re-exports between slfs modules)."""
        m = self.modules.get(module)
        if m is None:
            return f"{module}.{name}"
        qual = m.symbols.get(name)
        if qual is None:
            return f"builtins.{name}" if hasattr(builtins, name) else f"{module}.{name}"
        if qual in self.classes or qual in self.modules or depth > 5:
            return qual
        owner, _, last = qual.rpartition(".")
        if owner in self.modules and owner != module:
            return self.lookup(owner, last, depth + 1)
        return qual

    def qualified(self, module: str, expr: ast.expr) -> str | None:
        if isinstance(expr, ast.Name):
            return self.lookup(module, expr.id)
        if isinstance(expr, ast.Attribute):
            base = self.qualified(module, expr.value)
            if base is None:
                return None
            if base in self.modules:
                return self.lookup(base, expr.attr)
            return f"{base}.{expr.attr}"
        return None

    def annotation(self, module: str, expr: ast.expr | None) -> Types:
        """The types an annotation names (None and unknown names give none)."""
        if expr is None:
            return NONE
        if isinstance(expr, ast.Constant):
            if isinstance(expr.value, str):
                try:
                    return self.annotation(module, ast.parse(expr.value, mode="eval").body)
                except SyntaxError:
                    return NONE
            return NONE
        if isinstance(expr, ast.BinOp) and isinstance(expr.op, ast.BitOr):
            return self.annotation(module, expr.left) | self.annotation(module, expr.right)
        if isinstance(expr, ast.Subscript):
            head = self.qualified(module, expr.value) or ""
            last = head.rpartition(".")[2]
            elts = expr.slice.elts if isinstance(expr.slice, ast.Tuple) else [expr.slice]
            if last in {"Optional", "Union"}:
                return frozenset().union(*(self.annotation(module, e) for e in elts))
            if last in {"ClassVar", "Final", "Annotated"}:
                return self.annotation(module, elts[0])
            if last == "type":
                return frozenset(attrs.evolve(t, is_class_object=True) for t in self.annotation(module, elts[0]))
            return frozenset({T(ext=last, args=tuple(self.annotation(module, e) for e in elts))})
        qual = self.qualified(module, expr)
        if qual is None:
            return NONE
        if qual in self.classes:
            return frozenset({T(cls=qual)})
        if qual == "builtins.None" or qual.endswith(".Any"):
            return NONE
        owner, _, last = qual.rpartition(".")
        if owner in self.modules:  # an slfs name that is no class: a type alias, else unknown (never outside)
            values = self.modules[owner].globals.get(last, []) if qual not in self._aliases else []
            self._aliases.add(qual)
            try:
                return frozenset().union(*(self.annotation(owner, v) for v in values))
            finally:
                self._aliases.discard(qual)
        return frozenset({T(ext=last)})

    # --- fields

    def mro(self, cls: str) -> Iterator[ClassInfo]:
        seen: set[str] = set()
        todo = [cls]
        while todo:
            c = todo.pop(0)
            if c in seen or c not in self.classes:
                continue
            seen.add(c)
            yield self.classes[c]
            todo.extend(self.classes[c].bases)

    def owner(self, cls: str, field: str) -> ClassInfo | None:
        """The class of `cls`'s MRO that declares `field` (None: no slfs class in it does)."""
        return next((c for c in self.mro(cls) if field in c.fields), None)

    def field_types(self, cls: str, field: str) -> Types:
        c = self.owner(cls, field)
        if c is None:
            method = next((k.methods[field] for k in self.mro(cls) if field in k.methods), None)
            if method is None:
                return frozenset({OUTSIDE}) if any(k.outside_base for k in self.mro(cls)) else NONE
            return frozenset({T(ext="method", args=(self.returns(cls, method),))})
        annotated = self.annotation(c.module, c.fields[field])
        if annotated:
            return annotated
        if field in c.methods:  # a property
            return self.returns(c.qual, c.methods[field])
        out: set[T] = set()
        scope = Scope(self, c.module, None, c.qual)
        for value in c.assigned.get(field, []):
            if isinstance(value, ast.Call) and isinstance(value.func, ast.Subscript):
                # a generic descriptor (`items = _BuiltOnRead[dict[str, Item]]()`): reads give its type argument
                descriptor = self.annotation(c.module, value.func.value)
                if any(t.cls and "__get__" in self.classes[t.cls].methods for t in descriptor):
                    out |= self.annotation(c.module, value.func.slice)
                    continue
            out |= scope.type_of(value)
        return frozenset(out)

    def returns(self, cls: str | None, fn: ast.FunctionDef | ast.AsyncFunctionDef) -> Types:
        module = self.classes[cls].module if cls else None
        if module is None:
            module = next(m.name for m in self.modules.values() if fn in m.functions.values())
        return self.annotation(module, fn.returns)


def _is_self_attr(node: ast.expr) -> bool:
    return isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self"


def flat(target: ast.expr) -> Iterator[ast.expr]:
    if isinstance(target, (ast.Tuple, ast.List)):
        for e in target.elts:
            yield from flat(e)
    elif isinstance(target, ast.Starred):
        yield from flat(target.value)
    else:
        yield target


def _element(types: Types, index: int | None = None) -> Types:
    """What iterating over (or subscripting) a value of `types` gives."""
    out: set[T] = set()
    for t in types:
        if t == OUTSIDE:
            out.add(t)
        elif t.ext in ITER_ONE and t.args:
            out |= t.args[0]
        elif t.ext in MAPPINGS and len(t.args) == 2:
            out |= t.args[0] if index is None else t.args[1]
        elif t.ext == "tuple" and t.args:
            if len(t.args) == 2 and not t.args[1]:  # tuple[X, ...]
                out |= t.args[0]
            elif index is not None and 0 <= index < len(t.args):
                out |= t.args[index]
            else:
                out |= frozenset().union(*t.args)
        elif t.ext in {"items_of"} and t.args:
            out.add(T(ext="tuple", args=t.args))
    return frozenset(out)


class Scope:
    """A function's (or module's) names and their types, flow-insensitively: a name's annotation, or
    every value bound to it; isinstance narrowing is applied where a write is checked."""

    def __init__(self, program: Program, module: str, fn: ast.FunctionDef | ast.AsyncFunctionDef | None,
                 cls: str | None, outer: Scope | None = None) -> None:
        self.program = program
        self.module = module
        self.cls = cls
        self.outer = outer
        self.fn = fn
        self.annotated: dict[str, Types] = {}
        self.bound: dict[str, list[tuple[str, ast.expr, int | None]]] = defaultdict(list)
        self.narrowed: dict[str, Types] = {}
        self._busy: set[str] = set()
        if fn is None:
            return
        args = [*fn.args.posonlyargs, *fn.args.args, *fn.args.kwonlyargs]
        is_static = any(isinstance(d, ast.Name) and d.id == "staticmethod" for d in fn.decorator_list)
        is_classmethod = any(isinstance(d, ast.Name) and d.id == "classmethod" for d in fn.decorator_list)
        for i, a in enumerate(args):
            if i == 0 and cls and not is_static and outer is not None and outer.fn is None:
                self.annotated[a.arg] = frozenset({T(cls=cls, is_class_object=is_classmethod)})
            elif a.annotation is not None:
                self.annotated[a.arg] = program.annotation(module, a.annotation)
        for node in _own_nodes(fn):
            if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                self.annotated[node.target.id] = program.annotation(module, node.annotation)
            elif isinstance(node, ast.Assign):
                for target in node.targets:
                    self._bind(target, "value", node.value)
            elif isinstance(node, ast.NamedExpr):
                self._bind(node.target, "value", node.value)
            elif isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)):
                self._bind(node.target, "iter", node.iter)
            elif isinstance(node, ast.ExceptHandler) and node.name and node.type is not None:
                self.annotated[node.name] = frozenset().union(*(
                    program.annotation(module, e) for e in (node.type.elts if isinstance(node.type, ast.Tuple)
                                                            else [node.type])))
            elif isinstance(node, (ast.With, ast.AsyncWith)):
                for item in node.items:
                    if item.optional_vars is not None:
                        self._bind(item.optional_vars, "with", item.context_expr)

    def _bind(self, target: ast.expr, how: str, value: ast.expr, index: int | None = None) -> None:
        if isinstance(target, ast.Name):
            self.bound[target.id].append((how, value, index))
        elif isinstance(target, (ast.Tuple, ast.List)):
            if isinstance(value, (ast.Tuple, ast.List)) and how == "value" and len(value.elts) == len(target.elts):
                for t, v in zip(target.elts, value.elts, strict=True):
                    self._bind(t, how, v)
            else:
                for i, t in enumerate(target.elts):
                    self._bind(t, how + "+unpack", value, i)

    def name(self, name: str) -> Types:
        if name in self.narrowed:
            return self.narrowed[name]
        if name in self.annotated:
            return self.annotated[name]
        if name in self.bound and name not in self._busy:
            self._busy.add(name)
            try:
                out: frozenset[T] = frozenset()
                for how, value, index in self.bound[name]:
                    types = self.type_of(value)
                    if how.startswith("iter"):
                        types = _element(types)
                    elif how.startswith("with"):
                        types = frozenset(
                            a for t in types if t.ext in {"AbstractContextManager", "AbstractAsyncContextManager",
                                                          "ContextManager", "AsyncContextManager"}
                            for a in frozenset().union(*t.args[:1])) or types
                    if how.endswith("+unpack"):
                        types = _element(types, index)
                    out |= types
                return out
            finally:
                self._busy.discard(name)
        if self.outer is not None:
            return self.outer.name(name)
        m = self.program.modules[self.module]
        if name in m.global_annotations:
            return self.program.annotation(self.module, m.global_annotations[name])
        if name in m.globals:
            top = Scope(self.program, self.module, None, None)
            return frozenset().union(*(top.type_of(v) for v in m.globals[name]))
        qual = self.program.lookup(self.module, name)
        if qual in self.program.classes:
            return frozenset({T(cls=qual, is_class_object=True)})
        if name in m.symbols and not self.program.ours(qual):
            return frozenset({OUTSIDE})  # an import from outside slfs
        return NONE

    def type_of(self, expr: ast.expr) -> Types:
        p = self.program
        if isinstance(expr, ast.Name):
            return self.name(expr.id)
        if isinstance(expr, ast.Attribute):
            base = self.type_of(expr.value)
            if not base:
                qual = p.qualified(self.module, expr)
                if qual in p.classes:
                    return frozenset({T(cls=qual, is_class_object=True)})
            out: set[T] = set()
            for t in base:
                if t.cls:
                    out |= p.field_types(t.cls, expr.attr)
                elif t.ext and t.ext not in {"method", "Callable"}:
                    out.add(OUTSIDE)  # what a value from outside slfs holds is not slfs's
            return frozenset(out)
        if isinstance(expr, ast.Call):
            func = expr.func
            callee = self.type_of(func) if not isinstance(func, ast.Name) or func.id in self._names() else NONE
            out = set()
            for t in callee:
                if t.cls and t.is_class_object:
                    out.add(T(cls=t.cls))
                elif t.ext == "method" and t.args:
                    out |= t.args[0]
                elif t.ext == "Callable" and len(t.args) == 2:
                    out |= t.args[1]
                elif t == OUTSIDE:
                    out.add(OUTSIDE)
            if isinstance(func, ast.Attribute) and func.attr in {"values", "keys", "items", "copy", "get", "pop",
                                                                  "setdefault", "popleft"}:
                container = self.type_of(func.value)
                for t in container:
                    if t.ext in MAPPINGS and len(t.args) == 2:
                        if func.attr == "values":
                            out.add(T(ext="list", args=(t.args[1],)))
                        elif func.attr in {"get", "pop", "setdefault"}:
                            out |= t.args[1]
                        elif func.attr == "keys":
                            out.add(T(ext="list", args=(t.args[0],)))
                        elif func.attr == "items":
                            out.add(T(ext="list", args=(frozenset({T(ext="tuple", args=t.args)}),)))
                        elif func.attr == "copy":
                            out.add(t)
                    elif t.ext in ITER_ONE and t.args and func.attr in {"pop", "popleft"}:
                        out |= t.args[0]
            if isinstance(func, ast.Name):
                qual = p.lookup(self.module, func.id)
                if qual in p.classes:
                    out.add(T(cls=qual))
                else:
                    owner, _, last = qual.rpartition(".")
                    if owner in p.modules and last in p.modules[owner].functions:
                        out |= p.annotation(owner, p.modules[owner].functions[last].returns)
                    elif func.id in {"list", "sorted", "reversed", "iter", "set", "tuple"} and expr.args:
                        out.add(T(ext="list", args=(_element(self.type_of(expr.args[0])),)))
                    elif func.id in {"next"} and expr.args:
                        out |= _element(self.type_of(expr.args[0]))
                    elif func.id == "cast" or qual.endswith(".cast"):
                        out |= p.annotation(self.module, expr.args[0])
                    elif func.id in p.modules[self.module].symbols and not p.ours(qual):
                        out.add(OUTSIDE)
            elif isinstance(func, ast.Attribute):
                qual = p.qualified(self.module, func)
                if qual in p.classes:
                    out.add(T(cls=qual))
                elif qual and qual.rpartition(".")[0] in p.modules:
                    owner, _, last = qual.rpartition(".")
                    if last in p.modules[owner].functions:
                        out |= p.annotation(owner, p.modules[owner].functions[last].returns)
            return frozenset(out)
        if isinstance(expr, ast.Await):
            return self.type_of(expr.value)
        if isinstance(expr, ast.Subscript):
            index = expr.slice.value if isinstance(expr.slice, ast.Constant) and isinstance(expr.slice.value, int) \
                else None
            base = self.type_of(expr.value)
            if isinstance(expr.slice, ast.Slice):
                return base
            return _element(base, index if index is not None else -1)
        if isinstance(expr, ast.IfExp):
            return self.type_of(expr.body) | self.type_of(expr.orelse)
        if isinstance(expr, ast.BoolOp):
            return frozenset().union(*(self.type_of(v) for v in expr.values))
        if isinstance(expr, ast.NamedExpr):
            return self.type_of(expr.value)
        if isinstance(expr, (ast.List, ast.Set)) and expr.elts:
            return frozenset({T(ext="list", args=(frozenset().union(*(self.type_of(e) for e in expr.elts)),))})
        if isinstance(expr, (ast.ListComp, ast.SetComp, ast.GeneratorExp)):
            inner = Scope(p, self.module, None, self.cls, self)
            for gen in expr.generators:
                inner._bind(gen.target, "iter", gen.iter)
            return frozenset({T(ext="list", args=(inner.type_of(expr.elt),))})
        if isinstance(expr, ast.Tuple):
            return frozenset({T(ext="tuple", args=tuple(self.type_of(e) for e in expr.elts))})
        if isinstance(expr, ast.Constant) and expr.value is not None:
            return frozenset({T(ext=type(expr.value).__name__)})
        if isinstance(expr, (ast.JoinedStr,)):
            return frozenset({T(ext="str")})
        if isinstance(expr, ast.Dict):
            return frozenset({T(ext="dict")})
        return NONE

    def _names(self) -> set[str]:
        names = set(self.annotated) | set(self.bound)
        return names | (self.outer._names() if self.outer is not None else set())


def _own_nodes(fn: ast.AST) -> Iterator[ast.AST]:
    """The nodes of a function's body, not those of the functions and classes it defines."""
    todo = list(ast.iter_child_nodes(fn))
    while todo:
        node = todo.pop()
        yield node
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            todo.extend(ast.iter_child_nodes(node))
