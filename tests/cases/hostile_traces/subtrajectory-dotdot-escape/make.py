import os


def make(path, outside):
    secret = outside / "secret-dotdot.jsonl"
    secret.write_text('{"type": "user", "text": "SECRET-CONTENT"}\n')
    return [os.path.relpath(secret, path.parent)]  # the files the session names

