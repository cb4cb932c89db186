import gzip


def make(path, outside):
    content = b"x" * (4 << 20)
    doc = b'{"reward": 1, "messages": [{"role": "user", "content": "' + content + b'"}]}'
    path.write_bytes(gzip.compress(doc, mtime=0))
