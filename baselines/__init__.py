"""klue-baselines: classical, CPU-only baselines for the KLUE benchmark with the official scoring."""
import os as _os
import platform as _platform
import sys as _sys

__version__ = "0.2.0"

# numpy chooses its float64 exp and log loops by the CPU when it loads. Its AVX2 loops give the C library's
# results (measured on 9 million values, and equal to its loops for older CPUs); its AVX-512 loops are other
# code, which no row of results/ was produced with and this project cannot check (no AVX-512 here). A process
# that imports this package before numpy, as the command line does, therefore asks numpy for loops no wider
# than AVX2, unless NPY_DISABLE_CPU_FEATURES is already set. numpy reads the variable once, when it loads.
NUMPY_FEATURES_VARIABLE = "NPY_DISABLE_CPU_FEATURES"
NUMPY_WITHOUT_AVX512 = "X86_V4"  # numpy 2.4's name for the AVX-512 group


def _numpy_names_feature_groups() -> bool:
    from importlib import metadata

    try:
        major, minor = (int(part) for part in metadata.version("numpy").split(".")[:2])
    except (metadata.PackageNotFoundError, ValueError):
        return False
    return (major, minor) >= (2, 4)


if ("numpy" not in _sys.modules and NUMPY_FEATURES_VARIABLE not in _os.environ
        and _platform.machine() in ("x86_64", "AMD64") and _numpy_names_feature_groups()):
    _os.environ[NUMPY_FEATURES_VARIABLE] = NUMPY_WITHOUT_AVX512

from baselines import _moved  # noqa: E402

_moved.install()  # the names of the modules before they moved into folders, for one release
