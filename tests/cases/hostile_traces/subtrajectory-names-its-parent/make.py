def make(path, outside):
    folder = path.with_suffix("")
    folder.mkdir()
    back = '{"type": "agent", "call": "c2", "text": "back", "file": "../' + path.name + '"}\n'
    (folder / "agent-1.jsonl").write_text(back)
    return [f"{path.stem}/agent-1.jsonl"]  # the files the session names

