def make(path):
    path.write_text("mapc: 1\nname: demo\ntables:\n  t: {x: " + "[" * 100000 + "]" * 100000 + "}\n")
