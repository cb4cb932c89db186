import gzip
from pathlib import Path


def make(path, outside):
    fixture = Path(__file__).resolve().parent.parent / "fixture.jsonl"
    data = gzip.compress(fixture.read_bytes() * 50, mtime=0)
    path.write_bytes(data[: len(data) // 2])
