"""pharaon: the online instant lottery game « Pharaon », end to end."""

__version__ = "0.1.0"
