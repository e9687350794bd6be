"""A Run (``verify``): scheduling, dependency gates, status, summaries and request views."""
