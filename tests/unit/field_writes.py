"""The writes to attributes in a source tree, each attributed to the class whose field it writes
(tests/unit/test_one_writer.py; the types are field_types.py's). `self.x = ...` in the class's own
`__init__`/`__attrs_post_init__` is initialisation, no write.

A field holding a container (dict, list, set, deque, bytearray) is also changed in place:
`obj.field[k] = v`, `del obj.field[k]` and its mutating methods (`obj.field.pop(k)`) are such
writes, told apart from rebinding the field. Only the direct ones: a change through a local alias
(`items = folder.items; items.pop(k)`) or a function given the container is not seen."""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

import attrs

from .field_types import Program, Scope, Types, flat

SLFS = Path(__file__).resolve().parents[2] / "slfs"
INIT_METHODS = {"__init__", "__attrs_post_init__", "__post_init__"}
CONTAINERS = {"dict", "defaultdict", "OrderedDict", "Counter", "list", "set", "deque", "bytearray",
              "MutableMapping", "MutableSequence", "MutableSet", "WeakValueDictionary", "WeakKeyDictionary"}
MUTATORS = {"append", "extend", "insert", "pop", "popitem", "remove", "clear", "update", "setdefault", "add",
            "discard", "appendleft", "popleft", "extendleft", "move_to_end", "sort", "reverse", "rotate",
            "difference_update", "intersection_update", "symmetric_difference_update"}


@attrs.frozen
class Write:
    module: str
    line: int
    target: str  # as written
    fields: tuple[tuple[str, str], ...]  # (class, field) it writes; empty when unresolved or outside slfs
    outside: bool = False  # a field of a class outside slfs
    in_place: bool = False  # the container the field holds changed (not the field rebound)


