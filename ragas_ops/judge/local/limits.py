"""What a user of the local judge's scores must know, said where they meet them (the `score`
summary; docs/local-judge.md, "Limits", says it at length)."""

from __future__ import annotations

LOCAL_JUDGE_LIMITS = (
    "local judge: rules and a small embedding model, not an LLM. Answer relevance is its "
    "weakest score: on 40 WikiEval rows its rules never saw, v11 agreed with people on 0.42 of "
    "them (word overlap 0.49, the paper's LLM 0.78); v18, on 24 WikiEval-like rows written "
    "apart from its rules, 0.42 (word overlap 0.52). Compare its runs with each other, not "
    "with an LLM judge's (docs/local-judge.md, Limits)."
)
