"""Where a task's data is: its training, dev and extra files, found once for every caller."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from baselines.data import hf, sources
from baselines.errors import UsageError
from baselines.data.cards import TaskFiles


@dataclass
class TaskData:
    """The files a run uses for one task, and where they came from."""
    train: Path | None
    dev: Path | None
    extras: dict[str, Path]
    source: str  # 'sample', or the data directory
    is_sample: bool = False


def locate(task: TaskFiles, data_dir: str | Path | None = None, train: str | Path | None = None,
           dev: str | Path | None = None) -> TaskData:
    """The files `task` uses: `train`/`dev` where given; else those of data_dir or $KLUE_DATA_DIR; else of the
    download cache when it holds the task's dev file; else the shipped sample. Every caller that needs a
    task's data finds it here, official files and Hugging Face exports alike."""
    configured = sources.configured_data_dir(data_dir)
    base, is_sample = configured, False
    if base is None:
        cache = sources.user_cache_dir()
        if sources.find_file(cache, task, task.dev_file):
            base = cache
        elif train is None and dev is None:
            base, is_sample = sources.sample_dir(task.code), True
    if base is not None and not base.is_dir():
        raise UsageError(f"data directory {base} does not exist (run `klue-baselines download --data-dir {base}` "
                         f"first)")
    train_path = Path(train) if train else (_split_file(base, task, "train") if task.train_file else None)
    dev_path = Path(dev) if dev else _split_file(base, task, "dev")
    for path in (train_path, dev_path):
        if path is not None and not (path.is_file() or hf.is_saved_dataset(path)):
            raise UsageError(f"{path} is not a file (nor a Hugging Face save_to_disk folder)")
    extras = {}
    for name in task.extra_files:
        candidates = [p.parent / name for p in (dev_path, train_path) if p is not None]
        if base is not None:
            candidates.append(sources.find_file(base, task, name))
        found = next((c for c in candidates if c is not None and c.is_file()), None)
        if found is None and name in task.optional_extras:
            continue  # the task has a default (RE: the official relation list)
        if found is None:
            raise UsageError(f"{task.code} needs {name}: put it beside the data files or in the data directory")
        extras[name] = found
    # The shipped sample is never KLUE data, however it is passed (--train, --dev, a copy in --data-dir).
    is_sample = is_sample or any(path is not None and sources.is_sample_file(path) for path in (train_path, dev_path))
    return TaskData(train_path, dev_path, extras, "sample" if is_sample else str(base or "command line"),
                    is_sample)


def _split_file(base: Path | None, task: TaskFiles, split: str) -> Path | None:
    """The task's official train or dev file in base, else its Hugging Face export there (see hf.find_split)."""
    if base is None:
        return None
    return sources.find_file(base, task, task.train_file if split == "train" else task.dev_file) or \
        hf.find_split(base, task.code, split)
