def make(project, outside):
    (outside / 'a.jsonl').write_text((outside / 'secret.jsonl').read_text())
