"""One module per command line command (see knowsim_core/cli.py)."""
