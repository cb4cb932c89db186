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
    path.write_text(VALID + "tables:\n  t:\n" + "".join(f"    k: {i}\n" for i in range(20_000)))
