"""The judge over an OpenAI-compatible API: synchronous calls and the Batch API."""
