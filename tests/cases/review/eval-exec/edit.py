def helper(text):
    eval(text)
    exec("x = 1")
