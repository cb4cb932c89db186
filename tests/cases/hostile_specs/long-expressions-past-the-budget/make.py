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
    chain = ".".join(["a"] * 7999)
    path.write_text(HEAD + "".join(f"      k{i}: '{chain}{i}'\n" for i in range(3)) + EVENTS)
