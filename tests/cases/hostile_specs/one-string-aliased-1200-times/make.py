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
    path.write_text(VALID + "description: &d " + "x" * (1 << 20) + "\ntables:\n  t:\n"
                    + "".join(f"    k{i}: *d\n" for i in range(1200)))
