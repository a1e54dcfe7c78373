"""The package as a user installs it: the wheel built from this tree holds every card, sample and notice, and,
installed in a fresh virtual environment (not editable), lists the tasks, runs on its shipped samples and passes
`doctor`."""
from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
import venv
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """The wheel that `pip wheel` builds of this tree (setuptools in pip's isolated build, as a user gets it)."""
    folder = tmp_path_factory.mktemp("wheel")
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(folder), str(REPO)],
                           capture_output=True, text=True, timeout=600)
    assert built.returncode == 0, built.stdout + built.stderr
    wheels = list(folder.glob("klue_baselines-*.whl"))
    assert len(wheels) == 1, wheels
    return wheels[0]


def test_the_wheel_holds_every_card_sample_and_notice(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    tasks = REPO / "baselines" / "tasks"
    shipped = [path for path in tasks.rglob("*") if path.is_file() and "__pycache__" not in path.parts
               and (path.name == "card.json" or "sample" in path.relative_to(tasks).parts)]
    assert len([path for path in shipped if path.name == "card.json"]) == 8
    assert len([path for path in shipped if path.name == "NOTICE.md"]) == 8
    missing = [path.relative_to(REPO).as_posix() for path in shipped
               if path.relative_to(REPO).as_posix() not in names]
    assert not missing, f"not in the wheel: {missing}"


@pytest.fixture(scope="module")
def installed(wheel, tmp_path_factory) -> dict:
    """A fresh virtual environment with the wheel installed (not editable); its dependencies are this
    interpreter's, reached by a path file, so that nothing is downloaded and no other copy of baselines is seen:
    the path file adds the folder without running its own path files (the editable install's finder)."""
    root = tmp_path_factory.mktemp("venv")
    venv.create(root / "env", with_pip=True)
    bin_dir = root / "env" / ("Scripts" if os.name == "nt" else "bin")
    python = bin_dir / "python"
    site = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          capture_output=True, text=True, check=True).stdout.strip()
    Path(site, "system-packages.pth").write_text(sysconfig.get_paths()["purelib"] + "\n", encoding="utf-8")
    subprocess.run([str(python), "-m", "pip", "install", "-q", "--no-deps", "--no-index", str(wheel)], check=True,
                   timeout=300)
    home = root / "home"
    environment = {**os.environ, "HOME": str(home), "XDG_CACHE_HOME": str(home / ".cache"),
                   "KLUE_MODELS_DIR": str(home / "models"), "KLUE_BASELINES_CACHE": str(home / "analyses")}
    for variable in ("KLUE_DATA_DIR", "PYTHONPATH"):
        environment.pop(variable, None)
    return {"python": python, "command": bin_dir / "klue-baselines", "env": environment, "cwd": root}


def run(installed: dict, *arguments: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(installed["command"]), *arguments], capture_output=True, text=True, timeout=600,
                          env=installed["env"], cwd=installed["cwd"])


def test_the_installed_package_is_the_wheels(installed):
    where = subprocess.run([str(installed["python"]), "-c", "import baselines; print(baselines.__file__)"],
                           capture_output=True, text=True, env=installed["env"], cwd=installed["cwd"], check=True)
    assert Path(where.stdout.strip()).is_relative_to(installed["cwd"] / "env"), where.stdout
    assert not Path(where.stdout.strip()).is_relative_to(REPO)


def test_the_installed_package_lists_runs_and_passes_doctor(installed):
    listed = run(installed, "tasks")
    assert listed.returncode == 0, listed.stderr
    for code in ("ynat", "sts", "nli", "ner", "re", "dp", "mrc", "wos"):
        assert f"{code}/sample/" in listed.stdout.replace("\\", "/"), code  # each sample, found inside the wheel
    results = installed["cwd"] / "results"
    ran = run(installed, "-q", "run", "ynat", "ner", "--model", "trivial", "--results-dir", str(results))
    assert ran.returncode == 0, ran.stderr
    assert "sample" in ran.stdout and (results / "ynat.json").is_file() and (results / "ner.json").is_file()
    checked = run(installed, "doctor")
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "The install works." in checked.stdout
