"""The house rules of the import graph: each layer imports only its own and the ones below, tasks meet only
through parameters, and every error class is in the one catalogue."""
from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent

# Lowest first. Each folder of baselines/ lies in one layer: what the tasks are built on (data, models,
# metrics, runtime, with the error catalogue and the TaskSpec contract), the tasks, what runs them (runner/,
# which reaches a task only by name, through the registry), the benchmarks, the API and the command line.
LAYERS = {
    "features": 0,
    **dict.fromkeys(["baselines", "baselines._moved", "baselines.errors", "baselines.taskspec", "baselines.data",
                     "baselines.models", "baselines.metrics", "baselines.runtime", "baselines.display"], 1),
    "baselines.tasks": 2,
    "baselines.runner": 3,
    "baselines.bench": 4,
    "baselines.api": 5,
    "baselines.web": 6,
    "baselines.cli": 7,
}
LAYER_NAMES = ("features", "what the tasks are built on", "tasks", "runner", "benchmarks", "api", "web page", "cli")
# The only modules that stand alone at the top of baselines/: everything else lives in the folder of its layer.
TOP_LEVEL_MODULES = {"__init__", "_moved", "errors", "taskspec", "api"}


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
    # a module's own imports, and those it makes for type annotations only (under `if TYPE_CHECKING:`)
    top_level = {id(node) for node in tree.body} | {
        id(inner) for node in tree.body if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING"
        for inner in node.body}
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


def test_the_folders_are_the_layers():
    """baselines/ holds only the few modules of TOP_LEVEL_MODULES; every other module is in a folder that
    LAYERS names, so the folders show the layers."""
    top = {path.stem for path in (REPO / "baselines").glob("*.py")}
    assert top == TOP_LEVEL_MODULES, f"modules outside a layer's folder: {sorted(top - TOP_LEVEL_MODULES)}"
    folders = {path.name for path in (REPO / "baselines").iterdir() if (path / "__init__.py").is_file()}
    assert {f"baselines.{folder}" for folder in folders} <= set(LAYERS), folders
    for folder in folders:
        docstring = ast.get_docstring(ast.parse((REPO / "baselines" / folder / "__init__.py").read_text("utf-8")))
        assert docstring and "\n" not in docstring.strip(), (
            f"baselines/{folder}/__init__.py: say in one line what the folder is for")


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


BUILT_IN_CODES = frozenset(path.parent.name for path in (REPO / "baselines" / "tasks").glob("*/card.json"))


