"""LiteLLM proxy configurations converted to edgeproxy's (``edgeproxy config import-litellm``)."""
