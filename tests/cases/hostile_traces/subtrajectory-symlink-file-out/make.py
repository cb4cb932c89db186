def make(path, outside):
    secret = outside / "secret-file.jsonl"
    secret.write_text('{"type": "user", "text": "SECRET-CONTENT"}\n')
    folder = path.with_suffix("")
    folder.mkdir()
    (folder / "agent-1.jsonl").symlink_to(secret)
    return [f"{path.stem}/agent-1.jsonl"]  # the files the session names

