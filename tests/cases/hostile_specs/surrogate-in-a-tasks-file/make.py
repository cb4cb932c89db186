SPEC = """mapc: 1
name: demo
source:
  format: demo-events
  container: jsonl
  probe: {require: [type]}
records:
  events: {each: "@", kind: message, role: role, content: text}
tasks: {from: tasks.jsonl}
"""


def make(path):
    # JSON escapes half a character; the RELAI build failed writing it (internal UnicodeEncodeError)
    (path.parent / "tasks.jsonl").write_text('{"id": "t1", "input": "a \\ud800 b", "description": "\\udcff"}\n')
    path.write_text(SPEC)
