# The two commands of the README. Both set up everything they need on a fresh machine.
.PHONY: app test
app:
	@scripts/bootstrap.sh app
test:
	@scripts/bootstrap.sh test
