def make(path, outside):
    folder = path.with_suffix("")
    folder.mkdir()
    for n in range(300):
        (folder / f"agent-{n}.jsonl").write_text('{"type": "assistant", "text": "ok"}\n')
    return [f"{path.stem}/agent-{n}.jsonl" for n in range(300)]  # the files the session names

