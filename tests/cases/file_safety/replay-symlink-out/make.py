def make(project, outside):
    (project / 'traces').mkdir()
    (project / 'traces' / 'a.jsonl').symlink_to(outside / 'secret.jsonl')
