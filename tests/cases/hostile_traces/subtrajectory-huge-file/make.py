def make(path, outside):
    folder = path.with_suffix("")
    folder.mkdir()
    line = '{"type": "user", "text": "' + "x" * 1000 + '"}\n'
    (folder / "agent-1.jsonl").write_text(line * 2000)  # 2 MB
    return [f"{path.stem}/agent-1.jsonl"]  # the files the session names

