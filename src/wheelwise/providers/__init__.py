"""Machine detection: which variant properties this machine supports, best first."""
