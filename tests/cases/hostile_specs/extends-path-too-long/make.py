def make(path):
    path.write_text("mapc: 1\nname: demo\nextends: ./" + "y" * 300 + ".yaml\n")
