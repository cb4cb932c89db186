def make(path, outside):
    path.write_bytes(b'{"messages": [], "x": ' + b"[" * 100000 + b"]" * 100000 + b"}")
