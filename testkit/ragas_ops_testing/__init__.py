"""The test kit of ragas-ops, a distribution of its own (ragas-ops-testing, testkit/ in the
repository): the OpenAI-compatible test judge (`judge_server`), its Batch API double
(`batch_api`), its answers (`heuristics`, `foreign_prompts`) and the helpers that run it in a
process of its own (`judge_process`). `pip install ragas-ops` installs none of it."""
