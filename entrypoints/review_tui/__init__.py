"""``artifactize review``: the urwid terminal reviewer for Human requests.

Plain modules (no urwid): ``tool_log`` (the Tool log model), ``log_feed`` (lines from tool
threads to the log), ``busy`` (the running action and its spinner), ``tool_list`` (tools
and command lines), ``form_model``/``form_keys`` (the verdict form), ``waiting`` (List
rows), ``editor`` (JSON fields in ``$EDITOR``), ``session`` (the lifecycle calls).
urwid modules: ``palette``, ``log_pane``, the screens (``list_screen``, ``request_screen``,
``dialogs``, ``form_screen``), the flows (``tool_flow``, ``verdict_flow``) and ``app``.
"""
