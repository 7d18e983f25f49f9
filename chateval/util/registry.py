"""A tiny typed registry for everything users extend (strategies, task formats, memory systems,
benchmarks), filled by decorators, by plugin files and by installed packages' entry points."""

from __future__ import annotations

import difflib
import importlib
import importlib.metadata as md
import importlib.util
import logging
from collections.abc import Callable, Iterable, Iterator
from typing import Any, ClassVar, Generic, TypeVar

from .errors import ConfigError

T = TypeVar("T")
log = logging.getLogger(__name__)


def _builtin(obj: Any) -> bool:
    """Defined by chateval itself (not by a plugin file, whose module is chateval_plugin_*)."""
    module = getattr(_definition(obj), "__module__", None) or ""
    return module == "chateval" or module.startswith("chateval.")


def _definition(obj: Any) -> Any:
    """What an entry stands for: a record that wraps a function (a provider's builder) names it
    as ``__wrapped__``, as functools' wrappers do."""
    return getattr(obj, "__wrapped__", obj)


def _same_definition(a: Any, b: Any) -> bool:
    """The same class defined again (a module imported twice, e.g. a plugin file loaded by path
    and by name) is not a clash; another object under a taken name is."""
    a, b = _definition(a), _definition(b)
    return a is b or (getattr(a, "__module__", None), getattr(a, "__qualname__", None)) == (
        getattr(b, "__module__", None),
        getattr(b, "__qualname__", None),
    )


