"""The house rules of the import graph: each layer imports only its own and the ones below, tasks meet only
through parameters, and every error class is in the one catalogue."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent

# Lowest first. The machinery splits in two: what the tasks build on (below them), and what runs the tasks
# (above them), which reaches a task only by name, through the registry.
LAYERS = {
    "features": 0,
    **dict.fromkeys(["baselines", "baselines.errors", "baselines.dataio", "baselines.params", "baselines.estimators",
                     "baselines.linear", "baselines.explain", "baselines.formats", "baselines.hf",
                     "baselines.scoring", "baselines.tallies", "baselines.report", "baselines.memory",
                     "baselines.parallel", "baselines.priors", "baselines.progress", "baselines.provenance",
                     "baselines.taskspec", "baselines.significance", "baselines.datafiles"], 1),
    "baselines.tasks": 2,
    **dict.fromkeys(["baselines.registry", "baselines.driver", "baselines.results", "baselines.plots",
                     "baselines.persistence", "baselines.determinism", "baselines.tuning", "baselines.scale",
                     "baselines.bench", "baselines.reproduce", "baselines.peers", "baselines.budget",
                     "baselines.long_inputs"], 3),
    "baselines.api": 4,
    "baselines.cli": 5,
}
LAYER_NAMES = ("features", "machinery under the tasks", "tasks", "driver", "api", "cli")


def module_name(path: Path) -> str:
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def layer(module: str) -> int:
    """The layer of a module: its own entry, else that of the package that holds it (a task's modules are
    the tasks' layer; every module of features/ is the features layer)."""
    name = module
    while name:
        if name in LAYERS:
            return LAYERS[name]
        name = name.rpartition(".")[0]
    raise AssertionError(f"{module} has no layer: add it to LAYERS in {Path(__file__).name}")


def task_package(module: str) -> str | None:
    """'baselines.tasks.mrc' for any module of the MRC task; None outside the tasks."""
    parts = module.split(".")
    return ".".join(parts[:3]) if parts[:2] == ["baselines", "tasks"] and len(parts) > 2 else None


def project_modules() -> dict[str, Path]:
    paths = sorted((REPO / "baselines").rglob("*.py")) + sorted((REPO / "features").rglob("*.py"))
    return {module_name(path): path for path in paths}


def project_imports(path: Path) -> list[tuple[str, int, bool]]:
    """(imported module, line, at module level) of every import of a project module in the file; `from
    package import name` counts as an import of package.name where that is a module."""
    modules = project_modules()
    tree = ast.parse(path.read_text(encoding="utf-8"))
    top_level = {id(node) for node in tree.body}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                target = f"{node.module}.{alias.name}"
                found.append((target if target in modules else node.module, node.lineno, id(node) in top_level))
        elif isinstance(node, ast.Import):
            found.extend((alias.name, node.lineno, id(node) in top_level) for alias in node.names)
    return [(target, line, top) for target, line, top in found if target.split(".")[0] in ("baselines", "features")]


MODULES = project_modules()


@pytest.mark.parametrize("module", sorted(MODULES))
def test_a_module_imports_only_its_own_layer_and_the_ones_below(module):
    for target, line, _top in project_imports(MODULES[module]):
        assert layer(target) <= layer(module), (
            f"{MODULES[module].relative_to(REPO)}:{line} imports {target} ({LAYER_NAMES[layer(target)]}) from the "
            f"{LAYER_NAMES[layer(module)]} layer below it")


@pytest.mark.parametrize("module", sorted(MODULES))
def test_tasks_are_reached_only_through_the_registry_and_never_import_one_another(module):
    own = task_package(module)
    for target, line, _top in project_imports(MODULES[module]):
        other = task_package(target)
        if other is not None:
            assert own == other, f"{MODULES[module].relative_to(REPO)}:{line} imports another task: {target}"


@pytest.mark.parametrize("module", sorted(MODULES))
def test_no_import_of_the_project_hides_inside_a_function(module):
    hidden = [(target, line) for target, line, top in project_imports(MODULES[module]) if not top]
    assert not hidden, f"{MODULES[module].relative_to(REPO)}: imports inside a function: {hidden}"


def test_every_exception_and_warning_class_is_in_the_error_catalogue():
    from baselines import errors

    catalogue = set(errors.__all__)
    for module, path in MODULES.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.ClassDef):
                continue
            bases = {ast.unparse(base).rpartition(".")[2] for base in node.bases}
            if bases & {"Exception", "ValueError", "UserWarning", "Warning", "RuntimeError", "OSError"} \
                    or node.name.endswith(("Error", "Warning")):
                assert node.name in catalogue, f"{module} defines {node.name} outside baselines/errors.py"
                assert module == "baselines.errors" or module.startswith("features."), (
                    f"{module} defines {node.name}: it belongs in baselines/errors.py")
    assert all(issubclass(getattr(errors, name), (errors.BaselinesError, errors.BaselinesWarning))
               for name in catalogue
               if name not in ("EXPLAINED_ERRORS", "EmbeddingFileError", "TextTooLong", "CacheWarning"))


def test_the_cycle_check_sees_an_import_hidden_in_a_function(tmp_path):
    source = tmp_path / "example.py"
    source.write_text("import os\n\ndef f():\n    from baselines import api\n    return api\n", encoding="utf-8")
    assert project_imports(source) == [("baselines.api", 4, False)]
    assert layer("baselines.tasks.mrc.reader") == 2
    assert task_package("baselines.tasks.mrc.reader") == "baselines.tasks.mrc"