def strings_in_code(path: Path) -> list[tuple[str, int]]:
    """(text, line) of every string constant of a module's code, its docstrings left out (prose may name a task)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                  if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
                  and node.body and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant)}
    return [(node.value, node.lineno) for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings]


@pytest.mark.parametrize("module", sorted(name for name in MODULES if task_package(name) is None))
def test_no_code_outside_the_tasks_names_a_task(module):
    """What a task is and does is declared in its package (its card and its TaskSpec); the layers around the
    tasks reach it by its code as a parameter, so no string of their code is a task's code (a dict key, a
    comparison, a call's argument). Codes are lower case (the registry lowers what a user types); 'DP' in
    upper case is a dependency label (a determiner phrase), not the task."""
    named = [(text, line) for text, line in strings_in_code(MODULES[module]) if text in BUILT_IN_CODES]
    assert not named, f"{MODULES[module].relative_to(REPO)} names tasks: {named}"


def test_the_task_code_check_sees_a_named_task(tmp_path):
    planted = tmp_path / "planted.py"
    planted.write_text('"""A docstring may say ynat."""\nSIZES = {"dp": 1}\nif code == "wos":\n    pass\n',
                       encoding="utf-8")
    assert [text for text, _line in strings_in_code(planted) if text in BUILT_IN_CODES] == ["dp", "wos"]
    assert len(BUILT_IN_CODES) == 8


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


@pytest.mark.parametrize("old, new", [("baselines.scoring", "baselines.metrics.scoring"),
                                      ("baselines.dataio", "baselines.data.fileio"),
                                      ("baselines.report", "baselines.metrics.teaching"),
                                      ("baselines.reproduce", "baselines.bench.reproduce")])
def test_a_module_name_from_before_the_folders_still_imports_with_a_deprecation_warning(old, new):
    import importlib
    import subprocess
    import sys
    # A fresh process: this one may have imported the old name already.
    code = (f"import warnings; warnings.simplefilter('error', DeprecationWarning)\n"
            f"import importlib\n"
            f"try:\n    importlib.import_module({old!r})\nexcept DeprecationWarning as w:\n    print(w)\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert f"{old} is now {new}" in result.stdout, result.stdout + result.stderr
    with pytest.warns(DeprecationWarning):
        sys.modules.pop(old, None)
        moved = importlib.import_module(old)
    assert moved is importlib.import_module(new)


def test_a_module_that_was_split_still_imports_with_each_name_where_it_went():
    import importlib
    import sys
    import warnings

    from baselines.data.locate import locate
    from baselines.errors import UsageError
    from baselines.runner import build, evaluate
    sys.modules.pop("baselines.driver", None)
    with pytest.warns(DeprecationWarning, match="baselines.driver is now baselines.runner.evaluate and "
                                                "baselines.runner.build"):
        driver = importlib.import_module("baselines.driver")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert driver.evaluate_task is evaluate.evaluate_task and driver.build_model is build.build_model
        assert driver.UsageError is UsageError and driver.resolve_data is locate
    with pytest.raises(AttributeError, match="no attribute 'resolve_nothing'"):
        driver.resolve_nothing


def test_a_pickle_that_names_a_class_by_its_old_module_loads_as_the_same_class():
    import pickle
    import warnings

    from baselines.models.linear import OrderedLogisticRegression
    # Protocol 0 writes names as lines of text, so one can be replaced by a shorter one.
    data = pickle.dumps(OrderedLogisticRegression(C=2.0), protocol=0)
    data = data.replace(b"baselines.models.linear", b"baselines.linear")
    assert b"baselines.linear" in data
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        restored = pickle.loads(data)
    assert type(restored) is OrderedLogisticRegression and restored.C == 2.0


def test_the_command_line_runs_as_a_module_and_as_the_script():
    import subprocess
    import sys
    for command in ([sys.executable, "-m", "baselines.cli", "--help"], ["klue-baselines", "--help"]):
        result = subprocess.run(command, capture_output=True, text=True)
        assert result.returncode == 0 and "bench" in result.stdout and "reproduce" in result.stdout, result.stderr


def _flag_texts(node: ast.AST) -> list[str]:
    """The literal text of a message, without what errors.setting names for both readers."""
    if isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", "")) == "setting":
        return []
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    return [text for child in ast.iter_child_nodes(node) for text in _flag_texts(child)]


@pytest.mark.parametrize("module", sorted(name for name in MODULES if not name.startswith("baselines.cli")))
def test_no_message_below_the_command_line_names_a_flag(module):
    """Errors and warnings below the CLI name a setting with errors.setting, which shows a Python caller the
    argument and a command-line user the flag; a literal '--flag' would be wrong for one of them."""
    for node in ast.walk(ast.parse(MODULES[module].read_text(encoding="utf-8"))):
        if not isinstance(node, ast.Call):
            continue
        called = getattr(node.func, "attr", getattr(node.func, "id", ""))
        if not (called.endswith(("Error", "Warning")) or called == "warn"):
            continue
        for text in (text for argument in node.args for text in _flag_texts(argument)):
            flag = re.search(r"(?:^|[\s(])--[a-z]", text)
            assert not flag or "klue-baselines " in text, f"{MODULES[module].relative_to(REPO)}:{node.lineno}: {text!r}"


def test_a_message_names_the_argument_in_python_and_the_flag_on_the_command_line(tmp_path):
    from click.testing import CliRunner

    from baselines import api
    from baselines.cli import main
    from baselines.errors import UsageError
    with pytest.raises(UsageError, match=r"^pos applies to: dp$"):
        api.model_name("ynat", pos="gold")
    result = CliRunner().invoke(main, ["-q", "run", "ynat", "--pos", "gold", "--results-dir", str(tmp_path)])
    assert result.exit_code != 0 and "Error: --pos applies to: dp" in result.output, result.output


def test_test_modules_share_helpers_one_way():
    """Test modules import shared helpers as plain modules of tests/ (`from helpers import ...`), never conftest, a
    test module or `tests.` (that needs the repository on the path: plain `pytest` failed to collect three files)."""
    for path in sorted((REPO / "tests").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = [node.module or ""] if isinstance(node, ast.ImportFrom) else [
                alias.name for alias in node.names] if isinstance(node, ast.Import) else []
            for name in names:
                assert not (name == "conftest" or name.startswith(("tests", "test_"))), f"{path.name}: imports {name}"


def test_names_moved_out_of_results_still_reach_their_new_home_with_a_warning():
    from baselines.runner import results, tables
    with pytest.warns(DeprecationWarning, match=r"results\.format_score is now baselines\.runner\.tables\."
                                                r"format_score; the old name goes in release 0\.4"):
        assert results.format_score is tables.format_score
    with pytest.raises(AttributeError, match="has no attribute 'no_such_name'"):
        results.no_such_name  # noqa: B018


def test_a_package_whose_old_names_moved_out_still_imports_its_own_submodules_unwarned():
    """baselines.bench's old names (the analysis benchmark's functions) warn; its submodule `analysis`, which also
    holds a name `analysis`, is the module, with no warning, whether or not it was imported before."""
    code = ("import warnings; warnings.simplefilter('error'); from baselines.bench import analysis; "
            "print(analysis.__name__); import baselines.bench as bench\n"
            "try:\n    bench.analysis_report\nexcept DeprecationWarning as warning:\n    print(warning)")
    shown = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert shown.splitlines() == ["baselines.bench.analysis", "baselines.bench.analysis_report is now "
                                  "baselines.bench.analysis.analysis_report; the old name goes in release 0.3"]


def test_every_command_goes_through_the_api():
    """A command does its work through baselines.api; the exceptions are said: `tasks` lists the cards alone (no
    task imported, as the API would), `serve` starts the page, which calls the API itself, and the groups."""
    exempt = {"main", "bench", "tasks", "serve"}
    bypassing, commands = [], 0
    for path in sorted((REPO / "baselines" / "cli").glob("*.py")):
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.FunctionDef) and node.name not in exempt and any(
                    re.search(r"\b(command|group)\b", ast.unparse(decorator)) for decorator in node.decorator_list):
                commands += 1
                if "api." not in ast.unparse(node):
                    bypassing.append(f"{path.name}:{node.name}")
    assert commands >= 18 and not bypassing, f"{commands} commands; those that bypass baselines.api: {bypassing}"
