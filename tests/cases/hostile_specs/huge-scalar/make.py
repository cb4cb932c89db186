def make(path):
    path.write_text("mapc: 1\nname: demo\ndescription: " + "x" * (5 << 20) + "\n")
