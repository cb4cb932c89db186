def make(path, outside):
    child = path.with_suffix("") / "agent-1.jsonl"
    child.parent.mkdir()
    child.write_text('{"type": "user", "text": "look"}\n{"type": "assistant", "text": "found"}\n')
    return [f"{path.stem}/agent-1.jsonl"]  # the files the session names

