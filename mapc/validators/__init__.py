"""Built-in validators: each host's own acceptance checks, runnable without the host."""
