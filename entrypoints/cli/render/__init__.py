"""Rendering: what the command line prints for a result, in text and in the other forms
(JUnit XML, GitHub Markdown). A command parses its options, asks ``Services`` for one
result and hands it to a renderer here; nothing here opens a state or runs anything, and
nothing outside this folder formats a report."""
