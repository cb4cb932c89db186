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
    path.write_text(VALID + "description: " + "word " * (200 << 10) + "\n")
