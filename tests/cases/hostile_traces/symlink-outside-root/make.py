def make(path, outside):
    secret = outside / "secret.jsonl"
    secret.write_text('{"type": "user", "text": "SECRET-CONTENT"}\n')
    path.symlink_to(secret)
