import os


def make(path, outside):
    folder = path.with_suffix("")
    folder.mkdir()
    os.mkfifo(folder / "agent-1.jsonl")
    return [f"{path.stem}/agent-1.jsonl"]  # the files the session names

