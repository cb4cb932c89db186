def make(path, outside):
    path.write_bytes(b'{"type": "user", "text": ' + b"[" * 100000 + b"]" * 100000 + b"}\n")
