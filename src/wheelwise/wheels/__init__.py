"""Wheel archives: safe reads of variant data from wheel files."""
