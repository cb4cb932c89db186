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
    path.write_text(VALID + "evaluators:\n- id: e\n  description: d\n  score: '`1`'\n  feedback: '"
                    + "text {{ and }} " * 200_000 + "{'\n")
