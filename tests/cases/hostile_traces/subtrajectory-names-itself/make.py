def make(path, outside):
    folder = path.with_suffix("")
    folder.mkdir()
    (folder / "agent-1.jsonl").write_text('{"type": "agent", "call": "c2", "text": "again", "file": "agent-1.jsonl"}\n')
    return [f"{path.stem}/agent-1.jsonl"]  # the files the session names

