"""Rebuild the small KLUE samples shipped in baselines/tasks/<task>/sample/ from a folder of KLUE v1.1 files.

    python scripts/build_sample.py ../shared/klue

Picks a few hundred training and about a hundred evaluation records per task, every label represented
where the data allows, with a fixed seed so that the same input gives the same sample. MRC and WoS have
no training file here, so their sample splits the dev file by passage / dialogue. The sample keeps the
KLUE licence (CC BY-SA 4.0): see the NOTICE.md of each sample.
"""
from __future__ import annotations

import json
import random
import shutil
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# Each task's sample lives in its package, in the official layout: baselines/tasks/<code>/sample/<folder>/.
TASK_OF_FOLDER = {"ynat-v1.1": "ynat", "klue-sts-v1.1": "sts", "klue-nli-v1.1": "nli", "klue-ner-v1.1": "ner",
                  "klue-re-v1.1": "re", "klue-dp-v1.1": "dp", "klue-mrc-v1.1": "mrc", "wos-v1.1": "wos"}


def sample_folder(folder: str) -> Path:
    return ROOT / "baselines" / "tasks" / TASK_OF_FOLDER[folder] / "sample" / folder
SEED = 20210511
TRAIN_SIZE, DEV_SIZE = 300, 100


def first_existing(folder: Path, *names: str) -> Path:
    for name in names:
        if (folder / name).exists():
            return folder / name
    raise SystemExit(f"none of {names} in {folder}")


def stratified(rows: list, label_of, size: int, rng: random.Random) -> list:
    """Round-robin over labels so that every label appears, then the original order is restored."""
    by_label = defaultdict(list)
    for index, row in enumerate(rows):
        by_label[label_of(row)].append(index)
    for indices in by_label.values():
        rng.shuffle(indices)
    chosen: list[int] = []
    while len(chosen) < min(size, len(rows)):
        for label in sorted(by_label):
            if by_label[label] and len(chosen) < size:
                chosen.append(by_label[label].pop())
    return [rows[i] for i in sorted(chosen)]


def write_json(path: Path, data) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")


def tsv_blocks(path: Path) -> tuple[str, list[str]]:
    """(file header comment lines, sentence blocks) of a KLUE TSV, as raw text."""
    chunks = path.read_text(encoding="utf-8").split("\n\n")
    first = chunks[0].split("\n")
    header = [line for line in first if line.startswith("##") and "\t" not in line[2:].split(" : ")[0]]
    body_start = len(header)
    chunks[0] = "\n".join(first[body_start:])
    return "\n".join(header), [chunk.strip("\n") for chunk in chunks if chunk.strip()]


def sample_json_task(source: Path, folder: str, train: str, dev: str, label_of, rng: random.Random,
                     train_source: str | None = None, dev_source: str | None = None) -> None:
    for name, size, source_name in ((train, TRAIN_SIZE, train_source or train), (dev, DEV_SIZE, dev_source or dev)):
        rows = json.loads((source / folder / source_name).read_text(encoding="utf-8"))
        write_json(sample_folder(folder) / name, stratified(rows, label_of, size, rng))


def sample_tsv_task(source: Path, folder: str, train: str, dev: str, train_source: str, rng) -> None:
    for name, size, source_name in ((train, TRAIN_SIZE, train_source), (dev, DEV_SIZE, dev)):
        header, blocks = tsv_blocks(source / folder / source_name)
        chosen = sorted(rng.sample(range(len(blocks)), size))
        text = header + "\n" + "\n\n".join(blocks[i] for i in chosen) + "\n\n"
        sample_folder(folder).mkdir(parents=True, exist_ok=True)
        (sample_folder(folder) / name).write_text(text, encoding="utf-8")


def sample_mrc(source: Path, rng: random.Random) -> None:
    folder = "klue-mrc-v1.1"
    data = json.loads(first_existing(source / folder, "klue-mrc-v1.1_dev.json",
                                     "klue-mrc-v1.1_dev.partial1350.json").read_text(encoding="utf-8"))
    documents = data["data"]
    order = list(range(len(documents)))
    rng.shuffle(order)
    picked = {"train": [], "dev": []}
    counts = {"train": 0, "dev": 0}
    for index in order:
        questions = sum(len(p["qas"]) for p in documents[index]["paragraphs"])
        split = "dev" if counts["dev"] < DEV_SIZE else "train" if counts["train"] < TRAIN_SIZE else None
        if split is None:
            break
        picked[split].append(index)
        counts[split] += questions
    for split, indices in picked.items():
        write_json(sample_folder(folder) / f"klue-mrc-v1.1_{split}.json",
                   {"version": data.get("version", "v1.1"), "data": [documents[i] for i in sorted(indices)]})


def sample_wos(source: Path, rng: random.Random) -> None:
    folder = "wos-v1.1"
    dialogues = json.loads(first_existing(source / folder, "wos-v1.1_dev.json",
                                          "wos-v1.1_dev.first700.json").read_text(encoding="utf-8"))
    order = list(range(len(dialogues)))
    rng.shuffle(order)
    dev, train = sorted(order[:50]), sorted(order[50:200])
    write_json(sample_folder(folder) / "wos-v1.1_train.json", [dialogues[i] for i in train])
    write_json(sample_folder(folder) / "wos-v1.1_dev.json", [dialogues[i] for i in dev])
    shutil.copyfile(source / folder / "ontology.json", sample_folder(folder) / "ontology.json")


def main(source: Path) -> None:
    rng = random.Random(SEED)
    for folder in TASK_OF_FOLDER:
        if sample_folder(folder).exists():
            shutil.rmtree(sample_folder(folder))
    sample_json_task(source, "ynat-v1.1", "ynat-v1.1_train.json", "ynat-v1.1_dev.json", lambda r: r["label"], rng)
    sample_json_task(source, "klue-sts-v1.1", "klue-sts-v1.1_train.json", "klue-sts-v1.1_dev.json",
                     lambda r: round(r["labels"]["real-label"]), rng)
    sample_json_task(source, "klue-nli-v1.1", "klue-nli-v1.1_train.json", "klue-nli-v1.1_dev.json",
                     lambda r: r["gold_label"], rng)
    sample_json_task(source, "klue-re-v1.1", "klue-re-v1.1_train.json", "klue-re-v1.1_dev.json",
                     lambda r: r["label"], rng)
    shutil.copyfile(source / "klue-re-v1.1" / "relation_list.json",
                    sample_folder("klue-re-v1.1") / "relation_list.json")
    ner_train = first_existing(source / "klue-ner-v1.1", "klue-ner-v1.1_train.tsv",
                               "klue-ner-v1.1_train.first5000.tsv").name
    sample_tsv_task(source, "klue-ner-v1.1", "klue-ner-v1.1_train.tsv", "klue-ner-v1.1_dev.tsv", ner_train, rng)
    dp_train = first_existing(source / "klue-dp-v1.1", "klue-dp-v1.1_train.tsv",
                              "klue-dp-v1.1_train.first1000.tsv").name
    sample_tsv_task(source, "klue-dp-v1.1", "klue-dp-v1.1_train.tsv", "klue-dp-v1.1_dev.tsv", dp_train, rng)
    sample_mrc(source, rng)
    sample_wos(source, rng)
    print("samples written to baselines/tasks/<task>/sample/")


if __name__ == "__main__":
    main(Path(sys.argv[1] if len(sys.argv) > 1 else ROOT.parent / "shared" / "klue"))
