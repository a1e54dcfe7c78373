"""Where a result came from: the code that produced it, the library versions and the machine."""
from __future__ import annotations

import functools
import hashlib
import importlib.metadata
import platform
import subprocess
from pathlib import Path
from typing import Any

import numpy as np

import baselines
from features import analysis


def versions() -> dict[str, str]:
    """The versions a recorded score may depend on: Python, this package, Kiwi and its model, and the numeric
    libraries that fit and score (`reproduce` and `doctor` compare them with the installed ones)."""
    import kiwipiepy
    import scipy
    import sklearn

    return {"python": platform.python_version(), "klue_baselines": baselines.__version__,
            "kiwipiepy": kiwipiepy.__version__, "kiwipiepy_model": analysis.kiwi_model_version(),
            "scikit_learn": sklearn.__version__, "sklearn_crfsuite": importlib.metadata.version("sklearn-crfsuite"),
            "numpy": np.__version__, "scipy": scipy.__version__}


def machine() -> dict[str, str]:
    """What a result may depend on besides the code, the data and the versions: the CPU, and the SIMD kernels
    Kiwi was asked for (its analyses can differ between kernels)."""
    return {"architecture": platform.machine(),
            "cpu": analysis.cpu_info().get("model name") or platform.processor() or "unknown",
            "kiwi_arch": analysis.kiwi_arch()}


@functools.cache
def code_version() -> dict[str, Any]:
    """What code produced a result: a sha256 over the package's source (baselines/ and features/, every .py
    and shipped data file, by relative path), and the git commit when the package runs from a checkout, with
    whether that source differed from the commit. Looked up once per process: the source does not change
    while it runs, and a run of several tasks or fractions records it for each."""
    root = Path(baselines.__file__).resolve().parent.parent
    digest = hashlib.sha256()
    for folder in ("baselines", "features"):
        for path in sorted((root / folder).rglob("*")):
            if path.is_file() and "__pycache__" not in path.parts:
                digest.update(path.relative_to(root).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    version: dict[str, Any] = {"source_sha256": digest.hexdigest()}
    try:
        def git(*args: str) -> str:
            return subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, check=True,
                                  timeout=30).stdout.strip()

        version["git_commit"] = git("rev-parse", "HEAD")
        version["git_dirty"] = bool(git("status", "--porcelain", "--", "baselines", "features"))
    except (OSError, subprocess.SubprocessError):
        pass  # not a git checkout (an installed wheel), or no git: the source hash still names the code
    return version
