LONG = "y" * 300


def make(path):
    path.write_text(f"""\
# file names the operating system cannot look up: a NUL, a name over 255 bytes, a path over 4096
mapc: 1
name: demo
source:
  format: demo-events
  container: jsonl
  probe: {{require: [type]}}
  siblings: {{meta: [{LONG}.json]}}
records:
  events: {{each: "@", kind: message, role: role, content: text}}
tasks: {{from: {LONG}.jsonl}}
fixtures: ["a\\0b.jsonl", {"/".join(["d" * 200] * 30)}.jsonl]
""")
