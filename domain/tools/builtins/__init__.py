"""The Agent built-ins: ``read``, ``list``, ``glob``, ``grep``, ``section``, ``view_image``, ``help``, ``graph``."""
