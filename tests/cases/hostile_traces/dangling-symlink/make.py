def make(path, outside):
    path.symlink_to(outside / "does-not-exist.jsonl")
