"""unmask-bench: which masked positions should a masked diffusion model reveal at each pass?"""
__version__ = "0.1.0"
