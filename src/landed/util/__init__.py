"""Leaf helpers every room may use; they import nothing from landed."""
