"""Test helper, run in a child process: seeded random mutations of real model bytes, fed to the reader under test.

    python tests/fuzz_model_bytes.py crfsuite MODEL_BYTES SEED COUNT
    python tests/fuzz_model_bytes.py model-file TASK MODEL_FILE SEED COUNT

`crfsuite`: mutations of a crfsuite model (header fields, aligned words, bytes, truncation) go to
ner.crf_from_model, and those it takes are used as crfsuite is used: tag, read its labels and every feature.
`model-file`: mutations of a model file's skops archive (inside an entry, then zipped again with valid CRCs, or of
the archive's own bytes), each with the header's sha256 made to match as an attacker would, go to load_model.
A mutation that crashes the reader kills this process with a signal, which the parent test sees. Prints one line
of JSON: how many were refused, taken, and failed otherwise (with the first such failure), and the peak resident
memory before and after.
"""
from __future__ import annotations

import hashlib
import io
import json
import random
import resource
import struct
import sys
import zipfile
from pathlib import Path


def peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def mutated_crfsuite(rng: random.Random, data: bytes) -> bytes:
    data = bytearray(data)
    kind = rng.randrange(5)
    if kind == 0:  # a header field: an offset or a count
        at = rng.randrange(4, 48, 4)
        struct.pack_into("<I", data, at, rng.choice([rng.getrandbits(32), len(data) + rng.randrange(1, 4096),
                                                     struct.unpack_from("<I", data, at)[0] + rng.randrange(-64, 64)
                                                     & 0xFFFFFFFF]))
    elif kind == 1:  # any aligned word: a chunk's count, an offset of a list, a feature's label, a CQDB bucket
        at = rng.randrange(0, len(data) - 4, 4)
        struct.pack_into("<I", data, at, rng.choice([rng.getrandbits(32), rng.randrange(256), 0xFFFFFFFF, 0]))
    elif kind == 2:  # a few bytes anywhere
        for _ in range(rng.randint(1, 8)):
            data[rng.randrange(len(data))] = rng.randrange(256)
    elif kind == 3:  # cut short
        del data[rng.randrange(1, len(data)):]
    else:  # a word of the label database or of the references (the smallest parts, which the tagger reads first)
        header = struct.unpack_from("<12I", data, 0)
        start = rng.choice([header[8], header[10], header[11]]) & ~3
        if start + 64 < len(data):
            struct.pack_into("<I", data, start + rng.randrange(0, 64, 4), rng.getrandbits(32))
    return bytes(data)


def fuzz_crfsuite(model_path: str, seed: int, count: int) -> dict:
    from baselines.tasks.ner import crf_from_model

    original = Path(model_path).read_bytes()
    crf = crf_from_model(original)
    sequence = [{name: 1.0 for name in list(crf.attributes_)[:50]}] * 5
    rng, counts, first_failure = random.Random(seed), {"refused": 0, "taken": 0, "failed": 0}, None
    start_peak = peak_mb()
    for _ in range(count):
        try:
            crf = crf_from_model(mutated_crfsuite(rng, original))
        except ValueError:
            counts["refused"] += 1
            continue
        try:
            crf.predict([sequence])
            crf.state_features_, crf.transition_features_, crf.classes_
            counts["taken"] += 1
        except Exception as error:  # a Python exception is a clear failure, not a crash; counted and shown
            counts["failed"] += 1
            first_failure = first_failure or f"{type(error).__name__}: {error}"
    return {**counts, "first_failure": first_failure, "start_peak_mb": start_peak, "peak_mb": peak_mb()}


def archive_entries(payload: bytes) -> dict[str, bytes]:
    with zipfile.ZipFile(io.BytesIO(payload)) as archive:
        return {info.filename: archive.read(info) for info in archive.infolist()}


def zipped(entries: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, content in entries.items():
            archive.writestr(name, content)
    return buffer.getvalue()


def with_payload(metadata: dict, payload: bytes) -> bytes:
    """A model file of `payload` whose header matches it (as anyone can write one)."""
    from baselines.runner.persistence import MAGIC

    header = {**metadata, "payload_sha256": hashlib.sha256(payload).hexdigest(), "payload_bytes": len(payload)}
    return MAGIC + json.dumps(header).encode() + b"\n" + payload


def mutated_payload(rng: random.Random, payload: bytes, entries: dict[str, bytes]) -> bytes:
    if rng.random() < 0.25:  # the archive's own bytes: its directory, sizes, compressed streams
        data = bytearray(payload)
        for _ in range(rng.randint(1, 4)):
            data[rng.randrange(len(data))] = rng.randrange(256)
        return bytes(data)
    changed = dict(entries)
    name = rng.choice(sorted(changed))
    data = bytearray(changed[name])
    if name.endswith(".npy") and rng.random() < 0.5:  # the array's header: its shape, type, order
        end = data.index(b"\n") if b"\n" in data else min(len(data), 128)
        for _ in range(rng.randint(1, 3)):
            data[rng.randrange(10, max(11, end))] = rng.choice(b"0123456789(),'<>f8i4 ")
    elif name.endswith(".bin") and len(data) > 48 and rng.random() < 0.7:  # bytes that go to C (the CRF)
        data = bytearray(mutated_crfsuite(rng, bytes(data)))
    else:
        for _ in range(rng.randint(1, 6)):
            data[rng.randrange(len(data))] = rng.randrange(256)
    changed[name] = bytes(data)
    return zipped(changed)


def fuzz_model_file(task: str, model_path: str, seed: int, count: int, folder: str) -> dict:
    from baselines.errors import ModelFileError
    from baselines.runner import persistence
    from baselines.runtime.provenance import versions

    path = Path(model_path)
    metadata, offset = persistence.read_metadata(path)
    payload = path.read_bytes()[offset:]
    entries = archive_entries(payload)
    persistence.load_model(path, task, versions())
    rng, counts, first_failure = random.Random(seed), {"refused": 0, "taken": 0, "failed": 0}, None
    start_peak = peak_mb()
    target = Path(folder) / "mutated.model"
    for _ in range(count):
        target.write_bytes(with_payload(metadata, mutated_payload(rng, payload, entries)))
        try:
            persistence.load_model(target, task, versions())
            counts["taken"] += 1
        except ModelFileError:
            counts["refused"] += 1
        except Exception as error:  # not the one-line refusal that a damaged file should get; counted and shown
            counts["failed"] += 1
            first_failure = first_failure or f"{type(error).__name__}: {error}"
    return {**counts, "first_failure": first_failure, "start_peak_mb": start_peak, "peak_mb": peak_mb()}


if __name__ == "__main__":
    if sys.argv[1] == "crfsuite":
        print(json.dumps(fuzz_crfsuite(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))))
    else:
        print(json.dumps(fuzz_model_file(sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]),
                                         sys.argv[6])))