class Registry(Generic[T]):
    """Names -> objects. ``entry_points`` names the group (e.g. ``chateval.memory_systems``) whose
    entries an installed package declares; they are loaded the first time the registry is read."""

    ALL: ClassVar[list[Registry[Any]]] = []

    def __init__(
        self, kind: str, entry_points: str | None = None, from_entry_point: Callable[[Any], T] | None = None
    ) -> None:
        self.kind = kind
        # What an entry point's object becomes (e.g. a bare builder function -> a Provider).
        self._from_entry_point = from_entry_point
        self.group = entry_points
        self._items: dict[str, T] = {}
        self._eps_loaded = entry_points is None
        # name -> (module that registers it when imported, top-level packages it needs)
        self._lazy: dict[str, tuple[str, tuple[str, ...]]] = {}
        self._extras: dict[str, str] = {}  # lazy name -> the pip extra that installs its requirements
        self._from_eps: dict[str, str] = {}  # name -> the package whose entry point registered it
        Registry.ALL.append(self)

    def register(self, name: str, *, replace: bool = False) -> Callable[[T], T]:
        """Decorator: ``@registry.register("name")``. Taking a name that is already registered
        to something else is an error unless ``replace=True`` (so a plugin cannot silently
        shadow a built-in)."""

        def deco(obj: T) -> T:
            old = self._items.get(name)
            lazy = self._lazy.get(name) if old is None else None
            if (
                lazy is not None
                and getattr(_definition(obj), "__module__", None) != lazy[0]
                and self._lazy_available(name)
            ):
                if not replace:  # a built-in that is not imported yet holds the name all the same
                    raise ConfigError(
                        f"{self.kind} '{name}' is already registered (by {lazy[0]}); "
                        "choose another name or register it with replace=True"
                    )
            if lazy is not None:
                del self._lazy[name]  # registered now: by its own module, or replaced
            if old is not None and name in self._from_eps and _builtin(obj) and not _builtin(old):
                # A built-in imported after an installed package took its name: the built-in wins.
                self._refuse(name, self._from_eps.pop(name))
                old = None
            if old is not None and not replace and not _same_definition(old, obj):
                where = getattr(_definition(old), "__module__", "?")
                raise ConfigError(
                    f"{self.kind} '{name}' is already registered (by {where}); "
                    "choose another name or register it with replace=True"
                )
            self._items[name] = obj
            return obj

        return deco

    def register_lazy(self, name: str, module: str, requires: tuple[str, ...] = (), extra: str | None = None) -> None:
        """``name`` is registered by importing ``module`` the first time it is asked for, so a
        heavy optional dependency is not imported by every command; it is listed only while
        every package in ``requires`` is installed. An ImportError of anything else propagates."""
        self._lazy[name] = (module, requires)
        if extra:
            self._extras[name] = extra

    def _lazy_available(self, name: str) -> bool:
        if name not in self._lazy or name in self._items:
            return False
        return all(_importable(p) for p in self._lazy[name][1])

    def _load_lazy(self, name: str) -> None:
        module, requires = self._lazy.pop(name)
        try:
            importlib.import_module(module)
        except ImportError as e:
            if (e.name or "").split(".")[0] not in requires:
                raise
            raise ConfigError(
                f"{self.kind} '{name}' needs {', '.join(requires)}, which failed to import ({e})"
            ) from None

    def _refuse(self, name: str, dist: str, why: str | None = None) -> None:
        why = why or f"chateval's own {self.kind} of that name is used (the package should choose another name)"
        log.warning("chateval: ignoring entry point '%s' (%s) of %s: %s", name, self.group, dist, why)

    def _holds_builtin(self, name: str) -> bool:
        """``name`` is chateval's own: registered by it, or registered by its module when first asked for."""
        if name in self._items:
            return _builtin(self._items[name])
        return name in self._lazy

    def _entry_points(self) -> None:
        if self._eps_loaded:
            return
        self._eps_loaded = True  # first: a failing entry point must not be retried on every lookup
        for ep in md.entry_points(group=self.group or ""):
            dist = ep.dist.name if ep.dist else "an installed package"
            if self._holds_builtin(ep.name):
                # Built-ins win: an installed package cannot take their names (nor stop every
                # command that reads this registry); the rest of the package still loads.
                self._refuse(ep.name, dist)
                continue
            if ep.name in self._items:
                continue  # loading the module may have registered it by decorator already
            try:
                obj = ep.load()
            except ConfigError as e:
                if "is already registered" not in str(e):
                    raise ConfigError(
                        f"entry point '{ep.name}' ({self.group}) of {dist}: failed to load ({e})"
                    ) from None
                self._refuse(ep.name, dist, str(e))  # its module took a built-in's name by decorator
                continue
            except BaseException as e:  # noqa: BLE001 - SystemExit included: report, don't exit
                raise ConfigError(
                    f"entry point '{ep.name}' ({self.group}) of {dist}: failed to load ({type(e).__name__}: {e})"
                ) from None
            if ep.name not in self._items:
                if self._from_entry_point is not None:
                    obj = self._from_entry_point(obj)
                self.register(ep.name)(obj)
                self._from_eps[ep.name] = dist
                if isinstance(obj, type) and hasattr(obj, "name") and "name" not in vars(obj):
                    obj.name = ep.name  # as the registering decorators do: records use this name

    def get(self, name: str) -> T:
        self._entry_points()
        if self._lazy_available(name):
            self._load_lazy(name)
        if name in self._lazy and name not in self._items and name in self._extras:
            # Known, but its optional dependencies are not installed: say how to get them.
            missing = [p for p in self._lazy[name][1] if not _importable(p)]
            raise ConfigError(
                f"{self.kind} '{name}' needs the {self._extras[name]} extra: pip install "
                f"'chateval[{self._extras[name]}]' (missing module '{(missing or ['?'])[0]}')"
            )
        try:
            return self._items[name]
        except KeyError:
            known = sorted(set(self._items) | {n for n in self._lazy if self._lazy_available(n)})
            raise ConfigError(
                f"unknown {self.kind} '{name}'{did_you_mean(name, known)} (known: {', '.join(known) or 'none'})"
            ) from None

    def names(self) -> list[str]:
        self._entry_points()
        return sorted(set(self._items) | {n for n in self._lazy if self._lazy_available(n)})

    def snapshot(self) -> dict[str, T]:
        """What is registered now, without loading entry points (to see what a plugin added)."""
        return dict(self._items)

    def __contains__(self, name: object) -> bool:
        self._entry_points()
        return name in self._items or (isinstance(name, str) and self._lazy_available(name))

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())


def did_you_mean(name: str, known: Iterable[str]) -> str:
    """'; did you mean 'x'?' for the closest known names (difflib, case-insensitive), or ''."""
    names = {str(k).lower(): str(k) for k in known}
    close = difflib.get_close_matches(name.lower(), list(names), n=2, cutoff=0.6)
    if not close:
        return ""
    return "; did you mean " + " or ".join(f"'{names[c]}'" for c in close) + "?"


def _importable(package: str) -> bool:
    try:
        return importlib.util.find_spec(package) is not None
    except (ImportError, ValueError):  # ValueError: blocked in sys.modules (a test, a shim)
        return False