def _isinstance_facts(test: ast.expr, positive: bool) -> list[tuple[str, ast.expr, bool]]:
    """(name, class expression, whether it is one) triples that hold when `test` is `positive`."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return _isinstance_facts(test.operand, not positive)
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And) and positive:
        return [f for v in test.values for f in _isinstance_facts(v, True)]
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.Or) and not positive:
        return [f for v in test.values for f in _isinstance_facts(v, False)]
    if isinstance(test, ast.Call) and isinstance(test.func, ast.Name) and test.func.id == "isinstance" \
            and len(test.args) == 2 and isinstance(test.args[0], ast.Name):
        return [(test.args[0].id, test.args[1], positive)]
    return []


def _exits(body: list[ast.stmt]) -> bool:
    return bool(body) and isinstance(body[-1], (ast.Return, ast.Raise, ast.Continue, ast.Break))


class Walker:
    """Finds the writes of one module."""

    def __init__(self, program: Program, module: str) -> None:
        self.program = program
        self.module = module
        self.writes: list[Write] = []

    def run(self) -> list[Write]:
        top = Scope(self.program, self.module, None, None)
        self._body(self.program.modules[self.module].tree.body, top, None, None)
        return self.writes

    def _narrow(self, scope: Scope, facts: list[tuple[str, ast.expr, bool]]) -> dict[str, Types | None]:
        saved: dict[str, Types | None] = {}
        for name, cls, is_one in facts:
            elts = cls.elts if isinstance(cls, ast.Tuple) else [cls]
            types = frozenset().union(*(self.program.annotation(self.module, e) for e in elts))
            saved.setdefault(name, scope.narrowed.get(name))
            if is_one:
                scope.narrowed[name] = types
            else:  # not one of `types`: its other types remain (`else` after `isinstance(node, Item)`)
                excluded = {t.cls for t in types if t.cls}
                scope.narrowed[name] = frozenset(
                    t for t in scope.name(name)
                    if not (t.cls and any(c.qual in excluded for c in self.program.mro(t.cls))))
        return saved

    @staticmethod
    def _restore(scope: Scope, saved: dict[str, Types | None]) -> None:
        for name, types in saved.items():
            if types is None:
                scope.narrowed.pop(name, None)
            else:
                scope.narrowed[name] = types

    def _body(self, body: list[ast.stmt], scope: Scope, cls: str | None, fn_name: str | None) -> None:
        saved_all: list[dict[str, Types | None]] = []
        for stmt in body:
            self._stmt(stmt, scope, cls, fn_name)
            if isinstance(stmt, ast.If) and _exits(stmt.body) and not stmt.orelse:
                saved_all.append(self._narrow(scope, _isinstance_facts(stmt.test, False)))
            elif isinstance(stmt, ast.Assert):
                saved_all.append(self._narrow(scope, _isinstance_facts(stmt.test, True)))
        for saved in reversed(saved_all):
            self._restore(scope, saved)

    def _stmt(self, stmt: ast.stmt, scope: Scope, cls: str | None, fn_name: str | None) -> None:
        p = self.program
        if isinstance(stmt, ast.ClassDef):
            qual = next(q for q, c in p.classes.items() if c.node is stmt)
            self._body(stmt.body, Scope(p, self.module, None, qual, scope), qual, None)
            return
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            inner = Scope(p, self.module, stmt, cls, scope)
            self._body(stmt.body, inner, cls if fn_name is None else None, stmt.name if fn_name is None else fn_name)
            return
        if isinstance(stmt, ast.If):
            self._exprs(stmt.test, scope, cls, fn_name)
            saved = self._narrow(scope, _isinstance_facts(stmt.test, True))
            self._body(stmt.body, scope, cls, fn_name)
            self._restore(scope, saved)
            saved = self._narrow(scope, _isinstance_facts(stmt.test, False))
            self._body(stmt.orelse, scope, cls, fn_name)
            self._restore(scope, saved)
            return
        targets: list[ast.expr] = []
        if isinstance(stmt, ast.Assign):
            targets = list(stmt.targets)
        elif isinstance(stmt, (ast.AugAssign, ast.AnnAssign)):
            targets = [stmt.target] if not (isinstance(stmt, ast.AnnAssign) and stmt.value is None) else []
        elif isinstance(stmt, ast.Delete):
            targets = list(stmt.targets)
        elif isinstance(stmt, (ast.For, ast.AsyncFor)):
            targets = [stmt.target]
        elif isinstance(stmt, (ast.With, ast.AsyncWith)):
            targets = [i.optional_vars for i in stmt.items if i.optional_vars is not None]
        for target in targets:
            for t in flat(target):
                if isinstance(t, ast.Attribute):
                    self._write(t, ast.unparse(t), t.value, t.attr, scope, cls, fn_name)
                elif isinstance(t, ast.Subscript) and isinstance(t.value, ast.Attribute) \
                        and not isinstance(stmt, (ast.For, ast.AsyncFor, ast.With, ast.AsyncWith)):
                    self._in_place(t, f"{ast.unparse(t.value)}[]", t.value, scope, cls, fn_name)
        for field, value in ast.iter_fields(stmt):
            if field in {"targets", "target"}:
                continue
            if isinstance(value, list) and value and isinstance(value[0], ast.stmt):
                self._body(value, scope, cls, fn_name)
            elif isinstance(value, list):
                for v in value:
                    if isinstance(v, (ast.ExceptHandler, ast.match_case)):
                        self._body(v.body, scope, cls, fn_name)
                    elif isinstance(v, ast.AST):
                        self._exprs(v, scope, cls, fn_name)
            elif isinstance(value, ast.AST):
                self._exprs(value, scope, cls, fn_name)

    def _exprs(self, node: ast.AST, scope: Scope, cls: str | None, fn_name: str | None) -> None:
        """setattr(obj, "name", v) and object.__setattr__(obj, "name", v) inside an expression."""
        for n in ast.walk(node):
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr in MUTATORS \
                    and isinstance(n.func.value, ast.Attribute):
                self._in_place(n, f"{ast.unparse(n.func.value)}.{n.func.attr}()", n.func.value, scope, cls, fn_name)
            if not isinstance(n, ast.Call) or len(n.args) < 2:
                continue
            name = ast.unparse(n.func)
            if name in {"setattr", "object.__setattr__"}:
                obj, attr = n.args[0], n.args[1]
                shown = f"{name}({ast.unparse(obj)}, {ast.unparse(attr)}, ...)"
                if isinstance(attr, ast.Constant) and isinstance(attr.value, str):
                    self._write(n, shown, obj, attr.value, scope, cls, fn_name)
                else:
                    self.writes.append(Write(self.module, n.lineno, shown, ()))

    def _in_place(self, node: ast.AST, shown: str, attr: ast.Attribute, scope: Scope, cls: str | None,
                  fn_name: str | None) -> None:
        """A change of the container in field `attr`; a call of an slfs object's own method of that
        name (`self.tree.update(msg)`) or a subscript of some other value is none."""
        held = scope.type_of(attr)
        if not held or any(t.ext in CONTAINERS for t in held):
            self._write(node, shown, attr.value, attr.attr, scope, cls, fn_name, in_place=True)

    def _write(self, node: ast.AST, shown: str, obj: ast.expr, field: str, scope: Scope, cls: str | None,
               fn_name: str | None, *, in_place: bool = False) -> None:
        p = self.program
        if isinstance(obj, ast.Name) and obj.id == "self" and cls is not None and fn_name in INIT_METHODS:
            return  # the object's own initialisation
        types = scope.type_of(obj)
        fields: set[tuple[str, str]] = set()
        outside = False
        # a union writes each member that has the field (`Node | OverlayNode`: OverlayNode.path)
        # a value typed by a Protocol is of classes the checker cannot name: unresolved, listed
        types = frozenset(t for t in types if not (t.cls and p.classes[t.cls].protocol))
        owners = {t: p.owner(t.cls, field) for t in types if t.cls}
        has_field = any(owners.values())
        for t in types:
            if t.cls and not t.is_class_object:
                owner = owners[t]
                if owner is not None or not has_field:
                    fields.add(((owner.qual if owner else t.cls), field))
            elif t.cls:
                fields.add((t.cls, field))
            elif t.ext:
                outside = True
        self.writes.append(Write(self.module, getattr(node, "lineno", 0), shown, tuple(sorted(fields)),
                                 outside and not fields, in_place))


def writes_of(sources: dict[str, tuple[str, bool]]) -> list[Write]:
    program = Program(sources)
    return [w for name in sorted(program.modules) for w in Walker(program, name).run()]


def writers(writes: list[Write], *, in_place: bool = False) -> dict[tuple[str, str], set[str]]:
    """(class, field) -> the modules that rebind it (or, `in_place`, change the container it holds)."""
    out: dict[tuple[str, str], set[str]] = defaultdict(set)
    for w in writes:
        if w.in_place == in_place:
            for key in w.fields:
                out[key].add(w.module)
    return out


def slfs_sources() -> dict[str, tuple[str, bool]]:
    out = {}
    for path in sorted(SLFS.rglob("*.py")):
        rel = path.relative_to(SLFS.parent)
        if rel.parts[1] == "sim":
            continue
        parts = list(rel.with_suffix("").parts)
        is_package = parts[-1] == "__init__"
        if is_package:
            parts.pop()
        out[".".join(parts)] = (path.read_text(), is_package)
    return out


def multi_writers(sources: dict[str, tuple[str, bool]], *, in_place: bool = False) -> dict[tuple[str, str], set[str]]:
    return {k: v for k, v in writers(writes_of(sources), in_place=in_place).items() if len(v) > 1}


def unresolved(writes: list[Write]) -> set[tuple[str, str]]:
    return {(w.module, w.target) for w in writes if not w.fields and not w.outside}
