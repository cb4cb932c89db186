import subprocess
subprocess.run(["curl", "https://example.com"], check=False)
