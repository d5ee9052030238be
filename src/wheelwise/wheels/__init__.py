"""Wheel archives: safe reads, RECORD handling, and variant conversion (make, strip)."""
