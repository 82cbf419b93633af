# The two commands of the README. Both set up everything they need on a fresh machine.
# `make local-model` (optional) runs a small real model on 127.0.0.1 for the app and the command line;
# `make local-model N_CTX=16384` for a larger context; `make local-model N=2` runs two model servers
# behind one nginx URL (the URL it prints). `make docs` serves the documentation site on 127.0.0.1:8000
# (mkdocs serve; it rebuilds as the pages change).
.PHONY: app test local-model docs
app:
	@scripts/bootstrap.sh app
test:
	@scripts/bootstrap.sh test
local-model:
	@scripts/bootstrap.sh local-model $(if $(N_CTX),--n-ctx $(N_CTX)) $(if $(N),--servers $(N))
docs:
	@scripts/bootstrap.sh docs
