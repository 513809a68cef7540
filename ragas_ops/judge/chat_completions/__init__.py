"""The Chat Completions format, which every OpenAI-compatible wire speaks (OpenAI, Azure OpenAI,
vLLM, the gateways): the request's shape fitted to a model's profile (`shape`, `profiles`) and
reading a status-200 reply (`replies`). No provider package: the wires that speak the format
import it, and it imports none of them (tests/unit/test_architecture.py)."""
