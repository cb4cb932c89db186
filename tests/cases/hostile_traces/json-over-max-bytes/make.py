def make(path, outside):
    path.write_bytes(b'{"reward": 1, "messages": [{"role": "user", "content": "' + b"x" * (2 << 20) + b'"}]}')
