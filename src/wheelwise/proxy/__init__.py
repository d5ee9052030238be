"""A Simple API proxy that serves the best variant of each release as a plain wheel."""
