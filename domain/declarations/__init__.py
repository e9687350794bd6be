"""``.artf`` declarations: the typed model and its strict parser."""
