import gzip


def make(path, outside):
    with open(path, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as fh:
        fh.write(b"type,text,at,value\nuser,")
        block = b"x" * (1 << 20)
        for _ in range(100):
            fh.write(block)
        fh.write(b",2025-01-01T00:00:00Z,\n")
