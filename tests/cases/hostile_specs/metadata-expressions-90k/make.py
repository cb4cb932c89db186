HEAD = """mapc: 1
name: demo
source:
  format: demo-events
  container: jsonl
  probe: {require: [type]}
records:
  case:
    each: "@"
    metadata:
"""
EVENTS = """  events: {each: "[@]", kind: message, role: role, content: text}
"""


def make(path):
    path.write_text(HEAD + "".join(f"      k{i}: a{i}\n" for i in range(90_000)) + EVENTS)
