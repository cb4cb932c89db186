from os import system as run
run("ls")
