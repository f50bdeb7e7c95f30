"""The wrapper every FUSE handler runs under: request accounting (`.slfs/stats`) and errno answers.

FsError becomes its errno with a log line; any other exception becomes EIO with a traceback
(pyfuse3 only catches FUSEError, anything else would end pyfuse3.main() and leave a dead mount).
An FsError whose errno alone does not explain it (`FsError.explain`: a name the viewer cannot hold)
goes to the handlers' object's `explain(name, exc)` instead of the log line: the status's
`last_error`, the log and an event say why.
Every call is counted and every call that waits is timed; of those answered at once, one in
stats.SAMPLE_EVERY is timed once the handler has enough latencies (see slfs/stats.py). An errno
answer counts as an error. A call that waited (its handler returned a coroutine: a write, a save,
a fetch) tells the handlers' object when it ends (`waited`), so no listing replays attributes
from before it (Operations.readdir).

A warm `grep -r` is three requests per file (open, flush, release) that the handlers answer at
once, so the wrapper is a large part of what slfs adds to pyfuse3's own cost per request. It is
built per handler from a template with the handler's own parameters (no `*args` tuple per call) and
its collaborators bound as closure cells (no global lookups): a third less overhead than a generic
`*args` wrapper in a micro-benchmark. Timing every call (two clock reads and an append) still cost
a warm `grep -r` about 0.05x of the floor's wall-clock time (tests/bench/bench_floor.py); a call
that is only counted costs an attribute's increment and a test of its bits.

The histograms are the mount's (each Services has its own Stats): a decorated handler is a
placeholder on the class, and `bind_handlers(obj, stats)`, called by the handlers' constructor,
builds each wrapper for that object with its histogram in `stats` and sets it as the object's own
bound method, so a call costs what it did with a module-wide Stats.
"""

from __future__ import annotations

import errno
import functools
import logging
from collections.abc import Awaitable, Callable, Coroutine
from time import perf_counter_ns
from types import CoroutineType, MethodType
from typing import Any, TypeVar, cast

import pyfuse3

from ..stats import FOLD_AT, Histogram, Stats
from ..world.fs_errors import FsError

log = logging.getLogger(__name__)

F = TypeVar("F", bound=Callable[..., Awaitable[Any]])


Explain = Callable[[str, FsError], None]


def failure(name: str, exc: Exception, args: tuple[Any, ...], explain: Explain | None = None) -> pyfuse3.FUSEError:
    """The errno answer for an exception a handler raised (FUSEError itself passes through)."""
    if isinstance(exc, FsError):
        if exc.explain and explain is not None:
            explain(name, exc)
        elif exc.errno not in (errno.ENOENT, errno.ENODATA, errno.EOPNOTSUPP, errno.EEXIST) and exc.message:
            log.warning("%s: %s", name, exc.message)
        return pyfuse3.FUSEError(exc.errno)
    if isinstance(exc, OSError):
        # The local overlay is a plain directory: its errors are the program's answer.
        if exc.errno is None:
            log.error("unexpected OSError in %s", name, exc_info=exc)
        return pyfuse3.FUSEError(exc.errno or errno.EIO)
    log.error("unexpected error in %s%r; answering EIO", name, args[:2], exc_info=exc)
    return pyfuse3.FUSEError(errno.EIO)


# The handler's parameters are spliced in where {params} stands; the names it uses are the
# factory's arguments (closure cells), none of them a handler's parameter name (create's `name`
# would hide it). Every call is counted, and every error; a call that waits is timed, and of those
# answered at once each one whose count has none of the histogram's `mask` bits set
# (stats.Histogram). Such a latency is appended, and folded into the histogram every
# FOLD_AT and before any read (stats.Histogram.add).
_TEMPLATE = """
def make(fn, handler_name, clock, coroutine, hist, latency, add, pending, fold, fold_at, FUSEError, failure, explain):
    def took(ns, n):
        # Filed if call n is still one to time under the mask now in force (a read of the stats
        # within the call folds, which may start the sampling): each latency stands for its weight.
        if not n & hist.mask:
            add(ns)
            if len(pending) >= fold_at:
                fold()
    async def wrapper(self, {params}):
        n = hist.count + 1
        hist.count = n
        start = 0 if n & hist.mask else clock()
        try:
            result = fn(self, {params})
            if type(result) is coroutine:
                if not start:
                    start = clock()
                try:
                    result = await result
                finally:  # whatever changed while it waited: no listing replays older attributes
                    self.waited()
                    latency(clock() - start)
                    start = 0
                return result
        except FUSEError:
            hist.errors += 1
            if start:
                took(clock() - start, n)
            raise
        except Exception as exc:
            hist.errors += 1
            if start:
                took(clock() - start, n)
            raise failure(handler_name, exc, {args}, explain) from None
        except BaseException:  # cancelled: counted as failed, not an errno
            hist.errors += 1
            raise
        if start:
            took(clock() - start, n)
        return result
    return wrapper
"""


# The attribute of a placeholder (guarded_sync) holding its wrapper's factory.
_MAKER = "_slfs_guarded_make"


def guarded_sync(fn: Callable[..., Any]) -> Callable[..., Coroutine[Any, Any, Any]]:
    """The wrapper for a handler written as a plain function: the hot paths (warm open, flush,
    release, getattr, lookup, listings) answer without an await, so they cost one coroutine (this
    wrapper's) instead of two. A handler that does need to wait returns the coroutine that does
    it (a slow path), and the wrapper awaits it under the same accounting. What this returns is the
    class's placeholder: bind_handlers puts the wrapper on each object."""
    code = fn.__code__
    if code.co_flags & 0x0C or code.co_kwonlyargcount:  # *args, **kwargs, keyword-only
        raise TypeError(f"{fn.__name__}: a handler takes plain positional parameters")
    params = ", ".join(code.co_varnames[1 : code.co_argcount])  # after self
    namespace: dict[str, Any] = {}
    exec(_TEMPLATE.format(params=params, args=f"({params},)" if params else "()"), namespace)
    make = namespace["make"]

    def build(hist: Histogram, explain: Explain | None) -> Callable[..., Any]:
        wrapper = make(fn, fn.__name__, perf_counter_ns, CoroutineType, hist, hist.latency, hist.add, hist.pending,
                       hist.fold, FOLD_AT, pyfuse3.FUSEError, failure, explain)
        functools.update_wrapper(wrapper, fn)
        wrapper.__defaults__ = fn.__defaults__
        return cast(Callable[..., Any], wrapper)

    def unbound(self: Any, *args: Any) -> Any:
        raise RuntimeError(f"{fn.__name__}: a guarded handler of an object bind_handlers was not called for")

    functools.update_wrapper(unbound, fn)
    setattr(unbound, _MAKER, build)
    return cast(Callable[..., Coroutine[Any, Any, Any]], unbound)


def bind_handlers(obj: object, stats: Stats) -> None:
    """Every guarded handler of `obj`'s class, wrapped for `obj` with its histogram in `stats` (and
    `obj.explain`, when it has one, for the errors that need more than their errno)."""
    explain = getattr(obj, "explain", None)
    seen: set[str] = set()
    for klass in type(obj).__mro__:
        for attr, value in vars(klass).items():
            if attr in seen:
                continue  # overridden by a subclass
            seen.add(attr)
            build = getattr(value, _MAKER, None)
            if build is not None:
                setattr(obj, attr, MethodType(build(stats.handler(value.__name__), explain), obj))


def guarded(fn: F) -> F:
    """`guarded_sync` for an async handler: calling it returns its coroutine, which the wrapper
    awaits."""
    return cast(F, guarded_sync(fn))
