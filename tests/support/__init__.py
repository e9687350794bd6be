"""Helpers shared by the unit and integration test modules."""
