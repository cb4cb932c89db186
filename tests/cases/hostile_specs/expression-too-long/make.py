VALID = """mapc: 1
name: demo
source:
  format: demo-events
  container: jsonl
  probe: {require: [type]}
records:
  events: {each: "@", kind: message, role: role, content: %s}
"""


def make(path):
    # a 40000-step field chain: compiling it would take seconds, so it is refused by length
    path.write_text(VALID % ('"a' + ".a" * 40000 + '"'))
