"""One module per revision, oldest first; never edit a released one."""
