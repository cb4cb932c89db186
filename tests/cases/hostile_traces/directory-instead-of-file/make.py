def make(path, outside):
    path.mkdir()
    (path / "inside.jsonl").write_text('{"type": "user", "text": "hi"}\n')
