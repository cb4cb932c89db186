import importlib
importlib.import_module("socket")
__import__("os").system("ls")
