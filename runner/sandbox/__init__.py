"""Running one shell command confined: bubblewrap, the seccomp filter, PID namespaces, resource limits."""
