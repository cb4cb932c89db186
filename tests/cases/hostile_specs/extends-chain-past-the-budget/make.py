VALID = """mapc: 1
name: demo
source:
  format: demo-events
  container: jsonl
  probe: {require: [type]}
records:
  events: {each: "@", kind: message, role: role, content: text}
"""


def make(path):
    for n in range(3):
        head = f"extends: ./base{n + 1}.yaml\n" if n < 2 else VALID
        (path.parent / f"base{n}.yaml").write_text(
            head + f"tables:\n  t{n}:\n" + "".join(f"    k{i}: v{i}\n" for i in range(9_000)))
    path.write_text("extends: ./base0.yaml\nname: demo\n")
