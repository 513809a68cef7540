"""GPT Ranking, one package: the baseline's pairwise prompts (`metric`), the local judge's
rules (`local`) and the test judge's answers (`double`)."""

from ragas_ops.metrics.gpt_ranking import double, local
from ragas_ops.metrics.gpt_ranking.metric import RANKING_PROMPTS, Preference, Ranking, rank_pair

__all__ = ["RANKING_PROMPTS", "Preference", "Ranking", "double", "local", "rank_pair"]
