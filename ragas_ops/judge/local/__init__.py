"""The local judge: no LLM, no network; a sentence-embedding model and lexical rules."""
