def make(path, outside):
    secret = outside / "secret-absolute.jsonl"
    secret.write_text('{"type": "user", "text": "SECRET-CONTENT"}\n')
    return [str(secret)]  # the files the session names

