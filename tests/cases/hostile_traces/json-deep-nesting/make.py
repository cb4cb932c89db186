def make(path, outside):
    path.write_bytes(b'{"messages": [], "x": ' + b'{"a": ' * 100000 + b"1" + b"}" * 100000 + b"}")
