def make(project, outside):
    (project / 'sample.jsonl').symlink_to(outside / 'secret.jsonl')
