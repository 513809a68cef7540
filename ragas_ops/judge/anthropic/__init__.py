"""The `anthropic` judge: Anthropic's Messages API over HTTP, around the engine (`judge.engine`)."""
