"""The Batch page: a batch launched as a background process, watched, stopped and resumed."""
