def make(path, outside):
    secrets = outside / f"secrets-{path.parent.parent.name}"
    secrets.mkdir(exist_ok=True)
    (secrets / "agent-1.jsonl").write_text('{"type": "user", "text": "SECRET-CONTENT"}\n')
    path.with_suffix("").symlink_to(secrets, target_is_directory=True)
    return [f"{path.stem}/agent-1.jsonl"]  # the files the session names

