def make(path, outside):
    folder = path.with_suffix("")
    folder.mkdir()
    (folder / "agent-1.jsonl").write_text('{"type": "user", "text": "cut\n')
    return [f"{path.stem}/agent-1.jsonl"]  # the files the session names

