"""Providers: the model seam (base), the scripted and litellm providers, and the registry that resolves a ``-p`` value."""
