"""The module names of version 0.1, before the modules moved into layer folders, kept for one release."""
from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys
import types
import warnings

# Old name (baselines.<key>) -> the module it is now, or the modules it was split into (searched in order).
MOVED = {
    "dataio": "baselines.data.fileio", "datafiles": "baselines.data.sources", "hf": "baselines.data.hf",
    "formats": "baselines.data.formats",
    "estimators": "baselines.models.estimators", "params": "baselines.models.params",
    "linear": "baselines.models.linear", "explain": "baselines.models.explain", "priors": "baselines.models.priors",
    "scoring": "baselines.metrics.scoring", "tallies": "baselines.metrics.tallies",
    "significance": "baselines.metrics.significance", "report": "baselines.metrics.teaching",
    "progress": "baselines.runtime.progress", "provenance": "baselines.runtime.provenance",
    "memory": "baselines.runtime.memory", "parallel": "baselines.runtime.parallel",
    "registry": "baselines.runner.registry", "results": "baselines.runner.results",
    "driver": ("baselines.runner.evaluate", "baselines.runner.build", "baselines.errors",
               "baselines.runtime.provenance", "baselines.data.locate"),
    "persistence": "baselines.runner.persistence", "tuning": "baselines.runner.tuning",
    "plots": "baselines.runner.plots",
    "scale": "baselines.bench.scale", "peers": "baselines.bench.peers", "determinism": "baselines.bench.determinism",
    "budget": "baselines.bench.budget", "reproduce": "baselines.bench.reproduce",
}
# Modules that stay but gave names to others (searched in order), and the release in which the old names go: 0.3
# moves results.py's records, tables and generated pages out of it, and 0.4 drops those old names.
NAMES_MOVED_OUT = {
    "baselines.runner.results": (("baselines.runner.result_files", "baselines.runner.tables",
                                  "baselines.runner.generated_docs"), "0.4"),
    # the analysis benchmark, which the module was before 0.2 made it this folder
    "baselines.bench": (("baselines.bench.analysis",), "0.3"),
}
# Names that changed as well as moved: (old module, old name) -> the new name in one of its modules.
RENAMED = {("driver", "resolve_data"): "locate"}


# The release in which each kind of old name goes: the modules of 0.1 in 0.3, what 0.3 moved in 0.4.
MODULES_GO_IN, NAMES_GO_IN = "0.3", "0.4"


def warn_moved(old: str, new: str, release: str) -> None:
    """The one deprecation of the project: an old name that still works, said with where it is now and the release
    in which it goes (modules, names moved out of a module, TaskSpec's flat fields)."""
    warnings.warn(f"{old} is now {new}; the old name goes in release {release}", DeprecationWarning, stacklevel=3)


class MovedModules(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Imports an old module name as the module it is now (the same object, so pickles and `isinstance` agree),
    with a DeprecationWarning that names the new one."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname.startswith("baselines.") and fullname[len("baselines."):] in MOVED:
            return importlib.util.spec_from_loader(fullname, self)
        return None

    def create_module(self, spec):
        return None  # a placeholder, replaced in sys.modules by the module itself in exec_module

    def exec_module(self, module) -> None:
        new = MOVED[module.__name__[len("baselines."):]]
        if isinstance(new, tuple):
            warn_moved(module.__name__, " and ".join(new), MODULES_GO_IN)
            sys.modules[module.__name__] = SplitModule(module.__name__, [importlib.import_module(n) for n in new])
            return
        warn_moved(module.__name__, new, MODULES_GO_IN)
        sys.modules[module.__name__] = importlib.import_module(new)


class SplitModule(types.ModuleType):
    """A module of version 0.1 whose names now live in several modules: each name is that module's own object."""

    def __init__(self, name: str, parts: list[types.ModuleType]):
        super().__init__(name, f"Moved: see {', '.join(part.__name__ for part in parts)}.")
        self._parts = parts

    def __getattr__(self, name: str):
        name = RENAMED.get((self.__name__.rpartition(".")[2], name), name)
        for part in self._parts:
            if hasattr(part, name):
                return getattr(part, name)
        raise AttributeError(f"module {self.__name__!r} has no attribute {name!r}")


def moved_out(module_name: str):
    """A module-level __getattr__ for `module_name`: a name that moved out of it (NAMES_MOVED_OUT) is found where it
    is now, with a DeprecationWarning that names its new module."""
    def getattr_moved(name: str):
        homes, release = NAMES_MOVED_OUT[module_name]
        if f"{module_name}.{name}" in homes:
            # A package's own submodule, asked for before it is imported (`from baselines.bench import analysis`):
            # the module itself, not a name of the same spelling inside it.
            return importlib.import_module(f"{module_name}.{name}")
        for new in homes:
            module = importlib.import_module(new)
            if hasattr(module, name) and not name.startswith("_"):
                warn_moved(f"{module_name}.{name}", f"{new}.{name}", release)
                return getattr(module, name)
        raise AttributeError(f"module {module_name!r} has no attribute {name!r}")
    return getattr_moved


def install() -> None:
    """Let the old names import, once per process."""
    if not any(isinstance(finder, MovedModules) for finder in sys.meta_path):
        sys.meta_path.append(MovedModules())
