from pathlib import Path
open("/tmp/stolen.txt", "w").write("x")
Path("notes.txt").write_text("y")
import shutil
shutil.rmtree("/tmp/somewhere")
