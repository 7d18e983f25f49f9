"""User code: plugin files and modules (``--plugin``, ``CHATEVAL_PLUGINS``) and ``module:attr``
import paths. A plugin that fails in any way is one clear error naming it, never a traceback
or a silent exit."""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from .errors import ConfigError
from .registry import Registry

_loaded: set[str] = set()


def plugin_specs(given: Iterable[str] = ()) -> list[str]:
    """The plugins to load: those given, then those in CHATEVAL_PLUGINS (path-separated)."""
    env = [s for s in os.environ.get("CHATEVAL_PLUGINS", "").split(os.pathsep) if s.strip()]
    return list(dict.fromkeys([*given, *env]))


def _describe(e: BaseException) -> str:
    if isinstance(e, SyntaxError):
        return f"syntax error on line {e.lineno}: {e.msg}"
    if isinstance(e, SystemExit):
        return f"it called sys.exit({e.code!r}) while being imported"
    return f"{type(e).__name__}: {e}"


def _import(spec: str) -> None:
    if spec.endswith(".py"):
        path = Path(spec)
        if not path.is_file():
            raise ConfigError(f"{spec}: plugin file not found")
        mod_name = f"chateval_plugin_{path.stem}"
        mod_spec = importlib.util.spec_from_file_location(mod_name, path)
        if mod_spec is None or mod_spec.loader is None:
            raise ConfigError(f"{spec}: cannot be imported as a Python file")
        module = importlib.util.module_from_spec(mod_spec)
        sys.modules[mod_name] = module
        try:
            mod_spec.loader.exec_module(module)
        except BaseException:
            sys.modules.pop(mod_name, None)
            raise
    elif os.sep in spec or "/" in spec:  # a package folder: its __init__ runs, its relative imports resolve
        path = Path(spec)
        if not (path / "__init__.py").is_file():
            raise ConfigError(f"{spec}: not a plugin (a .py file, a package folder with __init__.py, or a module name)")
        mod_name = f"chateval_plugin_{path.resolve().name}"
        mod_spec = importlib.util.spec_from_file_location(
            mod_name, path / "__init__.py", submodule_search_locations=[str(path)]
        )
        if mod_spec is None or mod_spec.loader is None:
            raise ConfigError(f"{spec}: cannot be imported as a Python package")
        module = importlib.util.module_from_spec(mod_spec)
        sys.modules[mod_name] = module
        try:
            mod_spec.loader.exec_module(module)
        except BaseException:
            for name in [n for n in sys.modules if n == mod_name or n.startswith(mod_name + ".")]:
                sys.modules.pop(name, None)
            raise
    else:
        importlib.import_module(spec)


def load_plugins(specs: Iterable[str] = ()) -> None:
    """Import each plugin (a .py path, a package folder or a module name) and CHATEVAL_PLUGINS so their
    registrations take effect. Errors: ConfigError naming the plugin (exit 2 on the CLI)."""
    for spec in plugin_specs(specs):
        if spec in _loaded:
            continue
        before = {id(r): r.snapshot() for r in Registry.ALL}
        try:
            _import(spec)
        except ConfigError as e:
            raise ConfigError(f"{spec}: {e}" if not str(e).startswith(spec) else str(e)) from None
        except KeyboardInterrupt:
            raise
        except BaseException as e:  # noqa: BLE001 - SystemExit too: a plugin must not end the run
            raise ConfigError(f"{spec}: plugin failed to import ({_describe(e)})") from None
        added = [n for r in Registry.ALL for n, obj in r.snapshot().items() if before.get(id(r), {}).get(n) is not obj]
        if not added:
            raise ConfigError(
                f"{spec}: plugin registered nothing (expected @memory_system, @strategy, "
                "@benchmark, @perturbation, @provider or a task registration)"
            )
        _loaded.add(spec)


def _cwd_on_path() -> None:
    """The working directory, last on the import path: `python -m` puts it there, the `chateval`
    console script does not, and `--systems mypkg.agents:MyMemory` from mypkg's folder must work
    either way (last, so it cannot shadow an installed package)."""
    import os
    import sys

    cwd = os.getcwd()
    if cwd not in sys.path and "" not in sys.path:
        sys.path.append(cwd)


def import_object(path: str) -> Any:
    """``package.module:Name`` -> the object (for memory systems given by import path)."""
    module, sep, attr = path.partition(":")
    if not sep or not module or not attr:
        raise ConfigError(f"'{path}': expected an import path of the form package.module:Name")
    _cwd_on_path()
    try:
        obj: Any = importlib.import_module(module)
    except KeyboardInterrupt:
        raise
    except BaseException as e:  # noqa: BLE001
        hint = (
            f"; run from the folder that holds {module.split('.')[0]}/, or add it to PYTHONPATH"
            if isinstance(e, ModuleNotFoundError) and (e.name or "").split(".")[0] == module.split(".")[0]
            else ""
        )
        raise ConfigError(f"'{path}': cannot import {module} ({_describe(e)}){hint}") from None
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise ConfigError(f"'{path}': {module} has no attribute '{attr}'") from None
    return obj
