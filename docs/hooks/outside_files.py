"""MkDocs hook: files kept outside docs/ join the site where they are: the lesson notebooks of lessons/ (rendered
by mkdocs-jupyter), where teachers open them, and the figures of results/figures/, which the commands draw."""
from __future__ import annotations

from pathlib import Path

from mkdocs.plugins import event_priority
from mkdocs.structure.files import File

REPO = Path(__file__).resolve().parents[2]


@event_priority(100)  # before mkdocs-jupyter's on_files, which makes pages of the notebooks it finds
def on_files(files, config):
    outside = [*sorted((REPO / "lessons").glob("*.ipynb")), *sorted((REPO / "results" / "figures").glob("*.png"))]
    for path in outside:
        files.append(File(path.relative_to(REPO).as_posix(), str(REPO), config["site_dir"],
                          config["use_directory_urls"]))
    return files
