"""tooltrial: measure how well LLM agents use tools.

Importing this package does no I/O and does not import litellm.
"""

__version__ = "0.1.0"
