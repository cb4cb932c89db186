def make(path, outside):
    real = path.with_name(path.stem + ".real")
    real.write_text('{"type": "user", "text": "hi"}\n{"type": "assistant", "text": "4"}\n')
    path.symlink_to(real.name)
