"""Reviews: verdict validation and the Agent prompt."""
