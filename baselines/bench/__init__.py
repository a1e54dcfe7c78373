"""Benchmarks whose figures go to results/ (analysis, scale, peers, budget, determinism, long inputs) and reproduce."""


def __getattr__(name: str):
    """The analysis benchmark's functions, which baselines.bench held before it became this folder."""
    import importlib
    import warnings

    analysis = importlib.import_module("baselines.bench.analysis")
    if name.startswith("_") or not hasattr(analysis, name):
        raise AttributeError(f"module 'baselines.bench' has no attribute {name!r}")
    warnings.warn(f"baselines.bench.{name} is now baselines.bench.analysis.{name}; the old name goes in the next "
                  f"release", DeprecationWarning, stacklevel=2)
    globals()[name] = getattr(analysis, name)  # warned once
    return globals()[name]
