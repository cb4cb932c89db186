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
    path.write_text(VALID + "".join(f"unknown_key_{i:06d}: {i}\n" for i in range(10_000)))
