import gzip
from pathlib import Path


def make(path, outside):
    fixture = Path(__file__).resolve().parent.parent / "fixture.jsonl"
    path.write_bytes(gzip.compress(fixture.read_bytes(), mtime=0))
