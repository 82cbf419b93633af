import sys

from knowsim_core.cli import main

sys.exit(main())
