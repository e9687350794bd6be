"""POSIX adapters: pinned directory descriptors, process groups, private files, sessions."""
