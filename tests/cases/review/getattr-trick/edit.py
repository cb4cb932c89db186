import os
getattr(os, "system")("ls")
