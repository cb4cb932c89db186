# a comment and a pure function are edits, not risks
def double(x):
    return 2 * x
