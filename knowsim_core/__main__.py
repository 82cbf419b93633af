import os
import sys

from knowsim_core.cli import main

code = main()
if code == 130:
    # Ctrl-C: the run is stored as interrupted and the one line is printed. Leave now rather than
    # tear the interpreter down: with the model SDKs imported (~3,600 modules) that took 2-3 s on a
    # busy machine, and a model request thread may still be reading a trickling reply.
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(130)
sys.exit(code)
