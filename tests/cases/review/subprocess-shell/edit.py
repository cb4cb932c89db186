import subprocess
subprocess.run("ls -la", shell=True)
