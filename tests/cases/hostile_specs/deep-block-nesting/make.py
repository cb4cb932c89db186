def make(path):
    lines = ["mapc: 1", "name: demo", "tables:", "  t:"]
    lines += ["    " + "  " * i + f"k{i}:" for i in range(1000)]
    path.write_text("\n".join(lines) + " 1\n")
