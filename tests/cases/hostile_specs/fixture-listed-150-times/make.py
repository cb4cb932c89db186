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
    (path.parent / "sample.jsonl").write_text('{"type": "message", "role": "user", "text": "hi"}\n')
    path.write_text(VALID + "fixtures:\n" + "- sample.jsonl\n" * 150)
