import os


def make(project, outside):
    os.mkfifo(project / 'sample.jsonl')
